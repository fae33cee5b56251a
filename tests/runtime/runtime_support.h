// Shared helpers of the runtime suites.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "mmtune/mmtune.h"
#include "runtime/src/kernel_table.h"

namespace mmtune::testing {

// Rows and columns of a linked kernel's output tile (shapes are drawn relative to it).
std::pair<int, int> tile_of(const runtime::KernelInfo& k);

// The bucket of a linked kernel (its first, when it serves several), from the generated table.
runtime::Bucket bucket_of(const std::string& name);

// x moved into [lo, hi] (hi < 0: no upper bound).
int64_t clamp_to(int64_t x, int64_t lo, int64_t hi);

}  // namespace mmtune::testing
