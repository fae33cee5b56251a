// The two facts every schedule template and every generator agree on: what kind of sum is being
// scheduled (Accumulator), and the data layout a schedule asks the algorithm to build
// (MatmulLayout). generate() reads only MatmulLayout from a schedule, never a template's knobs: a
// new template changes no generator.
#pragma once

namespace mmtune::schedules {

// K groups of 4 bytes one AMX tile multiply consumes (a 64-byte row of a tile).
inline constexpr int kAmxTileGroups = 16;

// The K sum a kernel computes.
struct Accumulator {
  int bits = 32;       // width of one accumulator lane (float16/bfloat16 Gemm sums in float32: 32)
  bool exact = false;  // an exact integer sum (mod 2^bits), whose order is free; float sums keep K
                       // order, so no template may regroup them
  int operand_bits = 0;  // width of the multiplied operands (8: the quantized operators; 0 unknown)
  bool mixed_sign = false;         // one operand signed, the other unsigned (uint8 x int8)
  bool unsigned_operands = false;  // both operands unsigned (uint8 x uint8, unsigned Gemm)
  // A float sum whose steps may each be one fused multiply-add without changing a bit: the fma
  // contract, or products exact in the accumulator (float16 into float32, float8 into float64),
  // where a fused and a separately rounded step round alike. (CUDA kernels fuse every step.)
  bool fusable = false;
  // B arrives prepacked by the host (the kernel's prepacked_b form): what the AMX form reads and
  // cpu_matmul's copy_b copies.
  bool b_prepacked = false;
};

// The algorithm's data layout a schedule needs (template-independent).
struct MatmulLayout {
  int lanes = 1;  // vector lanes of the accumulator type
  int panel = 1;  // columns of one packed B panel (the register tile's width)
  bool pack_b =
      false;        // B copied into panels of `panel` columns that the inner loop reads in order
  int k_group = 1;  // K consumed in groups of k_group (exact sums only; 1 = sequential)
  // Mixed-sign 8-bit operands (uint8 x int8) made same-sign before the sum: A read as
  // a' = a XOR 0x80 in B's signedness (a' = a - 128 for uint8 A, a + 128 for int8 A) with its zero
  // point moved alike, so that sum (a - za)(b - zb) = sum (a' - za')(b - zb) exactly (mod 2^32)
  // and the products map to a same-sign dot-product instruction (sdot / udot on AArch64, which has
  // no mixed-sign one in Halide 21). Grouped K only.
  bool flip_a_sign = false;
  // Grouped exact 8-bit sums whose pair-sum instruction multiplies 16-bit lanes (x86 without VNNI:
  // pmaddwd): A's K groups packed widened to int16 (zero- or sign-extended, the same values), so
  // that the inner loop broadcasts a pair as one 32-bit load instead of widening it again for
  // every column tile and K pair.
  bool widen_a = false;
  // Grouped exact 8-bit sums on a CPU template that stages A's K groups (packed_a) per row tile:
  // A's row sums are read from packed_a, as dot products of its groups with a vector of ones in
  // B's type, so that they take the sum's own dot-product instruction (on AVX-512 VNNI one
  // vpdpbusd sums 64 bytes of a row where widening and adding took four instructions per 16).
  bool row_sums_grouped = false;
  // The template gives each of MatmulPipeline::epilogue_cases a branch of out's loop nest (CPU
  // templates): a generator may then state special cases of its epilogue as selects on them.
  // Elsewhere a select would compute both sides.
  bool epilogue_cases = false;
  // The exact 8-bit sum computed in AMX tiles (x86 tdpbusd and its kin): the int32 sum of a tile
  // over the whole K in one tile register, its operands read from the packed panels (A's K groups
  // staged per row block, B's panels of 16 columns), 64 bytes of K (16 groups of 4) per step.
  // Grouped K (k_group 4) only.
  bool amx = false;
  // The K groups of a packed B panel (and of A's staged groups) are a multiple of this, the
  // padding zero (amx: kAmxTileGroups, whole tile steps; otherwise 1).
  int group_align = 1;

  // Whether the algorithm reads B from packed panels (grouped K always packs); a prepacked B
  // (runtime/host/packed_b.h) holds them, otherwise B itself.
  bool packs_b() const { return pack_b || k_group > 1; }
};

}  // namespace mmtune::schedules
