// The kernels' thread pool (thread_pool.h says why and what it promises).
//
// A loop is published in one 64-bit word, `ticket`: its generation (24 bits), its extent (20 bits)
// and the next unclaimed task (20 bits). A thread claims task i by a compare-and-swap of the word
// it read; the loop's other fields (function, closure, first index) are written before the word
// that publishes them and read after it, and a claim succeeds only if the word did not change in
// between: the loop was still running, so its fields were not yet replaced by the next loop's. The
// caller counts finished tasks and returns when all are done; workers that wake late find no task
// to claim and never touch the loop.
#include "runtime/host/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mmtune::host {
namespace {

using Task = int (*)(void*, int, uint8_t*);

constexpr int kFieldBits = 20;
constexpr uint64_t kFieldMask = (uint64_t{1} << kFieldBits) - 1;
constexpr int kMaxExtent = static_cast<int>(kFieldMask);

uint64_t next_of(uint64_t t) { return t & kFieldMask; }
uint64_t extent_of(uint64_t t) { return (t >> kFieldBits) & kFieldMask; }
uint64_t generation_of(uint64_t t) { return t >> (2 * kFieldBits); }

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// How long idle workers spin before they sleep: $MMTUNE_SPIN_US microseconds, 200 by default.
std::chrono::microseconds spin_time() {
  static const std::chrono::microseconds t = [] {
    const char* s = std::getenv("MMTUNE_SPIN_US");
    if (!s || !*s) return std::chrono::microseconds(200);
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    return std::chrono::microseconds(end && *end == '\0' && v >= 0 ? v : 200);
  }();
  return t;
}

// The default thread count: $HL_NUM_THREADS (as Halide's pool reads it), else the cores.
int default_threads() {
  for (const char* name : {"HL_NUM_THREADS", "HL_NUMTHREADS"}) {
    if (const char* s = std::getenv(name)) {
      const int n = std::atoi(s);
      if (n > 0) return n;
    }
  }
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

thread_local bool in_task = false;  // this thread is running a task of a pool loop

class Pool {
 public:
  int run(void* uc, Task f, int min, int extent, uint8_t* closure) {
    loops_.fetch_add(1, std::memory_order_relaxed);
    if (extent <= 0) return 0;
    // Serially: a single task, no workers, a nested loop, a loop too long for the ticket, or
    // the pool busy with another caller's loop.
    if (extent == 1 || workers_.empty() || in_task || extent > kMaxExtent || !try_acquire())
      return serial(uc, f, min, extent, closure);
    user_context_.store(uc, std::memory_order_relaxed);
    task_.store(f, std::memory_order_relaxed);
    min_.store(min, std::memory_order_relaxed);
    closure_.store(closure, std::memory_order_relaxed);
    error_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint64_t generation = generation_of(ticket_.load(std::memory_order_relaxed)) + 1;
    ticket_.store((generation << (2 * kFieldBits)) | (uint64_t(extent) << kFieldBits),
                  std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      wake_.notify_all();
    }
    work();
    // Wait for the tasks the workers claimed.
    for (unsigned spins = 0; done_.load(std::memory_order_acquire) < extent; ++spins) {
      if (spins < 4096)
        pause();
      else
        std::this_thread::yield();
    }
    const int error = error_.load(std::memory_order_relaxed);
    busy_.store(false, std::memory_order_release);
    return error;
  }

  int set_threads(int n) {
    const int previous = threads();
    stop_workers();
    const std::lock_guard<std::mutex> lock(config_);
    threads_.store(n, std::memory_order_relaxed);
    // The workers wait for loops after the current one (read here: a worker that read it when it
    // starts could miss a loop published meanwhile).
    const uint64_t seen = generation_of(ticket_.load(std::memory_order_acquire));
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, seen] { worker(seen); });
    return previous;
  }

  int threads() { return threads_.load(std::memory_order_relaxed); }

  uint64_t loops() const { return loops_.load(std::memory_order_relaxed); }

  Pool() { set_threads(default_threads()); }

 private:
  static int serial(void* uc, Task f, int min, int extent, uint8_t* closure) {
    for (int i = min; i < min + extent; ++i)
      if (const int r = f(uc, i, closure)) return r;
    return 0;
  }

