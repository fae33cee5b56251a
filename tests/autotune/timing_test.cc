// The timing protocol's guard against other threads: a library's pool spin-waits after its call,
// and a sample timed while a worker spins shares the cores with it. time_interleaved lets the
// process go idle before each sample; these tests stand in a spinning thread for the pool.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

#include "autotune/blas.h"
#include "autotune/tune_timing.h"

namespace mmtune::tune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A thread that spins (always runnable) until stopped or `seconds` have passed.
class Spinner {
 public:
  explicit Spinner(double seconds)
      : thread_([this, seconds] {
          const auto t0 = Clock::now();
          started_.store(true);
          while (!stop_.load() && seconds_since(t0) < seconds) {
          }
          done_.store(true);
        }) {
    while (!started_.load()) std::this_thread::yield();
  }
  ~Spinner() {
    stop_.store(true);
    thread_.join();
  }
  bool done() const { return done_.load(); }
  void stop() { stop_.store(true); }

 private:
  std::atomic<bool> started_{false}, stop_{false}, done_{false};
  std::thread thread_;
};

TEST(Timing, WaitsUntilASpinningThreadStops) {
  Spinner s(0.1);
  EXPECT_FALSE(s.done());
  EXPECT_TRUE(wait_for_other_threads_to_idle(10.0));
  EXPECT_TRUE(s.done());  // it went quiet only once the spinner had finished
}

TEST(Timing, GivesUpOnAThreadThatKeepsRunning) {
  Spinner s(60.0);
  const auto t0 = Clock::now();
  EXPECT_FALSE(wait_for_other_threads_to_idle(0.05));
  EXPECT_LT(seconds_since(t0), 30.0);  // returned at its bound, not when the spinner would stop
  EXPECT_FALSE(s.done());
  s.stop();
}

TEST(Timing, NoSampleStartsWhileAnotherImplementationsWorkerSpins) {
  // Implementation 0 leaves a worker spinning for 20 ms after each of its calls (as OpenBLAS's
  // and OpenMP's pools do); implementation 1 records whether one was still spinning when it ran.
  std::vector<std::unique_ptr<Spinner>> workers;
  int calls_of_1 = 0, while_spinning = 0;
  MeasureOptions o;
  o.min_samples = 3;
  o.max_samples = 3;
  o.min_sample_s = 0;
  const auto samples = time_interleaved(
      2, 1,
      [&](std::size_t i, std::size_t) {
        if (i == 0) {
          if (workers.empty() || workers.back()->done())
            workers.push_back(std::make_unique<Spinner>(0.02));
          return;
        }
        ++calls_of_1;
        for (const auto& w : workers) while_spinning += w->done() ? 0 : 1;
      },
      o);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[1].size(), 3u);
  EXPECT_GT(calls_of_1, 0);
  EXPECT_GT(workers.size(), 0u);
  EXPECT_EQ(while_spinning, 0);
}

// A call that reports its own seconds (the JIT's kernel inside a host side that costs more) is
// sampled by what it reports; one that reports < 0 by the wall clock.
TEST(Timing, ReportedSecondsReplaceTheWallClockWhereEveryCallGivesThem) {
  MeasureOptions o;
  o.min_sample_s = 0.002;
  o.min_samples = 3;
  o.max_samples = 3;
  auto busy = [](double seconds) {
    const auto t0 = Clock::now();
    while (seconds_since(t0) < seconds) {
    }
  };
  const auto samples = time_interleaved_reported(
      2, 1,
      [&](std::size_t i, std::size_t) {
        busy(100e-6);  // every call takes 100 us of wall time
        return i == 0 ? 1e-6 : -1.0;
      },
      o);
  ASSERT_EQ(samples.size(), 2u);
  ASSERT_EQ(samples[0].size(), 3u);
  ASSERT_EQ(samples[1].size(), 3u);
  for (double s : samples[0]) EXPECT_DOUBLE_EQ(s, 1e-6);
  for (double s : samples[1]) EXPECT_GE(s, 100e-6);
}

