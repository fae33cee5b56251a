// float8 codecs in Halide.
#include "generators/float8_codec.h"

#include <map>

#include "reference/codecs.h"
#include "reference/error.h"

namespace mmtune::gen {

using namespace Halide;

namespace {

struct Format {
  int mantissa_bits, bias, max_magnitude;
  bool fnuz, has_inf;
};

Format format_of(DType f) {
  switch (f) {
    case DType::kFloat8E4M3FN:
      return {3, 7, 0x7E, false, false};
    case DType::kFloat8E4M3FNUZ:
      return {3, 8, 0x7F, true, false};
    case DType::kFloat8E5M2:
      return {2, 15, 0x7B, false, true};
    case DType::kFloat8E5M2FNUZ:
      return {2, 16, 0x7F, true, false};
    default:
      break;
  }
  MMTUNE_CHECK(false, "not a float8 format: " << dtype_name(f));
}

}  // namespace

Expr decode_float8(DType format, const Expr& bits) {
  // The four tables, built once (a function-local static is initialized once even when several
  // threads compile float8 kernels at the same time) and only read afterwards.
  static const std::map<DType, Buffer<float>> tables = [] {
    std::map<DType, Buffer<float>> t;
    for (DType f : {DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
                    DType::kFloat8E5M2FNUZ}) {
      Buffer<float> table(256, std::string("float8_table_") + dtype_name(f));
      for (int p = 0; p < 256; ++p) table(p) = float8_to_float(f, static_cast<uint8_t>(p));
      t.emplace(f, table);
    }
    return t;
  }();
  auto it = tables.find(format);
  MMTUNE_CHECK(it != tables.end(), "not a float8 format: " << dtype_name(format));
  return it->second(cast(Int(32), bits));
}

Expr encode_float8_saturate(DType format, const Expr& x) {
  const Format f = format_of(format);
  const Expr bits = reinterpret(UInt(32), x);
  const Expr sign = cast(UInt(8), bits >> 31) << 7;
  const Expr magnitude_bits = bits & 0x7FFFFFFF;
  const Expr is_nan = magnitude_bits > 0x7F800000;
  const Expr is_inf = magnitude_bits == 0x7F800000;
  const float max_value = float8_to_float(format, static_cast<uint8_t>(f.max_magnitude));
  // Values at or above twice the largest finite value saturate either way; clamping first keeps the
  // scaling below exact (no float32 overflow).
  const Expr v = min(reinterpret(Float(32), magnitude_bits), 2.0f * max_value);
  // Exponent of v's binade, at least the format's smallest normal exponent (1 - bias); the grid
  // step there is 2^(e - mantissa_bits).
  const Expr e = max(cast(Int(32), reinterpret(UInt(32), v) >> 23) - 127, 1 - f.bias);
  const Expr step = reinterpret(Float(32), cast(UInt(32), e - f.mantissa_bits + 127) << 23);
  // Number of steps, rounded half to even (exact: v / step is v scaled by a power of two).
  const Expr units = cast(Int(32), strict_float(round(v / step)));
  const int implicit = 1 << f.mantissa_bits;
  // Rounding up into the next binade gives units == 2 * implicit: that is exponent e + 1, mantissa
  // 0.
  const Expr carry = units >= 2 * implicit;
  const Expr e2 = select(carry, e + 1, e);
  const Expr u2 = select(carry, implicit, units);
  const Expr normal = u2 >= implicit;
  const Expr code = select(normal, ((e2 + f.bias) << f.mantissa_bits) | (u2 - implicit), u2);
  const Expr saturated = cast(UInt(8), min(code, f.max_magnitude));
  Expr finite;
  if (f.fnuz) {
    finite = select(saturated == 0, cast(UInt(8), 0), saturated | sign);
  } else {
    finite = saturated | sign;
  }
  const Expr nan = cast(UInt(8), static_cast<int>(float8_canonical_nan(format)));
  const Expr inf = f.fnuz ? Expr(cast(UInt(8), 0x80)) : Expr(cast(UInt(8), f.max_magnitude) | sign);
  return select(is_nan, nan, is_inf, inf, finite);
}

}  // namespace mmtune::gen
