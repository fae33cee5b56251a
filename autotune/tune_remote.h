// The tuner's worker for a target this machine cannot run (ARM64, Hexagon HVX): each job's
// schedules built with the target's toolchain into one kernel runner (autotune/cross_build.h),
// gated bit for bit on the target through the runner command (qemu by default, or a device over
// ssh / adb), and costed there:
//   - "qemu_instructions", the proxy when no device is at hand: the guest instructions one call of
//     the operator executes on the bucket's shape, counted by a qemu plugin
//     (targets/qemu/insn_count.c) between the runner's marks, with one thread. Deterministic:
//     the same kernel, shape and data give the same count, whatever the machine's load. It ranks
//     the work a schedule does (instructions per multiply-accumulate), not its time: cache misses,
//     latencies and the core's issue width are not in it. Its "rate" is operations per instruction.
//   - "device_time": the target's own clock around repeated calls on the device the runner
//     command reaches (samples until the median is stable, as the host's timing protocol).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autotune/tune_worker.h"

namespace mmtune::tune {

// The cost kinds, as records and tuned databases name them.
inline constexpr const char* kCostQemuInstructions = "qemu_instructions";
inline constexpr const char* kCostDeviceTime = "device_time";

// A record's cost kind: extra["cost"]["kind"], or "" for this machine's wall time.
std::string cost_kind(const Record& r);

// What a cost kind means, one sentence (reports and tuned databases say it beside the figures).
std::string cost_description(const std::string& kind);

// Runs a job whose target is not this machine's (job.cost, job.runner, job.work): one record per
// schedule, as evaluate() gives them; a proxy-costed record has rate = operations per instruction
// and extra["cost"] = {"kind", "instructions", "calls"}.
std::vector<Record> evaluate_remote(const Job& job,
                                    const std::function<void(const std::string&)>& phase);

}  // namespace mmtune::tune
