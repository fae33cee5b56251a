// The naming grammar of docs/naming.md.
#include "autotune/kernel_naming.h"

#include "autotune/kernel_key.h"
#include "reference/dtype.h"
#include "reference/error.h"
#include "reference/registry.h"
#include "schedules/schedule.h"
#include "schedules/target_info.h"

namespace mmtune {
namespace {

const std::string& param(const std::map<std::string, std::string>& p, const std::string& key,
                         const std::string& op) {
  auto it = p.find(key);
  if (it == p.end()) invalid("kernel name", op, " kernel has no generator parameter ", key);
  return it->second;
}

DType dtype_param(const std::map<std::string, std::string>& p, const std::string& key,
                  const std::string& op) {
  const std::string& name = param(p, key, op);
  const auto t = dtype_from_name(name);
  if (!t) invalid("kernel name", op, " kernel: ", key, "='", name, "' is not a dtype");
  return *t;
}

}  // namespace

std::string dtype_code(const std::string& type) {
  if (type == "bfloat16") return "bf16";
  if (type.rfind("float8", 0) == 0) return "f8" + type.substr(6);
  if (type.rfind("float", 0) == 0) return "f" + type.substr(5);
  if (type.rfind("uint", 0) == 0) return "u" + type.substr(4);
  if (type.rfind("int", 0) == 0) return "s" + type.substr(3);
  invalid("kernel name", "'", type, "' is not a dtype");
}

std::string kernel_name(const std::string& op, const std::map<std::string, std::string>& id,
                        const std::map<std::string, std::string>& schedule,
                        const std::string& target) {
  const std::string alias = find_operator(op).alias;
  std::string what;
  if (op == "Gemm") {
    // One type for A, B, C and Y; the contract only where it can change the bits; the layout only
    // when it is not the canonical one the runtime calls.
    const std::string& t = param(id, "A.type", op);
    what = alias + "_" + dtype_code(t);
    if (contract_applies(dtype_param(id, "A.type", op))) what += "_" + param(id, "contract", op);
    if (param(id, "trans_a", op) == "true") what += "_ta";
    if (param(id, "trans_b", op) == "true") what += "_tb";
    if (param(id, "has_c", op) == "false") what += "_noc";
  } else if (op == "QLinearMatMul") {
    // float8 operands travel as uint8 bit patterns; their formats are separate parameters, and
    // float8 has one rounding rule (no requantization mode).
    const bool float8 = id.count("a_format") > 0;
    auto code = [&](const char* operand) {
      const std::string o(operand);
      return dtype_code(param(id, float8 ? o + "_format" : o + ".type", op));
    };
    what = alias + "_" + code("a") + "_" + code("b") + "_" + code("y");
    if (!float8) what += param(id, "requant", op) == "float64" ? "_f64rq" : "_f32rq";
    const std::string& scale = param(id, "scale_type", op);
    if (scale != "float32") what += "_" + dtype_code(scale) + "scale";
  } else if (op == "QGemm") {
    // A, B, then Y (float32, or A's type when quantized). The runtime always passes a y_scale (1
    // for a float32 output without one: the same bits), so only a kernel without it is marked.
    what = alias + "_" + dtype_code(param(id, "A.type", op)) + "_" +
           dtype_code(param(id, "B.type", op)) + "_" + dtype_code(param(id, "Y.type", op));
    if (param(id, "has_y_scale", op) == "false") what += "_noys";
  } else if (op == "QuantMatmulDequant") {
    // x float16, weight int8, y float16 always; then how x is scaled: dynamic (per token, from the
    // row max), a static per-token or per-tensor float32 x_scale, or fused (an int64 weight scale
    // and a float16 per-tensor x_scale). Smoothing when present; the runtime always passes a bias
    // (zero when absent) and a (K, N) weight (an (N, K) one is copied transposed), so only kernels
    // without them are marked.
    what = alias + "_f16_s8_f16";
    if (param(id, "fused_scale", op) == "true")
      what += "_fused";
    else if (param(id, "dynamic", op) == "true")
      what += "_dynamic";
    else if (param(id, "per_token", op) == "true")
      what += "_pertoken";
    else
      what += "_pertensor";
    if (param(id, "has_smooth", op) == "true") what += "_smooth";
    if (param(id, "has_bias", op) == "false") what += "_nobias";
    if (param(id, "transpose_weight", op) == "true") what += "_wnk";
  } else {
    invalid("kernel name", "no naming rule for ", op, " kernels yet (docs/naming.md)");
  }
  // A kernel that reads B prepacked (runtime/host/packed_b.h) takes other inputs: its own identity.
  auto pre = id.find("prepacked_b");
  if (pre != id.end() && pre->second == "true") what += "_prepacked";
  const schedules::TargetInfo ti = schedules::target_info(target);
  const auto s =
      schedules::Schedule::from_generator_params(schedule, schedules::default_template(ti));
  const schedules::Accumulator acc = accumulator_of(KernelIdentity{op, "", id});
  return what + "__" + ti.family + "_" + ti.isa + "_" + s.tag(ti, acc);
}

}  // namespace mmtune
