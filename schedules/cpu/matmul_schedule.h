// The cpu_matmul schedule template (see matmul_params.h for its knobs and their meaning).
#pragma once

#include "schedules/cpu/matmul_params.h"
#include "schedules/matmul_pipeline.h"

namespace mmtune::schedules {

// Schedules `p`, built for params.layout(...) (p.layout).
void schedule_cpu_matmul(MatmulPipeline& p, const CpuMatmulParams& params);

}  // namespace mmtune::schedules
