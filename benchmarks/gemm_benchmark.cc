// Gemm float32 through mmtune's in-process JIT (strict and fma contracts) against OpenBLAS and
// oneDNN, and QLinearMatMul u8 x s8 -> u8 against oneDNN's u8s8s32 GEMM, in the same process, per
// named shape (benchmarks/shapes/*.txt) and thread count. Rates are Google Benchmark counters
// (FLOPS, OPS); every float implementation's output is checked against a float64 dot product on
// sampled elements before it is timed (mmtune's int8 rows against the reference, exactly), and a
// wrong result fails the run. oneDNN's int8 result is only counted (`mismatches`): it is not exact
// on every CPU.
//
// Own flags (the rest are Google Benchmark's):
//   --mm_shapes=FILE[,FILE]   shape lists (default: shapes/squares.txt and shapes/llm.txt)
//   --mm_shape=name:M,N,K     an extra shape (repeatable); alone, it replaces the default lists
//   --mm_threads=1,2          thread counts (every library's pool is set to each in turn)
//   --mm_impls=a,b            mmtune_strict, mmtune_fma, openblas, onednn, mmtune_u8s8,
//                             onednn_u8s8 (the default), and mmtune_strict_raw, mmtune_fma_raw:
//                             the compiled kernel called directly with a preallocated output,
//                             without gemm_halide's checks
//   --mm_params=k=v,...       mmtune schedule parameters instead of the tuned table (repeatable;
//                             unset keys keep CpuMatmulParams' defaults); names get "@<tag>"
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "autotune/blas.h"
#include "autotune/halide_jit.h"
#include "autotune/halide_ops.h"
#include "autotune/shape_list.h"
#include "benchmarks/anchors.h"
#include "benchmarks/thread_usage.h"
#include "benchmarks/tuned_params.h"
#include "reference/qlinear_matmul.h"
#include "runtime/host/buffer_view.h"
#include "schedules/schedule.h"

namespace mmtune::bench {
namespace {

using schedules::CpuMatmulParams;

struct Options {
  std::vector<NamedShape> shapes;
  std::vector<int> threads{1, 2};
  std::vector<std::string> impls{"mmtune_strict", "mmtune_fma",  "openblas",
                                 "onednn",        "mmtune_u8s8", "onednn_u8s8"};
  std::vector<CpuMatmulParams> params;  // empty: the tuned table
};

// Benchmarks that failed (wrong result, unusable thread control, exception): main's exit status.
std::atomic<int> g_failures{0};

void fail(benchmark::State& state, const std::string& why) {
  ++g_failures;
  state.SkipWithError(why.c_str());
}

// Inputs in [-1, 1] from a fixed-seed xorshift: cheap enough for the 180 MB B of the largest shape.
void fill_uniform(float* p, int64_t count, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < count; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<float>(static_cast<double>(x >> 11) * 0x1.0p-52 - 1.0);
  }
}

struct F32Inputs {
  NamedShape shape;
  Tensor a, b;
};

// The inputs of the most recent shape: Google Benchmark calls a benchmark once per repetition (and
// more while it sizes the iteration count), and the benchmarks are registered shape-innermost.
const F32Inputs& f32_inputs(const NamedShape& s) {
  static std::unique_ptr<F32Inputs> cached;
  if (!cached || cached->shape.m != s.m || cached->shape.n != s.n || cached->shape.k != s.k) {
    cached.reset();  // free the previous shape's buffers first
    auto in = std::make_unique<F32Inputs>();
    in->shape = s;
    in->a = Tensor(DType::kFloat32, {s.m, s.k});
    in->b = Tensor(DType::kFloat32, {s.k, s.n});
    fill_uniform(in->a.data<float>(), s.m * s.k, 1);
    fill_uniform(in->b.data<float>(), s.k * s.n, 2);
    cached = std::move(in);
  }
  return *cached;
}

// Samples 64 outputs (corners included) against a float64 dot product. Any float32 summation order
// is within gamma_K * sum|a*b| (gamma_K ~ K * 2^-24) of it; the bound allows twice that.
std::optional<std::string> check_f32(const F32Inputs& in, const float* y) {
  const int64_t m = in.shape.m, n = in.shape.n, k = in.shape.k;
  const float* a = in.a.data<float>();
  const float* b = in.b.data<float>();
  uint64_t x = 12345;
  for (int s = 0; s < 64; ++s) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    int64_t i = static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(m));
    int64_t j = static_cast<int64_t>((x >> 13) % static_cast<uint64_t>(n));
    if (s == 0) i = 0, j = 0;
    if (s == 1) i = m - 1, j = n - 1;
    double ref = 0, mag = 0;
    for (int64_t r = 0; r < k; ++r) {
      const double p = static_cast<double>(a[i * k + r]) * static_cast<double>(b[r * n + j]);
      ref += p;
      mag += std::fabs(p);
    }
    const double got = y[i * n + j];
    const double tol = 2.0 * static_cast<double>(k + 2) * 0x1.0p-24 * mag;
    if (!(std::fabs(got - ref) <= tol)) {
      std::ostringstream os;
      os << "wrong result at (" << i << ", " << j << "): " << got << ", float64 reference " << ref
         << ", tolerance " << tol;
      return os.str();
    }
  }
  return std::nullopt;
}

