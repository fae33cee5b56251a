// The gate's guarded, poisoned output.
#include "autotune/gate.h"

#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "autotune/tune_inputs.h"
#include "reference/registry.h"

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
  r.kernel_seconds = run.kernel_seconds;
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

std::string element_text(const Tensor& t, int64_t i) {
  const std::size_t size = dtype_size(t.dtype);
  uint64_t bits = 0;
  std::memcpy(&bits, t.bytes.data() + i * size, size);
  std::ostringstream os;
  os << "0x" << std::hex << bits << std::dec << " (";
  if (is_float(t.dtype)) {
    os << float_at(t, i);
  } else {
    os << int_at(t, i);
  }
  os << ")";
  return os.str();
}

GateSummary gate_battery(const KernelIdentity& id, const HalideVariant& v, schedules::Tile tile,
                         const GateOptions& o) {
  using namespace tune;
  std::vector<GateCase> cases = gate_cases(id, tile, o.shape.at(0), o.shape.at(1), o.shape.at(2));
  if (o.full) {
    std::vector<GateCase> all;
    for (const GateCase& c : cases) {
      for (DataKind kind : data_kinds(id)) {
        GateCase x = c;
        x.kind = kind;
        all.push_back(x);
      }
    }
    cases = all;
  }
  if (o.bucket_only) {
    // The bucket's own shape only (gate_cases names those cases "bucket_...").
    std::vector<GateCase> bucket;
    for (const GateCase& c : cases) {
      if (c.name.rfind("bucket_", 0) == 0) bucket.push_back(c);
    }
    cases = bucket;
  }
  std::mt19937_64 rng(o.seed);
  GateSummary s;
  for (const GateCase& c : cases) {
    const OpCall call = make_call(id, c.m, c.n, c.k, c.kind, rng);
    const Tensor expected = run_reference(call.op, call.inputs, call.attrs);
    const GateResult g = run_gated(expected, [&](JitRun& run) {
      Tensor t;
      try {
        t = run_halide(call.op, call.inputs, call.attrs, v, &run);
      } catch (const std::exception& e) {
        // Which case the kernel failed on (a kernel that refuses shapes below its tiles, ...).
        throw std::runtime_error("case " + c.name + " (" + std::to_string(c.m) + "x" +
                                 std::to_string(c.n) + "x" + std::to_string(c.k) +
                                 "): " + e.what());
      }
      if (o.drop_tail && run.kernel_calls > 0 && !t.bytes.empty()) {
        // Tests only: a kernel that leaves its last element unwritten (what a schedule that drops
        // the tail would do): the element keeps the gate's poison.
        const std::size_t size = dtype_size(t.dtype);
        for (std::size_t b = t.bytes.size() - size; b < t.bytes.size(); ++b) {
          t.bytes[b] = static_cast<uint8_t>(~expected.bytes[b]);
          run.output[b] = t.bytes[b];
        }
      }
      return t;
    });
    if (g.kernel_calls == 0) {
      ++s.reference_cases;
      continue;
    }
    ++s.kernel_cases;
    s.outputs += static_cast<int64_t>(expected.numel());
    nlohmann::json m = {
        {"case", c.name}, {"shape", {c.m, c.n, c.k}}, {"data", data_kind_name(c.kind)}};
    int64_t wrong = 0;
    if (g.violation) {
      m["violation"] = *g.violation;
      wrong = 1;
    } else if (g.actual.dtype != expected.dtype || g.actual.shape != expected.shape ||
               g.actual.bytes.size() != expected.bytes.size()) {
      m["violation"] = "output dtype or shape differs from the reference's";
      wrong = 1;
    } else {
      const std::size_t size = dtype_size(expected.dtype);
      for (std::size_t i = 0; i < expected.bytes.size(); i += size) {
        if (std::memcmp(expected.bytes.data() + i, g.actual.bytes.data() + i, size) == 0) continue;
        const auto index = static_cast<int64_t>(i / size);
        if (wrong == 0) {
          m["index"] = index;
          m["expected"] = element_text(expected, index);
          m["actual"] = element_text(g.actual, index);
        }
        ++wrong;
        if (o.stop_at_first) break;
      }
    }
    if (wrong == 0) continue;
    s.mismatches += wrong;
    if (s.first_mismatch.is_null()) s.first_mismatch = m;
    if (o.stop_at_first) break;
  }
  return s;
}

}  // namespace mmtune
