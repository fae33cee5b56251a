// Target facts from a Halide target string.
#include "schedules/target_info.h"

#include <sstream>
#include <vector>

#include "reference/error.h"

namespace mmtune::schedules {

TargetInfo target_info(const std::string& halide_target) {
  std::vector<std::string> parts;
  std::stringstream ss(halide_target);
  for (std::string p; std::getline(ss, p, '-');) parts.push_back(p);
  auto has = [&](const std::string& f) {
    for (const std::string& p : parts) {
      if (p == f) return true;
    }
    return false;
  };
  auto has_prefix = [&](const std::string& f) {
    for (const std::string& p : parts) {
      if (p.rfind(f, 0) == 0) return true;
    }
    return false;
  };
  TargetInfo t;
  t.target = halide_target;
  if (parts.empty()) invalid("target", "the target string is empty");
  if (has("cuda") || has_prefix("cuda_capability")) {
    t.family = "cuda";
    t.isa = "cuda";
    t.fma = true;  // PTX fma.rn
    t.vector_bits = 32;
    t.vector_registers = 255;
  } else if (parts[0] == "x86") {
    t.family = "x86";
    // FMA3: the "fma" feature; every AVX-512 target has it (LLVM's avx512f implies fma).
    t.fma = has("fma") || has_prefix("avx512");
    // VNNI: avx512_zen4 / avx512_zen5 / avx512_sapphirerapids (AVX512-VNNI) and avxvnni.
    const bool vnni =
        has("avx512_zen4") || has("avx512_zen5") || has("avx512_sapphirerapids") || has("avxvnni");
    t.dot8_group = vnni ? 4 : 2;
    t.amx = has("avx512_sapphirerapids");
    if (has_prefix("avx512")) {
      // Sapphire Rapids and later (AMX) are a level of their own: their kernels' names must not
      // meet the avx512_zen4 level's, whose library is linked beside theirs.
      t.isa = t.amx ? "avx512amx" : "avx512";
      t.vector_bits = 512;
      t.vector_registers = 32;
    } else if (has("avx2")) {
      t.isa = "avx2";
      t.vector_bits = 256;
      t.vector_registers = 16;
    } else if (has("avx")) {
      t.isa = "avx";
      t.vector_bits = 256;
      t.vector_registers = 16;
    } else {
      t.isa = has("sse41") ? "sse41" : "sse2";
      t.vector_bits = 128;
      t.vector_registers = 16;
    }
  } else if (parts[0] == "arm") {
    t.family = "arm";
    t.isa = has("arm_dot_prod") ? "neondot" : "neon";
    t.dot8_group = has("arm_dot_prod") ? 4 : 1;
    t.fma = parts.size() > 1 && parts[1] == "64";  // AArch64: fused multiply-add is base ISA
    t.vector_bits = 128;
    t.vector_registers = 32;
  } else if (parts[0] == "hexagon") {
    t.family = "hexagon";
    t.isa = "hvx";
    t.dot8_group = 4;
    t.vector_bits = 1024;
    t.vector_registers = 32;
  } else {
    invalid("target", "'", halide_target,
            "' names no architecture mmtune supports (x86, arm, hexagon, or a cuda feature)");
  }
  return t;
}

std::optional<std::string> why_no_fma(const TargetInfo& t) {
  if (t.fma) return std::nullopt;
  std::string why = "contract=fma needs a fused multiply-add, which target " + t.target + " lacks";
  if (t.family == "x86")
    why += " (an x86 target needs the fma feature, e.g. x86-64-linux-avx2-fma)";
  return why;
}

}  // namespace mmtune::schedules
