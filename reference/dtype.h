// Element types mmtune knows: their names (ONNX spelling, lower case), sizes and classes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mmtune {

enum class DType {
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kFloat8E4M3FN,
  kFloat8E4M3FNUZ,
  kFloat8E5M2,
  kFloat8E5M2FNUZ,
};

// "int8", "float16", "bfloat16", "float8e4m3fn", ... (the ONNX TensorProto names in lower case).
const char* dtype_name(DType t);
// Accepts the names above; also "float" (float32), "double" (float64), "half" (float16).
std::optional<DType> dtype_from_name(std::string_view name);
std::size_t dtype_size(DType t);

bool is_float8(DType t);
bool is_8bit_integer(DType t);  // int8 or uint8
bool is_integer(DType t);
bool is_signed_integer(DType t);
bool is_float(DType t);  // any floating-point type, including float8

// The comma-separated list of every type name, for error messages.
std::string all_dtype_names();

}  // namespace mmtune
