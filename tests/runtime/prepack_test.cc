// Prepacked B (mmtune::runtime::prepack_b): the runtime's restatement of the templates' layouts,
// calls with a PackedB against the reference at every shape class, the refusals of a PackedB that
// does not fit the call, and the fallbacks (no prepacked twin, a level changed since packing).
// The shipped twins themselves are covered kernel by kernel in gemm_runtime_test.cc and
// quantized_runtime_test.cc; the generators' prepacked kernels over random schedules in the
// variant suites.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>

#include "mmtune/mmtune.h"
#include "reference/gemm.h"
#include "reference/qgemm.h"
#include "reference/qlinear_matmul.h"
#include "runtime/host/packed_b.h"
#include "schedules/schedule.h"
#include "schedules/target_info.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

// The runtime links no schedules: panel_layout restates CpuMatmulParams::layout. Both must agree
// on every schedule of the template's space, or a prepacked B would be read in the wrong order.
TEST(PackedB, RuntimeLayoutsAreTheTemplates) {
  std::mt19937_64 rng(testing::variant_seed());
  int compared = 0, packing = 0;
  // Every template that shares cpu_matmul's schedule: cpu_matmul, arm_matmul, hvx_matmul.
  for (const char* target : {"x86-64-linux-avx2-fma-f16c", "x86-64-linux-sse41",
                             "x86-64-linux-avx512_zen4-avx2-fma-f16c", "arm-64-linux",
                             "arm-64-linux-arm_dot_prod", "hexagon-32-noos-hvx-hvx_128-hvx_v66"}) {
    const schedules::TargetInfo t = schedules::target_info(target);
    for (const schedules::Accumulator acc :
         {schedules::Accumulator{32, false}, schedules::Accumulator{64, false},
          schedules::Accumulator{32, true}, schedules::Accumulator{64, true},
          schedules::Accumulator{32, true, 8}}) {
      // A sum the target's template does not schedule (HVX: floats, 64-bit lanes) has no layout.
      if (schedules::default_schedule(t, acc).validate(t, acc)) continue;
      const std::string name = schedules::default_template(t);
      for (int draw = 0; draw < 300; ++draw) {
        const schedules::Schedule s =
            draw == 0 ? schedules::default_schedule(t, acc) : schedules::sample(name, t, acc, rng);
        const schedules::MatmulLayout want = s.layout(t, acc);
        const PanelLayout got =
            panel_layout(target, s.generator_params(), acc.bits, acc.exact, false);
        ASSERT_EQ(got.panel, want.panel) << target << " " << s.tag(t, acc);
        ASSERT_EQ(got.k_group, want.k_group) << target << " " << s.tag(t, acc);
        ASSERT_EQ(got.pack_b, want.pack_b) << target << " " << s.tag(t, acc);
        ASSERT_EQ(got.packs(), want.packs_b()) << target << " " << s.tag(t, acc);
        const auto* cpu = s.register_tiled();
        ASSERT_TRUE(cpu);
        ASSERT_EQ(got.strip, cpu->n_block) << target << " " << s.tag(t, acc);
        ++compared;
        packing += got.k_group > 1;
      }
    }
  }
  EXPECT_GT(packing, 0) << "no draw grouped K";
  std::cout << "[prepack] " << compared << " schedules: runtime layout == template layout ("
            << packing << " with K groups)\n";
}

