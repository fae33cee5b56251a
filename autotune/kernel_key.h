// A kernel to compile: what it computes (its identity, runtime/host/kernel_identity.h), how (a
// schedule) and for which Halide target. The JIT cache, the tuner and the AOT databases key kernels
// by it.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "runtime/host/kernel_identity.h"
#include "schedules/schedule.h"
#include "schedules/target_info.h"

namespace mmtune {

// A schedule for a target: what the tuner searches and the databases store.
struct HalideVariant {
  // Absent: the defaults of the target family's template for the kernel's sum.
  std::optional<schedules::Schedule> schedule;
  std::string target = "host";  // "host" or a Halide target string
};

// The Halide target string `target` names ("host": this machine's, as Halide detects it);
// InvalidArgument for a string that is not a Halide target.
std::string resolve_target(const std::string& target);
// This machine's Halide target string ("x86-64-linux-avx2-...").
std::string host_target();
// Target facts of a variant's target ("host" resolved).
schedules::TargetInfo target_info_of(const HalideVariant& v);

struct KernelKey {
  KernelIdentity identity;
  schedules::Schedule schedule;
  // The generator parameters: the identity's and the schedule's.
  std::map<std::string, std::string> generator_params() const;
  std::string to_string()
      const;  // "mmtune_gemm A.type=float32 ... template=cpu_matmul tile_rows=6 ..."
};

// The Accumulator of each operator's kernels (its K sum: width and exactness).
schedules::Accumulator accumulator_of(const KernelIdentity& id);

// The kernel of `id` under `v` (its schedule, or the default one), validated: InvalidArgument
// naming the operator and the reason when the schedule's template does not fit the target or its
// knobs do not fit the sum, before anything is compiled.
KernelKey kernel_key(const KernelIdentity& id, const HalideVariant& v);

}  // namespace mmtune
