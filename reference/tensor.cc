// Tensor construction, shape arithmetic and exact element access.
#include "reference/tensor.h"

#include <algorithm>
#include <limits>
#include <sstream>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "reference/codecs.h"

namespace mmtune {

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

int64_t checked_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d != 0 && n > std::numeric_limits<int64_t>::max() / d)) return -1;
    n *= d;
  }
  return n;
}

int64_t shape_numel(const Shape& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) invalid(what, "shape ", shape_str(shape), " has a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      invalid(what, "shape ", shape_str(shape), " has more than 2^63 elements");
    }
    n *= d;
  }
  return n;
}

Tensor::Tensor(DType t, Shape s) : dtype(t), shape(std::move(s)) {
  bytes.assign(static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype), 0);
}

Tensor Tensor::uninitialized(DType t, Shape s) {
  Tensor r;
  r.dtype = t;
  r.shape = std::move(s);
  r.bytes.resize(static_cast<std::size_t>(shape_numel(r.shape)) * dtype_size(t));
  return r;
}

int64_t int_at(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::kInt8:
      return t.data<int8_t>()[i];
    case DType::kUInt8:
      return t.data<uint8_t>()[i];
    case DType::kInt16:
      return t.data<int16_t>()[i];
    case DType::kUInt16:
      return t.data<uint16_t>()[i];
    case DType::kInt32:
      return t.data<int32_t>()[i];
    case DType::kUInt32:
      return t.data<uint32_t>()[i];
    case DType::kInt64:
      return t.data<int64_t>()[i];
    case DType::kUInt64:
      return static_cast<int64_t>(t.data<uint64_t>()[i]);
    default:
      break;
  }
  MMTUNE_CHECK(false, "int_at on " << dtype_name(t.dtype));
}

double float_at(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::kFloat16:
      return float16_to_float(t.data<uint16_t>()[i]);
    case DType::kBFloat16:
      return bfloat16_to_float(t.data<uint16_t>()[i]);
    case DType::kFloat32:
      return t.data<float>()[i];
    case DType::kFloat64:
      return t.data<double>()[i];
    default:
      if (is_float8(t.dtype)) return float8_to_float(t.dtype, t.data<uint8_t>()[i]);
      break;
  }
  MMTUNE_CHECK(false, "float_at on " << dtype_name(t.dtype));
}

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape);
}

namespace {

#if defined(__SSE2__)
// The 16 x 16 bytes at src (row stride `cols`) transposed to dst (row stride `rows`): four rounds
// of interleaves (bytes, then pairs, quads and octets of rows): 64 interleaves for 256 bytes.
void transpose_16x16_bytes(const uint8_t* src, int64_t cols, uint8_t* dst, int64_t rows) {
  __m128i a[16], b[16];
  for (int r = 0; r < 16; ++r)
    a[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + r * cols));
  // b[p] / b[p + 8]: rows 2p and 2p + 1 interleaved, columns 0-7 / 8-15 (a 16-bit unit a column).
  for (int p = 0; p < 8; ++p) {
    b[p] = _mm_unpacklo_epi8(a[2 * p], a[2 * p + 1]);
    b[p + 8] = _mm_unpackhi_epi8(a[2 * p], a[2 * p + 1]);
  }
  // a[4g + q]: rows 4q..4q+3 of columns 4g..4g+3 (a 32-bit unit a column).
  for (int h = 0; h < 2; ++h) {
    for (int q = 0; q < 4; ++q) {
      a[8 * h + q] = _mm_unpacklo_epi16(b[8 * h + 2 * q], b[8 * h + 2 * q + 1]);
      a[8 * h + 4 + q] = _mm_unpackhi_epi16(b[8 * h + 2 * q], b[8 * h + 2 * q + 1]);
    }
  }
  // b[2e + o]: rows 8o..8o+7 of columns 2e and 2e + 1 (a 64-bit unit a column).
  for (int g = 0; g < 4; ++g) {
    for (int o = 0; o < 2; ++o) {
      b[4 * g + o] = _mm_unpacklo_epi32(a[4 * g + 2 * o], a[4 * g + 2 * o + 1]);
      b[4 * g + 2 + o] = _mm_unpackhi_epi32(a[4 * g + 2 * o], a[4 * g + 2 * o + 1]);
    }
  }
  // Column c: its 16 rows.
  for (int e = 0; e < 8; ++e) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * e) * rows),
                     _mm_unpacklo_epi64(b[2 * e], b[2 * e + 1]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * e + 1) * rows),
                     _mm_unpackhi_epi64(b[2 * e], b[2 * e + 1]));
  }
}
#endif

