// Huawei Ascend QuantMatmulDequant as a Halide generator, bit for bit the reference's steps
// (reference/quant_matmul_dequant.cc, SEMANTICS.md §5.2 and §8.6, docs/semantics.md):
//   stage 1, per row i: the x scale s_i (dynamic: fl32(max_k |fl16(x*smooth)| / 127); static:
//   x_scale)
//            and inv_i = fl32(1 / s_i); x_q(k, i) = sat_int8(RNE(fl32(xf * inv_i))), NaN -> 0,
//            where xf = f32(x), times f32(smooth) in float32 when smoothing;
//   stage 2, the exact int32 matmul of x_q and the weight + bias, wrapping mod 2^32 (x_q is held
//            as x_q + 128 in uint8, and 128 * the weight's column sums are subtracted);
//   stage 3, f = fl32(f32(acc) * wscale_j), then fl32(f * s_i) unless the weight scale is fused;
//            out = fl16(f) with overflow saturating to +-65504 and NaN as 0x7E00.
// Every float operation of stages 1 and 3 is strict_float (no contraction, no reassociation).
//
// Inputs (Halide dims are (column, row)):
//   x            float16 (m, k)
//   weight       int8 (n, k) when transpose_weight, else (k, n); with prepacked_b the (K, N) weight
//                packed in this kernel's panels (runtime/host/packed_b.h)
//   weight_scale (n,): float32, or with fused_scale the caller's int64 tensor as it is (type
//   int64),
//                whose low 32 bits hold the float32 scale (CANN's GatherMask pattern 1)
//   bias         int32 (n,)                        read only when has_bias; with prepacked_b
//                bias - 128 * the weight's column sums, mod 2^32 (the host folds them)
//   x_scale      per_token: float32 (m,); per tensor: one value, float32, or float16 when fused
//                (type set by x_scale.type)        read only when !dynamic
//   smooth       float16 (k,)                      read only when has_smooth
// An absent optional input is a 1-element dummy of its type that the pipeline never reads. The
// output's origin is (0, 0) (set by the schedule template). k must be >= 1: the host runs k = 0 as
// k = 1 with x = 0 (same bits in every mode: x_q = 0, the row max is 0 either way).
// Schedule: the target's template (K groups allowed: the sum is exact), with x_q and the dynamic
// row max as per-row producers, s and inv once per call, and the weight's column sums per column.
#include "generators/float16_codec.h"
#include "generators/matmul_core.h"
#include "schedules/schedule_knobs.h"

namespace mmtune::gen {
namespace {

using namespace Halide;

// NaN test on the bit pattern: integer arithmetic, immune to any fast-math assumption.
Expr is_nan_bits(const Expr& f32) {
  return (reinterpret(UInt(32), f32) & cast(UInt(32), 0x7FFFFFFF)) > cast(UInt(32), 0x7F800000);
}

class QuantMatmulDequantGenerator : public Generator<QuantMatmulDequantGenerator> {
 public:
  GeneratorParam<bool> transpose_weight{"transpose_weight", true};
  GeneratorParam<bool> fused_scale{"fused_scale",
                                   false};            // int64 weight scale, no x-scale multiply
  GeneratorParam<bool> dynamic{"dynamic", true};      // no x_scale: per-row scale from the row max
  GeneratorParam<bool> per_token{"per_token", true};  // x_scale (m,) rather than one value
  GeneratorParam<bool> has_smooth{"has_smooth", false};
  GeneratorParam<bool> has_bias{"has_bias", false};
  // The weight arrives prepacked (runtime/host/packed_b.h): the panels of this kernel's layout (or
  // the (K, N) weight itself when the layout packs none), and the bias input holds
  // bias - 128 * colsum (mod 2^32), colsum(j) = sum over k of weight(k, j), folded by the host
  // (run_quant_matmul_dequant_host), so the kernel reads the weight once and sums no column.
  GeneratorParam<bool> prepacked_b{"prepacked_b", false};
  schedules::ScheduleKnobs schedule_knobs;

  Input<Buffer<float16_t, 2>> x{"x"};
  Input<Buffer<int8_t, 2>> weight{"weight"};
  Input<Buffer<void, 1>> weight_scale{"weight_scale"};  // weight_scale.type: float32 or int64
  Input<Buffer<int32_t, 1>> bias{"bias"};
  Input<Buffer<void, 1>> x_scale{
      "x_scale"};  // x_scale.type: float32, or float16 (fused per tensor)
  Input<Buffer<float16_t, 1>> smooth{"smooth"};
  Output<Buffer<float16_t, 2>> y{"y"};

