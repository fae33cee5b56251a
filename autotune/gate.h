// The gate every kernel passes before it counts: the kernel writes its output between two guard
// regions, into memory pre-filled with the bitwise complement of the expected result, so that an
// element it never writes cannot match by luck, a write outside the output is caught, and a call
// the reference answered (no kernel ran) is not counted as a kernel check. The variant suites use
// it today; the tuner's verifier is built on it.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "autotune/halide_ops.h"
#include "reference/tensor.h"

namespace mmtune {

struct GateResult {
  Tensor actual;         // what the call returned
  int kernel_calls = 0;  // kernel invocations that wrote the output (0: the reference computed it)
  // Why the run is wrong before any value is compared: a guard byte changed (a write outside the
  // output), or the returned tensor differs from what the kernel left in the placed output.
  std::optional<std::string> violation;
};

// Bytes of each guard region around the output.
constexpr std::size_t kGuardBytes = 256;

// Runs `call` with JitRun::output pointing into a guarded buffer of expected's size, pre-filled
// with ~expected, then checks the guards.
GateResult run_gated(const Tensor& expected, const std::function<Tensor(JitRun&)>& call);

}  // namespace mmtune