  bool try_acquire() {
    bool expected = false;
    return busy_.compare_exchange_strong(expected, true, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }

  // Claims and runs tasks of the published loop until none is left. A claim takes a share of the
  // tasks left (a 2 * threads-th, at least one, as OpenMP's guided schedule does): loops of many
  // small tasks (a float32 kernel's tile rows at 64^3: eleven) then pass the shared cache lines
  // between the cores a few times, not once per task.
  void work() {
    const uint64_t share = 2 * static_cast<uint64_t>(threads_.load(std::memory_order_relaxed));
    uint64_t t = ticket_.load(std::memory_order_acquire);
    while (next_of(t) < extent_of(t)) {
      Task f = task_.load(std::memory_order_relaxed);
      void* uc = user_context_.load(std::memory_order_relaxed);
      uint8_t* closure = closure_.load(std::memory_order_relaxed);
      const int min = min_.load(std::memory_order_relaxed);
      const uint64_t chunk = std::max<uint64_t>(1, (extent_of(t) - next_of(t)) / share);
      if (!ticket_.compare_exchange_weak(t, t + chunk, std::memory_order_acq_rel,
                                         std::memory_order_acquire))
        continue;  // t reloaded: another thread claimed, or a new loop was published
      for (uint64_t i = next_of(t); i < next_of(t) + chunk; ++i) {
        if (error_.load(std::memory_order_relaxed) != 0) break;
        in_task = true;
        const int r = f(uc, min + static_cast<int>(i), closure);
        in_task = false;
        if (r != 0) {
          int none = 0;
          error_.compare_exchange_strong(none, r, std::memory_order_relaxed);
        }
      }
      done_.fetch_add(static_cast<int>(chunk), std::memory_order_acq_rel);
      t = ticket_.load(std::memory_order_acquire);
    }
  }

  void worker(uint64_t seen) {
    for (;;) {
      // Spin for a new loop, then sleep until one is published.
      const auto deadline = std::chrono::steady_clock::now() + spin_time();
      unsigned spins = 0;
      while (generation_of(ticket_.load(std::memory_order_acquire)) == seen &&
             !stop_.load(std::memory_order_relaxed)) {
        pause();
        if ((++spins & 63) == 0 && std::chrono::steady_clock::now() >= deadline) {
          std::unique_lock<std::mutex> lock(mu_);
          sleeping_.fetch_add(1, std::memory_order_seq_cst);
          wake_.wait(lock, [&] {
            return generation_of(ticket_.load(std::memory_order_seq_cst)) != seen ||
                   stop_.load(std::memory_order_relaxed);
          });
          sleeping_.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
      }
      if (stop_.load(std::memory_order_relaxed)) return;
      seen = generation_of(ticket_.load(std::memory_order_acquire));
      work();
    }
  }

  void stop_workers() {
    const std::lock_guard<std::mutex> config(config_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true, std::memory_order_relaxed);
      wake_.notify_all();
    }
    for (std::thread& w : workers_) w.join();
    workers_.clear();
    stop_.store(false, std::memory_order_relaxed);
  }

  // The published loop.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<Task> task_{nullptr};
  std::atomic<void*> user_context_{nullptr};
  std::atomic<uint8_t*> closure_{nullptr};
  std::atomic<int> min_{0};
  std::atomic<int> done_{0};   // tasks finished (run or skipped after an error)
  std::atomic<int> error_{0};  // the first non-zero task result
  std::atomic<bool> busy_{false};
  alignas(64) std::atomic<uint64_t> loops_{0};  // apart from the loop's lines: every caller adds

  // Sleeping workers.
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<int> sleeping_{0};
  std::atomic<bool> stop_{false};

  std::mutex config_;
  std::atomic<int> threads_{1};
  std::vector<std::thread> workers_;
};

// Never destroyed: kernels may run from other static objects' destructors, and the workers sleep
// or spin harmlessly until the process exits.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

int pool_do_par_for(void* user_context, int (*f)(void*, int, uint8_t*), int min, int extent,
                    uint8_t* closure) {
  return pool().run(user_context, f, min, extent, closure);
}

int pool_set_threads(int n) { return pool().set_threads(n > 0 ? n : default_threads()); }

int pool_threads() { return pool().threads(); }

uint64_t pool_loops() { return pool().loops(); }

}  // namespace mmtune::host
