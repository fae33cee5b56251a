// ONNX Gemm-13, bit-exact reference (SEMANTICS.md §3, §8.3, §8.4).
#pragma once

#include <optional>
#include <string_view>

#include "reference/tensor.h"

namespace mmtune {

// How a float K sum is rounded (part of a kernel's identity, SEMANTICS.md §8 "Float contract"):
//   kStrict: acc = fl(acc + fl(a_k * b_k))   (the default)
//   kFma:    acc = fma(a_k, b_k, acc)        (one rounding per step)
enum class FloatContract { kStrict, kFma };
const char* to_string(FloatContract c);
std::optional<FloatContract> float_contract_from_string(std::string_view s);

struct GemmArgs {
  const Tensor* a = nullptr;
  const Tensor* b = nullptr;
  const Tensor* c = nullptr;  // optional
  float alpha = 1.0f;         // ONNX float attributes: float32 values
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
  FloatContract contract = FloatContract::kStrict;
};

struct GemmPlan {
  int64_t m = 0, k = 0, n = 0;
};

// Checks dtypes (A, B, C alike, one of the eight Gemm types), ranks, K, and C's unidirectional
// broadcast to (M, N).
GemmPlan validate_gemm(const GemmArgs& args);

Tensor gemm(const GemmArgs& args);

}  // namespace mmtune
