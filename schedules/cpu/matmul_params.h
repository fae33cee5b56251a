// The cpu_matmul schedule template's parameters (x86-64 CPUs; arm_matmul shares its rules): its
// knob table, declared once below, and what the template derives from it (validation against a
// target, the data layout it asks of the algorithm, its defaults and search space).
//
// A register-tiled matmul: each task owns a strip of `n_block` output columns (with B prepacked,
// one row block of a strip, unless the strips are copied: copy_b); within it, tiles of `tile_rows`
// rows x `tile_vectors` vectors of `vector_width` lanes are accumulated in registers over the whole
// K, K innermost (unrolled by `k_unroll`), with B packed per strip when `pack_b`. K is never split
// across tiles or threads, so float sums keep their K order.
#pragma once

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "schedules/knob_table.h"
#include "schedules/matmul_layout.h"
#include "schedules/target_info.h"

// clang-format off
// X(name, type, default, min, max, (searched values), tag prefix, tag style, tag omitted at,
//   exact sums only, meaning). Table order is the draw order of the search and the tag's order.
// tile_rows draws 12 and 16 for AVX-512's 32 registers (a 16-row tile of one vector a row: at
// 16x4096x4096 float32 with B prepacked on a Xeon, 1.4-1.5x the 6x64 tile); AVX2's 16 registers
// refuse 16 rows by the register count.
#define MMTUNE_CPU_MATMUL_KNOBS(X)                                                                 \
  X(tile_rows, int, 6, 1, 16, (1, 2, 3, 4, 6, 8, 12, 16), "", kValue, -1, false,                   \
    "rows of the register tile")                                                                   \
  X(tile_vectors, int, 4, 1, 8, (1, 2, 3, 4), "x", kLanes, -1, false,                              \
    "vectors per tile row (tile columns = tile_vectors x lanes)")                                  \
  X(vector_width, int, 0, 0, 64, (0, 0, 0, 8, 16, 32), "w", kValue, 0, false,                      \
    "lanes of the accumulator type (0 = the target's natural width; else a power of two); the "    \
    "search draws the natural width or twice it (a vector of two registers)")                      \
  X(k_unroll, int, 4, 1, 16, (1, 2, 4, 8), "k", kValue, -1, false,                                 \
    "K loop unrolled by this factor")                                                              \
  X(n_block, int, 256, 0, 65536, (0, 64, 128, 256, 512, 1024), "n", kValue, 0, false,              \
    "columns per strip (task, packed-B strip), a multiple of the tile width; "                     \
    "0 = no strips")                                                                               \
  X(pack_b, bool, true, 0, 1, (0, 1), "p", kFlag, 0, false,                                        \
    "B copied into tile-wide panels")                                                              \
  X(parallel, bool, true, 0, 1, (0, 1), "t", kFlag, 0, false,                                      \
    "strips (or tile rows) run as parallel tasks, with B prepacked (not copied) each strip's row " \
    "blocks too")                                                                                  \
  X(k_group, int, 1, 1, 4, (1, 2, 4), "g", kValue, 1, true,                                        \
    "K consumed in groups of 1, 2 or 4 (dot-product instructions); needs pack_b")                  \
  X(m_block, int, 0, 0, 4096, (0, 0, 1, 32, 64, 96, 128), "m", kValue, 0, false,                   \
    "rows per cache block, a multiple of tile_rows (a packed B panel reused "                      \
    "across them); 0 = none")                                                                      \
  X(specialize_tails, bool, false, 0, 1, (0, 1), "s", kFlag, 0, false,                             \
    "a branch without tail guards for shapes of whole tiles (and strips and blocks)")              \
  X(k_block, int, 0, 0, 65536, (0, 0, 0, 2, 4, 16, 64, 256), "b", kValue, 0, false,                \
    "K per cache block, its accumulators in memory, K order kept (needs n_block, "                 \
    "m_block, k_group 1; small blocks of few rows stream B once, a GEMV); 0 = none")               \
  X(pack_a, bool, false, 0, 1, (0, 1), "a", kFlag, 0, false,                                       \
    "A copied into panels with the rows innermost (a tile row's for each K block with k_block, "   \
    "else a tile row's or, with m_block, a row block's), so that the inner loop broadcasts A "     \
    "from one pointer; needs k_group 1")                                                           \
  X(amx, bool, false, 0, 1, (0), "amx", kFlag, 0, true,                                            \
    "the tile's sum in an AMX tile register (tdpbusd: 16 x 64-byte tiles of A and of B, 16 "       \
    "rows x 16 int32 accumulators; x86 with AMX, 8-bit operands, B prepacked): tiles of 16 x 16, " \
    "K in 64-byte steps over K groups of 4 padded with zeros; not drawn: the search starts from "  \
    "amx_forms and mutates their blocks")                                                          \
  X(amx_jam, int, 1, 1, 4, (1), "j", kValue, 1, true,                                              \
    "accumulator tiles the AMX form sums at once in one K loop (schedules/cpu/amx_jam.h): 1; 2 "   \
    "(two tiles of the innermost loop over tiles, sharing a tile load); 4 (two by two, that loop " \
    "and the one around it: four multiplies per four tile loads); needs amx; not drawn: "          \
    "amx_forms seeds 1 and 4")                                                                     \
  X(copy_b, bool, false, 0, 1, (0, 1), "c", kFlag, 0, false,                                       \
    "with B prepacked, each strip's panels copied into a buffer of its task before its tiles (one "\
    "streaming read of the strip, which the strip's tile rows then read from cache); the strips "  \
    "are the tasks; needs B prepacked, n_block, k_block 0 and no amx")
