// Exact codecs between float32 and the narrow float formats: float16, bfloat16 and the four float8
// formats of ONNX (SEMANTICS.md §6). Decoding is exact; encoding rounds to nearest, ties to even.
#pragma once

#include <cstdint>

#include "reference/dtype.h"

namespace mmtune {

// IEEE binary16. Encode: RNE including subnormals; |x| that rounds above 65504 -> +-Inf;
// NaN -> 0x7E00 (canonical quiet NaN, SEMANTICS.md §8).
float float16_to_float(uint16_t bits);
uint16_t float_to_float16(float x);
// As float_to_float16, but overflow and +-Inf saturate to +-65504 (Ascend AscendC Cast float->half,
// SEMANTICS.md §5.2 step 11). NaN -> 0x7E00.
uint16_t float_to_float16_saturate(float x);

// bfloat16 (the upper half of binary32). Encode: RNE; overflow -> +-Inf; NaN -> 0x7FC0.
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float x);

// float8 formats: `format` is one of kFloat8E4M3FN, kFloat8E4M3FNUZ, kFloat8E5M2, kFloat8E5M2FNUZ.
// Decode is exact (NaN patterns decode to a quiet NaN with the pattern's sign).
float float8_to_float(DType format, uint8_t bits);
// Encode with RNE on the float8 grid (subnormals included). saturate=true follows the ONNX
// saturate=1 table of SEMANTICS.md §6 (overflow and +-Inf -> +-max for E4M3FN/E5M2; for the FNUZ
// formats overflow -> +-max and +-Inf -> NaN 0x80); saturate=false is ml_dtypes' astype
// (overflow -> +-Inf for E5M2, NaN otherwise). -0 encodes as -0 where the format has it (E4M3FN,
// E5M2) and as +0 in the FNUZ formats. NaN keeps its sign where the format has signed NaNs.
uint8_t float_to_float8(DType format, float x, bool saturate);

}  // namespace mmtune
