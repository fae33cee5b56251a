// Prepared calls (mmtune::runtime::prepare_gemm / prepare_qlinear_matmul / prepare_qgemm /
// prepare_quant_matmul_dequant): bit for bit the reference over shapes of every bucket,
// transposes, C broadcasts, per-tensor / per-row / per-column parameters, both weight layouts,
// smoothing, bias or none, with and without a PackedB, several runs of one preparation on other
// data, concurrent runs, the reference fallback (K = 0, empty Y, modes without kernels), and the
// refusals.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <array>
#include <cmath>
#include <functional>
#include <memory>
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
#include "runtime/host/cpu_features.h"
#include "runtime/src/kernel_call.h"
#include "tests/runtime/runtime_support.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

Tensor random_of(DType t, Shape s, std::mt19937_64& rng) {
  const testing::ValueRange range = testing::gemm_value_range(t);
  return is_float(t)
             ? testing::random_float_tensor(t, std::move(s), rng, testing::FloatData::kPlain)
             : testing::random_tensor(t, std::move(s), rng, range.lo, range.hi);
}

// A preparation runs the kernel the plain call runs, except where the plain call packed B for
// itself (8-bit calls on a level whose kernels read panels only: pack_b_per_call): a preparation
// without a PackedB, which allocates nothing per run, keeps the plain kernel of the level below.
void expect_prepared_kernel(const DispatchInfo& prepared, const DispatchInfo& plain) {
  if (plain.reason.find("for this call") != std::string::npos) {
    EXPECT_NE(plain.kernel.find("_prepacked__"), std::string::npos) << plain.reason;
    EXPECT_EQ(prepared.kernel.find("_prepacked__"), std::string::npos) << prepared.reason;
    EXPECT_NE(prepared.kernel, "reference") << prepared.reason;
  } else {
    EXPECT_EQ(prepared.kernel, plain.kernel) << prepared.reason;
  }
}

TEST(PreparedGemm, BitExactAndTheSameKernelAsThePlainCall) {
  std::mt19937_64 rng(testing::variant_seed() + 10);
  int runs = 0, kernel_runs = 0;
  for (const DType t : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kBFloat16}) {
    for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{
             {1, 1000, 700}, {3, 77, 33}, {16, 600, 530}, {100, 129, 65}}) {
      for (int variant = 0; variant < 4; ++variant) {
        GemmArgs args;
        args.trans_a = variant == 3;
        args.trans_b = variant == 1 || variant == 3;
        args.contract =
            variant == 2 && contract_applies(t) ? FloatContract::kFma : FloatContract::kStrict;
        const bool prepacked = variant >= 2;
        const std::vector<Shape> c_shapes = {{}, {n}, {m, 1}, {m, n}};
        Tensor a = random_of(t, args.trans_a ? Shape{k, m} : Shape{m, k}, rng);
        Tensor b = random_of(t, args.trans_b ? Shape{n, k} : Shape{k, n}, rng);
        Tensor c = random_of(t, c_shapes[variant], rng);
        args.a = &a;
        args.b = &b;
        args.c = variant == 0 ? nullptr : &c;
        args.alpha = variant == 1 ? 0.5f : 1.0f;
        args.beta = variant == 2 ? -1.0f : 1.0f;
        const runtime::PackedB pb = prepacked ? runtime::prepack_b(args) : runtime::PackedB();
        const runtime::PreparedGemm prepared =
            runtime::prepare_gemm(args, prepacked ? &pb : nullptr);
        DispatchInfo plain;
        const Tensor want_plain =
            prepacked ? runtime::gemm(args, pb, &plain) : runtime::gemm(args, &plain);
        const std::string context = std::string(dtype_name(t)) + " " + std::to_string(m) + "x" +
                                    std::to_string(n) + "x" + std::to_string(k) + " variant " +
                                    std::to_string(variant) + ": " + prepared.info().kernel + " " +
                                    prepared.info().reason;
        EXPECT_EQ(prepared.info().kernel, plain.kernel) << context;
        // Two runs of the one preparation on other A (and C) values.
        for (int r = 0; r < 2; ++r) {
          if (r == 1) {
            a = random_of(t, a.shape, rng);
            c = random_of(t, c.shape, rng);
          }
          Tensor y(t, {m, n});
          prepared.run(a.bytes.data(), b.bytes.data(), args.c ? c.bytes.data() : nullptr,
                       y.bytes.data());
          ASSERT_TRUE(testing::bit_equal(gemm(args), y, context + " run " + std::to_string(r)));
          ++runs;
        }
        kernel_runs += prepared.info().used_kernel();
      }
    }
  }
  std::cout << "[prepared] Gemm: " << runs << " runs bit-exact, " << kernel_runs
            << " preparations on a kernel (level " << runtime::kernel_target() << ")\n";
}

