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
  // The K group of the target's exact 8-bit dot-product instruction: 4 where one instruction sums
  // four 8-bit products into a 32-bit lane (x86 VNNI vpdpbusd, AArch64 sdot/udot, HVX vrmpy); 2 on
  // x86 without VNNI (pmaddwd: the 8-bit operands widened to 16 bits, pairs of exact products
  // summed into 32 bits; a group of 4 there costs a shuffle and an add per pair sum); 1 where
  // there is none (NEON without dot product, CUDA).
  int dot8_group = 1;
  // x86 AMX (Halide's avx512_sapphirerapids): tile registers of 16 rows x 64 bytes and a tile
  // multiply that sums 8-bit products four at a time into 32-bit lanes (tdpbusd and its kin).
  bool amx = false;
};

// Throws InvalidArgument for a string that names no architecture mmtune targets.
TargetInfo target_info(const std::string& halide_target);

// Why `t` cannot run a kernel of the fma float contract (it has no fused multiply-add), or nullopt.
std::optional<std::string> why_no_fma(const TargetInfo& t);

}  // namespace mmtune::schedules
