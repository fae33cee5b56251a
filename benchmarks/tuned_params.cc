// Hand-tuned float32 Gemm parameters per shape class (docs/performance.md has the search behind
// them).
#include "benchmarks/tuned_params.h"

namespace mmtune::bench {

std::string shape_class(int64_t m, int64_t n, int64_t k) {
  if (m == 1) return "gemv";
  if (m <= 32) return "skinny";
  if (k * n * 4 <= (int64_t{2} << 20)) return "cached";
  return "streamed";
}

namespace {

schedules::CpuMatmulParams make(int rows, int vectors, int k_unroll, int n_block, bool pack_b) {
  schedules::CpuMatmulParams p;
  p.tile_rows = rows;
  p.tile_vectors = vectors;
  p.k_unroll = k_unroll;
  p.n_block = n_block;
  p.pack_b = pack_b;
  p.parallel = true;  // the pool size decides; one thread runs the strips in order
  return p;
}

}  // namespace

// Tiles are rows x (vectors x 16 lanes). One 6x4-vector tile with K unrolled by 2 and B packed in
// 64-column strips was the best or within noise of it for both contracts on every class but the
// GEMV, whose B is read once: there packing only adds a copy, and the widest single-row tile
// streams B's rows best. Only the strict contract on B-streaming shapes liked wider strips.
schedules::CpuMatmulParams tuned_f32_params(const schedules::TargetInfo& t, int64_t m, int64_t n,
                                            int64_t k, FloatContract contract) {
  const std::string cls = shape_class(m, n, k);
  if (t.vector_registers < 32) {
    // 16 registers: the tiles of tuned/x86-64-linux-avx2-fma-f16c.json (2 x 4 vectors for few
    // rows, 6 x 2 otherwise), not re-tuned here.
    if (m <= 3) return make(m == 1 ? 1 : 2, 4, 4, 128, false);
    return make(6, 2, 4, 128, false);
  }
  if (cls == "gemv") return make(1, 8, 2, 512, false);
  if (cls == "streamed" && contract == FloatContract::kStrict) return make(6, 4, 2, 128, true);
  return make(6, 4, 2, 64, true);
}

// K in groups of 4 (vpdpbusd) with B packed, which grouping needs. Two-vector tiles of 8-16 rows
// were all within 10 % of each other at 1024^3 and far ahead of 4-vector tiles (6x4: a quarter of
// the rate); on the LLM shapes a fixed per-call cost hides every difference (docs/performance.md).
schedules::CpuMatmulParams tuned_u8s8_params(const schedules::TargetInfo& t, int64_t m, int64_t n,
                                             int64_t k) {
  schedules::CpuMatmulParams p;
  if (t.vector_registers < 32) {
    p = make(6, 2, 4, 256, true);  // the shipped AVX2 database's QLinearMatMul tile
  } else {
    p = shape_class(m, n, k) == "gemv" ? make(1, 8, 1, 512, true) : make(12, 2, 1, 512, true);
  }
  p.k_group = 4;
  return p;
}

}  // namespace mmtune::bench
