// QLinearMatMul through Halide's JIT: the shared host side (autotune/qlinear_matmul_host.h) over a
// kernel compiled in this process.
#include "autotune/halide_qlinear_matmul.h"

#include <optional>

#include "autotune/halide_jit.h"
#include "autotune/qlinear_matmul_host.h"
#include "schedules/target_info.h"

namespace mmtune {

Tensor qlinear_matmul_halide(const QLinearMatMulArgs& args, const HalideVariant& v) {
  const QLinearMatMulPlan plan = validate_qlinear_matmul(args);
  const schedules::TargetInfo ti = schedules::target_info(v.target == "host" ? jit::resolve_target("host").to_string() : v.target);
  if (auto why = v.schedule.validate(ti, plan.float8 ? 64 : 32, /*integer_sum=*/!plan.float8)) invalid("QLinearMatMul", "schedule: ", *why);
  const KernelKey key = qlinear_matmul_kernel_key(args, v);
  std::optional<Halide::Callable> kernel;  // compiled on the first call: none when no kernel runs
  return run_qlinear_matmul_host(
      args, plan,
      [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* as, halide_buffer_t* az, halide_buffer_t* bs,
          halide_buffer_t* bz, float ys, int32_t yzp, halide_buffer_t* y) {
        if (!kernel) kernel = jit::compile(key, v.target);
        jit::ErrorContext ctx;
        jit::check((*kernel)(ctx.get(), a, b, as, az, bs, bz, ys, yzp, y), ctx, key);
        return 0;
      });
}

}  // namespace mmtune
