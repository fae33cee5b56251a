// QuantMatmulDequant through Halide's JIT: the shared host side
// (autotune/quant_matmul_dequant_host.h) over a kernel compiled in this process.
#include "autotune/halide_quant_matmul_dequant.h"

#include <optional>

#include "autotune/quant_matmul_dequant_host.h"
#include "schedules/target_info.h"

namespace mmtune {

Tensor quant_matmul_dequant_halide(const QuantMatmulDequantArgs& args, const HalideVariant& v) {
  const QuantMatmulDequantPlan plan = validate_quant_matmul_dequant(args);
  const schedules::TargetInfo ti = schedules::target_info(v.target == "host" ? host_target() : v.target);
  if (auto why = v.schedule.validate(ti, 32, /*integer_sum=*/true)) invalid("QuantMatmulDequant", "schedule: ", *why);
  const KernelKey key = quant_matmul_dequant_kernel_key(args, v);
  std::optional<Halide::Callable> kernel;  // compiled on the first call: none when no kernel runs
  return run_quant_matmul_dequant_host(
      args, plan,
      [&](halide_buffer_t* x, halide_buffer_t* weight, halide_buffer_t* weight_scale, halide_buffer_t* bias,
          halide_buffer_t* x_scale, halide_buffer_t* smooth, halide_buffer_t* y) {
        if (!kernel) kernel = jit::compile(key, v.target);
        jit::ErrorContext ctx;
        jit::check((*kernel)(ctx.get(), x, weight, weight_scale, bias, x_scale, smooth, y), ctx, key);
        return 0;
      });
}

}  // namespace mmtune
