// Shared helpers of the runtime suites.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autotune/tune_inputs.h"
#include "mmtune/mmtune.h"
#include "runtime/src/kernel_table.h"

namespace mmtune::testing {

// Rows and columns of a linked kernel's output tile (shapes are drawn relative to it).
std::pair<int, int> tile_of(const runtime::KernelInfo& k);

// The bucket of a kernel calls can run (its first, when it serves several), from the generated
// tables.
runtime::Bucket bucket_of(const std::string& name);

// The table entries calls can run now (runtime/src/dispatch.h, used_groups).
std::vector<const runtime::KernelEntry*> used_entries();

// "no <op> kernel in this build (<the targets calls use>) computes": how a call's reason starts
// when no used level has a kernel of its identity.
std::string no_kernel_prefix(const std::string& op);

// Restores the level cap a test changed (the suites run with MMTUNE_MAX_KERNEL_TARGET per level).
class LevelCap {
 public:
  explicit LevelCap(const std::string& target)
      : previous_(runtime::set_max_kernel_target(target)) {}
  ~LevelCap() { runtime::set_max_kernel_target(previous_); }
  LevelCap(const LevelCap&) = delete;
  LevelCap& operator=(const LevelCap&) = delete;

 private:
  std::string previous_;
};

// The pool's thread count set to n while it lives (the previous count restored after).
class PoolThreads {
 public:
  explicit PoolThreads(int n) : previous_(set_num_threads(n)) {}
  ~PoolThreads() { set_num_threads(previous_); }
  PoolThreads(const PoolThreads&) = delete;
  PoolThreads& operator=(const PoolThreads&) = delete;

 private:
  int previous_;
};

// The pool's thread count moved into a bucket's threads range while it lives, so that calls
// select the bucket's kernel; no change when the count is inside already.
class BucketThreads {
 public:
  explicit BucketThreads(const runtime::Bucket& bucket);

 private:
  std::optional<PoolThreads> moved_;
};

// x moved into [lo, hi] (hi < 0: no upper bound).
int64_t clamp_to(int64_t x, int64_t lo, int64_t hi);

// The shapes moved into a kernel's bucket, so that the kernel is the one that serves them: M and N
// into their ranges (at least 1), K into its range (at least k_floor); each distinct result once.
// A bucket of large shapes moves most of the small ones onto its corner, and the same shape again
// would repeat the same calls with other random data (the gemm suite's largest bucket spent 135 s
// on 17 copies of two shapes).
std::vector<tune::MatmulShape> shapes_in_bucket(const std::vector<tune::MatmulShape>& shapes,
                                                const runtime::Bucket& bucket, int64_t k_floor);

}  // namespace mmtune::testing