// Sets every pool to `threads` and checks that the library the benchmark runs reports it. On a
// change of library it first ends OpenBLAS's workers (blas::openblas_end_workers: they can spin
// on) and waits a little: OpenMP's idle workers spin for a while after a call before they sleep,
// and would compete with the next library's threads.
bool set_threads(benchmark::State& state, const std::string& lib, int threads) {
  static std::string last_lib;
  if (lib != last_lib) {
    if (last_lib == "openblas") blas::openblas_end_workers();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    last_lib = lib;
  }
  set_all_threads(threads);
  const ThreadCounts t = thread_counts();
  const int got = lib == "halide" ? t.halide : lib == "openblas" ? t.openblas : t.openmp;
  state.counters["pool_threads"] = got;
  if (got != threads) {
    fail(state, lib + " reports " + std::to_string(got) + " threads after setting " +
                    std::to_string(threads));
    return false;
  }
  return true;
}

// The result of each benchmark is checked once per process.
bool first_time(const std::string& name) {
  static std::set<std::string> seen;
  return seen.insert(name).second;
}

// The rate, and how many threads of the process worked while the loop ran (should equal the
// thread count the benchmark set).
void set_counters(benchmark::State& state, const NamedShape& s,
                  const std::map<int, uint64_t>& cpu_before) {
  state.counters["FLOPS"] =
      benchmark::Counter(s.flops(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["busy_threads"] = busy_threads(cpu_before, thread_cpu_ns());
}

// The schedule tag of a benchmark's params on this host (32-bit accumulators).
std::string tag_of(const CpuMatmulParams& p, bool exact) {
  return schedules::Schedule(p).tag(schedules::target_info(host_target()), {32, exact});
}

struct MmtuneCase {
  std::string name;  // the benchmark's
  NamedShape shape;
  int threads = 1;
  FloatContract contract = FloatContract::kStrict;
  CpuMatmulParams params;
  bool raw = false;  // call the compiled kernel directly
};

void bench_mmtune(benchmark::State& state, const MmtuneCase& c) {
  const F32Inputs& in = f32_inputs(c.shape);
  GemmArgs args;
  args.a = &in.a;
  args.b = &in.b;
  args.contract = c.contract;
  const HalideVariant variant{schedules::Schedule(c.params), "host"};
  state.SetLabel(tag_of(c.params, false));
  std::map<int, uint64_t> cpu_before;
  try {
    // The pool is sized before the first call (see prime_halide_pool), which compiles the kernel
    // (once per process, outside the timed loop) and warms up.
    if (!set_threads(state, "halide", c.threads)) return;
    Tensor y = gemm_halide(args, variant);
    if (first_time(c.name)) {
      if (auto why = check_f32(in, y.data<float>())) return fail(state, *why);
    }
    cpu_before = thread_cpu_ns();
    if (!c.raw) {
      for (auto _ : state) {
        Tensor out = gemm_halide(args, variant);
        benchmark::DoNotOptimize(out.bytes.data());
      }
    } else {
      const KernelKey key = kernel_key(gemm_identity(args), variant);
      Halide::Callable kernel = jit::compile(key, variant.target);
      const Tensor dummy(DType::kFloat32, {});
      auto a = view(in.a, in.a.shape);
      auto b = view(in.b, in.b.shape);
      auto no_c = view(dummy, {1, 1});
      auto out = view(y, y.shape);
      jit::ErrorContext ctx;
      for (auto _ : state) {
        const int rc = kernel(ctx.get(), a, b, no_c, 1.0f, 0.0f, out);
        if (rc != 0)
          return fail(state, "kernel returned " + std::to_string(rc) + ": " + ctx.message);
        benchmark::ClobberMemory();
      }
    }
  } catch (const std::exception& e) {
    return fail(state, e.what());
  }
  set_counters(state, c.shape, cpu_before);
}

void bench_anchor(benchmark::State& state, const std::string& name, const NamedShape& s,
                  int threads, const std::string& impl) {
  const F32Inputs& in = f32_inputs(s);
  Tensor y(DType::kFloat32, {s.m, s.n});
  std::map<int, uint64_t> cpu_before;
  auto run = [&] {
    if (impl == "openblas") {
      blas::openblas_sgemm(s.m, s.n, s.k, in.a.data<float>(), in.b.data<float>(), y.data<float>());
    } else {
      blas::onednn_sgemm(s.m, s.n, s.k, in.a.data<float>(), in.b.data<float>(), y.data<float>());
    }
  };
  try {
    if (!set_threads(state, impl == "openblas" ? "openblas" : "openmp", threads)) return;
    run();  // warm-up: spins up the library's threads
    if (first_time(name)) {
      if (auto why = check_f32(in, y.data<float>())) return fail(state, *why);
    }
    cpu_before = thread_cpu_ns();
    for (auto _ : state) {
      run();
      benchmark::ClobberMemory();
    }
  } catch (const std::exception& e) {
    return fail(state, e.what());
  }
  set_counters(state, s, cpu_before);
}

// QLinearMatMul u8 x s8 -> u8 with scalar scales and zero points, as named tensors (the inputs of
// run_halide). Scales keep typical outputs inside the u8 range.
struct U8S8Inputs {
  NamedShape shape;
  NamedTensors in;
};

template <class T>
void fill_ints(T* p, int64_t count, uint64_t seed, int lo, int hi) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < count; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<T>(lo + static_cast<int>((x >> 20) % static_cast<uint64_t>(hi - lo + 1)));
  }
}

