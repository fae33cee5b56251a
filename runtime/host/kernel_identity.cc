// Kernel identities of the calls.
#include "runtime/host/kernel_identity.h"

#include <sstream>

namespace mmtune {
namespace {

std::string flag(bool b) { return b ? "true" : "false"; }

}  // namespace

std::string KernelIdentity::to_string() const {
  std::ostringstream os;
  os << generator;
  for (const auto& [k, v] : params) os << " " << k << "=" << v;
  return os.str();
}

std::string gp_type(DType t) { return is_float8(t) ? "uint8" : dtype_name(t); }

KernelIdentity gemm_identity(const GemmArgs& args) {
  const DType t = args.a->dtype;
  const std::string g = gp_type(t);
  return {"Gemm",
          "mmtune_gemm",
          {{"A.type", g},
           {"B.type", g},
           {"C.type", g},
           {"Y.type", g},
           {"trans_a", flag(args.trans_a)},
           {"trans_b", flag(args.trans_b)},
           {"has_c", flag(args.c != nullptr)},
           {"contract", to_string(effective_contract(t, args.contract))}}};
}

KernelIdentity qlinear_matmul_identity(const QLinearMatMulArgs& args) {
  KernelIdentity id{"QLinearMatMul",
                    "mmtune_qlinear_matmul",
                    {{"a.type", gp_type(args.a->dtype)},
                     {"b.type", gp_type(args.b->dtype)},
                     {"y.type", gp_type(args.y_zero_point->dtype)},
                     {"scale_type", dtype_name(args.a_scale->dtype)},
                     {"requant", to_string(args.requant)}}};
  if (is_float8(args.a->dtype)) {
    // float8 has its own rule (no requant mode): the mode does not name a different kernel.
    id.params["requant"] = to_string(RequantMode::kFloat32);
    id.params["a_format"] = dtype_name(args.a->dtype);
    id.params["b_format"] = dtype_name(args.b->dtype);
    id.params["y_format"] = dtype_name(args.y_zero_point->dtype);
  }
  return id;
}

KernelIdentity qgemm_identity(const QGemmArgs& args) {
  return {"QGemm",
          "mmtune_qgemm",
          {{"A.type", gp_type(args.a->dtype)},
           {"B.type", gp_type(args.b->dtype)},
           {"Y.type", args.y_zero_point ? gp_type(args.y_zero_point->dtype) : "float32"},
           {"has_y_scale", flag(args.y_scale != nullptr)}}};
}

KernelIdentity quant_matmul_dequant_identity(const QuantMatmulDequantArgs& args) {
  const bool fused = args.weight_scale != nullptr && args.weight_scale->dtype == DType::kInt64;
  const bool dynamic = args.x_scale == nullptr;
  return {"QuantMatmulDequant",
          "mmtune_quant_matmul_dequant",
          {{"transpose_weight", flag(args.transpose_weight)},
           {"fused_scale", flag(fused)},
           {"dynamic", flag(dynamic)},
           {"per_token", flag(args.x_quant_mode == XQuantMode::kPerToken)},
           {"has_smooth", flag(args.smooth_scale != nullptr)},
           {"has_bias", flag(args.bias != nullptr)},
           {"weight_scale.type", fused ? "int64" : "float32"},
           // Dynamic kernels never read x_scale: their dummy is float32.
           {"x_scale.type", dynamic ? "float32" : gp_type(args.x_scale->dtype)}}};
}

}  // namespace mmtune
