// The onnx.TensorProto wire-format reader of tests/support/tensor_proto.h on hand-made byte
// strings: messages as onnx's Python helpers serialize them (packed repeated fields), the same
// values in non-packed form, every storage field, and malformed input (truncations, bad wire types,
// out-of-range values, unsupported fields and types), which must throw InvalidArgument and never
// crash.
#include "tests/support/tensor_proto.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "reference/error.h"
#include "tests/support/test_support.h"

namespace mmtune {
namespace {

using testing::parse_tensor_proto;
using Bytes = std::vector<uint8_t>;

Bytes from_hex(const std::string& hex) {
  Bytes b;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    b.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return b;
}

// Builders for the wire format.
void varint(Bytes& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<uint8_t>(v));
}
void key(Bytes& b, int field, int wire) { varint(b, static_cast<uint64_t>(field) << 3 | wire); }
void field_varint(Bytes& b, int field, uint64_t v) {
  key(b, field, 0);
  varint(b, v);
}
void field_bytes(Bytes& b, int field, const Bytes& payload) {
  key(b, field, 2);
  varint(b, payload.size());
  b.insert(b.end(), payload.begin(), payload.end());
}
Bytes packed(const std::vector<uint64_t>& values) {
  Bytes p;
  for (uint64_t v : values) varint(p, v);
  return p;
}
template <class T>
Bytes le(const std::vector<T>& values) {
  Bytes p(values.size() * sizeof(T));
  if (!p.empty()) std::memcpy(p.data(), values.data(), p.size());
  return p;
}

Tensor parse(const Bytes& b, std::string* name = nullptr) {
  return parse_tensor_proto(b, "test.pb", name);
}

::testing::AssertionResult throws_with(const Bytes& b, const std::string& needle) {
  try {
    parse(b);
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    if (msg.find(needle) == std::string::npos || msg.find("test.pb") == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message '" << msg << "' lacks '" << needle << "' or the file";
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no InvalidArgument (expected '" << needle << "')";
}

// --- Messages as onnx 1.23.2's Python helpers serialize them -------------------------------------

TEST(tensor_proto, Float32RawDataFromNumpyHelper) {
  // numpy_helper.from_array(np.array([[1.5, -2], [0, 3]], np.float32), "x"): dims non-packed.
  std::string name;
  const Tensor t = parse(from_hex("0802080210014201784a100000c03f000000c00000000000004040"), &name);
  EXPECT_EQ(name, "x");
  EXPECT_TRUE(
      testing::bit_equal(Tensor::from<float>(DType::kFloat32, {2, 2}, {1.5f, -2.f, 0.f, 3.f}), t));
}

TEST(tensor_proto, Int8PackedInt32DataWithNegativeValues) {
  // helper.make_tensor("q", INT8, [3], [-5, 0, 127]): -5 is a 10-byte sign-extended varint.
  const Tensor t = parse(from_hex("080310032a0cfbffffffffffffffff01007f420171"));
  EXPECT_TRUE(testing::bit_equal(Tensor::from<int8_t>(DType::kInt8, {3}, {-5, 0, 127}), t));
}

TEST(tensor_proto, Float16BitPatternsInInt32Data) {
  // helper.make_tensor("h", FLOAT16, [2], [1.0, -2.0]): int32_data = [0x3C00, 0xC000].
  const Tensor t = parse(from_hex("0802100a2a058078808003420168"));
  EXPECT_TRUE(
      testing::bit_equal(Tensor::from<uint16_t>(DType::kFloat16, {2}, {0x3C00, 0xC000}), t));
}

TEST(tensor_proto, PackedFloatDoubleUInt64AndInt64Data) {
  EXPECT_TRUE(testing::bit_equal(Tensor::from<float>(DType::kFloat32, {2}, {1.0f, 0.5f}),
                                 parse(from_hex("0802100122080000803f0000003f420166"))));
  EXPECT_TRUE(testing::bit_equal(Tensor::from<double>(DType::kFloat64, {1}, {0.1}),
                                 parse(from_hex("0801100b42016452089a9999999999b93f"))));
  EXPECT_TRUE(testing::bit_equal(Tensor::from<uint32_t>(DType::kUInt32, {2}, {7u, 4000000000u}),
                                 parse(from_hex("0802100c4201755a060780d0acf30e"))));
  EXPECT_TRUE(testing::bit_equal(Tensor::from<int64_t>(DType::kInt64, {2, 1}, {-1, 5}),
                                 parse(from_hex("0802080110073a0bffffffffffffffffff0105420169"))));
}

// --- The same fields in non-packed form, and the field/type combinations onnx.proto3 defines ----

TEST(tensor_proto, NonPackedRepeatedFields) {
  Bytes b;
  field_varint(b, 1, 2);  // dims, one key per value
  field_varint(b, 1, 1);
  field_varint(b, 2, 2);    // UINT8
  field_varint(b, 5, 200);  // int32_data, one key per value
  field_varint(b, 5, 7);
  const Tensor t = parse(b);
  EXPECT_TRUE(testing::bit_equal(Tensor::from<uint8_t>(DType::kUInt8, {2, 1}, {200, 7}), t));

  Bytes f;  // float_data as fixed32 values, one key each
  field_varint(f, 1, 3);
  field_varint(f, 2, 1);
  for (float v : {0.25f, -1.0f, 3.5f}) {
    key(f, 4, 5);
    Bytes p = le<float>({v});
    f.insert(f.end(), p.begin(), p.end());
  }
  EXPECT_TRUE(testing::bit_equal(Tensor::from<float>(DType::kFloat32, {3}, {0.25f, -1.0f, 3.5f}),
                                 parse(f)));

  Bytes d;  // double_data as fixed64 values, one key each
  field_varint(d, 1, 2);
  field_varint(d, 2, 11);
  for (double v : {0.1, -2.5}) {
    key(d, 10, 1);
    Bytes p = le<double>({v});
    d.insert(d.end(), p.begin(), p.end());
  }
  EXPECT_TRUE(
      testing::bit_equal(Tensor::from<double>(DType::kFloat64, {2}, {0.1, -2.5}), parse(d)));

  Bytes u;  // uint64_data, int64_data one key each
  field_varint(u, 1, 2);
  field_varint(u, 2, 13);
  field_varint(u, 11, ~uint64_t{0});
  field_varint(u, 11, 3);
  EXPECT_TRUE(
      testing::bit_equal(Tensor::from<uint64_t>(DType::kUInt64, {2}, {~uint64_t{0}, 3}), parse(u)));
}

TEST(tensor_proto, MixedPackedAndNonPackedDimsConcatenate) {
  Bytes b;
  field_bytes(b, 1, packed({2, 3}));
  field_varint(b, 1, 1);
  field_varint(b, 2, 7);  // INT64
  std::vector<uint64_t> vals;
  for (int i = 0; i < 6; ++i) vals.push_back(static_cast<uint64_t>(int64_t{-i}));
  field_bytes(b, 7, packed(vals));
  const Tensor t = parse(b);
  EXPECT_EQ(t.shape, (Shape{2, 3, 1}));
  EXPECT_TRUE(testing::bit_equal(
      Tensor::from<int64_t>(DType::kInt64, {2, 3, 1}, {0, -1, -2, -3, -4, -5}), t));
}

TEST(tensor_proto, EveryDTypeThroughRawData) {
  for (DType d : {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32,
                  DType::kUInt32, DType::kInt64, DType::kUInt64, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat32, DType::kFloat64, DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ,
                  DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ}) {
    Tensor expected(d, {3});
    for (std::size_t i = 0; i < expected.bytes.size(); ++i)
      expected.bytes[i] = static_cast<uint8_t>(i * 37 + 1);
    Bytes b;
    field_varint(b, 1, 3);
    field_varint(b, 2, static_cast<uint64_t>(testing::onnx_data_type(d)));
    field_bytes(b, 9, Bytes(expected.bytes.begin(), expected.bytes.end()));
    EXPECT_TRUE(testing::bit_equal(expected, parse(b), dtype_name(d)));
  }
}

TEST(tensor_proto, Int32DataForSmallTypesAndFloat8) {
  struct Case {
    DType d;
    std::vector<int64_t> values;
  };
  for (const Case& c :
       {Case{DType::kInt16, {-32768, 32767}}, Case{DType::kUInt16, {0, 65535}},
        Case{DType::kInt32, {-2147483648LL, 2147483647}}, Case{DType::kBFloat16, {0x3F80, 0xFFC0}},
        Case{DType::kFloat8E4M3FN, {0x7E, 0xFF}}, Case{DType::kFloat8E5M2FNUZ, {0x80, 0x01}}}) {
    Bytes b;
    field_varint(b, 1, 2);
    field_varint(b, 2, static_cast<uint64_t>(testing::onnx_data_type(c.d)));
    std::vector<uint64_t> v;
    for (int64_t x : c.values) v.push_back(static_cast<uint64_t>(x));
    field_bytes(b, 5, packed(v));
    const Tensor t = parse(b);
    ASSERT_EQ(t.dtype, c.d);
    for (int i = 0; i < 2; ++i) {
      int64_t got = 0;
      if (is_float(c.d)) {
        uint64_t bits = 0;
        std::memcpy(&bits, t.bytes.data() + i * dtype_size(c.d), dtype_size(c.d));
        got = static_cast<int64_t>(bits);
      } else {
        got = int_at(t, i);
      }
      EXPECT_EQ(got, c.values[i]) << dtype_name(c.d) << " element " << i;
    }
  }
}

TEST(tensor_proto, ScalarEmptyUnknownFieldsAndLastValueWins) {
  Bytes b;
  field_varint(b, 2, 3);                     // INT8, overridden below
  field_bytes(b, 12, Bytes{'d', 'o', 'c'});  // doc_string: skipped
  field_varint(b, 99, 5);                    // unknown varint field: skipped
  key(b, 98, 1);                             // unknown fixed64 field: skipped
  for (int i = 0; i < 8; ++i) b.push_back(0xFF);
  field_varint(b, 2, 6);  // INT32 (last value wins)
  field_bytes(b, 9, le<int32_t>({-7}));
  const Tensor t = parse(b);
  EXPECT_TRUE(testing::bit_equal(Tensor::from<int32_t>(DType::kInt32, {}, {-7}), t));

  Bytes e;  // [0, 4] float with no data at all
  field_varint(e, 1, 0);
  field_varint(e, 1, 4);
  field_varint(e, 2, 1);
  const Tensor empty = parse(e);
  EXPECT_EQ(empty.shape, (Shape{0, 4}));
  EXPECT_TRUE(empty.bytes.empty());
}

// --- Rejections
// ------------------------------------------------------------------------------------

TEST(tensor_proto, TruncatedAtEveryLength) {
  // Every proper prefix of a valid message must throw InvalidArgument (the data field is last, so
  // no prefix is a complete tensor).
  Bytes full;
  field_bytes(full, 1, packed({2, 2}));
  field_varint(full, 2, 1);
  field_bytes(full, 8, Bytes{'n', 'a', 'm', 'e'});
  field_bytes(full, 9, le<float>({1.f, 2.f, 3.f, 4.f}));
  ASSERT_NO_THROW(parse(full));
  for (std::size_t n = 0; n < full.size(); ++n) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(parse(prefix), InvalidArgument) << "prefix of " << n << " bytes";
  }
  EXPECT_TRUE(throws_with(Bytes(full.begin(), full.end() - 3), "truncated raw_data"));
  EXPECT_TRUE(throws_with(Bytes(full.begin(), full.begin() + 3), "truncated"));
}

TEST(tensor_proto, TruncatedFileOnDisk) {
  Bytes full = from_hex("0802080210014201784a100000c03f000000c00000000000004040");
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("mmtune_tensor_proto_" + std::to_string(::getpid()) + ".pb"))
                               .string();
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(full.data()),
              static_cast<std::streamsize>(full.size() - 5));
  }
  try {
    read_tensor_proto(path);
    ADD_FAILURE() << "truncated file was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(full.data()),
              static_cast<std::streamsize>(full.size()));
  }
  EXPECT_TRUE(
      testing::bit_equal(Tensor::from<float>(DType::kFloat32, {2, 2}, {1.5f, -2.f, 0.f, 3.f}),
                         read_tensor_proto(path)));
  std::filesystem::remove(path);
  EXPECT_THROW(read_tensor_proto(path), InvalidArgument);
}