// clang-format on

namespace mmtune::schedules {

struct CpuMatmulParams {
  MMTUNE_CPU_MATMUL_KNOBS(MMTUNE_KNOB_FIELD)

  static constexpr const char* kTemplate = "cpu_matmul";
  static const KnobTable<CpuMatmulParams>& knobs();

  // The target families the template schedules (AArch64 has arm_matmul: schedules/arm/).
  static constexpr const char* kFamilies = "x86";
  static bool fits(const TargetInfo& t) { return t.family == "x86"; }

  // Lanes actually used for an accumulator of `acc_bits` on `t`.
  int lanes(const TargetInfo& t, int acc_bits) const;
  int tile_columns(const TargetInfo& t, int acc_bits) const {
    return tile_vectors * lanes(t, acc_bits);
  }

  // Why these parameters cannot run on `t` (a target of a family the template fits) for `acc`, or
  // nullopt: ranges, knob combinations, and the register budget (a tile that spills).
  std::optional<std::string> validate(const TargetInfo& t, Accumulator acc) const;
  // Vector registers the tile's inner loop keeps live: accumulators, the loaded B vectors and a
  // broadcast of A, each as many registers as one vector of its lanes spans.
  int vector_registers_needed(const TargetInfo& t, Accumulator acc) const;
  MatmulLayout layout(const TargetInfo& t, Accumulator acc) const;

  // The template's defaults for a target: the table's where they fit its registers, else a 4x2 tile
  // without strips (e.g. 64-bit lanes on a 16-register ISA); exact 8-bit sums in the target's K
  // group (natural_k_group).
  static CpuMatmulParams defaults(const TargetInfo& t, Accumulator acc);
  // The GEMV forms for products of a few rows (M of 1 to 4): two-row tiles of four vectors, one row
  // block per tile row and K in blocks of 4, so that each block of B streams through once, in wide
  // strips (parallel or not); and the packed form, one row over panels of B in K groups (the
  // target's own group first, natural_k_group, then the largest that validates), K whole, for a B
  // prepacked once; and one row over strips of four such panels in K blocks of 2, which reads B
  // from four streams at once (K groups of 1). Only the variants that validate on `t` for `acc`.
  // The search seeds its small-M buckets with them (schedules/schedule.h, shape_seeds).
  static std::vector<CpuMatmulParams> gemv_forms(const TargetInfo& t, Accumulator acc);
  // The AMX forms (amx: 16 x 16 tiles) for `acc` on `t`, where they validate (an AMX target, an
  // exact 8-bit sum over a prepacked B): parallel tasks of the whole row range, of row blocks of
  // 64 and 128 rows, and of strips of 256 and 1024 columns in row blocks of 64 and 128, each one
  // tile at a time and four at once (amx_jam 4); empty elsewhere.
  static std::vector<CpuMatmulParams> amx_forms(const TargetInfo& t, Accumulator acc);
  // The cache-blocked forms for products of many rows (`m`, M of 65 and more): a tile of 6 rows of
  // 4 vectors where the registers hold it (else of 2, else the default tile) over one row block of
  // M's rows (up to 128, rounded up to whole tile rows), strips of 256 and 512 columns and K blocks
  // of 256 and 128 (k_block: the block's accumulators in memory, K order kept), so that a K block
  // of a strip of B stays in cache while the block's tile rows pass over it. K blocks need K groups
  // of 1: the float sums, not an 8-bit sum in a dot-product group (the target's natural K group,
  // natural_k_group). Only the forms that validate on `t` for `acc`; four knobs must agree, which a
  // short random walk rarely assembles.
  static std::vector<CpuMatmulParams> blocked_forms(const TargetInfo& t, Accumulator acc,
                                                    int64_t m);
  // A draw from the knobs' searched values made consistent where that is only rounding (blocks
  // rounded up to whole tiles), and its vector width one of the two the search tries: the natural
  // width (0) or a vector of two registers (twice it, an even tile_vectors halved to keep the
  // tile's columns where the tile would not fit the registers; any other drawn width falls back to
  // 0).
  void fit_draw(const TargetInfo& t, Accumulator acc);
};

// The K group a register-tiled template starts from for `acc` on `t`: the target's 8-bit
// dot-product group (TargetInfo::dot8_group) for exact 8-bit sums, else 1 (float sums keep K order;
// wider integers have no dot-product instruction).
int natural_k_group(const TargetInfo& t, Accumulator acc);

// A register-tiled template's defaults `p` where its table's tile does not fit `t`'s registers
// (64-bit lanes on a 16-register ISA): a 4x2 tile without strips. P is cpu_matmul's params or a
// template derived from them (arm_matmul), checked by its own validate().
template <class P>
P fit_default_tile(P p, const TargetInfo& t, Accumulator acc) {
  if (p.validate(t, acc)) {
    p.tile_rows = 4;
    p.tile_vectors = 2;
    p.n_block = 0;
  }
  MMTUNE_CHECK(!p.validate(t, acc),
               "no default " << P::kTemplate << " parameters fit " << t.target);
  return p;
}

}  // namespace mmtune::schedules
