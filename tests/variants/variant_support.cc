// Shared machinery of the variant suites.
#include "tests/variants/variant_support.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <set>

#include "autotune/kernel_key.h"
#include "reference/codecs.h"

namespace mmtune::testing {

uint64_t variant_seed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("MMTUNE_SEED");
    const uint64_t v = s && *s ? std::strtoull(s, nullptr, 10) : 20261129ull;
    std::cout << "[variants] seed " << v << " (set MMTUNE_SEED to change)\n";
    return v;
  }();
  return seed;
}

std::vector<ScheduleDraw> schedule_draws(const schedules::TargetInfo& t, schedules::Accumulator acc,
                                         int count, uint64_t seed) {
  std::vector<ScheduleDraw> draws;
  const schedules::Schedule defaults = schedules::default_schedule(t, acc);
  draws.push_back({"default", defaults, defaults.tile(t, acc)});
  std::mt19937_64 rng(seed);
  const std::string name = schedules::default_template(t);
  for (int n = 0; n < count; ++n) {
    const schedules::Schedule s = schedules::sample(name, t, acc, rng);
    draws.push_back({"random_" + std::to_string(n), s, s.tile(t, acc)});
  }
  return draws;
}

std::vector<MatmulShape> matmul_shapes(int rows, int cols, bool deep) {
  std::vector<MatmulShape> s = {
      {"tiny", 1, 1, 1},
      {"tiny", 2, 3, 5},
      {"tiny", 7, 10, 3},
      {"tiny", 10, 9, 8},
      {"tile", rows, cols, 16},
      {"tile_multiple", 2 * rows, 3 * cols, 33},
      {"ragged", 2 * rows + 1, 3 * cols - 1, 17},
      {"ragged", rows - 1 > 0 ? rows - 1 : 1, cols + 1, 9},
      {"pow2", 64, 64, 64},
      {"pow2_pm1", 63, 65, 127},
      {"pow2_pm1", 33, 31, 65},
      {"shallow_k", 19, 45, 1},
      {"shallow_k", 13, 70, 4},
      {"gemv", 1, 257, 300},
      {"gemv", 1, 5, 1000},
      {"empty_k", 3, 2 * cols + 1, 0},
  };
  if (deep) s.push_back({"deep_k", 9, 35, 4099});
  return s;
}

Tensor random_tensor(DType t, Shape shape, std::mt19937_64& rng, double lo, double hi) {
  Tensor r(t, std::move(shape));
  std::uniform_real_distribution<double> real(lo, hi);
  auto integer = [&] { return static_cast<int64_t>(std::floor(real(rng) + 0.5)); };
  for (int64_t i = 0; i < r.numel(); ++i) {
    switch (t) {
      case DType::kInt8:
        r.data<int8_t>()[i] = static_cast<int8_t>(integer());
        break;
      case DType::kUInt8:
        r.data<uint8_t>()[i] = static_cast<uint8_t>(integer());
        break;
      case DType::kInt32:
        r.data<int32_t>()[i] = static_cast<int32_t>(integer());
        break;
      case DType::kUInt32:
        r.data<uint32_t>()[i] = static_cast<uint32_t>(integer());
        break;
      case DType::kInt64:
        r.data<int64_t>()[i] = integer();
        break;
      case DType::kUInt64:
        r.data<uint64_t>()[i] = static_cast<uint64_t>(integer());
        break;
      case DType::kFloat32:
        r.data<float>()[i] = static_cast<float>(real(rng));
        break;
      case DType::kFloat64:
        r.data<double>()[i] = real(rng);
        break;
      case DType::kFloat16:
        r.data<uint16_t>()[i] = float_to_float16(static_cast<float>(real(rng)));
        break;
      case DType::kBFloat16:
        r.data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(real(rng)));
        break;
      default: {
        // float8: a random finite pattern within [lo, hi].
        for (;;) {
          const uint8_t bits = static_cast<uint8_t>(rng());
          const float v = float8_to_float(t, bits);
          if (std::isfinite(v) && v >= lo && v <= hi) {
            r.data<uint8_t>()[i] = bits;
            break;
          }
        }
      }
    }
  }
  return r;
}

double quant_min(DType t) { return t == DType::kInt8 ? -128 : 0; }
double quant_max(DType t) { return t == DType::kInt8 ? 127 : 255; }

ValueRange gemm_value_range(DType t) {
  switch (t) {
    case DType::kInt32:
      return {-2147483648.0, 2147483647.0};  // products and sums wrap
    case DType::kUInt32:
      return {0, 4294967295.0};
    case DType::kInt64:
      return {-9.2e18, 9.2e18};
    case DType::kUInt64:
      return {0, 1.8e19};
    default:
      return {-2.0, 2.0};
  }
}

Tensor random_scales(DType st, Shape shape, std::mt19937_64& rng, double e0, double e1) {
  Tensor t(st, std::move(shape));
  std::uniform_real_distribution<double> e(e0, e1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = static_cast<float>(std::exp2(e(rng)));
    if (st == DType::kFloat32) t.data<float>()[i] = v;
    if (st == DType::kFloat16) t.data<uint16_t>()[i] = float_to_float16(v);
    if (st == DType::kBFloat16) t.data<uint16_t>()[i] = float_to_bfloat16(v);
  }
  return t;
}

const schedules::TargetInfo& host_info() {
  static const schedules::TargetInfo info = schedules::target_info(host_target());
  return info;
}

}  // namespace mmtune::testing
