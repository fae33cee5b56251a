// Shared helpers of the runtime suites.
#include "tests/runtime/runtime_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "autotune/kernel_key.h"
#include "runtime/host/thread_pool.h"
#include "runtime/src/dispatch.h"
#include "schedules/schedule.h"

namespace mmtune::testing {
namespace {

// The runtime suites run once per level of the library (tests/CMakeLists.txt sets
// MMTUNE_MAX_KERNEL_TARGET), after a run without it (the best level this CPU runs). Every test
// skips, saying why, where the capped run would only repeat another: a level this CPU cannot run
// (its calls take a lower level's kernels), and the best level this CPU runs (every level above it
// is one it cannot run, so the uncapped run called the same kernels).
class LevelEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* level = std::getenv("MMTUNE_MAX_KERNEL_TARGET");
    if (!level || !*level || std::string(level) == "none") return;
    for (const runtime::KernelLevel& l : runtime::kernel_levels()) {
      if (l.target == level && !l.used) GTEST_SKIP() << "level " << level << ": " << l.why_unused;
    }
    for (const runtime::Level& l : runtime::levels()) {
      if (std::string_view(l.table->target) == level) {
        GTEST_SKIP() << "level " << level
                     << " is the best this CPU runs: the run without MMTUNE_MAX_KERNEL_TARGET "
                        "called the same kernels";
      }
      if (!l.cannot_run) return;  // a higher level runs here: this cap changes the kernels
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

BucketThreads::BucketThreads(const runtime::Bucket& bucket) {
  const int now = host::pool_threads();
  const auto wanted =
      static_cast<int>(clamp_to(now, std::max<int64_t>(bucket.threads_min, 1), bucket.threads_max));
  if (wanted != now) moved_.emplace(wanted);
}

int64_t clamp_to(int64_t x, int64_t lo, int64_t hi) {
  return std::max(lo, hi < 0 ? x : std::min(x, hi));
}

std::vector<tune::MatmulShape> shapes_in_bucket(const std::vector<tune::MatmulShape>& shapes,
                                                const runtime::Bucket& bucket, int64_t k_floor) {
  std::vector<tune::MatmulShape> out;
  for (const tune::MatmulShape& s : shapes) {
    const tune::MatmulShape moved{
        s.category, clamp_to(s.m, std::max<int64_t>(bucket.m_min, 1), bucket.m_max),
        clamp_to(s.n, std::max<int64_t>(bucket.n_min, 1), bucket.n_max),
        clamp_to(s.k, std::max<int64_t>(bucket.k_min, k_floor), bucket.k_max)};
    const bool seen = std::any_of(out.begin(), out.end(), [&](const tune::MatmulShape& o) {
      return o.m == moved.m && o.n == moved.n && o.k == moved.k;
    });
    if (!seen) out.push_back(moved);
  }
  return out;
}

}  // namespace mmtune::testing
