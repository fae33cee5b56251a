// The gate every kernel passes before it counts: the kernel writes its output between two guard
// regions, into memory pre-filled with the bitwise complement of the expected result, so that an
// element it never writes cannot match by luck, a write outside the output is caught, and a call
// the reference answered (no kernel ran) is not counted as a kernel check. The variant suites use
// it today; the tuner's verifier and `mmtune verify` run the battery of gate_battery() through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "autotune/halide_ops.h"
#include "reference/tensor.h"
#include "schedules/schedule.h"

namespace mmtune {

struct GateResult {
  Tensor actual;         // what the call returned
  int kernel_calls = 0;  // kernel invocations that wrote the output (0: the reference computed it)
  double kernel_seconds = 0;  // the time inside them (JitRun::kernel_seconds)
  // Why the run is wrong before any value is compared: a guard byte changed (a write outside the
  // output), or the returned tensor differs from what the kernel left in the placed output.
  std::optional<std::string> violation;
};

// Bytes of each guard region around the output.
constexpr std::size_t kGuardBytes = 256;

// Runs `call` with JitRun::output pointing into a guarded buffer of expected's size, pre-filled
// with ~expected, then checks the guards.
GateResult run_gated(const Tensor& expected, const std::function<Tensor(JitRun&)>& call);

// The battery a kernel passes (autotune/tune_inputs.h, gate_cases) for the bucket measured on
// `shape` (M, N, K).
struct GateOptions {
  std::vector<int64_t> shape;
  bool full = false;          // every data kind on every gate shape (the tuner's finalists)
  bool bucket_only = false;   // only the bucket shape's cases
  uint64_t seed = 1;          // the inputs' draw
  bool stop_at_first = true;  // false: every case runs and every differing output is counted
  bool drop_tail = false;     // tests only: the last output element left unwritten
};
struct GateSummary {  // NOLINT(bugprone-exception-escape): the json member; built outside noexcept
                      // code
  int64_t kernel_cases = 0;       // cases a kernel computed
  int64_t reference_cases = 0;    // cases the host gave to the reference (no kernel ran)
  int64_t outputs = 0;            // output elements compared bit for bit
  int64_t mismatches = 0;         // of those, differing ones (and cases with a violation)
  nlohmann::json first_mismatch;  // {case, shape, data, index, expected, actual | violation}
  bool passed() const { return mismatches == 0; }
};
// Runs `v`'s kernel of `id` (output tile `tile`) on every case through run_gated and compares
// with the reference. A kernel that throws on a case rethrows naming the case.
GateSummary gate_battery(const KernelIdentity& id, const HalideVariant& v, schedules::Tile tile,
                         const GateOptions& o);

// "0x3f800000 (1)": an element's bits and its value.
std::string element_text(const Tensor& t, int64_t i);

}  // namespace mmtune
