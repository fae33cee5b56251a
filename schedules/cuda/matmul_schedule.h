// The cuda_matmul schedule template (see matmul_params.h for its knobs and their meaning).
#pragma once

#include "schedules/cuda/matmul_params.h"
#include "schedules/matmul_pipeline.h"

namespace mmtune::schedules {

// Schedules `p`, built for params.layout(t, kind) (p.layout) for a sum `kind` that params validate
// for, on a CUDA target: the K sum on the GPU, the epilogue and every producer with a float step on
// the host.
void schedule_cuda_matmul(MatmulPipeline& p, const CudaMatmulParams& params, Accumulator kind);

}  // namespace mmtune::schedules
