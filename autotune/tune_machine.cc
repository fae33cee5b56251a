// Peak FLOP/s (an FMA throughput loop at the widest vector the CPU runs) and memory bandwidth
// (STREAM triad), each at a few thread counts.
#include "autotune/tune_machine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "autotune/tune_timing.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace mmtune::tune {
namespace {

using Clock = std::chrono::steady_clock;

// Independent accumulators of the FMA loop: more than latency (4-5 cycles) x ports (2) on every
// x86-64 core since Haswell, and few enough to stay in the 16 vector registers of AVX2.
constexpr int kAccumulators = 12;

// One run of `iters` iterations; each updates every accumulator with one multiply-add per lane.
// Returns a value depending on all of them (so that nothing is optimized away).
using FmaLoop = float (*)(int64_t iters);

// The accumulators' first value, unknown to the compiler: from a constant, it would find that an
// update leaves a value unchanged (a fixed point in float32) and drop the loop.
volatile float g_start = 1.0f;

// The loop of every vector ISA: kAccumulators vectors of type V, each updated `iters` times by
// UPDATE(x, mul, add), then summed (SET1 broadcasts a float, ADD adds two vectors, STORE writes
// LANES floats). A macro, since each ISA's copy must be compiled for its target.
#define MMTUNE_PEAK_LOOP(V, LANES, SET1, UPDATE, ADD, STORE)                      \
  V x[kAccumulators];                                                             \
  const float start = g_start;                                                    \
  for (int j = 0; j < kAccumulators; ++j) x[j] = SET1(start + 0.001f * float(j)); \
  const V mul = SET1(0.9999999f), add = SET1(1e-7f);                              \
  for (int64_t i = 0; i < iters; ++i) {                                           \
    _Pragma("GCC unroll 16") for (int j = 0; j < kAccumulators; ++j) x[j] =       \
        UPDATE(x[j], mul, add);                                                   \
  }                                                                               \
  for (int j = 1; j < kAccumulators; ++j) x[0] = ADD(x[0], x[j]);                 \
  alignas(64) float out[LANES];                                                   \
  STORE(out, x[0]);                                                               \
  return out[0] + out[(LANES)-1]

#if defined(__x86_64__) || defined(__i386__)

__attribute__((target("avx512f"))) float fma_avx512(int64_t iters) {
  MMTUNE_PEAK_LOOP(__m512, 16, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_storeu_ps);
}

__attribute__((target("avx2,fma"))) float fma_avx2(int64_t iters) {
  MMTUNE_PEAK_LOOP(__m256, 8, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_storeu_ps);
}

// Without FMA: a multiply and an add per lane (the two ports of those cores).
__attribute__((target("avx"))) inline __m256 avx_mul_add(__m256 x, __m256 m, __m256 a) {
  return _mm256_add_ps(_mm256_mul_ps(x, m), a);
}
__attribute__((target("avx"))) float mul_add_avx(int64_t iters) {
  MMTUNE_PEAK_LOOP(__m256, 8, _mm256_set1_ps, avx_mul_add, _mm256_add_ps, _mm256_storeu_ps);
}

inline __m128 sse_mul_add(__m128 x, __m128 m, __m128 a) { return _mm_add_ps(_mm_mul_ps(x, m), a); }
float mul_add_sse(int64_t iters) {
  MMTUNE_PEAK_LOOP(__m128, 4, _mm_set1_ps, sse_mul_add, _mm_add_ps, _mm_storeu_ps);
}

#elif defined(__aarch64__)

inline float32x4_t neon_fma(float32x4_t x, float32x4_t m, float32x4_t a) {
  return vfmaq_f32(a, x, m);
}
float fma_neon(int64_t iters) {
  MMTUNE_PEAK_LOOP(float32x4_t, 4, vdupq_n_f32, neon_fma, vaddq_f32, vst1q_f32);
}

#else

float mul_add_scalar(int64_t iters) {
  float x[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) x[j] = g_start + 0.001f * float(j);
  for (int64_t i = 0; i < iters; ++i) {
    for (float& v : x) v = v * 0.9999999f + 1e-7f;
  }
  float s = 0;
  for (float v : x) s += v;
  return s;
}

#endif
#undef MMTUNE_PEAK_LOOP

struct Kernel {
  const char* name;
  int bits;    // vector width
  bool fused;  // one fused multiply-add per update, else a multiply and an add
  FmaLoop loop;
};

// The widest loop this CPU runs.
Kernel widest_kernel() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512f", 512, true, fma_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {"avx2+fma", 256, true, fma_avx2};
  if (__builtin_cpu_supports("avx")) return {"avx", 256, false, mul_add_avx};
  return {"sse2", 128, false, mul_add_sse};
#elif defined(__aarch64__)
  return {"neon", 128, true, fma_neon};
#else
  return {"scalar", 32, false, mul_add_scalar};
#endif
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Runs body(0..n-1) on n threads (the caller's is thread 0) and returns the seconds from the
// moment all of them were ready until the last one finished (thread start-up not counted).
double timed_parallel(int n, const std::function<void(int)>& body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n - 1));
  for (int t = 1; t < n; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      body(t);
    });
  }
  while (ready.load() < n - 1) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true);
  body(0);
  for (std::thread& th : threads) th.join();
  return seconds_since(t0);
}

