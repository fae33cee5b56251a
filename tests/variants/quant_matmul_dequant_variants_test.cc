// QuantMatmulDequant variants, bit for bit against the reference: the 32 mode combinations
// (dynamic per token; static per token; static per tensor float32; fused int64 weight scale with a
// float16 per-tensor x scale) x (smooth or not) x (bias or not) x (both weight layouts), each under
// the default schedule and random draws (2 by default; 20 with MMTUNE_LONG=1) from the host
// template's space (K grouping included: the sum is exact), every other draw with the weight
// prepacked (the prepacked_b kernel, prepack_b's path: panels, column sums folded into the bias),
// on every shape category of
// testing::matmul_shapes plus the operator's own: all-zero rows (0 * Inf in dynamic mode), float16
// saturation at +-65504, RNE ties of the quantization, bias wrapping, special x values (Inf, NaN,
// subnormals) and subnormal scales, K = 0, and an int32 sum that wraps (K = 150000). A failure
// prints the index, both values, the shape, the mode, the kernel key and the seed.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <iostream>

#include "autotune/halide_ops.h"
#include "autotune/tune_inputs.h"
#include "reference/quant_matmul_dequant.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using testing::host_info;

// The mode combinations, cases and inputs (autotune/tune_inputs.h, shared with the tuner's gate).
using Mode = tune::QmdMode;
using Combo = tune::QmdCombo;
using Data = tune::QmdData;
using Case = tune::QmdCase;
using Inputs = tune::QmdInputs;
constexpr int kModes = 4;
constexpr int kCombos = kModes * 2 * 2 * 2;

Combo combo(int c) {
  return {static_cast<Mode>(c % kModes), (c / kModes) % 2 == 1, (c / (2 * kModes)) % 2 == 1,
          (c / (4 * kModes)) % 2 == 0};
}

std::vector<Case> cases_for(int rows, int cols) {
  std::vector<Case> cs;
  for (const auto& s : testing::matmul_shapes(rows, cols))
    cs.push_back({s.category, s.m, s.n, s.k});
  cs.push_back({"zero_rows", 2 * rows + 1, cols + 3, 37, Data::kZeroRows});
  cs.push_back({"saturate_65504", rows + 1, 2 * cols + 1, 64, Data::kSaturate});
  cs.push_back({"rne_ties", rows + 2, cols, 40, Data::kTies});
  cs.push_back({"specials", rows, cols + 1, 29, Data::kSpecials});
  cs.push_back({"k0", 3, cols - 1 > 0 ? cols - 1 : 1, 0});
  cs.push_back({"int32_wrap", 2, 3, 150000, Data::kWrap});
  return cs;
}

// Every mode combination under the default schedule and random draws (20 in a long run, as the
// other operators' type tuples; 2 by default), on every case of cases_for the draw's tile; one test
// per combination.
class QuantMatmulDequantVariants : public ::testing::TestWithParam<int> {};

TEST_P(QuantMatmulDequantVariants, BitExactAgainstReference) {
  const auto start = std::chrono::steady_clock::now();
  const Combo c = combo(GetParam());
  const uint64_t seed = testing::variant_seed() ^ (0x51D0ull + static_cast<uint64_t>(GetParam()));
  // The sum is exact (int32), so draws may group K (k_group).
  // 32 combinations x (1 + draws) kernels: 2 draws by default (96 kernels: each compile takes a
  // second or two), MMTUNE_LONG=1 for the full 672.
  const auto draws =
      testing::schedule_draws(host_info(), {32, true}, testing::variant_draws(2), seed);
  std::mt19937_64 rng(seed);
  testing::GateCounts counts;
  for (std::size_t d = 0; d < draws.size(); ++d) {
    const auto& draw = draws[d];
    HalideVariant variant{draw.schedule, "host"};
    variant.prepacked_b = d % 2 == 1;  // every other draw prepacks the weight (prepack_b's path)
    for (const Case& s : cases_for(draw.tile.rows, draw.tile.cols)) {
      const Inputs in = tune::make_quant_matmul_dequant_inputs(c, s, rng);
      const QuantMatmulDequantArgs args = in.args();
      const Tensor expected = quant_matmul_dequant(args);
      std::ostringstream context;
      context << "QuantMatmulDequant " << c.name() << " " << s.category << " m=" << s.m
              << " n=" << s.n << " k=" << s.k << (variant.prepacked_b ? " weight prepacked" : "")
              << " schedule " << draw.name << " "
              << kernel_key(quant_matmul_dequant_identity(args), variant).to_string() << " seed "
              << seed;
      // Every case runs a kernel: K = 0 runs as K = 1 over a zero x (the host's rule).
      ASSERT_TRUE(testing::gated_equal(
          expected, [&](JitRun& run) { return quant_matmul_dequant_halide(args, variant, &run); },
          /*expect_kernel=*/s.m * s.n > 0, context.str(), counts));
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[variants] QuantMatmulDequant " << c.name() << ": " << draws.size()
            << " schedules, " << counts.summary() << ", 0 mismatches, " << seconds << " s\n";
}

INSTANTIATE_TEST_SUITE_P(AllModes, QuantMatmulDequantVariants, ::testing::Range(0, kCombos),
                         [](const ::testing::TestParamInfo<int>& info) {
                           std::string name = combo(info.param).name();
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(QuantMatmulDequantHalide, ValidatesLikeTheReference) {
  std::mt19937_64 rng(1);
  Inputs in = tune::make_quant_matmul_dequant_inputs({Mode::kDynamic, false, false, true},
                                                     {"tiny", 2, 3, 4}, rng);
  // Dynamic per tensor, a fused scale with a per-token x scale, a k mismatch, a zero scale.
  auto same_error = [](const QuantMatmulDequantArgs& args) {
    std::string want, got;
    try {
      quant_matmul_dequant(args);
    } catch (const InvalidArgument& e) {
      want = e.what();
    }
    try {
      quant_matmul_dequant_halide(args, {});
    } catch (const InvalidArgument& e) {
      got = e.what();
    }
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(want, got);
  };
  QuantMatmulDequantArgs args = in.args();
  args.x_quant_mode = XQuantMode::kPerTensor;
  same_error(args);
  Tensor ws64(DType::kInt64, {3});
  Tensor xs(DType::kFloat32, {2});
  args = in.args();
  args.weight_scale = &ws64;
  args.x_scale = &xs;
  same_error(args);
  Tensor w_bad(DType::kInt8, {3, 5});
  args = in.args();
  args.weight = &w_bad;
  same_error(args);
  Tensor ws_zero(DType::kFloat32, {3});
  args = in.args();
  args.weight_scale = &ws_zero;
  same_error(args);

  schedules::CpuMatmulParams too_big = schedules::CpuMatmulParams::knobs().defaults();
  too_big.tile_rows = 16;
  too_big.tile_vectors = 8;
  const HalideVariant bad{schedules::Schedule(too_big), "host"};
  try {
    quant_matmul_dequant_halide(in.args(), bad);
    FAIL() << "a 16x8 tile was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("vector registers"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mmtune
