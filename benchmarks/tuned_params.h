// The CPU matmul schedule parameters the benchmarks run, per float contract and shape class: found
// by hand on the machine docs/performance.md names (a starting point for the tuner, not its
// output).
#pragma once

#include <cstdint>
#include <string>

#include "reference/gemm.h"
#include "schedules/cpu/matmul_params.h"

namespace mmtune::bench {

// gemv (M = 1), skinny (M <= 32), cached (B, float32, within 2 MiB: an L2's worth on the machine
// tuned for) or streamed (B comes from L3 or memory for every tile row).
std::string shape_class(int64_t m, int64_t n, int64_t k);

// Float32 Gemm parameters for the target's natural vector width: tuned on AVX-512 (32 registers of
// 16 lanes); on a 16-register ISA (AVX2, SSE4.1), the shipped AVX2 database's tiles.
schedules::CpuMatmulParams tuned_f32_params(const schedules::TargetInfo& t, int64_t m, int64_t n,
                                            int64_t k, FloatContract contract);

// QLinearMatMul u8 x s8 parameters (int32 accumulators; K grouped for the dot products).
schedules::CpuMatmulParams tuned_u8s8_params(const schedules::TargetInfo& t, int64_t m, int64_t n,
                                             int64_t k);

}  // namespace mmtune::bench
