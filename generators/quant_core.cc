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

Func QuantCore::column_offset(schedules::MatmulPipeline& p, const Expr& za, const Func& zb) const {
  Var x("x");
  Func offset("column_offset");
  const Expr uza = cast(UInt(32), za + a_offset);
  offset(x) = cast(UInt(32), k) * uza * cast(UInt(32), zb(x)) - uza * column_sums(x);
  (column_sums_computed ? p.per_column : p.column_params).push_back(offset);
  return offset;
}

Expr QuantCore::accumulator(const schedules::MatmulPipeline& p, const Func& offset,
                            const Expr& zb_row) const {
  const Var& j = p.j;
  const Var& i = p.i;
  // sum ab - za' sum b - zb sum a + K za' zb, regrouped (uint32: the same value mod 2^32).
  const Expr sum = p.acc(j, i) + offset(j) - cast(UInt(32), zb_row) * row_sums(i);
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
    q.column_sums_computed = true;
  }
  q.row_sums(y) = cast(UInt(32), 0);
  if (p.layout.row_sums_grouped && p.packed_a.defined()) {
    // The sum of A's row as products with ones in B's type, read from the row's K groups (zero
    // past K): the sum's own dot-product instruction adds them, 64 bytes at a time on AVX-512
    // VNNI. In int32 per block of at most 4096 + 15 groups (below 2^24 in magnitude: no
    // overflow), the blocks added in uint32 as the sum's blocks are; a block's groups are a whole
    // number of 16-group vectors (the padding reads zeros). The ones are stored once per call and
    // read from memory: a one in the expression (a constant, or a value the simplifier can prove
    // is 1 inside the loop) is folded away, and the bare widening sum took the saturating pair
    // sum's pattern (vpmaddubsw, exact here but not what the sums may use) instead of vpdpbusd.
    const int g = p.layout.k_group;
    const Expr groups = cast(UInt(32), (k + g - 1) / g);
    const Expr blocks = (groups + cast(UInt(32), 4095)) / cast(UInt(32), 4096);
    const Expr per_block = (groups + blocks - cast(UInt(32), 1)) / max(blocks, cast(UInt(32), 1));
    const Expr padded = cast(Int(32), (per_block + cast(UInt(32), 15)) / cast(UInt(32), 16)) * 16;
    RDom rs(0, g, 0, padded, "rs");
    RDom rsb(0, cast(Int(32), blocks), "rsb");
    Func ones("row_sum_ones");
    ones(x) = cast(b.type(), 1);
    p.per_call.push_back(ones);
    const Expr one = cast(Int(32), ones(rs.x));
    Var kb("kb");
    Func part("row_sum_blocks");
    part(y, kb) = cast(Int(32), 0);
    part(y, kb) += cast(Int(32), p.packed_a(rs.x, kb * padded + rs.y, y)) * one;
    q.row_sums(y) += reinterpret(UInt(32), part(y, rsb));
    p.row_sum_blocks.push_back(part);
  } else {
    q.row_sums(y) += cast(UInt(32), cast(Int(32), flipped(a_rows, "a_rows_flipped")(r, y)));
  }
  p.row_sums.push_back(q.row_sums);
  return q;
}

Func dense_zero_points(schedules::MatmulPipeline& p, const Func& zb) {
  Var x("x");
  Func dense("b_zero_points");
  dense(x) = zb(x);
  p.per_call.push_back(dense);
  return dense;
}

Expr requantize_float32(const Expr& acc, const Expr& m, const Expr& zp, const Type& out) {
  const Expr f = strict_float(cast(Float(32), acc) * m);
  // sat(RNE(f) + zp, lo, hi) computed as RNE(clamp(f, lo - zp, hi - zp)) + zp: the bounds are
  // integers and RNE is monotonic, so an f beyond a bound rounds to a value at or beyond it and
  // saturates to the same end (f is never NaN: the multiplier is validated finite and the
  // accumulator is an integer). The clamped g is at most 2^9 in magnitude, so g + 1.5 * 2^23 is
  // rounded once, to the nearest integer with ties to even, and lands in [2^23, 2^24), where a
  // float's bit pattern is its value's plus a constant: bits(g + 1.5 * 2^23) - bits(1.5 * 2^23) is
  // RNE(g) exactly. No round() (Halide splits it into two 256-bit halves on AVX-512), no float
  // to int conversion and no clamp after it.
  const Expr zf = cast(Float(32), zp);
  const Expr lo = strict_float(cast(Float(32), out.min()) - zf);
  const Expr hi = strict_float(cast(Float(32), out.max()) - zf);
  const float magic = 12582912.0f;  // 1.5 * 2^23, bit pattern 0x4B400000
  const Expr g = strict_float(clamp(f, lo, hi) + magic);
  const Expr r = reinterpret(Int(32), g) - (0x4B400000 - zp);
  return cast(out, r);
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
