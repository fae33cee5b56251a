// Prepacked B (mmtune::runtime::prepack_b): the runtime's restatement of the templates' layouts,
// calls with a PackedB against the reference at every shape class, the refusals of a PackedB that
// does not fit the call, and the fallbacks (no prepacked twin, a level changed since packing).
// The shipped twins themselves are covered kernel by kernel in gemm_runtime_test.cc and
// quantized_runtime_test.cc; the generators' prepacked kernels over random schedules in the
// variant suites.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "mmtune/mmtune.h"
#include "reference/gemm.h"
#include "reference/qgemm.h"
#include "reference/qlinear_matmul.h"
#include "reference/quant_matmul_dequant.h"
#include "runtime/host/packed_b.h"
#include "runtime/src/dispatch.h"
#include "schedules/schedule.h"
#include "schedules/target_info.h"
#include "tests/runtime/runtime_support.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

// The runtime links no schedules: panel_layout restates CpuMatmulParams::layout. Both must agree
// on every schedule of the template's space, or a prepacked B would be read in the wrong order.
TEST(PackedB, RuntimeLayoutsAreTheTemplates) {
  std::mt19937_64 rng(testing::variant_seed());
  int compared = 0, packing = 0, aligned = 0;
  // Every template that shares cpu_matmul's schedule: cpu_matmul, arm_matmul, hvx_matmul.
  for (const char* target : {"x86-64-linux-avx2-fma-f16c", "x86-64-linux-sse41",
                             "x86-64-linux-avx512_zen4-avx2-fma-f16c",
                             "x86-64-linux-avx512_sapphirerapids-avx2-fma-f16c", "arm-64-linux",
                             "arm-64-linux-arm_dot_prod", "hexagon-32-noos-hvx-hvx_128-hvx_v66"}) {
    const schedules::TargetInfo t = schedules::target_info(target);
    for (const schedules::Accumulator acc :
         {schedules::Accumulator{32, false}, schedules::Accumulator{64, false},
          schedules::Accumulator{32, true}, schedules::Accumulator{64, true},
          schedules::Accumulator{32, true, 8}}) {
      // A sum the target's template does not schedule (HVX: floats, 64-bit lanes) has no layout.
      if (schedules::default_schedule(t, acc).validate(t, acc)) continue;
      const std::string name = schedules::default_template(t);
      // The draws, and the AMX forms (never drawn: the search seeds them) over a prepacked B.
      schedules::Accumulator prepacked = acc;
      prepacked.b_prepacked = true;
      const auto amx = schedules::CpuMatmulParams::amx_forms(t, prepacked);
      for (int draw = 0; draw < 300 + static_cast<int>(amx.size()); ++draw) {
        const schedules::Schedule s = draw >= 300 ? schedules::Schedule(amx[draw - 300])
                                      : draw == 0 ? schedules::default_schedule(t, acc)
                                                  : schedules::sample(name, t, acc, rng);
        const schedules::MatmulLayout want = s.layout(t, acc);
        const PanelLayout got =
            panel_layout(target, s.generator_params(), acc.bits, acc.exact, false);
        ASSERT_EQ(got.panel, want.panel) << target << " " << s.tag(t, acc);
        ASSERT_EQ(got.k_group, want.k_group) << target << " " << s.tag(t, acc);
        ASSERT_EQ(got.pack_b, want.pack_b) << target << " " << s.tag(t, acc);
        ASSERT_EQ(got.group_align, want.group_align) << target << " " << s.tag(t, acc);
        ASSERT_EQ(got.packs(), want.packs_b()) << target << " " << s.tag(t, acc);
        const auto* cpu = s.register_tiled();
        ASSERT_TRUE(cpu);
        ASSERT_EQ(got.strip, cpu->n_block) << target << " " << s.tag(t, acc);
        ++compared;
        packing += got.k_group > 1;
        aligned += got.group_align > 1;
      }
    }
  }
  EXPECT_GT(packing, 0) << "no draw grouped K";
  EXPECT_GT(aligned, 0) << "no draw took the AMX form (K groups aligned to tile steps)";
  std::cout << "[prepack] " << compared << " schedules: runtime layout == template layout ("
            << packing << " with K groups, " << aligned << " AMX)\n";
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
  // The AMX form: each block's groups rounded up to whole 16-group tile steps (4138 -> 4144).
  EXPECT_EQ(packed_groups(33100, PanelLayout{16, 4, true, true, 0, 16}), 8288);
  EXPECT_EQ(packed_groups(5, PanelLayout{16, 4, true, true, 0, 16}), 16);
  // Whole strips: 1000 columns in strips of 256 are 1024, 32 panels of 32.
  EXPECT_EQ(packed_panels(1000, PanelLayout{32, 1, true, false, 256}), 32);
  EXPECT_EQ(packed_panels(1000, PanelLayout{32, 1, true, false, 0}), 32);
  EXPECT_EQ(packed_panels(40, PanelLayout{16, 1, true, false, 0}), 3);
  const PanelLayout none{16, 1, false, false, 0};
  EXPECT_EQ(pack_b_panels(b, none).bytes, b.bytes);  // a layout that packs nothing reads B itself
}

