// Where a kernel runs when it does not run in this process: the operators' Halide paths
// (autotune/halide_ops.h) hand each kernel invocation, its buffers and scalars as the host side
// built them, to an executor instead of the JIT. `mmtune verify` runs kernels built for another
// target in a runner program on that target (autotune/remote_runner.h); the gate around the call
// (poisoned, guarded output, the reference) is the same as for a JIT kernel.
#pragma once

#include <HalideRuntime.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "autotune/kernel_key.h"

namespace mmtune {

// One argument of a kernel invocation: a buffer (host memory, Halide's dimensions) or a scalar.
struct KernelArg {
  halide_buffer_t* buffer = nullptr;
  halide_type_t type;  // the scalar's type (a buffer's is its own)
  uint64_t bits = 0;   // the scalar's value, in its low bytes

  static KernelArg of(halide_buffer_t* b) {
    KernelArg a;
    a.buffer = b;
    return a;
  }
  template <class T>
  static KernelArg of(T v) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "a scalar argument of at most 64 bits");
    KernelArg a;
    a.type = halide_type_of<T>();
    std::memcpy(&a.bits, &v, sizeof v);
    return a;
  }
};

class KernelExecutor {
 public:
  virtual ~KernelExecutor() = default;
  // Runs the kernel of `key` on `args`; output buffers' memory holds the kernel's results after
  // it. Throws (naming the kernel and why) when the kernel is not available there or failed.
  virtual void call(const KernelKey& key, const std::vector<KernelArg>& args) = 0;
};

}  // namespace mmtune
