// Shared helpers of the runtime suites.
#include "tests/runtime/runtime_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "autotune/kernel_key.h"
#include "runtime/src/dispatch.h"
#include "schedules/schedule.h"

namespace mmtune::testing {
namespace {

// The runtime suites run once per level of the library (tests/CMakeLists.txt sets
// MMTUNE_MAX_KERNEL_TARGET); a level this CPU cannot run is not tested here: every test skips,
// saying why (the calls would only repeat a lower level's run).
class LevelEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* level = std::getenv("MMTUNE_MAX_KERNEL_TARGET");
    if (!level || !*level || std::string(level) == "none") return;
    for (const runtime::KernelLevel& l : runtime::kernel_levels()) {
      if (l.target == level && !l.used) GTEST_SKIP() << "level " << level << ": " << l.why_unused;
    }
  }
};

[[maybe_unused]] ::testing::Environment* const level_environment =
    ::testing::AddGlobalTestEnvironment(new LevelEnvironment);

}  // namespace

std::pair<int, int> tile_of(const runtime::KernelInfo& k) {
  const schedules::TargetInfo t = schedules::target_info(k.target);
  const schedules::Schedule s = schedules::Schedule::from_generator_params(k.schedule);
  const schedules::Tile tile =
      s.tile(t, accumulator_of(KernelIdentity{k.op, k.generator, k.identity}));
  return {tile.rows, tile.cols};
}

runtime::Bucket bucket_of(const std::string& name) {
  for (const runtime::KernelEntry* e : used_entries()) {
    if (name == e->name) return e->bucket;
  }
  ADD_FAILURE() << "no kernel " << name;
  return {};
}

std::vector<const runtime::KernelEntry*> used_entries() {
  std::vector<const runtime::KernelEntry*> entries;
  for (const runtime::UsedGroup& u : runtime::used_groups())
    entries.insert(entries.end(), u.group->entries.begin(), u.group->entries.end());
  return entries;
}

std::string no_kernel_prefix(const std::string& op) {
  return "no " + op + " kernel in this build (" + runtime::used_targets_text() + ") computes";
}

int64_t clamp_to(int64_t x, int64_t lo, int64_t hi) {
  return std::max(lo, hi < 0 ? x : std::min(x, hi));
}

}  // namespace mmtune::testing
