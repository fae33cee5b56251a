// QGemm through the linked kernels, over the host side the JIT path uses too
// (runtime/host/qgemm_host.h: transposes materialized, per-column parameters widened, an absent C
// as a zero int32 broadcast). The kernels the runtime calls take a y_scale: a float32-output call
// without one runs with y_scale = 1, which computes the same bits (the output scale s / 1 is s,
// exactly: validation keeps s finite). With a PackedB, the prepacked twin of the kernel reads B's
// panels and column sums, computed once.
#include "mmtune/mmtune.h"
#include "reference/validate.h"
#include "runtime/host/kernel_memory.h"
#include "runtime/host/qgemm_host.h"
#include "runtime/src/calls.h"
#include "runtime/src/kernel_call.h"

namespace mmtune::runtime {
namespace {

// The canonical call: a y_scale of 1 where a float32 output has none.
QGemmArgs canonical(const QGemmArgs& args, const Tensor& one) {
  QGemmArgs canon = args;
  if (!canon.y_scale) canon.y_scale = &one;  // only float32 outputs lack it (y_zero_point needs it)
  return canon;
}

// plan = validate_qgemm(args) (the reference's checks and messages).
Tensor run_qgemm(const QGemmArgs& args, const QGemmPlan& plan, const PackedB::Impl* packed,
                 DispatchInfo* info) {
  DispatchInfo local;
  DispatchInfo& out = info ? *info : local;
  if (auto why = qgemm_no_kernel(plan)) {
    out = {"reference", *why};
    return run_qgemm_host(args, plan, {});  // calls no kernel
  }
  const Tensor one = Tensor::from<float>(DType::kFloat32, {}, {1.0f});
  const QGemmArgs canon = canonical(args, one);
  const Chosen chosen = choose_qgemm(args, plan, packed, info);
  if (!chosen.kernel) return mmtune::qgemm(args);
  PackedOperand operand;
  if (chosen.panels) operand = {&chosen.panels->panels, &packed->column_sums};
  KernelCall call(*chosen.kernel);
  const auto fn = reinterpret_cast<QGemmKernelFn>(chosen.kernel->fn);
  return run_qgemm_host(
      canon, plan,
      [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* c, float a_scale, int32_t a_zp,
          halide_buffer_t* bs, halide_buffer_t* bz, halide_buffer_t* sums, float ys, int32_t yzp,
          float alpha, halide_buffer_t* y) {
        const int rc =
            fn(call.user_context(), a, b, c, a_scale, a_zp, bs, bz, sums, ys, yzp, alpha, y);
        call.check(rc);
        return rc;
      },
      nullptr, chosen.panels ? &operand : nullptr);
}

}  // namespace

std::string qgemm_packing_key(const QGemmArgs& args) {
  auto type = [](const Tensor* t) { return t ? dtype_name(t->dtype) : "none"; };
  return std::string("transB=") + (args.trans_b ? "1" : "0") + " A=" + type(args.a) +
         " y_zero_point=" + type(args.y_zero_point) + " y_scale=" + (args.y_scale ? "yes" : "no");
}

Chosen choose_qgemm(const QGemmArgs& args, const QGemmPlan& plan, const PackedB::Impl* packed,
                    DispatchInfo* info) {
  auto choose = [&] {
    const Tensor one = Tensor::from<float>(DType::kFloat32, {}, {1.0f});
    const QGemmArgs canon = canonical(args, one);
    std::vector<BufferShape> buffers = {{{plan.m, plan.k}, args.a->dtype},
                                        {{plan.k, plan.n}, args.b->dtype},
                                        {{plan.m, plan.n}, plan.out_dtype}};
    return choose_for_call([&] { return qgemm_identity(canon); }, packed, plan.m, plan.n, plan.k,
                           buffers, args.b->dtype, "B", info);
  };
  if (packed) return choose();
  // What the identity and the buffers read (no y_zero_point: a float32 output).
  struct Key {
    DType a, b;
    bool quantized_y, y_scale;
    DType y;
    bool operator==(const Key& o) const {
      return a == o.a && b == o.b && quantized_y == o.quantized_y && y_scale == o.y_scale &&
             y == o.y;
    }
  };
  const bool quantized_y = args.y_zero_point != nullptr;
  return remembered_choice(Key{args.a->dtype, args.b->dtype, quantized_y, args.y_scale != nullptr,
                               quantized_y ? args.y_zero_point->dtype : DType::kFloat32},
                           plan.m, plan.n, plan.k, info, choose);
}

Tensor qgemm(const QGemmArgs& args, DispatchInfo* info) {
  const QGemmPlan plan = validate_qgemm(args);
  if (plan.m >= kPackPerCallRows && !qgemm_no_kernel(plan)) {
    const Tensor one = Tensor::from<float>(DType::kFloat32, {}, {1.0f});
    if (pack_b_per_call(qgemm_identity(canonical(args, one)), plan.m, plan.n, plan.k)) {
      // B packed for this call alone: the level's kernels read panels (pack_b_per_call).
      const PackedB packed = pack_qgemm_b(args, PrepackOptions{{plan.m}}, true);
      Tensor y = run_qgemm(args, plan, packed.impl(), info);
      if (info) info->reason += kPackedForCallNote;
      return y;
    }
  }
  return run_qgemm(args, plan, nullptr, info);
}

Tensor qgemm(const QGemmArgs& args, const PackedB& packed_b, DispatchInfo* info) {
  if (auto y = qgemm_through_memo(args, packed_b, info)) return std::move(*y);
  const PackedB::Impl& p =
      packed_for_call(packed_b, "QGemm", args.b, args.b ? qgemm_packing_key(args) : "");
  return run_qgemm(args, validate_qgemm(args), &p, info);
}

PackedB prepack_b(const QGemmArgs& args, const PrepackOptions& options) {
  return pack_qgemm_b(args, options, /*one_call=*/false);
}

PackedB pack_qgemm_b(const QGemmArgs& args, const PrepackOptions& options, bool one_call) {
  constexpr const char* kOp = "QGemm";
  const Tensor& b = require_present(kOp, "B", args.b);
  require_rank(kOp, "B", b, 2);
  require_dtype(kOp, "B", b, {DType::kInt8, DType::kUInt8});
  const Tensor& a = require_present(kOp, "A", args.a);
  require_dtype(kOp, "A", a, {DType::kInt8, DType::kUInt8});
  if (args.y_zero_point)
    require_dtype(kOp, "y_zero_point", *args.y_zero_point, {DType::kInt8, DType::kUInt8});
  const Tensor one = Tensor::from<float>(DType::kFloat32, {}, {1.0f});
  // B (K, N): transposed under transB, on this thread's scratch for one call.
  host::ScratchTensor scratch_kn;
  Tensor fresh_kn;
  const Tensor& b_kn = !args.trans_b ? b
                       : one_call    ? scratch_kn.transpose_of(b)
                                     : (fresh_kn = transposed(b));
  auto impl = pack_for_kernels(kOp, qgemm_identity(canonical(args, one)), b_kn,
                               /*dot8=*/true, /*with_column_sums=*/true, options, one_call);
  impl->trans_b = args.trans_b;
  impl->set_source(b, qgemm_packing_key(args));
  return PackedB(std::move(impl));
}

}  // namespace mmtune::runtime
