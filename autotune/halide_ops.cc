// Operator variants through Halide's JIT: the runtime's host side over a kernel compiled in
// process.
#include "autotune/halide_ops.h"

#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "autotune/halide_jit.h"
#include "autotune/kernel_executor.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/cpu_features.h"
#include "runtime/host/packed_b.h"
#include "runtime/host/qgemm_host.h"
#include "runtime/host/qlinear_matmul_host.h"
#include "runtime/host/quant_matmul_dequant_host.h"

namespace mmtune {
namespace {

// A kernel compiled on its first call (none when the host side runs no kernel), called with an
// error-capturing context, or handed to the variant's executor (a runner on another target); a
// failure throws InternalError naming the kernel. Counts its calls into the JitRun, and gives the
// host side the JitRun's output storage.
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class LazyKernel {
 public:
  LazyKernel(KernelKey key, const HalideVariant& v, JitRun* run)
      : key_(std::move(key)), target_(v.target), executor_(v.executor), run_(run ? run : &own_) {
    // The JIT runs what it compiles on this CPU: a target it cannot run is refused, not faulted.
    // Host kernels may use AMX tiles (cpu_matmul's amx knob), which Linux grants per process.
    if (target_ == "host" && !executor_) request_amx();
    if (target_ != "host" && !executor_) {
      if (auto why = cpu_cannot_run(resolve_target(target_))) {
        invalid(key_.identity.op, "the JIT runs its kernels on this CPU, and ", *why);
      }
    }
  }

  template <class... Args>
  int operator()(Args... args) {
    if (executor_) {
      const auto t0 = std::chrono::steady_clock::now();
      executor_->call(key_, {KernelArg::of(args)...});
      run_->kernel_seconds += seconds_since(t0);
      ++run_->kernel_calls;
      return 0;
    }
    if (!kernel_) kernel_ = jit::compile(key_, target_);
    jit::ErrorContext ctx;
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = (*kernel_)(ctx.get(), args...);
    run_->kernel_seconds += seconds_since(t0);
    jit::check(rc, ctx, key_);
    ++run_->kernel_calls;
    return 0;
  }

  uint8_t* placed_output() const { return run_->output; }

 private:
  KernelKey key_;
  std::string target_;
  std::shared_ptr<KernelExecutor> executor_;
  JitRun own_;
  JitRun* run_;
  std::optional<Halide::Callable> kernel_;
};

// The JIT's kernels address Halide's 32-bit buffers: a larger operand is refused before any view is
// made (the runtime takes the reference path for such calls instead).
struct Operand {
  const char* name;
  Shape shape;
  DType dtype;
};
void require_halide_buffers(const std::string& op, const std::vector<Operand>& operands) {
  for (const Operand& o : operands) {
    if (!fits_halide_buffer(o.shape, o.dtype)) {
      invalid(op, o.name, " is ", dtype_name(o.dtype), " ", shape_str(o.shape),
              ", beyond the 32-bit Halide buffers of the JIT (each extent and the byte size below "
              "2^31); "
              "mmtune::runtime computes such calls with the reference");
    }
  }
}

// The prepacked_b kernel of `id` (under v.prepacked_b) and the layout its B is packed in.
KernelKey prepacked_key(KernelIdentity id, const HalideVariant& v, bool dot8, PanelLayout* layout) {
  if (v.prepacked_b) {
    if (v.autoschedule) invalid(id.op, "a prepacked B needs a schedule template's layout");
    id.params["prepacked_b"] = "true";
  }
  KernelKey key = kernel_key(id, v);
  const schedules::MatmulLayout l =
      key.schedule.layout(target_info_of(v), accumulator_of(key.identity));
  // Strips are computed whole past N: the panels cover them (runtime/host/packed_b.h).
  const auto* cpu = key.schedule.register_tiled();
  *layout = {l.panel, l.k_group, l.pack_b, dot8, cpu ? cpu->n_block : 0, l.group_align};
  return key;
}

// B (K, N; transposed when `trans`: `b` is then its (K, N) copy) packed for `layout`, with its
// column sums mod 2^32 when `sums`: from v's panel cache (packed on first use, keyed by `source`,
// the caller's B) or into `local`.
const PanelCache::Packed& packed_b(const HalideVariant& v, const Tensor& source, bool trans,
                                   const Tensor& b, const PanelLayout& layout, bool sums,
                                   PanelCache::Packed& local) {
  auto pack = [&] {
    return PanelCache::Packed{pack_b_panels(b, layout), sums ? column_sums_mod32(b) : Tensor()};
  };
  if (!v.panel_cache) {
    local = pack();
    return local;
  }
  std::ostringstream l;
  l << layout.panel << "/" << layout.k_group << "/" << layout.pack_b << "/" << layout.dot8 << "/"
    << layout.strip << "/" << sums;
  auto key = std::make_tuple(static_cast<const void*>(source.bytes.data()), trans, l.str());
  auto it = v.panel_cache->packed.find(key);
  if (it == v.panel_cache->packed.end()) it = v.panel_cache->packed.emplace(key, pack()).first;
  return it->second;
}

}  // namespace

std::size_t jit_cache_size() { return jit::cache_size(); }

Tensor gemm_halide(const GemmArgs& args, const HalideVariant& v, JitRun* run) {
  const GemmPlan plan = validate_gemm(args);
  // A prepacked B is packed from B (K, N): a transposed one is materialized first.
  GemmArgs call = args;
  Tensor b_t;
  if (v.prepacked_b && call.trans_b) {
    b_t = transposed(*call.b);
    call.b = &b_t;
    call.trans_b = false;
  }
  PanelLayout layout;
  LazyKernel kernel(prepacked_key(gemm_identity(call), v, false, &layout), v, run);
  require_halide_buffers("Gemm", {{"A", call.a->shape, call.a->dtype},
                                  {"B", call.b->shape, call.b->dtype},
                                  {"Y", {plan.m, plan.n}, call.a->dtype}});
  // K = 0: no sum to compute, the result is the epilogue alone; the reference evaluates it.
  if (plan.k == 0) return gemm(call);
  Tensor y(call.a->dtype, {plan.m, plan.n});
  if (y.numel() == 0) return y;
  const Tensor dummy = call.c ? Tensor() : gemm_absent_c(call.a->dtype, plan.n);
  PanelCache::Packed local;
  const Tensor* panels =
      v.prepacked_b ? &packed_b(v, *args.b, args.trans_b, *call.b, layout, false, local).panels
                    : nullptr;
  auto a = view(*call.a, call.a->shape);
  auto b = panels ? view(*panels, panels->shape) : view(*call.b, call.b->shape);
  auto c = call.c ? view(*call.c, {plan.m, plan.n}) : view(dummy, {plan.m, plan.n});
  auto out = view_matrix(output_data(y, kernel.placed_output()), y.dtype, 0, plan.m, plan.n);
  kernel(a.raw_buffer(), b.raw_buffer(), c.raw_buffer(), call.alpha, call.beta, out.raw_buffer());
  finish_output(y, kernel.placed_output());
  return y;
}

Tensor qlinear_matmul_halide(const QLinearMatMulArgs& args, const HalideVariant& v, JitRun* run) {
  const QLinearMatMulPlan plan = validate_qlinear_matmul(args);
  if (v.prepacked_b && args.b->rank() != 2)
    invalid("QLinearMatMul", "b is ", describe(*args.b), "; a prepacked b is 2-D (K, N)");
  PanelLayout layout;
  LazyKernel kernel(prepacked_key(qlinear_matmul_identity(args), v, !plan.float8, &layout), v, run);
  const MatMulShape& s = plan.shape;  // one 2-D product per batch entry
  require_halide_buffers("QLinearMatMul", {{"a (one batch entry)", {s.m, s.k}, args.a->dtype},
                                           {"b (one batch entry)", {s.k, s.n}, args.b->dtype},
                                           {"y (one batch entry)", {s.m, s.n}, plan.out_dtype}});
  const bool packed = v.prepacked_b && !qlinear_matmul_no_kernel(plan);
  PanelCache::Packed local;
  PackedOperand packed_operand;
  if (packed) {
    const PanelCache::Packed& p = packed_b(v, *args.b, false, *args.b, layout, !plan.float8, local);
    packed_operand = {&p.panels, plan.float8 ? nullptr : &p.sums};
  }
  return run_qlinear_matmul_host(
      args, plan,
      [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* as, halide_buffer_t* az,
          halide_buffer_t* bs, halide_buffer_t* bz, halide_buffer_t* sums, float ys, int32_t yzp,
          halide_buffer_t* y) { return kernel(a, b, as, az, bs, bz, sums, ys, yzp, y); },
      kernel.placed_output(), packed ? &packed_operand : nullptr);
}

Tensor qgemm_halide(const QGemmArgs& args, const HalideVariant& v, JitRun* run) {
  const QGemmPlan plan = validate_qgemm(args);
  PanelLayout layout;
  LazyKernel kernel(prepacked_key(qgemm_identity(args), v, /*dot8=*/true, &layout), v, run);
  require_halide_buffers("QGemm", {{"A", args.a->shape, args.a->dtype},
                                   {"B", args.b->shape, args.b->dtype},
                                   {"Y", {plan.m, plan.n}, plan.out_dtype}});
  // A prepacked B: packed from B (K, N), a transposed one materialized first.
  const bool packed = v.prepacked_b && !qgemm_no_kernel(plan);
  PanelCache::Packed local;
  PackedOperand packed_operand;
  if (packed) {
    const Tensor b_kn = args.trans_b ? transposed(*args.b) : Tensor();
    const Tensor& b = args.trans_b ? b_kn : *args.b;
    const PanelCache::Packed& p = packed_b(v, *args.b, args.trans_b, b, layout, true, local);
    packed_operand = {&p.panels, &p.sums};
  }
  return run_qgemm_host(
      args, plan,
      [&](halide_buffer_t* a, halide_buffer_t* b, halide_buffer_t* c, float a_scale, int32_t a_zp,
          halide_buffer_t* bs, halide_buffer_t* bz, halide_buffer_t* sums, float ys, int32_t yzp,
          float alpha, halide_buffer_t* y) {
        return kernel(a, b, c, a_scale, a_zp, bs, bz, sums, ys, yzp, alpha, y);
      },
      kernel.placed_output(), packed ? &packed_operand : nullptr);
}

Tensor quant_matmul_dequant_halide(const QuantMatmulDequantArgs& args, const HalideVariant& v,
                                   JitRun* run) {
  const QuantMatmulDequantPlan plan = validate_quant_matmul_dequant(args);
  // A prepacked weight: packed from the (K, N) weight (an (N, K) one materialized transposed first)
  // by the prepacked_b kernel's identity, which reads (K, N) and a bias (an absent one as zeros).
  const Tensor zero_bias(DType::kInt32, {plan.n});
  const QuantMatmulDequantArgs call = v.prepacked_b ? kn_weight_with_bias(args, zero_bias) : args;
  PanelLayout layout;
  LazyKernel kernel(prepacked_key(quant_matmul_dequant_identity(call), v, /*dot8=*/true, &layout),
                    v, run);
  require_halide_buffers("QuantMatmulDequant", {{"x", args.x->shape, args.x->dtype},
                                                {"weight", args.weight->shape, args.weight->dtype},
                                                {"y", {plan.m, plan.n}, DType::kFloat16}});
  const bool packed = v.prepacked_b && !quant_matmul_dequant_no_kernel(plan);
  PanelCache::Packed local;
  PackedOperand packed_operand;
  if (packed) {
    if (plan.k == 0) {
      // K = 0 runs as K = 1 over a zero x (run_quant_matmul_dequant_host): packed from a zero
      // (1, N) weight, whose column sums are 0 (not cached: an empty weight has no storage to key).
      const Tensor w(DType::kInt8, {1, plan.n});
      local = {pack_b_panels(w, layout), column_sums_mod32(w)};
      packed_operand = {&local.panels, &local.sums};
    } else {
      const Tensor w_kn = args.transpose_weight ? transposed(*args.weight) : Tensor();
      const PanelCache::Packed& p =
          packed_b(v, *args.weight, args.transpose_weight,
                   args.transpose_weight ? w_kn : *args.weight, layout, true, local);
      packed_operand = {&p.panels, &p.sums};
    }
  }
  return run_quant_matmul_dequant_host(
      call, plan,
      [&](halide_buffer_t* x, halide_buffer_t* weight, halide_buffer_t* weight_scale,
          halide_buffer_t* bias, halide_buffer_t* x_scale, halide_buffer_t* smooth,
          halide_buffer_t* y) { return kernel(x, weight, weight_scale, bias, x_scale, smooth, y); },
      kernel.placed_output(), packed ? &packed_operand : nullptr);
}

Tensor run_halide(std::string_view op_name, const NamedTensors& in, const Attributes& attrs,
                  const HalideVariant& v, JitRun* run) {
  const std::string op = find_operator(op_name).name;
  if (op == "Gemm") return gemm_halide(gemm_args(in, attrs), v, run);
  if (op == "QLinearMatMul") return qlinear_matmul_halide(qlinear_matmul_args(in, attrs), v, run);
  if (op == "QGemm") return qgemm_halide(qgemm_args(in, attrs), v, run);
  if (op == "QuantMatmulDequant")
    return quant_matmul_dequant_halide(quant_matmul_dequant_args(in, attrs), v, run);
  MMTUNE_CHECK(false, "operator " << op << " has no Halide path");
}

}  // namespace mmtune
