// ONNX Gemm-13, bit-exact reference (SEMANTICS.md §3, §8.3, §8.4).
#pragma once

#include <optional>
#include <string_view>

#include "enum_names.h"
#include "tensor.h"

namespace mmtune {

// How a float K sum is rounded (part of a kernel's identity, SEMANTICS.md §8 "Float contract"):
//   kStrict: acc = fl(acc + fl(a_k * b_k))   (the default)
//   kFma:    acc = fma(a_k, b_k, acc)        (one rounding per step)
enum class FloatContract { kStrict, kFma };
const EnumNames<FloatContract>& float_contract_names();  // "strict", "fma"
const char* to_string(FloatContract c);
std::optional<FloatContract> float_contract_from_string(std::string_view s);

// Whether the float contract can change the bits of a Gemm sum of type T (docs/semantics.md, "Float
// contract"): for float32, float64 and bfloat16 it can (a bfloat16 product has 16 significant bits,
// exact in float32, but bfloat16 has float32's exponent range, so the product can overflow or fall
// below float32's normal range, where fma and mul+add round differently); a float16 product is
// exact in float32 (at most 22 significant bits, magnitude within [2^-48, 2^32]), so both contracts
// round alike; integer sums do not round.
bool contract_applies(DType t);
// The contract a Gemm of type T computes under `c`: `c` where it applies, else kStrict (the one
// spelling of such kernels' identity).
FloatContract effective_contract(DType t, FloatContract c);

// The type a Gemm of type T accumulates in: float32 for float16/bfloat16/float32, else T.
DType gemm_accumulation_type(DType t);

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
