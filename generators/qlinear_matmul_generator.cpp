// ONNX QLinearMatMul (int8/uint8) as a Halide generator: one 2-D product (batching and parameter
// broadcasting are the host's), bit-exact with reference/qlinear_matmul.cc: exact int32 sum
// (wrapping), the multiplier in the scale type, requantization mode float32 or float64.
#include "generators/cpu_knobs.h"
#include "generators/quant_core.h"
#include "schedules/cpu/matmul_schedule.h"

namespace mmtune::gen {
namespace {

using namespace Halide;

enum class Requant { kFloat32, kFloat64 };

class QLinearMatMulGenerator : public Generator<QLinearMatMulGenerator> {
 public:
  GeneratorParam<Type> scale_type{"scale_type", Float(32)};
  GeneratorParam<Requant> requant{"requant", Requant::kFloat32,
                                  {{"float32", Requant::kFloat32}, {"float64", Requant::kFloat64}}};
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
    lanes_ = params.lanes(target_info_of(get_target()), 32);
    q_ = build_quant_matmul(clamped_matrix(a, k, m, false, "a_c"), clamped_matrix(b, n, k, false, "b_c"), k,
                            params.tile_vectors * lanes_, params.pack_b, params.k_group);
    const Var j = q_.j, i = q_.i;
    const Type st = scale_type;
    // M = fl(fl(a_scale * b_scale) / y_scale) in the scale type (exact in float32 before rounding).
    const Expr p = round_to_scale_type(strict_float(a_scale(i) * b_scale(j)), st);
    const Expr mult = round_to_scale_type(strict_float(p / y_scale), st);
    const Expr acc = q_.accumulator(a_zero_point(i), b_zero_point(j));
    const Type out = y.type();
    y(j, i) = requant == Requant::kFloat32 ? requantize_float32(acc, mult, y_zero_point, out)
                                           : requantize_float64(acc, mult, y_zero_point, out);
    pipeline_.out = y;
    pipeline_.j = j;
    pipeline_.i = i;
    pipeline_.core = &q_.core;
    pipeline_.per_strip = {q_.column_sums};
    pipeline_.per_call = {q_.row_sums};
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
