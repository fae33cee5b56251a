// ONNX Gemm-13 as a Halide generator: Y = alpha * op(A) op(B) + beta * C for the eight Gemm types.
// The arithmetic is the reference's (reference/gemm.cc, docs/semantics.md): the K sum in the
// accumulation type under the float contract, then the epilogue, always strict.
#include <limits>

#include "generators/float16_codec.h"
#include "generators/matmul_core.h"
#include "reference/gemm.h"
#include "schedules/schedule_knobs.h"

namespace mmtune::gen {
namespace {

using namespace Halide;

class GemmGenerator : public Generator<GemmGenerator> {
 public:
  GeneratorParam<bool> trans_a{"trans_a", false};
  GeneratorParam<bool> trans_b{"trans_b", false};
  GeneratorParam<bool> has_c{"has_c", false};
  GeneratorParam<FloatContract> contract{"contract", FloatContract::kStrict,
                                         float_contract_names()};
  // B arrives prepacked (runtime/host/packed_b.h) in the panels of this kernel's layout, or as B
  // itself (K, N) when the layout packs none; trans_b must be false.
  GeneratorParam<bool> prepacked_b{"prepacked_b", false};
  schedules::ScheduleKnobs schedule_knobs;

  // A, B and C share the Gemm type T (set as A.type, B.type, C.type, Y.type).
  Input<Buffer<void, 2>> A{"A"};
  Input<Buffer<void, 2>> B{"B"};
  Input<Buffer<void, 2>> C{"C"};  // (N, M) in Halide order; broadcast with zero strides
  Input<float> alpha{"alpha"};
  Input<float> beta{"beta"};
  Output<Buffer<void, 2>> Y{"Y"};

