// QuantMatmulDequant's host side: views, dummies, the K = 0 rule.
#include "runtime/host/quant_matmul_dequant_host.h"

#include "reference/error.h"
#include "runtime/host/buffer_view.h"

namespace mmtune {

std::optional<std::string> quant_matmul_dequant_no_kernel(const QuantMatmulDequantPlan& plan) {
  if (plan.m == 0 || plan.n == 0) return "Y is empty";
  return std::nullopt;
}

QuantMatmulDequantArgs kn_weight_with_bias(const QuantMatmulDequantArgs& args,
                                           const Tensor& zero_bias) {
  QuantMatmulDequantArgs canon = args;
  if (!canon.bias) canon.bias = &zero_bias;
  canon.transpose_weight = false;
  return canon;
}

Tensor fold_column_sums_into_bias(const Tensor* bias, const Tensor& column_sums) {
  MMTUNE_CHECK(column_sums.dtype == DType::kUInt32 && column_sums.rank() == 1,
               "column sums are uint32 (N)");
  const int64_t n = column_sums.shape[0];
  MMTUNE_CHECK(!bias || bias->numel() == n, "bias of " << n << " values");
  Tensor folded = Tensor::uninitialized(DType::kInt32, {n});
  const uint32_t* sums = column_sums.data<uint32_t>();
  const int32_t* b = bias ? bias->data<int32_t>() : nullptr;
  uint32_t* out = folded.data<uint32_t>();
  for (int64_t j = 0; j < n; ++j) {
    const uint32_t v = b ? static_cast<uint32_t>(b[j]) : 0u;
    out[j] = v - (sums[j] << 7);  // uint32: mod 2^32
  }
  return folded;
}

Tensor run_quant_matmul_dequant_host(const QuantMatmulDequantArgs& args,
                                     const QuantMatmulDequantPlan& plan,
                                     const QuantMatmulDequantKernelCall& call,
                                     uint8_t* placed_output, const PackedOperand* packed) {
  Tensor y = Tensor::uninitialized(DType::kFloat16, {plan.m, plan.n});  // the kernel writes it all
  if (y.numel() == 0) return y;
  // Absent optional inputs: 1-element dummies of the kernel's input types, never read.
  const Tensor no_bias(DType::kInt32, {1});
  const Tensor no_x_scale(DType::kFloat32, {1});
  const Tensor no_smooth(DType::kFloat16, {1});
  // k = 0: the kernel runs as k = 1 with x = +0 (and smooth = 1), which computes the same bits in
  // every mode: x_q = 0 (0 * inv, or NaN -> 0 when inv = +Inf), so acc = bias; a dynamic row max is
  // 0 either way. (An empty tensor has no storage, and Halide would take its null host pointer for
  // a bounds query and compute nothing.)
  const bool k0 = plan.k == 0;
  Tensor x1, w1, smooth1;
  if (k0) {
    x1 = Tensor(DType::kFloat16, {plan.m, 1});
    w1 = Tensor(DType::kInt8, args.transpose_weight ? Shape{plan.n, 1} : Shape{1, plan.n});
    smooth1 = Tensor(DType::kFloat16, {1});
    smooth1.data<uint16_t>()[0] = 0x3C00;  // 1.0
  }
  const Tensor& x_t = k0 ? x1 : *args.x;
  const Tensor& w_t = packed ? *packed->panels : k0 ? w1 : *args.weight;
  MMTUNE_CHECK(!packed || packed->column_sums, "a prepacked weight comes with its column sums");
  const Tensor folded =
      packed ? fold_column_sums_into_bias(args.bias, *packed->column_sums) : Tensor();
  auto x = view(x_t, x_t.shape);
  auto weight = view(w_t, w_t.shape);
  auto weight_scale = view(*args.weight_scale, {plan.n});
  auto bias = packed      ? view(folded, {plan.n})
              : args.bias ? view(*args.bias, {plan.n})
                          : view(no_bias, {1});
  auto x_scale = plan.dynamic ? view(no_x_scale, {1})
                 : args.x_quant_mode == XQuantMode::kPerToken
                     ? view(*args.x_scale, {plan.m})
                     : view(*args.x_scale, {1});  // () or (1,)
  auto smooth = !args.smooth_scale ? view(no_smooth, {1})
                : k0               ? view(smooth1, {1})
                                   : view(*args.smooth_scale, {plan.k});
  auto out = view_matrix(output_data(y, placed_output), y.dtype, 0, plan.m, plan.n);
  const int rc =
      call(x.raw_buffer(), weight.raw_buffer(), weight_scale.raw_buffer(), bias.raw_buffer(),
           x_scale.raw_buffer(), smooth.raw_buffer(), out.raw_buffer());
  MMTUNE_CHECK(rc == 0, "QuantMatmulDequant kernel returned Halide error " << rc);
  finish_output(y, placed_output);
  return y;
}

}  // namespace mmtune
