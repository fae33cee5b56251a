// The AMX form of the exact 8-bit sum (cpu_matmul's amx knob: the tile's int32 sum in an AMX tile
// register), bit for bit against the reference: QLinearMatMul of every int8/uint8 type tuple, and
// QGemm of every type pair and output (float32, uint8, int8; transposes, C), over the shape
// categories relative to the tile (ragged M, N and K, K past one 64-byte step and not a
// multiple of it, K that wraps int32, batches), b prepacked (the form reads the host's panels:
// schedules without prepacked_b are refused), tiles of 16 x 16 with and without row blocks, strips
// and parallel tasks. Runs where this CPU has AMX (the host target names avx512_sapphirerapids);
// elsewhere the suite skips and says why. What the form compiles to (tdpbusd, on any host) is
// checked by Instructions.AmxSumsUseTileMultiplies.
#include <gtest/gtest.h>

#include <iostream>

#include "autotune/halide_ops.h"
#include "autotune/tune_inputs.h"
#include "reference/qgemm.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using testing::host_info;

// AMX schedules: tiles of 16 x 16, with the blocking knobs varied, one accumulator tile at a time
// or several (amx_jam: 2 tiles of the innermost loop over tiles, 4 two by two; where a loop's tile
// count is odd, its last tile runs alone).
std::vector<schedules::Schedule> amx_schedules() {
  std::vector<schedules::Schedule> out;
  struct Form {
    int rows, n_block, m_block;
    bool parallel, specialize_tails;
    int jam;
  };
  const Form forms[] = {
      {16, 0, 0, true, false, 1},   {16, 64, 32, true, true, 1},   {16, 256, 0, false, false, 1},
      {16, 32, 16, true, false, 1}, {16, 0, 48, false, true, 1},   {16, 64, 32, true, true, 4},
      {16, 0, 48, false, true, 2},  {16, 256, 0, false, false, 4}, {16, 0, 0, true, true, 4}};
  for (const Form& f : forms) {
    schedules::CpuMatmulParams p = schedules::CpuMatmulParams::knobs().defaults();
    p.tile_rows = f.rows;
    p.tile_vectors = 1;
    p.vector_width = 0;
    p.k_group = 4;
    p.pack_b = true;
    p.n_block = f.n_block;
    p.m_block = f.m_block;
    p.parallel = f.parallel;
    p.specialize_tails = f.specialize_tails;
    p.amx = true;
    p.amx_jam = f.jam;
    out.emplace_back(p);
  }
  return out;
}

class AmxSums : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!host_info().amx)
      GTEST_SKIP() << "this CPU has no AMX (host target " << host_info().target
                   << "): the AMX kernels are compiled (Instructions.AmxKernelsUseTileMultiplies) "
                      "but not run here";
  }
};

TEST_F(AmxSums, SchedulesValidateOnlyForExact8BitSumsOnAmxTargets) {
  const schedules::Accumulator dot8{32, true, 8, true, false, false, true};
  for (const schedules::Schedule& s : amx_schedules()) {
    EXPECT_EQ(s.validate(host_info(), dot8), std::nullopt);
    schedules::Accumulator plain = dot8;
    plain.b_prepacked = false;
    EXPECT_NE(s.validate(host_info(), plain), std::nullopt) << "B packed by the kernel";
    EXPECT_NE(s.validate(host_info(), {32, false}), std::nullopt) << "a float sum";
    EXPECT_NE(s.validate(schedules::target_info("x86-64-linux-avx512_zen4-avx2-fma-f16c"), dot8),
              std::nullopt)
        << "no AMX on avx512_zen4";
  }
}

