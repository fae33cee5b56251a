// The schedule as a generator holds it: Halide GeneratorParams for "template" and for every knob of
// every template (string-valued; empty = the template's default), read back as a Schedule. A
// generator declares one ScheduleKnobs member, asks it for the layout in generate() and applies it
// in schedule(); it never names a template. Under one of Halide's autoschedulers (the tuner's
// baselines) the generator calls autoschedule() instead of apply(): no template schedules it.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "Halide.h"
#include "schedules/matmul_layout.h"
#include "schedules/matmul_pipeline.h"
#include "schedules/schedule.h"

namespace mmtune::schedules {

// TargetInfo of a Halide target.
TargetInfo target_info(const Halide::Target& t);

class ScheduleKnobs {
 public:
  ScheduleKnobs();

  // The schedule the generator parameters name (the target family's default template when
  // "template" is empty; its defaults for the target and sum when no knob is given). A schedule
  // that does not fit the target or the sum is a Halide user error naming the reason, raised
  // before anything is compiled.
  Schedule schedule(const Halide::Target& t, Accumulator acc) const;
  MatmulLayout layout(const Halide::Target& t, Accumulator acc) const {
    return schedule(t, acc).layout(target_info(t), acc);
  }

  // Schedules `p` (built for layout(t, acc)) with the template's schedule function, and adds the
  // lowering passes the schedule asks for to `pipeline` (the generator's, get_pipeline()).
  void apply(MatmulPipeline& p, const Halide::Target& t, Accumulator acc,
             Halide::Pipeline pipeline) const;

  // The shape an autoscheduler optimizes for: the generator parameters estimate_m, estimate_n and
  // estimate_k (a Halide user error when one is missing).
  struct Estimates {
    int m = 0, n = 0, k = 0;
  };
  // Instead of apply() when the generator is compiled under an autoscheduler: the output's
  // estimates (N x M) and its origin (0, 0), which every call has and apply() declares too. The
  // generator sets its inputs' estimates from the returned shape; the algorithm is untouched.
  Estimates autoschedule(MatmulPipeline& p) const;

 private:
  static constexpr std::size_t kMaxKnobs = 48;
  Halide::GeneratorParam<std::string> template_{"template", ""};
  // Halide finds GeneratorParams inside the generator object: these are constructed in place.
  std::array<std::optional<Halide::GeneratorParam<std::string>>, kMaxKnobs> knobs_;
  Halide::GeneratorParam<int> estimate_m_{"estimate_m", 0, 0, 1 << 30};
  Halide::GeneratorParam<int> estimate_n_{"estimate_n", 0, 0, 1 << 30};
  Halide::GeneratorParam<int> estimate_k_{"estimate_k", 0, 0, 1 << 30};
};

}  // namespace mmtune::schedules
