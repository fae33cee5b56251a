// TargetInfo of a Halide target.
#include "generators/cpu_knobs.h"

namespace mmtune::gen {

schedules::TargetInfo target_info_of(const Halide::Target& t) { return schedules::target_info(t.to_string()); }

}  // namespace mmtune::gen