TEST(PreparedGemm, RunsConcurrentlyOnDistinctOutputs) {
  std::mt19937_64 rng(testing::variant_seed() + 11);
  Tensor a = random_of(DType::kFloat32, {16, 300}, rng);
  Tensor b = random_of(DType::kFloat32, {300, 200}, rng);
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  const runtime::PackedB pb = runtime::prepack_b(args);
  const runtime::PreparedGemm prepared = runtime::prepare_gemm(args, &pb);
  const Tensor want = gemm(args);
  std::vector<Tensor> ys(4, Tensor(DType::kFloat32, {16, 200}));
  std::vector<std::thread> threads;
  for (Tensor& y : ys) {
    threads.emplace_back([&] {
      for (int r = 0; r < 20; ++r)
        prepared.run(a.bytes.data(), b.bytes.data(), nullptr, y.bytes.data());
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Tensor& y : ys) EXPECT_TRUE(testing::bit_equal(want, y));
}

TEST(PreparedGemm, NoKernelRunsTheReference) {
  std::mt19937_64 rng(testing::variant_seed() + 12);
  // K = 0: Y = beta * C.
  Tensor a(DType::kFloat32, {3, 0}), b(DType::kFloat32, {0, 4});
  Tensor c = random_of(DType::kFloat32, {4}, rng);
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  args.c = &c;
  args.beta = 0.5f;
  const runtime::PreparedGemm prepared = runtime::prepare_gemm(args);
  EXPECT_EQ(prepared.info().kernel, "reference");
  Tensor y(DType::kFloat32, {3, 4});
  const uint8_t dummy = 0;  // an empty operand's pointer is still required, never read
  prepared.run(&dummy, &dummy, c.bytes.data(), y.bytes.data());
  EXPECT_TRUE(testing::bit_equal(gemm(args), y));
  // A capped level: the reference, exactly.
  Tensor a2 = random_of(DType::kFloat32, {5, 7}, rng), b2 = random_of(DType::kFloat32, {7, 6}, rng);
  args.a = &a2;
  args.b = &b2;
  args.c = nullptr;
  runtime::PreparedGemm capped;
  {
    const testing::LevelCap none("none");
    capped = runtime::prepare_gemm(args);
  }
  EXPECT_EQ(capped.info().kernel, "reference");
  Tensor y2(DType::kFloat32, {5, 6});
  capped.run(a2.bytes.data(), b2.bytes.data(), nullptr, y2.bytes.data());
  EXPECT_TRUE(testing::bit_equal(gemm(args), y2));
}

// beta = 0 ignores C (the reference's rule): a C given with beta 0 is not read. The prepared run's
// C lies in pages mapped without access, so a kernel that read it would fault. The plain and
// PackedB calls (whose C is a Tensor, so readable) get a NaN C and must give the reference's bits:
// NaN must not reach Y.
TEST(PreparedGemm, BetaZeroReadsNoC) {
  std::mt19937_64 rng(testing::variant_seed() + 15);
  int kernel_runs = 0;
  for (const auto& [m, n, k] :
       std::vector<std::array<int64_t, 3>>{{1, 1000, 700}, {16, 600, 530}, {100, 129, 65}}) {
    for (const bool prepacked : {false, true}) {
      Tensor a = random_of(DType::kFloat32, {m, k}, rng);
      Tensor b = random_of(DType::kFloat32, {k, n}, rng);
      Tensor c(DType::kFloat32, {m, n});
      for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = std::nanf("");
      GemmArgs args;
      args.a = &a;
      args.b = &b;
      args.c = &c;
      args.alpha = 0.75f;
      args.beta = prepacked ? -0.0f : 0.0f;
      // (fma has no kernels at the SSE4.1 level: strict there.)
      args.contract = prepacked ? FloatContract::kFma : FloatContract::kStrict;
      const Tensor want = gemm(args);
      const std::string context = std::to_string(m) + "x" + std::to_string(n) + "x" +
                                  std::to_string(k) + (prepacked ? " prepacked" : "");
      const runtime::PackedB pb = prepacked ? runtime::prepack_b(args) : runtime::PackedB();
      DispatchInfo info;
      const Tensor plain = prepacked ? runtime::gemm(args, pb, &info) : runtime::gemm(args, &info);
      ASSERT_TRUE(testing::bit_equal(want, plain, context + " plain"));
      kernel_runs += info.used_kernel();
      const std::size_t bytes = c.bytes.size();
      void* no_access = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      ASSERT_NE(no_access, MAP_FAILED);
      const runtime::PreparedGemm prepared = runtime::prepare_gemm(args, prepacked ? &pb : nullptr);
      kernel_runs += prepared.info().used_kernel();
      Tensor y(DType::kFloat32, {m, n});
      prepared.run(a.bytes.data(), b.bytes.data(), no_access, y.bytes.data());
      munmap(no_access, bytes);
      ASSERT_TRUE(testing::bit_equal(want, y, context + " prepared"));
    }
  }
  EXPECT_GT(kernel_runs, 0);
}

TEST(PreparedGemm, BadRunsAreRefused) {
  std::mt19937_64 rng(testing::variant_seed() + 13);
  Tensor a = random_of(DType::kFloat32, {4, 8}, rng), b = random_of(DType::kFloat32, {8, 5}, rng);
  Tensor c = random_of(DType::kFloat32, {5}, rng), y(DType::kFloat32, {4, 5});
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  args.c = &c;
  const runtime::PreparedGemm prepared = runtime::prepare_gemm(args);
  auto refused = [](const std::function<void()>& f) {
    return testing::invalid_argument_message(f);
  };
  EXPECT_NE(refused([&] {
              prepared.run(nullptr, b.bytes.data(), c.bytes.data(), y.bytes.data());
            }).find("A is null"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              prepared.run(a.bytes.data(), b.bytes.data(), nullptr, y.bytes.data());
            }).find("C is null"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              prepared.run(a.bytes.data(), b.bytes.data(), c.bytes.data(), nullptr);
            }).find("Y is null"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              runtime::PreparedGemm().run(nullptr, nullptr, nullptr, nullptr);
            }).find("empty PreparedGemm"),
            std::string::npos);
  // With a PackedB, B must be the packed tensor.
  const runtime::PackedB pb = runtime::prepack_b(args);
  const runtime::PreparedGemm packed = runtime::prepare_gemm(args, &pb);
  const Tensor other = b;
  EXPECT_NE(refused([&] {
              packed.run(a.bytes.data(), other.bytes.data(), c.bytes.data(), y.bytes.data());
            }).find("not the tensor packed_b was prepacked from"),
            std::string::npos);
  // Validation at preparation, with the reference's sentences.
  Tensor bad(DType::kFloat32, {9, 5});
  args.b = &bad;
  EXPECT_NE(refused([&] { runtime::prepare_gemm(args); }).find("Gemm"), std::string::npos);
}

