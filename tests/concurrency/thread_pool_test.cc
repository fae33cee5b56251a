// The kernels' thread pool (runtime/host/thread_pool.h): every task of a loop runs exactly once,
// loops run on more than one thread, errors stop a loop, nested and concurrent loops complete, the
// thread count is what was set, and the runtime's and the JIT's kernels run their loops on it. The
// `tsan` preset builds this suite with ThreadSanitizer.
#include "runtime/host/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "autotune/halide_ops.h"
#include "mmtune/mmtune.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using host::pool_do_par_for;

// Counts how often each index ran.
struct Counts {
  int min = 0;
  std::vector<std::atomic<int>> runs;
  Counts(int min, int extent) : min(min), runs(static_cast<size_t>(extent)) {}
};

int count_task(void* uc, int i, uint8_t* closure) {
  auto* c = static_cast<Counts*>(uc);
  c->runs[static_cast<size_t>(i - c->min)].fetch_add(1);
  return closure == nullptr ? 0 : 99;  // the closure pointer reaches the task as given
}

// Restores the pool's thread count when a test ends.
class PoolThreads {
 public:
  explicit PoolThreads(int n) : previous_(host::pool_set_threads(n)) {}
  ~PoolThreads() { host::pool_set_threads(previous_); }

 private:
  int previous_;
};

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    PoolThreads pt(threads);
    EXPECT_EQ(host::pool_threads(), threads);
    for (int min : {-3, 0, 7}) {
      for (int extent : {0, 1, 2, 3, 17, 64, 1000}) {
        Counts c(min, extent);
        ASSERT_EQ(pool_do_par_for(&c, count_task, min, extent, nullptr), 0);
        for (int i = 0; i < extent; ++i)
          ASSERT_EQ(c.runs[static_cast<size_t>(i)].load(), 1)
              << "threads " << threads << " min " << min << " extent " << extent << " index "
              << min + i;
      }
    }
  }
}

// A loop longer than the pool's ticket holds (2^20 - 1 tasks) runs serially, each task once.
TEST(ThreadPool, AVeryLongLoopRunsEveryTaskOnce) {
  PoolThreads pt(2);
  const int extent = (1 << 20) + 5;
  Counts c(0, extent);
  ASSERT_EQ(pool_do_par_for(&c, count_task, 0, extent, nullptr), 0);
  int wrong = 0;
  for (int i = 0; i < extent; ++i) wrong += c.runs[static_cast<size_t>(i)].load() != 1;
  EXPECT_EQ(wrong, 0);
}

// Two tasks that each wait for the other to start: both finish only if they run at once.
struct Meeting {
  std::atomic<int> started{0};
  std::mutex mu;
  std::set<std::thread::id> ids;
};

