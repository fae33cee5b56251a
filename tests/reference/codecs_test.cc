// Codecs of reference/codecs.h against NumPy / ml_dtypes (vectors of tests/vectors/gen_codecs.py)
// and against hand-written values of the SEMANTICS.md §6 table.
#include "reference/codecs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "reference/error.h"
#include "tests/support/test_support.h"

namespace mmtune {
namespace {

using nlohmann::json;

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float float_of(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

std::string hex(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << std::uppercase << v;
  return os.str();
}

// ---------------------------------------------------------------------------------------------
// Vectors written by gen_codecs.py.

const std::string& dir() {
  static const std::string d = testing::vectors_dir("codecs");
  return d;
}

const json& index_json() {
  static const json j = [] {
    std::ifstream in(dir() + "/index.json");
    if (!in) throw std::runtime_error("cannot open " + dir() + "/index.json");
    return json::parse(in);
  }();
  return j;
}

// The file's little-endian unsigned integers of `width` bytes.
std::vector<uint32_t> read_uints(const std::string& file, int width) {
  const std::vector<uint8_t> b = testing::read_file_bytes(dir() + "/" + file);
  if (b.size() % static_cast<std::size_t>(width) != 0) {
    throw std::runtime_error(file + ": size is not a multiple of " + std::to_string(width));
  }
  std::vector<uint32_t> v(b.size() / static_cast<std::size_t>(width));
  for (std::size_t i = 0; i < v.size(); ++i) {
    uint32_t x = 0;
    for (int k = width - 1; k >= 0; --k) x = (x << 8) | b[i * static_cast<std::size_t>(width) + k];
    v[i] = x;
  }
  return v;
}

const json& find_entry(const char* list, const char* key, const std::string& name) {
  for (const json& e : index_json().at(list)) {
    if (e.at(key).get<std::string>() == name) return e;
  }
  throw std::runtime_error(std::string("index.json: no ") + list + " entry " + name);
}

// Reports the first few mismatches in full, then only counts them.
class Mismatches {
 public:
  explicit Mismatches(std::string what) : what_(std::move(what)) {}
  ~Mismatches() {
    if (count_ > 0) ADD_FAILURE() << what_ << ": " << count_ << " mismatches in total";
  }
  void add(const std::string& detail) {
    if (++count_ <= 8) ADD_FAILURE() << what_ << ": " << detail;
  }

 private:
  std::string what_;
  long long count_ = 0;
};

void report(const std::string& key, long long value, const std::string& line) {
  ::testing::Test::RecordProperty(key, std::to_string(value));
  std::cout << "[codecs] " << line << std::endl;
}

// ---------------------------------------------------------------------------------------------
// The code under test, by the generator's names.

struct Decoder {
  const char* name;
  uint32_t patterns;
  float (*fn)(uint32_t);
};

const Decoder kDecoders[] = {
    {"float16", 65536, [](uint32_t b) { return float16_to_float(static_cast<uint16_t>(b)); }},
    {"bfloat16", 65536, [](uint32_t b) { return bfloat16_to_float(static_cast<uint16_t>(b)); }},
    {"float8e4m3fn", 256,
     [](uint32_t b) { return float8_to_float(DType::kFloat8E4M3FN, static_cast<uint8_t>(b)); }},
    {"float8e4m3fnuz", 256,
     [](uint32_t b) { return float8_to_float(DType::kFloat8E4M3FNUZ, static_cast<uint8_t>(b)); }},
    {"float8e5m2", 256,
     [](uint32_t b) { return float8_to_float(DType::kFloat8E5M2, static_cast<uint8_t>(b)); }},
    {"float8e5m2fnuz", 256,
     [](uint32_t b) { return float8_to_float(DType::kFloat8E5M2FNUZ, static_cast<uint8_t>(b)); }},
};

struct Encoder {
  const char* name;
  int width;  // bytes per encoded value
  uint32_t (*fn)(float);
};

const Encoder kEncoders[] = {
    {"float16", 2, [](float x) -> uint32_t { return float_to_float16(x); }},
    {"float16_saturate", 2, [](float x) -> uint32_t { return float_to_float16_saturate(x); }},
    {"bfloat16", 2, [](float x) -> uint32_t { return float_to_bfloat16(x); }},
    {"float8e4m3fn", 1,
     [](float x) -> uint32_t { return float_to_float8(DType::kFloat8E4M3FN, x, false); }},
    {"float8e4m3fn_saturate", 1,
     [](float x) -> uint32_t { return float_to_float8(DType::kFloat8E4M3FN, x, true); }},
    {"float8e4m3fnuz", 1,
     [](float x) -> uint32_t { return float_to_float8(DType::kFloat8E4M3FNUZ, x, false); }},
    {"float8e4m3fnuz_saturate", 1,
     [](float x) -> uint32_t { return float_to_float8(DType::kFloat8E4M3FNUZ, x, true); }},
    {"float8e5m2", 1,
     [](float x) -> uint32_t { return float_to_float8(DType::kFloat8E5M2, x, false); }},
    {"float8e5m2_saturate", 1,
     [](float x) -> uint32_t { return float_to_float8(DType::kFloat8E5M2, x, true); }},
    {"float8e5m2fnuz", 1,
     [](float x) -> uint32_t { return float_to_float8(DType::kFloat8E5M2FNUZ, x, false); }},
    {"float8e5m2fnuz_saturate", 1,
     [](float x) -> uint32_t { return float_to_float8(DType::kFloat8E5M2FNUZ, x, true); }},
};

// ---------------------------------------------------------------------------------------------
// 1. Decoding: every pattern of every format, against NumPy (float16) / ml_dtypes (the others).
// Non-NaN: same float32 bits (so -0 stays -0). NaN: NumPy keeps float16 payloads and ml_dtypes does
// not, so the comparison is "NaN with the same sign"; mmtune's own rule (codecs.h: quiet 0x7FC00000
// with the pattern's sign) is checked on top.

TEST(codecs, DecodeEveryPatternLikeNumpyAndMlDtypes) {
  long long total = 0;
  for (const Decoder& d : kDecoders) {
    const json& e = find_entry("decode", "format", d.name);
    const std::vector<uint32_t> expected = read_uints(e.at("file").get<std::string>(), 4);
    ASSERT_EQ(expected.size(), d.patterns) << d.name;
    Mismatches bad(std::string("decode ") + d.name);
    long long nans = 0;
    for (uint32_t p = 0; p < d.patterns; ++p) {
      const uint32_t want = expected[p];
      const uint32_t got = bits_of(d.fn(p));
      if (std::isnan(float_of(want))) {
        ++nans;
        const uint32_t canonical = 0x7FC00000u | (want & 0x80000000u);
        if (got != canonical) {
          bad.add("pattern " + hex(p) + ": expected NaN " + hex(want) + " -> quiet NaN " +
                  hex(canonical) + ", got " + hex(got));
        }
      } else if (got != want) {
        bad.add("pattern " + hex(p) + ": expected " + hex(want) + ", got " + hex(got));
      }
    }
    EXPECT_EQ(nans, e.at("nan_count").get<long long>()) << d.name;
    total += d.patterns;
    report(std::string("decode_") + d.name, d.patterns,
           std::string("decode ") + d.name + ": " + std::to_string(d.patterns) +
               " patterns compared (" + std::to_string(nans) + " NaN by sign)");
  }
  report("decode_total", total, "decode: " + std::to_string(total) + " patterns compared in total");
}

// ---------------------------------------------------------------------------------------------
// 2a. Encoding of the edge cases: every representable value of each format, the ties between
// neighbours and their float32 neighbours, quarter points, overflow thresholds, +-0, +-Inf, NaNs.
// Expected values from NumPy / ml_dtypes (canonical NaN rule for float16/bfloat16, §6 saturate
// table applied in Python for the *_saturate encoders).

TEST(codecs, EncodeEdgeCasesLikeNumpyAndMlDtypes) {
  const json& s = index_json().at("special");
  const std::vector<uint32_t> inputs = read_uints(s.at("file").get<std::string>(), 4);
  ASSERT_EQ(inputs.size(), s.at("count").get<std::size_t>());
  long long nan_inputs = 0;
  for (uint32_t b : inputs) nan_inputs += std::isnan(float_of(b)) ? 1 : 0;
  EXPECT_EQ(nan_inputs, s.at("nan_count").get<long long>());

  long long total = 0;
  for (const Encoder& enc : kEncoders) {
    const json& e = find_entry("encode", "name", enc.name);
    ASSERT_EQ(e.at("width").get<int>(), enc.width) << enc.name;
    const std::vector<uint32_t> expected =
        read_uints(e.at("special_file").get<std::string>(), enc.width);
    ASSERT_EQ(expected.size(), inputs.size()) << enc.name;
    Mismatches bad(std::string("encode ") + enc.name);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const uint32_t got = enc.fn(float_of(inputs[i]));
      if (got != expected[i]) {
        bad.add("input " + hex(inputs[i]) + ": expected " + hex(expected[i]) + ", got " + hex(got));
      }
    }
    total += static_cast<long long>(inputs.size());
  }
  report("edge_inputs", static_cast<long long>(inputs.size()),
         "encode edge cases: " + std::to_string(inputs.size()) + " float32 inputs (" +
             std::to_string(nan_inputs) + " NaN) x " + std::to_string(std::size(kEncoders)) +
             " encoders = " + std::to_string(total) + " comparisons");
}

// 2b. Encoding of the float32 patterns i * stride for i = 0 .. count-1 (every 97th pattern of the
// whole 2^32 range: both signs, subnormals, NaNs; the exact +-Inf / -0 patterns are in 2a).
// Expected values as in 2a, run-length coded.

TEST(codecs, EncodeStridedSweepLikeNumpyAndMlDtypes) {
  const json& sweep = index_json().at("sweep");
  const uint64_t stride = sweep.at("stride").get<uint64_t>();
  const uint64_t count = sweep.at("count").get<uint64_t>();
  ASSERT_GT(stride, 0u);
  ASSERT_LE(stride, 101u) << "the sweep should stay dense";
  ASSERT_EQ(count, ((uint64_t{1} << 32) + stride - 1) / stride)
      << "the sweep must cover the whole 2^32 range";

  long long nan_inputs = 0, negative_inputs = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t in = static_cast<uint32_t>(i * stride);
    nan_inputs += std::isnan(float_of(in)) ? 1 : 0;
    negative_inputs += (in >> 31) != 0 ? 1 : 0;
  }