// The packing over random layouts (panels, strips, K groups, 8-bit blocks, AMX alignment) and
// every element size, element by element against the documented form: panel jp's group kg is row
// kg + G jp, B[kg g + kk][min(jp panel + jj, N - 1)] its element kk + g jj, rows past K zero.
// The column sums against a plain sum down each column.
TEST(PackedB, PanelsFollowTheDocumentedFormOverRandomLayouts) {
  std::mt19937_64 rng(testing::variant_seed() + 3);
  int64_t compared = 0;
  const DType types[] = {DType::kInt8,  DType::kUInt8,   DType::kFloat16,
                         DType::kInt32, DType::kFloat32, DType::kFloat64};
  for (int trial = 0; trial < 120; ++trial) {
    const DType t = types[trial % 6];
    const bool eight = dtype_size(t) == 1;
    PanelLayout l;
    l.panel = 1 << (rng() % 7);  // 1 .. 64
    l.pack_b = true;
    l.k_group = eight ? 1 << (rng() % 3) : (rng() % 3 == 0 ? 2 : 1);
    l.dot8 = eight && l.k_group > 1 && rng() % 2;
    l.group_align = l.dot8 && rng() % 2 ? 16 : 1;
    l.strip = rng() % 3 == 0 ? 0 : l.panel * (1 + static_cast<int>(rng() % 4));
    const int64_t k = trial == 7 ? 33100 : 1 + static_cast<int64_t>(rng() % 70);
    const int64_t n = 1 + static_cast<int64_t>(rng() % (k > 1000 ? 9 : 200));
    const Tensor b = testing::random_tensor(t, {k, n}, rng, -100, 100);
    const Tensor p = pack_b_panels(b, l);
    // The same packing into reused storage full of other bytes (a per-call packing's scratch):
    // the K padding is written, not assumed zero.
    Bytes used(p.bytes.size() + 64, 0xAB);
    used.clear();
    ASSERT_EQ(pack_b_panels(b, l, std::move(used)).bytes, p.bytes) << l.to_string();
    const int64_t g = l.k_group, groups = g > 1 ? packed_groups(k, l) : k;
    const int64_t panels = packed_panels(n, l);
    ASSERT_EQ(p.shape, (Shape{groups * panels, g * l.panel})) << l.to_string();
    const std::size_t es = dtype_size(t);
    for (int64_t r = 0; r < groups * panels; ++r) {
      const int64_t jp = r / groups, kg = r % groups;
      for (int64_t e = 0; e < g * l.panel; ++e) {
        const int64_t kk = e % g, jj = e / g;
        const int64_t row = kg * g + kk, col = std::min(jp * l.panel + jj, n - 1);
        const uint8_t* got = p.bytes.data() + (r * g * l.panel + e) * es;
        uint8_t want[8] = {};
        if (row < k) std::memcpy(want, b.bytes.data() + (row * n + col) * es, es);
        ASSERT_EQ(std::memcmp(got, want, es), 0)
            << dtype_name(t) << " " << k << "x" << n << " " << l.to_string() << ", strip "
            << l.strip << ": row " << r << " element " << e;
        ++compared;
      }
    }
    if (eight) {
      const Tensor sums = column_sums_mod32(b);
      for (int64_t j = 0; j < n; ++j) {
        uint32_t want = 0;
        for (int64_t r = 0; r < k; ++r) {
          want += t == DType::kInt8 ? static_cast<uint32_t>(b.data<int8_t>()[r * n + j])
                                    : static_cast<uint32_t>(b.data<uint8_t>()[r * n + j]);
        }
        ASSERT_EQ(sums.data<uint32_t>()[j], want) << dtype_name(t) << " column " << j;
      }
    }
  }
  EXPECT_GT(compared, 100000);
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
        QGemmArgs args = in.args(true, quantized, quantized);
        args.trans_b = trans_b;
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

// QuantMatmulDequant with a PackedB: dynamic per-token scales with and without smoothing (the
// shipped identities), both weight layouts, a bias or none with one PackedB (the bias is the
// call's: the weight's column sums are folded into it per call), all-zero rows, K beyond 2^15
// (the sum's blocks), the data cases that saturate, tie and wrap; and a static per-token call
// (no kernel: the reference, exactly, through the same PackedB API).
TEST(PackedB, QuantMatmulDequantIsBitExactAndRunsThePrepackedKernel) {
  std::mt19937_64 rng(testing::variant_seed() + 8);
  int prepacked_runs = 0, calls = 0;
  const std::vector<tune::QmdCase> cases = {{"decode", 1, 1000, 700, tune::QmdData::kRandom},
                                            {"batch", 16, 600, 530, tune::QmdData::kZeroRows},
                                            {"prefill", 100, 129, 65, tune::QmdData::kSaturate},
                                            {"ties", 7, 50, 40, tune::QmdData::kTies},
                                            {"wrap", 3, 33, 300, tune::QmdData::kWrap},
                                            {"deep K", 2, 20, 33100, tune::QmdData::kRandom}};
  for (const bool smooth : {false, true}) {
    const bool twins = has_prepacked("QuantMatmulDequant", "has_smooth", smooth ? "true" : "false");
    for (const tune::QmdCase& c : cases) {
      for (const bool transpose : {true, false}) {
        const tune::QmdInputs in = tune::make_quant_matmul_dequant_inputs(
            {tune::QmdMode::kDynamic, smooth, /*bias=*/true, transpose}, c, rng);
        QuantMatmulDequantArgs args = in.args();
        const runtime::PackedB pb = runtime::prepack_b(args);
        EXPECT_EQ(pb.op(), "QuantMatmulDequant");
        for (const bool bias : {true, false}) {
          args.bias = bias ? &in.bias : nullptr;
          DispatchInfo info;
          const Tensor y = runtime::quant_matmul_dequant(args, pb, &info);
          const std::string context =
              c.category + " " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
              std::to_string(c.k) + " smooth=" + std::to_string(smooth) +
              " transpose_weight=" + std::to_string(transpose) + " bias=" + std::to_string(bias) +
              ": " + info.kernel + " " + info.reason + " / " + pb.description();
          ASSERT_TRUE(testing::bit_equal(quant_matmul_dequant(args), y, context));
          ++calls;
          const bool ran_twin = info.kernel.find("_prepacked__") != std::string::npos;
          prepacked_runs += ran_twin;
          if (ran_twin) {
            EXPECT_NE(info.reason.find("weight prepacked"), std::string::npos) << context;
          }
          if (twins) {
            EXPECT_TRUE(ran_twin) << context;
          }
        }
      }
    }
  }
  // Static per-token scales: no kernel in any build; prepack_b packs nothing and says why.
  const tune::QmdInputs in = tune::make_quant_matmul_dequant_inputs(
      {tune::QmdMode::kStaticPerToken, false, true, true}, {"static", 4, 30, 20}, rng);
  const QuantMatmulDequantArgs args = in.args();
  const runtime::PackedB pb = runtime::prepack_b(args);
  DispatchInfo info;
  EXPECT_TRUE(testing::bit_equal(quant_matmul_dequant(args),
                                 runtime::quant_matmul_dequant(args, pb, &info), "static"));
  EXPECT_EQ(info.kernel, "reference") << info.reason;
  EXPECT_NE(pb.description().find("nothing packed"), std::string::npos) << pb.description();
  std::cout << "[prepack] QuantMatmulDequant: " << calls << " calls bit-exact, " << prepacked_runs
            << " on a prepacked kernel (level " << runtime::kernel_target() << ")\n";
}

// A plain 8-bit call (no PackedB) where the best level this CPU runs has only prepacked kernels
// of its identity (the AMX level: its tiles read B in panels) packs B for itself when it has at
// least 32 rows of A and 2^23 products, and runs that level's prepacked kernel, the one a call
// with a PackedB runs; other calls, and every call where the best level has plain kernels too,
// run a plain kernel. Bit for bit the reference every time. Which case holds is read from what the
// calls report: the level a PackedB was packed for (its description) against the level of the
// plain call's kernel at one row.
TEST(PackedB, PlainCallsPackBForThemselvesWhereTheBestLevelReadsPanelsOnly) {
  std::mt19937_64 rng(testing::variant_seed() + 7);
  // The text between `from` and the next `to` in `text` ("" when absent).
  auto between = [](const std::string& text, const std::string& from, const std::string& to) {
    const std::size_t p = text.find(from);
    if (p == std::string::npos) return std::string();
    const std::size_t e = text.find(to, p + from.size());
    return text.substr(p + from.size(), e == std::string::npos ? e : e - p - from.size());
  };
  int calls = 0, packed_for_call = 0;
  for (const bool qgemm_op : {false, true}) {
    const char* op = qgemm_op ? "QGemm" : "QLinearMatMul";
    std::string plain_level, packed_level;
    // (m, n, k, whether the call packs B where the best level reads panels only)
    for (const auto& [m, n, k, packs] :
         std::vector<std::tuple<int64_t, int64_t, int64_t, bool>>{{1, 512, 512, false},
                                                                  {31, 512, 512, false},
                                                                  {32, 512, 512, true},
                                                                  {150, 512, 300, true},
                                                                  {100, 200, 100, false}}) {
      Tensor want, got, with_pb;
      DispatchInfo plain, packed;
      runtime::PackedB pb;
      if (qgemm_op) {
        const tune::QGemmInputs in =
            tune::make_qgemm_inputs(DType::kUInt8, DType::kInt8, DType::kUInt8,
                                    {m, n, k, false, m == 32, false, {n}, false}, rng);
        QGemmArgs args = in.args(true, false, false);
        args.trans_b = m == 32;
        want = qgemm(args);
        got = runtime::qgemm(args, &plain);
        pb = runtime::prepack_b(args);
        with_pb = runtime::qgemm(args, pb, &packed);
      } else {
        const testing::QlmInputs in = testing::random_u8s8_qlm_inputs({m, k}, {k, n}, rng);
        const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
        want = qlinear_matmul(args);
        got = runtime::qlinear_matmul(args, &plain);
        pb = runtime::prepack_b(args);
        with_pb = runtime::qlinear_matmul(args, pb, &packed);
      }
      const std::string context = std::string(op) + " m " + std::to_string(m) + ": " +
                                  plain.kernel + " " + plain.reason + " | " + pb.description();
      ASSERT_TRUE(testing::bit_equal(want, got, context));
      ASSERT_TRUE(testing::bit_equal(want, with_pb, context));
      ++calls;
      if (m == 1) {
        plain_level = between(plain.reason, "(level ", ")");
        packed_level = between(pb.description(), "packed for level ", ":");
      }
      const bool expect = packs && !packed_level.empty() && packed_level != plain_level;
      const bool packed_here = plain.reason.find("for this call") != std::string::npos;
      EXPECT_EQ(packed_here, expect) << context;
      if (expect) {
        EXPECT_EQ(plain.kernel, packed.kernel) << context;
        ++packed_for_call;
      } else if (packed_level != plain_level && !packed_level.empty()) {
        EXPECT_NE(plain.kernel, packed.kernel) << context;
      }
    }
    // A batched a (2 x 64 rows) with a 2-D b: each entry's 64 x 512 x 300 is past the rule's
    // bounds, so where the rule applies the call packs b once for both entries.
    if (!qgemm_op) {
      const testing::QlmInputs in = testing::random_u8s8_qlm_inputs({2, 64, 300}, {300, 512}, rng);
      const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
      DispatchInfo batched;
      const Tensor y = runtime::qlinear_matmul(args, &batched);
      EXPECT_TRUE(testing::bit_equal(qlinear_matmul(args), y, batched.reason));
      const bool expect = !packed_level.empty() && packed_level != plain_level;
      EXPECT_EQ(batched.reason.find("for this call") != std::string::npos, expect)
          << batched.reason;
      ++calls;
      packed_for_call += expect;
    }
    // Capped to the level below: plain kernels there, nothing packed for the call.
    if (!packed_level.empty() && packed_level != plain_level) {
      const testing::QlmInputs in = testing::random_u8s8_qlm_inputs({150, 300}, {300, 200}, rng);
      const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
      DispatchInfo capped;
      Tensor y;
      {
        const testing::LevelCap cap(plain_level);
        y = runtime::qlinear_matmul(args, &capped);
      }
      EXPECT_TRUE(testing::bit_equal(qlinear_matmul(args), y, capped.reason));
      EXPECT_EQ(capped.reason.find("for this call"), std::string::npos) << capped.reason;
    }
  }
  std::cout << "[prepack] plain 8-bit calls: " << calls << " bit-exact, " << packed_for_call
            << " of them packing B for the call (level " << runtime::kernel_target() << ")\n";
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
  const testing::QlmInputs in = testing::random_u8s8_qlm_inputs({3, 8}, {8, 5}, rng);
  QLinearMatMulArgs q = in.args(RequantMode::kFloat32);
  EXPECT_NE(refused([&] { runtime::qlinear_matmul(q, pb); }).find("prepacked for Gemm"),
            std::string::npos);
  const runtime::PackedB qpb = runtime::prepack_b(q);
  q.requant = RequantMode::kFloat64;
  EXPECT_NE(refused([&] { runtime::qlinear_matmul(q, qpb); }).find("requant=float32"),
            std::string::npos);
  const testing::QlmInputs batched = testing::random_u8s8_qlm_inputs({3, 8}, {2, 8, 5}, rng);
  EXPECT_NE(
      refused([&] { runtime::prepack_b(batched.args(RequantMode::kFloat32)); }).find("rank 2"),
      std::string::npos);
  // prepack_b checks what it reads: B's type.
  Tensor b8 = testing::random_tensor(DType::kInt8, {4, 4}, rng, -1, 1);
  GemmArgs bad;
  bad.b = &b8;
  EXPECT_NE(refused([&] { runtime::prepack_b(bad); }).find("int8"), std::string::npos);

  // QuantMatmulDequant: another operator's PackedB, another weight tensor, shape or layout, other
  // scale modes, no weight; prepack_b's own checks (the weight's type, a weight_scale).
  const tune::QmdInputs qin = tune::make_quant_matmul_dequant_inputs(
      {tune::QmdMode::kDynamic, false, true, true}, {"small", 3, 12, 8}, rng);
  QuantMatmulDequantArgs d = qin.args();
  EXPECT_NE(refused([&] { runtime::quant_matmul_dequant(d, pb); }).find("prepacked for Gemm"),
            std::string::npos);
  const runtime::PackedB dpb = runtime::prepack_b(d);
  EXPECT_NE(refused([&] { runtime::gemm(g.args, dpb); }).find("prepacked for QuantMatmulDequant"),
            std::string::npos);
  Tensor w_copy = qin.weight;
  d.weight = &w_copy;
  EXPECT_NE(refused([&] {
              runtime::quant_matmul_dequant(d, dpb);
            }).find("weight is not the tensor packed_b was prepacked from"),
            std::string::npos);
  d = qin.args();
  d.transpose_weight = false;  // the same (12, 8) bytes read as (K, N): another call
  EXPECT_NE(refused([&] { runtime::quant_matmul_dequant(d, dpb); }).find("transpose_weight=0"),
            std::string::npos);
  d = qin.args();
  d.smooth_scale = &qin.smooth;
  EXPECT_NE(refused([&] { runtime::quant_matmul_dequant(d, dpb); }).find("smooth_scale=yes"),
            std::string::npos);
  d = qin.args();
  d.x_scale = &qin.x_scale;
  EXPECT_NE(refused([&] { runtime::quant_matmul_dequant(d, dpb); }).find("x_scale=float32"),
            std::string::npos);
  d = qin.args();
  d.weight = nullptr;
  EXPECT_NE(refused([&] { runtime::quant_matmul_dequant(d, dpb); }).find("weight is null"),
            std::string::npos);
  d = qin.args();
  Tensor w_u8(DType::kUInt8, qin.weight.shape);
  d.weight = &w_u8;
  EXPECT_NE(refused([&] { runtime::prepack_b(d); }).find("uint8"), std::string::npos);
  d = qin.args();
  d.weight_scale = nullptr;
  EXPECT_NE(refused([&] { runtime::prepack_b(d); }).find("weight_scale"), std::string::npos);
  // A call the PackedB fits but the reference refuses: the operator's own message.
  d = qin.args();
  Tensor short_bias(DType::kInt32, {5});
  d.bias = &short_bias;
  EXPECT_NE(refused([&] { runtime::quant_matmul_dequant(d, dpb); }).find("bias"),
            std::string::npos);
}

// PrepackOptions::rows: prepack_b packs only the layouts of the kernels those rows select; a call
// whose kernel reads another layout packs it then (the same twin as with everything packed, bit for
// bit the reference), once, also when the first such calls race; a row count below 1 is refused.
TEST(PackedB, RowsPackTheirLayoutsAndLaterCallsTheRest) {
  std::mt19937_64 rng(testing::variant_seed() + 5);
  int lazy_packings = 0, calls = 0;
  // QLinearMatMul u8.s8 (b 700 x 1000) and float32 Gemm with transB (B 1000 x 700, canonical
  // 700 x 1000), each with everything packed and with rows {1} only.
  for (const bool gemm : {false, true}) {
    const testing::QlmInputs in = testing::random_u8s8_qlm_inputs({100, 700}, {700, 1000}, rng);
    GemmCall g = gemm_call(100, 1000, 700, /*trans_b=*/true, FloatContract::kFma, rng);
    auto prepack = [&](const runtime::PrepackOptions& o) {
      return gemm ? runtime::prepack_b(g.args, o)
                  : runtime::prepack_b(in.args(RequantMode::kFloat32), o);
    };
    // The call at m rows (A's first m rows) with pb: its result, which must be the reference's.
    auto call = [&](int64_t m, const runtime::PackedB& pb, DispatchInfo* info) {
      if (gemm) {
        Tensor a = testing::random_tensor(DType::kFloat32, {m, 700}, rng, -4, 4);
        GemmArgs args = g.args;
        args.a = &a;
        const Tensor y = runtime::gemm(args, pb, info);
        return testing::bit_equal(mmtune::gemm(args), y, "Gemm m " + std::to_string(m));
      }
      QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
      Tensor a = testing::random_tensor(DType::kUInt8, {m, 700}, rng, 0, 255);
      args.a = &a;
      const Tensor y = runtime::qlinear_matmul(args, pb, info);
      return testing::bit_equal(qlinear_matmul(args), y, "QLinearMatMul m " + std::to_string(m));
    };
    const runtime::PackedB all = prepack(runtime::PrepackOptions{});
    const runtime::PackedB decode = prepack(runtime::PrepackOptions{{1}});
    EXPECT_LE(decode.bytes(), all.bytes());
    std::size_t before = decode.bytes();
    for (const int64_t m : {1, 16, 100, 16}) {
      DispatchInfo want, got;
      ASSERT_TRUE(call(m, all, &want));
      ASSERT_TRUE(call(m, decode, &got));
      EXPECT_EQ(got.kernel, want.kernel) << "m " << m << ": " << got.reason;
      const std::size_t now = decode.bytes();
      EXPECT_GE(now, before);
      if (now > before) {
        ++lazy_packings;
        EXPECT_NE(m, 1) << "the rows given were packed by prepack_b";
      }
      before = now;
      calls += 2;
    }
    // After the calls at every bucket's rows: no more than everything packed.
    EXPECT_LE(decode.bytes(), all.bytes());
    // The first calls needing an unpacked layout, four at once: each exact.
    const runtime::PackedB racing = prepack(runtime::PrepackOptions{{1}});
    std::atomic<int> exact{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 local(t);
        Tensor a = testing::random_tensor(gemm ? DType::kFloat32 : DType::kUInt8, {100, 700}, local,
                                          0, gemm ? 4 : 255);
        if (gemm) {
          GemmArgs args = g.args;
          args.a = &a;
          exact += testing::bit_equal(mmtune::gemm(args), runtime::gemm(args, racing), "race");
        } else {
          QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
          args.a = &a;
          exact += testing::bit_equal(qlinear_matmul(args), runtime::qlinear_matmul(args, racing),
                                      "race");
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(exact.load(), 4);
    const std::string refused = testing::invalid_argument_message([&] {
      prepack(runtime::PrepackOptions{{1, 0}});
    });
    EXPECT_NE(refused.find("PrepackOptions::rows holds 0"), std::string::npos) << refused;
  }
  std::cout << "[prepack] rows {1}: " << calls << " calls bit-exact, " << lazy_packings
            << " layouts packed by a later call (level " << runtime::kernel_target() << ")\n";
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
  DispatchInfo capped;
  Tensor y;
  {
    const testing::LevelCap none("none");
    y = runtime::gemm(g.args, f32, &capped);
  }
  EXPECT_TRUE(testing::bit_equal(gemm(g.args), y));
  EXPECT_EQ(capped.kernel, "reference");
  EXPECT_NE(capped.reason.find("B not prepacked"), std::string::npos) << capped.reason;
}

// Repeated calls with one PackedB: each call's signature (shapes, types, attributes, the
// quantization parameters' values, the allowed level) is prepared once and remembered by the
// PackedB (at most four). Every argument a later call changes must still be followed: a's rows
// and values, every scale and zero point, alpha, beta and C, the level; a bad value is refused
// after the same signature ran; remembered calls and first calls say the same in DispatchInfo.
// A call made twice with one PackedB (a new signature, then one its memo holds): both bit for bit
// `expected`, on the same kernel for the same reason; the first call's DispatchInfo.
DispatchInfo expect_twice_exact(const Tensor& expected,
                                const std::function<Tensor(DispatchInfo*)>& call,
                                const std::string& what, int& calls) {
  DispatchInfo first, again;
  const Tensor y1 = call(&first);
  const Tensor y2 = call(&again);
  const std::string context = what + ": " + first.kernel + " " + first.reason;
  EXPECT_TRUE(testing::bit_equal(expected, y1, context));
  EXPECT_TRUE(testing::bit_equal(expected, y2, context + " (again)"));
  EXPECT_EQ(first.kernel, again.kernel) << context;
  EXPECT_EQ(first.reason, again.reason) << context;
  calls += 2;
  return first;
}

// QuantMatmulDequant's PackedB remembers its calls too: a repeated call runs the kernel call
// prepared the first time (its bias folded then); every argument that changes is a new call.
TEST(PackedB, RepeatedQuantMatmulDequantCallsFollowEveryArgument) {
  std::mt19937_64 rng(testing::variant_seed() + 9);
  int calls = 0;
  const tune::QmdCase shape{"memo", 16, 90, 70, tune::QmdData::kRandom};
  tune::QmdInputs in = tune::make_quant_matmul_dequant_inputs(
      {tune::QmdMode::kDynamic, /*smooth=*/true, /*bias=*/true, /*transpose=*/true}, shape, rng);
  const runtime::PackedB pb = runtime::prepack_b(in.args());
  bool with_bias = true;
  auto check = [&](const std::string& what) {
    QuantMatmulDequantArgs args = in.args();
    if (!with_bias) args.bias = nullptr;
    return expect_twice_exact(
        quant_matmul_dequant(args),
        [&](DispatchInfo* info) { return runtime::quant_matmul_dequant(args, pb, info); }, what,
        calls);
  };
  const DispatchInfo at16 = check("M=16");
  // Six row counts, more than the PackedB remembers, then the first ones again.
  for (const int64_t m : {1, 5, 33, 100, 2, 16, 1}) {
    in.x = tune::make_quant_matmul_dequant_inputs(in.c, {"memo", m, 90, 70}, rng).x;
    check("M=" + std::to_string(m));
  }
  // The same signature with other values: x in place, then every parameter.
  in.x = tune::make_quant_matmul_dequant_inputs(in.c, shape, rng).x;
  check("x's values");
  const Tensor y_before = runtime::quant_matmul_dequant(in.args(), pb);
  in.bias.data<int32_t>()[7] += 1 << 20;
  check("bias[7]");
  EXPECT_FALSE(testing::bit_equal(y_before, runtime::quant_matmul_dequant(in.args(), pb),
                                  "a bias 2^20 larger changes the output"));
  in.weight_scale.data<float>()[89] *= 2.0f;
  check("weight_scale[89]");
  in.smooth.data<uint16_t>()[3] ^= 0x0400;  // an exponent bit: another smoothing factor
  check("smooth_scale[3]");
  with_bias = false;
  check("no bias");
  EXPECT_NE(testing::invalid_argument_message([&] {
              QuantMatmulDequantArgs args = in.args();
              args.smooth_scale = nullptr;
              runtime::quant_matmul_dequant(args, pb);
            }).find("smooth"),
            std::string::npos)
      << "a PackedB packed with smoothing refuses a call without";
  with_bias = true;
  // A bad value after its signature ran: refused, naming it.
  const float ws = in.weight_scale.data<float>()[0];
  in.weight_scale.data<float>()[0] = std::nanf("");
  EXPECT_NE(testing::invalid_argument_message([&] {
              runtime::quant_matmul_dequant(in.args(), pb);
            }).find("weight_scale"),
            std::string::npos);
  in.weight_scale.data<float>()[0] = ws;
  // Another weight of the same shape and values: refused as before.
  Tensor other_w = in.weight;
  QuantMatmulDequantArgs other = in.args();
  other.weight = &other_w;
  EXPECT_NE(testing::invalid_argument_message([&] {
              runtime::quant_matmul_dequant(other, pb);
            }).find("is not the tensor packed_b was"),
            std::string::npos);
  // The level: none allowed, then the default again.
  const DispatchInfo kernel_info = check("M=16, default level");
  {
    const testing::LevelCap none("none");
    EXPECT_EQ(check("level none").kernel, "reference");
  }
  EXPECT_EQ(check("default level again").kernel, kernel_info.kernel);
  EXPECT_EQ(kernel_info.kernel, at16.kernel);
  std::cout << "[prepack] QuantMatmulDequant memo: " << calls << " calls bit-exact (" << at16.kernel
            << ")\n";
}

TEST(PackedB, RepeatedCallsFollowEveryArgument) {
  std::mt19937_64 rng(testing::variant_seed() + 5);
  int calls = 0;
  // QLinearMatMul u8 x s8 -> u8, per-column b parameters.
  testing::QlmCase qc;
  qc.name = "memo";
  qc.a = {16, 70};
  qc.b = {70, 90};
  qc.b_param = {90};
  qc.data = "random";
  testing::QlmInputs in = testing::make_qlinear_matmul_inputs(
      DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, qc, rng);
  const runtime::PackedB pb = runtime::prepack_b(in.args(RequantMode::kFloat32));
  auto check = [&](const std::string& what) {
    const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
    return expect_twice_exact(
        qlinear_matmul(args),
        [&](DispatchInfo* info) { return runtime::qlinear_matmul(args, pb, info); }, what, calls);
  };
  const DispatchInfo at16 = check("M=16");
  // Six row counts, more than the PackedB remembers, then the first ones again.
  for (const int64_t m : {1, 5, 33, 100, 2, 16, 1}) {
    in.a = testing::random_tensor(DType::kUInt8, {m, 70}, rng, 0, 255);
    check("M=" + std::to_string(m));
  }
  // The same signature with other values: a in place, then every parameter.
  in.a = testing::random_tensor(DType::kUInt8, {16, 70}, rng, 0, 255);
  check("a's values");
  const Tensor y_before = runtime::qlinear_matmul(in.args(RequantMode::kFloat32), pb);
  in.ys.data<float>()[0] *= 1.5f;
  check("y_scale");
  EXPECT_FALSE(testing::bit_equal(y_before,
                                  runtime::qlinear_matmul(in.args(RequantMode::kFloat32), pb),
                                  "a y_scale 1.5x changes the output"));
  in.yz.data<uint8_t>()[0] ^= 7;
  check("y_zero_point");
  in.as.data<float>()[0] *= 0.75f;
  check("a_scale");
  in.az.data<uint8_t>()[0] ^= 3;
  check("a_zero_point");
  in.bs.data<float>()[89] *= 2.0f;
  check("b_scale[89]");
  in.bz.data<int8_t>()[0] ^= 5;
  check("b_zero_point[0]");
  // A bad value after its signature ran: refused, naming it.
  const float ys = in.ys.data<float>()[0];
  in.ys.data<float>()[0] = 0.0f;
  EXPECT_NE(testing::invalid_argument_message([&] {
              runtime::qlinear_matmul(in.args(RequantMode::kFloat32), pb);
            }).find("y_scale"),
            std::string::npos);
  in.ys.data<float>()[0] = ys;
  // Another b of the same shape and values: refused as before.
  Tensor other_b = in.b;
  QLinearMatMulArgs other = in.args(RequantMode::kFloat32);
  other.b = &other_b;
  EXPECT_NE(testing::invalid_argument_message([&] {
              runtime::qlinear_matmul(other, pb);
            }).find("is not the tensor packed_b was"),
            std::string::npos);
  // The level: none allowed, then the default again.
  in.a = testing::random_tensor(DType::kUInt8, {16, 70}, rng, 0, 255);
  const DispatchInfo kernel_info = check("M=16, default level");
  {
    const testing::LevelCap none("none");
    EXPECT_EQ(check("level none").kernel, "reference");
  }
  EXPECT_EQ(check("default level again").kernel, kernel_info.kernel);
  EXPECT_EQ(kernel_info.kernel, at16.kernel);

  // Gemm float32: alpha, beta, C's values, rows.
  GemmCall g = gemm_call(16, 90, 70, false, FloatContract::kStrict, rng);
  const runtime::PackedB gpb = runtime::prepack_b(g.args);
  auto check_gemm = [&](const std::string& what) {
    expect_twice_exact(
        gemm(g.args), [&](DispatchInfo* info) { return runtime::gemm(g.args, gpb, info); }, what,
        calls);
  };
  check_gemm("Gemm");
  g.args.alpha = -0.0f;
  check_gemm("alpha -0");
  g.args.alpha = 0.0f;
  check_gemm("alpha +0");
  g.args.beta = -2.0f;
  check_gemm("beta");
  g.c = testing::random_tensor(DType::kFloat32, {90}, rng, -4, 4);
  check_gemm("C's values");
  g.args.c = nullptr;
  check_gemm("no C");
  g.a = testing::random_tensor(DType::kFloat32, {3, 70}, rng, -4, 4);
  check_gemm("M=3");

  // QGemm u8 x s8 -> float32: alpha, C's values, y_scale's presence.
  const tune::QGemmInputs qg =
      tune::make_qgemm_inputs(DType::kUInt8, DType::kInt8, DType::kUInt8,
                              {16, 90, 70, false, false, /*per_column=*/true, {90}, false}, rng);
  Tensor c = qg.c;
  QGemmArgs q;
  q.a = &qg.a;
  q.b = &qg.b;
  q.a_scale = &qg.as;
  q.a_zero_point = &qg.az;
  q.b_scale = &qg.bs;
  q.b_zero_point = &qg.bz;
  q.c = &c;
  const runtime::PackedB qpb = runtime::prepack_b(q);
  auto check_qgemm = [&](const std::string& what) {
    expect_twice_exact(
        qgemm(q), [&](DispatchInfo* info) { return runtime::qgemm(q, qpb, info); }, what, calls);
  };
  check_qgemm("QGemm");
  q.alpha = 0.25f;
  check_qgemm("alpha");
  c = testing::random_tensor(DType::kInt32, c.shape, rng, -1000, 1000);
  check_qgemm("C's values");
  q.c = nullptr;
  check_qgemm("no C");
  std::cout << "[prepack] repeated calls: " << calls << " calls bit-exact\n";
}

// A bucket may hold a thread range (tuned/README.md), so the same call can run one kernel on 1
// thread and another on 2. Calls with a PackedB follow set_num_threads (its memo keys on the
// count); a prepared call keeps the kernel chosen when it was prepared (mmtune.h). Every output is
// the reference's.
TEST(PackedB, TheThreadCountChoosesTheKernelAndCallsFollowIt) {
  // A call of a linked u8 x s8 -> u8 prepacked identity whose kernel differs on 1 and 2 threads.
  const std::map<std::string, std::string> identity = {
      {"a.type", "uint8"},    {"b.type", "int8"},        {"prepacked_b", "true"},
      {"requant", "float32"}, {"scale_type", "float32"}, {"y.type", "uint8"}};
  const runtime::KernelEntry *on1 = nullptr, *on2 = nullptr;
  int64_t m = 0, n = 0, k = 0;
  for (const runtime::UsedGroup& u : runtime::used_groups()) {
    if (u.group->op != "QLinearMatMul" || u.group->identity != identity) continue;
    for (const runtime::KernelEntry* e : u.group->entries) {
      const runtime::Bucket& b = e->bucket;
      if (on1 || b.threads_min < 2) continue;
      m = testing::clamp_to(32, std::max<int64_t>(b.m_min, 1), b.m_max);
      n = testing::clamp_to(200, std::max<int64_t>(b.n_min, 1), b.n_max);
      k = testing::clamp_to(300, std::max<int64_t>(b.k_min, 1), b.k_max);
      const runtime::KernelEntry* one = runtime::select_in_group(*u.group, m, n, k, 1).kernel;
      const runtime::KernelEntry* two = runtime::select_in_group(*u.group, m, n, k, 2).kernel;
      if (one != two) on1 = one, on2 = two;
    }
  }
  if (!on1) {
    GTEST_SKIP() << "no bucket with a thread range at the levels calls use ("
                 << runtime::kernel_target() << ") splits a u8 x s8 -> u8 prepacked call";
  }
  std::mt19937_64 rng(testing::variant_seed() + 9);
  testing::QlmCase qc;
  qc.name = "threads";
  qc.a = {m, k};
  qc.b = {k, n};
  qc.b_param = {n};
  qc.data = "random";
  const testing::QlmInputs in = testing::make_qlinear_matmul_inputs(
      DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, qc, rng);
  const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
  const Tensor expected = qlinear_matmul(args);
  const std::string shape =
      std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " ";
  const testing::PoolThreads restore(2);
  const runtime::PackedB pb = runtime::prepack_b(args);
  DispatchInfo two;
  EXPECT_TRUE(testing::bit_equal(expected, runtime::qlinear_matmul(args, pb, &two), shape + "2"));
  EXPECT_EQ(two.kernel, on2->name) << two.reason;
  EXPECT_NE(two.reason.find("on 2 threads"), std::string::npos) << two.reason;
  const runtime::PreparedQLinearMatMul prepared = runtime::prepare_qlinear_matmul(args, &pb);
  EXPECT_EQ(prepared.info().kernel, on2->name);

  set_num_threads(1);
  DispatchInfo one;
  EXPECT_TRUE(testing::bit_equal(expected, runtime::qlinear_matmul(args, pb, &one), shape + "1"));
  EXPECT_EQ(one.kernel, on1->name) << one.reason;
  EXPECT_NE(one.reason.find("on 1 thread"), std::string::npos) << one.reason;
  // The prepared call keeps its kernel (on 1 thread now: the same bits).
  Tensor y(DType::kUInt8, {m, n});
  prepared.run(in.a.bytes.data(), in.b.bytes.data(), y.bytes.data());
  EXPECT_TRUE(testing::bit_equal(expected, y, shape + "prepared on 2, run on 1"));
  EXPECT_EQ(prepared.info().kernel, on2->name);

  // Back on 2 threads: the PackedB's memo still holds the 2-thread call.
  set_num_threads(2);
  DispatchInfo again;
  EXPECT_TRUE(testing::bit_equal(expected, runtime::qlinear_matmul(args, pb, &again), shape));
  EXPECT_EQ(again.kernel, on2->name) << again.reason;
  std::cout << "[prepack] " << shape << "on 1 thread " << on1->name << ", on 2 " << on2->name
            << " (level " << runtime::kernel_target() << ")\n";
}

// Calls sharing a PackedB from two threads, with more signatures between them than it
// remembers: every output is the reference's.
TEST(PackedB, ConcurrentCallsShareItsMemo) {
  std::mt19937_64 rng(testing::variant_seed() + 6);
  const testing::QlmInputs in = testing::random_u8s8_qlm_inputs({1, 64}, {64, 48}, rng);
  const runtime::PackedB pb = runtime::prepack_b(in.args(RequantMode::kFloat32));
  std::vector<Tensor> as, expected;
  for (const int64_t m : {1, 2, 3, 7, 16, 40}) {
    as.push_back(testing::random_tensor(DType::kUInt8, {m, 64}, rng, 0, 255));
  }
  for (const Tensor& a : as) {
    QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
    args.a = &a;
    expected.push_back(qlinear_matmul(args));
  }
  std::atomic<int> wrong{0}, done{0};
  auto work = [&](std::size_t first) {
    for (int round = 0; round < 60; ++round) {
      for (std::size_t i = first; i < as.size(); i += 2) {
        QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
        args.a = &as[i];
        const Tensor y = runtime::qlinear_matmul(args, pb);
        wrong += y.bytes != expected[i].bytes;
        ++done;
      }
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(done.load(), 360);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace mmtune
