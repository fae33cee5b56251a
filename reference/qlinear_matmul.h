// ONNX QLinearMatMul-10 and -21, bit-exact reference (SEMANTICS.md §1, §2, §8.1, §8.2).
#pragma once

#include <optional>
#include <string_view>

#include "enum_names.h"
#include "matmul_shape.h"
#include "tensor.h"

namespace mmtune {

// How the int32 accumulator is requantized (part of a kernel's identity):
//   kFloat32: y = sat(RNE(fl32(fl32(acc) * M)) + y_zp)   -- ONNX Runtime / MLAS; the default.
//   kFloat64: y = sat(RNE(fl64(acc * M) + y_zp))          -- the ONNX reference evaluator.
enum class RequantMode { kFloat32, kFloat64 };
const EnumNames<RequantMode>& requant_mode_names();  // "float32", "float64"
const char* to_string(RequantMode m);
std::optional<RequantMode> requant_mode_from_string(std::string_view s);

struct QLinearMatMulArgs {
  const Tensor* a = nullptr;
  const Tensor* a_scale = nullptr;
  const Tensor* a_zero_point = nullptr;
  const Tensor* b = nullptr;
  const Tensor* b_scale = nullptr;
  const Tensor* b_zero_point = nullptr;
  const Tensor* y_scale = nullptr;
  const Tensor* y_zero_point = nullptr;
  int opset =
      21;  // 10: int8/uint8 and float32 scales only; 21: adds float16/bfloat16 scales, float8
  RequantMode requant =
      RequantMode::kFloat32;  // integer types only; float8 has its own rule (§8.2)
};

// Everything the computation needs once the inputs are known to be valid.
struct QLinearMatMulPlan {
  MatMulShape shape;
  DType out_dtype;
  bool float8;  // a, b, y are float8 (else all three are int8/uint8)
};

// Checks every rule (dtypes, ranks, K, batch broadcast, scale/zero-point shapes, scale values,
// float8 zero points, finite multiplier) and throws InvalidArgument on the first broken one.
QLinearMatMulPlan validate_qlinear_matmul(const QLinearMatMulArgs& args);

// Validates, then computes y.
Tensor qlinear_matmul(const QLinearMatMulArgs& args);

// The requantization multiplier M = fl(fl(a_scale * b_scale) / y_scale) in the scale type
// (float32, float16 or bfloat16), returned exactly as a float32.
float qlinear_multiplier(DType scale_type, float a_scale, float b_scale, float y_scale);

}  // namespace mmtune