// The packed form on a small B, element by element (packed_b.h's formulas), with the K padding of
// an 8-bit sum's blocks.
TEST(PackedB, PanelsFollowTheDocumentedForm) {
  const int64_t k = 5, n = 3;
  std::vector<int8_t> v(k * n);
  for (int64_t i = 0; i < k * n; ++i) v[i] = static_cast<int8_t>(i + 1);
  const Tensor b = Tensor::from<int8_t>(DType::kInt8, {k, n}, v);
  const PanelLayout grouped{2, 4, true, true, 0};
  const Tensor p = pack_b_panels(b, grouped);
  // G = ceil(5 / 4) = 2 groups, 2 panels (columns 0-1, 2-3 with 3 := 2), rows of 4 * 2 elements.
  ASSERT_EQ(p.shape, (Shape{2 * 2, 8}));
  auto at = [&](int64_t kk, int64_t jj, int64_t kg, int64_t jp) {
    return p.data<int8_t>()[(kg + 2 * jp) * 8 + kk + 4 * jj];
  };
  for (int64_t jp = 0; jp < 2; ++jp)
    for (int64_t kg = 0; kg < 2; ++kg)
      for (int64_t jj = 0; jj < 2; ++jj)
        for (int64_t kk = 0; kk < 4; ++kk) {
          const int64_t row = kg * 4 + kk, col = std::min<int64_t>(jp * 2 + jj, n - 1);
          const int8_t want = row < k ? v[row * n + col] : 0;
          EXPECT_EQ(at(kk, jj, kg, jp), want) << kk << " " << jj << " " << kg << " " << jp;
        }
  const Tensor sums = column_sums_mod32(b);
  for (int64_t j = 0; j < n; ++j) {
    uint32_t want = 0;
    for (int64_t r = 0; r < k; ++r) want += static_cast<uint32_t>(v[r * n + j]);
    EXPECT_EQ(sums.data<uint32_t>()[j], want);
  }
  // Blocks of an 8-bit sum: K = 33,100 in groups of 4 is 8275 groups, 2 blocks of 4138: 8276.
  EXPECT_EQ(packed_groups(33100, PanelLayout{32, 4, true, true, 0}), 8276);
  EXPECT_EQ(packed_groups(33100, PanelLayout{32, 4, true, false, 0}), 8275);
  // Whole strips: 1000 columns in strips of 256 are 1024, 32 panels of 32.
  EXPECT_EQ(packed_panels(1000, PanelLayout{32, 1, true, false, 256}), 32);
  EXPECT_EQ(packed_panels(1000, PanelLayout{32, 1, true, false, 0}), 32);
  EXPECT_EQ(packed_panels(40, PanelLayout{16, 1, true, false, 0}), 3);
  const PanelLayout none{16, 1, false, false, 0};
  EXPECT_EQ(pack_b_panels(b, none).bytes, b.bytes);  // a layout that packs nothing reads B itself
}

struct GemmCall {
  Tensor a, b, c;
  GemmArgs args;
};

GemmCall gemm_call(int64_t m, int64_t n, int64_t k, bool trans_b, FloatContract contract,
                   std::mt19937_64& rng) {
  GemmCall g;
  g.a = testing::random_tensor(DType::kFloat32, {m, k}, rng, -4, 4);
  g.b = testing::random_tensor(DType::kFloat32, trans_b ? Shape{n, k} : Shape{k, n}, rng, -4, 4);
  g.c = testing::random_tensor(DType::kFloat32, {n}, rng, -4, 4);
  g.args.a = &g.a;
  g.args.b = &g.b;
  g.args.c = &g.c;
  g.args.trans_b = trans_b;
  g.args.alpha = 0.5f;
  g.args.beta = 1.5f;
  g.args.contract = contract;
  return g;
}

bool has_prepacked(const std::string& op, const std::string& key, const std::string& value) {
  for (const auto& k : runtime::linked_kernel_infos()) {
    if (k.op == op && k.identity.count("prepacked_b") && k.identity.count(key) &&
        k.identity.at(key) == value)
      return true;
  }
  return false;
}

