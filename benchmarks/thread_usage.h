// How many threads of this process did work during a measurement: the per-thread on-CPU time from
// /proc/self/task/*/schedstat, so that a benchmark can show that a library used the thread count it
// was given, independent of how busy the rest of the machine was.
#pragma once

#include <cstdint>
#include <map>

namespace mmtune::bench {

// Thread id -> nanoseconds on a CPU so far (empty where /proc has no schedstat).
std::map<int, uint64_t> thread_cpu_ns();

// Threads whose on-CPU time grew between the snapshots by at least `share` of the largest growth
// (the busiest thread, normally the caller's).
int busy_threads(const std::map<int, uint64_t>& before, const std::map<int, uint64_t>& after,
                 double share = 0.25);

}  // namespace mmtune::bench