TEST_F(AmxSums, QLinearMatMulBitExactAgainstReference) {
  const uint64_t seed = testing::variant_seed() ^ 0xa3a3;
  std::mt19937_64 rng(seed);
  const DType types[] = {DType::kUInt8, DType::kInt8};
  testing::GateCounts counts;
  int64_t prepacked_cases = 0;
  const auto schedules = amx_schedules();
  int n = 0;
  for (std::size_t d = 0; d < schedules.size(); ++d) {
    const schedules::Schedule& s = schedules[d];
    const schedules::Tile tile = s.tile(host_info(), {32, true, 8, false, false, false, true});
    for (const testing::QlmCase& c : testing::qlinear_matmul_cases(tile.rows, tile.cols)) {
      // The type tuple rotates over the cases (all eight over a schedule's cases); b prepacked
      // every other case where it is 2-D.
      if (c.b.size() != 2) continue;  // the AMX form reads a prepacked (2-D) b
      const int t = n++;
      const DType a = types[t % 2], b = types[(t / 2) % 2], y = types[(t / 4) % 2];
      HalideVariant variant{s, "host"};
      variant.prepacked_b = true;
      ++prepacked_cases;
      const testing::QlmInputs in =
          testing::make_qlinear_matmul_inputs(a, b, y, DType::kFloat32, c, rng);
      const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
      KernelIdentity identity = qlinear_matmul_identity(args);
      identity.params["prepacked_b"] = "true";
      std::ostringstream context;
      context << "QLinearMatMul " << dtype_name(a) << "." << dtype_name(b) << "->" << dtype_name(y)
              << " case " << c.name << " a" << shape_str(c.a) << " b" << shape_str(c.b)
              << " b prepacked " << kernel_key(identity, variant).to_string() << " seed " << seed;
      Tensor expected;
      try {
        expected = qlinear_matmul(args);
      } catch (const InvalidArgument&) {
        continue;  // extreme scales the reference refuses (QLinearMatMulVariants checks those)
      }
      ASSERT_TRUE(testing::gated_equal(
          expected, [&](JitRun& run) { return qlinear_matmul_halide(args, variant, &run); },
          /*expect_kernel=*/expected.numel() > 0 && c.a.back() > 0, context.str(), counts));
    }
  }
  std::cout << "[amx] QLinearMatMul: " << schedules.size() << " AMX schedules, " << counts.summary()
            << " (" << prepacked_cases << " with b prepacked), 0 mismatches\n";
  EXPECT_GT(counts.kernel_cases, 0);
  EXPECT_GT(prepacked_cases, 0);
}

TEST_F(AmxSums, QGemmBitExactAgainstReference) {
  const uint64_t seed = testing::variant_seed() ^ 0xa3a4;
  std::mt19937_64 rng(seed);
  const DType types[] = {DType::kUInt8, DType::kInt8};
  testing::GateCounts counts;
  int n = 0;
  for (const schedules::Schedule& sched : amx_schedules()) {
    HalideVariant variant{sched, "host"};
    variant.prepacked_b = true;
    const schedules::Tile tile = sched.tile(host_info(), {32, true, 8, false, false, false, true});
    for (const auto& s : testing::matmul_shapes(tile.rows, tile.cols)) {
      // The (A, B) types, the output (float32, or quantized to uint8 / int8), transposes, C and
      // the per-column parameters rotate over the cases.
      const int r = n++;
      const DType a = types[r % 2], b = types[(r / 2) % 2];
      const int out = (r / 4) % 3;  // 0: float32, 1: uint8, 2: int8
      const bool trans_a = r % 2, trans_b = (r / 3) % 2;
      const std::vector<Shape> c_shapes = {{}, {s.n}, {s.m, s.n}};
      const int c_kind = r % 3;
      const tune::QGemmInputs in = tune::make_qgemm_inputs(
          a, b, out == 2 ? DType::kInt8 : DType::kUInt8,
          {s.m, s.n, s.k, trans_a, trans_b, r % 2 == 1, c_shapes[c_kind], r % 4 == 3}, rng);
      QGemmArgs args = in.args(c_kind != 0, out > 0 || r % 5 == 2, out > 0);
      args.trans_a = trans_a;
      args.trans_b = trans_b;
      args.alpha = r % 3 == 0 ? 1.0f : 0.5f;
      KernelIdentity identity = qgemm_identity(args);
      identity.params["prepacked_b"] = "true";
      std::ostringstream context;
      context << "QGemm " << dtype_name(a) << "." << dtype_name(b) << " out " << out << " "
              << s.category << " M=" << s.m << " N=" << s.n << " K=" << s.k
              << " transA=" << args.trans_a << " transB=" << args.trans_b << " B prepacked "
              << kernel_key(identity, variant).to_string() << " seed " << seed;
      const Tensor expected = qgemm(args);
      ASSERT_TRUE(testing::gated_equal(
          expected, [&](JitRun& run) { return qgemm_halide(args, variant, &run); },
          /*expect_kernel=*/s.k > 0 && s.m * s.n > 0, context.str(), counts));
    }
  }
  std::cout << "[amx] QGemm: " << amx_schedules().size() << " AMX schedules, " << counts.summary()
            << ", 0 mismatches\n";
  EXPECT_GT(counts.kernel_cases, 0);
}

}  // namespace
}  // namespace mmtune
