// Gemm through the linked kernels. The kernels compute one canonical form, Y = alpha * A B +
// beta * C with A (M, K), B (K, N) and C present; every other call is mapped onto it exactly:
// transposed operands are materialized (bytes move, nothing is rounded), an absent C is beta = 0
// over a zero scalar (beta = 0 ignores C in both the kernels and the reference), and the identity
// carries the effective float contract (reference/gemm.h, effective_contract).
#include "mmtune/mmtune.h"
#include "runtime/host/buffer_view.h"
#include "runtime/src/kernel_call.h"

namespace mmtune::runtime {

Tensor gemm(const GemmArgs& args, DispatchInfo* info) {
  const GemmPlan plan = validate_gemm(args);  // the reference's checks and messages
  DispatchInfo local;
  DispatchInfo& out = info ? *info : local;
  const DType t = args.a->dtype;
  if (plan.m == 0 || plan.n == 0) {
    out = {"reference", "Y is empty"};
    return mmtune::gemm(args);
  }
  if (plan.k == 0) {
    // An empty sum, Y = alpha * 0 + beta * C, left to the reference as the JIT path does: an empty
    // A or B has no host pointer, which a Halide pipeline takes for a bounds query (it returns
    // without computing Y).
    out = {"reference", "K is 0 (an empty sum): the reference computes it"};
    return mmtune::gemm(args);
  }

  const Tensor zero_c(t, {});
  GemmArgs canon = args;
  canon.trans_a = canon.trans_b = false;
  if (!canon.c) {
    canon.c = &zero_c;
    canon.beta = 0.0f;
  }

  const std::vector<BufferShape> buffers = {
      {{plan.m, plan.k}, t}, {{plan.k, plan.n}, t}, {canon.c->shape, t}, {{plan.m, plan.n}, t}};
  const KernelEntry* kernel =
      choose_kernel(gemm_identity(canon), plan.m, plan.n, plan.k, buffers, out);
  if (!kernel) return mmtune::gemm(args);

  Tensor a_t, b_t;
  if (args.trans_a) {
    a_t = transposed(*args.a);
    canon.a = &a_t;
  }
  if (args.trans_b) {
    b_t = transposed(*args.b);
    canon.b = &b_t;
  }
  Tensor y(t, {plan.m, plan.n});
  auto a = view(*canon.a, canon.a->shape);
  auto b = view(*canon.b, canon.b->shape);
  auto c = view(*canon.c, {plan.m, plan.n});  // zero strides where C broadcasts
  auto y_view = view(y, y.shape);
  KernelCall call(*kernel);
  const auto fn = reinterpret_cast<GemmKernelFn>(kernel->fn);
  call.check(fn(call.user_context(), a.raw_buffer(), b.raw_buffer(), c.raw_buffer(), canon.alpha,
                canon.beta, y_view.raw_buffer()));
  return y;
}

}  // namespace mmtune::runtime
