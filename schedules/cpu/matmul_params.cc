// cpu_matmul: the knob table and the template's rules.
#include "schedules/cpu/matmul_params.h"

#include <algorithm>
#include <sstream>

namespace mmtune::schedules {

const KnobTable<CpuMatmulParams>& CpuMatmulParams::knobs() {
#define MMTUNE_CPU_KNOB(...) MMTUNE_KNOB_ENTRY_FOR(CpuMatmulParams, __VA_ARGS__)
  static const KnobTable<CpuMatmulParams> table({MMTUNE_CPU_MATMUL_KNOBS(MMTUNE_CPU_KNOB)});
#undef MMTUNE_CPU_KNOB
  return table;
}

namespace {
// Lanes of one vector register of `t` for an accumulator of `acc_bits`.
int natural_lanes(const TargetInfo& t, int acc_bits) {
  return std::max(1, t.vector_bits / acc_bits);
}
}  // namespace

int CpuMatmulParams::lanes(const TargetInfo& t, int acc_bits) const {
  return vector_width > 0 ? vector_width : natural_lanes(t, acc_bits);
}

std::optional<std::string> CpuMatmulParams::validate(const TargetInfo& t, Accumulator acc) const {
  if (auto why = knobs().check(*this, acc.exact)) return why;
  std::ostringstream why;
  if ((vector_width & (vector_width - 1)) != 0) {
    why << "vector_width=" << vector_width << " is not 0 or a power of two";
  } else if (k_group == 3) {
    why << "k_group=" << k_group << " is not 1, 2 or 4";
  } else if (k_group > 1 && !pack_b) {
    why << "k_group=" << k_group << " needs pack_b (B is packed in K groups)";
  } else if (m_block > 0 && m_block % tile_rows != 0) {
    why << "m_block=" << m_block << " is not 0 or a multiple of tile_rows=" << tile_rows;
  } else if (k_block > 0 && (n_block == 0 || m_block == 0 || k_group != 1)) {
    why << "k_block=" << k_block
        << " needs n_block and m_block (the accumulators of one block live in memory) and "
           "k_group=1";
  } else if (pack_a && k_group != 1) {
    why << "pack_a needs k_group=1 (grouped K packs A in its groups)";
  } else if (amx && !(t.amx && acc.exact && acc.operand_bits == 8)) {
    why << "amx needs exact 8-bit sums on a target with AMX (avx512_sapphirerapids)";
  } else if (amx && !acc.b_prepacked) {
    why << "amx reads a B prepacked by the host (prepacked_b=true: the AMX lowering recognizes "
           "the tile loads of its panels, not of panels the kernel packs itself)";
  } else if (amx &&
             (tile_columns(t, acc.bits) != 16 || tile_rows != 16 || k_group != 4 || k_block != 0)) {
    // (Halide 21's AMX lowering reads a tile's rows and columns from two different parts of the
    // B operand's index, which agree only for square tiles: a 8 x 16 tile is not recognized.)
    why << "amx computes tiles of 16 x 16 int32 (tile_rows=" << tile_rows
        << ", tile_columns=" << tile_columns(t, acc.bits)
        << ") from K groups of 4 (k_group=" << k_group << ") over the whole K (k_block=" << k_block
        << ")";
  } else if (amx_jam != 1 && amx_jam != 2 && amx_jam != 4) {
    why << "amx_jam=" << amx_jam << " is not 1, 2 or 4";
  } else if (amx_jam > 1 && !amx) {
    why << "amx_jam=" << amx_jam << " needs amx (it groups AMX accumulator tiles)";
  } else if (amx_jam > 1 && n_block > 0 && m_block == 0 && !parallel && specialize_tails) {
    // (LLVM's tile register allocation aborts on that loop nest, "Unexpected machine instruction
    // on tile register", for amx_jam 2 and 4 alike; without the branch of whole tiles it compiles.)
    why << "amx_jam=" << amx_jam << " with strips (n_block=" << n_block
        << ") and specialize_tails needs row blocks (m_block) or parallel tasks";
  } else if (copy_b && !(acc.b_prepacked && pack_b && n_block > 0 && k_block == 0 && !amx)) {
    // (A plain B is packed per strip already (pack_b); K blocks and AMX tiles read their panels
    // where they are.)
    why << "copy_b copies a prepacked B's strips (needs prepacked_b=true, pack_b, n_block > 0, "
           "k_block=0 and no amx; n_block="
        << n_block << ", k_block=" << k_block << ")";
  } else if (n_block > 0 && n_block % tile_columns(t, acc.bits) != 0) {
    why << "n_block=" << n_block << " is not a multiple of the tile width "
        << tile_columns(t, acc.bits);
  } else {
    const int needed = vector_registers_needed(t, acc);
    if (!amx && needed > t.vector_registers) {
      why << "a " << tile_rows << "x" << tile_vectors << " tile of " << lanes(t, acc.bits)
          << "-lane " << acc.bits << "-bit vectors needs " << needed << " vector registers; "
          << t.isa << " has " << t.vector_registers;
    }
  }
  const std::string s = why.str();
  if (s.empty()) return std::nullopt;
  return s;
}

int CpuMatmulParams::vector_registers_needed(const TargetInfo& t, Accumulator acc) const {
  // Accumulators + one register per loaded B vector + one broadcast of A must fit the register
  // file, or the tile spills and the kernel is slow (it stays correct).
  const int regs_per_vector =
      std::max(1, lanes(t, acc.bits) * acc.bits / std::max(1, t.vector_bits));
  return (tile_rows * tile_vectors + tile_vectors + 1) * regs_per_vector;
}

MatmulLayout CpuMatmulParams::layout(const TargetInfo& t, Accumulator acc) const {
  MatmulLayout l;
  l.lanes = lanes(t, acc.bits);
  l.panel = tile_columns(t, acc.bits);
  l.pack_b = pack_b;
  l.k_group = acc.exact ? k_group : 1;
  l.widen_a = t.family == "x86" && acc.exact && acc.operand_bits == 8 && l.k_group == 2;
  l.row_sums_grouped =
      t.family == "x86" && acc.exact && acc.operand_bits == 8 && l.k_group > 1 && !l.widen_a;
  l.epilogue_cases = true;
  if (amx) {
    l.amx = true;
    l.group_align = kAmxTileGroups;
  }
  return l;
}

CpuMatmulParams CpuMatmulParams::defaults(const TargetInfo& t, Accumulator acc) {
  CpuMatmulParams p = knobs().defaults();
  p.k_group = natural_k_group(t, acc);
  return fit_default_tile(p, t, acc);
}

int natural_k_group(const TargetInfo& t, Accumulator acc) {
  return acc.exact && acc.operand_bits == 8 ? t.dot8_group : 1;
}

std::vector<CpuMatmulParams> CpuMatmulParams::gemv_forms(const TargetInfo& t, Accumulator acc) {
  std::vector<CpuMatmulParams> forms;
  // A form of `rows` x 4 vectors in strips of `n_block`, the first of `k_groups` that validates.
  auto add = [&](int rows, int k_unroll, int n_block, bool pack_b, int m_block, int k_block,
                 bool parallel, std::initializer_list<int> k_groups) {
    for (int k_group : k_groups) {
      CpuMatmulParams p = knobs().defaults();
      p.tile_rows = rows;
      p.tile_vectors = 4;
      p.k_unroll = k_unroll;
      p.n_block = n_block;
      p.pack_b = pack_b;
      p.parallel = parallel;
      p.k_group = k_group;
      p.m_block = m_block;
      p.specialize_tails = true;
      p.k_block = k_block;
      p.fit_draw(t, acc);
      if (!p.validate(t, acc)) {
        forms.push_back(p);
        return;
      }
    }
  };
  // Streamed: two rows, one row block per tile row, K in blocks of 4, B read in place.
  for (bool parallel : {true, false}) add(2, 1, 1024, false, 2, 4, parallel, {1});
  // Packed: one tile row over panels of B in K groups (the target's dot-product instruction where
  // the sum is exact: natural_k_group first), K whole, in strips. Packing costs a pass over B per
  // call, as much as the GEMV itself, unless B is prepacked (prepack_b), where it is free: the form
  // of those calls.
  const int natural = natural_k_group(t, acc);
  for (bool parallel : {true, false}) {
    if (natural == 2) {
      add(1, 4, 256, true, 0, 0, parallel, {2, 4, 1});
    } else {
      add(1, 4, 256, true, 0, 0, parallel, {4, 2, 1});
    }
  }
  // Packed, K in blocks of 2 across a strip of 4 panels: the strip's accumulators in memory, each
  // K block reads two rows of every panel, so B streams from four places at once. One sequential
  // stream is what one core's prefetchers sustain worst: reading 64 MiB at 1 thread on a Zen 3,
  // four streams read in turns of 256 bytes ran about 1.9x one (docs/performance.md).
  const int panel = 4 * natural_lanes(t, acc.bits);
  for (bool parallel : {true, false}) add(1, 2, 4 * panel, true, 1, 2, parallel, {1});
  return forms;
}

std::vector<CpuMatmulParams> CpuMatmulParams::amx_forms(const TargetInfo& t, Accumulator acc) {
  std::vector<CpuMatmulParams> forms;
  // Strips (n_block) give a call its parallel tasks where M is one row block: {1024, 128} held
  // 1.0x the whole-rows form at 1 thread and 2.0x it at 2 on 128x4096x4096 (Xeon with AMX).
  const std::pair<int, int> blocks[] = {{0, 0},    {0, 64},    {0, 128},   {64, 0},
                                        {256, 64}, {1024, 64}, {256, 128}, {1024, 128}};
  // Every block form four tiles at once first, then one at a time (four ran ahead in every block
  // form timed): in block order, each form both ways, a bucket's 17 candidates left out {1024,
  // 128} four at a time, its best form at 1024^3 and 512x4096x4096.
  for (int jam : {4, 1}) {
    for (const auto& [n_block, m_block] : blocks) {
      CpuMatmulParams p = knobs().defaults();
      p.tile_rows = 16;
      p.tile_vectors = 1;
      p.vector_width = 0;
      p.k_group = 4;
      p.pack_b = true;
      p.n_block = n_block;
      p.m_block = m_block;
      p.specialize_tails = true;
      p.amx = true;
      p.k_unroll = 1;  // inert in the AMX sum (fit_draw)
      p.amx_jam = jam;
      if (!p.validate(t, acc)) forms.push_back(p);
    }
  }
  return forms;
}

std::vector<CpuMatmulParams> CpuMatmulParams::blocked_forms(const TargetInfo& t, Accumulator acc,
                                                            int64_t m) {
  std::vector<CpuMatmulParams> forms;
  if (m <= 64) return forms;
  // Measured at 2 threads on a Xeon with AVX-512 (float32, fma, B prepacked; G/s): at
  // 128x4096x4096 the 6x64 tile over strips of 256, one row block of 132 rows and K blocks of 256
  // ran 299-315, over panels of 64 with K whole (the search's pick) 276; at 128x4096x11008 321
  // against 162; at 512x4096x4096 340 against 377 (four row blocks: B read four times).
  // The tile: 6 rows of 4 vectors where the registers hold them (AVX-512), else of 2 (AVX2's 16
  // registers; 6x16 was the AVX2 level's float32 pick), else the template's default.
  CpuMatmulParams base = defaults(t, acc);  // its K group the sum's natural one
  for (const int vectors : {4, 2}) {
    CpuMatmulParams p = base;
    p.tile_rows = 6;
    p.tile_vectors = vectors;
    if (p.vector_registers_needed(t, acc) <= t.vector_registers) {
      base = p;
      break;
    }
  }
  const int rows = static_cast<int>(std::min<int64_t>(m, 128));
  for (const auto& [n_block, k_block] : {std::pair{256, 256}, {256, 128}, {512, 256}, {512, 128}}) {
    CpuMatmulParams p = base;  // k_block validates with K groups of 1 only
    p.pack_b = true;
    p.pack_a = false;
    p.parallel = true;
    p.specialize_tails = true;
    p.n_block = n_block;
    p.m_block = rows;
    p.k_block = k_block;
    p.fit_draw(t, acc);
    if (!p.validate(t, acc)) forms.push_back(p);
  }
  return forms;
}

void CpuMatmulParams::fit_draw(const TargetInfo& t, Accumulator acc) {
  // Vectors of two registers: LLVM splits each into its two halves and keeps a row's halves next to
  // each other, so a broadcast of A is used by both at once. With one vector per register the
  // scheduler groups the FMAs by B vector instead, and a 6x16 float32 AVX2 tile keeps six
  // broadcasts live across the two groups: 34 spills and reloads per 48 FMAs, none with 16 lanes.
  if (vector_width != 2 * natural_lanes(t, acc.bits)) vector_width = 0;
  // A vector of two registers covers two natural ones: where the drawn (or mutated) tile does not
  // fit the registers in them, an even tile_vectors halves and the tile keeps its columns (4x16 and
  // 4x16w16 are one mutation apart). A tile that fits is left as it is, so a valid draw is fitted
  // to itself.
  if (vector_width && tile_vectors % 2 == 0 && vector_registers_needed(t, acc) > t.vector_registers)
    tile_vectors /= 2;
  // A strip holds whole tiles, a row block whole tile rows: round the drawn blocks up.
  if (n_block) {
    const int w = tile_columns(t, acc.bits);
    n_block = (n_block + w - 1) / w * w;
  }
  if (m_block) m_block = (m_block + tile_rows - 1) / tile_rows * tile_rows;
  // The AMX sum runs its K steps in one tile loop that k_unroll does not touch: one value, so that
  // a search does not time the same kernel under several names (in a 2-thread tuning of the AMX
  // level, 166 of the 305 AMX records repeated another's schedule but for k_unroll).
  if (amx) k_unroll = 1;
  // Only the AMX form groups accumulator tiles.
  if (!amx) amx_jam = 1;
}

}  // namespace mmtune::schedules