// float32 Gemm with a PackedB at the shapes of every bucket (decode, small batch, prefill, small
// N), both transB and both contracts: bit for bit the reference, and the prepacked twin ran where
// the build has one.
TEST(PackedB, GemmIsBitExactAndRunsThePrepackedKernel) {
  std::mt19937_64 rng(testing::variant_seed());
  const bool twins = has_prepacked("Gemm", "A.type", "float32");
  const bool fma = runtime::kernel_target().find("-fma") != std::string::npos;
  int prepacked_runs = 0, calls = 0;
  for (const FloatContract contract : {FloatContract::kStrict, FloatContract::kFma}) {
    for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{
             {1, 1000, 700}, {3, 77, 33}, {16, 600, 530}, {100, 129, 65}, {130, 520, 600}}) {
      for (const bool trans_b : {false, true}) {
        GemmCall g = gemm_call(m, n, k, trans_b, contract, rng);
        const runtime::PackedB pb = runtime::prepack_b(g.args);
        EXPECT_EQ(pb.op(), "Gemm");
        DispatchInfo info;
        const Tensor y = runtime::gemm(g.args, pb, &info);
        const std::string context = std::to_string(m) + "x" + std::to_string(n) + "x" +
                                    std::to_string(k) + " transB=" + std::to_string(trans_b) + " " +
                                    to_string(contract) + ": " + info.kernel + " " + info.reason +
                                    " / " + pb.description();
        ASSERT_TRUE(testing::bit_equal(gemm(g.args), y, context));
        // The same PackedB again (no state between calls).
        ASSERT_TRUE(testing::bit_equal(y, runtime::gemm(g.args, pb), context));
        ++calls;
        if (info.kernel.find("_prepacked__") != std::string::npos) {
          ++prepacked_runs;
          EXPECT_NE(info.reason.find("B prepacked"), std::string::npos) << context;
          EXPECT_GT(pb.bytes(), 0u);
        }
        if (twins && (contract == FloatContract::kStrict || fma)) {
          EXPECT_NE(info.kernel.find("_prepacked__"), std::string::npos) << context;
        }
      }
    }
  }
  std::cout << "[prepack] Gemm float32: " << calls << " calls bit-exact, " << prepacked_runs
            << " on a prepacked kernel (level " << runtime::kernel_target() << ")\n";
}

// QLinearMatMul with a PackedB: u8 x s8 -> u8 and s8 x s8 -> s8, per-tensor and per-column
// parameters, a batched a over a 2-D b, and K beyond 2^15 (the sum's blocks and padding).
TEST(PackedB, QLinearMatMulIsBitExactAndRunsThePrepackedKernel) {
  std::mt19937_64 rng(testing::variant_seed() + 1);
  int prepacked_runs = 0, calls = 0;
  struct Case {
    const char* name;
    Shape a, b, b_param;
  };
  const std::vector<Case> cases = {{"decode", {1, 700}, {700, 1000}, {}},
                                   {"batch", {16, 530}, {530, 600}, {600}},
                                   {"prefill", {100, 65}, {65, 129}, {1, 129}},
                                   {"batched a", {2, 3, 40}, {40, 50}, {50}},
                                   {"deep K", {2, 33100}, {33100, 20}, {20}}};
  for (const auto& [ta, tb, ty] :
       std::vector<std::array<DType, 3>>{{DType::kUInt8, DType::kInt8, DType::kUInt8},
                                         {DType::kInt8, DType::kInt8, DType::kInt8}}) {
    const bool twins = has_prepacked("QLinearMatMul", "b.type", dtype_name(tb));
    for (const Case& c : cases) {
      testing::QlmCase qc;
      qc.name = c.name;
      qc.a = c.a;
      qc.b = c.b;
      qc.b_param = c.b_param;
      qc.data = "random";
      const testing::QlmInputs in =
          testing::make_qlinear_matmul_inputs(ta, tb, ty, DType::kFloat32, qc, rng);
      const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
      const runtime::PackedB pb = runtime::prepack_b(args);
      DispatchInfo info;
      const Tensor y = runtime::qlinear_matmul(args, pb, &info);
      const std::string context = std::string(c.name) + " " + dtype_name(ta) + "/" +
                                  dtype_name(tb) + ": " + info.kernel + " " + info.reason;
      ASSERT_TRUE(testing::bit_equal(qlinear_matmul(args), y, context));
      ++calls;
      const bool ran_twin = info.kernel.find("_prepacked__") != std::string::npos;
      prepacked_runs += ran_twin;
      if (twins) {
        EXPECT_TRUE(ran_twin) << context;
      }
    }
  }
  std::cout << "[prepack] QLinearMatMul: " << calls << " calls bit-exact, " << prepacked_runs
            << " on a prepacked kernel (level " << runtime::kernel_target() << ")\n";
}