TEST(PreparedQLinearMatMul, BitExactWithAndWithoutPackedB) {
  std::mt19937_64 rng(testing::variant_seed() + 14);
  int runs = 0;
  struct Case {
    Shape a, b, a_param, b_param;
  };
  const std::vector<Case> cases = {{{1, 700}, {700, 1000}, {}, {1000}},
                                   {{16, 530}, {530, 600}, {16, 1}, {600}},
                                   {{100, 65}, {65, 129}, {}, {}},
                                   {{7, 33100}, {33100, 20}, {7, 1}, {1, 20}}};
  for (const auto& [ta, tb, ty] :
       std::vector<std::array<DType, 3>>{{DType::kUInt8, DType::kInt8, DType::kUInt8},
                                         {DType::kInt8, DType::kInt8, DType::kInt8},
                                         {DType::kUInt8, DType::kUInt8, DType::kInt8}}) {
    for (const Case& c : cases) {
      for (const bool prepacked : {false, true}) {
        testing::QlmCase qc;
        qc.name = "prepared";
        qc.a = c.a;
        qc.b = c.b;
        qc.a_param = c.a_param;
        qc.b_param = c.b_param;
        testing::QlmInputs in =
            testing::make_qlinear_matmul_inputs(ta, tb, ty, DType::kFloat32, qc, rng);
        const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
        const runtime::PackedB pb = prepacked ? runtime::prepack_b(args) : runtime::PackedB();
        const runtime::PreparedQLinearMatMul prepared =
            runtime::prepare_qlinear_matmul(args, prepacked ? &pb : nullptr);
        DispatchInfo plain;
        if (prepacked) {
          runtime::qlinear_matmul(args, pb, &plain);
        } else {
          runtime::qlinear_matmul(args, &plain);
        }
        expect_prepared_kernel(prepared.info(), plain);
        for (int r = 0; r < 2; ++r) {
          if (r == 1)
            in.a = testing::random_tensor(ta, c.a, rng, testing::quant_min(ta),
                                          testing::quant_max(ta));
          Tensor y(ty, {c.a[0], c.b[1]});
          prepared.run(in.a.bytes.data(), in.b.bytes.data(), y.bytes.data());
          ASSERT_TRUE(testing::bit_equal(qlinear_matmul(args), y,
                                         prepared.info().kernel + " " + prepared.info().reason));
          ++runs;
        }
      }
    }
  }
  std::cout << "[prepared] QLinearMatMul: " << runs << " runs bit-exact (level "
            << runtime::kernel_target() << ")\n";
}

