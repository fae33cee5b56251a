// QuantMatmulDequant through Halide's JIT: argument mapping and the kernel key.
#include "autotune/halide_quant_matmul_dequant.h"

#include <vector>

#include "schedules/target_info.h"

namespace mmtune {
namespace {

// A view of `t` as `shape` whose host pointer is never null. An empty tensor (k = 0 leaves x,
// weight and smooth empty) has no storage, and Halide takes a buffer with a null host pointer for a
// bounds query: the pipeline would return 0 without computing anything. `one` (1 element) lends
// its storage; nothing is read from an empty buffer.
Halide::Runtime::Buffer<void> view_nonnull(const Tensor& t, const Shape& shape, const Tensor& one) {
  Halide::Runtime::Buffer<void> b = view(t, shape);
  if (b.data() != nullptr) return b;
  const halide_buffer_t* raw = b.raw_buffer();
  std::vector<halide_dimension_t> dims(raw->dim, raw->dim + raw->dimensions);
  return Halide::Runtime::Buffer<void>(b.type(), const_cast<uint8_t*>(one.bytes.data()), raw->dimensions,
                                       dims.data());
}

}  // namespace

KernelKey quant_matmul_dequant_kernel_key(const QuantMatmulDequantArgs& args, const HalideVariant& v) {
  const bool fused = args.weight_scale != nullptr && args.weight_scale->dtype == DType::kInt64;
  const bool dynamic = args.x_scale == nullptr;
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  KernelKey key{"mmtune_quant_matmul_dequant", {}};
  key.params = {{"transpose_weight", flag(args.transpose_weight)},
                {"fused_scale", flag(fused)},
                {"dynamic", flag(dynamic)},
                {"per_token", flag(args.x_quant_mode == XQuantMode::kPerToken)},
                {"has_smooth", flag(args.smooth_scale != nullptr)},
                {"has_bias", flag(args.bias != nullptr)},
                {"weight_scale.type", fused ? "int64" : "float32"},
                // Dynamic kernels never read x_scale: their dummy is float32.
                {"x_scale.type", dynamic ? "float32" : gp_type(args.x_scale->dtype)}};
  add_schedule_params(key, v);
  return key;
}

Tensor quant_matmul_dequant_halide(const QuantMatmulDequantArgs& args, const HalideVariant& v) {
  const QuantMatmulDequantPlan plan = validate_quant_matmul_dequant(args);
  const schedules::TargetInfo ti = schedules::target_info(v.target == "host" ? host_target() : v.target);
  if (auto why = v.schedule.validate(ti, 32)) invalid("QuantMatmulDequant", "schedule: ", *why);
  Tensor y(DType::kFloat16, {plan.m, plan.n});
  if (y.numel() == 0) return y;
  const KernelKey key = quant_matmul_dequant_kernel_key(args, v);
  Halide::Callable kernel = jit::compile(key, v.target);
  // Absent optional inputs: 1-element dummies of the kernel's input types, never read.
  const Tensor no_bias(DType::kInt32, {1});
  const Tensor no_x_scale(DType::kFloat32, {1});
  const Tensor no_smooth(DType::kFloat16, {1});
  const Tensor one_x(DType::kFloat16, {1}), one_weight(DType::kInt8, {1});
  auto x = view_nonnull(*args.x, args.x->shape, one_x);
  auto weight = view_nonnull(*args.weight, args.weight->shape, one_weight);
  auto weight_scale = view(*args.weight_scale, {plan.n});
  auto bias = args.bias ? view(*args.bias, {plan.n}) : view(no_bias, {1});
  auto x_scale = plan.dynamic ? view(no_x_scale, {1})
                 : args.x_quant_mode == XQuantMode::kPerToken ? view(*args.x_scale, {plan.m})
                                                              : view(*args.x_scale, {1});  // () or (1,)
  auto smooth = args.smooth_scale ? view_nonnull(*args.smooth_scale, {plan.k}, no_smooth) : view(no_smooth, {1});
  auto out = view(y, y.shape);
  jit::ErrorContext ctx;
  jit::check(kernel(ctx.get(), x, weight, weight_scale, bias, x_scale, smooth, out), ctx, key);
  return y;
}

}  // namespace mmtune
