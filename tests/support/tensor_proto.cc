// onnx.TensorProto reader on the protobuf wire format (see tensor_proto.h).
#include "tests/support/tensor_proto.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>

#include "reference/error.h"

namespace mmtune::testing {
namespace {

// onnx TensorProto.DataType (onnx/onnx.proto3).
enum OnnxType : int {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

const char* onnx_type_name(int64_t t) {
  switch (t) {
    case kUndefined:
      return "UNDEFINED";
    case kFloat:
      return "FLOAT";
    case kUInt8:
      return "UINT8";
    case kInt8:
      return "INT8";
    case kUInt16:
      return "UINT16";
    case kInt16:
      return "INT16";
    case kInt32:
      return "INT32";
    case kInt64:
      return "INT64";
    case kString:
      return "STRING";
    case kBool:
      return "BOOL";
    case kFloat16:
      return "FLOAT16";
    case kDouble:
      return "DOUBLE";
    case kUInt32:
      return "UINT32";
    case kUInt64:
      return "UINT64";
    case kComplex64:
      return "COMPLEX64";
    case kComplex128:
      return "COMPLEX128";
    case kBFloat16:
      return "BFLOAT16";
    case kFloat8E4M3FN:
      return "FLOAT8E4M3FN";
    case kFloat8E4M3FNUZ:
      return "FLOAT8E4M3FNUZ";
    case kFloat8E5M2:
      return "FLOAT8E5M2";
    case kFloat8E5M2FNUZ:
      return "FLOAT8E5M2FNUZ";
    case kUInt4:
      return "UINT4";
    case kInt4:
      return "INT4";
    case kFloat4E2M1:
      return "FLOAT4E2M1";
    case kFloat8E8M0:
      return "FLOAT8E8M0";
    case kUInt2:
      return "UINT2";
    case kInt2:
      return "INT2";
    default:
      return "unknown";
  }
}

std::optional<DType> to_dtype(int64_t t) {
  switch (t) {
    case kFloat:
      return DType::kFloat32;
    case kUInt8:
      return DType::kUInt8;
    case kInt8:
      return DType::kInt8;
    case kUInt16:
      return DType::kUInt16;
    case kInt16:
      return DType::kInt16;
    case kInt32:
      return DType::kInt32;
    case kInt64:
      return DType::kInt64;
    case kFloat16:
      return DType::kFloat16;
    case kDouble:
      return DType::kFloat64;
    case kUInt32:
      return DType::kUInt32;
    case kUInt64:
      return DType::kUInt64;
    case kBFloat16:
      return DType::kBFloat16;
    case kFloat8E4M3FN:
      return DType::kFloat8E4M3FN;
    case kFloat8E4M3FNUZ:
      return DType::kFloat8E4M3FNUZ;
    case kFloat8E5M2:
      return DType::kFloat8E5M2;
    case kFloat8E5M2FNUZ:
      return DType::kFloat8E5M2FNUZ;
    default:
      return std::nullopt;
  }
}

// Protobuf wire types.
enum Wire : int {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

class Reader {
 public:
  Reader(const uint8_t* p, std::size_t n, const std::string& what)
      : p_(p), end_(p + n), what_(what) {}

  bool done() const { return p_ == end_; }
  const std::string& what() const { return what_; }
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }

  [[noreturn]] void fail(const std::string& msg) const { invalid(what_, msg); }

  uint64_t varint(const char* field) {
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
      if (p_ == end_) fail(std::string("truncated varint in ") + field);
      const uint8_t b = *p_++;
      if (i == 9 && b > 1) fail(std::string("varint longer than 64 bits in ") + field);
      v |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0) return v;
    }
    fail(std::string("varint longer than 10 bytes in ") + field);
  }

  // The next `n` bytes; advances past them.
  const uint8_t* take(std::size_t n, const char* field) {
    if (n > left()) {
      std::ostringstream os;
      os << "truncated " << field << ": needs " << n << " bytes, " << left() << " left";
      fail(os.str());
    }
    const uint8_t* r = p_;
    p_ += n;
    return r;
  }

