// com.microsoft QGemm reference: int32 sum with C, ORT's output scale, float32 requantization.
#include "reference/qgemm.h"

#include <cmath>

#include "reference/broadcast.h"
#include "reference/rounding.h"
#include "reference/validate.h"

namespace mmtune {
namespace {
constexpr const char* kOp = "QGemm";
}  // namespace

QGemmPlan validate_qgemm(const QGemmArgs& args) {
  const Tensor& a = require_present(kOp, "A", args.a);
  const Tensor& a_scale = require_present(kOp, "a_scale", args.a_scale);
  const Tensor& a_zp = require_present(kOp, "a_zero_point", args.a_zero_point);
  const Tensor& b = require_present(kOp, "B", args.b);
  const Tensor& b_scale = require_present(kOp, "b_scale", args.b_scale);
  const Tensor& b_zp = require_present(kOp, "b_zero_point", args.b_zero_point);

  require_dtype(kOp, "A", a, {DType::kUInt8, DType::kInt8});
  require_dtype(kOp, "B", b, {DType::kUInt8, DType::kInt8});
  require_same_dtype(kOp, "a_zero_point", a_zp, "A", a);
  require_same_dtype(kOp, "b_zero_point", b_zp, "B", b);
  require_dtype(kOp, "a_scale", a_scale, {DType::kFloat32});
  require_dtype(kOp, "b_scale", b_scale, {DType::kFloat32});
  // The com.microsoft schema types A (TA), B (TB) and the quantized output (TYZ) independently,
  // each uint8 or int8: every combination is computed (ONNX Runtime's CPU kernels implement fewer:
  // docs/semantics.md).
  const GemmDims d = gemm_dims(kOp, a, b, args.trans_a, args.trans_b);
  QGemmPlan p;
  p.m = d.m;
  p.k = d.k;
  p.n = d.n;
  require_single_value(kOp, "a_scale", a_scale);
  require_single_value(kOp, "a_zero_point", a_zp);
  const bool b_ok = b_scale.rank() == 0 ||
                    (b_scale.rank() == 1 && (b_scale.shape[0] == 1 || b_scale.shape[0] == p.n));
  if (!b_ok) {
    invalid(kOp, "b_scale has shape ", shape_str(b_scale.shape),
            "; it must be a scalar, [1] or [N] = [", p.n, "] (per column)");
  }
  if (b_zp.shape != b_scale.shape) {
    invalid(kOp, "b_zero_point has shape ", shape_str(b_zp.shape), " but b_scale has shape ",
            shape_str(b_scale.shape), "; they must have the same rank and length");
  }
  if (args.c != nullptr) {
    const Tensor& c = require_present(kOp, "C", args.c);
    require_dtype(kOp, "C", c, {DType::kInt32});
    require_broadcast_to_output(kOp, c, p.m, p.n);
  }
  if (args.y_zero_point != nullptr && args.y_scale == nullptr) {
    invalid(kOp, "y_zero_point is given without y_scale; a quantized output needs both");
  }
  if (args.y_scale != nullptr) {
    const Tensor& ys = require_present(kOp, "y_scale", args.y_scale);
    require_dtype(kOp, "y_scale", ys, {DType::kFloat32});
    require_single_value(kOp, "y_scale", ys);
    require_positive_finite(kOp, "y_scale", ys);
  }
  if (args.y_zero_point != nullptr) {
    const Tensor& yz = require_present(kOp, "y_zero_point", args.y_zero_point);
    require_single_value(kOp, "y_zero_point", yz);
    require_dtype(kOp, "y_zero_point", yz, {DType::kUInt8, DType::kInt8});
    p.out_dtype = yz.dtype;
  }
  require_positive_finite(kOp, "a_scale", a_scale);
  require_positive_finite(kOp, "b_scale", b_scale);
  if (!std::isfinite(args.alpha)) invalid(kOp, "alpha = ", args.alpha, "; it must be finite");
  // The output scale grows with |alpha| and b_scale: the largest one bounds them all.
  float max_bs = 0;
  for (int64_t j = 0; j < b_scale.numel(); ++j)
    max_bs = std::fmax(max_bs, b_scale.data<float>()[j]);
  float s = std::fabs(args.alpha) * a_scale.data<float>()[0] * max_bs;
  if (args.y_scale != nullptr) s = s / args.y_scale->data<float>()[0];
  if (!std::isfinite(s)) {
    invalid(kOp, "alpha * a_scale * b_scale / y_scale overflows float32 (alpha ", args.alpha,
            ", largest b_scale ", max_bs, "); the output scale must be finite");
  }
  require_output_fits(kOp, "Y", p.out_dtype, {p.m, p.n});
  return p;
}

Tensor qgemm(const QGemmArgs& args) {
  const QGemmPlan p = validate_qgemm(args);
  Tensor y(p.out_dtype, {p.m, p.n});
  const Tensor &a = *args.a, &b = *args.b;
  const std::vector<int64_t> sc =
      args.c ? broadcast_strides(args.c->shape, {p.m, p.n}) : std::vector<int64_t>{0, 0};
  const int64_t za = int_at(*args.a_zero_point, 0);
  const float as = args.a_scale->data<float>()[0];
  const float* ys = args.y_scale ? args.y_scale->data<float>() : nullptr;
  const bool per_column = args.b_scale->numel() > 1;
  const int32_t qmin = p.out_dtype == DType::kInt8 ? -128 : 0;
  const int32_t qmax = p.out_dtype == DType::kInt8 ? 127 : 255;
  const int32_t yzp = args.y_zero_point ? static_cast<int32_t>(int_at(*args.y_zero_point, 0)) : 0;

  for (int64_t j = 0; j < p.n; ++j) {
    const int64_t col = per_column ? j : 0;
    const int64_t zb = int_at(*args.b_zero_point, col);
    // ORT ComputeOutputScale, left to right in float32: fl32(fl32(alpha * a_scale) * b_scale_j),
    // then fl32(s / y_scale) when y_scale is given.
    const float s0 = args.alpha * as;
    float s = s0 * args.b_scale->data<float>()[col];
    if (ys != nullptr) s = s / ys[0];
    for (int64_t i = 0; i < p.m; ++i) {
      // acc = wrap32(C_ij + sum_k (A_ik - za)(B_kj - zb_j)); K == 0 leaves acc = C_ij (SEMANTICS.md
      // §8.5).
      uint32_t acc =
          args.c ? static_cast<uint32_t>(args.c->data<int32_t>()[i * sc[0] + j * sc[1]]) : 0u;
      for (int64_t k = 0; k < p.k; ++k) {
        const int64_t av = int_at(a, args.trans_a ? k * p.m + i : i * p.k + k);
        const int64_t bv = int_at(b, args.trans_b ? j * p.k + k : k * p.n + j);
        acc += static_cast<uint32_t>((av - za) * (bv - zb));
      }
      const int32_t acc32 = wrap32(static_cast<int64_t>(acc));
      const int64_t out = i * p.n + j;
      if (p.out_dtype == DType::kFloat32) {
        y.data<float>()[out] = static_cast<float>(acc32) * s;  // fl32(fl32(acc) * s_j)
      } else {
        const int32_t q = requantize_float32(acc32, s, yzp, qmin, qmax);
        if (p.out_dtype == DType::kInt8) {
          y.data<int8_t>()[out] = static_cast<int8_t>(q);
        } else {
          y.data<uint8_t>()[out] = static_cast<uint8_t>(q);
        }
      }
    }
  }
  return y;
}

}  // namespace mmtune
