// Per-thread CPU time of this process from /proc.
#include "benchmarks/thread_usage.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace mmtune::bench {

std::map<int, uint64_t> thread_cpu_ns() {
  std::map<int, uint64_t> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    // schedstat: <ns on cpu> <ns waiting for a cpu> <timeslices>
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/schedstat");
    uint64_t ns = 0;
    if (in >> ns) out[std::stoi(e->d_name)] = ns;
  }
  closedir(dir);
  return out;
}

int busy_threads(const std::map<int, uint64_t>& before, const std::map<int, uint64_t>& after,
                 double share) {
  std::map<int, uint64_t> grew;
  uint64_t most = 0;
  for (const auto& [tid, ns] : after) {
    auto it = before.find(tid);
    const uint64_t d = ns - (it == before.end() ? 0 : std::min(ns, it->second));
    grew[tid] = d;
    most = std::max(most, d);
  }
  int busy = 0;
  for (const auto& [tid, d] : grew) {
    if (most > 0 && static_cast<double>(d) >= share * static_cast<double>(most)) ++busy;
  }
  return busy;
}

}  // namespace mmtune::bench
