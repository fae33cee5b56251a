// float16 conversions with integer arithmetic where the target has no float16 hardware.
#include "generators/float16_codec.h"

namespace mmtune::gen {

using namespace Halide;

bool has_float16_conversions(const Target& t) {
  return (t.arch == Target::X86 && t.has_feature(Target::F16C)) ||
         (t.arch == Target::ARM && t.has_feature(Target::ARMFp16));
}

Expr float16_to_float32(const Expr& f16, const Target& t) {
  if (has_float16_conversions(t)) return cast(Float(32), f16);
  const Expr h = cast(UInt(32), reinterpret(UInt(16), f16));
  const Expr sign = (h & 0x8000) << 16;
  const Expr exponent = (h >> 10) & 0x1F;
  const Expr mantissa = h & 0x3FF;
  // Subnormals and zeros: mantissa x 2^-24, exact in float32 (and +0 for a zero mantissa).
  const Expr small =
      reinterpret(UInt(32), strict_float(cast(Float(32), mantissa) * 5.9604644775390625e-08f));
  const Expr bits =
      select(exponent == 0, small, exponent == 31, cast(UInt(32), 0x7F800000) | (mantissa << 13),
             ((exponent + 112) << 23) | (mantissa << 13));
  return reinterpret(Float(32), bits | sign);
}

Expr float32_to_float16(const Expr& f32, const Target& t) {
  if (has_float16_conversions(t)) return cast(Float(16), f32);
  const Expr u = reinterpret(UInt(32), f32);
  const Expr sign = (u >> 16) & 0x8000;
  const Expr a = u & 0x7FFFFFFF;
  // Normal range (|x| >= 2^-14): drop 13 mantissa bits with round to nearest even; a carry into
  // the exponent is the next binade (0x7C00, +Inf, from 65520 up).
  const Expr kept = (a >> 13) - ((127 - 15) << 10);
  const Expr rest = a & 0x1FFF;
  const Expr up = rest > 0x1000 || (rest == 0x1000 && (kept & 1) == 1);
  const Expr normal = kept + select(up, cast(UInt(32), 1), cast(UInt(32), 0));
  // Below 2^-14: a multiple of 2^-24, rounded ties to even (|x| x 2^24 is exact in float32).
  const Expr tiny = cast(UInt(32), strict_float(round(reinterpret(Float(32), a) * 16777216.0f)));
  const Expr h = select(a > 0x7F800000, cast(UInt(32), 0x7E00),   // NaN
                        a >= 0x477FF000, cast(UInt(32), 0x7C00),  // rounds to Inf (>= 65520), Inf
                        a >= 0x38800000, normal, tiny);
  return reinterpret(Float(16), cast(UInt(16), h | sign));
}

}  // namespace mmtune::gen
