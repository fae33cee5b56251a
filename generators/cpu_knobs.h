// The CPU matmul template's knobs as Halide GeneratorParams, for a generator to hold as a member
// (Halide finds GeneratorParams anywhere inside the generator object).
#pragma once

#include "Halide.h"
#include "schedules/cpu/matmul_params.h"

namespace mmtune::gen {

struct CpuMatmulKnobs {
  schedules::CpuMatmulParams defaults;
  Halide::GeneratorParam<int> tile_rows{"tile_rows", defaults.tile_rows};
  Halide::GeneratorParam<int> tile_vectors{"tile_vectors", defaults.tile_vectors};
  Halide::GeneratorParam<int> vector_width{"vector_width", defaults.vector_width};
  Halide::GeneratorParam<int> k_unroll{"k_unroll", defaults.k_unroll};
  Halide::GeneratorParam<int> n_block{"n_block", defaults.n_block};
  Halide::GeneratorParam<bool> pack_b{"pack_b", defaults.pack_b};
  Halide::GeneratorParam<bool> parallel{"parallel", defaults.parallel};
  Halide::GeneratorParam<int> k_group{"k_group", defaults.k_group};
  Halide::GeneratorParam<int> m_block{"m_block", defaults.m_block};
  Halide::GeneratorParam<int> k_block{"k_block", defaults.k_block};
  Halide::GeneratorParam<bool> specialize_tails{"specialize_tails", defaults.specialize_tails};

  schedules::CpuMatmulParams params() const {
    schedules::CpuMatmulParams p;
    p.tile_rows = tile_rows;
    p.tile_vectors = tile_vectors;
    p.vector_width = vector_width;
    p.k_unroll = k_unroll;
    p.n_block = n_block;
    p.pack_b = pack_b;
    p.parallel = parallel;
    p.k_group = k_group;
    p.m_block = m_block;
    p.k_block = k_block;
    p.specialize_tails = specialize_tails;
    return p;
  }
};

// TargetInfo of a Halide target (its string, parsed by schedules/target_info).
schedules::TargetInfo target_info_of(const Halide::Target& t);

}  // namespace mmtune::gen
