// Shared machinery of the variant suites: schedule draws (seeded, logged), shape categories
// relative to a kernel's tile, random tensors per dtype.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "reference/tensor.h"
#include "schedules/schedule.h"

namespace mmtune::testing {

// The seed of every random draw: $MMTUNE_SEED if set, else a fixed default; printed once.
uint64_t variant_seed();

struct ScheduleDraw {
  std::string name;  // "default" or "random_<n>"
  schedules::Schedule schedule;
  schedules::Tile tile;  // the output tile it computes at a time (shapes are drawn relative to it)
};
// The host template's defaults first, then `count` valid random draws from its search space for a
// sum `acc` (an exact sum's draws may group K).
std::vector<ScheduleDraw> schedule_draws(const schedules::TargetInfo& t, schedules::Accumulator acc,
                                         int count, uint64_t seed);

struct MatmulShape {
  std::string category;
  int64_t m, n, k;
};
// Shape categories relative to a tile of `rows` x `cols`: tiny (1..10), exact tile multiples,
// ragged (multiples +- 1), powers of two +- 1, deep K (>= 4096), shallow K (<= 4), GEMV (M = 1),
// K = 0 (no sum: the epilogue alone).
// `deep` = false leaves out the deep-K shape (for slow dtypes).
std::vector<MatmulShape> matmul_shapes(int rows, int cols, bool deep = true);

// Uniform random values: integers in [lo, hi]; floats uniform in [lo, hi] rounded to the dtype;
// float8 from all finite patterns.
Tensor random_tensor(DType t, Shape shape, std::mt19937_64& rng, double lo, double hi);

// Value ranges that exercise each type: full 8-bit ranges; for Gemm, wrapping integer sums and
// floats in [-2, 2].
double quant_min(DType t);  // int8 -128, uint8 0
double quant_max(DType t);  // int8 127, uint8 255
struct ValueRange {
  double lo, hi;
};
ValueRange gemm_value_range(DType t);

// Scales of dtype `st` (float32, float16 or bfloat16), log-uniform in [2^e0, 2^e1].
Tensor random_scales(DType st, Shape shape, std::mt19937_64& rng, double e0, double e1);

// The host target's facts (Halide's host target string parsed).
const schedules::TargetInfo& host_info();

}  // namespace mmtune::testing
