// The tuner's timing protocol, one for everything it times (search candidates and finalists in the
// worker, BLAS baselines in the tuner, autotune/tune_baselines.h): the same data, inputs rotated
// through more than the last-level cache, a warm-up, samples until the median is stable, and one
// timer at a time (a lock file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autotune/tune_inputs.h"

namespace mmtune::tune {

struct MeasureOptions {
  double min_sample_s = 0.002;  // each sample repeats calls for at least this long
  int min_samples = 5;
  int max_samples = 30;
  double max_time_s = 2.0;  // per schedule, warm-up excluded
  double spread = 0.03;     // stop once (p75 - p25) / median is below this
  int threads = 1;          // threads of the timed code (HL_NUM_THREADS of the child)
};

// Bytes of the last-level cache (sysfs), or 32 MiB when unknown.
int64_t last_level_cache_bytes();

// The calls an (M, N, K) shape of `id` is timed on: copies of one call with random data drawn
// from `seed`, enough of them (at most 64) to span twice the last-level cache, so that each call
// finds its operands cold (weights streamed, as in inference). Everything timed for a bucket is
// timed on the same data.
std::vector<OpCall> timing_calls(const KernelIdentity& id, int64_t m, int64_t n, int64_t k,
                                 uint64_t seed);
// The first of those calls alone (the same data): what a target's runner is costed on
// (autotune/tune_remote.h), where the host's cache is not the target's.
OpCall timing_call(const KernelIdentity& id, int64_t m, int64_t n, int64_t k, uint64_t seed);

// Waits until no other thread of this process is running or runnable (state R in
// /proc/self/task/*/stat), at most `max_seconds`: the libraries' thread pools spin-wait after a
// call (OpenBLAS's workers for about 2^28 cycles, OpenMP's for GOMP_SPINCOUNT pauses), and a worker
// that spins takes a core from whatever is timed next. Returns whether the process went quiet.
bool wait_for_other_threads_to_idle(double max_seconds);

// Times `count` implementations interleaved (one sample of each in turn, so that drift hits all
// alike): `call(i, c)` runs implementation i once on input copy c (of `copies`, taken in rotation).
// A warm-up of at least 3 calls and 20 ms each and one pass over the copies (where that takes
// under a second), then samples of repeated calls lasting at least
// min_sample_s, until every median is stable (interquartile range under `spread` of it) or has
// max_samples, or max_time_s per implementation has passed with 3 samples each. Returns the
// samples (seconds per call) of each implementation.
// Before the warm-up and each sample, the other threads of the process are let go idle first
// (wait_for_other_threads_to_idle, 0.5 s at most; once a wait runs out, no more waits in this
// call): otherwise one library's spinning workers share the cores with the next implementation's
// sample, and at 2 threads on 2 cores that sample runs as if on one.
// At more than one thread (o.threads), one untimed call of the implementation starts each
// sample, which wakes its pool's workers. `around(i, true)` and `around(i, false)`, where given,
// run untimed before and after the warm-up and each sample of implementation i: a thread pool whose
// workers spin-wait between calls wakes them before (so a sample does not start with the
// scheduler's latency) and sends them to sleep after (so they do not spin through the next
// implementation's sample).
std::vector<std::vector<double>> time_interleaved(
    std::size_t count, std::size_t copies,
    const std::function<void(std::size_t, std::size_t)>& call, const MeasureOptions& o,
    const std::function<void(std::size_t, bool)>& around = {});

// The same protocol, where each call reports the seconds that count (>= 0: e.g. the compiled
// kernel's time inside a call whose host side is the JIT's own, not what users run) and a
// sample is their mean; a call that reports < 0 makes its sample wall time, as above. Samples
// still last at least min_sample_s of wall time.
std::vector<std::vector<double>> time_interleaved_reported(
    std::size_t count, std::size_t copies,
    const std::function<double(std::size_t, std::size_t)>& call, const MeasureOptions& o,
    const std::function<void(std::size_t, bool)>& around = {});

double median_of(std::vector<double> v);

// Holds an exclusive lock on `path` while alive: the timer's turn (no lock when `path` is empty).
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace mmtune::tune
