// Tensors written in JSON as {"dtype", "shape", "data": [decimal values]}: the seeds' worked
// examples.
#pragma once

#include <nlohmann/json.hpp>

#include "reference/tensor.h"

namespace mmtune::testing {

// Each decimal value is converted to the dtype with one correct rounding (round to nearest even):
// integers exactly (out of range throws), floats from the decimal text's double value rounded
// directly to the target format (not through float32 for the narrow formats).
Tensor tensor_from_json(const nlohmann::json& j);

// Correctly rounded double -> float16 / bfloat16 bit pattern (RNE), NaN -> canonical.
uint16_t double_to_float16(double x);
uint16_t double_to_bfloat16(double x);

}  // namespace mmtune::testing
