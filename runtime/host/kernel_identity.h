// What a kernel computes, without how: the operator, its Halide generator and the generator
// parameters that fix the arithmetic (dtypes, layout, float contract, requantization mode). Two
// kernels with equal identities compute the same bits for every input; the runtime dispatches on
// identities, and the tuner adds a schedule to one to make a kernel (autotune/kernel_key.h).
#pragma once

#include <map>
#include <string>

#include "reference/gemm.h"
#include "reference/qgemm.h"
#include "reference/qlinear_matmul.h"
#include "reference/quant_matmul_dequant.h"

namespace mmtune {

struct KernelIdentity {
  std::string op;                             // ONNX name: "Gemm"
  std::string generator;                      // Halide generator: "mmtune_gemm"
  std::map<std::string, std::string> params;  // generator parameter -> value
  std::string to_string() const;              // "mmtune_gemm A.type=float32 ..."
  bool operator==(const KernelIdentity& o) const {
    return op == o.op && generator == o.generator && params == o.params;
  }
};

// The generator-parameter spelling of a dtype ("float32", "uint8", ...); float8 travels as uint8.
std::string gp_type(DType t);

// The identity of the kernel that evaluates each call as given (transposes, C presence and the
// effective float contract included). Arguments must have passed validation.
KernelIdentity gemm_identity(const GemmArgs& args);
// int8/uint8 operands: types, scale type, requantization mode; float8: the formats (one rule).
// Per-row / per-column parameters and batching are the host's, so they are not part of it.
KernelIdentity qlinear_matmul_identity(const QLinearMatMulArgs& args);
// Operand types, output (float32 or quantized), whether y_scale is given.
KernelIdentity qgemm_identity(const QGemmArgs& args);
// Weight layout, scale kinds (fused int64 weight scale; dynamic / per-token / per-tensor x scale
// and its type), smooth and bias presence.
KernelIdentity quant_matmul_dequant_identity(const QuantMatmulDequantArgs& args);

}  // namespace mmtune
