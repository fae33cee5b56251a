// QGemm variants, bit for bit against the reference: every (A, B) type pair x float and both
// quantized output types x the default schedule and 6 random draws (20 with MMTUNE_LONG=1) x shape
// categories, with transposes, C (absent, broadcast, full, near the int32 limits so the sum wraps),
// per-tensor / per-column B parameters, alpha and y_scale rotating over the draws.
#include <gtest/gtest.h>

#include <iostream>

#include "autotune/halide_ops.h"
#include "autotune/tune_inputs.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using testing::host_info;

struct Combo {
  DType a, b;
  bool quantized;
  DType y = DType::kFloat32;  // the quantized output's type
};

std::string combo_name(const Combo& c) {
  auto s = [](DType d) { return d == DType::kInt8 ? "s8" : "u8"; };
  return std::string(s(c.a)) + "_" + s(c.b) + "_" + (c.quantized ? s(c.y) : "f32");
}

void PrintTo(const Combo& c, std::ostream* os) { *os << combo_name(c); }

class QGemmVariants : public ::testing::TestWithParam<Combo> {};

TEST_P(QGemmVariants, BitExactAgainstReference) {
  const Combo combo = GetParam();
  const uint64_t seed =
      testing::variant_seed() ^
      (static_cast<uint64_t>(combo.a) << 12 | static_cast<uint64_t>(combo.b) << 8 |
       static_cast<uint64_t>(combo.y) << 4 | combo.quantized);
  const auto draws =
      testing::schedule_draws(host_info(), {32, true}, testing::variant_draws(6), seed);
  std::mt19937_64 rng(seed);
  testing::GateCounts counts;
  for (std::size_t d = 0; d < draws.size(); ++d) {
    const auto& draw = draws[d];
    HalideVariant variant{draw.schedule, "host"};
    variant.prepacked_b = d % 2 == 1;  // every other draw prepacks B (prepack_b's path)
    const int cols = draw.tile.cols;
    std::size_t n_case = 0;
    for (const auto& s : testing::matmul_shapes(draw.tile.rows, cols)) {
      const std::size_t r = d + n_case++;
      const bool trans_a = r % 2, trans_b = (r / 2) % 2;
      const bool per_column = r % 2 == 1;
      const std::vector<Shape> c_shapes = {{}, {}, {s.n}, {1, s.n}, {s.m, 1}, {s.m, s.n}};
      const int c_kind = static_cast<int>(r % c_shapes.size());
      // Near the int32 limits every few cases, so that C + sum wraps.
      const bool big_c = r % 4 == 3;
      const DType ty = combo.quantized ? combo.y : DType::kUInt8;
      const tune::QGemmInputs in = tune::make_qgemm_inputs(
          combo.a, combo.b, ty,
          {s.m, s.n, s.k, trans_a, trans_b, per_column, c_shapes[c_kind], big_c}, rng);
      // Float output with or without y_scale; quantized output needs both.
      QGemmArgs args = in.args(c_kind != 0, combo.quantized || r % 3 == 2, combo.quantized);
      args.trans_a = trans_a;
      args.trans_b = trans_b;
      args.alpha = r % 3 == 0 ? 1.0f : (r % 3 == 1 ? 1.75f : 0.5f);
      std::ostringstream context;
      context << "QGemm " << combo_name(combo) << " " << s.category << " M=" << s.m << " N=" << s.n
              << " K=" << s.k << " transA=" << args.trans_a << " transB=" << args.trans_b
              << " alpha=" << args.alpha << " C=" << (args.c ? shape_str(in.c.shape) : "none")
              << (big_c ? " (near INT32_MAX)" : "") << " per_column=" << per_column
              << " y_scale=" << (args.y_scale != nullptr)
              << (variant.prepacked_b ? " B prepacked" : "") << " schedule " << draw.name << " "
              << kernel_key(qgemm_identity(args), variant).to_string() << " seed " << seed;
      const Tensor expected = qgemm(args);
      ASSERT_TRUE(testing::gated_equal(
          expected, [&](JitRun& run) { return qgemm_halide(args, variant, &run); },
          /*expect_kernel=*/s.k > 0 && s.m * s.n > 0, context.str(), counts));
    }
  }
  std::cout << "[variants] QGemm " << combo_name(combo) << ": " << draws.size() << " schedules, "
            << counts.summary() << ", 0 mismatches\n";
}

// Every combination the schema allows: 4 type pairs x (float32, uint8, int8 output).
std::vector<Combo> all_combos() {
  std::vector<Combo> out;
  for (DType a : {DType::kUInt8, DType::kInt8}) {
    for (DType b : {DType::kUInt8, DType::kInt8}) {
      out.push_back({a, b, false});
      for (DType y : {DType::kUInt8, DType::kInt8}) out.push_back({a, b, true, y});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllCombos, QGemmVariants, ::testing::ValuesIn(all_combos()),
                         [](const auto& info) { return combo_name(info.param); });

}  // namespace
}  // namespace mmtune
