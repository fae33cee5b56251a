// Halide buffer views of mmtune Tensors (header-only Halide runtime types: no libHalide needed, so
// the runtime library uses this too).
#pragma once

#include "HalideBuffer.h"
#include "reference/tensor.h"

namespace mmtune {

halide_type_t halide_type(DType t);  // float8 -> uint8 (bit patterns)

// Whether a dense tensor of `shape` and `t` fits Halide's 32-bit buffers (each extent and the byte
// size below 2^31).
bool fits_halide_buffer(const Shape& shape, DType t);

// A Halide view of `t` read as the row-major `shape` (Halide dims reversed): dense strides when
// t.shape == shape, zero strides where t.shape broadcasts to it.
Halide::Runtime::Buffer<void> view(const Tensor& t, const Shape& shape);

}  // namespace mmtune

namespace mmtune {

// A copy of the tensor of `t` and `shape` at `data` (a caller's raw operand: the prepared calls'
// reference fallback and transposes, a PackedB's later packing).
Tensor tensor_at(const void* data, DType t, const Shape& shape);

// The C a Gemm kernel reads for a call without C (with beta 0, which ignores it): a zero row of
// `n`, so that, broadcast over the rows, it takes the kernels' branch for dense rows of C.
Tensor gemm_absent_c(DType t, int64_t n);

// The same as an (m, n) view (rows of stride 0) without allocating: shared zero bytes where the row
// fits them, else a gemm_absent_c row put in `storage` (which must outlive the view).
Halide::Runtime::Buffer<void> view_absent_c(DType t, int64_t m, int64_t n, Tensor& storage);

// Whether a Gemm kernel reads the call's C: C given and beta != 0. beta = 0 (or -0) ignores C in
// the reference (its NaN and Inf do not propagate), so such a call passes gemm_absent_c instead and
// the kernel does not stream M x N values it would multiply by zero.
inline bool gemm_reads_c(const Tensor* c, float beta) { return c != nullptr && beta != 0.0f; }

// A 1-D view of the first `count` elements of the parameter vector `t`, or, when `one_for_all`,
// of its first element standing for all of them (stride 0: the form in which the kernels see a
// parameter that is one for all rows or columns, even when count is 1).
Halide::Runtime::Buffer<void> view_parameter(const Tensor& t, int64_t count, bool one_for_all);

// A dense rows x cols row-major matrix starting at element `offset` of `t` (Halide dims (cols,
// rows)).
Halide::Runtime::Buffer<void> view_matrix(const Tensor& t, int64_t offset, int64_t rows,
                                          int64_t cols);
// The same over raw storage of dtype `t`.
Halide::Runtime::Buffer<void> view_matrix(uint8_t* data, DType t, int64_t offset, int64_t rows,
                                          int64_t cols);

// Where a kernel writes an output tensor `y`: the caller's storage `placed` when given (the gate
// puts it between guard regions; it holds y's bytes), else y's own bytes. finish_output copies
// placed storage back into y once the kernels ran.
uint8_t* output_data(Tensor& y, uint8_t* placed);
void finish_output(Tensor& y, const uint8_t* placed);

}  // namespace mmtune
