// Halide buffer views of mmtune Tensors (header-only Halide runtime types: no libHalide needed, so
// the runtime library uses this too).
#pragma once

#include "HalideBuffer.h"
#include "reference/tensor.h"

namespace mmtune {

halide_type_t halide_type(DType t);  // float8 -> uint8 (bit patterns)

// A Halide view of `t` read as the row-major `shape` (Halide dims reversed): dense strides when
// t.shape == shape, zero strides where t.shape broadcasts to it.
Halide::Runtime::Buffer<void> view(const Tensor& t, const Shape& shape);

}  // namespace mmtune

namespace mmtune {

// A dense rows x cols row-major matrix starting at element `offset` of `t` (Halide dims (cols,
// rows)).
Halide::Runtime::Buffer<void> view_matrix(const Tensor& t, int64_t offset, int64_t rows,
                                          int64_t cols);

}  // namespace mmtune
