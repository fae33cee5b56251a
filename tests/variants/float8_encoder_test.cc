// The generators' float8 encoder (generators/float8_codec: the Halide expression the float8
// QLinearMatMul kernels round their outputs with) against the reference encoder, per format: a NaN
// input gives the format's canonical NaN, any other x float_to_float8(format, x, saturate=true)
// (reference/codecs.h, itself checked against ml_dtypes). By default on the edge cases (every value
// of the format, both signs, the ties between neighbours and the overflow threshold, each with its
// float32 neighbours; zeros, infinities, NaNs) and the codecs suite's sweep (every 97th float32
// pattern); with MMTUNE_LONG=1 on all 2^32 float32 patterns (about a minute and a half per format).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <vector>

#include "Halide.h"
#include "generators/float8_codec.h"
#include "reference/codecs.h"

namespace mmtune {
namespace {

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

bool long_run() {
  const char* v = std::getenv("MMTUNE_LONG");
  return v && std::string(v) == "1";
}

// The edge cases of `format` as float32 patterns (see the file comment).
std::vector<uint32_t> edge_inputs(DType format) {
  std::vector<float> values;
  for (int p = 0; p < 256; ++p) {
    const float v = float8_to_float(format, static_cast<uint8_t>(p));
    if (std::isfinite(v) && v >= 0) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  // One grid step above the largest value: the tie there is the overflow threshold.
  const float top = values.back(), below = values[values.size() - 2];
  values.push_back(top + (top - below));
  std::vector<float> points;
  const float inf = std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < values.size(); ++i) {
    points.push_back(values[i]);
    if (i + 1 < values.size())
      points.push_back((values[i] + values[i + 1]) / 2);  // exact in float32
  }
  std::vector<uint32_t> out;
  for (float v : points) {
    for (float w : {v, std::nextafter(v, inf), std::nextafter(v, -inf)}) {
      out.push_back(bits_of(w));
      out.push_back(bits_of(-w));
    }
  }
  for (uint32_t b : {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                     0x7F800001u, 0x00000001u, 0x80000001u, 0x7F7FFFFFu, 0xFF7FFFFFu}) {
    out.push_back(b);
  }
  return out;
}

class Float8Encoder : public ::testing::TestWithParam<DType> {};

TEST_P(Float8Encoder, MatchesTheReferenceEncoder) {
  const DType format = GetParam();
  Halide::ImageParam in(Halide::UInt(32), 1, "in");
  Halide::Var x("x"), xo("xo"), xi("xi");
  Halide::Func encode("encode");
  encode(x) = gen::encode_float8_saturate(format, Halide::reinterpret(Halide::Float(32), in(x)));
  encode.split(x, xo, xi, 1 << 16, Halide::TailStrategy::GuardWithIf)
      .parallel(xo)
      .vectorize(xi, 16);
  Halide::Callable kernel =
      Halide::Pipeline(encode).compile_to_callable({in}, Halide::get_jit_target_from_environment());

  const uint8_t nan = float8_canonical_nan(format);
  int64_t compared = 0, mismatches = 0;
  std::string first;
  auto check = [&](const std::vector<uint32_t>& inputs) {
    Halide::Runtime::Buffer<uint32_t> bits(const_cast<uint32_t*>(inputs.data()),
                                           static_cast<int>(inputs.size()));
    Halide::Runtime::Buffer<uint8_t> got(static_cast<int>(inputs.size()));
    ASSERT_EQ(kernel(bits, got), 0);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      float v;
      std::memcpy(&v, &inputs[i], sizeof v);
      const uint8_t want = std::isnan(v) ? nan : float_to_float8(format, v, /*saturate=*/true);
      if (got(static_cast<int>(i)) != want && mismatches++ == 0) {
        first = "input bits " + std::to_string(inputs[i]) + ": want " + std::to_string(want) +
                ", got " + std::to_string(got(static_cast<int>(i)));
      }
    }
    compared += static_cast<int64_t>(inputs.size());
  };
  const std::vector<uint32_t> edges = edge_inputs(format);
  check(edges);
  // The sweep: every float32 pattern (MMTUNE_LONG=1), or every 97th, in chunks.
  const uint64_t stride = long_run() ? 1 : 97;
  constexpr uint64_t kChunk = uint64_t{1} << 22;
  std::vector<uint32_t> chunk;
  for (uint64_t p = 0; p < (uint64_t{1} << 32); p += stride) {
    chunk.push_back(static_cast<uint32_t>(p));
    if (chunk.size() == kChunk) {
      check(chunk);
      chunk.clear();
    }
  }
  if (!chunk.empty()) check(chunk);
  EXPECT_EQ(mismatches, 0) << dtype_name(format) << ", first: " << first;
  std::cout << "[variants] float8 encoder " << dtype_name(format) << ": " << compared
            << " float32 inputs (" << edges.size() << " edge cases, then every " << stride
            << (stride == 1 ? "st" : "th") << " pattern) compared with the reference encoder, "
            << mismatches << " mismatches\n";
}

INSTANTIATE_TEST_SUITE_P(Formats, Float8Encoder,
                         ::testing::Values(DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ,
                                           DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace mmtune