  void generate() {
    _halide_user_assert(!(dynamic && !per_token)) << "dynamic quantization is per token only";
    _halide_user_assert(!(fused_scale && (dynamic || per_token)))
        << "a fused (int64) weight scale needs a static per-tensor x_scale";
    _halide_user_assert(weight_scale.type() == (fused_scale ? Int(64) : Float(32)))
        << "weight_scale.type must be " << (fused_scale ? "int64" : "float32")
        << " with fused_scale=" << static_cast<bool>(fused_scale);
    if (!dynamic) {
      const Type want = fused_scale ? Float(16) : Float(32);
      _halide_user_assert(x_scale.type() == want) << "x_scale.type must be " << want;
    }

    _halide_user_assert(!(prepacked_b && (transpose_weight || !has_bias)))
        << "a prepacked weight is (K, N) (transpose_weight=false) and its column sums come folded "
           "into the bias (has_bias=true)";

    // A per-tensor x_scale may be a rank-0 tensor, viewed with a zero stride.
    if (!per_token) x_scale.dim(0).set_stride(Expr());

    // The exact int32 sum of 8-bit products (below): its data layout, fixed by the schedule.
    acc_.b_prepacked = prepacked_b;
    p_.layout = schedule_knobs.layout(get_target(), acc_);
    const bool flip = p_.layout.flip_a_sign;
    _halide_user_assert(!(prepacked_b && flip))
        << "a prepacked weight's column sums are folded into the bias for the offset x_q; the "
           "sign-flipping layout (AArch64 sdot) sums x_q itself and has no prepacked form";
    const bool b_in_panels = prepacked_b && p_.layout.packs_b();

    const Expr m = x.dim(1).extent();
    const Expr k = x.dim(0).extent();
    // The weight in panels no longer tells N: y does.
    const Expr n = b_in_panels        ? y.dim(0).extent()
                   : transpose_weight ? weight.dim(1).extent()
                                      : weight.dim(0).extent();

    Var kk("kk"), i("i");
    // float16 -> float32 exactly and back with RNE, on every target (generators/float16_codec).
    const Target target = get_target();
    auto f32 = [&](const Expr& h) { return float16_to_float32(h, target); };
    // xf = f32(x), times f32(smooth) in float32 (one rounding) when smoothing.
    Func xf("xf");
    {
      Expr v = f32(x(kk, i));
      if (has_smooth) v = strict_float(v * f32(smooth(kk)));
      xf(kk, i) = v;
    }

    // Stage 1: the x scale s(i) and its reciprocal inv(i).
    Func s("s"), inv("inv");
    if (dynamic) {
      // t = fl16(f32(x) * f32(smooth)) (the half-precision product: exact product rounded once to
      // float16), widened back exactly; the row max of |t| is exact. NaN elements never win
      // (std::fmax), so the running max is never NaN.
      Expr t = f32(x(kk, i));
      if (has_smooth) t = f32(float32_to_float16(strict_float(t * f32(smooth(kk))), target));
      Func abs_t("abs_t");
      abs_t(kk, i) = strict_float(abs(t));
      RDom rk(0, k, "rk");
      rowmax_(i) = 0.0f;
      const Expr cand = abs_t(rk, i);
      rowmax_(i) = strict_float(select(cand > rowmax_(i), cand, rowmax_(i)));
      s(i) = strict_float(rowmax_(i) / 127.0f);
    } else if (per_token) {
      s(i) = x_scale(i);
    } else {
      s(i) = x_scale.type() == Float(16) ? f32(x_scale(0)) : cast(Float(32), x_scale(0));  // exact
    }
    inv(i) = strict_float(1.0f / s(i));  // +Inf for an all-zero dynamic row

    // x_q = sat_int8(RNE(v)), NaN -> 0 (0 * Inf of an all-zero dynamic row). Halide's round() is
    // ties-to-even; clamping in float first keeps the float->int cast in range (Inf included).
    // Stored offset by 128 as uint8 (x_q + 128 in [0, 255], exact), so that the matmul is u8 x s8,
    // the operand pair of the dot-product instructions (vpdpbusd, sdot via widening, ...).
    {
      const Expr v = strict_float(xf(kk, i) * inv(i));
      const Expr q = strict_float(clamp(round(v), -128.0f, 127.0f) + 128.0f);
      xq_(kk, i) = select(is_nan_bits(v), cast(UInt(8), 128), cast(UInt(8), q));
    }

    // Stage 2: acc(j, i) = sum_k x_q(k, i) * w(j, k) = sum_k (x_q + 128) * w - 128 * colsum_j(w),
    // wrapping mod 2^32: an exact integer sum, so the schedule may consume K in groups (k_group;
    // the padding past K is zero in both operands). The schedule computes whole register tiles and
    // K groups, so both operands are read with clamped indices (k >= 1: the host runs k = 0 as
    // k = 1 with zero x, which gives the same bits).
    // Where the layout flips A's sign (MatmulLayout::flip_a_sign: a same-sign dot product only,
    // AArch64's sdot), A is x_q itself as int8 and the sum needs no column-sum correction.
    Var c("c"), rr("rr");
    Func a("a");
    const Expr stored = xq_(clamp(c, 0, k - 1), clamp(rr, 0, m - 1));
    a(c, rr) = flip ? cast(Int(8), cast(Int(16), stored) - 128) : stored;
    Func b = clamped_matrix(weight, n, k, transpose_weight, "w_clamped", KAxis::kRows);
    if (b_in_panels) {
      Func panels("panels");
      panels(c, rr) = weight(c, rr);
      p_.prepacked = panels;
    }
    // The column sums, where the kernel computes them (neither flipped nor folded into the bias).
    const bool sums_columns = !flip && !prepacked_b;
    if (sums_columns) {
      RDom rs(0, k, "rs");
      colsum_(c) = cast(UInt(32), 0);  // mod 2^32 by definition
      colsum_(c) += cast(UInt(32), cast(Int(32), b(c, rs)));
    }

    // Exact u8 x s8 products summed mod 2^32 by construction (uint32, with int32 partial sums of K
    // blocks where K is grouped, in the form Halide maps to pmaddwd / vpdpwssd / vpdpbusd).
    build_dot8_matmul(p_, a, b, k);

    // Stage 3: the epilogue.
    const Var j = p_.j, ii = p_.i;
    // uint32: mod 2^32. Prepacked, the bias holds bias - 128 * colsum already.
    Expr total = sums_columns ? p_.acc(j, ii) - (colsum_(j) << 7) : p_.acc(j, ii);
    if (has_bias) total = total + cast(UInt(32), bias(j));
    const Expr wscale = fused_scale ? reinterpret(Float(32), cast(UInt(32), weight_scale(j)))
                                    : Expr(weight_scale(j));
    Expr f = strict_float(cast(Float(32), reinterpret(Int(32), total)) * wscale);
    if (!fused_scale) f = strict_float(f * s(ii));
    // Saturate to +-65504 before the (RNE) cast: Halide's float16 cast overflows to Inf. A clamped
    // value that is not representable still rounds to 65504 or below, as the saturating encode
    // does.
    const Expr sat = strict_float(clamp(f, -65504.0f, 65504.0f));
    const Expr bits = select(is_nan_bits(f), cast(UInt(16), 0x7E00),
                             reinterpret(UInt(16), float32_to_float16(sat, target)));
    y(j, ii) = reinterpret(Float(16), bits);

    p_.out = y;
    // Before the tiles, once per call: the quantized x and the dynamic row max (rows independent),
    // the per-row scales; with the packed weight: its column sums.
    p_.per_row = {xq_};
    if (dynamic) p_.per_row.push_back(rowmax_);
    p_.per_call = {s, inv};
    if (sums_columns) p_.per_column = {colsum_};
  }

