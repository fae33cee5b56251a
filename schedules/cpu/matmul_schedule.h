// The CPU matmul schedule template: applies CpuMatmulParams to a pipeline built on MatmulCore.
#pragma once

#include <vector>

#include "Halide.h"
#include "generators/matmul_core.h"
#include "schedules/cpu/matmul_params.h"

namespace mmtune::schedules {

struct CpuMatmulPipeline {
  Halide::Func out;                // out(j, i): the Output, whose epilogue inlines acc
  Halide::Var j, i;                // out's dims (column, row)
  const gen::MatmulCore* core;     // acc, packed_b, r
  std::vector<Halide::Func> per_strip;  // small producers indexed by column (e.g. column sums), computed per strip
  std::vector<Halide::Func> per_call;   // producers computed once per call (compute_root)
};

// `lanes`: vector lanes of the accumulator (CpuMatmulParams::lanes for the target).
void schedule_cpu_matmul(CpuMatmulPipeline& p, const CpuMatmulParams& params, int lanes);

}  // namespace mmtune::schedules
