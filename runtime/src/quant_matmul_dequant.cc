// QuantMatmulDequant through the linked kernels, over the host side the JIT path uses too
// (runtime/host/quant_matmul_dequant_host.h: views, dummies for absent inputs, K = 0 as K = 1 over
// a zero x). The kernels the runtime calls read a bias and a (K, N) weight (transpose_weight =
// false): an absent bias is a zero int32 (N) (the wrapping sum plus 0 is the sum), and an (N, K)
// weight (transpose_weight = true, the operator's default) is copied transposed on each call
// (bytes move, nothing is rounded). The kernels read the weight a vector of N columns at a time:
// from (N, K) those lanes lie K bytes apart, and with K a power of two they crowded one set of the
// caches (1x4096x4096 took 66 ms a call on Zen 4, 1x1024x2048 four to eight times 1x1024x2112);
// from the (K, N) copy they are one load (docs/performance.md).
#include "mmtune/mmtune.h"
#include "runtime/host/kernel_memory.h"
#include "runtime/host/quant_matmul_dequant_host.h"
#include "runtime/src/kernel_call.h"

namespace mmtune::runtime {

Tensor quant_matmul_dequant(const QuantMatmulDequantArgs& args, DispatchInfo* info) {
  const QuantMatmulDequantPlan plan =
      validate_quant_matmul_dequant(args);  // the reference's checks
  DispatchInfo local;
  DispatchInfo& out = info ? *info : local;
  if (auto why = quant_matmul_dequant_no_kernel(plan)) {
    out = {"reference", *why};
    return run_quant_matmul_dequant_host(args, plan, {});  // calls no kernel
  }
  // The canonical call's identity, before any copy is made: bias present, weight (K, N).
  const Tensor zero_bias(DType::kInt32, {plan.n});
  QuantMatmulDequantArgs canon = args;
  if (!canon.bias) canon.bias = &zero_bias;
  canon.transpose_weight = false;

  const std::vector<BufferShape> buffers = {{{plan.m, plan.k}, DType::kFloat16},
                                            {{plan.k, plan.n}, DType::kInt8},
                                            {{plan.m, plan.n}, DType::kFloat16}};
  const KernelEntry* kernel =
      choose_kernel(quant_matmul_dequant_identity(canon), plan.m, plan.n, plan.k, buffers, info);
  if (!kernel) return mmtune::quant_matmul_dequant(args);

  host::ScratchTensor weight_t;  // on this thread's scratch
  if (args.transpose_weight) canon.weight = &weight_t.transpose_of(*args.weight);
  KernelCall call(*kernel);
  const auto fn = reinterpret_cast<QuantMatmulDequantKernelFn>(kernel->fn);
  return run_quant_matmul_dequant_host(
      canon, plan,
      [&](halide_buffer_t* x, halide_buffer_t* weight, halide_buffer_t* weight_scale,
          halide_buffer_t* bias, halide_buffer_t* x_scale, halide_buffer_t* smooth,
          halide_buffer_t* y) {
        const int rc = fn(call.user_context(), x, weight, weight_scale, bias, x_scale, smooth, y);
        call.check(rc);
        return rc;
      });
}

}  // namespace mmtune::runtime