const U8S8Inputs& u8s8_inputs(const NamedShape& s) {
  static std::unique_ptr<U8S8Inputs> cached;
  if (!cached || cached->shape.m != s.m || cached->shape.n != s.n || cached->shape.k != s.k) {
    cached.reset();
    auto in = std::make_unique<U8S8Inputs>();
    in->shape = s;
    Tensor a(DType::kUInt8, {s.m, s.k}), b(DType::kInt8, {s.k, s.n});
    fill_ints(a.data<uint8_t>(), s.m * s.k, 3, 0, 255);
    fill_ints(b.data<int8_t>(), s.k * s.n, 4, -128, 127);
    const float a_scale = 0.02f, b_scale = 0.01f;
    // |acc| is about sqrt(K) * 74 * 74 for these ranges: map that to about 40 steps of y.
    const float y_scale = a_scale * b_scale * 74.0f * 74.0f *
                          static_cast<float>(std::sqrt(static_cast<double>(s.k))) / 40.0f;
    in->in["a"] = std::move(a);
    in->in["b"] = std::move(b);
    in->in["a_scale"] = Tensor::from<float>(DType::kFloat32, {}, {a_scale});
    in->in["b_scale"] = Tensor::from<float>(DType::kFloat32, {}, {b_scale});
    in->in["y_scale"] = Tensor::from<float>(DType::kFloat32, {}, {y_scale});
    in->in["a_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {128});
    in->in["b_zero_point"] = Tensor::from<int8_t>(DType::kInt8, {}, {0});
    in->in["y_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {128});
    cached = std::move(in);
  }
  return *cached;
}

void set_ops(benchmark::State& state, const NamedShape& s,
             const std::map<int, uint64_t>& cpu_before) {
  state.counters["OPS"] =
      benchmark::Counter(s.flops(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["busy_threads"] = busy_threads(cpu_before, thread_cpu_ns());
}

// Rows 0..3 and the last four against the reference: each output row depends only on its row of a
// (scalar scales and zero points), so a slice of a gives the reference rows cheaply.
std::optional<std::string> check_u8s8(const U8S8Inputs& in, const Tensor& y) {
  const NamedShape& s = in.shape;
  const int64_t rows = std::min<int64_t>(s.m, 4);
  for (int64_t first : {int64_t{0}, s.m - rows}) {
    NamedTensors sub = in.in;
    Tensor a_rows(DType::kUInt8, {rows, s.k});
    std::memcpy(a_rows.bytes.data(), in.in.at("a").bytes.data() + first * s.k,
                static_cast<std::size_t>(rows * s.k));
    sub["a"] = std::move(a_rows);
    const Tensor ref = run_reference("QLinearMatMul", sub, {});
    for (int64_t i = 0; i < rows * s.n; ++i) {
      const uint8_t want = ref.data<uint8_t>()[i], got = y.data<uint8_t>()[first * s.n + i];
      if (want != got) {
        std::ostringstream os;
        os << "QLinearMatMul output (" << first + i / s.n << ", " << i % s.n << ") is " << int(got)
           << ", the reference gives " << int(want);
        return os.str();
      }
    }
  }
  return std::nullopt;
}

void bench_mmtune_u8s8(benchmark::State& state, const std::string& name, const NamedShape& s,
                       int threads, const CpuMatmulParams& params) {
  const U8S8Inputs& in = u8s8_inputs(s);
  const HalideVariant variant{schedules::Schedule(params), "host"};
  state.SetLabel(tag_of(params, true));
  std::map<int, uint64_t> cpu_before;
  try {
    // main() made Halide's runtime exist, so the pool is sized before the first call, which
    // compiles the kernel (outside the timed loop) and runs it.
    if (!set_threads(state, "halide", threads)) return;
    Tensor y = run_halide("QLinearMatMul", in.in, {}, variant);
    if (first_time(name)) {
      if (auto why = check_u8s8(in, y)) return fail(state, *why);
    }
    cpu_before = thread_cpu_ns();
    for (auto _ : state) {
      Tensor out = run_halide("QLinearMatMul", in.in, {}, variant);
      benchmark::DoNotOptimize(out.bytes.data());
    }
  } catch (const std::exception& e) {
    return fail(state, e.what());
  }
  set_ops(state, s, cpu_before);
}

// oneDNN's u8 x s8 -> s32 GEMM with a's zero point as its offset: the integer part of the same
// work, without the requantization. Without VNNI, oneDNN sums u8*s8 pairs in saturating int16
// (vpmaddubsw) and is not exact; `mismatches` counts wrong sampled sums (0 = exact on these).
void bench_onednn_u8s8(benchmark::State& state, const std::string& name, const NamedShape& s,
                       int threads) {
  const U8S8Inputs& in = u8s8_inputs(s);
  const uint8_t* a = in.in.at("a").data<uint8_t>();
  const int8_t* b = in.in.at("b").data<int8_t>();
  const uint8_t a_zero = 128;
  Tensor c(DType::kInt32, {s.m, s.n});
  std::map<int, uint64_t> cpu_before;
  try {
    if (!set_threads(state, "openmp", threads)) return;
    blas::onednn_gemm_u8s8s32(s.m, s.n, s.k, a, a_zero, b, 0, c.data<int32_t>());
    // Checked once per process, reported in every run of the benchmark.
    static std::map<std::string, double> mismatches;
    if (first_time(name)) {
      int wrong = 0;
      uint64_t x = 777;
      for (int t = 0; t < 256; ++t) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const int64_t i = static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(s.m));
        const int64_t j = static_cast<int64_t>((x >> 13) % static_cast<uint64_t>(s.n));
        int64_t want = 0;
        for (int64_t r = 0; r < s.k; ++r)
          want += (int64_t{a[i * s.k + r]} - a_zero) * b[r * s.n + j];
        wrong += want != c.data<int32_t>()[i * s.n + j];
      }
      mismatches[name] = wrong / 256.0;
    }
    state.counters["mismatches"] = mismatches[name];
    cpu_before = thread_cpu_ns();
    for (auto _ : state) {
      blas::onednn_gemm_u8s8s32(s.m, s.n, s.k, a, a_zero, b, 0, c.data<int32_t>());
      benchmark::ClobberMemory();
    }
  } catch (const std::exception& e) {
    return fail(state, e.what());
  }
  set_ops(state, s, cpu_before);
}

// Google Benchmark's options for every benchmark here: the libraries run their own threads, so wall
// time is what counts; cpu_time becomes the whole process's, and cpu_time / real_time shows how
// many threads were busy.
void common_options(benchmark::internal::Benchmark* b) {
  b->UseRealTime()->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
}

// Registration order is the run order: thread counts ascending, outermost, because Halide's pool
// never retires a worker: halide_set_num_threads() only bounds how many are spawned, and a worker
// spawned for a 2-thread run keeps taking tasks after the count is set back to 1 (the busy_threads
// counter shows it). Then one library at a time, so that a pool spinning after its last call rarely
// overlaps another library's measurement.
void register_all(const Options& opt) {
  const schedules::TargetInfo ti = schedules::target_info(host_target());
  for (int threads : opt.threads) {
    for (const std::string& impl : opt.impls) {
      for (const NamedShape& s : opt.shapes) {
        const std::string suffix = "/" + s.name + "/threads:" + std::to_string(threads);
        if (impl == "mmtune_u8s8" || impl == "onednn_u8s8") {
          const std::string base = "qlinear_matmul_u8s8u8/";
          if (impl == "onednn_u8s8") {
            const std::string name = base + "onednn_s32" + suffix;
            common_options(benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
              bench_onednn_u8s8(st, name, s, threads);
            }));
            continue;
          }
          std::vector<std::pair<std::string, CpuMatmulParams>> sets;
          if (opt.params.empty()) sets.push_back({"", tuned_u8s8_params(ti, s.m, s.n, s.k)});
          for (const CpuMatmulParams& p : opt.params)
            sets.push_back({"@" + tag_of(p, p.k_group > 1), p});
          for (const auto& set : sets) {
            const std::string name = base + "mmtune" + set.first + suffix;
            const CpuMatmulParams params = set.second;
            common_options(benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
              bench_mmtune_u8s8(st, name, s, threads, params);
            }));
          }
          continue;
        }
        if (impl == "openblas" || impl == "onednn") {
          const std::string name = "gemm_f32/" + impl + suffix;
          common_options(benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
            bench_anchor(st, name, s, threads, impl);
          }));
          continue;
        }
        MmtuneCase c;
        c.shape = s;
        c.threads = threads;
        c.contract =
            impl.find("strict") != std::string::npos ? FloatContract::kStrict : FloatContract::kFma;
        c.raw = impl.size() > 4 && impl.compare(impl.size() - 4, 4, "_raw") == 0;
        std::vector<std::pair<std::string, CpuMatmulParams>> sets;
        if (opt.params.empty())
          sets.push_back({"", tuned_f32_params(ti, s.m, s.n, s.k, c.contract)});
        for (const CpuMatmulParams& p : opt.params) {
          if (p.k_group == 1)
            sets.push_back({"@" + tag_of(p, p.k_group > 1), p});  // grouped K: integer sums only
        }
        for (const auto& [tag, params] : sets) {
          c.params = params;
          c.name = "gemm_f32/" + impl + tag + suffix;
          common_options(benchmark::RegisterBenchmark(
              c.name.c_str(), [=](benchmark::State& st) { bench_mmtune(st, c); }));
        }
      }
    }
  }
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

