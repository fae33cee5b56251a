// Shared helpers of the runtime suites.
#include "tests/runtime/runtime_support.h"

#include <gtest/gtest.h>

#include <algorithm>

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

runtime::Bucket bucket_of(const std::string& name) {
  const runtime::KernelTable& t = runtime::linked_kernels();
  for (std::size_t i = 0; i < t.size; ++i) {
    if (name == t.entries[i].name) return t.entries[i].bucket;
  }
  ADD_FAILURE() << "no kernel " << name;
  return {};
}

int64_t clamp_to(int64_t x, int64_t lo, int64_t hi) {
  return std::max(lo, hi < 0 ? x : std::min(x, hi));
}

}  // namespace mmtune::testing
