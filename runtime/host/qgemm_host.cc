// QGemm's host side: transposes, parameter widening, one call.
#include "runtime/host/qgemm_host.h"

#include "reference/error.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/kernel_memory.h"

namespace mmtune {

std::optional<std::string> qgemm_no_kernel(const QGemmPlan& plan) {
  if (plan.k == 0) return "K is 0 (an empty sum): the reference computes it";
  if (plan.m == 0 || plan.n == 0) return "Y is empty";
  return std::nullopt;
}

void widen_qgemm_b_params(const QGemmArgs& args, const QGemmPlan& plan, Tensor& b_scale,
                          Tensor& b_zero_point) {
  const bool per_column = args.b_scale->numel() > 1;
  for (int64_t j = 0; j < plan.n; ++j) {
    b_scale.data<float>()[j] = args.b_scale->data<float>()[per_column ? j : 0];
    b_zero_point.data<int32_t>()[j] =
        static_cast<int32_t>(int_at(*args.b_zero_point, per_column ? j : 0));
  }
}

Tensor run_qgemm_host(const QGemmArgs& args, const QGemmPlan& plan, const QGemmKernelCall& call,
                      uint8_t* placed_output, const PackedOperand* packed) {
  // K = 0: no sum to compute, the result is the epilogue of C alone; the reference evaluates it.
  if (plan.k == 0) return qgemm(args);
  Tensor y = Tensor::uninitialized(plan.out_dtype, {plan.m, plan.n});  // the kernel writes it all
  if (y.numel() == 0) return y;
  host::ScratchTensor at, bt;  // transposed operands, on this thread's scratch
  const Tensor& a = args.trans_a ? at.transpose_of(*args.a) : *args.a;
  const Tensor& b = args.trans_b && !packed ? bt.transpose_of(*args.b) : *args.b;
  const Tensor zero_c(DType::kInt32, {});
  Tensor bs(DType::kFloat32, {plan.n}), bz(DType::kInt32, {plan.n});
  widen_qgemm_b_params(args, plan, bs, bz);
  auto a_view = view_matrix(a, 0, plan.m, plan.k);
  auto b_view =
      packed ? view(*packed->panels, packed->panels->shape) : view_matrix(b, 0, plan.k, plan.n);
  // Unprepacked kernels never read the column sums: one element stands for them.
  const Tensor no_sums(DType::kUInt32, {1});
  const Tensor& sums = packed && packed->column_sums ? *packed->column_sums : no_sums;
  auto sums_view = view(sums, sums.shape);
  auto c_view = view(args.c ? *args.c : zero_c, {plan.m, plan.n});
  auto bs_view = view(bs, bs.shape), bz_view = view(bz, bz.shape);
  auto y_view = view_matrix(output_data(y, placed_output), y.dtype, 0, plan.m, plan.n);
  const float ys = args.y_scale ? args.y_scale->data<float>()[0] : 1.0f;
  const int32_t yzp = args.y_zero_point ? static_cast<int32_t>(int_at(*args.y_zero_point, 0)) : 0;
  const int rc = call(
      a_view.raw_buffer(), b_view.raw_buffer(), c_view.raw_buffer(), args.a_scale->data<float>()[0],
      static_cast<int32_t>(int_at(*args.a_zero_point, 0)), bs_view.raw_buffer(),
      bz_view.raw_buffer(), sums_view.raw_buffer(), ys, yzp, args.alpha, y_view.raw_buffer());
  MMTUNE_CHECK(rc == 0, "QGemm kernel returned Halide error " << rc);
  finish_output(y, placed_output);
  return y;
}

}  // namespace mmtune