template <class T>
void transpose_into(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  const T* s = reinterpret_cast<const T*>(src);
  T* o = reinterpret_cast<T*>(dst);
  // Strips of 16 rows of x read along the rows (16 sequential streams), in blocks of 16 x 8 each
  // written as 8 runs of 16 along the output's rows (whole 64-byte lines for float32). Blocks of
  // 32 x 32 read and wrote 32 lines a power-of-two stride apart, which share a set of L1: a
  // float32 transpose took 2.5 ns a value at 512^2, 3.7 at 1024^2, 4.9 at 4096^2 on a Xeon; this
  // order with 4 x 4 register transposes 0.19 at 256^2, 0.36-0.39 at 512^2, 0.64-0.69 at 1024^2,
  // 2.4-2.5 at 4096^2 (64 MiB each way: memory-bound).
  constexpr int64_t kB = 8, kRows = 16;
  // The byte path below does the first whole_rows x whole_cols; the loop after it does the rest.
  int64_t whole_rows = 0, whole_cols = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 1) {
    // Bytes (an int8 weight of QuantMatmulDequant, (N, K) to (K, N) on every call): blocks of
    // 64 x 64, each 16 register transposes of 16 x 16, columns of 16 outer, so that every line
    // of the output is written whole (64 bytes of one output row) before the next; the blocks in
    // squares of 256 x 256, whose 512 pages of input and output stay in the TLB. 4096 x 4096 on
    // Zen 4 (1 thread, best of 20): 17.7 ms in the scalar order below, 5.5 ms this way (2048^2:
    // 2.1 -> 0.64 ms); a memcpy of the same 16 MiB takes 1.0 ms, so there is room left.
    constexpr int64_t kBlock = 64, kT = 16, kSuper = 256;
    whole_rows = rows / kBlock * kBlock;
    whole_cols = cols / kBlock * kBlock;
    for (int64_t s0 = 0; s0 < whole_rows; s0 += kSuper) {
      for (int64_t t0 = 0; t0 < whole_cols; t0 += kSuper) {
        for (int64_t i0 = s0; i0 < std::min(whole_rows, s0 + kSuper); i0 += kBlock) {
          for (int64_t j0 = t0; j0 < std::min(whole_cols, t0 + kSuper); j0 += kBlock) {
            for (int64_t bj = 0; bj < kBlock; bj += kT) {
              for (int64_t bi = 0; bi < kBlock; bi += kT) {
                transpose_16x16_bytes(src + (i0 + bi) * cols + j0 + bj, cols,
                                      dst + (j0 + bj) * rows + i0 + bi, rows);
              }
            }
          }
        }
      }
    }
  }
#endif
  for (int64_t i0 = 0; i0 < rows; i0 += kRows) {
    const int64_t i1 = std::min(rows, i0 + kRows);
    int64_t j0 = i0 < whole_rows ? whole_cols : 0;  // (whole_rows: a multiple of kRows)
#if defined(__SSE2__)
    if constexpr (sizeof(T) == 4) {
      // Whole 16 x 8 blocks of 32-bit values: eight 4 x 4 register transposes (bit patterns move
      // through float shuffles unchanged).
      if (i1 - i0 == kRows) {
        for (; j0 + kB <= cols; j0 += kB) {
          for (int64_t bj = 0; bj < kB; bj += 4) {
            for (int64_t bi = 0; bi < kRows; bi += 4) {
              const float* in = reinterpret_cast<const float*>(s + (i0 + bi) * cols + j0 + bj);
              __m128 r0 = _mm_loadu_ps(in), r1 = _mm_loadu_ps(in + cols),
                     r2 = _mm_loadu_ps(in + 2 * cols), r3 = _mm_loadu_ps(in + 3 * cols);
              _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
              float* out = reinterpret_cast<float*>(o + (j0 + bj) * rows + i0 + bi);
              _mm_storeu_ps(out, r0);
              _mm_storeu_ps(out + rows, r1);
              _mm_storeu_ps(out + 2 * rows, r2);
              _mm_storeu_ps(out + 3 * rows, r3);
            }
          }
        }
      }
    }
#endif
    for (; j0 < cols; j0 += kB) {
      const int64_t j1 = std::min(cols, j0 + kB);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) o[j * rows + i] = s[i * cols + j];
      }
    }
  }
}

}  // namespace

void transpose_bytes(const void* src, void* dst, int64_t rows, int64_t cols,
                     std::size_t elem_size) {
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  switch (elem_size) {
    case 1:
      transpose_into<uint8_t>(s, d, rows, cols);
      break;
    case 2:
      transpose_into<uint16_t>(s, d, rows, cols);
      break;
    case 4:
      transpose_into<uint32_t>(s, d, rows, cols);
      break;
    case 8:
      transpose_into<uint64_t>(s, d, rows, cols);
      break;
    default:
      MMTUNE_CHECK(false, "element size " << elem_size);
  }
}

Tensor transposed(const Tensor& x) {
  MMTUNE_CHECK(x.rank() == 2, "transposed of " << describe(x));
  const int64_t rows = x.shape[0], cols = x.shape[1];
  Tensor r = Tensor::uninitialized(x.dtype, {cols, rows});  // every element written below
  transpose_bytes(x.bytes.data(), r.bytes.data(), rows, cols, dtype_size(x.dtype));
  return r;
}

}  // namespace mmtune
