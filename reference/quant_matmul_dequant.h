// Huawei Ascend aclnnQuantMatmulDequant, bit-exact reference of the 310P kernel's arithmetic
// (SEMANTICS.md §5, §8.6).
#pragma once

#include <optional>
#include <string_view>

#include "enum_names.h"
#include "tensor.h"

namespace mmtune {

enum class XQuantMode { kPerToken, kPerTensor };
const EnumNames<XQuantMode>& x_quant_mode_names();  // "pertoken", "pertensor"
const char* to_string(XQuantMode m);
std::optional<XQuantMode> x_quant_mode_from_string(std::string_view s);

struct QuantMatmulDequantArgs {
  const Tensor* x = nullptr;             // float16 (m, k)
  const Tensor* weight = nullptr;        // int8 (n, k) if transpose_weight else (k, n)
  const Tensor* weight_scale = nullptr;  // float32 (n,) or int64 (n,) holding float32 bits (fused)
  const Tensor* bias = nullptr;          // optional int32 (n,), added to the int32 sum (wrap32)
  const Tensor* x_scale =
      nullptr;  // optional: pertoken float32 (m,); pertensor float32/float16 () or (1,)
  const Tensor* x_offset = nullptr;      // must be absent (CANN rejects it)
  const Tensor* smooth_scale = nullptr;  // optional float16 (k,)
  XQuantMode x_quant_mode = XQuantMode::kPerToken;
  bool transpose_weight = true;
};

struct QuantMatmulDequantPlan {
  int64_t m = 0, k = 0, n = 0;
  bool dynamic = false;      // x_scale absent: per-row scale from the row max
  bool fused_scale = false;  // int64 weight_scale
};

QuantMatmulDequantPlan validate_quant_matmul_dequant(const QuantMatmulDequantArgs& args);
Tensor quant_matmul_dequant(const QuantMatmulDequantArgs& args);

}  // namespace mmtune
