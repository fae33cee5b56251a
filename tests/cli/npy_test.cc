// read_npy / write_npy: numpy-written files (tests/vectors/gen_npy.py), round trips, byte-exact
// agreement with np.save, and every rejection class with its message.
#include "autotune/npy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <typeinfo>
#include <vector>

#include "tests/support/test_support.h"

namespace mmtune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int n = 0;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("mmtune_npy_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + "_" +
             (info ? std::string(info->name()) : std::string("x")));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }
  std::set<std::string> listing() const {
    std::set<std::string> r;
    for (const auto& e : fs::directory_iterator(path_)) r.insert(e.path().filename().string());
    return r;
  }

 private:
  fs::path path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// A version 1.0/2.0/3.0 .npy file with the given header text (padded as numpy does unless `raw`).
std::string npy_file(const std::string& dict, const std::string& data, int major = 1,
                     bool raw = false) {
  std::string h = dict;
  if (!raw) {
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    const std::size_t hlen = h.size() + 1;
    h.append(64 - ((6 + 2 + len_bytes + hlen) % 64), ' ');
    h += '\n';
  }
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  const std::size_t n = h.size();
  out += static_cast<char>(n & 0xFF);
  out += static_cast<char>((n >> 8) & 0xFF);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xFF);
    out += static_cast<char>((n >> 24) & 0xFF);
  }
  return out + h + data;
}

// Little-endian bytes of `values` (exact integers, or bit patterns for floats), `width` bytes each.
Bytes expected_bytes(const json& values, std::size_t width) {
  Bytes out;
  for (const json& v : values) {
    const uint64_t u =
        v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
    for (std::size_t b = 0; b < width; ++b) out.push_back(static_cast<uint8_t>(u >> (8 * b)));
  }
  return out;
}

Shape shape_of(const json& j) {
  Shape s;
  for (const json& d : j) s.push_back(d.get<int64_t>());
  return s;
}

DType dtype_of(const json& j) {
  const auto t = dtype_from_name(j.get<std::string>());
  if (!t) throw std::runtime_error("unknown dtype in index.json: " + j.dump());
  return *t;
}

json load_index() {
  std::ifstream in(testing::vectors_dir("npy") + "/index.json");
  if (!in) throw std::runtime_error("cannot open npy/index.json");
  return json::parse(in);
}

// Expects read_npy(path, as) to throw InvalidArgument whose message starts with `path` and contains
// every fragment.
void expect_rejected(const std::string& path, const std::vector<std::string>& fragments,
                     std::optional<DType> as = std::nullopt) {
  try {
    const Tensor t = read_npy(path, as);
    ADD_FAILURE() << path << " was accepted as " << describe(t);
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "message does not start with the path: " << msg;
    for (const std::string& f : fragments) {
      EXPECT_NE(msg.find(f), std::string::npos) << "message lacks '" << f << "': " << msg;
    }
  }
}

const std::vector<DType> kAllTypes = {
    DType::kInt8,         DType::kUInt8,          DType::kInt16,      DType::kUInt16,
    DType::kInt32,        DType::kUInt32,         DType::kInt64,      DType::kUInt64,
    DType::kFloat16,      DType::kBFloat16,       DType::kFloat32,    DType::kFloat64,
    DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ,
};

// ------------------------------------------------------------------------------------------------
// Files numpy wrote.

TEST(npy_numpy_files, ReadsEveryFileExactly) {
  const json index = load_index();
  const std::string dir = testing::vectors_dir("npy");
  int checked = 0;
  std::set<std::string> descr_kinds;
  for (const json& c : index.at("read")) {
    const std::string path = dir + "/" + c.at("file").get<std::string>();
    SCOPED_TRACE(path);
    const DType want = dtype_of(c.at("dtype"));
    std::optional<DType> as;
    if (!c.at("as").is_null()) as = dtype_of(c.at("as"));
    const Tensor t = read_npy(path, as);
    EXPECT_EQ(t.dtype, want);
    EXPECT_EQ(shape_str(t.shape), shape_str(shape_of(c.at("shape"))));
    EXPECT_EQ(t.bytes, expected_bytes(c.at("values"), dtype_size(want)));
    ++checked;
  }
  EXPECT_GE(checked, 150);
  std::cout << "[ npy ] compared " << checked << " numpy-written files element by element\n";
}

