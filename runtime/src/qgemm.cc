// QGemm through the linked kernels, over the host side the JIT path uses too
// (runtime/host/qgemm_host.h: transposes materialized, per-column parameters widened, an absent C
// as a zero int32 broadcast). The kernels the runtime calls take a y_scale: a float32-output call
// without one runs with y_scale = 1, which computes the same bits (the output scale s / 1 is s,
// exactly: validation keeps s finite).
#include "mmtune/mmtune.h"
#include "runtime/host/qgemm_host.h"
#include "runtime/src/kernel_call.h"

namespace mmtune::runtime {

Tensor qgemm(const QGemmArgs& args, DispatchInfo* info) {
  const QGemmPlan plan = validate_qgemm(args);  // the reference's checks and messages
  DispatchInfo local;
  DispatchInfo& out = info ? *info : local;
  if (auto why = qgemm_no_kernel(plan)) {
    out = {"reference", *why};
    return run_qgemm_host(args, plan, {});  // calls no kernel
  }
  const Tensor one = Tensor::from<float>(DType::kFloat32, {}, {1.0f});
  QGemmArgs canon = args;
  if (!canon.y_scale) canon.y_scale = &one;  // only float32 outputs lack it (y_zero_point needs it)

  const std::vector<BufferShape> buffers = {{{plan.m, plan.k}, args.a->dtype},
                                            {{plan.k, plan.n}, args.b->dtype},
                                            {{plan.m, plan.n}, plan.out_dtype}};
  const KernelEntry* kernel =
      choose_kernel(qgemm_identity(canon), plan.m, plan.n, plan.k, buffers, out);
  if (!kernel) return mmtune::qgemm(args);

  KernelCall call(*kernel);
  const auto fn = reinterpret_cast<QGemmKernelFn>(kernel->fn);
  return run_qgemm_host(canon, plan,
                        [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* c,
                            float a_scale, int32_t a_zp, halide_buffer_t* bs, halide_buffer_t* bz,
                            float ys, int32_t yzp, float alpha, halide_buffer_t* y) {
                          const int rc = fn(call.user_context(), a, b, c, a_scale, a_zp, bs, bz, ys,
                                            yzp, alpha, y);
                          call.check(rc);
                          return rc;
                        });
}

}  // namespace mmtune::runtime
