// Shared helpers of the runtime suites.
#pragma once

#include <utility>

#include "mmtune/mmtune.h"

namespace mmtune::testing {

// Rows and columns of a linked kernel's output tile (shapes are drawn relative to it).
std::pair<int, int> tile_of(const runtime::KernelInfo& k);

}  // namespace mmtune::testing