TEST(npy_numpy_files, WriteMatchesNpSaveByteForByte) {
  const json index = load_index();
  const std::string dir = testing::vectors_dir("npy");
  TempDir tmp;
  std::set<DType> types;
  int checked = 0;
  for (const json& c : index.at("write")) {
    const std::string ref = dir + "/" + c.at("file").get<std::string>();
    SCOPED_TRACE(ref);
    Tensor t(dtype_of(c.at("dtype")), shape_of(c.at("shape")));
    t.bytes = expected_bytes(c.at("values"), dtype_size(t.dtype));
    ASSERT_EQ(static_cast<int64_t>(t.bytes.size()),
              t.numel() * static_cast<int64_t>(dtype_size(t.dtype)));
    const std::string out = tmp.file("out.npy");
    write_npy(out, t);
    EXPECT_EQ(testing::read_file_bytes(out), testing::read_file_bytes(ref));
    // And back.
    const Tensor back = read_npy(out, t.dtype);
    EXPECT_EQ(back.dtype, t.dtype);
    EXPECT_EQ(back.shape, t.shape);
    EXPECT_EQ(back.bytes, t.bytes);
    types.insert(t.dtype);
    ++checked;
  }
  EXPECT_EQ(types.size(), kAllTypes.size());
  EXPECT_GE(checked, 112);
  std::cout << "[ npy ] " << checked << " write_npy outputs identical to np.save\n";
}

TEST(npy_numpy_files, RejectsWhatMmtuneDoesNotRead) {
  const json index = load_index();
  const std::string dir = testing::vectors_dir("npy");
  int checked = 0;
  for (const json& c : index.at("reject")) {
    const std::string path = dir + "/" + c.at("file").get<std::string>();
    SCOPED_TRACE(path);
    std::optional<DType> as;
    if (!c.at("as").is_null()) as = dtype_of(c.at("as"));
    std::vector<std::string> fragments;
    for (const json& f : c.at("contains")) {
      std::string s = f.get<std::string>();
      // The index names files relative to the folder; the message starts with the full path.
      if (s == c.at("file").get<std::string>() + ": ") s = path + ": ";
      fragments.push_back(s);
    }
    expect_rejected(path, fragments, as);
    ++checked;
  }
  EXPECT_GE(checked, 16);
}

// ------------------------------------------------------------------------------------------------
// Round trips without numpy.

TEST(npy_round_trip, EveryDtypeAndShape) {
  TempDir tmp;
  const std::vector<Shape> shapes = {{}, {0}, {0, 3}, {5}, {2, 3, 4}, {1, 1, 1, 1, 1, 2}};
  std::mt19937_64 rng(7);
  for (DType type : kAllTypes) {
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(describe(Tensor(type, shape)));
      Tensor t(type, shape);
      for (uint8_t& b : t.bytes) b = static_cast<uint8_t>(rng());
      const std::string path = tmp.file(std::string(dtype_name(type)) + ".npy");
      write_npy(path, t);
      const std::vector<uint8_t> file = testing::read_file_bytes(path);
      // Version 1.0, data aligned to 64 bytes, header ends in '\n'.
      ASSERT_GE(file.size(), 64u);
      EXPECT_EQ(file[6], 1);
      EXPECT_EQ(file[7], 0);
      const std::size_t data_start = 10 + file[8] + 256u * file[9];
      EXPECT_EQ(data_start % 64, 0u);
      EXPECT_EQ(file[data_start - 1], '\n');
      EXPECT_EQ(file.size(), data_start + t.bytes.size());
      const std::string header(file.begin() + 10,
                               file.begin() + static_cast<std::ptrdiff_t>(data_start));
      EXPECT_NE(header.find("'descr': '" + npy_descr(type) + "'"), std::string::npos) << header;

      const Tensor plain = read_npy(path);  // the stored numpy dtype
      EXPECT_EQ(dtype_size(plain.dtype), dtype_size(type));
      EXPECT_EQ(plain.bytes, t.bytes);
      const Tensor back = read_npy(path, type);
      EXPECT_EQ(back.dtype, type);
      EXPECT_EQ(back.shape, shape);
      EXPECT_EQ(back.bytes, t.bytes);
    }
  }
  EXPECT_EQ(tmp.listing().size(), kAllTypes.size());  // no temporary files left behind
}

TEST(npy_round_trip, DescrOfNarrowFloatsIsTheirBitPattern) {
  EXPECT_EQ(npy_descr(DType::kBFloat16), "<u2");
  EXPECT_EQ(npy_descr(DType::kFloat16), "<f2");
  EXPECT_EQ(npy_descr(DType::kInt8), "|i1");
  EXPECT_EQ(npy_descr(DType::kUInt64), "<u8");
  for (DType t :
       {DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ}) {
    EXPECT_EQ(npy_descr(t), "|u1");
  }
}

