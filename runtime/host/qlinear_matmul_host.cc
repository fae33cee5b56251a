// QLinearMatMul's host side: batch walk and exact parameter widening.
#include "runtime/host/qlinear_matmul_host.h"

#include <algorithm>

#include "reference/broadcast.h"
#include "reference/error.h"
#include "runtime/host/buffer_view.h"

namespace mmtune {

std::optional<std::string> qlinear_matmul_no_kernel(const QLinearMatMulPlan& plan) {
  const MatMulShape& s = plan.shape;
  if (s.k == 0) return "K is 0 (an empty sum): the reference computes it";
  int64_t numel = 1;
  for (int64_t d : s.out) numel *= d;
  if (numel == 0) return "Y is empty";
  return std::nullopt;
}

namespace {

// dst[0..count) = src[offset + i * stride], each widened exactly (float32 from any float type,
// int32 from an 8-bit zero point); stride 0 (a per-tensor or broadcast parameter) reads once.
void fill_widened(const Tensor& src, int64_t offset, int64_t stride, int64_t count, float* dst) {
  if (stride == 0) {
    std::fill_n(dst, count, static_cast<float>(float_at(src, offset)));
  } else if (src.dtype == DType::kFloat32) {
    const float* s = src.data<float>() + offset;
    for (int64_t i = 0; i < count; ++i) dst[i] = s[i * stride];
  } else {
    for (int64_t i = 0; i < count; ++i)
      dst[i] = static_cast<float>(float_at(src, offset + i * stride));
  }
}
void fill_widened(const Tensor& src, int64_t offset, int64_t stride, int64_t count, int32_t* dst) {
  if (stride == 0) {
    std::fill_n(dst, count, static_cast<int32_t>(int_at(src, offset)));
  } else {
    for (int64_t i = 0; i < count; ++i)
      dst[i] = static_cast<int32_t>(int_at(src, offset + i * stride));
  }
}

}  // namespace

void widen_entry_params(const QLinearMatMulArgs& args, const QLinearMatMulPlan& plan,
                        const std::vector<int64_t>& batch_index, QLinearMatMulEntryParams& p) {
  const std::vector<int64_t>& idx = batch_index;
  const MatMulShape& s = plan.shape;
  const std::size_t nb = s.batch.size();
  MMTUNE_CHECK(idx.size() == nb, "batch index of " << idx.size() << " dims for " << nb);
  const Shape a_full = s.a_full(), b_full = s.b_full();
  const auto sas = broadcast_strides(args.a_scale->shape, a_full),
             saz = broadcast_strides(args.a_zero_point->shape, a_full);
  const auto sbs = broadcast_strides(args.b_scale->shape, b_full),
             sbz = broadcast_strides(args.b_zero_point->shape, b_full);
  auto batch_offset = [&](const std::vector<int64_t>& strides) {
    int64_t o = 0;
    for (std::size_t d = 0; d < nb; ++d) o += idx[d] * strides[d];
    return o;
  };
  auto sized = [](const Tensor& t, int64_t n) { return t.shape.size() == 1 && t.shape[0] == n; };
  if (!sized(p.a_scale, s.m) || !sized(p.b_scale, s.n)) {
    p.a_scale = Tensor(DType::kFloat32, {s.m});
    p.a_zero_point = Tensor(DType::kInt32, {s.m});
    p.b_scale = Tensor(DType::kFloat32, {s.n});
    p.b_zero_point = Tensor(DType::kInt32, {s.n});
  }
  fill_widened(*args.a_scale, batch_offset(sas), sas[nb], s.m, p.a_scale.data<float>());
  fill_widened(*args.b_scale, batch_offset(sbs), sbs[nb + 1], s.n, p.b_scale.data<float>());
  if (plan.float8) {
    std::fill_n(p.a_zero_point.data<int32_t>(), s.m, 0);
    std::fill_n(p.b_zero_point.data<int32_t>(), s.n, 0);
  } else {
    fill_widened(*args.a_zero_point, batch_offset(saz), saz[nb], s.m,
                 p.a_zero_point.data<int32_t>());
    fill_widened(*args.b_zero_point, batch_offset(sbz), sbz[nb + 1], s.n,
                 p.b_zero_point.data<int32_t>());
  }
  p.y_scale = static_cast<float>(float_at(*args.y_scale, 0));
  p.y_zero_point = plan.float8 ? 0 : static_cast<int32_t>(int_at(*args.y_zero_point, 0));
  // One for all: every widened value the same bits (per tensor, broadcast, or equal per row).
  auto same = [](const Tensor& t, int64_t count) {
    const uint32_t* v = reinterpret_cast<const uint32_t*>(t.bytes.data());
    return std::all_of(v, v + count, [&](uint32_t x) { return x == v[0]; });
  };
  p.a_uniform = same(p.a_scale, s.m) && same(p.a_zero_point, s.m);
  p.b_zero_uniform = same(p.b_zero_point, s.n);
}

std::array<Halide::Runtime::Buffer<void>, 4> param_views(const QLinearMatMulEntryParams& p,
                                                         int64_t m, int64_t n) {
  return {view_parameter(p.a_scale, m, p.a_uniform), view_parameter(p.a_zero_point, m, p.a_uniform),
          view_parameter(p.b_scale, n, false), view_parameter(p.b_zero_point, n, p.b_zero_uniform)};
}

Tensor run_qlinear_matmul_host(const QLinearMatMulArgs& args, const QLinearMatMulPlan& plan,
                               const QLinearMatMulKernelCall& call, uint8_t* placed_output,
                               const PackedOperand* packed) {
  const MatMulShape& s = plan.shape;
  // K = 0: no sum to compute, the result is the requantized zero alone; the reference evaluates it.
  if (s.k == 0) return qlinear_matmul(args);
  Tensor y = Tensor::uninitialized(plan.out_dtype, s.out);  // every batch entry written below
  if (y.numel() == 0) return y;

  const std::size_t nb = s.batch.size();
  const Shape a_full = s.a_full(), b_full = s.b_full();
  const auto sa = broadcast_strides(s.a_promoted, a_full),
             sb = broadcast_strides(s.b_promoted, b_full);
  // Reused by this thread's calls: sized once per shape (the batch entries of a call, and the calls
  // after it, refill it).
  thread_local QLinearMatMulEntryParams params;
  MMTUNE_CHECK(!packed || (args.b->rank() == 2 && packed->panels),
               "a prepacked b is 2-D, got " << describe(*args.b));
  // Unprepacked kernels never read the column sums: one element stands for them.
  const Tensor no_sums(DType::kUInt32, {1});
  const Tensor& sums = packed && packed->column_sums ? *packed->column_sums : no_sums;
  auto sums_view = view(sums, sums.shape);

  IndexWalker batch(s.batch);
  int64_t out_offset = 0;
  do {
    const std::vector<int64_t>& idx = batch.index();
    auto batch_offset = [&](const std::vector<int64_t>& strides) {
      int64_t o = 0;
      for (std::size_t d = 0; d < nb; ++d) o += idx[d] * strides[d];
      return o;
    };
    widen_entry_params(args, plan, idx, params);
    auto [as_view, za_view, bs_view, zb_view] = param_views(params, s.m, s.n);
    auto a_view = view_matrix(*args.a, batch_offset(sa), s.m, s.k);
    auto b_view = packed ? view(*packed->panels, packed->panels->shape)
                         : view_matrix(*args.b, batch_offset(sb), s.k, s.n);
    auto y_view = view_matrix(output_data(y, placed_output), y.dtype, out_offset, s.m, s.n);
    const int rc =
        call(a_view.raw_buffer(), b_view.raw_buffer(), as_view.raw_buffer(), za_view.raw_buffer(),
             bs_view.raw_buffer(), zb_view.raw_buffer(), sums_view.raw_buffer(), params.y_scale,
             params.y_zero_point, y_view.raw_buffer());
    MMTUNE_CHECK(rc == 0, "QLinearMatMul kernel returned Halide error " << rc);
    out_offset += s.m * s.n;
  } while (batch.next());
  finish_output(y, placed_output);
  return y;
}

}  // namespace mmtune
