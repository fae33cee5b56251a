// Eight threads at once, each calling mixed operators through the runtime's AOT kernels and through
// the JIT (compiling distinct kernels concurrently, float8 ones included, whose decode tables are
// shared), every result compared bit for bit with the reference computed in the same thread. The
// `tsan` preset builds this suite with ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "autotune/halide_ops.h"
#include "mmtune/mmtune.h"
#include "reference/codecs.h"
#include "reference/qlinear_matmul.h"
#include "schedules/schedule.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

constexpr int kThreads = 8;

// All threads start their first call together (so that compiles overlap).
class StartLine {
 public:
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (++arrived_ == kThreads) cv_.notify_all();
    cv_.wait(lock, [&] { return arrived_ >= kThreads; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
};

struct Outcome {
  int calls = 0, mismatches = 0;
  std::string first;
};

bool same(const Tensor& a, const Tensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes;
}

Tensor quant(DType t, Shape s, std::mt19937_64& rng) {
  return testing::random_tensor(t, std::move(s), rng, testing::quant_min(t), testing::quant_max(t));
}

// One call of kind `kind` (0..5) with fresh random data; the thread's own schedule draw makes its
// JIT kernels differ from the other threads'.
void one_call(int kind, const schedules::Schedule& schedule, std::mt19937_64& rng, Outcome& out) {
  const int64_t m = 1 + rng() % 20, n = 1 + rng() % 40, k = 1 + rng() % 50;
  Tensor expected, actual;
  const HalideVariant variant{schedule, "host"};
  if (kind <= 1) {  // float32 Gemm: runtime, JIT
    const Tensor a = testing::random_tensor(DType::kFloat32, {m, k}, rng, -2, 2);
    const Tensor b = testing::random_tensor(DType::kFloat32, {k, n}, rng, -2, 2);
    GemmArgs args;
    args.a = &a;
    args.b = &b;
    expected = gemm(args);
    actual = kind == 0 ? runtime::gemm(args) : gemm_halide(args, variant);
  } else if (kind <= 3) {  // u8 x s8 QLinearMatMul: runtime, JIT
    NamedTensors in;
    in["a"] = quant(DType::kUInt8, {m, k}, rng);
    in["b"] = quant(DType::kInt8, {k, n}, rng);
    in["a_scale"] = Tensor::from<float>(DType::kFloat32, {}, {0.02f});
    in["b_scale"] = Tensor::from<float>(DType::kFloat32, {}, {0.03f});
    in["y_scale"] = Tensor::from<float>(DType::kFloat32, {}, {0.5f});
    in["a_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {128});
    in["b_zero_point"] = Tensor::from<int8_t>(DType::kInt8, {}, {-3});
    in["y_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {100});
    expected = run_reference("QLinearMatMul", in, {});
    actual = kind == 2 ? runtime::run("QLinearMatMul", in, {})
                       : run_halide("QLinearMatMul", in, {}, variant);
  } else if (kind == 4) {  // float8 QLinearMatMul through the JIT (shared decode tables)
    NamedTensors in;
    in["a"] = testing::random_tensor(DType::kFloat8E4M3FN, {m, k}, rng, -4, 4);
    in["b"] = testing::random_tensor(DType::kFloat8E5M2, {k, n}, rng, -4, 4);
    in["a_scale"] = Tensor::from<float>(DType::kFloat32, {}, {0.5f});
    in["b_scale"] = Tensor::from<float>(DType::kFloat32, {}, {0.25f});
    in["y_scale"] = Tensor::from<float>(DType::kFloat32, {}, {1.0f});
    in["a_zero_point"] = Tensor(DType::kFloat8E4M3FN, {});
    in["b_zero_point"] = Tensor(DType::kFloat8E5M2, {});
    in["y_zero_point"] = Tensor(DType::kFloat8E4M3FN, {});
    expected = run_reference("QLinearMatMul", in, {});
    // float8 sums are float64: 64-bit lanes, so the thread's 32-bit draw may not fit; the default
    // does.
    actual = run_halide("QLinearMatMul", in, {}, {});
  } else {  // QuantMatmulDequant: runtime (dynamic per token)
    std::vector<uint16_t> x(m * k);
    for (auto& v : x)
      v = float_to_float16(static_cast<float>(static_cast<int>(rng() % 17) - 8) * 0.25f);
    NamedTensors in;
    in["x"] = Tensor::from(DType::kFloat16, {m, k}, x);
    in["weight"] = quant(DType::kInt8, {n, k}, rng);
    in["weight_scale"] = testing::random_tensor(DType::kFloat32, {n}, rng, 0.01, 0.1);
    expected = run_reference("QuantMatmulDequant", in, {});
    actual = runtime::run("QuantMatmulDequant", in, {});
  }
  ++out.calls;
  if (!same(expected, actual)) {
    if (out.mismatches++ == 0) {
      std::ostringstream os;
      os << "kind " << kind << " M=" << m << " N=" << n << " K=" << k;
      out.first = os.str();
    }
  }
}

TEST(Concurrency, MixedOperatorsFromEightThreadsAreBitExact) {
  const schedules::TargetInfo t = schedules::target_info(host_target());
  StartLine start;
  std::vector<Outcome> outcomes(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(testing::variant_seed() + static_cast<uint64_t>(w));
      const schedules::Schedule schedule = schedules::sample("cpu_matmul", t, {32, true}, rng);
      // k_group draws are for exact sums only: the float Gemm calls use the defaults' K grouping.
      const schedules::Schedule float_schedule =
          schedules::sample("cpu_matmul", t, {32, false}, rng);
      start.arrive_and_wait();
      try {
        for (int i = 0; i < 24; ++i) {
          const int kind = (w + i) % 6;
          one_call(kind, kind == 1 ? float_schedule : schedule, rng, outcomes[w]);
        }
      } catch (const std::exception& e) {
        errors[w] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  int calls = 0;
  for (int w = 0; w < kThreads; ++w) {
    EXPECT_EQ(errors[w], "") << "thread " << w;
    EXPECT_EQ(outcomes[w].mismatches, 0) << "thread " << w << ": first " << outcomes[w].first;
    calls += outcomes[w].calls;
  }
  EXPECT_EQ(calls, kThreads * 24);
  std::cout << "[concurrency] " << kThreads << " threads, " << calls
            << " calls (runtime and JIT, mixed operators), all bit-exact; " << jit_cache_size()
            << " JIT kernels compiled concurrently\n";
}

// PackedBs that packed only the decode layout (PrepackOptions{{1}}), of a u8.s8 QLinearMatMul b
// and a float32 Gemm B (strict: the SSE4.1 level, which the TSan build carries, has prepacked
// float32 kernels and no 8-bit ones): eight threads start together and make calls whose kernels
// read the other layouts, so that the first of them race to pack those (under the PackedB's lock),
// while others read bytes() and description(). Every result bit for bit the reference.
TEST(Concurrency, FirstCallsOfALazilyPackedBAreBitExact) {
  std::mt19937_64 rng(testing::variant_seed() + 100);
  const testing::QlmInputs in = testing::random_u8s8_qlm_inputs({100, 200}, {200, 300}, rng);
  const Tensor b = testing::random_tensor(DType::kFloat32, {200, 300}, rng, -2, 2);
  GemmArgs gemm_args;
  gemm_args.b = &b;
  const runtime::PrepackOptions decode{{1}};
  const runtime::PackedB qpb = runtime::prepack_b(in.args(RequantMode::kFloat32), decode);
  const runtime::PackedB gpb = runtime::prepack_b(gemm_args, decode);
  const std::size_t before = qpb.bytes() + gpb.bytes();
  StartLine start;
  std::vector<Outcome> outcomes(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  constexpr int kCalls = 6;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 local(testing::variant_seed() + 200 + static_cast<uint64_t>(w));
      start.arrive_and_wait();
      try {
        for (int i = 0; i < kCalls; ++i) {
          const int64_t m = std::vector<int64_t>{100, 30, 1}[(w + i) % 3];
          bool exact = false;
          if ((w + i) % 2 == 0) {
            QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
            const Tensor a = quant(DType::kUInt8, {m, 200}, local);
            args.a = &a;
            exact = same(qlinear_matmul(args), runtime::qlinear_matmul(args, qpb));
            if (w % 2 == 0) (void)qpb.description();
          } else {
            GemmArgs args = gemm_args;
            const Tensor a = testing::random_tensor(DType::kFloat32, {m, 200}, local, -2, 2);
            args.a = &a;
            exact = same(gemm(args), runtime::gemm(args, gpb));
            if (w % 2 == 0) (void)gpb.description();
          }
          ++outcomes[w].calls;
          if (!exact && outcomes[w].mismatches++ == 0)
            outcomes[w].first = "call " + std::to_string(i) + " M=" + std::to_string(m);
        }
      } catch (const std::exception& e) {
        errors[w] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int w = 0; w < kThreads; ++w) {
    EXPECT_EQ(errors[w], "") << "thread " << w;
    EXPECT_EQ(outcomes[w].mismatches, 0) << "thread " << w << ": first " << outcomes[w].first;
    EXPECT_EQ(outcomes[w].calls, kCalls);
  }
  const std::size_t after = qpb.bytes() + gpb.bytes();
  EXPECT_GE(after, before);
  std::cout << "[concurrency] lazily packed Bs: " << kThreads * kCalls << " calls bit-exact; "
            << before << " bytes packed before, " << after << " after\n";
}

}  // namespace
}  // namespace mmtune