TEST(PreparedQLinearMatMul, BatchesAndBadRunsAreRefused) {
  std::mt19937_64 rng(testing::variant_seed() + 15);
  testing::QlmCase qc;
  qc.name = "batched";
  qc.a = {2, 3, 8};
  qc.b = {8, 5};
  const testing::QlmInputs batched = testing::make_qlinear_matmul_inputs(
      DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, qc, rng);
  auto refused = [](const std::function<void()>& f) {
    return testing::invalid_argument_message(f);
  };
  EXPECT_NE(refused([&] {
              runtime::prepare_qlinear_matmul(batched.args(RequantMode::kFloat32));
            }).find("prepared calls take 2-D a and b"),
            std::string::npos);
  qc.a = {3, 8};
  const testing::QlmInputs in = testing::make_qlinear_matmul_inputs(
      DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, qc, rng);
  const runtime::PreparedQLinearMatMul prepared =
      runtime::prepare_qlinear_matmul(in.args(RequantMode::kFloat32));
  Tensor y(DType::kUInt8, {3, 5});
  EXPECT_NE(
      refused([&] { prepared.run(in.a.bytes.data(), nullptr, y.bytes.data()); }).find("b is null"),
      std::string::npos);
}

// QGemm's operands and parameters for one call (a scale of 2^u, u drawn in [lo, hi]).
struct QGemmCall {
  Tensor a, b, c, a_scale, a_zero_point, b_scale, b_zero_point, y_scale, y_zero_point;
  QGemmArgs args;
};
Tensor scale_of(Shape s, std::mt19937_64& rng, double lo, double hi) {
  Tensor t(DType::kFloat32, std::move(s));
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(std::exp2(u(rng)));
  return t;
}
std::unique_ptr<QGemmCall> qgemm_call(DType ta, DType tb, DType ty, int64_t m, int64_t n, int64_t k,
                                      bool trans_a, bool trans_b, Shape c_shape, bool has_c,
                                      bool per_column, std::mt19937_64& rng) {
  auto q = std::make_unique<QGemmCall>();
  q->a = testing::random_tensor(ta, trans_a ? Shape{k, m} : Shape{m, k}, rng,
                                testing::quant_min(ta), testing::quant_max(ta));
  q->b = testing::random_tensor(tb, trans_b ? Shape{n, k} : Shape{k, n}, rng,
                                testing::quant_min(tb), testing::quant_max(tb));
  q->c = testing::random_tensor(DType::kInt32, std::move(c_shape), rng, -20000, 20000);
  const double e = -std::log2(static_cast<double>(std::max<int64_t>(k, 1)) * 128.0);
  q->a_scale = scale_of({}, rng, e / 2 - 1, e / 2 + 1);
  q->a_zero_point =
      testing::random_tensor(ta, {}, rng, testing::quant_min(ta), testing::quant_max(ta));
  q->b_scale = scale_of(per_column ? Shape{n} : Shape{}, rng, e / 2 - 1, e / 2 + 1);
  q->b_zero_point = testing::random_tensor(tb, per_column ? Shape{n} : Shape{}, rng,
                                           testing::quant_min(tb), testing::quant_max(tb));
  q->y_scale = scale_of({}, rng, -8, -6);
  QGemmArgs& args = q->args;
  args.a = &q->a;
  args.b = &q->b;
  args.c = has_c ? &q->c : nullptr;
  args.a_scale = &q->a_scale;
  args.a_zero_point = &q->a_zero_point;
  args.b_scale = &q->b_scale;
  args.b_zero_point = &q->b_zero_point;
  args.trans_a = trans_a;
  args.trans_b = trans_b;
  args.alpha = 0.75f;
  if (ty != DType::kFloat32) {
    q->y_zero_point =
        testing::random_tensor(ty, {}, rng, testing::quant_min(ty), testing::quant_max(ty));
    args.y_scale = &q->y_scale;
    args.y_zero_point = &q->y_zero_point;
  }
  return q;
}

