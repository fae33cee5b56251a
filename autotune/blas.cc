// OpenBLAS and oneDNN calls and their thread controls.
#include "autotune/blas.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <sstream>

#include "reference/error.h"

// oneDNN's OpenMP runtime (libgomp, linked as Debian's libdnnl links it): its two thread controls,
// declared here rather than through <omp.h>, which clang builds without an OpenMP package lack.
extern "C" {
void omp_set_num_threads(int n);
int omp_get_max_threads();
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

}  // namespace

void set_threads(int n) {
  openblas_set_num_threads(n);
  omp_set_num_threads(n);
}

Threads threads() { return {openblas_get_num_threads(), omp_get_max_threads()}; }

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

}  // namespace mmtune::blas
