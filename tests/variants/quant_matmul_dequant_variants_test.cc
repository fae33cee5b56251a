// QuantMatmulDequant variants, bit for bit against the reference: the 32 mode combinations
// (dynamic per token; static per token; static per tensor float32; fused int64 weight scale with a
// float16 per-tensor x scale) x (smooth or not) x (bias or not) x (both weight layouts), each under
// the default schedule and random draws (2 by default; 20 with MMTUNE_LONG=1) from the host
// template's space (K grouping included: the sum is exact), on every shape category of
// testing::matmul_shapes plus the operator's own: all-zero rows (0 * Inf in dynamic mode), float16
// saturation at +-65504, RNE ties of the quantization, bias wrapping, special x values (Inf, NaN,
// subnormals) and subnormal scales, K = 0, and an int32 sum that wraps (K = 150000). A failure
// prints the index, both values, the shape, the mode, the kernel key and the seed.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>

#include "autotune/halide_ops.h"
#include "reference/codecs.h"
#include "reference/quant_matmul_dequant.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using testing::host_info;

enum class Mode { kDynamic, kStaticPerToken, kPerTensor, kFused };
constexpr int kModes = 4;
constexpr int kCombos = kModes * 2 * 2 * 2;

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kDynamic:
      return "dynamic-pertoken";
    case Mode::kStaticPerToken:
      return "static-pertoken";
    case Mode::kPerTensor:
      return "pertensor-float32";
    case Mode::kFused:
      return "fused-int64-pertensor-float16";
  }
  return "?";
}

struct Combo {
  Mode mode;
  bool smooth, bias, transpose;
  std::string name() const {
    std::ostringstream os;
    os << mode_name(mode) << (smooth ? " smooth" : " no-smooth") << (bias ? " bias" : " no-bias")
       << " transpose_weight=" << transpose;
    return os.str();
  }
};

Combo combo(int c) {
  return {static_cast<Mode>(c % kModes), (c / kModes) % 2 == 1, (c / (2 * kModes)) % 2 == 1,
          (c / (4 * kModes)) % 2 == 0};
}

// What a shape category does to the data.
enum class Data { kRandom, kZeroRows, kSaturate, kTies, kSpecials, kWrap };

struct Case {
  std::string category;
  int64_t m, n, k;
  Data data = Data::kRandom;
};

float uniform(std::mt19937_64& rng, double lo, double hi) {
  return static_cast<float>(std::uniform_real_distribution<double>(lo, hi)(rng));
}

uint16_t f16(float v) { return float_to_float16(v); }

// The inputs of one case, owned here; args() points into them.
struct Inputs {
  Tensor x, weight, weight_scale, bias, x_scale, smooth;
  Combo c;
  QuantMatmulDequantArgs args() const {
    QuantMatmulDequantArgs a;
    a.x = &x;
    a.weight = &weight;
    a.weight_scale = &weight_scale;
    a.bias = c.bias ? &bias : nullptr;
    a.x_scale = c.mode == Mode::kDynamic ? nullptr : &x_scale;
    a.smooth_scale = c.smooth ? &smooth : nullptr;
    a.x_quant_mode = c.mode == Mode::kDynamic || c.mode == Mode::kStaticPerToken
                         ? XQuantMode::kPerToken
                         : XQuantMode::kPerTensor;
    a.transpose_weight = c.transpose;
    return a;
  }
};