TEST(PreparedQGemm, BitExactWithAndWithoutPackedB) {
  std::mt19937_64 rng(testing::variant_seed() + 16);
  int runs = 0, kernel_runs = 0;
  struct Case {
    int64_t m, n, k;
  };
  // The decode, small-batch and prefill buckets, ragged edges.
  const std::vector<Case> cases = {{1, 700, 600}, {16, 530, 520}, {100, 65, 129}, {70, 600, 530}};
  for (const auto& [ta, tb, ty] :
       std::vector<std::array<DType, 3>>{{DType::kUInt8, DType::kInt8, DType::kFloat32},
                                         {DType::kUInt8, DType::kInt8, DType::kUInt8},
                                         {DType::kInt8, DType::kInt8, DType::kInt8},
                                         {DType::kUInt8, DType::kUInt8, DType::kFloat32}}) {
    int combo = 0;
    for (const Case& c : cases) {
      for (const bool prepacked : {false, true}) {
        ++combo;
        const bool trans_a = combo % 3 == 0, trans_b = combo % 4 == 1;
        const std::vector<Shape> c_shapes = {{}, {c.n}, {1, c.n}, {c.m, c.n}};
        const Shape& c_shape = c_shapes[combo % 4];
        const bool has_c = combo % 5 != 0;
        auto q = qgemm_call(ta, tb, ty, c.m, c.n, c.k, trans_a, trans_b, c_shape, has_c,
                            combo % 2 == 0, rng);
        const runtime::PackedB pb = prepacked ? runtime::prepack_b(q->args) : runtime::PackedB();
        const runtime::PreparedQGemm prepared =
            runtime::prepare_qgemm(q->args, prepacked ? &pb : nullptr);
        DispatchInfo plain;
        if (prepacked) {
          runtime::qgemm(q->args, pb, &plain);
        } else {
          runtime::qgemm(q->args, &plain);
        }
        expect_prepared_kernel(prepared.info(), plain);
        kernel_runs += prepared.info().kernel != "reference";
        for (int r = 0; r < 2; ++r) {
          if (r == 1) {  // other A and C on the same preparation
            q->a = testing::random_tensor(ta, q->a.shape, rng, testing::quant_min(ta),
                                          testing::quant_max(ta));
            q->c = testing::random_tensor(DType::kInt32, q->c.shape, rng, -20000, 20000);
          }
          Tensor y(ty, {c.m, c.n});
          prepared.run(q->a.bytes.data(), q->b.bytes.data(), has_c ? q->c.bytes.data() : nullptr,
                       y.bytes.data());
          ASSERT_TRUE(testing::bit_equal(qgemm(q->args), y,
                                         prepared.info().kernel + " " + prepared.info().reason));
          ++runs;
        }
      }
    }
  }
  std::cout << "[prepared] QGemm: " << runs << " runs bit-exact, " << kernel_runs
            << " preparations on a kernel (level " << runtime::kernel_target() << ")\n";
}

TEST(PreparedQGemm, NoKernelAndBadRunsAreRefusedOrExact) {
  std::mt19937_64 rng(testing::variant_seed() + 17);
  // K = 0: the epilogue of C alone, by the reference.
  auto empty = qgemm_call(DType::kUInt8, DType::kInt8, DType::kFloat32, 3, 4, 0, false, false, {4},
                          true, false, rng);
  const runtime::PreparedQGemm no_kernel = runtime::prepare_qgemm(empty->args);
  EXPECT_EQ(no_kernel.info().kernel, "reference");
  Tensor y0(DType::kFloat32, {3, 4});
  const uint8_t dummy = 0;  // an empty operand's pointer is still required, never read
  no_kernel.run(&dummy, &dummy, empty->c.bytes.data(), y0.bytes.data());
  EXPECT_TRUE(testing::bit_equal(qgemm(empty->args), y0));

  auto q = qgemm_call(DType::kUInt8, DType::kInt8, DType::kUInt8, 4, 5, 8, false, false, {5}, true,
                      false, rng);
  const runtime::PreparedQGemm prepared = runtime::prepare_qgemm(q->args);
  Tensor y(DType::kUInt8, {4, 5});
  auto refused = [](const std::function<void()>& f) {
    return testing::invalid_argument_message(f);
  };
  EXPECT_NE(refused([&] {
              prepared.run(nullptr, q->b.bytes.data(), q->c.bytes.data(), y.bytes.data());
            }).find("A is null"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              prepared.run(q->a.bytes.data(), q->b.bytes.data(), nullptr, y.bytes.data());
            }).find("C is null"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              runtime::PreparedQGemm().run(nullptr, nullptr, nullptr, nullptr);
            }).find("empty PreparedQGemm"),
            std::string::npos);
  const runtime::PackedB pb = runtime::prepack_b(q->args);
  const runtime::PreparedQGemm packed = runtime::prepare_qgemm(q->args, &pb);
  const Tensor other = q->b;
  EXPECT_NE(refused([&] {
              packed.run(q->a.bytes.data(), other.bytes.data(), q->c.bytes.data(), y.bytes.data());
            }).find("not the tensor packed_b was prepacked from"),
            std::string::npos);
  // Validation at preparation, with the reference's sentences; nothing runs.
  Tensor bad(DType::kInt8, {9, 5});
  q->args.b = &bad;
  EXPECT_NE(refused([&] { runtime::prepare_qgemm(q->args); }).find("QGemm"), std::string::npos);
}

