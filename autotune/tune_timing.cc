// The timing protocol: rotated inputs, warm-up, samples until stable, the timer's lock.
#include "autotune/tune_timing.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>

namespace mmtune::tune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v[static_cast<std::size_t>(std::lround(q * static_cast<double>(v.size() - 1)))];
}

bool stable(const std::vector<double>& s, const MeasureOptions& o) {
  if (static_cast<int>(s.size()) < o.min_samples) return false;
  const double med = median_of(s);
  return med > 0 && (quantile(s, 0.75) - quantile(s, 0.25)) / med < o.spread;
}

// Whether a thread of this process other than the caller is running or runnable.
bool other_thread_running() {
  const std::string self = std::to_string(gettid());
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return false;
  bool running = false;
  while (const dirent* e = readdir(dir)) {
    const std::string tid = e->d_name;
    if (tid == "." || tid == ".." || tid == self) continue;
    std::ifstream in("/proc/self/task/" + tid + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;  // the thread has exited
    // "tid (comm) S ...": the state follows the last ')' (comm may hold anything).
    const std::size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') {
      running = true;
      break;
    }
  }
  closedir(dir);
  return running;
}

}  // namespace

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int64_t last_level_cache_bytes() {
  int64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::string text;
    if (!(f >> text) || text.empty()) continue;
    int64_t v = std::atoll(text.c_str());
    if (text.back() == 'K') v <<= 10;
    if (text.back() == 'M') v <<= 20;
    best = std::max(best, v);
  }
  return best > 0 ? best : int64_t{32} << 20;
}

OpCall timing_call(const KernelIdentity& id, int64_t m, int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  return make_call(id, m, n, k, DataKind::kRandom, rng);
}

std::vector<OpCall> timing_calls(const KernelIdentity& id, int64_t m, int64_t n, int64_t k,
                                 uint64_t seed) {
  std::vector<OpCall> copies{timing_call(id, m, n, k, seed)};
  int64_t bytes = 0;
  for (const auto& [name, t] : copies[0].inputs) bytes += static_cast<int64_t>(t.bytes.size());
  const int64_t want =
      std::min<int64_t>(64, (2 * last_level_cache_bytes()) / std::max<int64_t>(bytes, 1) + 1);
  while (static_cast<int64_t>(copies.size()) < want) copies.push_back(copies[0]);
  return copies;
}

bool wait_for_other_threads_to_idle(double max_seconds) {
  const auto t0 = Clock::now();
  while (other_thread_running()) {
    if (seconds_since(t0) >= max_seconds) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

std::vector<std::vector<double>> time_interleaved(
    std::size_t count, std::size_t copies,
    const std::function<void(std::size_t, std::size_t)>& call, const MeasureOptions& o,
    const std::function<void(std::size_t, bool)>& around) {
  return time_interleaved_reported(
      count, copies,
      [&](std::size_t i, std::size_t c) {
        call(i, c);
        return -1.0;
      },
      o, around);
}

std::vector<std::vector<double>> time_interleaved_reported(
    std::size_t count, std::size_t copies,
    const std::function<double(std::size_t, std::size_t)>& call, const MeasureOptions& o,
    const std::function<void(std::size_t, bool)>& around) {
  std::vector<std::vector<double>> samples(count);
  std::vector<std::size_t> next(count, 0);
  copies = std::max<std::size_t>(copies, 1);
  bool quiet = true;  // false once a wait has run out: something else keeps running
  auto settle = [&] {
    if (quiet) quiet = wait_for_other_threads_to_idle(0.5);
  };
  // Warm-up: each implementation for a few calls, at least 20 ms, and once over every copy (within
  // a second): a first call on a copy can do work the next ones do not (the runtime prepares a
  // prepacked B's call once per B; pages touched the first time). With 20 ms only, the first
  // thread count's samples of the runtime's prepacked calls still made those first calls: 512^3
  // float32 at 1 thread then ran 118-122 GFLOP/s, 168 after a pass over the copies.
  for (std::size_t i = 0; i < count; ++i) {
    settle();
    if (around) around(i, true);
    const auto t0 = Clock::now();
    for (std::size_t c = 0;
         c < 3 || seconds_since(t0) < 0.02 || (c < copies && seconds_since(t0) < 1.0); ++c)
      call(i, next[i]++ % copies);
    if (around) around(i, false);
  }
  const auto start = Clock::now();
  for (;;) {
    bool done = true;
    for (std::size_t i = 0; i < count; ++i) {
      auto& s = samples[i];
      if (stable(s, o) || static_cast<int>(s.size()) >= o.max_samples) continue;
      done = false;
      settle();
      if (around) around(i, true);
      // At more than one thread, one untimed call first: after the wait above the
      // implementation's pool (mmtune's, OpenMP's, pthreadpool's) has its workers asleep, and a
      // sample's first call would pay their wake-up, which calls in a row do not.
      if (o.threads > 1) call(i, next[i]++ % copies);
      int calls = 0;
      double reported = 0;
      bool all_reported = true;
      const auto t0 = Clock::now();
      do {
        const double r = call(i, next[i]++ % copies);
        all_reported &= r >= 0;
        reported += r;
        ++calls;
      } while (seconds_since(t0) < o.min_sample_s);
      s.push_back((all_reported ? reported : seconds_since(t0)) / calls);
      if (around) around(i, false);
    }
    if (done) break;
    const double budget = o.max_time_s * static_cast<double>(count);
    if (seconds_since(start) > budget) {
      bool enough = true;
      for (const auto& s : samples) enough &= static_cast<int>(s.size()) >= 3;
      if (enough) break;
    }
  }
  return samples;
}

FileLock::FileLock(const std::string& path) {
  if (path.empty()) return;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ >= 0) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace mmtune::tune
