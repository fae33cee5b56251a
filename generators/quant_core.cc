// Integer matmul core and requantization shared by the quantized generators.
#include "generators/quant_core.h"

#include "generators/matmul_core.h"

namespace mmtune::gen {

using namespace Halide;

Expr QuantCore::accumulator(const schedules::MatmulPipeline& p, const Expr& za,
                            const Expr& zb) const {
  const Expr uza = cast(UInt(32), za), uzb = cast(UInt(32), zb);
  const Var& j = p.j;
  const Var& i = p.i;
  const Expr sum = cast(UInt(32), p.acc(j, i)) - uza * column_sums(j) - uzb * row_sums(i) +
                   cast(UInt(32), k) * uza * uzb;
  return cast(Int(32), sum);  // reinterpretation of the 32 bits (two's complement)
}

QuantCore build_quant_matmul(schedules::MatmulPipeline& p, const Func& a, const Func& b,
                             const Expr& k) {
  QuantCore q;
  q.k = k;
  // Exact products of 8-bit values in int32, summed in int32: LLVM's add wraps mod 2^32 (Halide
  // emits no no-overflow flags on it), as do pmaddwd/vpdpwssd/vpdpbusd; the wrap_int32 variant
  // cases check it. (An unsigned accumulator would be wrap-safe by definition but hides the
  // dot-product pattern from Halide's instruction selection.)
  Var x("x"), y("y");
  build_matmul(p, a, b, k, cast(Int(32), 0), [](const Expr& sum, const Expr& av, const Expr& bv) {
    return sum + cast(Int(32), av) * cast(Int(32), bv);
  });
  RDom r(0, k, "rs");
  q.column_sums(x) = cast(UInt(32), 0);
  q.column_sums(x) += cast(UInt(32), cast(Int(32), b(x, r)));
  q.row_sums(y) = cast(UInt(32), 0);
  q.row_sums(y) += cast(UInt(32), cast(Int(32), a(r, y)));
  p.per_column.push_back(q.column_sums);
  p.per_call.push_back(q.row_sums);
  return q;
}

Expr requantize_float32(const Expr& acc, const Expr& m, const Expr& zp, const Type& out) {
  const Expr f = strict_float(cast(Float(32), acc) * m);
  // round() is round-half-to-even; adding zp to the integral float is exact below 2^24, and
  // anything larger saturates either way.
  const Expr r = strict_float(round(f) + cast(Float(32), zp));
  return cast(out, clamp(r, cast(Float(32), out.min()), cast(Float(32), out.max())));
}

Expr requantize_float64(const Expr& acc, const Expr& m, const Expr& zp, const Type& out) {
  const Expr d = strict_float(cast(Float(64), acc) * cast(Float(64), m) + cast(Float(64), zp));
  return cast(out, clamp(round(d), cast(Float(64), out.min()), cast(Float(64), out.max())));
}

Expr round_to_scale_type(const Expr& x, const Type& scale_type) {
  if (scale_type == Float(32)) return x;
  return cast(Float(32), cast(scale_type, x));
}

}  // namespace mmtune::gen
