// The cpu_matmul schedule template (see matmul_params.h for its knobs and their meaning).
#pragma once

#include "schedules/cpu/matmul_params.h"
#include "schedules/matmul_pipeline.h"

namespace mmtune::schedules {

// Schedules `p`, built for params.layout(...) (p.layout). The register-tiled schedule of
// cpu_matmul, arm_matmul and hvx_matmul; `vector_epilogue` false keeps the output's epilogue and
// the per-row producers scalar (HVX without float vectors), the sum vectorized still.
void schedule_cpu_matmul(MatmulPipeline& p, const CpuMatmulParams& params,
                         bool vector_epilogue = true);

}  // namespace mmtune::schedules