TEST(tensor_proto, RejectsUnsupportedFieldsAndTypes) {
  auto base = [](int type) {
    Bytes b;
    field_varint(b, 1, 1);
    field_varint(b, 2, static_cast<uint64_t>(type));
    return b;
  };
  Bytes s = base(8);
  field_bytes(s, 6, Bytes{'a'});
  EXPECT_TRUE(throws_with(s, "string_data"));

  Bytes ext = base(1);
  field_bytes(ext, 13, Bytes{});
  field_varint(ext, 14, 1);
  EXPECT_TRUE(throws_with(ext, "external"));
  Bytes loc = base(1);
  field_bytes(loc, 9, le<float>({1.f}));
  field_varint(loc, 14, 1);
  EXPECT_TRUE(throws_with(loc, "EXTERNAL"));

  Bytes seg = base(1);
  field_bytes(seg, 3, Bytes{0x08, 0x00});
  EXPECT_TRUE(throws_with(seg, "segment"));

  for (int type : {0, 8, 9, 14, 15, 21, 22, 23, 24, 25, 26, 77}) {
    Bytes b = base(type);
    field_bytes(b, 9, Bytes{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    EXPECT_TRUE(throws_with(b, "has no mmtune type")) << "data_type " << type;
  }
  Bytes bool_tensor = base(9);
  field_varint(bool_tensor, 5, 1);
  EXPECT_TRUE(throws_with(bool_tensor, "BOOL"));
}

TEST(tensor_proto, RejectsInconsistentData) {
  auto base = [](int type, uint64_t n) {
    Bytes b;
    field_varint(b, 1, n);
    field_varint(b, 2, static_cast<uint64_t>(type));
    return b;
  };
  Bytes few = base(1, 3);
  field_bytes(few, 4, le<float>({1.f, 2.f}));
  EXPECT_TRUE(throws_with(few, "needs 3 elements, float_data holds 2"));

  Bytes raw = base(1, 3);
  field_bytes(raw, 9, Bytes(11, 0));
  EXPECT_TRUE(throws_with(raw, "raw_data holds 11"));

  Bytes none = base(6, 2);
  EXPECT_TRUE(throws_with(none, "int32_data holds 0"));

  Bytes both = base(6, 1);
  field_bytes(both, 9, le<int32_t>({1}));
  field_varint(both, 5, 1);
  EXPECT_TRUE(throws_with(both, "both raw_data and typed"));

  Bytes wrong_field = base(1, 1);  // float in int32_data
  field_varint(wrong_field, 5, 1);
  EXPECT_TRUE(throws_with(wrong_field, "stores its values in float_data"));

  Bytes big = base(3, 1);  // int8 value 300
  field_varint(big, 5, 300);
  EXPECT_TRUE(throws_with(big, "out of range for int8"));
  Bytes neg_u8 = base(2, 1);
  field_varint(neg_u8, 5, static_cast<uint64_t>(int64_t{-1}));
  EXPECT_TRUE(throws_with(neg_u8, "out of range for uint8"));
  Bytes f16 = base(10, 1);
  field_varint(f16, 5, 0x10000);
  EXPECT_TRUE(throws_with(f16, "out of range for float16"));
  Bytes u32 = base(12, 1);
  field_varint(u32, 11, 0x100000000ULL);
  EXPECT_TRUE(throws_with(u32, "out of range for uint32"));

  Bytes neg_dim;
  field_varint(neg_dim, 1, static_cast<uint64_t>(int64_t{-2}));
  field_varint(neg_dim, 2, 1);
  EXPECT_TRUE(throws_with(neg_dim, "negative dimension"));

  Bytes huge;  // 2^40 x 2^40 elements: overflow, never an allocation
  field_varint(huge, 1, uint64_t{1} << 40);
  field_varint(huge, 1, uint64_t{1} << 40);
  field_varint(huge, 2, 1);
  EXPECT_THROW(parse(huge), InvalidArgument);
  Bytes large;  // 2^40 elements claimed, 4 bytes of data
  field_varint(large, 1, uint64_t{1} << 40);
  field_varint(large, 2, 1);
  field_bytes(large, 9, Bytes(4, 0));
  EXPECT_TRUE(throws_with(large, "raw_data holds 4"));
}

TEST(tensor_proto, RejectsMalformedWireFormat) {
  Bytes group;
  key(group, 1, 3);
  EXPECT_TRUE(throws_with(group, "wire type 3"));
  Bytes unknown_group;
  key(unknown_group, 50, 4);
  EXPECT_TRUE(throws_with(unknown_group, "groups"));
  Bytes bad_dims;
  key(bad_dims, 1, 5);
  EXPECT_TRUE(throws_with(bad_dims, "dims has wire type 5"));
  Bytes bad_type;
  key(bad_type, 2, 2);
  EXPECT_TRUE(throws_with(bad_type, "data_type has wire type 2"));
  Bytes field0{0x00, 0x01};
  EXPECT_TRUE(throws_with(field0, "invalid field number 0"));
  Bytes long_varint{0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F};
  EXPECT_TRUE(throws_with(long_varint, "longer than 64 bits"));
  Bytes packed_cut;
  key(packed_cut, 1, 2);
  varint(packed_cut, 2);
  packed_cut.push_back(0x83);  // continuation bit set on the last byte of the packed run
  packed_cut.push_back(0x81);
  EXPECT_TRUE(throws_with(packed_cut, "truncated varint in dims"));
  Bytes odd_floats;
  field_varint(odd_floats, 2, 1);
  field_bytes(odd_floats, 4, Bytes(6, 0));
  EXPECT_TRUE(throws_with(odd_floats, "not a multiple of 4"));
  Bytes overlong;
  key(overlong, 9, 2);
  varint(overlong, uint64_t{1} << 62);
  EXPECT_TRUE(throws_with(overlong, "truncated raw_data"));
}

TEST(tensor_proto, FuzzedBytesOnlyThrowInvalidArgument) {
  const Bytes seed = from_hex("0802080210014201784a100000c03f000000c00000000000004040");
  std::mt19937 rng(12345);
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes b = seed;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t pos = rng() % b.size();
      switch (rng() % 3) {
        case 0:
          b[pos] = static_cast<uint8_t>(rng());
          break;
        case 1:
          b.erase(b.begin() + static_cast<std::ptrdiff_t>(pos));
          break;
        default:
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(pos), static_cast<uint8_t>(rng()));
          break;
      }
      if (b.empty()) b.push_back(0);
    }
    try {
      const Tensor t = parse(b);
      EXPECT_EQ(t.bytes.size(), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype));
      ++accepted;
    } catch (const InvalidArgument&) {
    }
  }
  std::cout << "[tensor_proto fuzz] 20000 mutated messages, " << accepted
            << " still valid tensors\n";
}

}  // namespace
}  // namespace mmtune
