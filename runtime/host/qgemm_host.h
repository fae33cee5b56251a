// QGemm's host side, shared by the JIT path (autotune/halide_qgemm.cc) and the runtime's AOT
// kernels (runtime/src/qgemm.cc): transposed operands materialized (exact copies: bytes move),
// per-column (or per-tensor) b parameters widened to (N) float32 / int32, an absent C passed as a
// zero int32 broadcast through zero strides, then one kernel call. No libHalide: only Halide's
// runtime buffer types.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "HalideRuntime.h"
#include "reference/qgemm.h"
#include "runtime/host/packed_b.h"

namespace mmtune {

// One call of an mmtune_qgemm kernel, in the generator's argument order (the caller adds its user
// context): A (M, K), B (K, N), C (M, N) int32 (zero strides where it broadcasts), a_scale,
// a_zero_point, b_scale (N) float32, b_zero_point (N) int32, y_scale (1 when absent),
// y_zero_point (0 when absent), alpha, Y (M, N). Returns the Halide error code; a caller that can
// name the failure better throws itself.
using QGemmKernelCall = std::function<int(
    halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* c, float a_scale, int32_t a_zero_point,
    halide_buffer_t* b_scale, halide_buffer_t* b_zero_point, halide_buffer_t* b_column_sums,
    float y_scale, int32_t y_zero_point, float alpha, halide_buffer_t* y)>;

// Why a valid call runs no kernel, or nullopt: K = 0 (an empty sum: the reference evaluates the
// epilogue of C alone; an empty operand has no host pointer, which a Halide pipeline takes for a
// bounds query), or an empty Y.
std::optional<std::string> qgemm_no_kernel(const QGemmPlan& plan);

// b's scale and zero point (per tensor or per column) widened to the kernel's (N) float32 and
// int32 (`b_scale`, `b_zero_point`: tensors of that shape and type).
void widen_qgemm_b_params(const QGemmArgs& args, const QGemmPlan& plan, Tensor& b_scale,
                          Tensor& b_zero_point);

// Y of a valid call (`plan` = validate_qgemm(args)) through `call`, bit for bit the reference's;
// when qgemm_no_kernel(plan) says so, without calling it. The kernel writes into `placed_output`
// when given (output_data, buffer_view.h).
// With `packed`, the kernel reads B's panels and column sums (b_column_sums) instead of B.
Tensor run_qgemm_host(const QGemmArgs& args, const QGemmPlan& plan, const QGemmKernelCall& call,
                      uint8_t* placed_output = nullptr, const PackedOperand* packed = nullptr);

}  // namespace mmtune
