// ONNX QLinearMatMul (int8/uint8) as a Halide generator: one 2-D product (batching and parameter
// broadcasting are the host's), bit-exact with reference/qlinear_matmul.cc: exact int32 sum
// (wrapping), the multiplier in the scale type, requantization mode float32 or float64.
#include "generators/cpu_knobs.h"
#include "generators/float8_codec.h"
#include "generators/quant_core.h"
#include "schedules/cpu/matmul_schedule.h"

namespace mmtune::gen {
namespace {

using namespace Halide;

enum class Requant { kFloat32, kFloat64 };

// How an 8-bit operand is read: an integer of its buffer type, or a float8 format (bit patterns).
const std::map<std::string, DType> kFormats = {{"int", DType::kInt8},
                                               {"float8e4m3fn", DType::kFloat8E4M3FN},
                                               {"float8e4m3fnuz", DType::kFloat8E4M3FNUZ},
                                               {"float8e5m2", DType::kFloat8E5M2},
                                               {"float8e5m2fnuz", DType::kFloat8E5M2FNUZ}};

class QLinearMatMulGenerator : public Generator<QLinearMatMulGenerator> {
 public:
  GeneratorParam<Type> scale_type{"scale_type", Float(32)};
  GeneratorParam<Requant> requant{"requant", Requant::kFloat32,
                                  {{"float32", Requant::kFloat32}, {"float64", Requant::kFloat64}}};
  // float8 (QLinearMatMul-21): a, b and y are float8 patterns in uint8 buffers; zero points are +0
  // (validated by the host) and not read; the sum is a sequential float64 sum of exact products.
  GeneratorParam<DType> a_format{"a_format", DType::kInt8, kFormats};
  GeneratorParam<DType> b_format{"b_format", DType::kInt8, kFormats};
  GeneratorParam<DType> y_format{"y_format", DType::kInt8, kFormats};
  CpuMatmulKnobs knobs;

  Input<Buffer<void, 2>> a{"a"};                        // (K, M): int8 or uint8
  Input<Buffer<void, 2>> b{"b"};                        // (N, K): int8 or uint8
  Input<Buffer<float, 1>> a_scale{"a_scale"};           // (M): per row, widened exactly to float32
  Input<Buffer<int32_t, 1>> a_zero_point{"a_zero_point"};  // (M)
  Input<Buffer<float, 1>> b_scale{"b_scale"};           // (N): per column
  Input<Buffer<int32_t, 1>> b_zero_point{"b_zero_point"};  // (N)
  Input<float> y_scale{"y_scale"};
  Input<int32_t> y_zero_point{"y_zero_point"};
  Output<Buffer<void, 2>> y{"y"};                       // (N, M): int8 or uint8

  void generate() {
    const Expr k = a.dim(0).extent(), m = a.dim(1).extent(), n = b.dim(0).extent();
    const schedules::CpuMatmulParams params = knobs.params();
    const bool float8 = a_format != DType::kInt8;
    lanes_ = params.lanes(target_info_of(get_target()), float8 ? 64 : 32);
    Func a_c = clamped_matrix(a, k, m, false, "a_c"), b_c = clamped_matrix(b, n, k, false, "b_c");
    // The pure vars of every Func here are named j (column) and i (row), as in MatmulCore.
    const Var j("j"), i("i");
    const Type st = scale_type;
    // M = fl(fl(a_scale * b_scale) / y_scale) in the scale type (exact in float32 before rounding).
    const Expr p = round_to_scale_type(strict_float(a_scale(i) * b_scale(j)), st);
    const Expr mult = round_to_scale_type(strict_float(p / y_scale), st);
    if (float8) {
      // Decoded exactly (at packing time), products exact in float64, summed in K order.
      Var x("x"), yv("yv");
      Func a64("a64"), b64("b64");
      a64(x, yv) = cast(Float(64), decode_float8(a_format, a_c(x, yv)));
      b64(x, yv) = cast(Float(64), decode_float8(b_format, b_c(x, yv)));
      q_.core = build_matmul(
          a64, b64, k, cast(Float(64), 0),
          [](Expr sum, Expr av, Expr bv) { return strict_float(sum + av * bv); },
          params.tile_vectors * lanes_, params.pack_b, 1);
      const Expr f = strict_float(cast(Float(32), q_.core.acc(j, i)) * mult);
      y(j, i) = encode_float8_saturate(y_format, f);
    } else {
      q_ = build_quant_matmul(a_c, b_c, k, params.tile_vectors * lanes_, params.pack_b, params.k_group);
      const Expr acc = q_.accumulator(a_zero_point(i), b_zero_point(j));
      const Type out = y.type();
      y(j, i) = requant == Requant::kFloat32 ? requantize_float32(acc, mult, y_zero_point, out)
                                             : requantize_float64(acc, mult, y_zero_point, out);
      pipeline_.per_strip = {q_.column_sums};
      pipeline_.per_call = {q_.row_sums};
    }
    pipeline_.out = y;
    pipeline_.j = j;
    pipeline_.i = i;
    pipeline_.core = &q_.core;
  }

  void schedule() { schedules::schedule_cpu_matmul(pipeline_, knobs.params(), lanes_); }

 private:
  QuantCore q_;
  schedules::CpuMatmulPipeline pipeline_;
  int lanes_ = 1;
};

}  // namespace
}  // namespace mmtune::gen

HALIDE_REGISTER_GENERATOR(mmtune::gen::QLinearMatMulGenerator, mmtune_qlinear_matmul)