TEST(npy_round_trip, HugeRankUsesVersion2Header) {
  // numpy itself stops at 64 dims; a Tensor does not, and a header over 64 KiB needs format 2.0.
  TempDir tmp;
  Tensor t(DType::kInt16, Shape(25000, 1));
  t.bytes = {0x34, 0x12};
  const std::string path = tmp.file("deep.npy");
  write_npy(path, t);
  const std::vector<uint8_t> file = testing::read_file_bytes(path);
  EXPECT_EQ(file[6], 2);
  const std::size_t hlen =
      file[8] | (file[9] << 8) | (file[10] << 16) | (static_cast<std::size_t>(file[11]) << 24);
  EXPECT_EQ((12 + hlen) % 64, 0u);
  const Tensor back = read_npy(path);
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.bytes, t.bytes);
}

TEST(npy_round_trip, OverwritesAnExistingFile) {
  TempDir tmp;
  const std::string path = tmp.file("a.npy");
  write_bytes(path, "old contents");
  write_npy(path, Tensor::from<int32_t>(DType::kInt32, {2}, {7, -7}));
  EXPECT_EQ(int_at(read_npy(path), 1), -7);
  EXPECT_EQ(tmp.listing(), std::set<std::string>{"a.npy"});
}

// ------------------------------------------------------------------------------------------------
// Header parsing: what numpy accepts, written by hand.

TEST(npy_header, AcceptsAnyKeyOrderQuotesSpacingAndTrailingCommas) {
  TempDir tmp;
  const std::string data("\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x00", 12);
  const std::vector<std::string> dicts = {
      "{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }",
      "{'shape': (2, 3), 'descr': '<i2', 'fortran_order': False}",
      "{'fortran_order':False,'shape':(2,3,),'descr':'<i2',}",
      "{\"descr\": \"<i2\", \"fortran_order\": False, \"shape\": (2, 3)}",
      "  {  'descr' :  '<i2' ,\t'fortran_order' : False ,\n 'shape' : ( 2 , 3 ) , }  ",
      "{'descr': '=i2', 'fortran_order': False, 'shape': (2L, 3L), }",  // Python 2 longs, native
                                                                        // order
      "{'descr': 'i2', 'fortran_order': False, 'shape': (2, 3)}",       // no byte-order character
  };
  for (std::size_t i = 0; i < dicts.size(); ++i) {
    SCOPED_TRACE(dicts[i]);
    const std::string path = tmp.file("h" + std::to_string(i) + ".npy");
    write_bytes(path, npy_file(dicts[i], data));
    const Tensor t = read_npy(path);
    EXPECT_EQ(t.dtype, DType::kInt16);
    EXPECT_EQ(t.shape, (Shape{2, 3}));
    EXPECT_EQ(int_at(t, 5), 6);
  }
  // Unpadded header (no trailing newline), 0-d and 1-tuple shapes, 1-byte types with any order
  // char.
  const std::string p0 = tmp.file("scalar.npy");
  write_bytes(p0, npy_file("{'descr':'<f8','fortran_order':False,'shape':()}", std::string(8, '\0'),
                           1, true));
  EXPECT_EQ(read_npy(p0).shape, Shape{});
  const std::string p1 = tmp.file("one.npy");
  write_bytes(p1, npy_file("{'descr': '>u1', 'fortran_order': True, 'shape': (5,)}", "abcde"));
  const Tensor t1 = read_npy(p1);
  EXPECT_EQ(t1.dtype, DType::kUInt8);
  EXPECT_EQ(t1.shape, Shape{5});
  EXPECT_EQ(std::string(t1.bytes.begin(), t1.bytes.end()), "abcde");
  const std::string p2 = tmp.file("lt_i1.npy");
  write_bytes(p2, npy_file("{'descr': '<i1', 'fortran_order': False, 'shape': (1,)}", "\xff"));
  EXPECT_EQ(int_at(read_npy(p2), 0), -1);
}