CpuMatmulParams parse_params(const std::string& spec) {
  std::map<std::string, std::string> gp;
  for (const std::string& kv : split(spec, ',')) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos)
      invalid("benchmark", "--mm_params item '", kv, "' is not key=value");
    gp[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // Unknown keys are refused, naming the template's knobs.
  const CpuMatmulParams p = CpuMatmulParams::knobs().from_generator_params(gp);
  if (auto why = p.validate(schedules::target_info(host_target()), {32, /*exact=*/p.k_group > 1})) {
    invalid("benchmark", "--mm_params=", spec, ": ", *why);
  }
  return p;
}

// Takes this file's --mm_* flags out of argv (Google Benchmark rejects flags it does not know).
Options parse_own_flags(int& argc, char** argv) {
  Options opt;
  std::vector<std::string> shape_files;
  std::vector<NamedShape> extra;
  bool files_given = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> std::optional<std::string> {
      if (arg.rfind(flag + "=", 0) == 0) return arg.substr(flag.size() + 1);
      return std::nullopt;
    };
    if (auto v = value("--mm_shapes")) {
      files_given = true;
      for (const std::string& f : split(*v, ',')) shape_files.push_back(f);
    } else if (auto v = value("--mm_shape")) {
      extra.push_back(parse_shape(*v));
    } else if (auto v = value("--mm_threads")) {
      opt.threads.clear();
      for (const std::string& t : split(*v, ',')) {
        const int n = std::atoi(t.c_str());
        if (n < 1) invalid("benchmark", "--mm_threads item '", t, "' is not a positive integer");
        opt.threads.push_back(n);
      }
      std::sort(opt.threads.begin(), opt.threads.end());  // see register_all
      opt.threads.erase(std::unique(opt.threads.begin(), opt.threads.end()), opt.threads.end());
    } else if (auto v = value("--mm_impls")) {
      static const std::set<std::string> impls = {
          "mmtune_strict", "mmtune_fma", "mmtune_strict_raw", "mmtune_fma_raw",
          "openblas",      "onednn",     "mmtune_u8s8",       "onednn_u8s8"};
      opt.impls = split(*v, ',');
      for (const std::string& impl : opt.impls) {
        if (!impls.count(impl))
          invalid("benchmark", "--mm_impls item '", impl, "' is not an implementation");
      }
    } else if (auto v = value("--mm_params")) {
      opt.params.push_back(parse_params(*v));
    } else if (arg.rfind("--mm_", 0) == 0) {
      invalid("benchmark", "unknown flag ", arg);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (!files_given && extra.empty()) {
    shape_files = {std::string(MMTUNE_BENCH_SHAPES_DIR) + "/squares.txt",
                   std::string(MMTUNE_BENCH_SHAPES_DIR) + "/llm.txt"};
  }
  for (const std::string& f : shape_files) {
    for (const NamedShape& s : read_shape_list(f)) opt.shapes.push_back(s);
  }
  opt.shapes.insert(opt.shapes.end(), extra.begin(), extra.end());
  return opt;
}

// Halide's JIT runtime, whose pool size set_all_threads() sets, exists only once a kernel has been
// compiled, and the pool never shrinks once it has run a parallel loop (see register_all). So a
// serial 1x1x1 Gemm brings the runtime up with no worker spawned, and the pool is sized to the
// smallest thread count before any benchmark runs.
void prime_halide_pool(int threads) {
  const Tensor one = Tensor::from<float>(DType::kFloat32, {1, 1}, {1.0f});
  GemmArgs args;
  args.a = &one;
  args.b = &one;
  CpuMatmulParams serial;
  serial.tile_rows = 1;
  serial.tile_vectors = 1;
  serial.n_block = 0;
  serial.pack_b = false;
  serial.parallel = false;
  gemm_halide(args, HalideVariant{schedules::Schedule(serial), "host"});
  set_all_threads(threads);
}

// What a reader of the JSON needs to interpret it: the libraries' builds, kernels and the
// parameters of every mmtune benchmark.
void add_context(const Options& opt) {
  const schedules::TargetInfo ti = schedules::target_info(host_target());
  benchmark::AddCustomContext("openblas", blas::openblas_info());
  benchmark::AddCustomContext("onednn", blas::onednn_info());
  benchmark::AddCustomContext("halide_target", host_target());
  for (const char* var :
       {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "HL_NUM_THREADS"}) {
    const char* v = std::getenv(var);
    benchmark::AddCustomContext(std::string("env_") + var, v ? v : "(unset)");
  }
  nlohmann::json params = nlohmann::json::object();
  nlohmann::json shapes = nlohmann::json::object();
  for (const NamedShape& s : opt.shapes) {
    shapes[s.name] = {s.m, s.n, s.k};
    for (FloatContract contract : {FloatContract::kStrict, FloatContract::kFma}) {
      nlohmann::json p = schedules::Schedule(tuned_f32_params(ti, s.m, s.n, s.k, contract));
      p["shape_class"] = shape_class(s.m, s.n, s.k);
      params[s.name][to_string(contract)] = p;
    }
    nlohmann::json q = schedules::Schedule(tuned_u8s8_params(ti, s.m, s.n, s.k));
    q["shape_class"] = shape_class(s.m, s.n, s.k);
    params[s.name]["u8s8"] = q;
  }
  benchmark::AddCustomContext("mmtune_tuned_params", params.dump());
  benchmark::AddCustomContext("shapes", shapes.dump());
}

}  // namespace
}  // namespace mmtune::bench

namespace {

int run_benchmarks(int argc, char** argv) {
  using namespace mmtune::bench;
  Options opt;
  try {
    opt = parse_own_flags(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  try {
    prime_halide_pool(opt.threads.front());
  } catch (const std::exception& e) {
    std::cerr << "mmtune_gemm_benchmark: Halide's runtime did not come up: " << e.what() << "\n";
    return 1;
  }
  register_all(opt);
  add_context(opt);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (g_failures > 0) {
    std::cerr << g_failures << " benchmark(s) failed\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_benchmarks(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "mmtune_gemm_benchmark: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "mmtune_gemm_benchmark: a non-standard exception\n";
  }
  return 1;
}