int meet_task(void* uc, int, uint8_t*) {
  auto* m = static_cast<Meeting*>(uc);
  {
    std::lock_guard<std::mutex> lock(m->mu);
    m->ids.insert(std::this_thread::get_id());
  }
  m->started.fetch_add(1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (m->started.load() < 2) {
    if (std::chrono::steady_clock::now() > deadline) return 1;  // the other never started
    std::this_thread::yield();
  }
  return 0;
}

TEST(ThreadPool, TwoThreadsRunTwoTasksAtOnce) {
  PoolThreads pt(2);
  for (int round = 0; round < 3; ++round) {
    Meeting m;
    // Round 1 and 2 find the worker spinning or asleep (after a pause longer than the spin).
    if (round == 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(pool_do_par_for(&m, meet_task, 0, 2, nullptr), 0) << "round " << round;
    EXPECT_EQ(m.ids.size(), 2u) << "round " << round;
  }
}

// The first non-zero result is returned, and the tasks not yet started when it came are skipped.
// With one thread that is every task after the failing one; with two, the other thread may have
// started one or two (each task but the failing one sleeps 2 ms).
struct Failing {
  int fail_at;
  std::vector<std::atomic<int>> runs;
  explicit Failing(int extent, int fail_at) : fail_at(fail_at), runs(static_cast<size_t>(extent)) {}
};

int failing_task(void* uc, int i, uint8_t*) {
  auto* f = static_cast<Failing*>(uc);
  f->runs[static_cast<size_t>(i)].fetch_add(1);
  if (i == f->fail_at) return 7;
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return 0;
}

TEST(ThreadPool, AFailingTaskStopsTheLoop) {
  for (int threads : {1, 2}) {
    PoolThreads pt(threads);
    for (int fail_at : {0, 3}) {
      Failing f(100, fail_at);
      EXPECT_EQ(pool_do_par_for(&f, failing_task, 0, 100, nullptr), 7) << threads << " threads";
      int ran = 0;
      for (auto& r : f.runs) {
        EXPECT_LE(r.load(), 1);
        ran += r.load();
      }
      EXPECT_EQ(f.runs[static_cast<size_t>(fail_at)].load(), 1);
      if (threads == 1) {
        EXPECT_EQ(ran, fail_at + 1);
      } else {
        EXPECT_LT(ran, 50) << "tasks after the failure were not skipped";
      }
    }
    // The pool runs the next loop normally.
    Counts c(0, 10);
    EXPECT_EQ(pool_do_par_for(&c, count_task, 0, 10, nullptr), 0);
    for (auto& r : c.runs) EXPECT_EQ(r.load(), 1);
  }
}

TEST(ThreadPool, TheClosureReachesTheTasks) {
  PoolThreads pt(2);
  Counts c(0, 8);
  uint8_t byte = 0;
  EXPECT_EQ(pool_do_par_for(&c, count_task, 0, 8, &byte), 99);  // every task saw &byte
}

// A loop inside a task (nested) runs serially on that task's thread.
struct Nest {
  std::atomic<int> inner{0};
};

int inner_task(void* uc, int, uint8_t*) {
  static_cast<Nest*>(uc)->inner.fetch_add(1);
  return 0;
}

int outer_task(void* uc, int, uint8_t*) { return pool_do_par_for(uc, inner_task, 0, 5, nullptr); }

TEST(ThreadPool, NestedLoopsComplete) {
  PoolThreads pt(2);
  Nest n;
  EXPECT_EQ(pool_do_par_for(&n, outer_task, 0, 6, nullptr), 0);
  EXPECT_EQ(n.inner.load(), 30);
}

// Eight threads start loops at once: one at a time runs on the pool, the others serially on their
// own threads; every task of every loop runs once.
TEST(ThreadPool, ConcurrentCallersAllComplete) {
  PoolThreads pt(2);
  constexpr int kCallers = 8, kLoops = 300;
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int l = 0; l < kLoops; ++l) {
        const int extent = 1 + static_cast<int>(rng() % 40);
        Counts c(l, extent);
        if (pool_do_par_for(&c, count_task, l, extent, nullptr) != 0) ++wrong;
        for (auto& r : c.runs) wrong += r.load() != 1;
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(wrong.load(), 0);
}

// The pool has n - 1 workers at n threads (the caller is the n-th), started and stopped by
// set_num_threads; the default is $HL_NUM_THREADS, else the cores.
TEST(ThreadPool, SetNumThreadsStartsAndStopsWorkers) {
  const int previous = set_num_threads(1);
  const int base = testing::process_threads();
  EXPECT_EQ(set_num_threads(4), 1);
  EXPECT_EQ(testing::process_threads(), base + 3);
  EXPECT_EQ(set_num_threads(2), 4);
  EXPECT_EQ(testing::process_threads(), base + 1);
  set_num_threads(0);
  const unsigned cores = std::thread::hardware_concurrency();
  const char* env = std::getenv("HL_NUM_THREADS");
  const int expected = env && std::atoi(env) > 0 ? std::atoi(env) : static_cast<int>(cores);
  EXPECT_EQ(host::pool_threads(), expected);
  EXPECT_EQ(testing::process_threads(), base + expected - 1);
  set_num_threads(previous);
}

// The runtime's kernels and the JIT's run their parallel loops on the pool, and Halide's own pool
// starts no workers.
TEST(ThreadPool, KernelsRunTheirLoopsOnThePool) {
  set_num_threads(2);
  std::mt19937_64 rng(testing::variant_seed());
  const Tensor a = testing::random_tensor(DType::kFloat32, {256, 64}, rng, -2, 2);
  const Tensor b = testing::random_tensor(DType::kFloat32, {64, 256}, rng, -2, 2);
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  const Tensor expected = gemm(args);
  const int threads = testing::process_threads();

  const uint64_t before_jit = host::pool_loops();
  EXPECT_TRUE(testing::bit_equal(expected, gemm_halide(args, HalideVariant{})));
  EXPECT_GT(host::pool_loops(), before_jit) << "the JIT kernel's loops did not reach the pool";

  if (runtime::kernel_target() != "none") {
    DispatchInfo info;
    const uint64_t before_aot = host::pool_loops();
    EXPECT_TRUE(testing::bit_equal(expected, runtime::gemm(args, &info)));
    EXPECT_GT(host::pool_loops(), before_aot)
        << info.kernel << ": the runtime kernel's loops did not reach the pool";
  }
  EXPECT_EQ(testing::process_threads(), threads)
      << "a thread pool other than mmtune's started workers";
  set_num_threads(0);
}

}  // namespace
}  // namespace mmtune
