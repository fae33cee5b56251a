// What a schedule template needs to know of a target, read from a Halide target string without
// linking Halide: vector width and register count of its SIMD unit.
#pragma once

#include <optional>
#include <string>

namespace mmtune::schedules {

struct TargetInfo {
  std::string target;     // the Halide target string, e.g. "x86-64-linux-avx2-fma"
  std::string family;     // "x86", "arm", "hexagon", "cuda"
  int vector_bits = 128;  // widest SIMD register
  int vector_registers = 16;
  std::string isa;   // short name for kernel names: "avx512", "avx2", "sse41", "neon", "hvx"
  bool fma = false;  // a fused multiply-add for float32/float64 (what contract=fma needs)
};

// Throws InvalidArgument for a string that names no architecture mmtune targets.
TargetInfo target_info(const std::string& halide_target);

// Why `t` cannot run a kernel of the fma float contract (it has no fused multiply-add), or nullopt.
std::optional<std::string> why_no_fma(const TargetInfo& t);

}  // namespace mmtune::schedules
