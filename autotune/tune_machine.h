// What this machine can do at most, measured at the start of a tuning run for the report's
// roofline (autotune/tune_report.h): the peak float32 FLOP/s and the memory bandwidth, each at a
// few thread counts. The binary stays baseline x86-64: the widest vector the CPU runs is chosen at
// run time (__builtin_cpu_supports) among loops compiled for it with target attributes.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace mmtune::tune {

// Measures, at each thread count of `threads` (duplicates ignored):
//  - peak FLOP/s: a loop of float32 fused multiply-adds on independent accumulators (more than the
//    FMA latency times the FMA ports, so the loop is throughput-bound) at the widest vector width
//    the CPU runs: AVX-512, AVX2 + FMA, AVX (multiply and add), SSE2 (multiply and add); NEON on
//    ARM64. The best of 5 runs of about 20 ms each; a multiply-add counts 2 FLOPs.
//  - memory bandwidth: the STREAM triad a[i] = b[i] + s * c[i] over float64 arrays of twice the
//    last-level cache each (6x in all, at most 1.5 GiB), 24 bytes counted per element (STREAM's
//    convention: write-allocate traffic not counted); the best of 4 passes after a warm-up.
// Returns {"vector": "avx2+fma", "vector_bits": 256, "accumulators": 12,
//          "peak": [{"threads": 1, "flops": ...}, ...],
//          "bandwidth": [{"threads": 1, "bytes_per_s": ...}, ...],
//          "llc_bytes": ..., "triad_bytes": ..., "seconds": ..., "method": "<one sentence>"}.
// About half a second per thread count; the caller holds the timer's lock (nothing else timed).
nlohmann::json measure_machine(const std::vector<int>& threads);

// The figure of `key` ("peak" / "flops", "bandwidth" / "bytes_per_s") measured at `threads`, else
// at the largest thread count measured; 0 when `machine` has none.
double machine_figure(const nlohmann::json& machine, const char* key, const char* field,
                      int threads);

}  // namespace mmtune::tune
