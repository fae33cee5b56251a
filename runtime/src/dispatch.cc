// The process's choice among the linked levels.
#include "runtime/src/dispatch.h"

#include <atomic>
#include <cstdlib>

#include "mmtune/mmtune.h"
#include "reference/error.h"
#include "runtime/host/cpu_features.h"
#include "runtime/host/thread_pool.h"

namespace mmtune::runtime {
namespace {

constexpr const char* kEnv = "MMTUNE_MAX_KERNEL_TARGET";

struct State {
  std::vector<Level> levels;
  // Index of the highest level allowed; levels.size() allows none.
  std::atomic<std::size_t> first{0};
  // Why MMTUNE_MAX_KERNEL_TARGET could not be applied (reported by every call that dispatches
  // until set_max_kernel_target replaces it).
  std::optional<std::string> env_error;
  std::atomic<bool> env_replaced{false};

  State() {
    const LinkedTables& linked = linked_tables();
    for (std::size_t i = 0; i < linked.size; ++i) {
      const KernelTable& t = linked.tables[i];
      levels.push_back({&t, cpu_cannot_run(t.target), group_by_identity(t)});
    }
    const char* env = std::getenv(kEnv);
    if (env && *env) {
      if (auto index = level_index(env)) {
        first = *index;
      } else {
        env_error = std::string(kEnv) + "='" + env + "' " + not_a_level();
      }
    }
  }

  // The index of `target` ("none": past the last level), or nullopt.
  std::optional<std::size_t> level_index(const std::string& target) const {
    if (target == "none") return levels.size();
    for (std::size_t i = 0; i < levels.size(); ++i) {
      if (target == levels[i].table->target) return i;
    }
    return std::nullopt;
  }

  std::string not_a_level() const {
    std::string text = "is not a kernel target of this build; expected one of:";
    for (const Level& l : levels) text += std::string(" ") + l.table->target;
    return text + ", none (the reference only) or empty (the best this CPU runs)";
  }
};

State& state() {
  static State s;
  return s;
}

}  // namespace

const std::vector<Level>& levels() { return state().levels; }

std::size_t allowed_level_or_invalid() {
  const State& s = state();
  if (s.env_error && !s.env_replaced.load(std::memory_order_relaxed)) return kInvalidLevel;
  return s.first.load(std::memory_order_relaxed);
}

std::size_t first_allowed_level() {
  const std::size_t level = allowed_level_or_invalid();
  if (level == kInvalidLevel) throw InvalidArgument("mmtune runtime: " + *state().env_error);
  return level;
}

std::vector<const IdentityGroup*> groups_by_level(
    const std::string& op, const std::map<std::string, std::string>& identity) {
  std::vector<const IdentityGroup*> groups;
  for (const Level& level : levels()) groups.push_back(find_group(level.groups, op, identity));
  return groups;
}

Selection select_linked(const std::string& op, const std::map<std::string, std::string>& identity,
                        int64_t m, int64_t n, int64_t k, bool explain,
                        const std::vector<const IdentityGroup*>* groups) {
  const std::vector<Level>& all = levels();
  Selection unrunnable;
  bool any_unrunnable = false;
  for (std::size_t i = first_allowed_level(); i < all.size(); ++i) {
    const Level& level = all[i];
    const IdentityGroup* g = groups ? (*groups)[i] : find_group(level.groups, op, identity);
    if (!g) continue;
    if (level.cannot_run) {
      if (explain && !any_unrunnable)
        unrunnable.reason =
            "kernel " + std::string(g->entries.front()->name) + " not run: " + *level.cannot_run;
      any_unrunnable = true;
      continue;
    }
    Selection s = select_in_group(*g, m, n, k, host::pool_threads(), explain);
    if (explain) s.reason += std::string(" (level ") + level.table->target + ")";
    return s;
  }
  if (any_unrunnable || !explain) return unrunnable;
  return {nullptr, no_kernel_reason(op, used_targets_text(), identity)};
}

std::vector<UsedGroup> used_groups() {
  const std::vector<Level>& all = levels();
  std::vector<UsedGroup> used;
  for (std::size_t i = first_allowed_level(); i < all.size(); ++i) {
    if (all[i].cannot_run) continue;
    for (const IdentityGroup& g : all[i].groups) {
      bool shadowed = false;
      for (const UsedGroup& u : used)
        shadowed |= u.group->op == g.op && u.group->identity == g.identity;
      if (!shadowed) used.push_back({&all[i], &g});
    }
  }
  return used;
}

std::string used_targets_text() {
  const std::vector<Level>& all = levels();
  std::string text;
  for (std::size_t i = first_allowed_level(); i < all.size(); ++i) {
    if (all[i].cannot_run) continue;
    if (!text.empty()) text += ", ";
    text += all[i].table->target;
  }
  return text.empty() ? "none" : text;
}

std::string set_max_kernel_target(const std::string& target) {
  State& s = state();
  std::optional<std::size_t> index =
      target.empty() ? std::optional<std::size_t>(0) : s.level_index(target);
  if (!index)
    invalid("mmtune::runtime::set_max_kernel_target", "target='", target, "' ", s.not_a_level());
  const std::size_t previous = s.first.exchange(*index);
  s.env_replaced = true;
  if (previous == 0) return "";
  return previous < s.levels.size() ? s.levels[previous].table->target : "none";
}

}  // namespace mmtune::runtime