// QuantMatmulDequant (dynamic per-token scales, the identities with kernels): every bucket's
// shape class with the data cases that zero rows, saturate, tie and wrap; smoothing or none, both
// weight layouts, a bias or none, with and without a PackedB (its bias fold done once at
// preparation); each preparation run on two x's. The kernel is the plain call's.
TEST(PreparedQuantMatmulDequant, BitExactWithAndWithoutPackedB) {
  std::mt19937_64 rng(testing::variant_seed() + 18);
  int runs = 0, kernel_runs = 0, prepacked_runs = 0;
  const std::vector<tune::QmdCase> cases = {{"decode", 1, 1000, 700, tune::QmdData::kRandom},
                                            {"batch", 16, 600, 530, tune::QmdData::kZeroRows},
                                            {"prefill", 100, 129, 65, tune::QmdData::kSaturate},
                                            {"ties", 7, 50, 40, tune::QmdData::kTies},
                                            {"wrap", 3, 33, 300, tune::QmdData::kWrap}};
  for (const tune::QmdCase& c : cases) {
    for (const bool smooth : {false, true}) {
      for (const bool transpose : {true, false}) {
        tune::QmdInputs in = tune::make_quant_matmul_dequant_inputs(
            {tune::QmdMode::kDynamic, smooth, /*bias=*/true, transpose}, c, rng);
        for (const bool bias : {true, false}) {
          for (const bool prepacked : {false, true}) {
            QuantMatmulDequantArgs args = in.args();
            args.bias = bias ? &in.bias : nullptr;
            const runtime::PackedB pb = prepacked ? runtime::prepack_b(args) : runtime::PackedB();
            const runtime::PreparedQuantMatmulDequant prepared =
                runtime::prepare_quant_matmul_dequant(args, prepacked ? &pb : nullptr);
            DispatchInfo plain;
            if (prepacked) {
              runtime::quant_matmul_dequant(args, pb, &plain);
            } else {
              runtime::quant_matmul_dequant(args, &plain);
            }
            const std::string context =
                c.category + " " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                std::to_string(c.k) + " smooth=" + std::to_string(smooth) +
                " transpose_weight=" + std::to_string(transpose) + " bias=" + std::to_string(bias) +
                " prepacked=" + std::to_string(prepacked) + ": " + prepared.info().kernel + " " +
                prepared.info().reason;
            EXPECT_EQ(prepared.info().kernel, plain.kernel) << context;
            kernel_runs += prepared.info().kernel != "reference";
            prepacked_runs += prepared.info().kernel.find("_prepacked__") != std::string::npos;
            for (int r = 0; r < 2; ++r) {
              if (r == 1) {  // another x on the same preparation
                in.x = tune::make_quant_matmul_dequant_inputs(in.c, c, rng).x;
                args.x = &in.x;
              }
              Tensor y(DType::kFloat16, {c.m, c.n});
              prepared.run(in.x.bytes.data(), in.weight.bytes.data(), y.bytes.data());
              ASSERT_TRUE(testing::bit_equal(quant_matmul_dequant(args), y, context));
              ++runs;
            }
          }
        }
      }
    }
  }
  // Every case has a kernel wherever this build links one for the identities.
  bool linked = false;
  for (const auto& k : runtime::linked_kernel_infos()) linked |= k.op == "QuantMatmulDequant";
  EXPECT_EQ(kernel_runs > 0, linked);
  std::cout << "[prepared] QuantMatmulDequant: " << runs << " runs bit-exact, " << kernel_runs
            << " preparations on a kernel (" << prepacked_runs << " prepacked; level "
            << runtime::kernel_target() << ")\n";
}