  long long total = 0;
  for (const Encoder& enc : kEncoders) {
    const json& e = find_entry("encode", "name", enc.name);
    const std::vector<uint32_t> runs = read_uints(e.at("sweep_file").get<std::string>(), 4);
    ASSERT_EQ(runs.size() % 2, 0u) << enc.name;
    const std::size_t n_runs = runs.size() / 2;
    ASSERT_GT(n_runs, 0u) << enc.name;
    ASSERT_EQ(runs[0], 0u) << enc.name << ": the first run starts at index 0";
    for (std::size_t r = 1; r < n_runs; ++r) {
      ASSERT_LT(runs[2 * (r - 1)], runs[2 * r]) << enc.name << ": run starts must increase";
    }
    ASSERT_LT(runs[2 * (n_runs - 1)], count) << enc.name;

    Mismatches bad(std::string("encode ") + enc.name + " (sweep)");
    std::size_t r = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (r + 1 < n_runs && runs[2 * (r + 1)] == i) ++r;
      const uint32_t in = static_cast<uint32_t>(i * stride);
      const uint32_t want = runs[2 * r + 1];
      const uint32_t got = enc.fn(float_of(in));
      if (got != want) {
        bad.add("input " + hex(in) + ": expected " + hex(want) + ", got " + hex(got));
      }
    }
    total += static_cast<long long>(count);
  }
  report("sweep_inputs", static_cast<long long>(count),
         "encode sweep: " + std::to_string(count) + " float32 inputs (stride " +
             std::to_string(stride) + ", " + std::to_string(negative_inputs) + " negative, " +
             std::to_string(nan_inputs) + " NaN) x " + std::to_string(std::size(kEncoders)) +
             " encoders = " + std::to_string(total) + " comparisons");
}

