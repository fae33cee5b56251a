// Gemm variants, through the gate, bit for bit against the reference: every Gemm type x the
// default schedule and 6 random draws (20 with MMTUNE_LONG=1) from the host template's space x
// every shape category. Each draw's transposes, C presence and float contract are drawn
// independently (plus the default schedule in the runtime's canonical layout under each contract);
// each case draws its C shape, alpha/beta and, for floats, plain, huge, tiny or special data. A
// failure prints the index, reference, actual, shape and the kernel's parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>

#include "autotune/halide_ops.h"
#include "reference/gemm.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using testing::host_info;

// The Gemm kernels' sum: the accumulation type's width, exact for integers.
schedules::Accumulator gemm_accumulator(DType t) {
  return {static_cast<int>(dtype_size(gemm_accumulation_type(t)) * 8), is_integer(t)};
}

class GemmVariants : public ::testing::TestWithParam<DType> {};

TEST_P(GemmVariants, BitExactAgainstReference) {
  const DType t = GetParam();
  const uint64_t seed = testing::variant_seed() ^ static_cast<uint64_t>(t);
  const auto draws =
      testing::schedule_draws(host_info(), gemm_accumulator(t), testing::variant_draws(6), seed);
  std::mt19937_64 rng(seed);
  const testing::ValueRange range = testing::gemm_value_range(t);
  const bool contract = contract_applies(t);
  const bool fma_target = host_info().fma;
  const std::vector<std::pair<float, float>> alpha_beta = {
      {1.0f, 1.0f}, {0.75f, 0.0f}, {-1.5f, 0.5f}, {1.0f, 0.0f}, {2.0f, -1.0f}};
  // Each draw's kernel identity (transposes, C present, contract) is drawn independently; two extra
  // runs of the default schedule in the runtime's canonical layout (no transposes, C present) under
  // each contract, so the layout the shipped kernels use is always covered.
  struct Run {
    const testing::ScheduleDraw* draw;
    bool trans_a, trans_b, has_c;
    FloatContract contract;
    bool prepacked;  // B prepacked on the host for the kernel's layout (prepack_b's path)
  };
  std::vector<Run> runs;
  auto draw_contract = [&] {
    return contract && fma_target && rng() % 2 ? FloatContract::kFma : FloatContract::kStrict;
  };
  for (const auto& draw : draws) {
    const bool ta = rng() % 2, tb = rng() % 2, c = rng() % 4 != 0, pre = rng() % 2;
    runs.push_back({&draw, ta, tb, c, draw_contract(), pre});
  }
  runs.push_back({&draws[0], false, false, true, FloatContract::kStrict, false});
  runs.push_back({&draws[0], false, false, true, FloatContract::kStrict, true});
  if (contract && fma_target) {
    runs.push_back({&draws[0], false, false, true, FloatContract::kFma, false});
    runs.push_back({&draws[0], false, false, true, FloatContract::kFma, true});
  }
  testing::GateCounts counts;
  std::map<std::string, int> seen;  // parameter values covered, for the summary
  for (const Run& run : runs) {
    GemmArgs args;
    args.trans_a = run.trans_a;
    args.trans_b = run.trans_b;
    args.contract = run.contract;
    HalideVariant variant{run.draw->schedule, "host"};
    variant.prepacked_b = run.prepacked;
    for (const auto& shape : testing::matmul_shapes(run.draw->tile.rows, run.draw->tile.cols)) {
      const auto [m, n, k] = std::tuple(shape.m, shape.n, shape.k);
      // Per case: the C shape (when C is present), alpha and beta, and for floats the data kind.
      const std::vector<Shape> c_shapes = {{}, {n}, {1, n}, {m, 1}, {m, n}};
      const Shape& c_shape = c_shapes[rng() % c_shapes.size()];
      const auto data = static_cast<testing::FloatData>(rng() % 4);
      auto make = [&](Shape s) {
        return is_float(t) ? testing::random_float_tensor(t, std::move(s), rng, data)
                           : testing::random_tensor(t, std::move(s), rng, range.lo, range.hi);
      };
      Tensor a = make(args.trans_a ? Shape{k, m} : Shape{m, k});
      Tensor b = make(args.trans_b ? Shape{n, k} : Shape{k, n});
      Tensor c = make(c_shape);
      args.a = &a;
      args.b = &b;
      args.c = run.has_c ? &c : nullptr;
      std::tie(args.alpha, args.beta) = alpha_beta[rng() % alpha_beta.size()];
      const Tensor expected = gemm(args);
      std::ostringstream context;
      context << "Gemm " << dtype_name(t) << " " << shape.category << " M=" << m << " N=" << n
              << " K=" << k << " transA=" << args.trans_a << " transB=" << args.trans_b
              << " C=" << (args.c ? shape_str(c.shape) : "none") << " alpha=" << args.alpha
              << " beta=" << args.beta << " contract=" << to_string(args.contract)
              << " data=" << (is_float(t) ? testing::float_data_name(data) : "integer")
              << (run.prepacked ? " B prepacked" : "") << " schedule " << run.draw->name << " "
              << kernel_key(gemm_identity(args), variant).to_string() << " seed " << seed;
      ASSERT_TRUE(testing::gated_equal(
          expected, [&](JitRun& r) { return gemm_halide(args, variant, &r); },
          /*expect_kernel=*/k > 0 && m * n > 0, context.str(), counts));
      ++seen[std::string("transA=") + (args.trans_a ? "1" : "0") +
             " transB=" + (args.trans_b ? "1" : "0") + " C=" + (args.c ? "yes" : "no") + " " +
             to_string(args.contract)];
      if (run.prepacked) ++seen["B prepacked"];
      if (is_float(t)) ++seen[std::string("data=") + testing::float_data_name(data)];
    }
  }
  std::ostringstream covered;
  for (const auto& [what, n] : seen) covered << " [" << what << ": " << n << "]";
  std::cout << "[variants] Gemm " << dtype_name(t) << ": " << draws.size() << " schedules, "
            << counts.summary() << ", 0 mismatches;" << covered.str() << "\n";
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GemmVariants,
                         ::testing::Values(DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                           DType::kBFloat16, DType::kInt32, DType::kInt64,
                                           DType::kUInt32, DType::kUInt64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(GemmHalide, ValidatesLikeTheReference) {
  Tensor a(DType::kFloat32, {2, 3}), b(DType::kFloat32, {4, 2});
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  EXPECT_THROW(gemm_halide(args, {}), InvalidArgument);
  Tensor b2(DType::kFloat32, {3, 2});
  args.b = &b2;
  schedules::CpuMatmulParams too_big = schedules::CpuMatmulParams::knobs().defaults();
  too_big.tile_rows = 16;
  too_big.tile_vectors = 8;
  const HalideVariant bad{schedules::Schedule(too_big), "host"};
  try {
    gemm_halide(args, bad);
    FAIL() << "a 16x8 tile was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("vector registers"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mmtune
