// arm_matmul: its knob table and defaults; the rules are cpu_matmul's.
#include "schedules/arm/matmul_params.h"

namespace mmtune::schedules {
namespace {

ArmMatmulParams from_cpu(const CpuMatmulParams& c) {
  ArmMatmulParams a;
  static_cast<CpuMatmulParams&>(a) = c;
  return a;
}

}  // namespace

const KnobTable<ArmMatmulParams>& ArmMatmulParams::knobs() {
#define MMTUNE_ARM_KNOB(...) MMTUNE_KNOB_ENTRY_FOR(ArmMatmulParams, __VA_ARGS__)
  static const KnobTable<ArmMatmulParams> table({MMTUNE_ARM_MATMUL_KNOBS(MMTUNE_ARM_KNOB)});
#undef MMTUNE_ARM_KNOB
  return table;
}

std::optional<std::string> ArmMatmulParams::validate(const TargetInfo& t, Accumulator acc) const {
  if (auto why = knobs().check(*this, acc.exact)) return why;
  return CpuMatmulParams::validate(t, acc);
}

ArmMatmulParams ArmMatmulParams::defaults(const TargetInfo& t, Accumulator acc) {
  ArmMatmulParams p = knobs().defaults();
  p.k_group = natural_k_group(t, acc);
  p.fit_draw(t, acc);
  return fit_default_tile(p, t, acc);
}

MatmulLayout ArmMatmulParams::layout(const TargetInfo& t, Accumulator acc) const {
  MatmulLayout l = CpuMatmulParams::layout(t, acc);
  // sdot / udot take same-sign operands only: mixed signs are made so (exactly) where they apply.
  l.flip_a_sign =
      acc.exact && acc.operand_bits == 8 && acc.mixed_sign && l.k_group == 4 && t.isa == "neondot";
  return l;
}

std::vector<ArmMatmulParams> ArmMatmulParams::gemv_forms(const TargetInfo& t, Accumulator acc) {
  std::vector<ArmMatmulParams> forms;
  for (const CpuMatmulParams& c : CpuMatmulParams::gemv_forms(t, acc)) {
    const ArmMatmulParams a = from_cpu(c);
    if (!a.validate(t, acc)) forms.push_back(a);
  }
  return forms;
}

}  // namespace mmtune::schedules