// ---------------------------------------------------------------------------------------------
// 3. Hand-written values of the SEMANTICS.md §6 table (and of the float16 / bfloat16 rules).

constexpr DType kE4M3FN = DType::kFloat8E4M3FN;
constexpr DType kE4M3FNUZ = DType::kFloat8E4M3FNUZ;
constexpr DType kE5M2 = DType::kFloat8E5M2;
constexpr DType kE5M2FNUZ = DType::kFloat8E5M2FNUZ;
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

int f8(DType t, float x, bool sat = false) { return float_to_float8(t, x, sat); }
float up(float x) { return std::nextafter(x, kInf); }
float down(float x) { return std::nextafter(x, -kInf); }

TEST(codecs, Float8TableMaxima) {
  EXPECT_EQ(float8_to_float(kE4M3FN, 0x7E), 448.0f);
  EXPECT_EQ(float8_to_float(kE4M3FN, 0xFE), -448.0f);
  EXPECT_EQ(float8_to_float(kE4M3FNUZ, 0x7F), 240.0f);
  EXPECT_EQ(float8_to_float(kE4M3FNUZ, 0xFF), -240.0f);
  EXPECT_EQ(float8_to_float(kE5M2, 0x7B), 57344.0f);
  EXPECT_EQ(float8_to_float(kE5M2FNUZ, 0x7F), 57344.0f);
  EXPECT_EQ(f8(kE4M3FN, 448.0f), 0x7E);
  EXPECT_EQ(f8(kE4M3FNUZ, -240.0f), 0xFF);
  EXPECT_EQ(f8(kE5M2, 57344.0f), 0x7B);
  EXPECT_EQ(f8(kE5M2FNUZ, 57344.0f), 0x7F);
  // Overflow thresholds (max + half a step): E4M3FN's max 1.75*2^8 has an even mantissa, so the tie
  // 464 stays at max; the others' maxima are odd, so their ties round up, out of range.
  EXPECT_EQ(f8(kE4M3FN, 464.0f), 0x7E);
  EXPECT_EQ(f8(kE4M3FN, up(464.0f)), 0x7F);        // NaN (no Inf)
  EXPECT_EQ(f8(kE4M3FN, -up(464.0f)), 0xFF);       // NaN, sign kept like ml_dtypes
  EXPECT_EQ(f8(kE4M3FN, up(464.0f), true), 0x7E);  // saturate -> max
  EXPECT_EQ(f8(kE4M3FNUZ, down(248.0f)), 0x7F);
  EXPECT_EQ(f8(kE4M3FNUZ, 248.0f), 0x80);         // NaN
  EXPECT_EQ(f8(kE4M3FNUZ, -248.0f, true), 0xFF);  // -max
  EXPECT_EQ(f8(kE5M2, down(61440.0f)), 0x7B);
  EXPECT_EQ(f8(kE5M2, 61440.0f), 0x7C);         // +Inf
  EXPECT_EQ(f8(kE5M2, -61440.0f), 0xFC);        // -Inf
  EXPECT_EQ(f8(kE5M2, -61440.0f, true), 0xFB);  // -max
  EXPECT_EQ(f8(kE5M2FNUZ, 61440.0f), 0x80);     // NaN
  EXPECT_EQ(f8(kE5M2FNUZ, 61440.0f, true), 0x7F);
}

