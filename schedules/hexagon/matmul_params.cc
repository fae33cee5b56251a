// hvx_matmul: its knob table, defaults and HVX's rules.
#include "schedules/hexagon/matmul_params.h"

#include <sstream>

namespace mmtune::schedules {

const KnobTable<HvxMatmulParams>& HvxMatmulParams::knobs() {
#define MMTUNE_HVX_KNOB(...) MMTUNE_KNOB_ENTRY_FOR(HvxMatmulParams, __VA_ARGS__)
  static const KnobTable<HvxMatmulParams> table({MMTUNE_HVX_MATMUL_KNOBS(MMTUNE_HVX_KNOB)});
#undef MMTUNE_HVX_KNOB
  return table;
}

std::optional<std::string> hvx_without_float_vectors(const TargetInfo& t) {
  for (const char* v : {"hvx_v68", "hvx_v69", "hvx_v73"}) {
    if (t.target.find(v) != std::string::npos) return std::nullopt;
  }
  return "HVX has float vector arithmetic from v68 on, and " + t.target + " names none of " +
         "hvx_v68, hvx_v69, hvx_v73";
}

std::optional<std::string> HvxMatmulParams::validate(const TargetInfo& t, Accumulator acc) const {
  if (!acc.exact) {
    return "hvx_matmul schedules exact integer sums only: a float sum needs IEEE float vector "
           "arithmetic, which HVX lacks below v68, and v68's qfloat vectors do not round every "
           "step like IEEE-754 (mmtune keeps float sums bit-exact)";
  }
  if (acc.bits > 32) {
    return "hvx_matmul sums in lanes of at most 32 bits: HVX vectors have no " +
           std::to_string(acc.bits) + "-bit integer lanes";
  }
  if (t.target.find("hvx_128") == std::string::npos) {
    return "hvx_matmul schedules 128-byte HVX vectors: target " + t.target +
           " needs the hvx_128 feature (e.g. hexagon-32-noos-hvx-hvx_128-hvx_v66)";
  }
  if (auto why = knobs().check(*this, acc.exact)) return why;
  if (acc.operand_bits == 8 && acc.unsigned_operands && k_group != 4) {
    // Found by `mmtune verify` under qemu-hexagon 7.2: Halide 21's code for this form (products
    // by vmpy(Vu.uh, Vv.uh) into word pairs) gives wrong sums, while that instruction alone
    // matches the Hexagon manual under the same qemu (docs/targets.md). Not checked on a device.
    return "k_group=" + std::to_string(k_group) +
           ": hvx_matmul sums uint8 x uint8 products in groups of 4 (vrmpy) only; the sequential "
           "form gives wrong sums on HVX (docs/targets.md)";
  }
  if (vector_epilogue) {
    if (auto why = hvx_without_float_vectors(t)) {
      return "vector_epilogue=true needs float vectors for the epilogue's float steps: " + *why;
    }
  }
  return CpuMatmulParams::validate(t, acc);
}

HvxMatmulParams HvxMatmulParams::defaults(const TargetInfo& t, Accumulator acc) {
  HvxMatmulParams p = knobs().defaults();
  // vrmpy sums groups of four 8-bit products; wider operands are summed one product at a time.
  if (acc.operand_bits != 8) p.k_group = 1;
  p.fit_draw(t, acc);
  if (acc.exact &&
      acc.bits <= 32) {  // the sums hvx_matmul schedules (validate says why not others)
    if (p.validate(t, acc)) {
      p.tile_rows = 2;
      p.tile_vectors = 1;
      p.fit_draw(t, acc);
    }
    MMTUNE_CHECK(!p.validate(t, acc), "no default hvx_matmul parameters fit " << t.target);
  }
  return p;
}

std::vector<HvxMatmulParams> HvxMatmulParams::gemv_forms(const TargetInfo&, Accumulator) {
  return {};  // no k_block GEMV form searched on HVX yet
}

}  // namespace mmtune::schedules
