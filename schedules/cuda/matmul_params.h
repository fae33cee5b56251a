// The cuda_matmul schedule template's parameters (NVIDIA GPUs through Halide's CUDA backend): its
// knob table, declared once below, and its rules (validation against a target and a sum, the data
// layout it asks of the algorithm, defaults and search space).
//
// Thread blocks own tiles of `tile_rows` x `tile_cols` outputs; each thread of a block owns
// `thread_rows` x `thread_cols` of them. Without `k_tile`, a thread's sums live in its registers
// for the whole K and its operands are read from global memory. With `k_tile`, the block stages K
// tiles of A and B in shared memory (loaded by all its threads) and keeps its sums there: an exact
// sum adds each thread's tile sums (summed in registers) once per tile, a float sum adds each
// product in K order. A float output's whole sum is one thread's, k = 0, 1, ..., K-1 in order: no
// rfactor, no split of K across threads, no atomics. The epilogue and the producers with a float
// step run on the host (schedules/cuda/matmul_schedule.cc says why).
//
// What the GPU may sum: Halide 21 compiles CUDA kernels with fast-math options that strict_float
// does not lift (CodeGen_PTX_Dev::compile_to_src: FMA contraction, unsafe FP math, no NaNs or
// Infs), and its NVPTX backend fuses every multiply feeding an add into one fma. A float sum is
// exact there only when fusing changes no bit (Accumulator::fusable: the fma contract, or products
// exact in the accumulator); exact integer sums always are (and may be regrouped: k_group 4 sums
// groups of four 8-bit products with dp4a). validate() refuses the other float sums. (Halide also
// asks for float32 flush-to-zero with the nvptx-f32ftz attribute, which LLVM 21 no longer reads:
// the PTX has no .ftz instruction.)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedules/knob_table.h"
#include "schedules/matmul_layout.h"
#include "schedules/target_info.h"

// clang-format off
// X(name, type, default, min, max, (searched values), tag prefix, tag style, tag omitted at,
//   exact sums only, meaning). Table order is the draw order of the search and the tag's order.
#define MMTUNE_CUDA_MATMUL_KNOBS(X)                                                                \
  X(tile_rows, int, 32, 1, 256, (8, 16, 32, 64), "", kValue, -1, false,                            \
    "output rows per thread block, a multiple of thread_rows")                                     \
  X(tile_cols, int, 64, 1, 256, (16, 32, 64, 128), "x", kValue, -1, false,                         \
    "output columns per thread block, a multiple of thread_cols (the packed B panel width)")       \
  X(thread_rows, int, 4, 1, 16, (1, 2, 4, 8), "r", kValue, -1, false,                              \
    "rows of one thread's outputs (each output's whole K sum is one thread's)")                    \
  X(thread_cols, int, 4, 1, 16, (1, 2, 4, 8), "c", kValue, -1, false,                              \
    "columns of one thread's outputs")                                                             \
  X(k_tile, int, 16, 0, 256, (0, 8, 16, 32, 64), "s", kValue, 0, false,                            \
    "K per stage of A and B in shared memory, a multiple of k_unroll x k_group (the block's sums "  \
    "in shared memory too); 0 = operands read from global memory, sums in registers")              \
  X(k_unroll, int, 4, 1, 16, (1, 2, 4, 8), "k", kValue, -1, false,                                 \
    "K loop unrolled by this factor (in K groups when k_group > 1)")                               \
  X(k_group, int, 1, 1, 4, (1, 4, 4), "g", kValue, 1, true,                                        \
    "K consumed in groups of 1 or 4 (4: dp4a, for 8-bit operands)")
// clang-format on

namespace mmtune::schedules {

struct CudaMatmulParams {
  MMTUNE_CUDA_MATMUL_KNOBS(MMTUNE_KNOB_FIELD)

  static constexpr const char* kTemplate = "cuda_matmul";
  static const KnobTable<CudaMatmulParams>& knobs();

  static constexpr const char* kFamilies = "cuda (Halide's CUDA targets)";
  static bool fits(const TargetInfo& t) { return t.family == "cuda"; }

  // Threads per block, and the shared memory of one block in bytes for a sum `acc`.
  int threads() const { return (tile_cols / thread_cols) * (tile_rows / thread_rows); }
  int shared_bytes(Accumulator acc) const;

  // Why these parameters cannot compute `acc` exactly or at all on `t` (a CUDA target), or
  // nullopt: the sums the GPU keeps exact, ranges, knob combinations, and the limits of a block
  // (1024 threads, 48 KiB of shared memory, 64 K registers).
  std::optional<std::string> validate(const TargetInfo& t, Accumulator acc) const;
  MatmulLayout layout(const TargetInfo& t, Accumulator acc) const;

  // The table's defaults, with k_group 4 (dp4a) for exact sums of 8-bit products and no shared
  // stage for float sums (their sums would be stored at every step), fitted to the block limits
  // where 64-bit sums need it.
  static CudaMatmulParams defaults(const TargetInfo& t, Accumulator acc);
  // No separate GEMV form is searched on the GPU yet.
  static std::vector<CudaMatmulParams> gemv_forms(const TargetInfo& t, Accumulator acc);
  // A draw from the knobs' searched values made consistent where that is only rounding: the block
  // tile rounded up to whole thread tiles, k_tile up to whole unrolled K groups.
  void fit_draw(const TargetInfo& t, Accumulator acc);
};

// Why a sum `acc` cannot be computed bit-exactly by a CUDA kernel of Halide 21, or nullopt.
std::optional<std::string> cuda_inexact_sum(Accumulator acc);

}  // namespace mmtune::schedules
