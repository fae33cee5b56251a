// QuantMatmulDequant through the linked kernels, over the host side the JIT path uses too
// (runtime/host/quant_matmul_dequant_host.h: views, dummies for absent inputs, K = 0 as K = 1 over
// a zero x). The kernels the runtime calls read a bias and a (K, N) weight (transpose_weight =
// false): an absent bias is a zero int32 (N) (the wrapping sum plus 0 is the sum), and an (N, K)
// weight (transpose_weight = true, the operator's default) is copied transposed on each call
// (bytes move, nothing is rounded). The kernels read the weight a vector of N columns at a time:
// from (N, K) those lanes lie K bytes apart, and with K a power of two they crowded one set of the
// caches (1x4096x4096 took 66 ms a call on Zen 4, 1x1024x2048 four to eight times 1x1024x2112);
// from the (K, N) copy they are one load (docs/performance.md). With a PackedB, the prepacked twin
// of the kernel reads the weight's panels, packed once from either layout, and the bias with the
// weight's column sums folded in (bias - 128 * colsum, N values): no copy of the weight, no
// column sums per call, and a call that repeats a signature the PackedB remembers (prepared.cc)
// folds nothing again.
#include "mmtune/mmtune.h"
#include "reference/validate.h"
#include "runtime/host/kernel_memory.h"
#include "runtime/host/quant_matmul_dequant_host.h"
#include "runtime/src/calls.h"
#include "runtime/src/kernel_call.h"

