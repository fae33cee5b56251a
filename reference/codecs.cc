// Exact codecs between float32 and float16, bfloat16 and the four ONNX float8 formats
// (SEMANTICS.md §6).
//
// All six formats share one description (Format) and three routines:
//   - round_magnitude: float32 magnitude -> the format's grid, round to nearest, ties to even;
//   - encode:          sign, NaN, Inf, overflow and zero rules around round_magnitude;
//   - decode:          exact value of a pattern as float32.
// Everything works on the float32 bit pattern with integer arithmetic, so the result does not
// depend on the compiler's or the CPU's floating-point modes (no float16 type, no FTZ/DAZ concern).
#include "reference/codecs.h"

#include <cmath>
#include <cstring>

#include "reference/error.h"

namespace mmtune {
namespace {

// A binary floating-point format narrower than float32. A pattern is sign_bit | magnitude, where
// magnitude = (exponent field << mantissa_bits) | mantissa field. The finite magnitudes are exactly
// 0 .. max_finite, and they are ordered like the values they encode.
struct Format {
  int mantissa_bits;    // stored fraction bits (the significand has one more, implicit, bit)
  int bias;             // exponent bias: exponent field e >= 1 encodes 2^(e - bias) * 1.m
  uint32_t sign_bit;    // 0x8000 or 0x80
  uint32_t max_finite;  // magnitude of the largest finite value
  uint32_t inf;         // magnitude of Inf; 0 when the format has no infinities
  uint32_t nan;         // the pattern a positive NaN encodes to (canonical quiet NaN)
  bool nan_keeps_sign;  // a negative NaN encodes to nan | sign_bit (else always to `nan`)
  bool fnuz;            // no -0 (a zero result is +0), the only NaN is the pattern sign_bit,
                        // and +-Inf encodes to NaN even when saturating (ONNX saturate=1 table)
};

//                               mant bias  sign     max     inf     nan    nan±   fnuz
constexpr Format kFloat16{10, 15, 0x8000, 0x7BFF, 0x7C00, 0x7E00, false, false};   // max 65504
constexpr Format kBFloat16{7, 127, 0x8000, 0x7F7F, 0x7F80, 0x7FC0, false, false};  // max ~3.39e38
constexpr Format kE4M3FN{3, 7, 0x80, 0x7E, 0, 0x7F, true, false};                  // max 448
constexpr Format kE4M3FNUZ{3, 8, 0x80, 0x7F, 0, 0x80, false, true};                // max 240
constexpr Format kE5M2{2, 15, 0x80, 0x7B, 0x7C, 0x7E, true, false};                // max 57344
constexpr Format kE5M2FNUZ{2, 16, 0x80, 0x7F, 0, 0x80, false, true};               // max 57344

const Format& float8_format(DType format) {
  switch (format) {
    case DType::kFloat8E4M3FN:
      return kE4M3FN;
    case DType::kFloat8E4M3FNUZ:
      return kE4M3FNUZ;
    case DType::kFloat8E5M2:
      return kE5M2;
    case DType::kFloat8E5M2FNUZ:
      return kE5M2FNUZ;
    default:
      break;
  }
  MMTUNE_CHECK(false, "float8 codec called with the non-float8 type " << dtype_name(format));
  return kE4M3FN;  // unreachable
}

uint32_t float_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float bits_float(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// Rule: IEEE 754 roundTiesToEven onto the grid of `f`, subnormals included, with an unbounded
// exponent range above (overflow is the caller's business).
// `abs_bits` is the bit pattern of a finite float32 >= 0 (sign bit clear). Returns the magnitude
// (exponent field << mantissa_bits | mantissa) of the nearest grid value, the one with an even
// mantissa on a tie; a result beyond the largest finite value returns a magnitude > f.max_finite.
uint32_t round_magnitude(uint32_t abs_bits, const Format& f) {
  // The float32 value is sig * 2^(e - 23), with sig < 2^24.
  const uint32_t exponent_field = abs_bits >> 23;
  const uint32_t fraction = abs_bits & 0x7FFFFFu;
  const uint32_t sig = exponent_field == 0 ? fraction : (fraction | 0x800000u);
  const int e = exponent_field == 0 ? -126 : static_cast<int>(exponent_field) - 127;

  // The target binade: the value's own binade, or the format's lowest one (exponent 1 - bias,
  // shared by the smallest normals and the subnormals). Its grid step is 2^(te - mantissa_bits).
  const int emin = 1 - f.bias;
  const int te = e > emin ? e : emin;
  // Value / step = sig / 2^shift. shift >= 23 - 10 = 13 for every format here.
  const int shift = 23 - f.mantissa_bits + (te - e);
  if (shift >= 32) return 0;  // sig < 2^24 < 2^(shift-1): below half a step, rounds to 0

  uint32_t k = sig >> shift;                        // whole steps (truncated)
  const uint32_t rest = sig & ((1u << shift) - 1);  // remainder, in units of 2^-shift steps
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (k & 1u) != 0)) ++k;  // nearest; on a tie, the even k