Inputs make_inputs(const Combo& c, const Case& s, std::mt19937_64& rng) {
  const int64_t m = s.m, n = s.n, k = s.k;
  Inputs in;
  in.c = c;
  in.x = testing::random_tensor(DType::kFloat16, {m, k}, rng, -8.0, 8.0);
  in.weight =
      testing::random_tensor(DType::kInt8, c.transpose ? Shape{n, k} : Shape{k, n}, rng, -128, 127);
  in.smooth = Tensor(DType::kFloat16, {k});
  // Half the smooth values from a set whose products with float16 x often tie in fl16(x * smooth).
  const float tie_prone[] = {1.5f, 0.75f, 1.25f, -1.5f, 0.625f, 1.0f, 3.0f, -0.375f};
  for (int64_t q = 0; q < k; ++q) {
    in.smooth.data<uint16_t>()[q] =
        rng() % 2 ? f16(tie_prone[rng() % 8]) : f16(uniform(rng, -2.0, 2.0));
  }
  in.bias = testing::random_tensor(DType::kInt32, {n}, rng, -5000, 5000);
  if (n >= 2) {
    // Two columns whose bias makes the int32 sum wrap.
    in.bias.data<int32_t>()[0] =
        std::numeric_limits<int32_t>::max() - static_cast<int32_t>(rng() % 64);
    in.bias.data<int32_t>()[n - 1] =
        std::numeric_limits<int32_t>::min() + static_cast<int32_t>(rng() % 64);
  }
  double ws_lo = 1e-3, ws_hi = 5e-2;
  if (s.data == Data::kSaturate) ws_lo = 2.0, ws_hi = 64.0;
  if (s.data == Data::kWrap) ws_lo = 1e-6, ws_hi = 2e-5;  // |f| of a ~2^31 sum stays below 65504
  if (c.mode == Mode::kFused) {
    // The float32 in the low word; a random high word, which the kernel must ignore.
    in.weight_scale = Tensor(DType::kInt64, {n});
    for (int64_t j = 0; j < n; ++j) {
      const float f = uniform(rng, ws_lo * 0.05, ws_hi * 0.05);  // scale_w * scale_x folded
      uint32_t lo;
      std::memcpy(&lo, &f, sizeof lo);
      const uint64_t hi = rng() & 0xFFFFFFFF00000000ull;
      in.weight_scale.data<int64_t>()[j] = static_cast<int64_t>(hi | lo);
    }
  } else {
    in.weight_scale = testing::random_tensor(DType::kFloat32, {n}, rng, ws_lo, ws_hi);
  }
  switch (c.mode) {
    case Mode::kDynamic:
      break;
    case Mode::kStaticPerToken:
      // Small scales: |x / s| reaches past 127, so the int8 saturation is exercised.
      in.x_scale = testing::random_tensor(DType::kFloat32, {m}, rng, 0.02, 0.1);
      break;
    case Mode::kPerTensor:
      in.x_scale =
          testing::random_tensor(DType::kFloat32, rng() % 2 ? Shape{} : Shape{1}, rng, 0.02, 0.1);
      break;
    case Mode::kFused:
      in.x_scale =
          testing::random_tensor(DType::kFloat16, rng() % 2 ? Shape{} : Shape{1}, rng, 0.02, 0.1);
      break;
  }

  uint16_t* x = in.x.data<uint16_t>();
  switch (s.data) {
    case Data::kRandom:
      break;
    case Data::kZeroRows:
      // Rows 0 and m/2 all zero (signed zeros mixed): s = 0, inv = +Inf, v = 0 * Inf = NaN -> 0.
      for (int64_t i : {int64_t{0}, m / 2}) {
        for (int64_t q = 0; q < k; ++q) x[i * k + q] = rng() % 2 ? 0x8000 : 0x0000;
      }
      break;
    case Data::kSaturate:
      // Wide x and large weight scales: many outputs beyond +-65504, some just around it.
      for (int64_t e = 0; e < m * k; ++e) x[e] = f16(uniform(rng, -100.0, 100.0));
      break;
    case Data::kTies: {
      // v = xf * inv lands on .5: scales that are powers of two (inv exact), x = (t + 0.5) * s. In
      // dynamic mode each row holds +-127, so s = 127 / 127 = 1; smooth is 1.
      for (int64_t q = 0; q < k; ++q) in.smooth.data<uint16_t>()[q] = f16(1.0f);
      const float pow2[] = {1.0f, 0.5f, 2.0f, 0.25f};
      float* xs_pt = c.mode == Mode::kStaticPerToken ? in.x_scale.data<float>() : nullptr;
      if (c.mode == Mode::kPerTensor) in.x_scale.data<float>()[0] = 1.0f;
      if (c.mode == Mode::kFused) in.x_scale.data<uint16_t>()[0] = f16(1.0f);
      for (int64_t i = 0; i < m; ++i) {
        float si = 1.0f;
        if (xs_pt) xs_pt[i] = si = pow2[rng() % 4];
        for (int64_t q = 0; q < k; ++q) {
          // t + 0.5 for t in [-131, 130]: ties on both sides of 0 and past the int8 range.
          const float t = static_cast<float>(static_cast<int64_t>(rng() % 262) - 131) + 0.5f;
          x[i * k + q] =
              f16(c.mode == Mode::kDynamic ? std::fmax(-126.5f, std::fmin(126.5f, t)) : t * si);
        }
        if (c.mode == Mode::kDynamic && k > 0)
          x[i * k + static_cast<int64_t>(rng() % k)] = f16(rng() % 2 ? 127.0f : -127.0f);
      }
      break;
    }
    case Data::kWrap: {
      // x_q = 127 everywhere (scale 1: x = 127, or a dynamic row max of 127) and w = +-127, mostly
      // positive: over k = 150000 the int32 sum passes 2^31 and wraps (and the kernel's internal
      // u8 x s8 sum of (x_q + 128) * w wraps earlier still).
      for (int64_t q = 0; q < k; ++q) in.smooth.data<uint16_t>()[q] = f16(1.0f);
      if (c.mode == Mode::kStaticPerToken) {
        for (int64_t i = 0; i < m; ++i) in.x_scale.data<float>()[i] = 1.0f;
      }
      if (c.mode == Mode::kPerTensor) in.x_scale.data<float>()[0] = 1.0f;
      if (c.mode == Mode::kFused) in.x_scale.data<uint16_t>()[0] = f16(1.0f);
      for (int64_t e = 0; e < m * k; ++e) x[e] = f16(127.0f);
      int8_t* w = in.weight.data<int8_t>();
      for (int64_t e = 0; e < n * k; ++e) w[e] = rng() % 64 == 0 ? -127 : 127;
      break;
    }
    case Data::kSpecials:
      // Any float16 pattern: Inf, NaN (any payload), subnormals, +-65504.
      for (int64_t e = 0; e < m * k; ++e) {
        x[e] = rng() % 4 == 0 ? static_cast<uint16_t>(rng()) : x[e];
      }
      // Subnormal scales (valid: finite and > 0): a subnormal weight scale in column 0, and in
      // static per-token mode a subnormal x scale in row 0 (inv = +Inf).
      if (c.mode == Mode::kFused) {
        in.weight_scale.data<int64_t>()[0] = static_cast<int64_t>(0x7FFFFFFF00000001ull);
      } else {
        in.weight_scale.data<float>()[0] = 1e-40f;
      }
      if (c.mode == Mode::kStaticPerToken) in.x_scale.data<float>()[0] = 1e-40f;
      break;
  }
  return in;
}

