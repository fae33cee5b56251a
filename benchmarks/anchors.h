// The libraries the benchmarks measure mmtune against, in the same process: OpenBLAS (cblas,
// pthreads build) and oneDNN's BLAS-like API (Debian's libdnnl 2.6, OpenMP runtime). Row-major,
// no transposes, beta = 0, as the benchmarks call them; plus the thread controls of every library
// in the process and the facts a report must record.
#pragma once

#include <cstdint>
#include <string>

namespace mmtune::bench {

// Sets the thread count of all three pools in the process: Halide's JIT runtime (which exists only
// after the first JIT compile), OpenBLAS's and OpenMP's (oneDNN's).
void set_all_threads(int n);

struct ThreadCounts {
  int halide = 0;  // 0 when the JIT runtime does not exist yet
  int openblas = 0;
  int openmp = 0;
};
ThreadCounts thread_counts();

// C(m x n) = A(m x k) B(k x n), float32, dense row-major.
void openblas_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);
void onednn_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);

// C(m x n, int32) = (A(u8) - a_zero) B(s8): the integer accumulation, no requantization.
void onednn_gemm_u8s8s32(int64_t m, int64_t n, int64_t k, const uint8_t* a, uint8_t a_zero,
                         const int8_t* b, int32_t* c);

// "OpenBLAS 0.3.21 ... DYNAMIC_ARCH ...; core Cooperlake"
std::string openblas_info();
// "oneDNN 2.6.3 (CPU runtime OpenMP); ISA avx512_core_bf16"
std::string onednn_info();

}  // namespace mmtune::bench
