// Exact codecs between float32 and the narrow float formats: float16, bfloat16 and the four float8
// formats of ONNX (SEMANTICS.md §6). Decoding is exact; encoding rounds to nearest, ties to even.
// Decoding a NaN pattern of any format gives the quiet float32 NaN 0x7FC00000 with the pattern's
// sign bit (0xFFC00000 when it is set); the payload is dropped. NumPy keeps float16 payloads and
// ml_dtypes canonicalises, so only "NaN with this sign" is common to all of them. All codecs work
// on the float32 bit pattern with integer arithmetic: no dependence on the compiler's float16
// support or on FTZ/DAZ modes.
#pragma once

#include <cstdint>

#include "dtype.h"

namespace mmtune {

// IEEE binary16. Encode: RNE including subnormals; |x| that rounds above 65504 -> +-Inf;
// NaN of any sign and payload -> 0x7E00 (canonical quiet NaN, SEMANTICS.md §8; NumPy would keep
// sign and payload).
float float16_to_float(uint16_t bits);
uint16_t float_to_float16(float x);
// As float_to_float16, but overflow and +-Inf saturate to +-65504 (Ascend AscendC Cast float->half,
// SEMANTICS.md §5.2 step 11). NaN -> 0x7E00.
uint16_t float_to_float16_saturate(float x);

// bfloat16 (the upper half of binary32). Encode: RNE including subnormals; overflow -> +-Inf;
// NaN of any sign and payload -> 0x7FC0 (ml_dtypes would keep the sign).
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float x);

// float8 formats: `format` is one of kFloat8E4M3FN, kFloat8E4M3FNUZ, kFloat8E5M2, kFloat8E5M2FNUZ.
// Decode is exact (NaN patterns decode to a quiet NaN with the pattern's sign; FNUZ 0x80 -> -NaN,
// as in ml_dtypes).
float float8_to_float(DType format, uint8_t bits);
// Encode with RNE on the float8 grid (subnormals included). saturate=true follows the ONNX
// saturate=1 table of SEMANTICS.md §6 (overflow and +-Inf -> +-max for E4M3FN/E5M2; for the FNUZ
// formats overflow -> +-max and +-Inf -> NaN 0x80; this is the ONNX spec table, not ONNX's
// np.clip-based saturate_cast, which maps +-Inf to +-max also for FNUZ: SEMANTICS.md §8 rule 7).
// saturate=false is ml_dtypes' astype: overflow and +-Inf -> +-Inf for E5M2, NaN otherwise (0x7F /
// 0xFF by sign for E4M3FN, 0x80 for FNUZ). -0 encodes as -0 where the format has it (E4M3FN, E5M2)
// and as +0 in the FNUZ formats, as does every negative value that rounds to zero there. NaN input
// (any payload): E4M3FN -> 0x7F / 0xFF and E5M2 -> 0x7E / 0xFE by the input's sign (what ml_dtypes
// produces), FNUZ -> 0x80. Throws InternalError if `format` is not a float8 type.
uint8_t float_to_float8(DType format, float x, bool saturate);

// The format's canonical NaN: 0x7F (E4M3FN), 0x7E (E5M2), 0x80 (FNUZ). Operator outputs use it for
// every NaN result, whose sign would otherwise depend on the evaluation order of the hardware.
uint8_t float8_canonical_nan(DType format);

}  // namespace mmtune
