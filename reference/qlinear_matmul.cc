// ONNX QLinearMatMul-10/21 reference: plain loops, every rounding named.
#include "reference/qlinear_matmul.h"

#include <cmath>

#include "reference/broadcast.h"
#include "reference/codecs.h"
#include "reference/rounding.h"
#include "reference/validate.h"

namespace mmtune {
namespace {

constexpr const char* kOp = "QLinearMatMul";

// Scale and zero point of a (per row) or b (per column): a scalar, [1], or a shape that broadcasts
// to the operand's [..., M, 1] (a) / [..., 1, N] (b). SEMANTICS.md §1.3 (the proposal adopted
// there: a 1-D [M] vector for a is rejected unless M == 1, since numpy would align it with K).
void check_param_shape(const std::string& name, const Tensor& p, const std::string& operand,
                       const Shape& operand_shape, const Shape& promoted, bool per_row) {
  Shape target = promoted;
  target[target.size() - (per_row ? 1 : 2)] = 1;
  if (p.numel() == 1 && p.rank() <= 1) return;
  if (!broadcasts_to(p.shape, target)) {
    Shape example{per_row ? promoted[promoted.size() - 2] : 1, per_row ? 1 : promoted.back()};
    invalid(kOp, name, " has shape ", shape_str(p.shape), " but ", operand, " has shape ",
            shape_str(operand_shape), "; it must be a scalar, [1], or broadcast to ",
            shape_str(target), " (one value per ", per_row ? "row" : "column", " of ", operand,
            ", e.g. ", shape_str(example), per_row ? ")" : ", or [N])");
  }
}

bool is_positive_zero_float8(const Tensor& t, int64_t i) { return t.data<uint8_t>()[i] == 0; }

}  // namespace

const EnumNames<RequantMode>& requant_mode_names() {
  static const EnumNames<RequantMode> names = {{"float32", RequantMode::kFloat32},
                                               {"float64", RequantMode::kFloat64}};
  return names;
}

const char* to_string(RequantMode m) { return enum_name(requant_mode_names(), m); }

std::optional<RequantMode> requant_mode_from_string(std::string_view s) {
  return enum_from_name(requant_mode_names(), s);
}

float qlinear_multiplier(DType scale_type, float a_scale, float b_scale, float y_scale) {
  switch (scale_type) {
    case DType::kFloat32: {
      const float p = a_scale * b_scale;  // fl32
      return p / y_scale;                 // fl32
    }
    case DType::kFloat16: {
      // Products and quotients of binary16 values computed in binary32 and rounded once to binary16
      // are the correctly rounded binary16 results (SEMANTICS.md §0), as NumPy float16 does.
      const float p = float16_to_float(float_to_float16(a_scale * b_scale));
      return float16_to_float(float_to_float16(p / y_scale));
    }
    case DType::kBFloat16: {
      const float p = bfloat16_to_float(float_to_bfloat16(a_scale * b_scale));
      return bfloat16_to_float(float_to_bfloat16(p / y_scale));
    }
    default:
      break;
  }
  MMTUNE_CHECK(false, "scale type " << dtype_name(scale_type));
}

QLinearMatMulPlan validate_qlinear_matmul(const QLinearMatMulArgs& args) {
  const Tensor& a = require_present(kOp, "a", args.a);
  const Tensor& a_scale = require_present(kOp, "a_scale", args.a_scale);
  const Tensor& a_zp = require_present(kOp, "a_zero_point", args.a_zero_point);
  const Tensor& b = require_present(kOp, "b", args.b);
  const Tensor& b_scale = require_present(kOp, "b_scale", args.b_scale);
  const Tensor& b_zp = require_present(kOp, "b_zero_point", args.b_zero_point);
  const Tensor& y_scale = require_present(kOp, "y_scale", args.y_scale);
  const Tensor& y_zp = require_present(kOp, "y_zero_point", args.y_zero_point);

  if (args.opset != 10 && args.opset != 21) {
    invalid(kOp, "opset = ", args.opset, "; mmtune implements versions 10 and 21");
  }
  const bool v10 = args.opset == 10;
  auto check_quant_type = [&](const std::string& name, const Tensor& t) {
    if (v10) {
      require_dtype(kOp + std::string("-10"), name, t, {DType::kInt8, DType::kUInt8});
    } else {
      require_dtype(kOp, name, t,
                    {DType::kInt8, DType::kUInt8, DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ,
                     DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ});
    }
  };
  check_quant_type("a", a);
  check_quant_type("b", b);
  check_quant_type("y_zero_point", y_zp);
  require_same_dtype(kOp, "a_zero_point", a_zp, "a", a);
  require_same_dtype(kOp, "b_zero_point", b_zp, "b", b);
  if (v10) {
    require_dtype(kOp + std::string("-10"), "a_scale", a_scale, {DType::kFloat32});
  } else {
    require_dtype(kOp, "a_scale", a_scale, {DType::kFloat32, DType::kFloat16, DType::kBFloat16});
  }
  require_same_dtype(kOp, "b_scale", b_scale, "a_scale", a_scale);
  require_same_dtype(kOp, "y_scale", y_scale, "a_scale", a_scale);

  const bool f8 = is_float8(a.dtype);
  if (is_float8(b.dtype) != f8 || is_float8(y_zp.dtype) != f8) {
    invalid(
        kOp, "a is ", dtype_name(a.dtype), ", b is ", dtype_name(b.dtype), " and y_zero_point is ",
        dtype_name(y_zp.dtype),
        "; a, b and y must be all 8-bit integers or all float8 (mixed operands are not defined)");
  }

  QLinearMatMulPlan plan{matmul_shape(kOp, "a", a.shape, "b", b.shape), y_zp.dtype, f8};
  check_param_shape("a_scale", a_scale, "a", a.shape, plan.shape.a_promoted, true);
  check_param_shape("a_zero_point", a_zp, "a", a.shape, plan.shape.a_promoted, true);
  check_param_shape("b_scale", b_scale, "b", b.shape, plan.shape.b_promoted, false);
  check_param_shape("b_zero_point", b_zp, "b", b.shape, plan.shape.b_promoted, false);
  require_single_value(kOp, "y_scale", y_scale);
  require_single_value(kOp, "y_zero_point", y_zp);

  require_positive_finite(kOp, "a_scale", a_scale);
  require_positive_finite(kOp, "b_scale", b_scale);
  require_positive_finite(kOp, "y_scale", y_scale);
  if (f8) {
    for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"a_zero_point", &a_zp},
                                  {"b_zero_point", &b_zp},
                                  {"y_zero_point", &y_zp}}) {
      for (int64_t i = 0; i < t->numel(); ++i) {
        if (!is_positive_zero_float8(*t, i)) {
          invalid(kOp, name, " holds the ", dtype_name(t->dtype), " pattern 0x", std::hex,
                  static_cast<int>(t->data<uint8_t>()[i]), std::dec, " (", float_at(*t, i),
                  ") at flat index ", i, "; float8 zero points must be +0 (SEMANTICS.md §8.2)");
        }
      }
    }
  }
  // The multiplier is monotonic in a_scale and b_scale, so the largest pair bounds all of them.
  float max_as = 0, max_bs = 0;
  for (int64_t i = 0; i < a_scale.numel(); ++i) max_as = std::fmax(max_as, float_at(a_scale, i));
  for (int64_t i = 0; i < b_scale.numel(); ++i) max_bs = std::fmax(max_bs, float_at(b_scale, i));
  const float ys = static_cast<float>(float_at(y_scale, 0));
  if (!std::isfinite(qlinear_multiplier(a_scale.dtype, max_as, max_bs, ys))) {
    invalid(kOp, "a_scale * b_scale / y_scale overflows ", dtype_name(a_scale.dtype), " (a_scale ",
            max_as, ", b_scale ", max_bs, ", y_scale ", ys,
            "); the requantization multiplier must be finite");
  }
  require_output_fits(kOp, "y", plan.out_dtype, plan.shape.out);
  return plan;
}

