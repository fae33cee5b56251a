// Kernel keys.
#include "autotune/kernel_key.h"

#include "Halide.h"
#include "reference/dtype.h"
#include "reference/gemm.h"

namespace mmtune {

std::string resolve_target(const std::string& target) {
  if (target == "host") return Halide::get_host_target().to_string();
  if (!Halide::Target::validate_target_string(target)) {
    invalid("target", "'", target,
            "' is not a Halide target string (arch-bits-os[-feature...], e.g. "
            "x86-64-linux-avx2-fma)");
  }
  return target;
}

std::string host_target() { return resolve_target("host"); }

schedules::TargetInfo target_info_of(const HalideVariant& v) {
  return schedules::target_info(resolve_target(v.target));
}

std::map<std::string, std::string> KernelKey::generator_params() const {
  std::map<std::string, std::string> gp = identity.params;
  if (autoschedule) {
    // No knob: the generator builds the template's default layout, and no template schedules it.
    gp["estimate_m"] = std::to_string(autoschedule->m);
    gp["estimate_n"] = std::to_string(autoschedule->n);
    gp["estimate_k"] = std::to_string(autoschedule->k);
    return gp;
  }
  for (const auto& [k, v] : schedule.generator_params()) gp[k] = v;
  return gp;
}

std::string KernelKey::to_string() const {
  std::string s = identity.generator;
  for (const auto& [k, v] : generator_params()) s.append(" ").append(k).append("=").append(v);
  if (autoschedule) {
    s.append(" autoscheduler=").append(autoschedule->name);
    s.append(" parallelism=").append(std::to_string(autoschedule->parallelism));
  }
  return s;
}

schedules::Accumulator accumulator_of(const KernelIdentity& id) {
  auto prepacked_param = id.params.find("prepacked_b");
  const bool prepacked = prepacked_param != id.params.end() && prepacked_param->second == "true";
  if (id.op == "Gemm") {
    const DType t = *dtype_from_name(id.params.at("A.type"));
    const DType acc = gemm_accumulation_type(t);
    // As the generator states it: fused steps (the fma contract) or float16's exact products.
    auto contract = id.params.find("contract");
    const bool fma = contract != id.params.end() && contract_applies(t) &&
                     contract->second == to_string(FloatContract::kFma);
    return {static_cast<int>(dtype_size(acc) * 8),
            is_integer(t),
            static_cast<int>(dtype_size(t) * 8),
            false,
            is_integer(t) && !is_signed_integer(t),
            !is_integer(t) && (fma || t == DType::kFloat16),
            prepacked};
  }
  if (id.op == "QLinearMatMul" && id.params.count("a_format")) {
    // float8: a float64 sum of exact products, in K order
    return {64, false, 8, false, false, true, prepacked};
  }
  // The quantized operators' exact int32 sums of 8-bit products (QuantMatmulDequant: its x_q
  // stored as uint8 x_q + 128, times int8 weights).
  auto type = [&](const char* key) {
    auto it = id.params.find(key);
    return it == id.params.end() ? std::string("int8") : it->second;
  };
  const std::string ta = id.op == "QLinearMatMul" ? type("a.type")
                         : id.op == "QGemm"       ? type("A.type")
                                                  : "uint8";
  const std::string tb = id.op == "QLinearMatMul" ? type("b.type")
                         : id.op == "QGemm"       ? type("B.type")
                                                  : "int8";
  return {32, true, 8, ta != tb, ta == "uint8" && tb == "uint8", false, prepacked};
}

KernelKey kernel_key(const KernelIdentity& id, const HalideVariant& v) {
  const schedules::TargetInfo t = target_info_of(v);
  const schedules::Accumulator acc = accumulator_of(id);
  if (v.autoschedule) {
    const Autoschedule& a = *v.autoschedule;
    if (v.schedule) invalid(id.op, "a variant has a schedule or an autoscheduler, not both");
    if (a.m < 1 || a.n < 1 || a.k < 1 || a.m > (1 << 30) || a.n > (1 << 30) || a.k > (1 << 30)) {
      invalid(id.op, "the autoscheduler's estimates ", a.m, "x", a.n, "x", a.k,
              " are not a shape of positive extents below 2^30");
    }
    if (a.parallelism < 1) invalid(id.op, "the autoscheduler's parallelism must be at least 1");
  }
  const schedules::Schedule s = v.schedule ? *v.schedule : schedules::default_schedule(t, acc);
  if (auto why = s.validate(t, acc)) invalid(id.op, "schedule: ", *why);
  auto contract = id.params.find("contract");
  if (contract != id.params.end() && contract->second == to_string(FloatContract::kFma)) {
    if (auto why = schedules::why_no_fma(t)) invalid(id.op, *why);
  }
  return {id, s, v.autoschedule};
}

}  // namespace mmtune
