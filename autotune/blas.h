// The BLAS libraries mmtune is measured against, called in the same process: OpenBLAS (cblas,
// pthreads build) and oneDNN's BLAS-like API (Debian's libdnnl 2.6, OpenMP runtime). Row-major,
// no transposes. The tuner times them as baselines of the identities they compute
// (autotune/tune_baselines.h) and the benchmarks (benchmarks/) as anchors; both call them through
// here, with the thread controls of their pools and the facts a report must record.
#pragma once

#include <cstdint>
#include <string>

namespace mmtune::blas {

// Sets the thread count of OpenBLAS's pool and of OpenMP's (oneDNN's).
void set_threads(int n);

struct Threads {
  int openblas = 0;
  int openmp = 0;
};
Threads threads();

// C(m x n) = alpha A(m x k) B(k x n) + beta C, float32, dense row-major (beta = 0: C is only
// written).
void openblas_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                    float alpha = 1.0f, float beta = 0.0f);
void onednn_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                  float alpha = 1.0f, float beta = 0.0f);

// C(m x n, int32) = (A(u8) - a_zero) (B(s8) - b_zero): the integer accumulation of a quantized
// matmul, no requantization. Without VNNI, oneDNN sums u8*s8 pairs in saturating int16
// (vpmaddubsw), so it is not exact on every CPU.
void onednn_gemm_u8s8s32(int64_t m, int64_t n, int64_t k, const uint8_t* a, uint8_t a_zero,
                         const int8_t* b, int8_t b_zero, int32_t* c);

// "OpenBLAS 0.3.21 ... DYNAMIC_ARCH ...; core Cooperlake"
std::string openblas_info();
// "oneDNN 2.6.3 (CPU runtime OpenMP); ISA avx512_core_bf16"
std::string onednn_info();

}  // namespace mmtune::blas