  void generate() {
    // C is read through a broadcast view: any stride, zero included.
    C.dim(0).set_stride(Expr());
    const Type t = A.type();
    const bool is_float = t.is_float() || t.is_bfloat();
    const bool narrow = t.bits() == 16;
    // Accumulate floats in float32 (float64 for float64), integers in the unsigned type of T's
    // width so that overflow wraps by definition.
    const Type acc_t = is_float ? (t.bits() == 64 ? Float(64) : Float(32)) : UInt(t.bits());
    const bool strict_sum = effective_contract(dtype_of(t), contract) == FloatContract::kStrict;
    // A float sum of fused steps, or of float16 products (exact in float32, so fused and separate
    // steps round alike), may be computed with fused multiply-adds.
    acc_ = {acc_t.bits(),
            /*exact=*/!is_float,
            t.bits(),
            /*mixed_sign=*/false,
            /*unsigned_operands=*/t.is_uint(),
            /*fusable=*/is_float && (!strict_sum || t == Float(16)),
            /*b_prepacked=*/prepacked_b};
    _halide_user_assert(!(prepacked_b && trans_b)) << "Gemm: a prepacked B is never transposed\n";
    p_.layout = schedule_knobs.layout(get_target(), acc_);
    const bool b_in_panels = prepacked_b && p_.layout.packs_b();
    const Expr m = trans_a ? A.dim(0).extent() : A.dim(1).extent();
    const Expr k = trans_a ? A.dim(1).extent() : A.dim(0).extent();
    // B in panels no longer tells N: Y does.
    const Expr n = b_in_panels ? Y.dim(0).extent()
                   : trans_b   ? B.dim(1).extent()
                               : B.dim(0).extent();

    Func a_raw = clamped_matrix(A, k, m, trans_a, "a_raw", KAxis::kColumns);
    Func b_raw = clamped_matrix(B, n, k, trans_b, "b_raw", KAxis::kRows);
    Var x("x"), y("y");
    Func a("a"), b("b");
    // Widened to the accumulation type exactly (float16 through the exact codec).
    auto widen = [&](const Expr& v) {
      return t == Float(16) ? float16_to_float32(v, get_target()) : cast(acc_t, v);
    };
    a(x, y) = widen(a_raw(x, y));
    b(x, y) = widen(b_raw(x, y));
    if (b_in_panels) {
      Func panels("panels");
      panels(x, y) = widen(B(x, y));
      p_.prepacked = panels;
    }

    if (!strict_sum) {
      const auto why = schedules::why_no_fma(schedules::target_info(get_target()));
      _halide_user_assert(!why) << "Gemm: " << why.value_or("") << "\n";
    }
    build_matmul(p_, a, b, k, cast(acc_t, 0), [&](const Expr& sum, const Expr& av, const Expr& bv) {
      // strict: the product and the sum rounded separately. fma: one explicit fused multiply-add
      // per step, in K order (the epilogue's strict_float keeps the module free of fast-math).
      return strict_sum ? strict_float(sum + av * bv) : fused_multiply_add(av, bv, sum);
    });
    Func acc = p_.acc;

    const Var j = p_.j, i = p_.i;
    Expr c = has_c ? C(j, i) : Expr();
    Expr result;
    if (is_float) {
      const Type ep_t = t.bits() == 64 ? Float(64) : Float(32);
      Expr d = acc(j, i);
      // d rounded to T once, then the float32 epilogue.
      if (t == Float(16)) {
        d = float16_to_float32(float32_to_float16(d, get_target()), get_target());
      } else if (narrow) {
        d = cast(ep_t, cast(t, d));
      }
      Expr v = strict_float(d * cast(ep_t, alpha));
      if (has_c) {
        v = select(beta == 0.0f, v, strict_float(v + strict_float(widen(c) * cast(ep_t, beta))));
      }
      result = t == Float(16) ? float32_to_float16(v, get_target()) : cast(t, v);
      if (!narrow) {
        // Canonical NaN (positive quiet NaN), whatever sign the hardware gave it.
        result = select(
            is_nan(v),
            cast(t, Halide::Internal::make_const(t, std::numeric_limits<double>::quiet_NaN())),
            result);
      } else {
        // Canonical NaN (0x7E00 / 0x7FC0); Halide's emulated cast keeps another pattern.
        const Expr nan_bits = t.is_bfloat() ? 0x7FC0 : 0x7E00;
        result = reinterpret(
            t, select(is_nan(v), cast(UInt(16), nan_bits), reinterpret(UInt(16), result)));
      }
    } else {
      const Expr acc_t_value = acc(j, i);
      const Expr use_c = has_c ? (beta != 0.0f) : Internal::const_false();
      // alpha == 1 and (no C or beta in {0, 1}): exact, wrapping.
      const Expr exact = alpha == 1.0f && (!use_c || beta == 1.0f);
      Expr wrapped = acc_t_value;
      if (has_c) wrapped = select(use_c, wrapped + cast(acc_t, c), wrapped);
      // Otherwise the float64 epilogue, truncated toward zero and saturated (NaN -> 0).
      Expr f = strict_float(cast(Float(64), reinterpret(t, acc_t_value)) * cast(Float(64), alpha));
      if (has_c) {
        f = select(use_c,
                   strict_float(f + strict_float(cast(Float(64), c) * cast(Float(64), beta))), f);
      }
      f = trunc(f);
      const Expr upper =
          Internal::make_const(Float(64), std::ldexp(1.0, t.is_int() ? t.bits() - 1 : t.bits()));
      Expr sat = select(is_nan(f), cast(t, 0), f <= cast(Float(64), t.min()), t.min(),
                        f >= Expr(upper), t.max(), cast(t, f));
      result = select(exact, reinterpret(t, wrapped), sat);
    }
    Y(j, i) = result;
    if (has_c && p_.layout.epilogue_cases && !using_autoscheduler()) {
      // A branch for rows of C dense (C (M, N), or a row (N,) broadcast over the rows; the
      // runtime's calls without C pass a zero row and beta 0), in which each vector of outputs
      // reads C with one vector load: the same arithmetic on the same values, the same bits.
      // C's stride is otherwise unknown (zero where it broadcasts), and its reads were 16 scalar
      // loads and inserts per vector: 14% of a 1024^3 float32 call at 1 thread on a Xeon with
      // AVX-512. (A branch for beta = 0 that reads no C did not simplify: Halide 21 does not
      // substitute a float parameter's value from a specialization's condition.)
      p_.epilogue_cases.push_back(C.dim(0).stride() == 1);
    }
    p_.out = Y;
  }

  void schedule() {
    if (!using_autoscheduler()) {
      schedule_knobs.apply(p_, get_target(), acc_, get_pipeline());
      return;
    }
    const auto e = schedule_knobs.autoschedule(p_);
    A.set_estimates(trans_a ? Region{{0, e.m}, {0, e.k}} : Region{{0, e.k}, {0, e.m}});
    B.set_estimates(trans_b ? Region{{0, e.k}, {0, e.n}} : Region{{0, e.n}, {0, e.k}});
    C.set_estimates({{0, e.n}, {0, e.m}});
    alpha.set_estimate(1.0f);
    beta.set_estimate(has_c ? 1.0f : 0.0f);
  }

 private:
  schedules::MatmulPipeline p_;
  schedules::Accumulator acc_;
};

}  // namespace
}  // namespace mmtune::gen

HALIDE_REGISTER_GENERATOR(mmtune::gen::GemmGenerator, mmtune_gemm)
