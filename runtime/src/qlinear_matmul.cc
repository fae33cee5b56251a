// QLinearMatMul through the linked kernels. The kernels compute one 2-D product with per-row and
// per-column parameters; the host side the JIT path uses too (runtime/host/qlinear_matmul_host.h)
// walks the N-D batch and widens the parameters exactly. The identity is the call's: operand and
// output types, scale type, requantization mode (float8: the formats). With a PackedB (b 2-D), the
// prepacked twin of the kernel reads b's panels and column sums, computed once.
#include "mmtune/mmtune.h"
#include "reference/validate.h"
#include "runtime/host/qlinear_matmul_host.h"
#include "runtime/src/calls.h"
#include "runtime/src/kernel_call.h"

namespace mmtune::runtime {
namespace {

// plan = validate_qlinear_matmul(args) (the reference's checks and messages).
Tensor run_qlinear_matmul(const QLinearMatMulArgs& args, const QLinearMatMulPlan& plan,
                          const PackedB::Impl* packed, DispatchInfo* info) {
  DispatchInfo local;
  DispatchInfo& out = info ? *info : local;
  if (auto why = qlinear_matmul_no_kernel(plan)) {
    out = {"reference", *why};
    return run_qlinear_matmul_host(args, plan, {});  // calls no kernel
  }
  const Chosen chosen = choose_qlinear_matmul(args, plan, packed, info);
  if (!chosen.kernel) return mmtune::qlinear_matmul(args);
  PackedOperand operand;
  if (chosen.panels) {
    operand = {&chosen.panels->panels,
               packed->column_sums.bytes.empty() ? nullptr : &packed->column_sums};
  }
  KernelCall call(*chosen.kernel);
  const auto fn = reinterpret_cast<QLinearMatMulKernelFn>(chosen.kernel->fn);
  return run_qlinear_matmul_host(
      args, plan,
      [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* as, halide_buffer_t* az,
          halide_buffer_t* bs, halide_buffer_t* bz, halide_buffer_t* sums, float ys, int32_t yzp,
          halide_buffer_t* y) {
        const int rc = fn(call.user_context(), a, b, as, az, bs, bz, sums, ys, yzp, y);
        call.check(rc);
        return rc;
      },
      nullptr, chosen.panels ? &operand : nullptr);
}

}  // namespace

std::string qlinear_matmul_packing_key(const QLinearMatMulArgs& args) {
  auto type = [](const Tensor* t) { return t ? dtype_name(t->dtype) : "none"; };
  return std::string("a=") + type(args.a) + " y=" + type(args.y_zero_point) +
         " scales=" + type(args.a_scale) + " requant=" + to_string(args.requant);
}

Chosen choose_qlinear_matmul(const QLinearMatMulArgs& args, const QLinearMatMulPlan& plan,
                             const PackedB::Impl* packed, DispatchInfo* info) {
  const MatMulShape& s = plan.shape;
  auto choose = [&] {
    std::vector<BufferShape> buffers = {{{s.m, s.k}, args.a->dtype},
                                        {{s.k, s.n}, args.b->dtype},
                                        {{s.m, s.n}, plan.out_dtype},
                                        {{s.m}, DType::kFloat32},
                                        {{s.n}, DType::kFloat32}};
    return choose_for_call([&] { return qlinear_matmul_identity(args); }, packed, s.m, s.n, s.k,
                           buffers, args.b->dtype, "b", info);
  };
  if (packed) return choose();
  // What the identity and the buffers read (the output's type is y_zero_point's).
  struct Key {
    DType a, b, y, scale;
    RequantMode requant;
    bool operator==(const Key& o) const {
      return a == o.a && b == o.b && y == o.y && scale == o.scale && requant == o.requant;
    }
  };
  return remembered_choice(Key{args.a->dtype, args.b->dtype, args.y_zero_point->dtype,
                               args.a_scale->dtype, args.requant},
                           s.m, s.n, s.k, info, choose);
}

Tensor qlinear_matmul(const QLinearMatMulArgs& args, DispatchInfo* info) {
  const QLinearMatMulPlan plan = validate_qlinear_matmul(args);
  if (plan.shape.m >= kPackPerCallRows && args.b->shape.size() == 2 && !is_float8(args.b->dtype) &&
      !qlinear_matmul_no_kernel(plan) &&
      pack_b_per_call(qlinear_matmul_identity(args), plan.shape.m, plan.shape.n, plan.shape.k)) {
    // b packed for this call alone: the level's kernels read panels (pack_b_per_call).
    const PackedB packed = pack_qlinear_matmul_b(args, PrepackOptions{{plan.shape.m}}, true);
    Tensor y = run_qlinear_matmul(args, plan, packed.impl(), info);
    if (info) info->reason += kPackedForCallNote;
    return y;
  }
  return run_qlinear_matmul(args, plan, nullptr, info);
}

Tensor qlinear_matmul(const QLinearMatMulArgs& args, const PackedB& packed_b, DispatchInfo* info) {
  if (auto y = qlinear_matmul_through_memo(args, packed_b, info)) return std::move(*y);
  const PackedB::Impl& p = packed_for_call(packed_b, "QLinearMatMul", args.b,
                                           args.b ? qlinear_matmul_packing_key(args) : "");
  return run_qlinear_matmul(args, validate_qlinear_matmul(args), &p, info);
}

PackedB prepack_b(const QLinearMatMulArgs& args, const PrepackOptions& options) {
  return pack_qlinear_matmul_b(args, options, /*one_call=*/false);
}

PackedB pack_qlinear_matmul_b(const QLinearMatMulArgs& args, const PrepackOptions& options,
                              bool one_call) {
  constexpr const char* kOp = "QLinearMatMul";
  const Tensor& b = require_present(kOp, "b", args.b);
  require_rank(kOp, "b", b, 2);
  const Tensor& a = require_present(kOp, "a", args.a);
  require_present(kOp, "a_scale", args.a_scale);
  require_present(kOp, "y_zero_point", args.y_zero_point);
  const std::initializer_list<DType> types = {DType::kInt8,         DType::kUInt8,
                                              DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ,
                                              DType::kFloat8E5M2,   DType::kFloat8E5M2FNUZ};
  require_dtype(kOp, "a", a, types);
  require_dtype(kOp, "b", b, types);
  require_dtype(kOp, "y_zero_point", *args.y_zero_point, types);
  require_dtype(kOp, "a_scale", *args.a_scale,
                {DType::kFloat32, DType::kFloat16, DType::kBFloat16});
  const bool float8 = is_float8(b.dtype);
  auto impl = pack_for_kernels(kOp, qlinear_matmul_identity(args), b, /*dot8=*/!float8,
                               /*with_column_sums=*/!float8, options, one_call);
  impl->set_source(b, qlinear_matmul_packing_key(args));
  return PackedB(std::move(impl));
}

}  // namespace mmtune::runtime
