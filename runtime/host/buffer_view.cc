// Halide buffer views of Tensors.
#include "runtime/host/buffer_view.h"

#include <cstring>
#include <limits>
#include <vector>

#include "reference/broadcast.h"
#include "reference/error.h"

namespace mmtune {

halide_type_t halide_type(DType t) {
  switch (t) {
    case DType::kInt8:
      return halide_type_t(halide_type_int, 8);
    case DType::kUInt8:
      return halide_type_t(halide_type_uint, 8);
    case DType::kInt16:
      return halide_type_t(halide_type_int, 16);
    case DType::kUInt16:
      return halide_type_t(halide_type_uint, 16);
    case DType::kInt32:
      return halide_type_t(halide_type_int, 32);
    case DType::kUInt32:
      return halide_type_t(halide_type_uint, 32);
    case DType::kInt64:
      return halide_type_t(halide_type_int, 64);
    case DType::kUInt64:
      return halide_type_t(halide_type_uint, 64);
    case DType::kFloat16:
      return halide_type_t(halide_type_float, 16);
    case DType::kBFloat16:
      return halide_type_t(halide_type_bfloat, 16);
    case DType::kFloat32:
      return halide_type_t(halide_type_float, 32);
    case DType::kFloat64:
      return halide_type_t(halide_type_float, 64);
    default:
      return halide_type_t(halide_type_uint, 8);  // float8: bit patterns, decoded in the pipeline
  }
}

bool fits_halide_buffer(const Shape& shape, DType t) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  int64_t bytes = static_cast<int64_t>(dtype_size(t));
  for (int64_t d : shape) {
    if (d > kMax) return false;
    if (d > 0 && bytes > kMax / d) return false;
    bytes *= d;
  }
  return true;
}

namespace {

// Never a null pointer: Halide reads a buffer with a null host pointer as a bounds query and
// silently computes nothing. An empty tensor gets a valid (never read) address.
uint8_t* host_pointer(const Tensor& t, int64_t offset = 0) {
  static uint8_t empty[8] = {};
  if (t.bytes.empty()) return empty;
  return const_cast<uint8_t*>(t.bytes.data()) + offset * static_cast<int64_t>(dtype_size(t.dtype));
}

}  // namespace

Halide::Runtime::Buffer<void> view(const Tensor& t, const Shape& shape) {
  // Dense strides for a tensor read as its own shape (size-1 dims keep a real stride, which the
  // kernels' stride-1 constraint on the innermost dim needs); zero strides where it broadcasts.
  // No heap: a call's views are on its hot path (up to kInline dims on the stack, as in
  // reference/broadcast.h's broadcast_strides, which it follows).
  MMTUNE_CHECK(broadcasts_to(t.shape, shape), shape_str(t.shape) << " to " << shape_str(shape));
  constexpr std::size_t kInline = 8;
  halide_dimension_t inline_dims[kInline];
  std::vector<halide_dimension_t> more;
  halide_dimension_t* dims = inline_dims;
  if (shape.size() > kInline) {
    more.resize(shape.size());
    dims = more.data();
  }
  const bool own = t.shape == shape;
  const std::size_t off = shape.size() - t.shape.size();
  int64_t stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    const bool broadcast = !own && (d < off || t.shape[d - off] == 1);
    const std::size_t hd = shape.size() - 1 - d;
    dims[hd] = halide_dimension_t(0, static_cast<int32_t>(shape[d]),
                                  static_cast<int32_t>(broadcast ? 0 : stride));
    if (d >= off) stride *= t.shape[d - off];
  }
  return Halide::Runtime::Buffer<void>(halide_type(t.dtype), host_pointer(t),
                                       static_cast<int>(shape.size()), dims);
}

}  // namespace mmtune

namespace mmtune {

uint8_t* output_data(Tensor& y, uint8_t* placed) { return placed ? placed : host_pointer(y); }

void finish_output(Tensor& y, const uint8_t* placed) {
  if (placed && !y.bytes.empty()) std::memcpy(y.bytes.data(), placed, y.bytes.size());
}

Halide::Runtime::Buffer<void> view_parameter(const Tensor& t, int64_t count, bool one_for_all) {
  MMTUNE_CHECK(t.numel() >= (one_for_all ? 1 : count),
               "a parameter of " << t.numel() << " elements viewed as " << count);
  halide_dimension_t dim(0, static_cast<int32_t>(count), one_for_all ? 0 : 1);
  return Halide::Runtime::Buffer<void>(halide_type(t.dtype), host_pointer(t), 1, &dim);
}

Halide::Runtime::Buffer<void> view_matrix(uint8_t* data, DType t, int64_t offset, int64_t rows,
                                          int64_t cols) {
  halide_dimension_t dims[2] = {
      halide_dimension_t(0, static_cast<int32_t>(cols), 1),
      halide_dimension_t(0, static_cast<int32_t>(rows), static_cast<int32_t>(cols))};
  return Halide::Runtime::Buffer<void>(
      halide_type(t), data + offset * static_cast<int64_t>(dtype_size(t)), 2, dims);
}

Halide::Runtime::Buffer<void> view_matrix(const Tensor& t, int64_t offset, int64_t rows,
                                          int64_t cols) {
  return view_matrix(host_pointer(t, offset), t.dtype, 0, rows, cols);
}

Tensor gemm_absent_c(DType t, int64_t n) { return Tensor(t, {n}); }

Halide::Runtime::Buffer<void> view_absent_c(DType t, int64_t m, int64_t n, Tensor& storage) {
  // Zero bytes never written (.bss: untouched pages read as the shared zero page), enough for a
  // row of 131072 float64 values; a longer row gets its own zeros in `storage`.
  alignas(64) static uint8_t zeros[1 << 20];
  const int64_t bytes = n * static_cast<int64_t>(dtype_size(t));
  uint8_t* row = zeros;
  if (bytes > static_cast<int64_t>(sizeof(zeros))) {
    storage = gemm_absent_c(t, n);
    row = storage.bytes.data();
  }
  halide_dimension_t dims[2] = {halide_dimension_t(0, static_cast<int32_t>(n), 1),
                                halide_dimension_t(0, static_cast<int32_t>(m), 0)};
  return Halide::Runtime::Buffer<void>(halide_type(t), row, 2, dims);
}

Tensor tensor_at(const void* data, DType t, const Shape& shape) {
  Tensor x(t, shape);
  if (!x.bytes.empty()) std::memcpy(x.bytes.data(), data, x.bytes.size());
  return x;
}

}  // namespace mmtune
