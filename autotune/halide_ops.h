// Running operator variants through Halide's JIT in this process: what the tests, the tuner and
// `mmtune run --impl halide` use. Each call validates exactly as the reference does (same
// InvalidArgument), refuses a schedule that does not fit the target or the sum (InvalidArgument,
// before compiling), then runs the generator compiled for the variant (cached by kernel key and
// target) through the same host side as the runtime (runtime/host/). Results are the reference's,
// bit for bit.
#pragma once

#include <string_view>

#include "autotune/kernel_key.h"
#include "reference/registry.h"

namespace mmtune {

Tensor gemm_halide(const GemmArgs& args, const HalideVariant& v);
// int8/uint8 operands, or float8 operands (QLinearMatMul-21, mmtune's definition).
Tensor qlinear_matmul_halide(const QLinearMatMulArgs& args, const HalideVariant& v);
Tensor qgemm_halide(const QGemmArgs& args, const HalideVariant& v);
Tensor quant_matmul_dequant_halide(const QuantMatmulDequantArgs& args, const HalideVariant& v);

// Named-tensor entry point, the Halide twin of run_reference (same names, attributes, checks).
Tensor run_halide(std::string_view op, const NamedTensors& inputs, const Attributes& attrs,
                  const HalideVariant& v);

// Number of distinct kernels compiled so far in this process (JIT cache size).
std::size_t jit_cache_size();

}  // namespace mmtune
