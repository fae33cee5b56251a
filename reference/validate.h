// Input checks shared by every operator and every entry point (reference, runtime, CLI). Each
// throws InvalidArgument with a sentence naming the operator, the input, its value and the rule.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "tensor.h"

namespace mmtune {

// "int8, uint8 or float8e4m3fn"
std::string dtype_list(std::initializer_list<DType> types);

const Tensor& require_present(const std::string& op, const std::string& name, const Tensor* t);
void require_dtype(const std::string& op, const std::string& name, const Tensor& t,
                   std::initializer_list<DType> allowed);
// `t` must have the dtype of `ref` (e.g. a zero point and its tensor).
void require_same_dtype(const std::string& op, const std::string& name, const Tensor& t,
                        const std::string& ref_name, const Tensor& ref);
void require_rank(const std::string& op, const std::string& name, const Tensor& t, int64_t rank);
// A scalar or a 1-D tensor with one element.
void require_single_value(const std::string& op, const std::string& name, const Tensor& t);
// The byte count matches the shape (guards tensors built by hand through the C++ API).
void require_consistent(const std::string& op, const std::string& name, const Tensor& t);
// Every element of a float tensor (any float dtype) is finite and > 0.
void require_positive_finite(const std::string& op, const std::string& name, const Tensor& t);

// Gemm-style operands: A (M, K) or (K, M) with trans_a, B (K, N) or (N, K) with trans_b, both
// rank 2 with equal K. Returns {M, K, N}.
struct GemmDims {
  int64_t m, k, n;
};
GemmDims gemm_dims(const std::string& op, const Tensor& a, const Tensor& b, bool trans_a,
                   bool trans_b);

// The largest output an operator may allocate, in bytes: $MMTUNE_MAX_OUTPUT_BYTES when set (read
// once), else half of this machine's physical memory. set_max_output_bytes overrides both (0
// restores the default) and returns the previous limit.
int64_t max_output_bytes();
int64_t set_max_output_bytes(int64_t bytes);
// An output of `dtype` and `shape` must fit that limit: InvalidArgument naming the output, its size
// and the limit otherwise (nothing is allocated).
void require_output_fits(const std::string& op, const std::string& name, DType dtype,
                         const Shape& shape);

// C broadcasts unidirectionally to (M, N): (), (1), (N), (1, N), (M, 1) or (M, N).
void require_broadcast_to_output(const std::string& op, const Tensor& c, int64_t m, int64_t n);

}  // namespace mmtune