  void schedule() {
    if (!using_autoscheduler()) {
      schedule_knobs.apply(p_, get_target(), acc_, get_pipeline());
      return;
    }
    const auto e = schedule_knobs.autoschedule(p_);
    x.set_estimates({{0, e.k}, {0, e.m}});
    weight.set_estimates(transpose_weight ? Region{{0, e.k}, {0, e.n}}
                                          : Region{{0, e.n}, {0, e.k}});
    weight_scale.set_estimates({{0, e.n}});
    bias.set_estimates({{0, e.n}});
    x_scale.set_estimates({{0, per_token ? e.m : 1}});
    smooth.set_estimates({{0, e.k}});
  }

 private:
  // The exact int32 sum of 8-bit products: x_q stored offset as uint8 times int8 weights, so
  // mixed-sign operands (AArch64's layout flips them back: flip_a_sign).
  schedules::Accumulator acc_{32, true, 8, /*mixed_sign=*/true};
  Func xq_{"x_q"};
  Func rowmax_{"rowmax"};
  Func colsum_{"colsum"};
  schedules::MatmulPipeline p_;
};

}  // namespace
}  // namespace mmtune::gen

HALIDE_REGISTER_GENERATOR(mmtune::gen::QuantMatmulDequantGenerator, mmtune_quant_matmul_dequant)
