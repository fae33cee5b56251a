// QLinearMatMul through Halide's JIT: the host walks the batch dims and hands each 2-D product,
// with its per-row and per-column parameters widened exactly, to the generator's kernel.
#pragma once

#include "autotune/kernel_key.h"
#include "reference/qlinear_matmul.h"

namespace mmtune {

// int8/uint8 operands, or float8 operands (QLinearMatMul-21, mmtune's definition).
Tensor qlinear_matmul_halide(const QLinearMatMulArgs& args, const HalideVariant& v);

}  // namespace mmtune
