// Shared helpers of the runtime suites.
#include "tests/runtime/runtime_support.h"

#include "autotune/kernel_key.h"
#include "schedules/schedule.h"

namespace mmtune::testing {

std::pair<int, int> tile_of(const runtime::KernelInfo& k) {
  const schedules::TargetInfo t = schedules::target_info(runtime::kernel_target());
  const schedules::Schedule s = schedules::Schedule::from_generator_params(k.schedule);
  const schedules::Tile tile =
      s.tile(t, accumulator_of(KernelIdentity{k.op, k.generator, k.identity}));
  return {tile.rows, tile.cols};
}

}  // namespace mmtune::testing