  // k counts steps of binade te, including the implicit bit when te is a normal binade. For
  // te == emin the magnitude is k itself (k < 2^m is a subnormal, k == 2^m the smallest normal);
  // each binade above adds 2^m to the magnitude. A rounding carry (k == 2^(m+1)) moves into the
  // exponent field by itself.
  return (static_cast<uint32_t>(te - emin) << f.mantissa_bits) + k;
}

// Rule: round_magnitude (RNE, subnormals kept), then the format's special-value rules:
//   NaN            -> f.nan, with the sign bit when f.nan_keeps_sign;
//   +-Inf          -> +-Inf if the format has it, else NaN;
//                     with `saturate`: +-max, or NaN for FNUZ;
//   rounded > max  -> +-Inf if the format has it, else NaN; with `saturate`: +-max;
//   zero result    -> signed zero, except +0 in FNUZ formats.
uint32_t encode(const Format& f, float x, bool saturate) {
  const uint32_t bits = float_bits(x);
  const uint32_t sign = (bits & 0x80000000u) != 0 ? f.sign_bit : 0;
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  const uint32_t nan = f.nan_keeps_sign ? (f.nan | sign) : f.nan;

  if (abs_bits > 0x7F800000u) return nan;
  if (abs_bits == 0x7F800000u) {
    if (saturate) return f.fnuz ? nan : (sign | f.max_finite);
    return f.inf != 0 ? (sign | f.inf) : nan;
  }
  const uint32_t magnitude = round_magnitude(abs_bits, f);
  if (magnitude > f.max_finite) {
    if (saturate) return sign | f.max_finite;
    return f.inf != 0 ? (sign | f.inf) : nan;
  }
  if (magnitude == 0 && f.fnuz) return 0;
  return sign | magnitude;
}

// Exact value of `pattern` (sign_bit | magnitude). NaN patterns give the quiet float32 NaN
// 0x7FC00000 with the pattern's sign bit (payload dropped); Inf gives Inf.
float decode(const Format& f, uint32_t pattern) {
  const bool negative = (pattern & f.sign_bit) != 0;
  const uint32_t magnitude = pattern & (f.sign_bit - 1);
  const bool is_nan =
      f.fnuz ? pattern == f.sign_bit : (f.inf != 0 ? magnitude > f.inf : magnitude > f.max_finite);
  if (is_nan) return bits_float(negative ? 0xFFC00000u : 0x7FC00000u);
  if (f.inf != 0 && magnitude == f.inf) return bits_float(negative ? 0xFF800000u : 0x7F800000u);

  // e == 0: 2^(1-bias) * m / 2^mb; e >= 1: 2^(e-bias) * (2^mb + m) / 2^mb. The integer significand
  // has at most 11 bits and every value of these formats is a float32, so ldexp is exact.
  const uint32_t e = magnitude >> f.mantissa_bits;
  const uint32_t m = magnitude & ((1u << f.mantissa_bits) - 1);
  const uint32_t significand = e == 0 ? m : ((1u << f.mantissa_bits) | m);
  const int exponent = (e == 0 ? 1 : static_cast<int>(e)) - f.bias - f.mantissa_bits;
  const float value = std::ldexp(static_cast<float>(significand), exponent);
  return negative ? -value : value;
}

}  // namespace

float float16_to_float(uint16_t bits) { return decode(kFloat16, bits); }
uint16_t float_to_float16(float x) { return static_cast<uint16_t>(encode(kFloat16, x, false)); }
uint16_t float_to_float16_saturate(float x) {
  return static_cast<uint16_t>(encode(kFloat16, x, true));
}

float bfloat16_to_float(uint16_t bits) { return decode(kBFloat16, bits); }
uint16_t float_to_bfloat16(float x) { return static_cast<uint16_t>(encode(kBFloat16, x, false)); }

float float8_to_float(DType format, uint8_t bits) { return decode(float8_format(format), bits); }
uint8_t float_to_float8(DType format, float x, bool saturate) {
  return static_cast<uint8_t>(encode(float8_format(format), x, saturate));
}

uint8_t float8_canonical_nan(DType format) {
  return static_cast<uint8_t>(float8_format(format).nan);
}

}  // namespace mmtune
