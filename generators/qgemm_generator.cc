// com.microsoft QGemm as a Halide generator (transposes are materialized by the host), bit-exact
// with reference/qgemm.cc: acc = wrap32(C + sum (A - za)(B - zb_j)), output scale s_j =
// fl32(fl32(alpha * a_scale) * b_scale_j) [/ y_scale], then float32 output fl32(fl32(acc) s_j) or
// float32-mode requantization.
#include "generators/matmul_core.h"
#include "generators/quant_core.h"
#include "schedules/schedule_knobs.h"

namespace mmtune::gen {
namespace {

using namespace Halide;

class QGemmGenerator : public Generator<QGemmGenerator> {
 public:
  GeneratorParam<bool> has_y_scale{"has_y_scale", false};
  // B arrives prepacked (runtime/host/packed_b.h): the panels of this kernel's layout (or B itself
  // when the layout packs none), and its column sums in b_column_sums.
  GeneratorParam<bool> prepacked_b{"prepacked_b", false};
  schedules::ScheduleKnobs schedule_knobs;

  Input<Buffer<void, 2>> A{"A"};     // (K, M): int8 or uint8
  Input<Buffer<void, 2>> B{"B"};     // (N, K): int8 or uint8
  Input<Buffer<int32_t, 2>> C{"C"};  // (N, M), broadcast with zero strides
  Input<float> a_scale{"a_scale"};
  Input<int32_t> a_zero_point{"a_zero_point"};
  Input<Buffer<float, 1>> b_scale{"b_scale"};  // (N), per column (zero stride if per tensor)
  Input<Buffer<int32_t, 1>> b_zero_point{"b_zero_point"};  // (N)
  // (N): sum over k of B(k, j) mod 2^32 when prepacked_b; otherwise not read.
  Input<Buffer<uint32_t, 1>> b_column_sums{"b_column_sums"};
  Input<float> y_scale{"y_scale"};              // read only when has_y_scale
  Input<int32_t> y_zero_point{"y_zero_point"};  // read only for a quantized output
  Input<float> alpha{"alpha"};
  Output<Buffer<void, 2>> Y{"Y"};  // (N, M): float32, int8 or uint8

  void generate() {
    C.dim(0).set_stride(Expr());
    b_scale.dim(0).set_stride(Expr());
    b_zero_point.dim(0).set_stride(Expr());
    // The exact int32 sum of 8-bit products.
    acc_ = {32,    true,       8, A.type() != B.type(), A.type().is_uint() && B.type().is_uint(),
            false, prepacked_b};
    p_.layout = schedule_knobs.layout(get_target(), acc_);
    const bool b_in_panels = prepacked_b && p_.layout.packs_b();
    // B in panels no longer tells N: Y does.
    const Expr k = A.dim(0).extent(), m = A.dim(1).extent(),
               n = b_in_panels ? Y.dim(0).extent() : B.dim(0).extent();
    Var x("x"), y("y");
    Func sums, panels("panels");
    if (prepacked_b) sums(x) = b_column_sums(x);
    if (b_in_panels) {
      panels(x, y) = B(x, y);
      p_.prepacked = panels;
    }
    const QuantCore q = build_quant_matmul(
        p_, clamped_matrix(A, k, m, false, "a_c", KAxis::kColumns), clamped_rows(A, m, "a_rows"),
        clamped_matrix(B, n, k, false, "b_c", KAxis::kRows), k, sums);
    const Var j = p_.j, i = p_.i;
    const Func zb = dense_zero_points(p_, b_zero_point);
    // The scale of column j: fl(fl(alpha * a_scale) * b_scale(j)), then / y_scale.
    auto column_scale = [&](const Expr& bs) {
      Expr s = strict_float(strict_float(alpha * a_scale) * bs);
      return has_y_scale ? strict_float(s / y_scale) : s;
    };
    Expr sum, s;
    if (p_.layout.epilogue_cases && !using_autoscheduler()) {
      // A's zero point and scale are one for all rows: the scale and the zero-point terms of a
      // column are computed once per call instead of per output, the form QLinearMatMul's
      // per-tensor branch takes (u8.s8->float32 prepacked calls on Zen 4 ran 0.98-1.01x as fast
      // as before at 64^3-512^3: no measurable gain here).
      Func scales("column_scale");
      scales(x) = column_scale(b_scale(x));
      p_.column_params.push_back(scales);
      sum = q.accumulator(p_, q.column_offset(p_, a_zero_point, zb), zb(j));
      s = scales(j);
    } else {
      sum = q.accumulator(p_, a_zero_point, zb(j));
      s = column_scale(b_scale(j));
    }
    // acc = C + sum, wrapping: add in uint32.
    const Expr acc =
        reinterpret(Int(32), reinterpret(UInt(32), sum) + reinterpret(UInt(32), C(j, i)));
    const Type out = Y.type();
    if (out.is_float()) {
      Y(j, i) = strict_float(cast(Float(32), acc) * s);
    } else {
      Y(j, i) = requantize_float32(acc, s, y_zero_point, out);
    }
    p_.out = Y;
  }

  void schedule() {
    if (!using_autoscheduler()) {
      schedule_knobs.apply(p_, get_target(), acc_, get_pipeline());
      return;
    }
    const auto e = schedule_knobs.autoschedule(p_);
    A.set_estimates({{0, e.k}, {0, e.m}});
    B.set_estimates({{0, e.n}, {0, e.k}});
    C.set_estimates({{0, e.n}, {0, e.m}});
    b_scale.set_estimates({{0, e.n}});
    b_zero_point.set_estimates({{0, e.n}});
    b_column_sums.set_estimates({{0, e.n}});
    a_scale.set_estimate(1.0f);
    a_zero_point.set_estimate(0);
    y_scale.set_estimate(1.0f);
    y_zero_point.set_estimate(0);
    alpha.set_estimate(1.0f);
  }

 private:
  schedules::Accumulator acc_;
  schedules::MatmulPipeline p_;
};

}  // namespace
}  // namespace mmtune::gen

HALIDE_REGISTER_GENERATOR(mmtune::gen::QGemmGenerator, mmtune_qgemm)