namespace mmtune::runtime {
namespace {

constexpr const char* kOp = "QuantMatmulDequant";

// plan = validate_quant_matmul_dequant(args) (the reference's checks and messages).
Tensor run_quant_matmul_dequant(const QuantMatmulDequantArgs& args,
                                const QuantMatmulDequantPlan& plan, const PackedB::Impl* packed,
                                DispatchInfo* info) {
  DispatchInfo local;
  DispatchInfo& out = info ? *info : local;
  if (auto why = quant_matmul_dequant_no_kernel(plan)) {
    out = {"reference", *why};
    return run_quant_matmul_dequant_host(args, plan, {});  // calls no kernel
  }
  const Chosen chosen = choose_quant_matmul_dequant(args, plan, packed, info);
  if (!chosen.kernel) return mmtune::quant_matmul_dequant(args);
  const Tensor zero_bias(DType::kInt32, {plan.n});
  QuantMatmulDequantArgs canon = kn_weight_with_bias(args, zero_bias);

  PackedOperand operand;
  host::ScratchTensor weight_t;  // on this thread's scratch
  if (chosen.panels) {
    operand = {&chosen.panels->panels, &packed->column_sums};
  } else if (args.transpose_weight) {
    canon.weight = &weight_t.transpose_of(*args.weight);
  }
  KernelCall call(*chosen.kernel);
  const auto fn = reinterpret_cast<QuantMatmulDequantKernelFn>(chosen.kernel->fn);
  return run_quant_matmul_dequant_host(
      canon, plan,
      [&](halide_buffer_t* x, halide_buffer_t* weight, halide_buffer_t* weight_scale,
          halide_buffer_t* bias, halide_buffer_t* x_scale, halide_buffer_t* smooth,
          halide_buffer_t* y) {
        const int rc = fn(call.user_context(), x, weight, weight_scale, bias, x_scale, smooth, y);
        call.check(rc);
        return rc;
      },
      nullptr, chosen.panels ? &operand : nullptr);
}

}  // namespace

std::string quant_matmul_dequant_packing_key(const QuantMatmulDequantArgs& args) {
  auto type = [](const Tensor* t) { return t ? dtype_name(t->dtype) : "none"; };
  return std::string("transpose_weight=") + (args.transpose_weight ? "1" : "0") +
         " weight_scale=" + type(args.weight_scale) + " x_scale=" + type(args.x_scale) +
         " x_quant_mode=" +
         (args.x_quant_mode == XQuantMode::kPerToken ? "pertoken" : "pertensor") +
         " smooth_scale=" + (args.smooth_scale ? "yes" : "no");
}

Chosen choose_quant_matmul_dequant(const QuantMatmulDequantArgs& args,
                                   const QuantMatmulDequantPlan& plan, const PackedB::Impl* packed,
                                   DispatchInfo* info) {
  auto choose = [&] {
    // The identity's bias and weight layout are the canonical call's (a bias present, (K, N)).
    const Tensor zero_bias(DType::kInt32, {1});
    const QuantMatmulDequantArgs canon = kn_weight_with_bias(args, zero_bias);
    const std::vector<BufferShape> buffers = {{{plan.m, plan.k}, DType::kFloat16},
                                              {{plan.k, plan.n}, DType::kInt8},
                                              {{plan.m, plan.n}, DType::kFloat16}};
    return choose_for_call([&] { return quant_matmul_dequant_identity(canon); }, packed, plan.m,
                           plan.n, plan.k, buffers, DType::kInt8, "weight", info);
  };
  if (packed) return choose();
  // Every part of the call the identity reads (the weight's layout and the bias too, which the
  // canonical call fixes: a key finer than the identity only keeps more entries).
  struct Key {
    bool transpose_weight, bias, weight_scale, x_scale, per_token, smooth;
    DType weight_scale_type, x_scale_type;
    bool operator==(const Key& o) const {
      return transpose_weight == o.transpose_weight && bias == o.bias &&
             weight_scale == o.weight_scale && x_scale == o.x_scale && per_token == o.per_token &&
             smooth == o.smooth && weight_scale_type == o.weight_scale_type &&
             x_scale_type == o.x_scale_type;
    }
  };
  const Key key{args.transpose_weight,
                args.bias != nullptr,
                args.weight_scale != nullptr,
                args.x_scale != nullptr,
                args.x_quant_mode == XQuantMode::kPerToken,
                args.smooth_scale != nullptr,
                args.weight_scale ? args.weight_scale->dtype : DType::kFloat32,
                args.x_scale ? args.x_scale->dtype : DType::kFloat32};
  return remembered_choice(key, plan.m, plan.n, plan.k, info, choose);
}

Tensor quant_matmul_dequant(const QuantMatmulDequantArgs& args, DispatchInfo* info) {
  return run_quant_matmul_dequant(args, validate_quant_matmul_dequant(args), nullptr, info);
}

Tensor quant_matmul_dequant(const QuantMatmulDequantArgs& args, const PackedB& packed_b,
                            DispatchInfo* info) {
  if (auto y = quant_matmul_dequant_through_memo(args, packed_b, info)) return std::move(*y);
  const PackedB::Impl& p = packed_for_call(
      packed_b, kOp, args.weight, args.weight ? quant_matmul_dequant_packing_key(args) : "");
  return run_quant_matmul_dequant(args, validate_quant_matmul_dequant(args), &p, info);
}

PackedB prepack_b(const QuantMatmulDequantArgs& args, const PrepackOptions& options) {
  const Tensor& w = require_present(kOp, "weight", args.weight);
  require_rank(kOp, "weight", w, 2);
  require_dtype(kOp, "weight", w, {DType::kInt8});
  // The weight scale's dtype, the x scale's presence and dtype, the mode and the smoothing fix
  // the kernels' identity (their values are the calls').
  const Tensor& ws = require_present(kOp, "weight_scale", args.weight_scale);
  require_dtype(kOp, "weight_scale", ws, {DType::kFloat32, DType::kInt64});
  if (args.x_scale)
    require_dtype(kOp, "x_scale", *args.x_scale, {DType::kFloat32, DType::kFloat16});
  const Tensor zero_bias(DType::kInt32, {1});
  // The weight (K, N): transposed once here from (N, K).
  Tensor fresh_kn;
  const Tensor& w_kn = args.transpose_weight ? (fresh_kn = transposed(w)) : w;
  auto impl = pack_for_kernels(
      kOp, quant_matmul_dequant_identity(kn_weight_with_bias(args, zero_bias)), w_kn,
      /*dot8=*/true, /*with_column_sums=*/true, options);
  impl->trans_b = args.transpose_weight;
  impl->set_source(w, quant_matmul_dequant_packing_key(args));
  return PackedB(std::move(impl));
}

}  // namespace mmtune::runtime
