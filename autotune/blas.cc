// OpenBLAS, oneDNN and XNNPACK calls and their thread controls.
#include "autotune/blas.h"

#include <cblas.h>
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "reference/error.h"

// oneDNN's OpenMP runtime (libgomp, linked as Debian's libdnnl links it): its two thread controls,
// declared here rather than through <omp.h>, which clang builds without an OpenMP package lack.
extern "C" {
void omp_set_num_threads(int n);
int omp_get_max_threads();
// OpenBLAS's (pthreads build) exported pool shutdown; not declared by <cblas.h>.
int blas_thread_shutdown_(void);
}

namespace mmtune::blas {
namespace {

void check_dnnl(dnnl_status_t status, const char* call) {
  MMTUNE_CHECK(status == dnnl_success, call << " returned status " << static_cast<int>(status));
}

const char* isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic:
      return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "unknown";
  }
}

const char* runtime_name(unsigned runtime) {
  switch (runtime) {
    case DNNL_RUNTIME_SEQ:
      return "sequential";
    case DNNL_RUNTIME_OMP:
      return "OpenMP";
    case DNNL_RUNTIME_TBB:
      return "TBB";
    case DNNL_RUNTIME_THREADPOOL:
      return "threadpool";
    default:
      return "other";
  }
}

void check_xnn(xnn_status status, const char* call) {
  MMTUNE_CHECK(status == xnn_status_success,
               call << " returned status " << static_cast<int>(status)
                    << (status == xnn_status_unsupported_parameter ? " (unsupported parameter)"
                        : status == xnn_status_invalid_parameter   ? " (invalid parameter)"
                                                                   : ""));
}

}  // namespace

// ---- oneDNN's int8 matmul primitive ---------------------------------------------------------

struct OnednnInt8Matmul::State {
  Params p;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;
  int threads = 0;  // the OpenMP thread count the primitive was made for
  std::vector<std::pair<const void*, const int8_t*>> pairs;
  std::vector<std::unordered_map<int, dnnl::memory>> args;  // of each pair
  std::vector<uint8_t> y;
  dnnl::memory y_mem;

  dnnl::memory::desc desc(int64_t rows, int64_t cols, bool is_signed,
                          dnnl::memory::format_tag tag) const {
    return {
        {rows, cols}, is_signed ? dnnl::memory::data_type::s8 : dnnl::memory::data_type::u8, tag};
  }

  dnnl::matmul::primitive_desc make_pd(int32_t b_zero) const {
    using tag = dnnl::memory::format_tag;
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {p.scale});
    attr.set_zero_points(DNNL_ARG_SRC, 0, {p.a_zero});
    if (b_zero != 0) attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {b_zero});
    attr.set_zero_points(DNNL_ARG_DST, 0, {p.y_zero});
    const dnnl::matmul::desc d(desc(p.m, p.k, p.a_signed, tag::ab), desc(p.k, p.n, true, tag::any),
                               desc(p.m, p.n, p.y_signed, tag::ab));
    return {d, attr, engine};
  }

  // Pair i's arguments: its input, its weights reordered into the primitive's layout, the output.
  void bind(std::size_t i) {
    const auto& [a, b] = pairs[i];
    dnnl::memory plain(desc(p.k, p.n, true, dnnl::memory::format_tag::ab), engine,
                       const_cast<int8_t*>(b));
    dnnl::memory packed(pd.weights_desc(), engine);
    dnnl::reorder(plain, packed).execute(stream, plain, packed);
    stream.wait();
    args.resize(std::max(args.size(), i + 1));
    args[i] = {{DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), engine, const_cast<void*>(a))},
               {DNNL_ARG_WEIGHTS, packed},
               {DNNL_ARG_DST, y_mem}};
  }

  // The primitive for the current thread count, every pair bound to it.
  void make() {
    threads = omp_get_max_threads();
    try {
      pd = make_pd(p.b_zero);
    } catch (const dnnl::error& e) {
      // The weights' zero point is the one attribute oneDNN implements for fewer CPUs and types.
      if (e.status != dnnl_unimplemented || p.b_zero == 0) throw;
      p.b_zero = 0;
      pd = make_pd(0);
    }
    matmul = dnnl::matmul(pd);
    y_mem = dnnl::memory(pd.dst_desc(), engine, y.data());
    for (std::size_t i = 0; i < pairs.size(); ++i) bind(i);
  }
};

