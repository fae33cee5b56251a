// The BLAS libraries mmtune is measured against, called in the same process: OpenBLAS (cblas,
// pthreads build), oneDNN's BLAS-like API and its int8 matmul primitive (Debian's libdnnl 2.6,
// OpenMP runtime), and XNNPACK's quantized fully-connected operators (Debian's libxnnpack, with a
// pthreadpool). Row-major, no transposes. The tuner times the BLAS calls as baselines of the
// identities they compute (autotune/tune_baselines.h), the benchmarks (benchmarks/) and `mmtune
// bench` as anchors; all call them through here, with the thread controls of their pools and the
// facts a report must record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mmtune::blas {

// Sets the thread count of OpenBLAS's pool and of OpenMP's (oneDNN's).
void set_threads(int n);

struct Threads {
  int openblas = 0;
  int openmp = 0;
};
Threads threads();

// Ends OpenBLAS's worker threads; its next threaded call starts them again. After a call they
// spin-wait (sched_yield) for the next one, and in a process that keeps calling OpenBLAS every few
// hundred milliseconds they never reach their sleep (measured on a 2-core Xeon, 2 threads, 128^3
// float32: the worker ran a whole core between samples, and every implementation timed there ran
// at its 1-thread rate or below, mmtune's prepacked call 77-87 GFLOP/s instead of 265-280 and
// OpenBLAS's own 113-117 instead of 143-147).
void openblas_end_workers();

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

// oneDNN's int8 matmul primitive, its prepacked path: y (m x n) = sat(RNE(scale * (a - a_zero)
// (b - b_zero)) + y_zero) with a (m x k, u8 or s8), b (k x n, s8) and y (u8 or s8) row-major, the
// output scale and the three zero points per tensor and fixed when the primitive is created. The
// weights are described with format_tag::any and reordered once per weights buffer (add) into the
// layout the primitive prefers. oneDNN fixes a primitive's thread count when it is created:
// set_threads makes the primitive again (and the reorders) for another count.
class OnednnInt8Matmul {
 public:
  struct Params {
    int64_t m = 0, n = 0, k = 0;
    bool a_signed = false, y_signed = false;
    int32_t a_zero = 0, b_zero = 0, y_zero = 0;
    float scale = 1.0f;
  };
  // Creates the primitive for the current OpenMP thread count. Where oneDNN refuses a nonzero
  // weights zero point for these types on this CPU, the primitive takes 0 instead: b_zero() says
  // which. InternalError naming oneDNN's status when it refuses the rest.
  explicit OnednnInt8Matmul(const Params& p);
  ~OnednnInt8Matmul();
  OnednnInt8Matmul(const OnednnInt8Matmul&) = delete;
  OnednnInt8Matmul& operator=(const OnednnInt8Matmul&) = delete;

  // Pairs input `a` with weights `b` (reordered now; both outlive this object): its index for run.
  std::size_t add(const void* a, const int8_t* b);
  // The primitive and the reorders made again for `threads` OpenMP threads (nothing when it was
  // made for that count).
  void set_threads(int threads);
  // The timed call: the primitive executed on pair `i` into the one output, waited for.
  void run(std::size_t i);
  const void* y() const;
  int32_t b_zero() const;
  std::string impl_info() const;  // the implementation oneDNN chose, e.g. "brg:avx512_core_vnni"

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// XNNPACK's quantized fully-connected operator, xnn_create_fully_connected_nc_qu8 (a, b, y uint8)
// or _qs8 (int8): y (m x n) = sat(round(a_scale b_scale / y_scale * (a - a_zero)(b - b_zero)) +
// y_zero), XNNPACK's requantization, per-tensor scales and zero points. qs8's weights are
// symmetric: b_zero must be 0. One operator per weights buffer (add): b (k x n, row-major) is
// transposed to XNNPACK's (n x k) layout and packed when the operator is created. set_threads makes
// a pthreadpool of that many threads and sets every operator up on it (input, the one output), so
// run is xnn_run_operator alone.
class XnnpackFullyConnected {
 public:
  struct Params {
    int64_t m = 0, n = 0, k = 0;
    bool qs8 = false;
    int32_t a_zero = 0, b_zero = 0, y_zero = 0;
    float a_scale = 1.0f, b_scale = 1.0f, y_scale = 1.0f;
  };
  explicit XnnpackFullyConnected(const Params& p);
  ~XnnpackFullyConnected();
  XnnpackFullyConnected(const XnnpackFullyConnected&) = delete;
  XnnpackFullyConnected& operator=(const XnnpackFullyConnected&) = delete;

  // An operator for input `a` (outlives this object) and weights `b` (packed now): its index.
  // InternalError naming XNNPACK's status when it refuses the parameters (e.g. a requantization
  // scale of 256 or more).
  std::size_t add(const void* a, const void* b);
  void set_threads(int threads);
  // The timed call: operator `i` run on the thread pool (set up by set_threads, which must come
  // first).
  void run(std::size_t i);
  // Wakes the pool's workers (awake) or sends them to sleep. After a command they spin-wait for
  // the next one for a while, taking a core from whatever runs next (on 2 cores, oneDNN's OpenMP
  // threads then wait for a scheduler tick on every call); asleep, the first command after waits
  // for the scheduler to run them.
  void wake(bool awake);
  const void* y() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// "OpenBLAS 0.3.21 ... DYNAMIC_ARCH ...; core Cooperlake"
std::string openblas_info();
// "oneDNN 2.6.3 (CPU runtime OpenMP); ISA avx512_core_bf16"
std::string onednn_info();
// "XNNPACK 0.0~git20220216.ae108ef-2 (Debian libxnnpack-dev), pthreadpool"
std::string xnnpack_info();

}  // namespace mmtune::blas
