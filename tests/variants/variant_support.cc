// Shared machinery of the variant suites.
#include "tests/variants/variant_support.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>

#include "autotune/kernel_key.h"
#include "tests/support/test_support.h"

namespace mmtune::testing {

uint64_t variant_seed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("MMTUNE_SEED");
    const uint64_t v = s && *s ? std::strtoull(s, nullptr, 10) : 20261129ull;
    std::cout << "[variants] seed " << v << " (set MMTUNE_SEED to change)\n";
    return v;
  }();
  return seed;
}

int variant_draws(int ci_default) {
  const char* s = std::getenv("MMTUNE_VARIANT_DRAWS");
  const char* long_run = std::getenv("MMTUNE_LONG");
  const bool is_long = long_run && std::string(long_run) == "1";
  const int n = s && *s ? std::atoi(s) : is_long ? std::max(ci_default, 20) : ci_default;
  static const bool printed = [&] {
    std::cout << "[variants] random schedule draws: "
              << (s && *s   ? s
                  : is_long ? "20 (MMTUNE_LONG=1)"
                            : "suite defaults")
              << " (MMTUNE_VARIANT_DRAWS=N or MMTUNE_LONG=1 to change)\n";
    return true;
  }();
  (void)printed;
  return n;
}

std::vector<ScheduleDraw> schedule_draws(const schedules::TargetInfo& t, schedules::Accumulator acc,
                                         int count, uint64_t seed) {
  std::vector<ScheduleDraw> draws;
  const schedules::Schedule defaults = schedules::default_schedule(t, acc);
  draws.push_back({"default", defaults, defaults.tile(t, acc)});
  std::mt19937_64 rng(seed);
  const std::string name = schedules::default_template(t);
  for (int n = 0; n < count; ++n) {
    const schedules::Schedule s = schedules::sample(name, t, acc, rng);
    draws.push_back({"random_" + std::to_string(n), s, s.tile(t, acc)});
  }
  return draws;
}

const schedules::TargetInfo& host_info() {
  static const schedules::TargetInfo info = schedules::target_info(host_target());
  return info;
}

std::vector<QlmCase> qlinear_matmul_cases(int rows, int cols) {
  std::vector<QlmCase> out;
  int n = 0;
  for (const auto& s : matmul_shapes(rows, cols)) {
    const std::vector<std::pair<Shape, Shape>> params = {
        {{}, {}}, {{s.m, 1}, {s.n}}, {{1}, {1, s.n}}};
    const auto& [ap, bp] = params[n % params.size()];
    out.push_back({s.category + "_" + std::to_string(n),
                   {s.m, s.k},
                   {s.k, s.n},
                   ap,
                   bp,
                   n % 2 ? "full_range" : "random"});
    ++n;
  }
  out.push_back(
      {"batch_broadcast", {2, 1, 5, 7}, {3, 7, 9}, {2, 1, 5, 1}, {3, 1, 9}, "full_range"});
  out.push_back({"batch_broadcast_b", {4, 3, 6}, {1, 6, 2 * cols + 1}, {}, {1, 1, 2 * cols + 1}});
  out.push_back(
      {"batch_params_only", {2, rows + 1, 20}, {20, cols + 2}, {2, rows + 1, 1}, {cols + 2}});
  out.push_back({"vector_a", {11}, {11, cols + 3}, {}, {cols + 3}});
  out.push_back({"vector_b", {rows + 2, 13}, {13}, {rows + 2, 1}, {}});
  out.push_back({"vector_both", {300}, {300}, {}, {}, "full_range"});
  out.push_back({"ties", {2 * rows + 1, 40}, {40, 2 * cols + 3}, {}, {}, "ties"});
  out.push_back({"wrap_int32", {2, 33100}, {33100, cols + 1}, {}, {}, "wrap"});
  // Per-row / per-column parameters of one value each (the kernels' per-tensor branch, found by
  // value), and so but for the last row's or column's one (their general branch).
  for (const char* data :
       {"equal_params", "a_scale_differs", "a_zero_point_differs", "b_zero_point_differs"}) {
    out.push_back(
        {data, {2 * rows + 3, 50}, {50, 2 * cols + 5}, {2 * rows + 3, 1}, {2 * cols + 5}, data});
  }
  out.push_back({"extreme_scales",
                 {rows + 1, 64},
                 {64, 3 * cols},
                 {rows + 1, 1},
                 {3 * cols},
                 "extreme_scales"});
  return out;
}

std::string GateCounts::summary() const {
  std::ostringstream os;
  os << kernel_cases << " kernel cases (" << outputs << " outputs through the gate), "
     << reference_cases << " reference-path cases";
  return os.str();
}

::testing::AssertionResult gated_equal(const Tensor& expected,
                                       const std::function<Tensor(JitRun&)>& call,
                                       bool expect_kernel, const std::string& context,
                                       GateCounts& counts) {
  GateResult g;
  try {
    g = run_gated(expected, call);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << e.what() << " (" << context << ")";
  }
  if (g.violation) return ::testing::AssertionFailure() << *g.violation << " (" << context << ")";
  if (expect_kernel && g.kernel_calls == 0) {
    return ::testing::AssertionFailure()
           << "no kernel ran: the reference computed the case (" << context << ")";
  }
  // The tuner times the kernels by the seconds the JIT counts inside them: counted exactly when a
  // kernel ran.
  if ((g.kernel_calls > 0) != (g.kernel_seconds > 0)) {
    return ::testing::AssertionFailure()
           << g.kernel_calls << " kernel calls took " << g.kernel_seconds << " s inside them ("
           << context << ")";
  }
  ::testing::AssertionResult same = bit_equal(expected, g.actual, context);
  if (!same) return same;
  if (g.kernel_calls > 0) {
    ++counts.kernel_cases;
    counts.outputs += expected.numel();
  } else {
    ++counts.reference_cases;
  }
  return ::testing::AssertionSuccess();
}

QlmInputs random_u8s8_qlm_inputs(Shape a, Shape b, std::mt19937_64& rng) {
  QlmCase qc;
  qc.name = "u8s8";
  qc.a = std::move(a);
  qc.b = std::move(b);
  qc.data = "random";
  return make_qlinear_matmul_inputs(DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, qc,
                                    rng);
}

}  // namespace mmtune::testing