TEST(codecs, Float8TableSubnormalsAndZeros) {
  EXPECT_EQ(float8_to_float(kE4M3FN, 0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(float8_to_float(kE4M3FNUZ, 0x01), std::ldexp(1.0f, -10));
  EXPECT_EQ(float8_to_float(kE5M2, 0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(float8_to_float(kE5M2FNUZ, 0x01), std::ldexp(1.0f, -17));
  EXPECT_EQ(float8_to_float(kE4M3FN, 0x08), std::ldexp(1.0f, -6));  // min normal
  EXPECT_EQ(float8_to_float(kE4M3FNUZ, 0x08), std::ldexp(1.0f, -7));
  EXPECT_EQ(float8_to_float(kE5M2, 0x04), std::ldexp(1.0f, -14));
  EXPECT_EQ(float8_to_float(kE5M2FNUZ, 0x04), std::ldexp(1.0f, -15));
  EXPECT_EQ(float8_to_float(kE4M3FN, 0x07), 7 * std::ldexp(1.0f, -9));  // max subnormal
  // Half the smallest subnormal is a tie between 0 (even) and 0x01: rounds to 0.
  EXPECT_EQ(f8(kE4M3FN, std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(f8(kE4M3FN, up(std::ldexp(1.0f, -10))), 0x01);
  EXPECT_EQ(f8(kE5M2FNUZ, std::ldexp(1.0f, -18)), 0x00);
  EXPECT_EQ(f8(kE5M2FNUZ, up(std::ldexp(1.0f, -18))), 0x01);
  EXPECT_EQ(f8(kE4M3FN, 1.5f * std::ldexp(1.0f, -9)), 0x02);  // tie 1.5 steps -> 2 (even)
  EXPECT_EQ(f8(kE4M3FN, 2.5f * std::ldexp(1.0f, -9)), 0x02);  // tie 2.5 steps -> 2 (even)
  // -0 and negative underflow: signed zero where it exists, +0 in FNUZ.
  for (bool sat : {false, true}) {
    EXPECT_EQ(f8(kE4M3FN, -0.0f, sat), 0x80);
    EXPECT_EQ(f8(kE5M2, -0.0f, sat), 0x80);
    EXPECT_EQ(f8(kE4M3FNUZ, -0.0f, sat), 0x00);
    EXPECT_EQ(f8(kE5M2FNUZ, -0.0f, sat), 0x00);
    EXPECT_EQ(f8(kE4M3FN, -1e-30f, sat), 0x80);
    EXPECT_EQ(f8(kE4M3FNUZ, -1e-30f, sat), 0x00);
    EXPECT_EQ(f8(kE5M2FNUZ, -std::ldexp(1.0f, -18), sat), 0x00);  // tie to 0
  }
  EXPECT_EQ(bits_of(float8_to_float(kE4M3FN, 0x80)), 0x80000000u);  // -0
  EXPECT_EQ(bits_of(float8_to_float(kE5M2, 0x80)), 0x80000000u);
}

TEST(codecs, Float8TableNaNAndInf) {
  // Decoding.
  EXPECT_TRUE(std::isnan(float8_to_float(kE4M3FN, 0x7F)));
  EXPECT_TRUE(std::isnan(float8_to_float(kE4M3FN, 0xFF)));
  EXPECT_TRUE(std::isnan(float8_to_float(kE4M3FNUZ, 0x80)));
  EXPECT_TRUE(std::isnan(float8_to_float(kE5M2FNUZ, 0x80)));
  EXPECT_TRUE(std::isnan(float8_to_float(kE5M2, 0x7D)));
  EXPECT_EQ(float8_to_float(kE5M2, 0x7C), kInf);
  EXPECT_EQ(float8_to_float(kE5M2, 0xFC), -kInf);
  EXPECT_EQ(float8_to_float(kE4M3FN, 0x7E), 448.0f);  // e=15 is a normal binade except m=7
  // NaN input: any payload.
  for (bool sat : {false, true}) {
    EXPECT_EQ(f8(kE4M3FN, kNaN, sat), 0x7F);
    EXPECT_EQ(f8(kE4M3FN, -kNaN, sat), 0xFF);
    EXPECT_EQ(f8(kE5M2, kNaN, sat), 0x7E);
    EXPECT_EQ(f8(kE5M2, -kNaN, sat), 0xFE);
    EXPECT_EQ(f8(kE4M3FNUZ, -kNaN, sat), 0x80);
    EXPECT_EQ(f8(kE5M2FNUZ, kNaN, sat), 0x80);
    EXPECT_EQ(f8(kE5M2FNUZ, float_of(0x7F800001u), sat), 0x80);  // signalling NaN
  }
  // +-Inf, saturate=0: Inf where it exists, else NaN.
  EXPECT_EQ(f8(kE4M3FN, kInf), 0x7F);
  EXPECT_EQ(f8(kE4M3FN, -kInf), 0xFF);
  EXPECT_EQ(f8(kE5M2, kInf), 0x7C);
  EXPECT_EQ(f8(kE5M2, -kInf), 0xFC);
  EXPECT_EQ(f8(kE4M3FNUZ, -kInf), 0x80);
  EXPECT_EQ(f8(kE5M2FNUZ, kInf), 0x80);
  // +-Inf, saturate=1: +-max, except NaN for FNUZ. This is the ONNX spec table; ONNX's
  // numpy_helper.saturate_cast (np.clip) would give +-max for FNUZ too (SEMANTICS.md §8 rule 7).
  EXPECT_EQ(f8(kE4M3FN, kInf, true), 0x7E);
  EXPECT_EQ(f8(kE4M3FN, -kInf, true), 0xFE);
  EXPECT_EQ(f8(kE5M2, kInf, true), 0x7B);
  EXPECT_EQ(f8(kE5M2, -kInf, true), 0xFB);
  EXPECT_EQ(f8(kE4M3FNUZ, kInf, true), 0x80);
  EXPECT_EQ(f8(kE4M3FNUZ, -kInf, true), 0x80);
  EXPECT_EQ(f8(kE5M2FNUZ, kInf, true), 0x80);
  EXPECT_EQ(f8(kE5M2FNUZ, -kInf, true), 0x80);
  // Finite overflow, saturate=1: +-max for all four.
  EXPECT_EQ(f8(kE4M3FN, 1e30f, true), 0x7E);
  EXPECT_EQ(f8(kE4M3FNUZ, -1e30f, true), 0xFF);
  EXPECT_EQ(f8(kE5M2, 1e30f, true), 0x7B);
  EXPECT_EQ(f8(kE5M2FNUZ, -1e30f, true), 0xFF);
}

TEST(codecs, Float16AndBFloat16SpotChecks) {
  EXPECT_EQ(float16_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(float16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(float_to_float16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_float16(down(65520.0f)), 0x7BFF);
  EXPECT_EQ(float_to_float16(65520.0f), 0x7C00);  // tie, max's mantissa is odd -> Inf
  EXPECT_EQ(float_to_float16(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_float16_saturate(65520.0f), 0x7BFF);
  EXPECT_EQ(float_to_float16_saturate(-kInf), 0xFBFF);
  EXPECT_EQ(float_to_float16_saturate(kInf), 0x7BFF);
  EXPECT_EQ(float_to_float16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> 0
  EXPECT_EQ(float_to_float16(up(std::ldexp(1.0f, -25))), 0x0001);
  EXPECT_EQ(float_to_float16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_float16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie -> even
  EXPECT_EQ(float_to_float16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(float_to_float16(-kNaN), 0x7E00);
  EXPECT_EQ(float_to_float16(float_of(0xFF800001u)), 0x7E00);
  EXPECT_EQ(float_to_float16_saturate(-kNaN), 0x7E00);

  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(float_of(0x3F808000u)), 0x3F80);  // tie -> even
  EXPECT_EQ(float_to_bfloat16(float_of(0x3F818000u)), 0x3F82);  // tie -> even
  EXPECT_EQ(float_to_bfloat16(float_of(0x3F808001u)), 0x3F81);
  EXPECT_EQ(float_to_bfloat16(float_of(0x00008000u)), 0x0000);  // subnormal tie -> 0
  EXPECT_EQ(float_to_bfloat16(float_of(0x00018000u)), 0x0002);
  EXPECT_EQ(float_to_bfloat16(float_of(0x7F7FFFFFu)), 0x7F80);  // float32 max -> Inf
  EXPECT_EQ(float_to_bfloat16(-kNaN), 0x7FC0);
  EXPECT_EQ(bfloat16_to_float(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(bits_of(bfloat16_to_float(0xFFC1)), 0xFFC00000u);  // NaN keeps its sign only
}

TEST(codecs, Float8CodecRejectsOtherTypes) {
  EXPECT_THROW(float_to_float8(DType::kInt8, 1.0f, false), InternalError);
  EXPECT_THROW(float8_to_float(DType::kFloat16, 0x3C), InternalError);
}

}  // namespace
}  // namespace mmtune
