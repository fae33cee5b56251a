// Generator parameters -> Schedule, and the dispatch to each template's schedule function.
#include "schedules/schedule_knobs.h"

#include <map>
#include <type_traits>

#include "schedules/cpu/amx_jam.h"
#include "schedules/cpu/matmul_schedule.h"
#include "schedules/cuda/matmul_schedule.h"

namespace mmtune::schedules {

TargetInfo target_info(const Halide::Target& t) { return target_info(t.to_string()); }

ScheduleKnobs::ScheduleKnobs() {
  const auto& names = all_knob_names();
  MMTUNE_CHECK(names.size() <= kMaxKnobs, names.size() << " knobs; raise ScheduleKnobs::kMaxKnobs");
  for (std::size_t k = 0; k < names.size(); ++k) knobs_[k].emplace(names[k], "");
}

Schedule ScheduleKnobs::schedule(const Halide::Target& t, Accumulator acc) const {
  const TargetInfo info = target_info(t);
  std::map<std::string, std::string> gp{{"template", template_.value()}};
  bool any_knob = false;
  for (const auto& k : knobs_) {
    if (k) gp[k->name()] = k->value();
    any_knob |= k && !k->value().empty();
  }
  Schedule s;
  try {
    // No knob given: the template's defaults for this target and sum (fitted to its registers);
    // otherwise the knobs given, the table's defaults for the rest.
    if (!any_knob && template_.value().empty()) {
      s = default_schedule(info, acc);
    } else {
      const std::string name =
          template_.value().empty() ? default_template(info) : template_.value();
      s = Schedule::from_generator_params(gp, name);
    }
  } catch (const InvalidArgument& e) {
    _halide_user_error << e.what() << "\n";
  }
  if (auto why = s.validate(info, acc)) _halide_user_error << "schedule: " << *why << "\n";
  return s;
}

void ScheduleKnobs::apply(MatmulPipeline& p, const Halide::Target& t, Accumulator acc,
                          Halide::Pipeline pipeline) const {
  const Schedule s = schedule(t, acc);
  // One schedule function per template: cpu_matmul's register-tiled schedule serves arm_matmul and
  // hvx_matmul too; cuda_matmul has its own.
  std::visit(
      [&](const auto& params) {
        using P = std::decay_t<decltype(params)>;
        if constexpr (std::is_same_v<P, HvxMatmulParams>) {
          schedule_cpu_matmul(p, params, params.vector_epilogue);
        } else if constexpr (std::is_same_v<P, CudaMatmulParams>) {
          schedule_cuda_matmul(p, params, acc);
        } else {
          schedule_cpu_matmul(p, params);
          if constexpr (std::is_same_v<P, CpuMatmulParams>) {
            // amx_jam 2: two tiles of the innermost loop over tiles; 4: two by two.
            if (params.amx && params.amx_jam > 1) {
              pipeline.add_custom_lowering_pass(
                  new AmxJam(params.amx_jam == 4 ? std::vector<int>{2, 2} : std::vector<int>{2}));
            }
          }
        }
      },
      s.params());
}

ScheduleKnobs::Estimates ScheduleKnobs::autoschedule(MatmulPipeline& p) const {
  const Estimates e{estimate_m_.value(), estimate_n_.value(), estimate_k_.value()};
  if (e.m < 1 || e.n < 1 || e.k < 1) {
    _halide_user_error << "an autoscheduler needs the shape it optimizes for: the generator "
                          "parameters estimate_m, estimate_n and estimate_k (given: "
                       << e.m << ", " << e.n << ", " << e.k << ")\n";
  }
  p.out.output_buffer().dim(0).set_min(0).dim(1).set_min(0);
  p.out.set_estimates({{0, e.n}, {0, e.m}});
  return e;
}

}  // namespace mmtune::schedules
