// Shared machinery of the variant suites: schedule draws (seeded, logged), the QLinearMatMul case
// list, the gate's assertion. The data generators (shape categories relative to a kernel's tile,
// random tensors per dtype) are the tuner's, autotune/tune_inputs.h, named here too.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "autotune/gate.h"
#include "autotune/tune_inputs.h"
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

// The data generators (autotune/tune_inputs.h: the tuner's gate draws the same inputs).
using tune::float_data_name;
using tune::FloatData;
using tune::gemm_value_range;
using tune::make_qlinear_matmul_inputs;
using tune::matmul_shapes;
using tune::MatmulShape;
using tune::QlmCase;
using tune::QlmInputs;
using tune::quant_max;
using tune::quant_min;
using tune::random_float_tensor;
using tune::random_scales;
using tune::random_tensor;
using tune::ValueRange;

// u8.s8 -> u8 QLinearMatMul inputs of a (`a`) and b (`b`) shapes: random data, per-tensor
// parameters, float32 scales.
QlmInputs random_u8s8_qlm_inputs(Shape a, Shape b, std::mt19937_64& rng);

// QLinearMatMul (int8/uint8) cases relative to a tile of rows x cols, shared by the variant and
// runtime suites: every shape category (2-D, with per-tensor / per-row x per-column / rank-1 and
// rank-2 parameters rotating), N-D batch broadcasting with parameters carrying batch dims, 1-D
// operands, and adversarial data: full-range values and zero points, requantization on exact .5
// ties, K that wraps int32, extreme per-column scales.
std::vector<QlmCase> qlinear_matmul_cases(int rows, int cols);

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

// The host target's facts (Halide's host target string parsed).
const schedules::TargetInfo& host_info();

}  // namespace mmtune::testing
