// Shared machinery of the variant suites: schedule draws (seeded, logged), shape categories
// relative to a kernel's tile, random tensors per dtype.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "autotune/gate.h"
#include "reference/qlinear_matmul.h"
#include "reference/tensor.h"
#include "schedules/schedule.h"

namespace mmtune::testing {

// The seed of every random draw: $MMTUNE_SEED if set, else a fixed default; printed once.
uint64_t variant_seed();

// How many random schedule draws a suite runs besides the default: $MMTUNE_VARIANT_DRAWS if set (a
// long run: MMTUNE_VARIANT_DRAWS=20), else `ci_default` (20 for most suites; fewer where each draw
// compiles many kernels). Printed once.
int variant_draws(int ci_default);

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

// QLinearMatMul (int8/uint8) cases relative to a tile of rows x cols, shared by the variant and
// runtime suites: every shape category (2-D, with per-tensor / per-row x per-column / rank-1 and
// rank-2 parameters rotating), N-D batch broadcasting with parameters carrying batch dims, 1-D
// operands, and adversarial data: full-range values and zero points, requantization on exact .5
// ties, K that wraps int32, extreme per-column scales.
struct QlmCase {
  std::string name;
  Shape a, b;                   // operand shapes
  Shape a_param, b_param;       // scale / zero-point shapes
  std::string data = "random";  // random | full_range | ties | wrap | extreme_scales
};
std::vector<QlmCase> qlinear_matmul_cases(int rows, int cols);

// A case's inputs for operand types (ta, tb), output type ty and scale type st.
struct QlmInputs {
  Tensor a, b, as, bs, ys, az, bz, yz;
  QLinearMatMulArgs args(RequantMode mode) const {
    return QLinearMatMulArgs{&a, &as, &az, &b, &bs, &bz, &ys, &yz, 21, mode};
  }
};
QlmInputs make_qlinear_matmul_inputs(DType ta, DType tb, DType ty, DType st, const QlmCase& c,
                                     std::mt19937_64& rng);

// Float data for the Gemm suites (float32, float64, float16, bfloat16), beyond [-2, 2]:
enum class FloatData {
  kPlain,    // uniform in [-2, 2]
  kHuge,     // [-2, 2] x 2^e with products at and beyond the accumulator's overflow threshold
  kTiny,     // [-2, 2] x 2^-e with products in and below the accumulator's subnormal range
  kSpecial,  // plain, with one element in eight replaced by a subnormal, +-0, +-Inf, the type's
             // extremes, or a NaN with a non-canonical payload of either sign
};
const char* float_data_name(FloatData d);
Tensor random_float_tensor(DType t, Shape shape, std::mt19937_64& rng, FloatData kind);

// The gate over one case (autotune/gate.h): `call` runs the kernel on a placed, poisoned, guarded
// output; the result must equal `expected` bit for bit, write nothing outside its output, and run a
// kernel when `expect_kernel`. Counts what it checked.
struct GateCounts {
  int64_t kernel_cases = 0;     // cases a compiled kernel computed
  int64_t reference_cases = 0;  // cases the host gave to the reference (K = 0, empty output)
  int64_t outputs = 0;          // outputs compared bit for bit (kernel cases)
  std::string summary() const;  // "N kernel cases (M outputs), R reference-path cases"
};
::testing::AssertionResult gated_equal(const Tensor& expected,
                                       const std::function<Tensor(JitRun&)>& call,
                                       bool expect_kernel, const std::string& context,
                                       GateCounts& counts);

// Scales of dtype `st` (float32, float16 or bfloat16), log-uniform in [2^e0, 2^e1].
Tensor random_scales(DType st, Shape shape, std::mt19937_64& rng, double e0, double e1);

// The host target's facts (Halide's host target string parsed).
const schedules::TargetInfo& host_info();

}  // namespace mmtune::testing
