// QGemm through Halide's JIT.
#include "autotune/halide_qgemm.h"

#include "autotune/halide_jit.h"
#include "schedules/target_info.h"

namespace mmtune {
namespace {

// The (rows x cols) row-major transpose of a (cols x rows) 8-bit matrix.
Tensor transposed(const Tensor& t) {
  const int64_t r = t.shape[0], c = t.shape[1];
  Tensor out(t.dtype, {c, r});
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) out.bytes[j * r + i] = t.bytes[i * c + j];
  }
  return out;
}

}  // namespace

Tensor qgemm_halide(const QGemmArgs& args, const HalideVariant& v) {
  const QGemmPlan plan = validate_qgemm(args);
  const schedules::TargetInfo ti = schedules::target_info(jit::resolve_target(v.target).to_string());
  if (auto why = v.schedule.validate(ti, 32, /*integer_sum=*/true)) invalid("QGemm", "schedule: ", *why);
  // K = 0: no sum to compute, the result is the epilogue of C alone; the reference evaluates it.
  if (plan.k == 0) return qgemm(args);
  Tensor y(plan.out_dtype, {plan.m, plan.n});
  if (y.numel() == 0) return y;
  const KernelKey key = qgemm_kernel_key(args, v);
  Halide::Callable kernel = jit::compile(key, v.target);
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
  const float ys = args.y_scale ? args.y_scale->data<float>()[0] : 1.0f;
  const int32_t yzp = args.y_zero_point ? static_cast<int32_t>(int_at(*args.y_zero_point, 0)) : 0;
  jit::ErrorContext ctx;
  jit::check(kernel(ctx.get(), a_view, b_view, c_view, args.a_scale->data<float>()[0],
                    static_cast<int32_t>(int_at(*args.a_zero_point, 0)), view(bs, bs.shape), view(bz, bz.shape),
                    ys, yzp, args.alpha, view_matrix(y, 0, plan.m, plan.n)),
             ctx, key);
  return y;
}

}  // namespace mmtune