// At more than one thread each sample starts with an untimed call (it wakes the implementation's
// pool, asleep after the wait for idle threads): a first call after around(i, true) that takes
// 30 ms is left out of the samples at 2 threads and makes every sample at 1 thread.
TEST(Timing, AtTwoThreadsEachSampleStartsWithAnUntimedCall) {
  for (const int threads : {1, 2}) {
    MeasureOptions o;
    o.min_sample_s = 0.002;
    o.min_samples = 3;
    o.max_samples = 3;
    o.threads = threads;
    bool first = false;  // the next call is the first since around(0, true)
    int calls = 0;
    const auto samples = time_interleaved(
        1, 1,
        [&](std::size_t, std::size_t) {
          ++calls;
          const double seconds = first ? 0.03 : 50e-6;
          first = false;
          const auto t0 = Clock::now();
          while (seconds_since(t0) < seconds) {
          }
        },
        o, [&](std::size_t, bool before) { first = before; });
    ASSERT_EQ(samples.size(), 1u);
    ASSERT_EQ(samples[0].size(), 3u) << threads << " threads";
    if (threads == 1) {
      for (double s : samples[0]) EXPECT_GE(s, 0.03) << "the slow first call is not timed";
    } else {
      EXPECT_LT(median_of(samples[0]), 0.01) << "the slow first call is timed at 2 threads";
    }
    EXPECT_GT(calls, 3);
  }
}

// The warm-up makes one call on every copy before any sample: a call that is slow the first time
// on each copy (the runtime prepares a prepacked B's call once per B) is not timed. Here a first
// call takes 4 ms and the others 50 us, over 40 copies: a warm-up of 20 ms alone leaves about 35
// first calls to the samples.
TEST(Timing, TheWarmUpCallsEveryCopyBeforeTheSamples) {
  MeasureOptions o;
  o.min_sample_s = 0.001;
  o.min_samples = 10;
  o.max_samples = 10;
  const std::size_t copies = 40;
  std::vector<bool> seen(copies, false);
  const auto samples = time_interleaved(
      1, copies,
      [&](std::size_t, std::size_t c) {
        const double seconds = seen.at(c) ? 50e-6 : 0.004;
        seen[c] = true;
        const auto t0 = Clock::now();
        while (seconds_since(t0) < seconds) {
        }
      },
      o);
  ASSERT_EQ(samples.size(), 1u);
  ASSERT_EQ(samples[0].size(), 10u);
  for (double s : samples[0]) EXPECT_LT(s, 0.001) << "a first call on a copy was timed";
}

int threads_of_this_process() {
  return static_cast<int>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                        std::filesystem::directory_iterator{}));
}

// The bench ends OpenBLAS's workers after each of its samples (their spin-wait otherwise outlasts
// the gap to its next sample and takes a core from every other implementation's): they end, the
// next threaded call starts them again and computes the same sums.
TEST(Timing, OpenBlasWorkersEndAndStartAgain) {
  if (std::thread::hardware_concurrency() < 2)
    GTEST_SKIP() << "one CPU: OpenBLAS starts no workers";
  const blas::Threads saved = blas::threads();
  blas::set_threads(2);
  const int64_t n = 256;  // large enough for OpenBLAS to split it over its threads
  std::vector<float> a(n * n), b(n * n), c1(n * n), c2(n * n);
  for (int64_t i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>((i * 7) % 13) - 6.0f;
    b[i] = static_cast<float>((i * 5) % 11) * 0.25f;
  }
  blas::openblas_sgemm(n, n, n, a.data(), b.data(), c1.data());
  const int with_workers = threads_of_this_process();
  blas::openblas_end_workers();
  const int without = threads_of_this_process();
  EXPECT_LT(without, with_workers);
  blas::openblas_sgemm(n, n, n, a.data(), b.data(), c2.data());
  EXPECT_EQ(threads_of_this_process(), with_workers);
  EXPECT_EQ(c1, c2);
  // The sums are integers and multiples of 1/4 far inside float32's exact range: any order gives
  // these values; one element computed here to check that the call ran at all.
  double want = 0;
  for (int64_t k = 0; k < n; ++k) want += static_cast<double>(a[3 * n + k]) * b[k * n + 5];
  EXPECT_EQ(c2[3 * n + 5], static_cast<float>(want));
  blas::set_threads(saved.openblas);
}

}  // namespace
}  // namespace mmtune::tune
