// QGemm's host side: transposes, parameter widening, one call.
#include "autotune/qgemm_host.h"

#include <algorithm>

#include "autotune/buffer_view.h"
#include "reference/error.h"

namespace mmtune {
namespace {

// The (cols x rows) row-major transpose of a (rows x cols) 8-bit matrix, in 32 x 32 blocks.
Tensor transposed(const Tensor& t) {
  const int64_t r = t.shape[0], c = t.shape[1];
  Tensor out(t.dtype, {c, r});
  constexpr int64_t kB = 32;
  for (int64_t i0 = 0; i0 < r; i0 += kB) {
    for (int64_t j0 = 0; j0 < c; j0 += kB) {
      const int64_t i1 = std::min(r, i0 + kB), j1 = std::min(c, j0 + kB);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) out.bytes[j * r + i] = t.bytes[i * c + j];
      }
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> qgemm_no_kernel(const QGemmPlan& plan) {
  if (plan.k == 0) return "K is 0 (an empty sum): the reference computes it";
  if (plan.m == 0 || plan.n == 0) return "Y is empty";
  return std::nullopt;
}

Tensor run_qgemm_host(const QGemmArgs& args, const QGemmPlan& plan, const QGemmKernelCall& call) {
  // K = 0: no sum to compute, the result is the epilogue of C alone; the reference evaluates it.
  if (plan.k == 0) return qgemm(args);
  Tensor y(plan.out_dtype, {plan.m, plan.n});
  if (y.numel() == 0) return y;
  Tensor at, bt;
  const Tensor& a = args.trans_a ? (at = transposed(*args.a)) : *args.a;
  const Tensor& b = args.trans_b ? (bt = transposed(*args.b)) : *args.b;
  const Tensor zero_c(DType::kInt32, {});
  Tensor bs(DType::kFloat32, {plan.n}), bz(DType::kInt32, {plan.n});
  const bool per_column = args.b_scale->numel() > 1;
  for (int64_t j = 0; j < plan.n; ++j) {
    bs.data<float>()[j] = args.b_scale->data<float>()[per_column ? j : 0];
    bz.data<int32_t>()[j] = static_cast<int32_t>(int_at(*args.b_zero_point, per_column ? j : 0));
  }
  auto a_view = view_matrix(a, 0, plan.m, plan.k);
  auto b_view = view_matrix(b, 0, plan.k, plan.n);
  auto c_view = view(args.c ? *args.c : zero_c, {plan.m, plan.n});
  auto bs_view = view(bs, bs.shape), bz_view = view(bz, bz.shape);
  auto y_view = view_matrix(y, 0, plan.m, plan.n);
  const float ys = args.y_scale ? args.y_scale->data<float>()[0] : 1.0f;
  const int32_t yzp = args.y_zero_point ? static_cast<int32_t>(int_at(*args.y_zero_point, 0)) : 0;
  const int rc = call(a_view.raw_buffer(), b_view.raw_buffer(), c_view.raw_buffer(), args.a_scale->data<float>()[0],
                      static_cast<int32_t>(int_at(*args.a_zero_point, 0)), bs_view.raw_buffer(),
                      bz_view.raw_buffer(), ys, yzp, args.alpha, y_view.raw_buffer());
  MMTUNE_CHECK(rc == 0, "QGemm kernel returned Halide error " << rc);
  return y;
}

}  // namespace mmtune
