// Integer matmul core and requantization shared by the quantized generators.
#include "generators/quant_core.h"

#include "generators/float16_codec.h"
#include "generators/matmul_core.h"

namespace mmtune::gen {

using namespace Halide;

Expr QuantCore::accumulator(const schedules::MatmulPipeline& p, const Expr& za,
                            const Expr& zb) const {
  const Expr uza = cast(UInt(32), za + a_offset), uzb = cast(UInt(32), zb);
  const Var& j = p.j;
  const Var& i = p.i;
  // All in uint32: mod 2^32 by definition (p.acc is uint32).
  const Expr sum =
      p.acc(j, i) - uza * column_sums(j) - uzb * row_sums(i) + cast(UInt(32), k) * uza * uzb;
  // The same 32 bits read as two's complement (a cast would let Halide's bounds inference assume
  // no overflow).
  return reinterpret(Int(32), sum);
}

QuantCore build_quant_matmul(schedules::MatmulPipeline& p, const Func& a, const Func& a_rows,
                             const Func& b, const Expr& k, const Func& prepacked_column_sums) {
  QuantCore q;
  q.k = k;
  // The exact sum of products, mod 2^32 by construction (build_dot8_matmul: uint32, with int32
  // partial sums that cannot overflow where K is grouped for the dot-product instructions); the
  // wrap_int32 variant cases (K = 33,100 and 150,000) check it.
  Var x("x"), y("y");
  // Mixed signs made same-sign (the layout's flip_a_sign): a' = a + a_offset in B's type, exact in
  // 8 bits, with za' = za + a_offset in the accumulator, so the sum is the same mod 2^32.
  const bool flip = p.layout.flip_a_sign && a.type() != b.type();
  if (flip) q.a_offset = a.type().is_uint() ? -128 : 128;
  auto flipped = [&](const Func& f, const std::string& name) {
    if (!flip) return f;
    Func g(name);
    g(x, y) = cast(b.type(), cast(Int(16), f(x, y)) + q.a_offset);
    return g;
  };
  const Func a_used = flipped(a, "a_flipped");
  build_dot8_matmul(p, a_used, b, k);
  RDom r(0, k, "rs");
  if (prepacked_column_sums.defined()) {
    q.column_sums = prepacked_column_sums;  // inline: read per column from the input
  } else {
    q.column_sums(x) = cast(UInt(32), 0);
    q.column_sums(x) += cast(UInt(32), cast(Int(32), b(x, r)));
    p.per_column.push_back(q.column_sums);
  }
  q.row_sums(y) = cast(UInt(32), 0);
  q.row_sums(y) += cast(UInt(32), cast(Int(32), flipped(a_rows, "a_rows_flipped")(r, y)));
  p.row_sums.push_back(q.row_sums);
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

Expr round_to_scale_type(const Expr& x, const Type& scale_type, const Target& target) {
  if (scale_type == Float(32)) return x;
  if (scale_type == Float(16)) return float16_to_float32(float32_to_float16(x, target), target);
  return cast(Float(32), cast(scale_type, x));
}

}  // namespace mmtune::gen
