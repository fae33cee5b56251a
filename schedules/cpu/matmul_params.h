// The CPU matmul schedule template's parameters: one struct with three faces (JSON, Halide
// generator parameters, validate(target)) and the search space the tuner draws from.
#pragma once

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "schedules/target_info.h"

namespace mmtune::schedules {

// A register-tiled matmul: each task owns a strip of `n_block` output columns; within it, tiles of
// `tile_rows` rows x `tile_vectors` vectors of `vector_width` lanes are accumulated in registers
// over the whole K, K innermost (unrolled by `k_unroll`), with B packed per strip when `pack_b`.
// K is never split across tiles or threads, so float sums keep their K order.
struct CpuMatmulParams {
  int tile_rows = 6;
  int tile_vectors = 4;
  int vector_width = 0;  // lanes of the accumulator type; 0 = the target's natural width
  int k_unroll = 4;
  int n_block = 256;     // columns per task / packed strip; a multiple of the tile width
  bool pack_b = true;
  bool parallel = true;  // strips run as parallel tasks
  int k_group = 1;       // integer sums only: K consumed in groups of 2 or 4 (dot-product instructions)
  int m_block = 0;       // rows per cache block (a multiple of tile_rows; 0 = none)
  int k_block = 0;       // K per cache block (0 = none): the block's accumulators live in memory;
                         // needs n_block and m_block, and k_group = 1
  bool specialize_tails = false;  // a branch without tail guards for shapes of whole tiles/blocks

  // Lanes actually used for an accumulator of `acc_bits` on `t`.
  int lanes(const TargetInfo& t, int acc_bits) const;
  int tile_columns(const TargetInfo& t, int acc_bits) const { return tile_vectors * lanes(t, acc_bits); }

  // Why these parameters cannot run on `t` with `acc_bits`-bit accumulators, or nullopt.
  // `integer_sum`: the sum is exact (integers), so K may be grouped; float sums never are.
  std::optional<std::string> validate(const TargetInfo& t, int acc_bits, bool integer_sum = false) const;

  // Halide GeneratorParams (name -> value) of the template, as the generators declare them.
  std::map<std::string, std::string> generator_params() const;
  static CpuMatmulParams from_generator_params(const std::map<std::string, std::string>& gp);

  // "6x4v16k4n256p" : compact, used in kernel names (docs/naming.md).
  std::string tag(const TargetInfo& t, int acc_bits) const;

  bool operator==(const CpuMatmulParams& o) const;
};

void to_json(nlohmann::json& j, const CpuMatmulParams& p);
void from_json(const nlohmann::json& j, CpuMatmulParams& p);  // unknown keys are rejected

// The legal values of each knob; a draw is valid only after validate().
struct CpuMatmulSpace {
  std::vector<int> tile_rows{1, 2, 3, 4, 6, 8};
  std::vector<int> tile_vectors{1, 2, 3, 4};
  std::vector<int> vector_width{0};
  std::vector<int> k_unroll{1, 2, 4, 8};
  std::vector<int> n_block{0, 64, 128, 256, 512};
  std::vector<int> pack_b{0, 1};
  std::vector<int> parallel{0, 1};
  std::vector<int> k_group{1, 2, 4};
  std::vector<int> m_block{0, 0, 32, 96};
  std::vector<int> k_block{0, 0, 0, 64, 256};
  std::vector<int> specialize_tails{0, 1};
};

// The template's defaults for a target: CpuMatmulParams{} where they fit its registers, else a
// 4x2 tile without strips (e.g. 64-bit lanes on a 16-register ISA).
CpuMatmulParams default_params(const TargetInfo& t, int acc_bits);

// Draws valid parameters uniformly from the space (rejection sampling against validate()).
CpuMatmulParams sample(const CpuMatmulSpace& space, const TargetInfo& t, int acc_bits, bool integer_sum,
                       std::mt19937_64& rng);

}  // namespace mmtune::schedules
