// Which level of the linked kernels a process uses. The build links one table per target level
// (e.g. AVX2 and SSE4.1), best first; once per process the CPU is checked against every level's
// target and each table's identities are parsed. A call then takes, from the highest level
// allowed (MMTUNE_MAX_KERNEL_TARGET or set_max_kernel_target, else the best), the first level this
// CPU runs that has a kernel of the call's identity; with none, the reference computes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/src/kernel_table.h"

namespace mmtune::runtime {

struct Level {
  const KernelTable* table;
  std::optional<std::string> cannot_run;  // why this CPU cannot run the level's kernels
  std::vector<IdentityGroup> groups;
};

// Every linked level, best first (parsed and checked against the CPU once).
const std::vector<Level>& levels();

// The index of the highest level calls may use (levels().size(): none, the reference only).
// Throws InvalidArgument when MMTUNE_MAX_KERNEL_TARGET names no level of this build.
std::size_t first_allowed_level();

// first_allowed_level() without the exception: kInvalidLevel where it would throw. (For what a
// call remembers of its dispatch: a remembered choice is valid while this is unchanged.)
constexpr std::size_t kInvalidLevel = static_cast<std::size_t>(-1);
std::size_t allowed_level_or_invalid();

// The group of (op, identity) at each level of levels() (nullptr where it has none): found once,
// for calls that repeat an identity (a PackedB's).
std::vector<const IdentityGroup*> groups_by_level(
    const std::string& op, const std::map<std::string, std::string>& identity);

// The kernel the levels from first_allowed_level() down choose for (op, identity, m, n, k) on the
// pool's thread count now (host::pool_threads()); the reason only when `explain`. `groups`, where
// given, is groups_by_level(op, identity).
Selection select_linked(const std::string& op, const std::map<std::string, std::string>& identity,
                        int64_t m, int64_t n, int64_t k, bool explain = true,
                        const std::vector<const IdentityGroup*>* groups = nullptr);

// The identities calls can run now, each at the highest used level (allowed, runnable here) that
// has it, in level then table order.
struct UsedGroup {
  const Level* level;
  const IdentityGroup* group;
};
std::vector<UsedGroup> used_groups();

// The targets of the levels calls use (allowed and runnable here), best first, ", "-joined;
// "none" when there are none.
std::string used_targets_text();

}  // namespace mmtune::runtime
