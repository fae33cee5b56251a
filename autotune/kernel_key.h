// A kernel to compile: what it computes (its identity, runtime/host/kernel_identity.h), how (a
// schedule) and for which Halide target. The JIT cache, the tuner and the AOT databases key kernels
// by it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "runtime/host/kernel_identity.h"
#include "schedules/schedule.h"
#include "schedules/target_info.h"

namespace mmtune {

// One of Halide's own autoschedulers in place of a schedule template: the generator's algorithm
// (built for the template's default layout) as it is, scheduled by the named autoscheduler for the
// given shape (the tuner's baselines, autotune/tune_worker.h).
struct Autoschedule {
  std::string name;             // jit::autoschedulers(): "Adams2019", "Mullapudi2016", "Li2018"
  int64_t m = 0, n = 0, k = 0;  // the shape it optimizes for (its estimates)
  int parallelism = 1;          // the threads the kernel runs on
};

// A schedule for a target: what the tuner searches and the databases store.
struct HalideVariant {
  // Absent: the defaults of the target family's template for the kernel's sum.
  std::optional<schedules::Schedule> schedule;
  std::string target = "host";  // "host" or a Halide target string
  // Present: an autoscheduler schedules the kernel (`schedule` must be absent).
  std::optional<Autoschedule> autoschedule = std::nullopt;
  // B prepacked on the host for the kernel's layout (runtime/host/packed_b.h) and read by the
  // generator's prepacked_b kernel (Gemm, QGemm; QLinearMatMul with a 2-D b), as the runtime's
  // prepack_b calls do.
  bool prepacked_b = false;
  // With prepacked_b: set, B is packed once per B and layout and reused by the calls after (the
  // tuner's timing, which times the call of a prepacked B, not its packing); absent, every call
  // packs its B (the gate: each case's B is new).
  std::shared_ptr<struct PanelCache> panel_cache = nullptr;
  // Set: the kernel runs there (a runner on another target, autotune/kernel_executor.h), built
  // for `target` beforehand; the JIT compiles nothing and this CPU need not run `target`.
  std::shared_ptr<class KernelExecutor> executor = nullptr;
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
  // The template's schedule; under an autoscheduler, the default one whose layout the algorithm is
  // built for (its tile sizes the gate's shapes).
  schedules::Schedule schedule;
  std::optional<Autoschedule> autoschedule;
  // The generator parameters: the identity's and the schedule's; under an autoscheduler the
  // identity's and the estimates (estimate_m, estimate_n, estimate_k).
  std::map<std::string, std::string> generator_params() const;
  // "mmtune_gemm A.type=float32 ... template=cpu_matmul tile_rows=6 ..."; under an autoscheduler
  // "mmtune_gemm A.type=float32 ... estimate_m=16 ... autoscheduler=Adams2019 parallelism=1".
  std::string to_string() const;
};

// The Accumulator of each operator's kernels (its K sum: width and exactness).
schedules::Accumulator accumulator_of(const KernelIdentity& id);

// The kernel of `id` under `v` (its schedule, or the default one), validated: InvalidArgument
// naming the operator and the reason when the schedule's template does not fit the target or its
// knobs do not fit the sum, before anything is compiled. Under an autoscheduler: InvalidArgument
// for a schedule given too, an estimate below 1 or a parallelism below 1.
KernelKey kernel_key(const KernelIdentity& id, const HalideVariant& v);

}  // namespace mmtune