std::vector<Case> cases_for(int rows, int cols) {
  std::vector<Case> cs;
  for (const auto& s : testing::matmul_shapes(rows, cols))
    cs.push_back({s.category, s.m, s.n, s.k});
  cs.push_back({"zero_rows", 2 * rows + 1, cols + 3, 37, Data::kZeroRows});
  cs.push_back({"saturate_65504", rows + 1, 2 * cols + 1, 64, Data::kSaturate});
  cs.push_back({"rne_ties", rows + 2, cols, 40, Data::kTies});
  cs.push_back({"specials", rows, cols + 1, 29, Data::kSpecials});
  cs.push_back({"k0", 3, cols - 1 > 0 ? cols - 1 : 1, 0});
  cs.push_back({"int32_wrap", 2, 3, 150000, Data::kWrap});
  return cs;
}

// Every mode combination under the default schedule and random draws (20 in a long run, as the
// other operators' type tuples; 2 by default), on every case of cases_for the draw's tile; one test
// per combination.
class QuantMatmulDequantVariants : public ::testing::TestWithParam<int> {};

TEST_P(QuantMatmulDequantVariants, BitExactAgainstReference) {
  const auto start = std::chrono::steady_clock::now();
  const Combo c = combo(GetParam());
  const uint64_t seed = testing::variant_seed() ^ (0x51D0ull + static_cast<uint64_t>(GetParam()));
  // The sum is exact (int32), so draws may group K (k_group).
  // 32 combinations x (1 + draws) kernels: 2 draws by default (96 kernels: each compile takes a
  // second or two), MMTUNE_LONG=1 for the full 672.
  const auto draws =
      testing::schedule_draws(host_info(), {32, true}, testing::variant_draws(2), seed);
  std::mt19937_64 rng(seed);
  testing::GateCounts counts;
  for (const auto& draw : draws) {
    const HalideVariant variant{draw.schedule, "host"};
    for (const Case& s : cases_for(draw.tile.rows, draw.tile.cols)) {
      const Inputs in = make_inputs(c, s, rng);
      const QuantMatmulDequantArgs args = in.args();
      const Tensor expected = quant_matmul_dequant(args);
      std::ostringstream context;
      context << "QuantMatmulDequant " << c.name() << " " << s.category << " m=" << s.m
              << " n=" << s.n << " k=" << s.k << " schedule " << draw.name << " "
              << kernel_key(quant_matmul_dequant_identity(args), variant).to_string() << " seed "
              << seed;
      // Every case runs a kernel: K = 0 runs as K = 1 over a zero x (the host's rule).
      ASSERT_TRUE(testing::gated_equal(
          expected, [&](JitRun& run) { return quant_matmul_dequant_halide(args, variant, &run); },
          /*expect_kernel=*/s.m * s.n > 0, context.str(), counts));
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[variants] QuantMatmulDequant " << c.name() << ": " << draws.size()
            << " schedules, " << counts.summary() << ", 0 mismatches, " << seconds << " s\n";
}

INSTANTIATE_TEST_SUITE_P(AllModes, QuantMatmulDequantVariants, ::testing::Range(0, kCombos),
                         [](const ::testing::TestParamInfo<int>& info) {
                           std::string name = combo(info.param).name();
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(QuantMatmulDequantHalide, ValidatesLikeTheReference) {
  std::mt19937_64 rng(1);
  Inputs in = make_inputs({Mode::kDynamic, false, false, true}, {"tiny", 2, 3, 4}, rng);
  // Dynamic per tensor, a fused scale with a per-token x scale, a k mismatch, a zero scale.
  auto same_error = [](const QuantMatmulDequantArgs& args) {
    std::string want, got;
    try {
      quant_matmul_dequant(args);
    } catch (const InvalidArgument& e) {
      want = e.what();
    }
    try {
      quant_matmul_dequant_halide(args, {});
    } catch (const InvalidArgument& e) {
      got = e.what();
    }
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(want, got);
  };
  QuantMatmulDequantArgs args = in.args();
  args.x_quant_mode = XQuantMode::kPerTensor;
  same_error(args);
  Tensor ws64(DType::kInt64, {3});
  Tensor xs(DType::kFloat32, {2});
  args = in.args();
  args.weight_scale = &ws64;
  args.x_scale = &xs;
  same_error(args);
  Tensor w_bad(DType::kInt8, {3, 5});
  args = in.args();
  args.weight = &w_bad;
  same_error(args);
  Tensor ws_zero(DType::kFloat32, {3});
  args = in.args();
  args.weight_scale = &ws_zero;
  same_error(args);

  schedules::CpuMatmulParams too_big = schedules::CpuMatmulParams::knobs().defaults();
  too_big.tile_rows = 16;
  too_big.tile_vectors = 8;
  const HalideVariant bad{schedules::Schedule(too_big), "host"};
  try {
    quant_matmul_dequant_halide(in.args(), bad);
    FAIL() << "a 16x8 tile was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("vector registers"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mmtune