std::atomic<float> g_sink{0};  // the FMA loops' results go here

double peak_flops(const Kernel& k, int threads, int64_t iters) {
  // A multiply-add per lane and update: 2 FLOPs, fused or not.
  const int lanes = k.bits / 32;
  const double flops_per_run = 2.0 * double(threads) * double(iters) * kAccumulators * lanes;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double s = timed_parallel(threads, [&](int) { g_sink.store(k.loop(iters)); });
    if (s > 0) best = std::max(best, flops_per_run / s);
  }
  return best;
}

// The triad's arrays, first touched by the threads that use them (their pages on their nodes).
struct Triad {
  int64_t n = 0;
  std::unique_ptr<double[]> a, b, c;
  static void range(int64_t n, int threads, int t, int64_t& lo, int64_t& hi) {
    lo = n * t / threads;
    hi = n * (t + 1) / threads;
  }
  void init(int threads) {
    (void)timed_parallel(threads, [&](int t) {
      int64_t lo = 0, hi = 0;
      range(n, threads, t, lo, hi);
      for (int64_t i = lo; i < hi; ++i) {
        a[i] = 0;
        b[i] = 1;
        c[i] = 2;
      }
    });
  }
  double pass(int threads) {
    return timed_parallel(threads, [&](int t) {
      int64_t lo = 0, hi = 0;
      range(n, threads, t, lo, hi);
      double* __restrict pa = a.get();
      const double* __restrict pb = b.get();
      const double* __restrict pc = c.get();
      for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.0 * pc[i];
    });
  }
};

}  // namespace

nlohmann::json measure_machine(const std::vector<int>& threads) {
  const auto start = Clock::now();
  const std::set<int> counts(threads.begin(), threads.end());
  const Kernel k = widest_kernel();
  // Calibration: iterations for about 20 ms on one thread.
  int64_t iters = 1 << 14;
  for (;;) {
    const auto t0 = Clock::now();
    g_sink.store(k.loop(iters));
    const double s = seconds_since(t0);
    if (s >= 0.002 || iters >= (int64_t{1} << 30)) {
      iters = std::max<int64_t>(1, static_cast<int64_t>(double(iters) * 0.02 / std::max(s, 1e-9)));
      break;
    }
    iters *= 8;
  }
  nlohmann::json peak = nlohmann::json::array(), bandwidth = nlohmann::json::array();
  for (int t : counts) {
    if (t >= 1) peak.push_back({{"threads", t}, {"flops", peak_flops(k, t, iters)}});
  }
  const int64_t llc = last_level_cache_bytes();
  Triad triad;
  triad.n = std::max<int64_t>(2 * llc, int64_t{16} << 20);
  triad.n = std::min<int64_t>(triad.n, int64_t{512} << 20) / int64_t{sizeof(double)};
  triad.a.reset(new double[static_cast<std::size_t>(triad.n)]);
  triad.b.reset(new double[static_cast<std::size_t>(triad.n)]);
  triad.c.reset(new double[static_cast<std::size_t>(triad.n)]);
  triad.init(counts.empty() ? 1 : *counts.rbegin());
  const double bytes = 3.0 * double(sizeof(double)) * double(triad.n);
  for (int t : counts) {
    if (t < 1) continue;
    (void)triad.pass(t);  // warm-up
    double best = 0;
    for (int rep = 0; rep < 4; ++rep) {
      const double s = triad.pass(t);
      if (s > 0) best = std::max(best, bytes / s);
    }
    bandwidth.push_back({{"threads", t}, {"bytes_per_s", best}});
  }
  std::ostringstream method;
  method << "peak: float32 " << (k.fused ? "fused multiply-adds" : "multiplies and adds") << " on "
         << kAccumulators << " independent " << k.bits << "-bit accumulators (" << k.name
         << "), best of 5 runs of " << iters << " iterations; bandwidth: STREAM triad over 3 x "
         << (triad.n * int64_t{sizeof(double)} >> 20) << " MiB (last-level cache " << (llc >> 20)
         << " MiB), 24 bytes per element, best of 4 passes";
  return {{"vector", k.name},
          {"vector_bits", k.bits},
          {"accumulators", kAccumulators},
          {"peak", peak},
          {"bandwidth", bandwidth},
          {"llc_bytes", llc},
          {"triad_bytes", int64_t{3} * triad.n * int64_t{sizeof(double)}},
          {"seconds", seconds_since(start)},
          {"method", method.str()}};
}

double machine_figure(const nlohmann::json& machine, const char* key, const char* field,
                      int threads) {
  if (!machine.is_object() || !machine.contains(key) || !machine[key].is_array()) return 0;
  double at_threads = 0, at_most = 0;
  int most = 0;
  for (const nlohmann::json& e : machine[key]) {
    if (!e.is_object() || !e.contains(field) || !e[field].is_number()) continue;
    const int t = e.value("threads", 0);
    const double v = e[field].get<double>();
    if (t == threads) at_threads = v;
    if (t >= most) {
      most = t;
      at_most = v;
    }
  }
  return at_threads > 0 ? at_threads : at_most;
}

}  // namespace mmtune::tune