namespace {

// `f()`, a oneDNN error turned into InternalError naming its status.
template <class F>
void dnnl_call(const char* what, F&& f) {
  try {
    f();
  } catch (const dnnl::error& e) {
    MMTUNE_CHECK(false, "oneDNN's int8 matmul primitive: " << what << ": " << e.what()
                                                           << " (status "
                                                           << static_cast<int>(e.status) << ")");
  }
}

}  // namespace

OnednnInt8Matmul::OnednnInt8Matmul(const Params& p) : s_(std::make_unique<State>()) {
  s_->p = p;
  s_->y.resize(static_cast<std::size_t>(p.m * p.n));
  dnnl_call("creation", [&] { s_->make(); });
}

OnednnInt8Matmul::~OnednnInt8Matmul() = default;

std::size_t OnednnInt8Matmul::add(const void* a, const int8_t* b) {
  s_->pairs.emplace_back(a, b);
  dnnl_call("weights reorder", [&] { s_->bind(s_->pairs.size() - 1); });
  return s_->pairs.size() - 1;
}

void OnednnInt8Matmul::set_threads(int threads) {
  omp_set_num_threads(threads);
  if (threads != s_->threads) dnnl_call("creation", [&] { s_->make(); });
}

void OnednnInt8Matmul::run(std::size_t i) {
  s_->matmul.execute(s_->stream, s_->args[i]);
  s_->stream.wait();
}

const void* OnednnInt8Matmul::y() const { return s_->y.data(); }

int32_t OnednnInt8Matmul::b_zero() const { return s_->p.b_zero; }

std::string OnednnInt8Matmul::impl_info() const { return s_->pd.impl_info_str(); }

// ---- XNNPACK's quantized fully-connected operators ------------------------------------------

struct XnnpackFullyConnected::State {
  Params p;
  std::vector<xnn_operator_t> ops;
  std::vector<const void*> inputs;  // of each operator
  std::vector<uint8_t> y;
  pthreadpool_t pool = nullptr;
  int threads = 0;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    for (xnn_operator_t op : ops) xnn_delete_operator(op);
    if (pool) pthreadpool_destroy(pool);
  }

  // Operator i bound to its input, the output and the pool.
  void setup(std::size_t i) {
    const auto m = static_cast<std::size_t>(p.m);
    if (p.qs8) {
      check_xnn(xnn_setup_fully_connected_nc_qs8(ops[i], m, static_cast<const int8_t*>(inputs[i]),
                                                 reinterpret_cast<int8_t*>(y.data()), pool),
                "xnn_setup_fully_connected_nc_qs8");
    } else {
      check_xnn(xnn_setup_fully_connected_nc_qu8(ops[i], m, static_cast<const uint8_t*>(inputs[i]),
                                                 y.data(), pool),
                "xnn_setup_fully_connected_nc_qu8");
    }
  }
};

XnnpackFullyConnected::XnnpackFullyConnected(const Params& p) : s_(std::make_unique<State>()) {
  static const xnn_status init = xnn_initialize(nullptr);
  check_xnn(init, "xnn_initialize");
  MMTUNE_CHECK(!p.qs8 || p.b_zero == 0, "XNNPACK's qs8 weights are symmetric: b_zero must be 0");
  s_->p = p;
  s_->y.resize(static_cast<std::size_t>(p.m * p.n));
}

XnnpackFullyConnected::~XnnpackFullyConnected() = default;