  std::size_t length(const char* field) {
    const uint64_t n = varint(field);
    if (n > left()) {
      std::ostringstream os;
      os << "truncated " << field << ": length " << n << ", " << left() << " bytes left";
      fail(os.str());
    }
    return static_cast<std::size_t>(n);
  }

  void skip(int wire, uint64_t field) {
    switch (wire) {
      case kVarint:
        varint("an unknown field");
        return;
      case kFixed64:
        take(8, "an unknown fixed64 field");
        return;
      case kFixed32:
        take(4, "an unknown fixed32 field");
        return;
      case kLen:
        take(length("an unknown field"), "an unknown field");
        return;
      default: {
        std::ostringstream os;
        os << "field " << field << " has wire type " << wire << " (groups are not supported)";
        fail(os.str());
      }
    }
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  std::string what_;
};

// Appends the values of a repeated varint field: one value (wire type 0) or a packed run (wire type
// 2).
void read_varints(Reader& r, int wire, const char* field, std::vector<uint64_t>& out) {
  if (wire == kVarint) {
    out.push_back(r.varint(field));
  } else if (wire == kLen) {
    const std::size_t n = r.length(field);
    Reader sub(r.take(n, field), n, r.what());
    while (!sub.done()) out.push_back(sub.varint(field));
  } else {
    std::ostringstream os;
    os << field << " has wire type " << wire << ", expected 0 (varint) or 2 (packed)";
    r.fail(os.str());
  }
}

// Appends the little-endian bytes of a repeated fixed-width field (float: 4, double: 8).
void read_fixed(Reader& r, int wire, std::size_t width, const char* field,
                std::vector<uint8_t>& out) {
  const int single = width == 4 ? kFixed32 : kFixed64;
  if (wire == single) {
    const uint8_t* p = r.take(width, field);
    out.insert(out.end(), p, p + width);
  } else if (wire == kLen) {
    const std::size_t n = r.length(field);
    if (n % width != 0) {
      std::ostringstream os;
      os << "packed " << field << " has " << n << " bytes, not a multiple of " << width;
      r.fail(os.str());
    }
    const uint8_t* p = r.take(n, field);
    out.insert(out.end(), p, p + n);
  } else {
    std::ostringstream os;
    os << field << " has wire type " << wire << ", expected " << single << " or 2 (packed)";
    r.fail(os.str());
  }
}

template <class T>
void put(Bytes& bytes, std::size_t i, T v) {
  std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

int onnx_data_type(DType t) {
  for (int code = kFloat; code <= kInt2; ++code) {
    if (to_dtype(code) == t) return code;
  }
  MMTUNE_CHECK(false, "no onnx data type for " << dtype_name(t));
}

Tensor parse_tensor_proto(const uint8_t* bytes, std::size_t size, const std::string& what,
                          std::string* name_out) {
  Reader r(bytes, size, what);
  std::vector<uint64_t> dims, int32_data, int64_data, uint64_data;
  std::vector<uint8_t> float_data, double_data;
  std::optional<std::vector<uint8_t>> raw_data;
  int64_t data_type = kUndefined;
  std::string name;
  int64_t external_entries = 0;
  int64_t data_location = 0;

  while (!r.done()) {
    const uint64_t key = r.varint("a field key");
    const uint64_t field = key >> 3;
    const int wire = static_cast<int>(key & 7);
    if (field == 0 || field > 0x1FFFFFFF) {
      std::ostringstream os;
      os << "invalid field number " << field;
      r.fail(os.str());
    }
    auto expect_wire = [&](int w, const char* fname) {
      if (wire != w) {
        std::ostringstream os;
        os << fname << " has wire type " << wire << ", expected " << w;
        r.fail(os.str());
      }
    };
    switch (field) {
      case 1:
        read_varints(r, wire, "dims", dims);
        break;
      case 2:
        expect_wire(kVarint, "data_type");
        data_type = static_cast<int32_t>(r.varint("data_type"));
        break;
      case 3:
        r.fail("segment (field 3) is not supported: the file holds only part of a tensor");
      case 4:
        read_fixed(r, wire, 4, "float_data", float_data);
        break;
      case 5:
        read_varints(r, wire, "int32_data", int32_data);
        break;
      case 6:
        r.fail("string_data (field 6) is not supported: mmtune has no string tensors");
      case 7:
        read_varints(r, wire, "int64_data", int64_data);
        break;
      case 8: {
        expect_wire(kLen, "name");
        const std::size_t n = r.length("name");
        const uint8_t* p = r.take(n, "name");
        name.assign(reinterpret_cast<const char*>(p), n);
        break;
      }
      case 9: {
        expect_wire(kLen, "raw_data");
        const std::size_t n = r.length("raw_data");
        const uint8_t* p = r.take(n, "raw_data");
        raw_data.emplace(p, p + n);
        break;
      }
      case 10:
        read_fixed(r, wire, 8, "double_data", double_data);
        break;
      case 11:
        read_varints(r, wire, "uint64_data", uint64_data);
        break;
      case 13:
        expect_wire(kLen, "external_data");
        r.skip(wire, field);
        ++external_entries;
        break;
      case 14:
        expect_wire(kVarint, "data_location");
        data_location = static_cast<int32_t>(r.varint("data_location"));
        break;
      default:
        r.skip(wire, field);
        break;  // doc_string (12), metadata_props (16), future fields
    }
  }

  if (data_location == 1 || external_entries > 0) {
    r.fail(
        "the tensor's data is stored externally (data_location = EXTERNAL / external_data); "
        "only data inside the file is supported");
  }
  if (data_location != 0) {
    std::ostringstream os;
    os << "unknown data_location " << data_location;
    r.fail(os.str());
  }
  const std::optional<DType> dtype = to_dtype(data_type);
  if (!dtype) {
    std::ostringstream os;
    os << "data_type " << data_type << " (" << onnx_type_name(data_type)
       << ") has no mmtune type; supported: " << all_dtype_names();
    r.fail(os.str());
  }
  Shape shape;
  for (uint64_t d : dims) {
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      r.fail("negative dimension " + std::to_string(static_cast<int64_t>(d)) + " in dims");
    }
    shape.push_back(static_cast<int64_t>(d));
  }
  const int64_t numel = shape_numel(shape, what);
  const std::size_t width = dtype_size(*dtype);
  const std::string tname = std::string(dtype_name(*dtype)) + " " + shape_str(shape);

  auto count_error = [&](const char* field, std::size_t got) {
    std::ostringstream os;
    os << tname << " needs " << numel << " elements, " << field << " holds " << got;
    r.fail(os.str());
  };
  const std::size_t typed = float_data.size() / 4 + int32_data.size() + int64_data.size() +
                            double_data.size() / 8 + uint64_data.size();

  Tensor t;
  t.dtype = *dtype;
  t.shape = shape;
  if (raw_data) {
    if (typed != 0) r.fail("the tensor has both raw_data and typed data fields");
    if (raw_data->size() / width != static_cast<uint64_t>(numel) || raw_data->size() % width != 0) {
      std::ostringstream os;
      os << tname << " needs " << numel << " x " << width << " bytes, raw_data holds "
         << raw_data->size();
      r.fail(os.str());
    }
    t.bytes.assign(raw_data->begin(), raw_data->end());
  } else {
    // Which typed field onnx.proto3 assigns to this type; every other typed field must be empty.
    const char* field = nullptr;
    std::size_t count = 0;
    switch (*dtype) {
      case DType::kFloat32:
        field = "float_data";
        count = float_data.size() / 4;
        break;
      case DType::kFloat64:
        field = "double_data";
        count = double_data.size() / 8;
        break;
      case DType::kInt64:
        field = "int64_data";
        count = int64_data.size();
        break;
      case DType::kUInt32:
      case DType::kUInt64:
        field = "uint64_data";
        count = uint64_data.size();
        break;
      default:
        field = "int32_data";
        count = int32_data.size();
        break;
    }
    if (count != typed) {
      std::ostringstream os;
      os << tname << " stores its values in " << field << ", but other typed fields hold data";
      r.fail(os.str());
    }
    if (count != static_cast<uint64_t>(numel)) count_error(field, count);
    t.bytes.assign(static_cast<std::size_t>(numel) * width, 0);
    auto range_error = [&](std::size_t i, int64_t v) {
      std::ostringstream os;
      os << field << "[" << i << "] = " << v << " is out of range for " << dtype_name(*dtype);
      r.fail(os.str());
    };
    switch (*dtype) {
      case DType::kFloat32:
        t.bytes.assign(float_data.begin(), float_data.end());
        break;
      case DType::kFloat64:
        t.bytes.assign(double_data.begin(), double_data.end());
        break;
      case DType::kInt64:
        for (std::size_t i = 0; i < count; ++i)
          put(t.bytes, i, static_cast<int64_t>(int64_data[i]));
        break;
      case DType::kUInt64:
        for (std::size_t i = 0; i < count; ++i) put(t.bytes, i, uint64_data[i]);
        break;
      case DType::kUInt32:
        for (std::size_t i = 0; i < count; ++i) {
          if (uint64_data[i] > 0xFFFFFFFFu) range_error(i, static_cast<int64_t>(uint64_data[i]));
          put(t.bytes, i, static_cast<uint32_t>(uint64_data[i]));
        }
        break;
      default: {
        // int32 fields: protobuf truncates the varint to its low 32 bits (negative values are sent
        // sign-extended to 64 bits).
        int64_t lo = 0, hi = 0;
        switch (*dtype) {
          case DType::kInt8:
            lo = -128;
            hi = 127;
            break;
          case DType::kUInt8:
            lo = 0;
            hi = 255;
            break;
          case DType::kInt16:
            lo = -32768;
            hi = 32767;
            break;
          case DType::kUInt16:
            lo = 0;
            hi = 65535;
            break;
          case DType::kInt32:
            lo = std::numeric_limits<int32_t>::min();
            hi = std::numeric_limits<int32_t>::max();
            break;
          case DType::kFloat16:
          case DType::kBFloat16:
            lo = 0;
            hi = 0xFFFF;
            break;  // bit patterns, zero-extended
          default:
            MMTUNE_CHECK(is_float8(*dtype), dtype_name(*dtype));
            lo = 0;
            hi = 0xFF;
            break;
        }
        for (std::size_t i = 0; i < count; ++i) {
          const int64_t v = static_cast<int32_t>(static_cast<uint32_t>(int32_data[i]));
          if (v < lo || v > hi) range_error(i, v);
          switch (width) {
            case 1:
              put(t.bytes, i, static_cast<uint8_t>(v));
              break;
            case 2:
              put(t.bytes, i, static_cast<uint16_t>(v));
              break;
            default:
              put(t.bytes, i, static_cast<int32_t>(v));
              break;
          }
        }
      }
    }
  }
  MMTUNE_CHECK(t.bytes.size() == static_cast<std::size_t>(numel) * width, t.bytes.size());
  if (name_out) *name_out = name;
  return t;
}

Tensor parse_tensor_proto(const std::vector<uint8_t>& bytes, const std::string& what,
                          std::string* name) {
  return parse_tensor_proto(bytes.data(), bytes.size(), what, name);
}

Tensor read_tensor_proto(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) invalid(path, "cannot open the TensorProto file");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  if (in.bad()) invalid(path, "read error");
  return parse_tensor_proto(bytes, path);
}

}  // namespace mmtune::testing
