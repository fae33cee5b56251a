// The JIT plumbing every operator's Halide path shares: the kernel cache and error capture.
#pragma once

#include <string>

#include "Halide.h"
#include "autotune/kernel_key.h"

namespace mmtune::jit {

// The compiled kernel for (key, target), compiled on first use and cached for the process. A
// Halide compile error becomes InternalError naming the kernel.
Halide::Callable compile(const KernelKey& key, const std::string& target);

// Number of kernels compiled so far in this process.
std::size_t cache_size();

// A JITUserContext that collects the pipeline's error messages.
struct ErrorContext : Halide::JITUserContext {
  std::string message;
  ErrorContext();
  Halide::JITUserContext* get() { return this; }
};

// Throws InternalError naming the kernel when a call returned non-zero.
void check(int rc, const ErrorContext& ctx, const KernelKey& key);

}  // namespace mmtune::jit