TEST(npy_header, Versions2And3) {
  TempDir tmp;
  const std::string data("\x00\x00\x80\x3f", 4);
  for (int major : {2, 3}) {
    const std::string path = tmp.file("v" + std::to_string(major) + ".npy");
    write_bytes(path,
                npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", data, major));
    const Tensor t = read_npy(path);
    EXPECT_EQ(t.dtype, DType::kFloat32);
    EXPECT_EQ(t.bytes, Bytes(data.begin(), data.end()));
  }
}

TEST(npy_header, FortranOrderIsTransposedIntoCOrder) {
  TempDir tmp;
  // C-order values v[i][j][k] = 100 i + 10 j + k for shape (2, 3, 4), stored column-major.
  std::string data;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) data += static_cast<char>(100 * i + 10 * j + k);
  const std::string path = tmp.file("f.npy");
  write_bytes(path,
              npy_file("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3, 4), }", data));
  const Tensor t = read_npy(path);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(int_at(t, i * 12 + j * 4 + k), 100 * i + 10 * j + k);
}

// ------------------------------------------------------------------------------------------------
// Rejections: each names the file and the rule.

TEST(npy_reject, MissingFileAndDirectory) {
  TempDir tmp;
  expect_rejected(tmp.file("absent.npy"), {"cannot open", "No such file"});
  expect_rejected(tmp.path().string(), {"is a directory"});
}

TEST(npy_reject, BadMagicShortFileUnknownVersion) {
  TempDir tmp;
  const std::string p = tmp.file("x.npy");
  write_bytes(p, "PK\x03\x04 this is a zip (an .npz?)");
  expect_rejected(p, {"not a .npy file", "bad magic"});
  write_bytes(p, "");
  expect_rejected(p, {"too short"});
  write_bytes(p, std::string("\x93NUM", 4));
  expect_rejected(p, {"too short"});
  write_bytes(p, std::string("\x93NUMPY", 6));
  expect_rejected(p, {"format version"});
  std::string v4 =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", std::string(4, '\0'));
  v4[6] = 4;
  write_bytes(p, v4);
  expect_rejected(p, {"unknown .npy format version 4.0", "1.0, 2.0 and 3.0"});
  v4[6] = 1;
  v4[7] = 1;
  write_bytes(p, v4);
  expect_rejected(p, {"unknown .npy format version 1.1"});
}

TEST(npy_reject, TruncatedHeader) {
  TempDir tmp;
  const std::string p = tmp.file("t.npy");
  write_bytes(p, std::string("\x93NUMPY\x01\x00\x40", 9));
  expect_rejected(p, {"header length field"});
  write_bytes(p, std::string("\x93NUMPY\x02\x00\x40\x00\x00", 11));
  expect_rejected(p, {"header length field"});
  const std::string full =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", std::string(4, '\0'));
  write_bytes(p, full.substr(0, 40));
  expect_rejected(p, {"file ends inside the .npy header", "after 30 of 118 header bytes"});
  // A header length field of 4 GiB on a tiny file.
  write_bytes(p, std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14));
  expect_rejected(p, {"file ends inside the .npy header", "of 4294967295 header bytes"});
}

TEST(npy_reject, MalformedHeaders) {
  TempDir tmp;
  const std::string p = tmp.file("m.npy");
  struct Case {
    std::string dict;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"", "must be a Python dict"},
      {"['descr', '<f4']", "must be a Python dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False}", "key 'shape' is missing"},
      {"{'fortran_order': False, 'shape': (1,)}", "key 'descr' is missing"},
      {"{'descr': '<f4', 'shape': (1,)}", "key 'fortran_order' is missing"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
       "unexpected key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
       "'descr' appears twice"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "must be True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}", "must be True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", "must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,)}", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (a,)}", "integer dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,),} x", "after the closing '}'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}",
       "expected ',' or '}' after the value of 'descr'"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", "expected ':' after key 'descr'"},
      {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}", "escape sequences"},
      {"{'descr': <f4, 'fortran_order': False, 'shape': (1,)}", "quoted dtype string"},
      {"{descr: '<f4'}", "quoted key"},
      {"{'descr': '<f4", "unterminated string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dict);
    write_bytes(p, npy_file(c.dict, std::string(4, '\0')));
    expect_rejected(p, {"malformed .npy header", c.fragment});
  }
}

