// Ascend QuantMatmulDequant through Halide's JIT in this process (generators/
// quant_matmul_dequant_generator.cpp): validation exactly as the reference, then the kernel compiled
// for the variant (cached by generator name, generator params and target).
#pragma once

#include "autotune/halide_jit.h"
#include "autotune/halide_ops.h"
#include "reference/quant_matmul_dequant.h"

namespace mmtune {

// Generator name and generator parameters of the kernel that evaluates `args`: weight layout,
// scale kinds (fused int64 weight scale, dynamic / per-token / per-tensor x scale and its type),
// smooth and bias presence, and the schedule. `args` must have passed validation.
KernelKey quant_matmul_dequant_kernel_key(const QuantMatmulDequantArgs& args, const HalideVariant& v);

// Same result, bit for bit, as quant_matmul_dequant(args); same InvalidArgument on invalid input,
// and InvalidArgument when the schedule cannot run on v.target.
Tensor quant_matmul_dequant_halide(const QuantMatmulDequantArgs& args, const HalideVariant& v);

}  // namespace mmtune
