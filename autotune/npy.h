// NumPy .npy files: read any supported numeric array into a Tensor, write a Tensor atomically.
#pragma once

#include <optional>
#include <string>

#include "reference/tensor.h"

namespace mmtune {

// Reads a .npy file (format 1.0, 2.0 or 3.0 header; little- or big-endian; C or Fortran order)
// holding int8..uint64, float16, float32 or float64 values into a C-ordered, little-endian Tensor.
// `as`: reinterpret the stored values as this dtype. Allowed when the stored dtype is the unsigned
// integer of the same width (bfloat16 as uint16, float8 as uint8 bit patterns), or `as` equals the
// stored dtype. Any problem (missing/unreadable file, bad magic, truncated data, unsupported dtype,
// object arrays, shape/size mismatch, disallowed reinterpretation) throws InvalidArgument whose
// message starts with the path and names the rule. The file must hold exactly the declared data:
// missing bytes (truncation) and extra trailing bytes are both rejected. bool, complex, string,
// datetime, void (np.save's spelling of ml_dtypes arrays) and structured dtypes are rejected.
Tensor read_npy(const std::string& path, std::optional<DType> as = std::nullopt);

// Writes `t` as a format 1.0 .npy file (format 2.0 when the header needs it). bfloat16 and float8
// tensors are written as their bit patterns ('<u2' / '|u1'). The file appears whole or not at all:
// the data goes to a temporary file in the same folder, renamed over `path` on success.
// Throws InvalidArgument naming the path on any I/O failure (and leaves no file behind).
void write_npy(const std::string& path, const Tensor& t);

// The numpy dtype descriptor written for `t` ("<f4", "|i1", "<u2" for bfloat16 bits, ...).
std::string npy_descr(DType t);

}  // namespace mmtune