TEST(npy_reject, UnsupportedDtypes) {
  TempDir tmp;
  const std::string p = tmp.file("d.npy");
  struct Case {
    std::string descr;
    std::vector<std::string> fragments;
  };
  const std::string list =
      "mmtune reads int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, "
      "float64";
  const std::vector<Case> cases = {
      {"'<c8'", {"dtype '<c8' (complex) is not supported; " + list}},
      {"'|b1'", {"dtype '|b1' (bool) is not supported"}},
      {"'?'", {"(bool)"}},
      {"'|O'", {"dtype '|O' (object arrays"}},
      {"'<U4'", {"(strings)"}},
      {"'|V2'", {"raw void bytes", "view(np.uint16)"}},
      {"'<m8[s]'", {"datetime"}},
      {"'<f16'", {"dtype '<f16' is not supported; " + list}},
      {"'<i3'", {"dtype '<i3' is not supported"}},
      {"'<f1'", {"dtype '<f1' is not supported"}},
      {"'float32'", {"dtype 'float32' is not supported"}},
      {"''", {"dtype '' is not supported"}},
      {"'|f4'", {"'|f4'", "only valid for 1-byte types"}},
      {"[('a', '<i4'), ('b', '<f4')]", {"structured dtypes", "not supported"}},
      {"'<f\x80\xff'", {"dtype '<f\\x80\\xff' is not supported"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.descr);
    write_bytes(p, npy_file("{'descr': " + c.descr + ", 'fortran_order': False, 'shape': (2,), }",
                            std::string(64, '\0')));
    expect_rejected(p, c.fragments);
  }
}

TEST(npy_reject, ShapeRules) {
  TempDir tmp;
  const std::string p = tmp.file("s.npy");
  write_bytes(p, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3, -1), }", ""));
  expect_rejected(p, {"negative dimension -1"});
  write_bytes(
      p,
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""));
  expect_rejected(p, {"dimension 99999999999999999999 is too large"});
  write_bytes(
      p, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                  ""));
  expect_rejected(p, {"shape [4294967296,4294967296]", "overflows 64 bits"});
  // Zero-sized, yet the other dims overflow: numpy refuses to create such an array too.
  write_bytes(
      p, npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4611686018427387904), }",
                  ""));
  expect_rejected(p, {"overflows 64 bits"});
  // Fits in 64 bits but the file is far shorter: truncated, without allocating the declared size.
  write_bytes(p, npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }",
                          "12345678"));
  expect_rejected(p, {"file ends after 8 of 8000000000000 data bytes", "truncated"});
}

TEST(npy_reject, TruncatedAndTrailingData) {
  TempDir tmp;
  const std::string p = tmp.file("a.npy");
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  write_bytes(p, npy_file(dict, std::string(37, 'x')));
  expect_rejected(p, {"file ends after 37 of 48 data bytes"});
  write_bytes(p, npy_file(dict, ""));
  expect_rejected(p, {"file ends after 0 of 48 data bytes"});
  write_bytes(p, npy_file(dict, std::string(50, 'x')));
  expect_rejected(p, {"2 unexpected trailing bytes after the 48 data bytes"});
  write_bytes(p, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", "z"));
  expect_rejected(p, {"1 unexpected trailing bytes after the 0 data bytes"});
}

TEST(npy_reject, DisallowedReinterpretationNamesBothDtypes) {
  TempDir tmp;
  const std::string p = tmp.file("r.npy");
  write_bytes(p, npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': (1,), }", "ab"));
  expect_rejected(p, {"cannot read the stored dtype int16 ('<i2') as bfloat16"}, DType::kBFloat16);
  expect_rejected(p, {"int16", "uint16"}, DType::kUInt16);
  write_bytes(p, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "abcd"));
  expect_rejected(p, {"float32", "int32"}, DType::kInt32);
  write_bytes(p, npy_file("{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }", "a"));
  expect_rejected(p, {"uint8", "float16"}, DType::kFloat16);
  EXPECT_EQ(read_npy(p, DType::kFloat8E5M2).dtype, DType::kFloat8E5M2);
  EXPECT_EQ(read_npy(p, DType::kUInt8).dtype, DType::kUInt8);
}

// Hostile input: random headers and data after a valid magic, and mutations of valid files, only
// ever throw InvalidArgument (or read successfully).
TEST(npy_reject, FuzzOnlyThrowsInvalidArgument) {
  TempDir tmp;
  const std::string p = tmp.file("fuzz.npy");
  std::mt19937 rng(12345);
  auto byte = [&] { return static_cast<char>(rng() & 0xFF); };
  const std::string alphabet = "{}()[],:'\" \n<>|=iufbcOV?0123456789-LTrueFalsdscrhpotn_";
  const std::vector<std::string> seeds = {
      npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
               std::string(24, '\x7f')),
      npy_file("{'descr': '>i8', 'fortran_order': False, 'shape': (), }", std::string(8, '\x01'),
               2),
      npy_file("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 1, 2), }", "abcd", 3),
  };
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string f;
    const int mode = iter % 4;
    if (mode == 0) {  // random bytes after magic + version
      f = std::string("\x93NUMPY", 6) + static_cast<char>(1 + rng() % 3) + '\0';
      const std::size_t n = rng() % 200;
      for (std::size_t i = 0; i < n; ++i) f += byte();
    } else if (mode == 1) {  // random header text from the header alphabet
      std::string dict;
      const std::size_t n = rng() % 120;
      for (std::size_t i = 0; i < n; ++i) dict += alphabet[rng() % alphabet.size()];
      f = npy_file(dict, std::string(rng() % 64, 'd'), 1 + static_cast<int>(rng() % 3), rng() % 2);
    } else {  // mutations of valid files: flips, truncation, insertion
      f = seeds[rng() % seeds.size()];
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !f.empty(); ++e) {
        const std::size_t at = rng() % f.size();
        switch (rng() % 4) {
          case 0:
            f[at] = byte();
            break;
          case 1:
            f[at] = alphabet[rng() % alphabet.size()];
            break;
          case 2:
            f.resize(at);
            break;
          default:
            f.insert(at, 1, alphabet[rng() % alphabet.size()]);
            break;
        }
      }
    }
    fs::remove(p);  // a fresh file, not a truncated one (ext4 flushes on truncate-and-rewrite)
    write_bytes(p, f);
    try {
      const Tensor t = read_npy(p);
      ASSERT_EQ(static_cast<int64_t>(t.bytes.size()),
                t.numel() * static_cast<int64_t>(dtype_size(t.dtype)));
      ++accepted;
    } catch (const InvalidArgument& e) {
      ASSERT_EQ(std::string(e.what()).rfind(p + ": ", 0), 0u) << e.what();
      ++rejected;
    } catch (const std::exception& e) {
      FAIL() << "iteration " << iter << ": " << typeid(e).name() << ": " << e.what();
    }
  }
  EXPECT_GT(rejected, 2000);
  std::cout << "[ npy ] fuzz: " << accepted << " accepted, " << rejected << " rejected\n";
}

