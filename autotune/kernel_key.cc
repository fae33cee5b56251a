// Kernel identities.
#include "autotune/kernel_key.h"

#include <sstream>

namespace mmtune {

std::string KernelKey::to_string() const {
  std::ostringstream os;
  os << generator;
  for (const auto& [k, v] : params) os << " " << k << "=" << v;
  return os.str();
}

std::string gp_type(DType t) { return is_float8(t) ? "uint8" : dtype_name(t); }

void add_schedule_params(KernelKey& key, const HalideVariant& v) {
  for (const auto& [k, val] : v.schedule.generator_params()) key.params[k] = val;
}

int gemm_acc_bits(DType t) {
  if (t == DType::kFloat16 || t == DType::kBFloat16) return 32;
  return static_cast<int>(dtype_size(t) * 8);
}

KernelKey gemm_kernel_key(const GemmArgs& args, const HalideVariant& v) {
  KernelKey key{"mmtune_gemm", {}};
  const std::string t = gp_type(args.a->dtype);
  key.params = {{"A.type", t},
                {"B.type", t},
                {"C.type", t},
                {"Y.type", t},
                {"trans_a", args.trans_a ? "true" : "false"},
                {"trans_b", args.trans_b ? "true" : "false"},
                {"has_c", args.c ? "true" : "false"},
                {"contract", to_string(args.contract)}};
  add_schedule_params(key, v);
  return key;
}

KernelKey qlinear_matmul_kernel_key(const QLinearMatMulArgs& args, const HalideVariant& v) {
  KernelKey key{"mmtune_qlinear_matmul", {}};
  key.params = {{"a.type", gp_type(args.a->dtype)},
                {"b.type", gp_type(args.b->dtype)},
                {"y.type", gp_type(args.y_zero_point->dtype)},
                {"scale_type", dtype_name(args.a_scale->dtype)},
                {"requant", to_string(args.requant)}};
  if (is_float8(args.a->dtype)) {
    // float8 has its own rule (no requant mode): the mode does not name a different kernel.
    key.params["requant"] = "float32";
    key.params["a_format"] = dtype_name(args.a->dtype);
    key.params["b_format"] = dtype_name(args.b->dtype);
    key.params["y_format"] = dtype_name(args.y_zero_point->dtype);
  }
  add_schedule_params(key, v);
  return key;
}

KernelKey qgemm_kernel_key(const QGemmArgs& args, const HalideVariant& v) {
  KernelKey key{"mmtune_qgemm", {}};
  key.params = {{"A.type", gp_type(args.a->dtype)},
                {"B.type", gp_type(args.b->dtype)},
                {"Y.type", args.y_zero_point ? gp_type(args.y_zero_point->dtype) : "float32"},
                {"has_y_scale", args.y_scale ? "true" : "false"}};
  add_schedule_params(key, v);
  return key;
}

}  // namespace mmtune