Tensor qlinear_matmul(const QLinearMatMulArgs& args) {
  const QLinearMatMulPlan plan = validate_qlinear_matmul(args);
  const MatMulShape& s = plan.shape;
  const Tensor &a = *args.a, &b = *args.b;
  Tensor y(plan.out_dtype, s.out);
  if (y.numel() == 0) return y;

  const Shape a_full = s.a_full(), b_full = s.b_full(), out_full = s.out_full();
  const std::size_t nb = s.batch.size();
  // Strides of every input viewed in the output's index space [batch..., M or K, K or N].
  const auto sa = broadcast_strides(s.a_promoted, a_full);
  const auto sb = broadcast_strides(s.b_promoted, b_full);
  const auto sas = broadcast_strides(args.a_scale->shape, a_full);
  const auto saz = broadcast_strides(args.a_zero_point->shape, a_full);
  const auto sbs = broadcast_strides(args.b_scale->shape, b_full);
  const auto sbz = broadcast_strides(args.b_zero_point->shape, b_full);
  const DType ts = args.a_scale->dtype;
  const float ys = static_cast<float>(float_at(*args.y_scale, 0));
  const int32_t qmin = plan.out_dtype == DType::kInt8 ? -128 : 0;
  const int32_t qmax = plan.out_dtype == DType::kInt8 ? 127 : 255;
  const int32_t yzp = plan.float8 ? 0 : static_cast<int32_t>(int_at(*args.y_zero_point, 0));

  IndexWalker walk(out_full);
  int64_t out_i = 0;
  std::vector<int64_t> ia(nb + 2), ib(nb + 2);
  do {
    const auto& idx = walk.index();
    const int64_t i = idx[nb], j = idx[nb + 1];
    for (std::size_t d = 0; d < nb; ++d) ia[d] = ib[d] = idx[d];
    ia[nb] = i;
    ia[nb + 1] = 0;
    ib[nb] = 0;
    ib[nb + 1] = j;
    const int64_t a0 = dot_index(ia, sa), b0 = dot_index(ib, sb);
    const int64_t ka = sa[nb + 1], kb = sb[nb];
    const float as = static_cast<float>(float_at(*args.a_scale, dot_index(ia, sas)));
    const float bs = static_cast<float>(float_at(*args.b_scale, dot_index(ib, sbs)));
    const float m = qlinear_multiplier(ts, as, bs, ys);

    if (plan.float8) {
      // §8.2: exact products, sequential float64 sum (k ascending, from +0), then
      // y = encode_saturate(fl32(fl32(acc) * M)); a NaN result is the canonical NaN (its sign is
      // not defined by IEEE arithmetic, so mmtune fixes it).
      double acc = 0.0;
      for (int64_t k = 0; k < s.k; ++k) {
        acc += float_at(a, a0 + k * ka) * float_at(b, b0 + k * kb);
      }
      const float f = static_cast<float>(acc) * m;
      y.data<uint8_t>()[out_i] = std::isnan(f)
                                     ? float8_canonical_nan(plan.out_dtype)
                                     : float_to_float8(plan.out_dtype, f, /*saturate=*/true);
    } else {
      // §8.1: int32 accumulation of exact products, wrapping mod 2^32.
      const int64_t za = int_at(*args.a_zero_point, dot_index(ia, saz));
      const int64_t zb = int_at(*args.b_zero_point, dot_index(ib, sbz));
      uint32_t acc = 0;
      for (int64_t k = 0; k < s.k; ++k) {
        const int64_t prod = (int_at(a, a0 + k * ka) - za) * (int_at(b, b0 + k * kb) - zb);
        acc += static_cast<uint32_t>(prod);
      }
      const int32_t acc32 = wrap32(static_cast<int64_t>(acc));
      const int32_t q = args.requant == RequantMode::kFloat32
                            ? requantize_float32(acc32, m, yzp, qmin, qmax)
                            : requantize_float64(acc32, m, yzp, qmin, qmax);
      if (plan.out_dtype == DType::kInt8) {
        y.data<int8_t>()[out_i] = static_cast<int8_t>(q);
      } else {
        y.data<uint8_t>()[out_i] = static_cast<uint8_t>(q);
      }
    }
    ++out_i;
  } while (walk.next());
  return y;
}

}  // namespace mmtune
