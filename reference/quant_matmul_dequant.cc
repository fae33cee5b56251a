// Ascend QuantMatmulDequant reference: the kernel's steps in order (SEMANTICS.md §5.2), each
// rounding named. Steps: optional smooth; per-row or per-tensor x scale; quantize x by
// reciprocal-multiply, RNE and int8 saturation; exact int32 matmul (+ bias); dequantize in float32;
// float16 saturating.
#include "reference/quant_matmul_dequant.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "reference/codecs.h"
#include "reference/rounding.h"
#include "reference/validate.h"

namespace mmtune {
namespace {

constexpr const char* kOp = "QuantMatmulDequant";

// The float32 stored in the low 32 bits of a fused int64 weight scale (CANN GatherMask pattern 1).
float fused_scale_value(int64_t v) {
  const uint32_t bits = static_cast<uint32_t>(static_cast<uint64_t>(v));
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

const EnumNames<XQuantMode>& x_quant_mode_names() {
  static const EnumNames<XQuantMode> names = {{"pertoken", XQuantMode::kPerToken},
                                              {"pertensor", XQuantMode::kPerTensor}};
  return names;
}

const char* to_string(XQuantMode m) { return enum_name(x_quant_mode_names(), m); }

std::optional<XQuantMode> x_quant_mode_from_string(std::string_view s) {
  return enum_from_name(x_quant_mode_names(), s);
}

QuantMatmulDequantPlan validate_quant_matmul_dequant(const QuantMatmulDequantArgs& args) {
  const Tensor& x = require_present(kOp, "x", args.x);
  const Tensor& w = require_present(kOp, "weight", args.weight);
  const Tensor& ws = require_present(kOp, "weight_scale", args.weight_scale);
  require_dtype(kOp, "x", x, {DType::kFloat16});
  require_dtype(kOp, "weight", w, {DType::kInt8});
  require_dtype(kOp, "weight_scale", ws, {DType::kFloat32, DType::kInt64});
  require_rank(kOp, "x", x, 2);
  require_rank(kOp, "weight", w, 2);
  QuantMatmulDequantPlan p;
  p.m = x.shape[0];
  p.k = x.shape[1];
  const int64_t wk = args.transpose_weight ? w.shape[1] : w.shape[0];
  p.n = args.transpose_weight ? w.shape[0] : w.shape[1];
  if (wk != p.k) {
    invalid(
        kOp, "x has shape ", shape_str(x.shape), " and weight has shape ", shape_str(w.shape),
        args.transpose_weight ? " (transpose_weight=1: (n, k))" : " (transpose_weight=0: (k, n))",
        ": k differs (", p.k, " vs ", wk, ")");
  }
  require_rank(kOp, "weight_scale", ws, 1);
  if (ws.shape[0] != p.n) {
    invalid(kOp, "weight_scale has shape ", shape_str(ws.shape), "; it must be (n,) = (", p.n,
            ",)");
  }
  if (args.x_offset != nullptr) {
    invalid(kOp,
            "x_offset is given; only symmetric quantization of x is supported (x_offset must be "
            "absent)");
  }
  if (args.bias != nullptr) {
    const Tensor& bias = require_present(kOp, "bias", args.bias);
    require_dtype(kOp, "bias", bias, {DType::kInt32});
    if (bias.shape != Shape{p.n}) {
      invalid(kOp, "bias has shape ", shape_str(bias.shape), "; it must be (n,) = (", p.n, ",)");
    }
  }
  if (args.smooth_scale != nullptr) {
    const Tensor& sm = require_present(kOp, "smooth_scale", args.smooth_scale);
    require_dtype(kOp, "smooth_scale", sm, {DType::kFloat16});
    if (sm.shape != Shape{p.k}) {
      invalid(kOp, "smooth_scale has shape ", shape_str(sm.shape), "; it must be (k,) = (", p.k,
              ",)");
    }
  }
  p.fused_scale = ws.dtype == DType::kInt64;
  p.dynamic = args.x_scale == nullptr;
  if (p.dynamic) {
    if (args.x_quant_mode != XQuantMode::kPerToken) {
      invalid(
          kOp,
          "x_quant_mode is pertensor but x_scale is absent; dynamic quantization (no x_scale) is "
          "per token only");
    }
    if (p.fused_scale) {
      invalid(
          kOp,
          "weight_scale is int64 (fused scale) but x_scale is absent; a fused weight scale needs "
          "a float16 per-tensor x_scale");
    }
  } else {
    const Tensor& xs = require_present(kOp, "x_scale", args.x_scale);
    if (args.x_quant_mode == XQuantMode::kPerToken) {
      require_dtype(kOp, "x_scale", xs, {DType::kFloat32});
      if (xs.shape != Shape{p.m}) {
        invalid(kOp, "x_scale has shape ", shape_str(xs.shape),
                "; with x_quant_mode=pertoken it must be (m,) = (", p.m, ",)");
      }
      if (p.fused_scale) {
        invalid(kOp,
                "weight_scale is int64 (fused scale) but x_quant_mode is pertoken; a fused weight "
                "scale needs x_quant_mode=pertensor");
      }
    } else {
      require_single_value(kOp, "x_scale", xs);
      if (p.fused_scale) {
        require_dtype(kOp + std::string(" (int64 weight_scale)"), "x_scale", xs, {DType::kFloat16});
      } else {
        require_dtype(kOp + std::string(" (float32 weight_scale)"), "x_scale", xs,
                      {DType::kFloat32});
      }
    }
    require_positive_finite(kOp, "x_scale", xs);
  }
  if (p.fused_scale) {
    for (int64_t j = 0; j < p.n; ++j) {
      const float f = fused_scale_value(ws.data<int64_t>()[j]);
      if (!std::isfinite(f) || !(f > 0)) {
        invalid(kOp, "weight_scale[", j, "] = ", ws.data<int64_t>()[j], " holds the float32 ", f,
                " in its low 32 bits; scales must be finite and > 0");
      }
    }
  } else {
    require_positive_finite(kOp, "weight_scale", ws);
  }
  require_output_fits(kOp, "y", DType::kFloat16, {p.m, p.n});
  return p;
}

Tensor quant_matmul_dequant(const QuantMatmulDequantArgs& args) {
  const QuantMatmulDequantPlan p = validate_quant_matmul_dequant(args);
  Tensor out(DType::kFloat16, {p.m, p.n});
  const uint16_t* x = args.x->data<uint16_t>();
  const int8_t* w = args.weight->data<int8_t>();
  const uint16_t* smooth = args.smooth_scale ? args.smooth_scale->data<uint16_t>() : nullptr;
  const int32_t* bias = args.bias ? args.bias->data<int32_t>() : nullptr;
  const bool per_token = args.x_quant_mode == XQuantMode::kPerToken;

  std::vector<int8_t> xq(static_cast<std::size_t>(p.k));
  for (int64_t i = 0; i < p.m; ++i) {
    const uint16_t* xrow = x + i * p.k;
    // Steps 1-3 / static: the row's (or tensor's) x scale s and its reciprocal inv (step 5).
    float s, inv;
    if (p.dynamic) {
      // 1: t = fl16(x * smooth) in half precision; 2: row max of |t| (exact); 3: s = fl32(max /
      // 127).
      float rowmax = 0.0f;
      for (int64_t k = 0; k < p.k; ++k) {
        float t = float16_to_float(xrow[k]);
        if (smooth) t = float16_to_float(float_to_float16(t * float16_to_float(smooth[k])));
        rowmax = std::fmax(rowmax, std::fabs(t));
      }
      s = rowmax / 127.0f;
      inv = 1.0f / s;  // +Inf for an all-zero row; see step 7
    } else if (per_token) {
      s = args.x_scale->data<float>()[i];
      inv = 1.0f / s;
    } else {
      s = static_cast<float>(float_at(*args.x_scale, 0));
      // The kernel guards s == 0 for a float32 per-tensor scale; validation already rejects 0.
      inv = 1.0f / s;
    }
    // Steps 4-8: xf = f32(x) (* f32(smooth) in float32); v = fl32(xf * inv); q = RNE to int32
    // (saturating; NaN -> 0: an all-zero dynamic row gives 0 * Inf); x_q = sat_int8(q).
    for (int64_t k = 0; k < p.k; ++k) {
      float xf = float16_to_float(xrow[k]);
      if (smooth) xf = xf * float16_to_float(smooth[k]);
      const float v = xf * inv;
      const int64_t q32 = saturate(round_half_even(v), INT32_MIN, INT32_MAX, /*nan_value=*/0);
      xq[static_cast<std::size_t>(k)] =
          static_cast<int8_t>(saturate(static_cast<double>(q32), -128, 127));
    }
    for (int64_t j = 0; j < p.n; ++j) {
      // Step 9: exact int32 sum (+ int32 bias, wrapping, before dequantization).
      uint32_t acc = bias ? static_cast<uint32_t>(bias[j]) : 0u;
      for (int64_t k = 0; k < p.k; ++k) {
        const int8_t wv = args.transpose_weight ? w[j * p.k + k] : w[k * p.n + j];
        acc += static_cast<uint32_t>(static_cast<int32_t>(xq[static_cast<std::size_t>(k)]) * wv);
      }
      // Step 10: f = fl32(acc); f = fl32(f * wscale_j); float32 weight scale: f = fl32(f * s).
      float f = static_cast<float>(wrap32(static_cast<int64_t>(acc)));
      if (p.fused_scale) {
        f = f * fused_scale_value(args.weight_scale->data<int64_t>()[j]);
      } else {
        f = f * args.weight_scale->data<float>()[j];
        f = f * s;
      }
      // Step 11: RNE to float16, overflow saturating to +-65504.
      out.data<uint16_t>()[i * p.n + j] = float_to_float16_saturate(f);
    }
  }
  return out;
}

}  // namespace mmtune
