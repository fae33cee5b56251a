// QuantMatmulDequant's host side, shared by the runtime's AOT kernels
// (runtime/src/quant_matmul_dequant.cc) and the JIT path (autotune/halide_quant_matmul_dequant.cc):
// the views the generator takes (absent optional inputs as 1-element dummies it never reads, a
// per-tensor x_scale of rank 0 or 1) and K = 0 run as K = 1 with x = +0 (same bits). No libHalide:
// only Halide's runtime buffer types.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "HalideRuntime.h"
#include "reference/quant_matmul_dequant.h"
#include "runtime/host/packed_b.h"

namespace mmtune {

// One call of an mmtune_quant_matmul_dequant kernel, in the generator's argument order (the caller
// adds its user context): x (M, K) float16, weight (N, K) or (K, N) int8, weight_scale (N), bias
// (N) int32, x_scale ((M) per token, else 1 element), smooth (K) float16, y (M, N) float16. Returns
// the Halide error code; a caller that can name the failure better throws itself.
using QuantMatmulDequantKernelCall = std::function<int(
    halide_buffer_t* x, halide_buffer_t* weight, halide_buffer_t* weight_scale,
    halide_buffer_t* bias, halide_buffer_t* x_scale, halide_buffer_t* smooth, halide_buffer_t* y)>;

// Why a valid call runs no kernel, or nullopt: an empty output only (K = 0 runs the kernel as
// K = 1 over a zero x, which computes the same bits in every mode).
std::optional<std::string> quant_matmul_dequant_no_kernel(const QuantMatmulDequantPlan& plan);

// Y of a valid call (`plan` = validate_quant_matmul_dequant(args)) through `call`, bit for bit the
// reference's; when quant_matmul_dequant_no_kernel(plan) says so, without calling it.
// With `packed` (a prepacked_b kernel: the (K, N) weight's panels and column sums, packed from a
// weight of K >= 1 rows; for K = 0, from the (1, N) zero weight the call runs as), the kernel reads
// the panels instead of args.weight and the bias as bias - 128 * column sums, mod 2^32 (an absent
// bias as 0), folded here per call (N values).
Tensor run_quant_matmul_dequant_host(const QuantMatmulDequantArgs& args,
                                     const QuantMatmulDequantPlan& plan,
                                     const QuantMatmulDequantKernelCall& call,
                                     uint8_t* placed_output = nullptr,
                                     const PackedOperand* packed = nullptr);

// The call as the runtime's kernels and every prepacked_b kernel take it: the weight read (K, N)
// (transpose_weight = false; the caller supplies the (K, N) copy or the panels) and a bias,
// `zero_bias` (int32 (N), outliving the result) where the call has none (the sum plus 0).
QuantMatmulDequantArgs kn_weight_with_bias(const QuantMatmulDequantArgs& args,
                                           const Tensor& zero_bias);

// The bias a prepacked_b kernel reads: bias(j) - 128 * column_sums(j) mod 2^32, an absent bias as
// 0; `column_sums` uint32 (N), `bias` int32 (N) or nullptr.
Tensor fold_column_sums_into_bias(const Tensor* bias, const Tensor& column_sums);

}  // namespace mmtune
