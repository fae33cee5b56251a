// Generator parameters -> Schedule, and the dispatch to each template's schedule function.
#include "schedules/schedule_knobs.h"

#include <map>

#include "schedules/cpu/matmul_schedule.h"

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
  for (const auto& k : knobs_) {
    if (k) gp[k->name()] = k->value();
  }
  Schedule s;
  try {
    s = Schedule::from_generator_params(
        gp, template_.value().empty() ? default_template(info) : template_.value());
  } catch (const InvalidArgument& e) {
    _halide_user_error << e.what() << "\n";
  }
  if (auto why = s.validate(info, acc)) _halide_user_error << "schedule: " << *why << "\n";
  return s;
}

void ScheduleKnobs::apply(MatmulPipeline& p, const Halide::Target& t, Accumulator acc) const {
  const Schedule s = schedule(t, acc);
  // One overload per template.
  std::visit([&](const CpuMatmulParams& params) { schedule_cpu_matmul(p, params); }, s.params());
}

}  // namespace mmtune::schedules
