// The JIT plumbing every operator's Halide path shares: Halide views of Tensors, the kernel cache,
// error capture.
#pragma once

#include <map>
#include <string>

#include "Halide.h"
#include "autotune/buffer_view.h"
#include "autotune/kernel_key.h"
#include "reference/tensor.h"

namespace mmtune {

namespace jit {

Halide::Target resolve_target(const std::string& target);  // "host" or a target string

// The compiled kernel for (key, target), compiled on first use and cached for the process.
Halide::Callable compile(const KernelKey& key, const std::string& target);

// A JITUserContext that collects the pipeline's error messages.
struct ErrorContext : Halide::JITUserContext {
  std::string message;
  ErrorContext();
  Halide::JITUserContext* get() { return this; }
};
// Number of kernels compiled so far in this process.
std::size_t cache_size();

// Throws InternalError naming the kernel when a call returned non-zero.
void check(int rc, const ErrorContext& ctx, const KernelKey& key);

}  // namespace jit
}  // namespace mmtune
