// The arm_matmul schedule template's parameters (AArch64 NEON, with the dot-product instructions
// where the target has them): the register-tiled matmul of cpu_matmul (the same knobs, meanings and
// schedule function: schedules/cpu/matmul_schedule.cc), with AArch64's table of defaults and
// searched values and its rules.
//
// AArch64 has 32 128-bit vector registers: tiles of up to 8 rows x 3 vectors of accumulators fit
// beside the B vectors and an A broadcast (ruy's and XNNPACK's 8x12-class float kernels). With
// `arm_dot_prod` (sdot for int8 x int8, udot for uint8 x uint8), 8-bit products are summed in
// groups of 4 along K into int32 lanes: k_group 4 is the default for 8-bit operands there. Halide
// 21 has no feature for the mixed-sign usdot (i8mm): with k_group 4, uint8 x int8 operands are
// made same-sign by flipping A's sign bit (MatmulLayout::flip_a_sign, exact) and summed by sdot /
// udot; k_group 4 is their default too.
#pragma once

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "schedules/cpu/matmul_params.h"

// clang-format off
// The knobs of cpu_matmul (schedules/cpu/matmul_params.h), with AArch64's defaults and searches.
#define MMTUNE_ARM_MATMUL_KNOBS(X)                                                                 \
  X(tile_rows, int, 8, 1, 16, (1, 2, 4, 6, 8, 12), "", kValue, -1, false,                          \
    "rows of the register tile")                                                                   \
  X(tile_vectors, int, 3, 1, 8, (1, 2, 3, 4, 6), "x", kLanes, -1, false,                           \
    "vectors per tile row (tile columns = tile_vectors x lanes)")                                  \
  X(vector_width, int, 0, 0, 64, (0), "", kNone, 0, false,                                         \
    "lanes of the accumulator type (0 = the target's natural width; else a power of two)")         \
  X(k_unroll, int, 4, 1, 16, (1, 2, 4, 8), "k", kValue, -1, false,                                 \
    "K loop unrolled by this factor")                                                              \
  X(n_block, int, 192, 0, 65536, (0, 96, 192, 384, 768), "n", kValue, 0, false,                    \
    "columns per strip (task, packed-B strip), rounded up to a multiple of the tile width; "       \
    "0 = no strips")                                                                               \
  X(pack_b, bool, true, 0, 1, (0, 1), "p", kFlag, 0, false,                                        \
    "B copied into tile-wide panels")                                                              \
  X(parallel, bool, true, 0, 1, (0, 1), "t", kFlag, 0, false,                                      \
    "strips (or tile rows) run as parallel tasks, with B prepacked each strip's row blocks "       \
    "too")                                                                                         \
  X(k_group, int, 1, 1, 4, (1, 4, 4), "g", kValue, 1, true,                                        \
    "K consumed in groups of 1, 2 or 4 (4: sdot/udot with arm_dot_prod); needs pack_b")            \
  X(m_block, int, 0, 0, 4096, (0, 0, 8, 32, 96), "m", kValue, 0, false,                            \
    "rows per cache block, a multiple of tile_rows (a packed B panel reused "                      \
    "across them); 0 = none")                                                                      \
  X(specialize_tails, bool, false, 0, 1, (0, 1), "s", kFlag, 0, false,                             \
    "a branch without tail guards for shapes of whole tiles (and strips and blocks)")              \
  X(k_block, int, 0, 0, 65536, (0, 0, 0, 4, 16, 64, 256), "b", kValue, 0, false,                   \
    "K per cache block, its accumulators in memory, K order kept (needs n_block, "                 \
    "m_block, k_group 1; small blocks of few rows stream B once, a GEMV); 0 = none")
// clang-format on

namespace mmtune::schedules {

// The same fields and rules as cpu_matmul (inherited); its own table, defaults and family.
struct ArmMatmulParams : CpuMatmulParams {
  static constexpr const char* kTemplate = "arm_matmul";
  static const KnobTable<ArmMatmulParams>& knobs();

  static constexpr const char* kFamilies = "arm (AArch64)";
  static bool fits(const TargetInfo& t) {
    return t.family == "arm" && t.target.rfind("arm-64", 0) == 0;
  }

  // cpu_matmul's rules, checked against this template's table.
  std::optional<std::string> validate(const TargetInfo& t, Accumulator acc) const;

  // The table's defaults fitted to the target (strips rounded to whole tiles; a smaller tile where
  // 64-bit lanes would spill), k_group 4 for 8-bit operands on a dot-product target.
  static ArmMatmulParams defaults(const TargetInfo& t, Accumulator acc);
  // cpu_matmul's layout; mixed-sign 8-bit operands in K groups of 4 with A's sign flipped.
  MatmulLayout layout(const TargetInfo& t, Accumulator acc) const;
  static std::vector<ArmMatmulParams> gemv_forms(const TargetInfo& t, Accumulator acc);
};

}  // namespace mmtune::schedules