TEST(PreparedQuantMatmulDequant, NoKernelAndBadRunsAreRefusedOrExact) {
  std::mt19937_64 rng(testing::variant_seed() + 19);
  auto refused = [](const std::function<void()>& f) {
    return testing::invalid_argument_message(f);
  };
  // Modes without kernels (static scales, the fused int64 weight scale) and K = 0: the reference
  // on the run's data, exactly.
  for (const tune::QmdMode mode :
       {tune::QmdMode::kStaticPerToken, tune::QmdMode::kPerTensor, tune::QmdMode::kFused}) {
    tune::QmdInputs in = tune::make_quant_matmul_dequant_inputs({mode, true, true, true},
                                                                {"static", 4, 30, 20}, rng);
    const runtime::PreparedQuantMatmulDequant p = runtime::prepare_quant_matmul_dequant(in.args());
    Tensor y(DType::kFloat16, {4, 30});
    p.run(in.x.bytes.data(), in.weight.bytes.data(), y.bytes.data());
    EXPECT_TRUE(testing::bit_equal(quant_matmul_dequant(in.args()), y, tune::qmd_mode_name(mode)));
  }
  tune::QmdInputs empty = tune::make_quant_matmul_dequant_inputs(
      {tune::QmdMode::kDynamic, false, true, false}, {"k0", 3, 5, 0}, rng);
  const runtime::PreparedQuantMatmulDequant k0 =
      runtime::prepare_quant_matmul_dequant(empty.args());
  EXPECT_EQ(k0.info().kernel, "reference");
  Tensor y0(DType::kFloat16, {3, 5});
  const uint8_t dummy = 0;  // an empty operand's pointer is still required, never read
  k0.run(&dummy, &dummy, y0.bytes.data());
  EXPECT_TRUE(testing::bit_equal(quant_matmul_dequant(empty.args()), y0, "K = 0"));

  tune::QmdInputs in = tune::make_quant_matmul_dequant_inputs(
      {tune::QmdMode::kDynamic, false, true, true}, {"bad", 4, 40, 24}, rng);
  const runtime::PreparedQuantMatmulDequant prepared =
      runtime::prepare_quant_matmul_dequant(in.args());
  Tensor y(DType::kFloat16, {4, 40});
  EXPECT_NE(refused([&] {
              prepared.run(nullptr, in.weight.bytes.data(), y.bytes.data());
            }).find("x is null"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              prepared.run(in.x.bytes.data(), nullptr, y.bytes.data());
            }).find("weight is null"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              prepared.run(in.x.bytes.data(), in.weight.bytes.data(), nullptr);
            }).find("y is null"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              runtime::PreparedQuantMatmulDequant().run(nullptr, nullptr, nullptr);
            }).find("empty PreparedQuantMatmulDequant"),
            std::string::npos);
  const runtime::PackedB pb = runtime::prepack_b(in.args());
  const runtime::PreparedQuantMatmulDequant packed =
      runtime::prepare_quant_matmul_dequant(in.args(), &pb);
  const Tensor other = in.weight;
  EXPECT_NE(refused([&] {
              packed.run(in.x.bytes.data(), other.bytes.data(), y.bytes.data());
            }).find("not the tensor packed_b was prepacked from"),
            std::string::npos);
  // A PackedB of the other weight layout is refused at preparation, naming both.
  QuantMatmulDequantArgs kn = in.args();
  kn.transpose_weight = false;
  const Tensor weight_kn(DType::kInt8, {24, 40});
  kn.weight = &weight_kn;
  const std::string layout = refused([&] { runtime::prepare_quant_matmul_dequant(kn, &pb); });
  EXPECT_NE(layout.find("transpose_weight=1"), std::string::npos) << layout;
  EXPECT_NE(layout.find("transpose_weight=0"), std::string::npos) << layout;
  // Validation at preparation, with the reference's sentences; nothing runs.
  QuantMatmulDequantArgs bad = in.args();
  const Tensor wrong(DType::kInt8, {41, 24});
  bad.weight = &wrong;
  const std::string message = refused([&] { runtime::prepare_quant_matmul_dequant(bad); });
  EXPECT_NE(message.find("QuantMatmulDequant"), std::string::npos) << message;
  EXPECT_NE(message.find("weight"), std::string::npos) << message;
}

