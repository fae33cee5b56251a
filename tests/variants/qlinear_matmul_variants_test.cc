// QLinearMatMul variants, bit for bit against the reference. int8/uint8: all 8 (a, b, y) type
// tuples x the default schedule and 6 random draws (20 with MMTUNE_LONG=1) x shape categories
// (2-D, 1-D operands, N-D batch broadcasting), with scale types (float32, float16, bfloat16), both
// requantization modes and per-tensor / per-row / per-column parameters rotating over the draws;
// plus adversarial inputs: full-range values and zero points (16-bit pair sums would saturate),
// requantization values on exact .5 ties, K large enough to wrap int32, extreme per-column scales.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "autotune/halide_ops.h"
#include "autotune/tune_inputs.h"
#include "reference/codecs.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using testing::host_info;

struct Types {
  DType a, b, y;
};

std::string types_name(const Types& t) {
  auto s = [](DType d) { return d == DType::kInt8 ? "s8" : "u8"; };
  return std::string(s(t.a)) + "_" + s(t.b) + "_" + s(t.y);
}

void PrintTo(const Types& t, std::ostream* os) { *os << types_name(t); }

class QLinearMatMulVariants : public ::testing::TestWithParam<Types> {};

TEST_P(QLinearMatMulVariants, BitExactAgainstReference) {
  const Types ty = GetParam();
  const uint64_t seed =
      testing::variant_seed() ^ (static_cast<uint64_t>(ty.a) << 8 |
                                 static_cast<uint64_t>(ty.b) << 4 | static_cast<uint64_t>(ty.y));
  const auto draws =
      testing::schedule_draws(host_info(), {32, true}, testing::variant_draws(6), seed);
  std::mt19937_64 rng(seed);
  const DType scale_types[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  testing::GateCounts counts;
  int64_t prepacked_cases = 0;
  for (std::size_t d = 0; d < draws.size(); ++d) {
    const auto& draw = draws[d];
    const DType st = scale_types[d % 3];
    const RequantMode mode = (d / 3) % 2 ? RequantMode::kFloat64 : RequantMode::kFloat32;
    for (const testing::QlmCase& c :
         testing::qlinear_matmul_cases(draw.tile.rows, draw.tile.cols)) {
      // Every other draw prepacks a 2-D b (prepack_b's path: panels and column sums).
      HalideVariant variant{draw.schedule, "host"};
      variant.prepacked_b = d % 2 == 1 && c.b.size() == 2;
      prepacked_cases += variant.prepacked_b;
      const testing::QlmInputs in =
          testing::make_qlinear_matmul_inputs(ty.a, ty.b, ty.y, st, c, rng);
      const QLinearMatMulArgs args = in.args(mode);
      std::ostringstream context;
      context << "QLinearMatMul " << types_name(ty) << " case " << c.name << " a" << shape_str(c.a)
              << " b" << shape_str(c.b) << " params a" << shape_str(c.a_param) << " b"
              << shape_str(c.b_param) << " scale " << dtype_name(st) << " requant "
              << to_string(mode) << (variant.prepacked_b ? " b prepacked" : "") << " schedule "
              << draw.name << " " << kernel_key(qlinear_matmul_identity(args), variant).to_string()
              << " seed " << seed;
      Tensor expected;
      try {
        expected = qlinear_matmul(args);
      } catch (const InvalidArgument& e) {
        // Extreme scales may overflow the multiplier in float16: the reference refuses, so must we.
        ASSERT_EQ(c.data, "extreme_scales") << e.what() << "; " << context.str();
        EXPECT_THROW(qlinear_matmul_halide(args, variant), InvalidArgument) << context.str();
        continue;
      }
      ASSERT_TRUE(testing::gated_equal(
          expected, [&](JitRun& run) { return qlinear_matmul_halide(args, variant, &run); },
          /*expect_kernel=*/expected.numel() > 0 && c.a.back() > 0, context.str(), counts));
    }
  }
  std::cout << "[variants] QLinearMatMul " << types_name(ty) << ": " << draws.size()
            << " schedules, " << counts.summary() << " (" << prepacked_cases
            << " with b prepacked), 0 mismatches\n";
  EXPECT_GT(prepacked_cases, 0) << "no case ran a prepacked b";
}

INSTANTIATE_TEST_SUITE_P(AllTypeTuples, QLinearMatMulVariants,
                         ::testing::Values(Types{DType::kUInt8, DType::kUInt8, DType::kUInt8},
                                           Types{DType::kUInt8, DType::kInt8, DType::kUInt8},
                                           Types{DType::kInt8, DType::kInt8, DType::kInt8},
                                           Types{DType::kInt8, DType::kUInt8, DType::kInt8},
                                           Types{DType::kUInt8, DType::kUInt8, DType::kInt8},
                                           Types{DType::kUInt8, DType::kInt8, DType::kInt8},
                                           Types{DType::kInt8, DType::kInt8, DType::kUInt8},
                                           Types{DType::kInt8, DType::kUInt8, DType::kUInt8}),
                         [](const auto& info) { return types_name(info.param); });

struct Float8Types {
  DType a, b, y;
};

void PrintTo(const Float8Types& t, std::ostream* os) {
  *os << dtype_name(t.a) << "_" << dtype_name(t.b) << "_" << dtype_name(t.y);
}

class QLinearMatMulFloat8Variants : public ::testing::TestWithParam<Float8Types> {};

// float8 (mmtune's definition, docs/semantics.md): random finite patterns plus NaN / Inf / -0
// patterns sprinkled in, scales spanning underflow to saturation, the default schedule and 6 random
// draws (20 with MMTUNE_LONG=1).
TEST_P(QLinearMatMulFloat8Variants, BitExactAgainstReference) {
  const Float8Types ty = GetParam();
  const uint64_t seed =
      testing::variant_seed() ^ (static_cast<uint64_t>(ty.a) << 16 |
                                 static_cast<uint64_t>(ty.b) << 8 | static_cast<uint64_t>(ty.y));
  const auto draws =
      testing::schedule_draws(host_info(), {64, false}, testing::variant_draws(6), seed);
  std::mt19937_64 rng(seed);
  const DType scale_types[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  testing::GateCounts counts;
  int64_t specials = 0;
  for (std::size_t d = 0; d < draws.size(); ++d) {
    const auto& draw = draws[d];
    const DType st = scale_types[d % 3];
    HalideVariant variant{draw.schedule, "host"};
    variant.prepacked_b = d % 2 == 1;  // every other draw prepacks b
    for (const auto& s : testing::matmul_shapes(draw.tile.rows, draw.tile.cols, false)) {
      const tune::QlmInputs in = tune::make_float8_qlinear_matmul_inputs(
          ty.a, ty.b, ty.y, st, s.m, s.n, s.k, /*special_one_in=*/4, rng, &specials);
      const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
      std::ostringstream context;
      context << "QLinearMatMul float8 " << dtype_name(ty.a) << "/" << dtype_name(ty.b) << "->"
              << dtype_name(ty.y) << " " << s.category << " M=" << s.m << " N=" << s.n
              << " K=" << s.k << " scale " << dtype_name(st)
              << (variant.prepacked_b ? " b prepacked" : "") << " schedule " << draw.name << " "
              << kernel_key(qlinear_matmul_identity(args), variant).to_string() << " seed " << seed;
      Tensor expected;
      try {
        expected = qlinear_matmul(args);
      } catch (const InvalidArgument& e) {
        ASSERT_NE(st, DType::kFloat32)
            << e.what() << "; " << context.str();  // only a float16 multiplier can overflow
        continue;
      }
      ASSERT_TRUE(testing::gated_equal(
          expected, [&](JitRun& run) { return qlinear_matmul_halide(args, variant, &run); },
          /*expect_kernel=*/s.k > 0 && s.m * s.n > 0, context.str(), counts));
    }
  }
  std::cout << "[variants] QLinearMatMul float8 " << dtype_name(ty.a) << "/" << dtype_name(ty.b)
            << "->" << dtype_name(ty.y) << ": " << draws.size() << " schedules, "
            << counts.summary() << " (" << specials
            << " cases with NaN/Inf/-0 inputs), 0 mismatches\n";
}

INSTANTIATE_TEST_SUITE_P(
    Formats, QLinearMatMulFloat8Variants,
    ::testing::Values(
        Float8Types{DType::kFloat8E4M3FN, DType::kFloat8E4M3FN, DType::kFloat8E4M3FN},
        Float8Types{DType::kFloat8E5M2, DType::kFloat8E5M2, DType::kFloat8E5M2},
        Float8Types{DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2FNUZ, DType::kFloat8E4M3FNUZ},
        Float8Types{DType::kFloat8E5M2, DType::kFloat8E4M3FN, DType::kFloat8E5M2FNUZ}),
    [](const auto& info) {
      return std::string(dtype_name(info.param.a)) + "_" + dtype_name(info.param.b) + "_" +
             dtype_name(info.param.y);
    });

}  // namespace
}  // namespace mmtune
