// ONNX QLinearMatMul (int8/uint8) as a Halide generator: one 2-D product (batching and parameter
// broadcasting are the host's), bit-exact with reference/qlinear_matmul.cc: exact int32 sum
// (wrapping), the multiplier in the scale type, requantization mode float32 or float64.
#include "generators/float8_codec.h"
#include "generators/matmul_core.h"
#include "generators/quant_core.h"
#include "reference/qlinear_matmul.h"
#include "schedules/schedule_knobs.h"

namespace mmtune::gen {
namespace {

using namespace Halide;

// How an 8-bit operand is read: an integer of its buffer type, or a float8 format (bit patterns).
const std::map<std::string, DType> kFormats = {{"int", DType::kInt8},
                                               {"float8e4m3fn", DType::kFloat8E4M3FN},
                                               {"float8e4m3fnuz", DType::kFloat8E4M3FNUZ},
                                               {"float8e5m2", DType::kFloat8E5M2},
                                               {"float8e5m2fnuz", DType::kFloat8E5M2FNUZ}};

class QLinearMatMulGenerator : public Generator<QLinearMatMulGenerator> {
 public:
  GeneratorParam<Type> scale_type{"scale_type", Float(32)};
  GeneratorParam<RequantMode> requant{"requant", RequantMode::kFloat32, requant_mode_names()};
  // float8 (QLinearMatMul-21): a, b and y are float8 patterns in uint8 buffers; zero points are +0
  // (validated by the host) and not read; the sum is a sequential float64 sum of exact products.
  GeneratorParam<DType> a_format{"a_format", DType::kInt8, kFormats};
  GeneratorParam<DType> b_format{"b_format", DType::kInt8, kFormats};
  GeneratorParam<DType> y_format{"y_format", DType::kInt8, kFormats};
  // b arrives prepacked (runtime/host/packed_b.h): the panels of this kernel's layout (or b itself
  // when the layout packs none) and, for 8-bit integers, its column sums in b_column_sums.
  GeneratorParam<bool> prepacked_b{"prepacked_b", false};
  schedules::ScheduleKnobs schedule_knobs;

  Input<Buffer<void, 2>> a{"a"};  // (K, M): int8 or uint8
  Input<Buffer<void, 2>> b{"b"};  // (N, K): int8 or uint8
  // (M): per row, widened exactly to float32; stride 0 (with a_zero_point's) when one for all rows
  Input<Buffer<float, 1>> a_scale{"a_scale"};
  Input<Buffer<int32_t, 1>> a_zero_point{"a_zero_point"};  // (M)
  Input<Buffer<float, 1>> b_scale{"b_scale"};              // (N): per column
  Input<Buffer<int32_t, 1>> b_zero_point{"b_zero_point"};  // (N): stride 0 when one for all
  // (N): sum over k of b(k, j) mod 2^32 when prepacked_b (8-bit integers); otherwise not read.
  Input<Buffer<uint32_t, 1>> b_column_sums{"b_column_sums"};
  Input<float> y_scale{"y_scale"};
  Input<int32_t> y_zero_point{"y_zero_point"};
  Output<Buffer<void, 2>> y{"y"};  // (N, M): int8 or uint8

