// A dense, row-major tensor that owns its bytes: what the reference, the CLI and the tests pass
// around.
#pragma once

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "dtype.h"
#include "error.h"

namespace mmtune {

using Shape = std::vector<int64_t>;

// A tensor's storage: 64-byte aligned (a cache line, an AVX-512 vector, an AMX tile row), so that
// the kernels' full-width loads of rows that start at a multiple of 64 bytes never straddle two
// cache lines (a prepacked B in malloc's 16-byte alignment made a 512^3 u8.s8 AMX call 1.3x
// slower).
template <class T>
struct CacheAlignedAllocator {
  using value_type = T;
  static constexpr std::size_t kAlignment = 64;
  CacheAlignedAllocator() = default;
  template <class U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kAlignment)));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(kAlignment)); }
  // Elements made without a value are default-initialized (bytes left as they are: see
  // Tensor::uninitialized); every other construction is the usual one.
  template <class U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const CacheAlignedAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const CacheAlignedAllocator<U>&) const {
    return false;
  }
};
using Bytes = std::vector<uint8_t, CacheAlignedAllocator<uint8_t>>;

// "[2,3,4]"; "[]" for a scalar.
std::string shape_str(const Shape& shape);
// Product of the dims (1 for a scalar); InvalidArgument naming `what` on a negative dim or
// overflow.
int64_t shape_numel(const Shape& shape, const std::string& what = "tensor");
// The same product, or -1 on a negative dim or overflow (no message built: the hot paths' check).
int64_t checked_numel(const Shape& shape);

struct Tensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  // numel() * dtype_size(dtype) bytes, little-endian (the host order on every supported target).
  // float16, bfloat16 and float8 values are stored as their bit patterns.
  Bytes bytes;

  Tensor() = default;
  Tensor(DType t, Shape s);  // zero-filled
  // The same tensor with its bytes unspecified: for an output about to be overwritten in full (a
  // kernel's), where zero-filling it first is a pass over memory for nothing.
  static Tensor uninitialized(DType t, Shape s);

  int64_t numel() const {
    const int64_t n = checked_numel(shape);
    return n >= 0 ? n : shape_numel(shape);  // the second call throws, saying why
  }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }

  template <class T>
  T* data() {
    MMTUNE_CHECK(sizeof(T) == dtype_size(dtype),
                 "element size " << sizeof(T) << " for " << dtype_name(dtype));
    return reinterpret_cast<T*>(bytes.data());
  }
  template <class T>
  const T* data() const {
    MMTUNE_CHECK(sizeof(T) == dtype_size(dtype),
                 "element size " << sizeof(T) << " for " << dtype_name(dtype));
    return reinterpret_cast<const T*>(bytes.data());
  }

  // Builds a tensor from values of the storage type (bit patterns for 16-bit floats and float8).
  template <class T>
  static Tensor from(DType t, Shape s, const std::vector<T>& values) {
    Tensor r(t, std::move(s));
    MMTUNE_CHECK(static_cast<int64_t>(values.size()) == r.numel(),
                 values.size() << " values for shape " << shape_str(r.shape));
    if (!values.empty()) std::memcpy(r.bytes.data(), values.data(), r.bytes.size());
    return r;
  }
};

// Element i of an 8-bit integer, 16/32/64-bit integer or float32/float64 tensor, widened exactly.
// (float16/bfloat16/float8 are decoded by the codecs, see reference/codecs.h.)
int64_t int_at(const Tensor& t, int64_t i);
double float_at(const Tensor& t, int64_t i);  // any float type, decoded exactly

// "uint8 [2,4]"
std::string describe(const Tensor& t);

// A row-major copy of the transpose of a 2-D tensor (exact: bytes move, nothing is computed).
Tensor transposed(const Tensor& x);
// The same from a row-major (rows, cols) matrix of elem_size-byte elements at `src` into `dst`
// (cols, rows), which must not overlap it.
void transpose_bytes(const void* src, void* dst, int64_t rows, int64_t cols, std::size_t elem_size);

}  // namespace mmtune
