// The thread controls of every library in the benchmark's process: Halide's JIT runtime and the
// BLAS libraries mmtune is measured against (autotune/blas.h).
#pragma once

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

}  // namespace mmtune::bench
