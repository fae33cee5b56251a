// Gemm variants, bit for bit against the reference: every Gemm type x the shipped default schedule
// and 20 random draws from the CPU template's space x every shape category, with transposes, the C
// broadcasts, alpha/beta (exact and float64 integer epilogues) and both float contracts rotating
// over the draws. A failure prints the index, reference, actual, shape and the kernel's parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>

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
  const auto draws = testing::schedule_draws(host_info(), gemm_accumulator(t), 20, seed);
  std::mt19937_64 rng(seed);
  const testing::ValueRange range = testing::gemm_value_range(t);
  const bool float_sum = t == DType::kFloat32 || t == DType::kFloat64;
  const std::vector<std::pair<float, float>> alpha_beta = {
      {1.0f, 1.0f}, {0.75f, 0.0f}, {-1.5f, 0.5f}, {1.0f, 0.0f}};
  int64_t cases = 0, outputs = 0;
  for (std::size_t d = 0; d < draws.size() + (float_sum ? 1 : 0); ++d) {
    // One extra run of the default schedule under the other contract for float32/float64.
    const auto& draw = draws[d < draws.size() ? d : 0];
    GemmArgs args;
    args.trans_a = d % 2;
    args.trans_b = (d / 2) % 2;
    args.contract = float_sum && (d % 2 == 1 || d == draws.size()) ? FloatContract::kFma
                                                                   : FloatContract::kStrict;
    const int c_kind = static_cast<int>(d % 6);  // absent, (), (N), (1, N), (M, 1), (M, N)
    HalideVariant variant{draw.schedule, "host"};
    const int tile_cols = draw.tile.cols;
    std::size_t s_index = 0;
    for (const auto& shape : testing::matmul_shapes(draw.tile.rows, tile_cols)) {
      const auto [m, n, k] = std::tuple(shape.m, shape.n, shape.k);
      Tensor a = testing::random_tensor(t, args.trans_a ? Shape{k, m} : Shape{m, k}, rng, range.lo,
                                        range.hi);
      Tensor b = testing::random_tensor(t, args.trans_b ? Shape{n, k} : Shape{k, n}, rng, range.lo,
                                        range.hi);
      const std::vector<Shape> c_shapes = {{}, {}, {n}, {1, n}, {m, 1}, {m, n}};
      Tensor c = testing::random_tensor(t, c_shapes[c_kind], rng, range.lo, range.hi);
      // Float types: now and then an Inf or NaN input, so that NaN results (canonical) and Inf
      // propagation are compared too.
      if (is_float(t) && s_index % 5 == 4 && a.numel() > 0) {
        const float special =
            s_index % 10 == 4 ? std::numeric_limits<float>::infinity() : std::nanf("");
        Tensor one = testing::random_tensor(t, {}, rng, 0, 0);
        if (t == DType::kFloat32) one.data<float>()[0] = special;
        if (t == DType::kFloat64) one.data<double>()[0] = special;
        if (t == DType::kFloat16) one.data<uint16_t>()[0] = std::isnan(special) ? 0xFE01 : 0x7C00;
        if (t == DType::kBFloat16) one.data<uint16_t>()[0] = std::isnan(special) ? 0xFFC1 : 0x7F80;
        const std::size_t sz = dtype_size(t);
        std::memcpy(a.bytes.data() + (rng() % a.numel()) * sz, one.bytes.data(), sz);
      }
      args.a = &a;
      args.b = &b;
      args.c = c_kind == 0 ? nullptr : &c;
      std::tie(args.alpha, args.beta) = alpha_beta[s_index++ % alpha_beta.size()];
      const Tensor expected = gemm(args);
      Tensor actual;
      try {
        actual = gemm_halide(args, variant);
      } catch (const std::exception& e) {
        FAIL() << e.what() << " (" << shape.category << " " << m << "x" << n << "x" << k << ", "
               << draw.name << ")";
      } catch (...) {
        FAIL() << "non-standard exception from "
               << kernel_key(gemm_identity(args), variant).to_string();
      }
      std::ostringstream context;
      context << "Gemm " << dtype_name(t) << " " << shape.category << " M=" << m << " N=" << n
              << " K=" << k << " transA=" << args.trans_a << " transB=" << args.trans_b
              << " C=" << (args.c ? shape_str(c.shape) : "none") << " alpha=" << args.alpha
              << " beta=" << args.beta << " contract=" << to_string(args.contract) << " schedule "
              << draw.name << " " << kernel_key(gemm_identity(args), variant).to_string()
              << " seed " << seed;
      ASSERT_TRUE(testing::bit_equal(expected, actual, context.str()));
      ++cases;
      outputs += expected.numel();
    }
  }
  std::cout << "[variants] Gemm " << dtype_name(t) << ": " << draws.size() << " schedules, "
            << cases << " cases, " << outputs << " outputs compared bit for bit, 0 mismatches\n";
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
