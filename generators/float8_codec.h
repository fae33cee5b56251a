// float8 decode and saturating encode as Halide expressions, bit-exact with reference/codecs.h
// (SEMANTICS.md §6; encode follows the saturate=1 table).
#pragma once

#include "Halide.h"
#include "reference/dtype.h"

namespace mmtune::gen {

// The float32 value of the float8 pattern `bits` (uint8), through a 256-entry table built from the
// reference decoder.
Halide::Expr decode_float8(DType format, const Halide::Expr& bits);

// The float8 pattern (uint8) of float32 `x`: round to nearest even on the format's grid, overflow
// and +-Inf saturating (+-Inf -> NaN for the FNUZ formats), NaN -> the format's canonical NaN
// (float8_canonical_nan), as operator outputs use it.
Halide::Expr encode_float8_saturate(DType format, const Halide::Expr& x);

}  // namespace mmtune::gen
