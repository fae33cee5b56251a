// Operator variants through Halide's JIT: the runtime's host side over a kernel compiled in
// process.
#include "autotune/halide_ops.h"

#include <optional>

#include "autotune/halide_jit.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/qgemm_host.h"
#include "runtime/host/qlinear_matmul_host.h"
#include "runtime/host/quant_matmul_dequant_host.h"

namespace mmtune {
namespace {

// A kernel compiled on its first call (none when the host side runs no kernel), called with an
// error-capturing context; a failure throws InternalError naming the kernel.
class LazyKernel {
 public:
  LazyKernel(KernelKey key, std::string target)
      : key_(std::move(key)), target_(std::move(target)) {}

  template <class... Args>
  int operator()(Args... args) {
    if (!kernel_) kernel_ = jit::compile(key_, target_);
    jit::ErrorContext ctx;
    jit::check((*kernel_)(ctx.get(), args...), ctx, key_);
    return 0;
  }

 private:
  KernelKey key_;
  std::string target_;
  std::optional<Halide::Callable> kernel_;
};

}  // namespace

std::size_t jit_cache_size() { return jit::cache_size(); }

Tensor gemm_halide(const GemmArgs& args, const HalideVariant& v) {
  const GemmPlan plan = validate_gemm(args);
  LazyKernel kernel(kernel_key(gemm_identity(args), v), v.target);
  // K = 0: no sum to compute, the result is the epilogue alone; the reference evaluates it.
  if (plan.k == 0) return gemm(args);
  Tensor y(args.a->dtype, {plan.m, plan.n});
  if (y.numel() == 0) return y;
  const Tensor dummy(args.a->dtype, {});
  auto a = view(*args.a, args.a->shape);
  auto b = view(*args.b, args.b->shape);
  auto c = args.c ? view(*args.c, {plan.m, plan.n}) : view(dummy, {1, 1});
  auto out = view(y, y.shape);
  kernel(a.raw_buffer(), b.raw_buffer(), c.raw_buffer(), args.alpha, args.beta, out.raw_buffer());
  return y;
}

Tensor qlinear_matmul_halide(const QLinearMatMulArgs& args, const HalideVariant& v) {
  const QLinearMatMulPlan plan = validate_qlinear_matmul(args);
  LazyKernel kernel(kernel_key(qlinear_matmul_identity(args), v), v.target);
  return run_qlinear_matmul_host(
      args, plan,
      [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* as, halide_buffer_t* az,
          halide_buffer_t* bs, halide_buffer_t* bz, float ys, int32_t yzp,
          halide_buffer_t* y) { return kernel(a, b, as, az, bs, bz, ys, yzp, y); });
}

Tensor qgemm_halide(const QGemmArgs& args, const HalideVariant& v) {
  const QGemmPlan plan = validate_qgemm(args);
  LazyKernel kernel(kernel_key(qgemm_identity(args), v), v.target);
  return run_qgemm_host(args, plan,
                        [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* c,
                            float a_scale, int32_t a_zp, halide_buffer_t* bs, halide_buffer_t* bz,
                            float ys, int32_t yzp, float alpha, halide_buffer_t* y) {
                          return kernel(a, b, c, a_scale, a_zp, bs, bz, ys, yzp, alpha, y);
                        });
}

Tensor quant_matmul_dequant_halide(const QuantMatmulDequantArgs& args, const HalideVariant& v) {
  const QuantMatmulDequantPlan plan = validate_quant_matmul_dequant(args);
  LazyKernel kernel(kernel_key(quant_matmul_dequant_identity(args), v), v.target);
  return run_quant_matmul_dequant_host(
      args, plan,
      [&](halide_buffer_t* x, halide_buffer_t* weight, halide_buffer_t* weight_scale,
          halide_buffer_t* bias, halide_buffer_t* x_scale, halide_buffer_t* smooth,
          halide_buffer_t* y) {
        return kernel(x, weight, weight_scale, bias, x_scale, smooth, y);
      });
}

Tensor run_halide(std::string_view op_name, const NamedTensors& in, const Attributes& attrs,
                  const HalideVariant& v) {
  const std::string op = find_operator(op_name).name;
  if (op == "Gemm") return gemm_halide(gemm_args(in, attrs), v);
  if (op == "QLinearMatMul") return qlinear_matmul_halide(qlinear_matmul_args(in, attrs), v);
  if (op == "QGemm") return qgemm_halide(qgemm_args(in, attrs), v);
  if (op == "QuantMatmulDequant")
    return quant_matmul_dequant_halide(quant_matmul_dequant_args(in, attrs), v);
  MMTUNE_CHECK(false, "operator " << op << " has no Halide path");
}

}  // namespace mmtune
