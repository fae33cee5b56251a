// QLinearMatMul through the linked kernels. The kernels compute one 2-D product with per-row and
// per-column parameters; the host side the JIT path uses too (runtime/host/qlinear_matmul_host.h)
// walks the N-D batch and widens the parameters exactly. The identity is the call's: operand and
// output types, scale type, requantization mode (float8: the formats).
#include "mmtune/mmtune.h"
#include "runtime/host/qlinear_matmul_host.h"
#include "runtime/src/kernel_call.h"

namespace mmtune::runtime {

Tensor qlinear_matmul(const QLinearMatMulArgs& args, DispatchInfo* info) {
  const QLinearMatMulPlan plan =
      validate_qlinear_matmul(args);  // the reference's checks and messages
  DispatchInfo local;
  DispatchInfo& out = info ? *info : local;
  if (auto why = qlinear_matmul_no_kernel(plan)) {
    out = {"reference", *why};
    return run_qlinear_matmul_host(args, plan, {});  // calls no kernel
  }
  const MatMulShape& s = plan.shape;
  const std::vector<BufferShape> buffers = {{{s.m, s.k}, args.a->dtype},
                                            {{s.k, s.n}, args.b->dtype},
                                            {{s.m, s.n}, plan.out_dtype},
                                            {{s.m}, DType::kFloat32},
                                            {{s.n}, DType::kFloat32}};
  const KernelEntry* kernel =
      choose_kernel(qlinear_matmul_identity(args), s.m, s.n, s.k, buffers, out);
  if (!kernel) return mmtune::qlinear_matmul(args);

  KernelCall call(*kernel);
  const auto fn = reinterpret_cast<QLinearMatMulKernelFn>(kernel->fn);
  return run_qlinear_matmul_host(
      args, plan,
      [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* as, halide_buffer_t* az,
          halide_buffer_t* bs, halide_buffer_t* bz, halide_buffer_t* sums, float ys, int32_t yzp,
          halide_buffer_t* y) {
        const int rc = fn(call.user_context(), a, b, as, az, bs, bz, sums, ys, yzp, y);
        call.check(rc);
        return rc;
      });
}

}  // namespace mmtune::runtime
