// QGemm through Halide's JIT: the shared host side (autotune/qgemm_host.h) over a kernel compiled
// in this process.
#include "autotune/halide_qgemm.h"

#include <optional>

#include "autotune/halide_jit.h"
#include "autotune/qgemm_host.h"
#include "schedules/target_info.h"

namespace mmtune {

Tensor qgemm_halide(const QGemmArgs& args, const HalideVariant& v) {
  const QGemmPlan plan = validate_qgemm(args);
  const schedules::TargetInfo ti = schedules::target_info(jit::resolve_target(v.target).to_string());
  if (auto why = v.schedule.validate(ti, 32, /*integer_sum=*/true)) invalid("QGemm", "schedule: ", *why);
  const KernelKey key = qgemm_kernel_key(args, v);
  std::optional<Halide::Callable> kernel;  // compiled on the first call: none when no kernel runs
  return run_qgemm_host(
      args, plan,
      [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* c, float a_scale, int32_t a_zp,
          halide_buffer_t* bs, halide_buffer_t* bz, float ys, int32_t yzp, float alpha, halide_buffer_t* y) {
        if (!kernel) kernel = jit::compile(key, v.target);
        jit::ErrorContext ctx;
        jit::check((*kernel)(ctx.get(), a, b, c, a_scale, a_zp, bs, bz, ys, yzp, alpha, y), ctx, key);
        return 0;
      });
}

}  // namespace mmtune
