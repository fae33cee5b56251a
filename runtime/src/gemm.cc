// Gemm through the linked kernels. The kernels compute one canonical form, Y = alpha * A B +
// beta * C with A (M, K), B (K, N) and C present; every other call is mapped onto it exactly:
// transposed operands are materialized (bytes move, nothing is rounded), an absent C is beta = 0
// over a zero row of N (beta = 0 ignores C in both the kernels and the reference; a row, not a
// scalar, so that the kernel's branch for dense rows of C serves the call; a C given with beta = 0
// is passed the same way, so that the kernel does not stream M x N values it ignores), and the
// identity carries the effective float contract (reference/gemm.h, effective_contract). With a
// PackedB, the prepacked twin of the kernel reads B's panels, packed once.
#include "mmtune/mmtune.h"
#include "reference/validate.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/kernel_memory.h"
#include "runtime/host/thread_pool.h"
#include "runtime/src/calls.h"
#include "runtime/src/dispatch.h"
#include "runtime/src/kernel_call.h"

namespace mmtune::runtime {
namespace {

Tensor run_gemm(const GemmArgs& args, const PackedB::Impl* packed, DispatchInfo* info) {
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
  const Chosen chosen = choose_gemm(args, plan, packed, info);
  if (!chosen.kernel) return mmtune::gemm(args);

  Tensor long_zero_c;  // a row of zeros where it does not fit the shared ones
  GemmArgs canon = args;
  canon.trans_a = canon.trans_b = false;
  host::ScratchTensor a_t, b_t;  // transposed operands, on this thread's scratch
  if (args.trans_a) canon.a = &a_t.transpose_of(*args.a);
  if (args.trans_b && !chosen.panels) canon.b = &b_t.transpose_of(*args.b);
  Tensor y = Tensor::uninitialized(t, {plan.m, plan.n});  // the kernel writes it all
  auto a = view(*canon.a, canon.a->shape);
  auto b = chosen.panels ? view(chosen.panels->panels, chosen.panels->panels.shape)
                         : view(*canon.b, canon.b->shape);
  const bool reads_c = gemm_reads_c(args.c, args.beta);
  if (!reads_c) canon.beta = 0.0f;
  auto c = reads_c ? view(*args.c, y.shape)  // zero strides where C broadcasts
                   : view_absent_c(t, plan.m, plan.n, long_zero_c);
  auto y_view = view(y, y.shape);
  KernelCall call(*chosen.kernel);
  const auto fn = reinterpret_cast<GemmKernelFn>(chosen.kernel->fn);
  call.check(fn(call.user_context(), a.raw_buffer(), b.raw_buffer(), c.raw_buffer(), canon.alpha,
                canon.beta, y_view.raw_buffer()));
  return y;
}

}  // namespace

std::string gemm_packing_key(const GemmArgs& args) {
  return std::string("transB=") + (args.trans_b ? "1" : "0") +
         " contract=" + to_string(effective_contract(args.b->dtype, args.contract));
}

Chosen choose_gemm(const GemmArgs& args, const GemmPlan& plan, const PackedB::Impl* packed,
                   DispatchInfo* info) {
  const DType t = args.a->dtype;
  auto choose = [&] {
    const Shape c_shape = args.c ? args.c->shape : Shape{};
    std::vector<BufferShape> buffers = {
        {{plan.m, plan.k}, t}, {{plan.k, plan.n}, t}, {c_shape, t}, {{plan.m, plan.n}, t}};
    GemmArgs canon = args;
    const Tensor zero_c(t, {});
    canon.trans_a = canon.trans_b = false;
    if (!canon.c) canon.c = &zero_c;
    return choose_for_call([&] { return gemm_identity(canon); }, packed, plan.m, plan.n, plan.k,
                           buffers, t, "B", info);
  };
  if (packed) return choose();
  // The canonical identity reads the type and the effective contract; C never exceeds Y, so its
  // buffer check is Y's.
  struct Key {
    DType t;
    FloatContract contract;
    bool operator==(const Key& o) const { return t == o.t && contract == o.contract; }
  };
  return remembered_choice(Key{t, effective_contract(t, args.contract)}, plan.m, plan.n, plan.k,
                           info, choose);
}

Tensor gemm(const GemmArgs& args, DispatchInfo* info) { return run_gemm(args, nullptr, info); }

Tensor gemm(const GemmArgs& args, const PackedB& packed_b, DispatchInfo* info) {
  if (auto y = gemm_through_memo(args, packed_b, info)) return std::move(*y);
  const PackedB::Impl& p =
      packed_for_call(packed_b, "Gemm", args.b, args.b ? gemm_packing_key(args) : "");
  return run_gemm(args, &p, info);
}

PackedB prepack_b(const GemmArgs& args, const PrepackOptions& options) {
  // The checks validate_gemm makes of B (A, C and the shapes are the calls').
  const Tensor& b = require_present("Gemm", "B", args.b);
  require_dtype("Gemm", "B", b,
                {DType::kFloat16, DType::kFloat32, DType::kFloat64, DType::kUInt32, DType::kUInt64,
                 DType::kInt32, DType::kInt64, DType::kBFloat16});
  require_rank("Gemm", "B", b, 2);
  GemmArgs canon = args;
  const Tensor zero_c(b.dtype, {});
  canon.c = &zero_c;
  canon.trans_a = canon.trans_b = false;
  canon.a = &b;  // the identity reads the type from A
  const Tensor b_kn = args.trans_b ? transposed(b) : Tensor();
  auto impl = pack_for_kernels("Gemm", gemm_identity(canon), args.trans_b ? b_kn : b,
                               /*dot8=*/false, /*with_column_sums=*/false, options);
  impl->trans_b = args.trans_b;
  impl->set_source(b, gemm_packing_key(args));
  return PackedB(std::move(impl));
}

}  // namespace mmtune::runtime