// QGemm with a PackedB: u8 x s8 -> float32 and s8 x s8 -> s8, transB, per-column parameters, C.
TEST(PackedB, QGemmIsBitExactAndRunsThePrepackedKernel) {
  std::mt19937_64 rng(testing::variant_seed() + 4);
  int prepacked_runs = 0, calls = 0;
  for (const auto& [ta, tb, ty, quantized] : std::vector<std::tuple<DType, DType, DType, bool>>{
           {DType::kUInt8, DType::kInt8, DType::kUInt8, false},
           {DType::kInt8, DType::kInt8, DType::kInt8, true}}) {
    const bool twins = has_prepacked("QGemm", "B.type", dtype_name(tb));
    for (const auto& [m, n, k] :
         std::vector<std::array<int64_t, 3>>{{1, 1000, 700}, {16, 600, 530}, {100, 129, 65}}) {
      for (const bool trans_b : {false, true}) {
        const tune::QGemmInputs in = tune::make_qgemm_inputs(
            ta, tb, ty, {m, n, k, false, trans_b, /*per_column=*/trans_b, {n}, false}, rng);
        QGemmArgs args;
        args.trans_b = trans_b;
        args.a = &in.a;
        args.b = &in.b;
        args.a_scale = &in.as;
        args.a_zero_point = &in.az;
        args.b_scale = &in.bs;
        args.b_zero_point = &in.bz;
        args.c = &in.c;
        args.y_scale = quantized ? &in.ys : nullptr;
        args.y_zero_point = quantized ? &in.yz : nullptr;
        const runtime::PackedB pb = runtime::prepack_b(args);
        DispatchInfo info;
        const Tensor y = runtime::qgemm(args, pb, &info);
        const std::string context = std::to_string(m) + "x" + std::to_string(n) + "x" +
                                    std::to_string(k) + " transB=" + std::to_string(trans_b) +
                                    ": " + info.kernel + " " + info.reason;
        ASSERT_TRUE(testing::bit_equal(qgemm(args), y, context));
        ++calls;
        const bool ran_twin = info.kernel.find("_prepacked__") != std::string::npos;
        prepacked_runs += ran_twin;
        if (twins) {
          EXPECT_TRUE(ran_twin) << context;
        }
      }
    }
  }
  std::cout << "[prepack] QGemm: " << calls << " calls bit-exact, " << prepacked_runs
            << " on a prepacked kernel (level " << runtime::kernel_target() << ")\n";
}

