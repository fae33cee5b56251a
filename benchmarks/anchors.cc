// The process's thread controls: Halide's JIT runtime and the BLAS libraries'.
#include "benchmarks/anchors.h"

#include "Halide.h"
#include "autotune/blas.h"

namespace mmtune::bench {

// Halide's JIT code calls the runtime compiled into the JIT's shared module, not a
// halide_set_num_threads() the host binary could link (libHalide does not export one), so the pool
// size is set through JITSharedRuntime. Before the first JIT compile there is no runtime to set.
void set_all_threads(int n) {
  Halide::Internal::JITSharedRuntime::set_num_threads(n);
  blas::set_threads(n);
}

ThreadCounts thread_counts() {
  const blas::Threads t = blas::threads();
  return {Halide::Internal::JITSharedRuntime::get_num_threads(), t.openblas, t.openmp};
}

}  // namespace mmtune::bench