// ------------------------------------------------------------------------------------------------
// Failed writes leave nothing behind.

TEST(npy_write, MissingFolderIsNamedAndLeavesNoFile) {
  TempDir tmp;
  const std::string path = tmp.file("no/such/folder/a.npy");
  try {
    write_npy(path, Tensor(DType::kFloat32, {2}));
    ADD_FAILURE() << "write into a missing folder succeeded";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  }
  EXPECT_TRUE(tmp.listing().empty());
}

TEST(npy_write, TargetThatIsADirectoryIsRefusedAndLeavesNoTemporary) {
  TempDir tmp;
  fs::create_directory(tmp.path() / "d.npy");
  const std::string path = tmp.file("d.npy");
  try {
    write_npy(path, Tensor(DType::kUInt8, {3}));
    ADD_FAILURE() << "write onto a directory succeeded";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
  }
  EXPECT_EQ(tmp.listing(), std::set<std::string>{"d.npy"});
  EXPECT_TRUE(fs::is_empty(tmp.path() / "d.npy"));
}

TEST(npy_write, ParentThatIsAFileIsRefused) {
  TempDir tmp;
  write_bytes(tmp.file("plain"), "x");
  const std::string path = tmp.file("plain/a.npy");
  try {
    write_npy(path, Tensor(DType::kInt8, {1}));
    ADD_FAILURE() << "write below a regular file succeeded";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find("is not a folder"), std::string::npos) << msg;
  }
  EXPECT_EQ(tmp.listing(), std::set<std::string>{"plain"});
}

TEST(npy_write, UnwritableFolder) {
  // A read-only folder stops everyone but root; /proc/self refuses new files even to root.
  TempDir tmp;
  const fs::path ro = ::geteuid() == 0 ? fs::path("/proc/self") : tmp.path() / "ro";
  if (::geteuid() != 0) {
    fs::create_directory(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  }
  const std::string path = (ro / "a.npy").string();
  try {
    write_npy(path, Tensor(DType::kInt8, {1}));
    ADD_FAILURE() << "write into a read-only folder succeeded";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find("cannot create a file in folder"), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists(path));
  if (::geteuid() != 0) {
    fs::permissions(ro, fs::perms::owner_all);
    EXPECT_TRUE(fs::is_empty(ro));
  }
}

}  // namespace
}  // namespace mmtune