// A PackedB that does not fit the call is refused before anything is computed, naming what
// differs.
TEST(PackedB, MismatchesAreRefused) {
  std::mt19937_64 rng(testing::variant_seed() + 2);
  GemmCall g = gemm_call(4, 30, 20, false, FloatContract::kStrict, rng);
  const runtime::PackedB pb = runtime::prepack_b(g.args);
  auto refused = [](const std::function<void()>& f) {
    return testing::invalid_argument_message(f);
  };

  EXPECT_NE(refused([&] { runtime::gemm(g.args, runtime::PackedB()); }).find("packed_b is empty"),
            std::string::npos);
  // Another B tensor of the same shape and type.
  Tensor other = g.b;
  GemmArgs args = g.args;
  args.b = &other;
  EXPECT_NE(refused([&] { runtime::gemm(args, pb); }).find("is not the tensor packed_b was"),
            std::string::npos);
  // Another shape.
  Tensor wide = testing::random_tensor(DType::kFloat32, {20, 31}, rng, -1, 1);
  args.b = &wide;
  EXPECT_NE(refused([&] { runtime::gemm(args, pb); }).find("float32 [20,30] transB=0"),
            std::string::npos);
  // transB, contract, dtype.
  args = g.args;
  args.trans_b = true;
  EXPECT_NE(refused([&] { runtime::gemm(args, pb); }).find("transB=1"), std::string::npos);
  args = g.args;
  args.contract = FloatContract::kFma;
  EXPECT_NE(refused([&] { runtime::gemm(args, pb); }).find("contract=fma"), std::string::npos);
  Tensor a64 = testing::random_tensor(DType::kFloat64, {4, 20}, rng, -1, 1);
  Tensor b64 = testing::random_tensor(DType::kFloat64, {20, 30}, rng, -1, 1);
  args = g.args;
  args.a = &a64;
  args.b = &b64;
  args.c = nullptr;
  EXPECT_NE(refused([&] { runtime::gemm(args, pb); }).find("float64 [20,30]"), std::string::npos);
  // A null B.
  args = g.args;
  args.b = nullptr;
  EXPECT_NE(refused([&] { runtime::gemm(args, pb); }).find("B is null"), std::string::npos);

  // QLinearMatMul: a Gemm PackedB, another requant mode, a b that is not 2-D at prepack time.
  testing::QlmCase qc;
  qc.name = "m";
  qc.a = {3, 8};
  qc.b = {8, 5};
  qc.data = "random";
  const testing::QlmInputs in = testing::make_qlinear_matmul_inputs(
      DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, qc, rng);
  QLinearMatMulArgs q = in.args(RequantMode::kFloat32);
  EXPECT_NE(refused([&] { runtime::qlinear_matmul(q, pb); }).find("prepacked for Gemm"),
            std::string::npos);
  const runtime::PackedB qpb = runtime::prepack_b(q);
  q.requant = RequantMode::kFloat64;
  EXPECT_NE(refused([&] { runtime::qlinear_matmul(q, qpb); }).find("requant=float32"),
            std::string::npos);
  qc.b = {2, 8, 5};
  const testing::QlmInputs batched = testing::make_qlinear_matmul_inputs(
      DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, qc, rng);
  EXPECT_NE(
      refused([&] { runtime::prepack_b(batched.args(RequantMode::kFloat32)); }).find("rank 2"),
      std::string::npos);
  // prepack_b checks what it reads: B's type.
  Tensor b8 = testing::random_tensor(DType::kInt8, {4, 4}, rng, -1, 1);
  GemmArgs bad;
  bad.b = &b8;
  EXPECT_NE(refused([&] { runtime::prepack_b(bad); }).find("int8"), std::string::npos);
}

// Identities without a prepacked twin, and a level capped after packing: the call packs as the
// plain call does, exactly, and says so.
TEST(PackedB, WithoutATwinTheCallIsThePlainOne) {
  std::mt19937_64 rng(testing::variant_seed() + 3);
  Tensor a = testing::random_tensor(DType::kFloat64, {9, 40}, rng, -3, 3);
  Tensor b = testing::random_tensor(DType::kFloat64, {40, 33}, rng, -3, 3);
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  const runtime::PackedB pb = runtime::prepack_b(args);
  DispatchInfo plain, packed;
  const Tensor want = runtime::gemm(args, &plain);
  const Tensor got = runtime::gemm(args, pb, &packed);
  EXPECT_TRUE(testing::bit_equal(gemm(args), got));
  EXPECT_EQ(packed.kernel, plain.kernel);
  EXPECT_NE(packed.reason.find("B not prepacked"), std::string::npos) << packed.reason;
  EXPECT_NE(pb.description().find("nothing packed"), std::string::npos) << pb.description();
  EXPECT_EQ(pb.bytes(), 0u);

  // Packed at the current level, then calls capped to the reference only.
  GemmCall g = gemm_call(5, 40, 30, false, FloatContract::kStrict, rng);
  const runtime::PackedB f32 = runtime::prepack_b(g.args);
  const std::string previous = runtime::set_max_kernel_target("none");
  DispatchInfo capped;
  const Tensor y = runtime::gemm(g.args, f32, &capped);
  runtime::set_max_kernel_target(previous);
  EXPECT_TRUE(testing::bit_equal(gemm(g.args), y));
  EXPECT_EQ(capped.kernel, "reference");
  EXPECT_NE(capped.reason.find("B not prepacked"), std::string::npos) << capped.reason;
}

}  // namespace
}  // namespace mmtune
