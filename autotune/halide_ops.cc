// Operator variants through Halide's JIT: argument mapping per operator.
#include "autotune/halide_ops.h"

#include "autotune/halide_jit.h"
#include "autotune/halide_qgemm.h"
#include "autotune/halide_qlinear_matmul.h"
#include "autotune/halide_quant_matmul_dequant.h"
#include "schedules/target_info.h"

namespace mmtune {

std::string host_target() { return Halide::get_host_target().to_string(); }

std::size_t jit_cache_size() { return jit::cache_size(); }

Tensor gemm_halide(const GemmArgs& args, const HalideVariant& v) {
  const GemmPlan plan = validate_gemm(args);
  const schedules::TargetInfo ti = schedules::target_info(v.target == "host" ? host_target() : v.target);
  if (auto why = v.schedule.validate(ti, gemm_acc_bits(args.a->dtype), is_integer(args.a->dtype))) invalid("Gemm", "schedule: ", *why);
  // K = 0: no sum to compute, the result is the epilogue alone; the reference evaluates it.
  if (plan.k == 0) return gemm(args);
  Tensor y(args.a->dtype, {plan.m, plan.n});
  if (y.numel() == 0) return y;
  const KernelKey key = gemm_kernel_key(args, v);
  Halide::Callable kernel = jit::compile(key, v.target);
  const Tensor dummy(args.a->dtype, {});
  auto a = view(*args.a, args.a->shape);
  auto b = view(*args.b, args.b->shape);
  auto c = args.c ? view(*args.c, {plan.m, plan.n}) : view(dummy, {1, 1});
  auto out = view(y, y.shape);
  jit::ErrorContext ctx;
  jit::check(kernel(ctx.get(), a, b, c, args.alpha, args.beta, out), ctx, key);
  return y;
}

Tensor run_halide(std::string_view op_name, const NamedTensors& in, const Attributes& attrs,
                  const HalideVariant& v) {
  const std::string op = find_operator(op_name).name;
  if (op == "Gemm") return gemm_halide(gemm_args(in, attrs), v);
  if (op == "QLinearMatMul") return qlinear_matmul_halide(qlinear_matmul_args(in, attrs), v);
  if (op == "QGemm") return qgemm_halide(qgemm_args(in, attrs), v);
  if (op == "QuantMatmulDequant") return quant_matmul_dequant_halide(quant_matmul_dequant_args(in, attrs), v);
  MMTUNE_CHECK(false, "operator " << op << " has no Halide path");
}

}  // namespace mmtune
