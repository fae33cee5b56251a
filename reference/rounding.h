// The rounding and saturation rules the reference is written in; each helper names the rule.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace mmtune {

// RNE_int: nearest integer, ties to even (np.rint; nearbyint in the default FE_TONEAREST mode;
// x86 cvtps2dq / ARM vcvtnq_s32_f32). Returns the integral value as a double (exact, also for
// values beyond the int range); NaN stays NaN.
inline double round_half_even(double x) { return std::nearbyint(x); }

// sat_T: clamp an exact value to [lo, hi]. NaN maps to `nan_value`.
inline int64_t saturate(double x, int64_t lo, int64_t hi, int64_t nan_value = 0) {
  if (std::isnan(x)) return nan_value;
  if (x <= static_cast<double>(lo)) return lo;
  if (x >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(x);
}

// wrap32: two's-complement reduction mod 2^32 of an exact integer.
inline int32_t wrap32(int64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
}

// Requantization of an int32 accumulator to an 8-bit integer in [qmin, qmax] (SEMANTICS.md §8.1).
// Mode float32 (ONNX Runtime / MLAS): y = sat(RNE_int(fl32(fl32(acc) * m)) + zp).
inline int32_t requantize_float32(int32_t acc, float m, int32_t zp, int32_t qmin, int32_t qmax) {
  const float f =
      static_cast<float>(acc) * m;  // fl32(acc) then one float32 rounding of the product
  // RNE of a float is exact in double; adding zp to an integral double is exact below 2^53, and
  // anything larger saturates either way.
  return static_cast<int32_t>(saturate(round_half_even(f) + zp, qmin, qmax));
}
// Mode float64 (ONNX reference evaluator): y = sat(RNE_int(fl64(fl64(acc * m) + zp))): the zero
// point is added in float64 before rounding.
inline int32_t requantize_float64(int32_t acc, double m, int32_t zp, int32_t qmin, int32_t qmax) {
  const double d = static_cast<double>(acc) * m + static_cast<double>(zp);  // two float64 roundings
  return static_cast<int32_t>(saturate(round_half_even(d), qmin, qmax));
}

}  // namespace mmtune