// The plain quantized calls without a DispatchInfo remember their choices per thread, as the plain
// Gemm call does (calls.h, remembered_choice): keyed by what each operator's identity reads, M, N,
// K, the pool's thread count and the allowed level. At every level this CPU runs and `none`, at 1,
// 2 and 1 threads, calls of each operator's variants (types, scale types, requantization modes,
// output kinds, weight layouts) follow one another on each shape, so that a key missing one of
// them would hand a variant another's kernel: each plain call (twice, the second from the memo)
// runs the kernel a call with a DispatchInfo names, and computes the same bits.
TEST(PlainCalls, QuantizedCallsFollowTheThreadCountAndTheLevel) {
  if (runtime::kernel_target() == "none") GTEST_SKIP() << "this build has no kernels";
  std::mt19937_64 rng(testing::variant_seed() + 19);
  std::vector<std::string> caps;
  for (const runtime::KernelLevel& l : runtime::kernel_levels())
    if (l.target == "none" || !cpu_cannot_run(l.target)) caps.push_back(l.target);
  struct Call {
    std::string name;
    std::function<Tensor(DispatchInfo*)> run;
  };
  struct Shape3 {
    int64_t m, n, k;
  };
  const std::vector<Shape3> shapes = {{1, 300, 200}, {16, 64, 64}, {100, 65, 129}};
  int calls = 0, on_kernels = 0;
  const int previous = set_num_threads(1);
  for (const Shape3& sh : shapes) {
    // The operands of every variant on this shape (kept alive for the calls).
    std::vector<std::shared_ptr<void>> keep;
    std::vector<Call> variants;
    for (const auto& [ta, tb, ty, st, mode] :
         std::vector<std::tuple<DType, DType, DType, DType, RequantMode>>{
             {DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, RequantMode::kFloat32},
             {DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, RequantMode::kFloat64},
             {DType::kInt8, DType::kInt8, DType::kInt8, DType::kFloat32, RequantMode::kFloat32},
             {DType::kUInt8, DType::kInt8, DType::kInt8, DType::kFloat32, RequantMode::kFloat32},
             {DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat16,
              RequantMode::kFloat32}}) {
      testing::QlmCase qc;
      qc.name = "plain";
      qc.a = {sh.m, sh.k};
      qc.b = {sh.k, sh.n};
      qc.b_param = {sh.n};
      auto in = std::make_shared<testing::QlmInputs>(
          testing::make_qlinear_matmul_inputs(ta, tb, ty, st, qc, rng));
      keep.push_back(in);
      const QLinearMatMulArgs args = in->args(mode);
      variants.push_back(
          {std::string("QLinearMatMul ") + dtype_name(ta) + "," + dtype_name(tb) + "," +
               dtype_name(ty) + " scales " + dtype_name(st) + " requant " + to_string(mode),
           [args](DispatchInfo* info) { return runtime::qlinear_matmul(args, info); }});
    }
    for (const auto& [ta, tb, ty] :
         std::vector<std::array<DType, 3>>{{DType::kUInt8, DType::kInt8, DType::kFloat32},
                                           {DType::kUInt8, DType::kInt8, DType::kUInt8},
                                           {DType::kInt8, DType::kInt8, DType::kInt8},
                                           {DType::kUInt8, DType::kUInt8, DType::kFloat32}}) {
      std::shared_ptr<QGemmCall> q =
          qgemm_call(ta, tb, ty, sh.m, sh.n, sh.k, false, false, {sh.n}, true, true, rng);
      keep.push_back(q);
      variants.push_back(
          {std::string("QGemm ") + dtype_name(ta) + "," + dtype_name(tb) + "," + dtype_name(ty),
           [q](DispatchInfo* info) { return runtime::qgemm(q->args, info); }});
    }
    for (const bool smooth : {false, true}) {
      for (const bool transpose : {true, false}) {
        const tune::QmdCase c{"plain", sh.m, sh.n, sh.k, tune::QmdData::kRandom};
        auto in = std::make_shared<tune::QmdInputs>(tune::make_quant_matmul_dequant_inputs(
            {tune::QmdMode::kDynamic, smooth, /*bias=*/true, transpose}, c, rng));
        keep.push_back(in);
        const QuantMatmulDequantArgs args = in->args();
        variants.push_back(
            {"QuantMatmulDequant smooth=" + std::to_string(smooth) +
                 " transpose_weight=" + std::to_string(transpose),
             [args](DispatchInfo* info) { return runtime::quant_matmul_dequant(args, info); }});
      }
    }
    for (const std::string& cap : caps) {
      const testing::LevelCap capped(cap);
      for (const int threads : {1, 2, 1}) {
        set_num_threads(threads);
        for (const Call& v : variants) {
          DispatchInfo info;
          const Tensor explained = v.run(&info);
          for (int repeat = 0; repeat < 2; ++repeat) {
            runtime::forget_last_kernel_called();
            const Tensor y = v.run(nullptr);
            const runtime::KernelEntry* ran = runtime::last_kernel_called();
            const std::string where = v.name + " " + std::to_string(sh.m) + "x" +
                                      std::to_string(sh.n) + "x" + std::to_string(sh.k) + " at " +
                                      cap + ", " + std::to_string(threads) + " thread(s), call " +
                                      std::to_string(repeat + 1);
            EXPECT_EQ(ran ? std::string(ran->name) : "reference", info.kernel)
                << where << ": " << info.reason;
            EXPECT_TRUE(testing::bit_equal(explained, y, where));
            ++calls;
            on_kernels += ran != nullptr;
          }
        }
      }
    }
  }
  set_num_threads(previous);
  // A build with quantized kernels ran some of them (the SSE4.1 build has none: every call above
  // took the reference, the memo's choice too).
  bool quantized_linked = false;
  for (const runtime::KernelInfo& k : runtime::linked_kernel_infos())
    quantized_linked |= k.op != "Gemm";
  if (quantized_linked) {
    EXPECT_GT(on_kernels, 0);
  }
  std::cout << "[plain] " << calls << " quantized plain calls without a DispatchInfo ("
            << on_kernels << " on kernels) ran the kernel an explained call names\n";
}

}  // namespace
}  // namespace mmtune