std::size_t XnnpackFullyConnected::add(const void* a, const void* b) {
  const Params& p = s_->p;
  const auto n = static_cast<std::size_t>(p.n), k = static_cast<std::size_t>(p.k);
  // XNNPACK's kernel is (output channels, input channels): b transposed.
  std::vector<uint8_t> kernel(n * k);
  const auto* src = static_cast<const uint8_t*>(b);
  for (std::size_t kk = 0; kk < k; ++kk)
    for (std::size_t j = 0; j < n; ++j) kernel[j * k + kk] = src[kk * n + j];
  xnn_operator_t op = nullptr;
  if (p.qs8) {
    check_xnn(xnn_create_fully_connected_nc_qs8(
                  k, n, k, n, static_cast<int8_t>(p.a_zero), p.a_scale, p.b_scale,
                  reinterpret_cast<const int8_t*>(kernel.data()), nullptr,
                  static_cast<int8_t>(p.y_zero), p.y_scale, INT8_MIN, INT8_MAX, 0, &op),
              "xnn_create_fully_connected_nc_qs8");
  } else {
    check_xnn(xnn_create_fully_connected_nc_qu8(
                  k, n, k, n, static_cast<uint8_t>(p.a_zero), p.a_scale,
                  static_cast<uint8_t>(p.b_zero), p.b_scale, kernel.data(), nullptr,
                  static_cast<uint8_t>(p.y_zero), p.y_scale, 0, UINT8_MAX, 0, &op),
              "xnn_create_fully_connected_nc_qu8");
  }
  s_->ops.push_back(op);
  s_->inputs.push_back(a);
  if (s_->threads > 0) s_->setup(s_->ops.size() - 1);
  return s_->ops.size() - 1;
}

void XnnpackFullyConnected::set_threads(int threads) {
  if (threads == s_->threads) return;
  if (s_->pool) pthreadpool_destroy(s_->pool);
  s_->pool = pthreadpool_create(static_cast<std::size_t>(threads));
  MMTUNE_CHECK(s_->pool != nullptr, "pthreadpool_create(" << threads << ") failed");
  s_->threads = threads;
  for (std::size_t i = 0; i < s_->ops.size(); ++i) s_->setup(i);
}

void XnnpackFullyConnected::run(std::size_t i) {
  check_xnn(xnn_run_operator(s_->ops[i], s_->pool), "xnn_run_operator");
}

void XnnpackFullyConnected::wake(bool awake) {
  // An empty command for every worker: after it they spin-wait for the next (awake) or, with
  // PTHREADPOOL_FLAG_YIELD_WORKERS, wait in the kernel.
  if (!s_->pool) return;
  pthreadpool_parallelize_1d(
      s_->pool, [](void*, std::size_t) {}, nullptr, pthreadpool_get_threads_count(s_->pool),
      awake ? 0 : PTHREADPOOL_FLAG_YIELD_WORKERS);
}

const void* XnnpackFullyConnected::y() const { return s_->y.data(); }

void set_threads(int n) {
  openblas_set_num_threads(n);
  omp_set_num_threads(n);
}

Threads threads() { return {openblas_get_num_threads(), omp_get_max_threads()}; }

void openblas_end_workers() { blas_thread_shutdown_(); }

void openblas_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                    float alpha, float beta) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(k),
              b, static_cast<blasint>(n), beta, c, static_cast<blasint>(n));
}

// oneDNN's BLAS-like functions are row-major (unlike cblas, which takes the order as an argument).
void onednn_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                  float alpha, float beta) {
  check_dnnl(dnnl_sgemm('N', 'N', m, n, k, alpha, a, k, b, n, beta, c, n), "dnnl_sgemm");
}

void onednn_gemm_u8s8s32(int64_t m, int64_t n, int64_t k, const uint8_t* a, uint8_t a_zero,
                         const int8_t* b, int8_t b_zero, int32_t* c) {
  const int32_t zero_c = 0;
  check_dnnl(dnnl_gemm_u8s8s32('N', 'N', 'F', m, n, k, 1.0f, a, k, a_zero, b, n, b_zero, 0.0f, c, n,
                               &zero_c),
             "dnnl_gemm_u8s8s32");
}

std::string openblas_info() {
  std::ostringstream os;
  os << openblas_get_config() << "; core " << openblas_get_corename();
  return os.str();
}

std::string onednn_info() {
  const dnnl_version_t* v = dnnl_version();
  std::ostringstream os;
  os << "oneDNN " << v->major << "." << v->minor << "." << v->patch << " (CPU runtime "
     << runtime_name(v->cpu_runtime) << "); ISA " << isa_name(dnnl_get_effective_cpu_isa());
  return os.str();
}

std::string xnnpack_info() {
  return "XNNPACK " MMTUNE_XNNPACK_VERSION " (Debian libxnnpack), pthreadpool";
}

}  // namespace mmtune::blas
