// QLinearMatMul's host side, shared by the JIT path (autotune/halide_qlinear_matmul.cc) and the
// runtime's AOT kernels (runtime/src/qlinear_matmul.cc): the generator computes one 2-D product
// with per-row / per-column parameters; the host walks the N-D batch (broadcasting), widens each
// entry's parameters exactly and calls the kernel once per entry. No libHalide: only Halide's
// runtime buffer types.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "HalideRuntime.h"
#include "reference/qlinear_matmul.h"
#include "runtime/host/packed_b.h"

namespace mmtune {

// One call of an mmtune_qlinear_matmul kernel, in the generator's argument order (the caller adds
// its user context): a (M, K), b (K, N) of the operands' types; a_scale (M) float32 and
// a_zero_point (M) int32 per row; b_scale (N) float32 and b_zero_point (N) int32 per column;
// b_column_sums (N) uint32 (read by prepacked_b kernels only); y (M, N) of the output type.
// Returns the Halide error code; a caller that can name the failure better (the JIT's key, the
// runtime's kernel) throws itself.
using QLinearMatMulKernelCall = std::function<int(
    halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* a_scale, halide_buffer_t* a_zero_point,
    halide_buffer_t* b_scale, halide_buffer_t* b_zero_point, halide_buffer_t* b_column_sums,
    float y_scale, int32_t y_zero_point, halide_buffer_t* y)>;

// Why a valid call (`plan` = validate_qlinear_matmul(args)) runs no kernel, or nullopt: an empty
// output ("Y is empty"), or K = 0 (an empty sum: the reference evaluates the requantized zero; an
// empty operand has no host pointer, which a Halide pipeline takes for a bounds query).
std::optional<std::string> qlinear_matmul_no_kernel(const QLinearMatMulPlan& plan);

// One batch entry's per-row and per-column parameters, widened exactly: a_scale (M) and b_scale
// (N) to float32, a_zero_point (M) and b_zero_point (N) to int32 (float8: zero points 0), and the
// scalars y_scale, y_zero_point.
// a_uniform: a_scale and a_zero_point each one value for all rows; b_zero_uniform: b_zero_point
// one for all columns (the kernels then see them with stride 0: param_views).
struct QLinearMatMulEntryParams {
  Tensor a_scale, a_zero_point, b_scale, b_zero_point;
  bool a_uniform = false, b_zero_uniform = false;
  float y_scale = 1.0f;
  int32_t y_zero_point = 0;
};
// Sizes `p` for `plan` (once), then fills it for the batch entry at `batch_index` (one index per
// dim of plan.shape.batch; empty for 2-D operands).
void widen_entry_params(const QLinearMatMulArgs& args, const QLinearMatMulPlan& plan,
                        const std::vector<int64_t>& batch_index, QLinearMatMulEntryParams& p);

// The kernel's views of `p`'s a_scale, a_zero_point (m), b_scale, b_zero_point (n), in that
// order: stride 0 where p says a parameter is one for all.
std::array<Halide::Runtime::Buffer<void>, 4> param_views(const QLinearMatMulEntryParams& p,
                                                         int64_t m, int64_t n);

// Y of a valid call (`plan` = validate_qlinear_matmul(args)) through `call`, bit for bit the
// reference's: when qlinear_matmul_no_kernel(plan) says so, without calling it (an empty Y, or the
// reference's result); else one call per batch entry (row-major order over the broadcast batch),
// with that entry's scales widened exactly to float32 and zero points to int32 (float8: zero points
// 0, not read). The kernels write into `placed_output` when given (output_data, buffer_view.h).
// With `packed` (b 2-D), the kernel reads its panels and column sums instead of b.
Tensor run_qlinear_matmul_host(const QLinearMatMulArgs& args, const QLinearMatMulPlan& plan,
                               const QLinearMatMulKernelCall& call,
                               uint8_t* placed_output = nullptr,
                               const PackedOperand* packed = nullptr);

}  // namespace mmtune
