// QLinearMatMul through Halide's JIT.
#include "autotune/halide_qlinear_matmul.h"

#include "autotune/halide_jit.h"
#include "reference/broadcast.h"
#include "schedules/target_info.h"

namespace mmtune {

Tensor qlinear_matmul_halide(const QLinearMatMulArgs& args, const HalideVariant& v) {
  const QLinearMatMulPlan plan = validate_qlinear_matmul(args);
  const schedules::TargetInfo ti = schedules::target_info(v.target == "host" ? jit::resolve_target("host").to_string() : v.target);
  if (auto why = v.schedule.validate(ti, plan.float8 ? 64 : 32, /*integer_sum=*/!plan.float8)) invalid("QLinearMatMul", "schedule: ", *why);
  const MatMulShape& s = plan.shape;
  // K = 0: no sum to compute, the result is the requantized zero alone; the reference evaluates it.
  if (s.k == 0) return qlinear_matmul(args);
  Tensor y(plan.out_dtype, s.out);
  if (y.numel() == 0) return y;
  const KernelKey key = qlinear_matmul_kernel_key(args, v);
  Halide::Callable kernel = jit::compile(key, v.target);

  const std::size_t nb = s.batch.size();
  const Shape a_full = s.a_full(), b_full = s.b_full();
  const auto sa = broadcast_strides(s.a_promoted, a_full), sb = broadcast_strides(s.b_promoted, b_full);
  const auto sas = broadcast_strides(args.a_scale->shape, a_full), saz = broadcast_strides(args.a_zero_point->shape, a_full);
  const auto sbs = broadcast_strides(args.b_scale->shape, b_full), sbz = broadcast_strides(args.b_zero_point->shape, b_full);
  // Per-row / per-column parameters of one batch entry, widened exactly (float16/bfloat16 scales
  // to float32, zero points to int32).
  Tensor as(DType::kFloat32, {s.m}), za(DType::kInt32, {s.m}), bs(DType::kFloat32, {s.n}), zb(DType::kInt32, {s.n});
  const float ys = static_cast<float>(float_at(*args.y_scale, 0));
  const int32_t yzp = plan.float8 ? 0 : static_cast<int32_t>(int_at(*args.y_zero_point, 0));

  IndexWalker batch(s.batch);
  int64_t out_offset = 0;
  do {
    const std::vector<int64_t>& idx = batch.index();
    auto batch_offset = [&](const std::vector<int64_t>& strides) {
      int64_t o = 0;
      for (std::size_t d = 0; d < nb; ++d) o += idx[d] * strides[d];
      return o;
    };
    for (int64_t i = 0; i < s.m; ++i) {
      as.data<float>()[i] = static_cast<float>(float_at(*args.a_scale, batch_offset(sas) + i * sas[nb]));
      za.data<int32_t>()[i] = plan.float8 ? 0 : static_cast<int32_t>(int_at(*args.a_zero_point, batch_offset(saz) + i * saz[nb]));
    }
    for (int64_t j = 0; j < s.n; ++j) {
      bs.data<float>()[j] = static_cast<float>(float_at(*args.b_scale, batch_offset(sbs) + j * sbs[nb + 1]));
      zb.data<int32_t>()[j] = plan.float8 ? 0 : static_cast<int32_t>(int_at(*args.b_zero_point, batch_offset(sbz) + j * sbz[nb + 1]));
    }
    auto a_view = view_matrix(*args.a, batch_offset(sa), s.m, s.k);
    auto b_view = view_matrix(*args.b, batch_offset(sb), s.k, s.n);
    auto y_view = view_matrix(y, out_offset, s.m, s.n);
    jit::ErrorContext ctx;
    jit::check(kernel(ctx.get(), a_view, b_view, view(as, as.shape), view(za, za.shape), view(bs, bs.shape),
                      view(zb, zb.shape), ys, yzp, y_view),
               ctx, key);
    out_offset += s.m * s.n;
  } while (batch.next());
  return y;
}

}  // namespace mmtune
