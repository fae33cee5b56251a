// The gate's guarded, poisoned output.
#include "autotune/gate.h"

#include <cstring>
#include <sstream>
#include <vector>

namespace mmtune {
namespace {

// A fixed pattern no result needs to avoid: the guards are compared with it byte for byte.
uint8_t guard_byte(std::size_t i) { return static_cast<uint8_t>(0xA5 ^ (i * 0x3B)); }

}  // namespace

GateResult run_gated(const Tensor& expected, const std::function<Tensor(JitRun&)>& call) {
  const std::size_t n = expected.bytes.size();
  std::vector<uint8_t> buffer(kGuardBytes + n + kGuardBytes);
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    buffer[i] = guard_byte(i);
    buffer[kGuardBytes + n + i] = guard_byte(kGuardBytes + i);
  }
  // Every output byte starts as the complement of the expected one: an element left unwritten
  // differs from the reference in every bit.
  for (std::size_t i = 0; i < n; ++i)
    buffer[kGuardBytes + i] = static_cast<uint8_t>(~expected.bytes[i]);

  JitRun run;
  run.output = buffer.data() + kGuardBytes;
  run.output_bytes = n;
  GateResult r;
  r.actual = call(run);
  r.kernel_calls = run.kernel_calls;
  std::ostringstream why;
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    if (buffer[kGuardBytes - 1 - i] != guard_byte(kGuardBytes - 1 - i)) {
      why << "the kernel wrote " << (i + 1) << " byte(s) before its output (guard region)";
      break;
    }
    if (buffer[kGuardBytes + n + i] != guard_byte(kGuardBytes + i)) {
      why << "the kernel wrote " << (i + 1) << " byte(s) past the end of its output (guard region)";
      break;
    }
  }
  if (why.tellp() == 0 && r.kernel_calls > 0 &&
      (r.actual.bytes.size() != n || std::memcmp(r.actual.bytes.data(), run.output, n) != 0)) {
    why << "the returned output is not what the kernel left in its placed output";
  }
  if (why.tellp() > 0) r.violation = why.str();
  return r;
}

}  // namespace mmtune