  void generate() {
    // Per-tensor parameters may arrive as zero-stride views (see the epilogue below).
    a_scale.dim(0).set_stride(Expr());
    a_zero_point.dim(0).set_stride(Expr());
    b_zero_point.dim(0).set_stride(Expr());
    const bool float8 = a_format != DType::kInt8;
    // float8: a float64 sum (of exact products, in K order: fusable); else the exact int32 sum.
    acc_ = float8 ? schedules::Accumulator{64, false, 8, false, false, true, prepacked_b}
                  : schedules::Accumulator{32,
                                           true,
                                           8,
                                           a.type() != b.type(),
                                           a.type().is_uint() && b.type().is_uint(),
                                           false,
                                           prepacked_b};
    p_.layout = schedule_knobs.layout(get_target(), acc_);
    const bool b_in_panels = prepacked_b && p_.layout.packs_b();
    // b in panels no longer tells N: y does.
    const Expr k = a.dim(0).extent(), m = a.dim(1).extent(),
               n = b_in_panels ? y.dim(0).extent() : b.dim(0).extent();
    Func a_c = clamped_matrix(a, k, m, false, "a_c", KAxis::kColumns),
         b_c = clamped_matrix(b, n, k, false, "b_c", KAxis::kRows);
    const Var j = p_.j, i = p_.i;
    const Type st = scale_type;
    // M = fl(fl(a_scale * b_scale) / y_scale) in the scale type (exact in float32 before rounding).
    auto multiplier = [&](const Expr& as, const Expr& bs) {
      const Expr p = round_to_scale_type(strict_float(as * bs), st, get_target());
      return round_to_scale_type(strict_float(p / y_scale), st, get_target());
    };
    const Expr mult = multiplier(a_scale(i), b_scale(j));
    if (float8) {
      // Decoded exactly (at packing time), products exact in float64, summed in K order.
      Var x("x"), yv("yv");
      Func a64("a64"), b64("b64");
      a64(x, yv) = cast(Float(64), decode_float8(a_format, a_c(x, yv)));
      b64(x, yv) = cast(Float(64), decode_float8(b_format, b_c(x, yv)));
      if (b_in_panels) {
        Func panels("panels");
        panels(x, yv) = cast(Float(64), decode_float8(b_format, b(x, yv)));
        p_.prepacked = panels;
      }
      build_matmul(p_, a64, b64, k, cast(Float(64), 0),
                   [](const Expr& sum, const Expr& av, const Expr& bv) {
                     return strict_float(sum + av * bv);
                   });
      const Expr f = strict_float(cast(Float(32), p_.acc(j, i)) * mult);
      y(j, i) = encode_float8_saturate(y_format, f);
    } else {
      Func sums;
      if (prepacked_b) {
        Var x("x");
        sums(x) = b_column_sums(x);
      }
      if (b_in_panels) {
        Var x("x"), yv("yv");
        Func panels("panels");
        panels(x, yv) = b(x, yv);
        p_.prepacked = panels;
      }
      const QuantCore q = build_quant_matmul(p_, a_c, clamped_rows(a, m, "a_rows"), b_c, k, sums);
      const Type out = y.type();
      auto requantized = [&](const Expr& acc, const Expr& mult) {
        return requant == RequantMode::kFloat32 ? requantize_float32(acc, mult, y_zero_point, out)
                                                : requantize_float64(acc, mult, y_zero_point, out);
      };
      const Func zb = dense_zero_points(p_, b_zero_point);
      const Expr general = requantized(q.accumulator(p_, a_zero_point(i), zb(j)), mult);
      if (p_.layout.epilogue_cases && !using_autoscheduler()) {
        // A's scale and zero point one for all rows and B's zero point one for all columns (the
        // host passes such parameters with stride 0; the usual per-tensor quantization): the
        // multiplier fl(fl(a_scale * b_scale(j)) / y_scale) and the zero-point terms of a column
        // are then the same in every row, computed once per call instead of per output (a vdivps
        // and two vpmulld per 16 outputs on AVX-512: u8.s8 calls with prepacked B ran 1.05-1.08x
        // faster at 64^3-256^3 on Zen 4 without them). The same arithmetic on the same values: the
        // same bits.
        const Expr uniform = a_scale.dim(0).stride() == 0 && a_zero_point.dim(0).stride() == 0 &&
                             b_zero_point.dim(0).stride() == 0;
        Var x("x");
        Func column_multiplier("column_multiplier");
        column_multiplier(x) = multiplier(a_scale(0), b_scale(x));
        p_.column_params.push_back(column_multiplier);
        const Func offset = q.column_offset(p_, a_zero_point(0), zb);
        const Expr fast =
            requantized(q.accumulator(p_, offset, b_zero_point(0)), column_multiplier(j));
        y(j, i) = select(uniform, fast, general);
        p_.epilogue_cases.push_back(uniform);
      } else {
        y(j, i) = general;
      }
    }
    p_.out = y;
  }

  void schedule() {
    if (!using_autoscheduler()) {
      schedule_knobs.apply(p_, get_target(), acc_, get_pipeline());
      return;
    }
    const auto e = schedule_knobs.autoschedule(p_);
    a.set_estimates({{0, e.k}, {0, e.m}});
    b.set_estimates({{0, e.n}, {0, e.k}});
    a_scale.set_estimates({{0, e.m}});
    a_zero_point.set_estimates({{0, e.m}});
    b_scale.set_estimates({{0, e.n}});
    b_zero_point.set_estimates({{0, e.n}});
    b_column_sums.set_estimates({{0, e.n}});
    y_scale.set_estimate(1.0f);
    y_zero_point.set_estimate(0);
  }

 private:
  schedules::MatmulPipeline p_;
  schedules::Accumulator acc_;
};

}  // namespace
}  // namespace mmtune::gen

HALIDE_REGISTER_GENERATOR(mmtune::gen::QLinearMatMulGenerator, mmtune_qlinear_matmul)
