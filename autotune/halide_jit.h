// The JIT plumbing every operator's Halide path shares: Halide views of Tensors, the kernel cache,
// error capture.
#pragma once

#include <map>
#include <string>

#include "Halide.h"
#include "reference/tensor.h"

namespace mmtune {

// Generator name and generator parameters of a kernel: its identity for the JIT cache and the AOT
// build alike.
struct KernelKey {
  std::string generator;
  std::map<std::string, std::string> params;
  std::string to_string() const;
};

namespace jit {

halide_type_t halide_type(DType t);  // float8 -> uint8 (bit patterns)
std::string gp_type(DType t);        // generator-parameter spelling; float8 -> "uint8"

// A Halide view of `t` read as the row-major `shape` (Halide dims reversed): dense strides when
// t.shape == shape, zero strides where t.shape broadcasts to it.
Halide::Runtime::Buffer<void> view(const Tensor& t, const Shape& shape);

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
