// The hvx_matmul schedule template's parameters (Hexagon HVX, 128-byte vectors): the register-tiled
// matmul of cpu_matmul (its knobs, meanings and schedule function: schedules/cpu/) with HVX's table
// and one knob of its own.
//
// An HVX vector holds 32 int32 lanes, so a tile row of 2 vectors is 64 output columns. 8-bit
// products are summed in groups of 4 along K into int32 lanes by vrmpy (k_group 4, the default).
// HVX has no IEEE float vector arithmetic below v68 (and v68's qfloat does not round like
// IEEE-754 float32), so the template schedules exact integer sums only, and every float step of an
// epilogue (requantization, dequantization, dynamic quantization of a row) runs on the scalar core
// unless `vector_epilogue` is set (on v68 and later only; the gate says whether it is exact).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedules/cpu/matmul_params.h"

// clang-format off
// cpu_matmul's knobs with HVX's defaults and searches, then vector_epilogue.
#define MMTUNE_HVX_MATMUL_KNOBS(X)                                                                 \
  X(tile_rows, int, 4, 1, 16, (1, 2, 4, 6, 8), "", kValue, -1, false,                              \
    "rows of the register tile")                                                                   \
  X(tile_vectors, int, 2, 1, 8, (1, 2, 3, 4), "x", kLanes, -1, false,                              \
    "vectors per tile row (tile columns = tile_vectors x lanes)")                                  \
  X(vector_width, int, 0, 0, 64, (0), "", kNone, 0, false,                                         \
    "lanes of the accumulator type (0 = the target's natural width; else a power of two)")         \
  X(k_unroll, int, 1, 1, 16, (1, 2, 4), "k", kValue, -1, false,                                    \
    "K loop unrolled by this factor")                                                              \
  X(n_block, int, 256, 0, 65536, (0, 128, 256, 512), "n", kValue, 0, false,                        \
    "columns per strip (task, packed-B strip), rounded up to a multiple of the tile width; "       \
    "0 = no strips")                                                                               \
  X(pack_b, bool, true, 0, 1, (1), "p", kFlag, 0, false,                                           \
    "B copied into tile-wide panels")                                                              \
  X(parallel, bool, false, 0, 1, (0), "t", kFlag, 0, false,                                        \
    "strips (or tile rows) run as parallel tasks, with B prepacked each strip's row blocks "       \
    "too (noos targets run them in turn)")                                                         \
  X(k_group, int, 4, 1, 4, (1, 4, 4), "g", kValue, 1, true,                                        \
    "K consumed in groups of 1, 2 or 4 (4: vrmpy for 8-bit operands); needs pack_b")               \
  X(m_block, int, 0, 0, 4096, (0, 0, 8, 32), "m", kValue, 0, false,                                \
    "rows per cache block, a multiple of tile_rows (a packed B panel reused "                      \
    "across them); 0 = none")                                                                      \
  X(specialize_tails, bool, false, 0, 1, (0, 1), "s", kFlag, 0, false,                             \
    "a branch without tail guards for shapes of whole tiles (and strips and blocks)")              \
  X(k_block, int, 0, 0, 65536, (0), "b", kValue, 0, false,                                         \
    "K per cache block, its accumulators in memory, K order kept (needs n_block, "                 \
    "m_block, k_group 1); 0 = none")                                                               \
  X(vector_epilogue, bool, false, 0, 1, (0), "v", kFlag, 0, false,                                 \
    "the epilogue and the per-row producers vectorized too (HVX float vectors: v68 and later)")
// clang-format on

namespace mmtune::schedules {

struct HvxMatmulParams : CpuMatmulParams {
  bool vector_epilogue = false;

  static constexpr const char* kTemplate = "hvx_matmul";
  static const KnobTable<HvxMatmulParams>& knobs();

  static constexpr const char* kFamilies = "hexagon (HVX 128-byte)";
  static bool fits(const TargetInfo& t) { return t.family == "hexagon"; }

  // cpu_matmul's rules, this table's ranges, and HVX's: exact sums only, 128-byte vectors, a
  // vector epilogue only from v68 on.
  std::optional<std::string> validate(const TargetInfo& t, Accumulator acc) const;

  static HvxMatmulParams defaults(const TargetInfo& t, Accumulator acc);
  static std::vector<HvxMatmulParams> gemv_forms(const TargetInfo& t, Accumulator acc);
};

// Why HVX target `t` has no IEEE float vector arithmetic (below v68), or nullopt.
std::optional<std::string> hvx_without_float_vectors(const TargetInfo& t);

}  // namespace mmtune::schedules
