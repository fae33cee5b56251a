// Shared machinery of the variant suites.
#include "tests/variants/variant_support.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>
#include <sstream>
#include <vector>

#include "autotune/kernel_key.h"
#include "reference/codecs.h"
#include "tests/support/test_support.h"

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

int variant_draws(int ci_default) {
  const char* s = std::getenv("MMTUNE_VARIANT_DRAWS");
  const char* long_run = std::getenv("MMTUNE_LONG");
  const bool is_long = long_run && std::string(long_run) == "1";
  const int n = s && *s ? std::atoi(s) : is_long ? std::max(ci_default, 20) : ci_default;
  static const bool printed = [&] {
    std::cout << "[variants] random schedule draws: "
              << (s && *s   ? s
                  : is_long ? "20 (MMTUNE_LONG=1)"
                            : "suite defaults")
              << " (MMTUNE_VARIANT_DRAWS=N or MMTUNE_LONG=1 to change)\n";
    return true;
  }();
  (void)printed;
  return n;
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

std::vector<QlmCase> qlinear_matmul_cases(int rows, int cols) {
  std::vector<QlmCase> out;
  int n = 0;
  for (const auto& s : matmul_shapes(rows, cols)) {
    const std::vector<std::pair<Shape, Shape>> params = {
        {{}, {}}, {{s.m, 1}, {s.n}}, {{1}, {1, s.n}}};
    const auto& [ap, bp] = params[n % params.size()];
    out.push_back({s.category + "_" + std::to_string(n),
                   {s.m, s.k},
                   {s.k, s.n},
                   ap,
                   bp,
                   n % 2 ? "full_range" : "random"});
    ++n;
  }
  out.push_back(
      {"batch_broadcast", {2, 1, 5, 7}, {3, 7, 9}, {2, 1, 5, 1}, {3, 1, 9}, "full_range"});
  out.push_back({"batch_broadcast_b", {4, 3, 6}, {1, 6, 2 * cols + 1}, {}, {1, 1, 2 * cols + 1}});
  out.push_back(
      {"batch_params_only", {2, rows + 1, 20}, {20, cols + 2}, {2, rows + 1, 1}, {cols + 2}});
  out.push_back({"vector_a", {11}, {11, cols + 3}, {}, {cols + 3}});
  out.push_back({"vector_b", {rows + 2, 13}, {13}, {rows + 2, 1}, {}});
  out.push_back({"vector_both", {300}, {300}, {}, {}, "full_range"});
  out.push_back({"ties", {2 * rows + 1, 40}, {40, 2 * cols + 3}, {}, {}, "ties"});
  out.push_back({"wrap_int32", {2, 33100}, {33100, cols + 1}, {}, {}, "wrap"});
  out.push_back({"extreme_scales",
                 {rows + 1, 64},
                 {64, 3 * cols},
                 {rows + 1, 1},
                 {3 * cols},
                 "extreme_scales"});
  return out;
}

namespace {

Tensor constant(DType t, Shape shape, double v) {
  std::mt19937_64 unused(0);
  return random_tensor(t, std::move(shape), unused, v, v);
}

}  // namespace

QlmInputs make_qlinear_matmul_inputs(DType ta, DType tb, DType ty, DType st, const QlmCase& c,
                                     std::mt19937_64& rng) {
  QlmInputs in;
  if (c.data == "wrap") {
    // Every product is (max - min)^2 of the operand types; K of them overflow int32.
    in.a = constant(ta, c.a, quant_max(ta));
    in.b = constant(tb, c.b, quant_max(tb));
    in.az = constant(ta, c.a_param, quant_min(ta));
    in.bz = constant(tb, c.b_param, quant_min(tb));
  } else {
    in.a = random_tensor(ta, c.a, rng, quant_min(ta), quant_max(ta));
    in.b = random_tensor(tb, c.b, rng, quant_min(tb), quant_max(tb));
    const bool full = c.data == "full_range" || c.data == "extreme_scales";
    in.az = random_tensor(ta, c.a_param, rng, full ? quant_min(ta) : quant_min(ta) / 2,
                          full ? quant_max(ta) : quant_max(ta) / 2);
    in.bz = random_tensor(tb, c.b_param, rng, full ? quant_min(tb) : quant_min(tb) / 2,
                          full ? quant_max(tb) : quant_max(tb) / 2);
  }
  in.yz = random_tensor(ty, {}, rng, quant_min(ty), quant_max(ty));
  if (c.data == "ties") {
    // M = 1 * 0.5 / 1 = 0.5 exactly: every odd accumulator lands on a .5 tie.
    in.as = constant(st, c.a_param, 1.0);
    in.bs = constant(st, c.b_param, 0.5);
    in.ys = constant(st, {}, 1.0);
  } else if (c.data == "extreme_scales") {
    in.as = random_scales(st, c.a_param, rng, -4, 4);
    in.bs = random_scales(st, c.b_param, rng, st == DType::kFloat16 ? -14 : -60,
                          st == DType::kFloat16 ? 14 : 60);
    in.ys = random_scales(st, {}, rng, -2, 2);
  } else {
    // Products of ~K * 128 * 128 scaled back to about the output range.
    const double e = -std::log2(std::max<double>(1, static_cast<double>(c.a.back())) * 128.0);
    in.as = random_scales(st, c.a_param, rng, e / 2 - 1, e / 2 + 1);
    in.bs = random_scales(st, c.b_param, rng, e / 2 - 1, e / 2 + 1);
    in.ys = random_scales(st, {}, rng, -8, -6);
  }
  return in;
}

const char* float_data_name(FloatData d) {
  switch (d) {
    case FloatData::kPlain:
      return "plain";
    case FloatData::kHuge:
      return "huge";
    case FloatData::kTiny:
      return "tiny";
    case FloatData::kSpecial:
      return "special";
  }
  return "?";
}

namespace {

// Bit patterns of special values per float type: subnormals, -0, extremes, infinities, NaNs with
// non-canonical payloads of both signs.
std::vector<uint64_t> special_patterns(DType t) {
  switch (t) {
    case DType::kFloat32:
      return {0x00000001, 0x807FFFFF, 0x80000000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
              0xFF800000, 0x7FC00001, 0xFFC12345, 0x7F800001, 0x00800000};
    case DType::kFloat64:
      return {0x1,
              0x800FFFFFFFFFFFFF,
              0x8000000000000000,
              0x7FEFFFFFFFFFFFFF,
              0xFFEFFFFFFFFFFFFF,
              0x7FF0000000000000,
              0xFFF0000000000000,
              0x7FF8000000000001,
              0xFFF8123456789ABC,
              0x7FF0000000000001,
              0x0010000000000000};
    case DType::kFloat16:
      return {0x0001, 0x83FF, 0x8000, 0x7BFF, 0xFBFF, 0x7C00,
              0xFC00, 0x7E01, 0xFE55, 0x7C01, 0x0400};
    case DType::kBFloat16:
      return {0x0001, 0x807F, 0x8000, 0x7F7F, 0xFF7F, 0x7F80,
              0xFF80, 0x7FC1, 0xFFD5, 0x7F81, 0x0080};
    default:
      return {};
  }
}

// 2^e such that [-2, 2] x 2^e has products reaching the accumulator's overflow threshold (huge) or
// its subnormal range (tiny, as 2^-e).
int huge_exponent(DType t) {
  switch (t) {
    case DType::kFloat64:
      return 511;
    case DType::kFloat16:
      return 14;  // values up to 32768; products up to 2^30, the float16 result overflows
    default:
      return 63;  // float32, bfloat16: products up to 2^128
  }
}
int tiny_exponent(DType t) {
  switch (t) {
    case DType::kFloat64:
      return 540;
    case DType::kFloat16:
      return 16;  // float16 subnormals; products near 2^-32, exact in float32
    default:
      return 70;  // products near 2^-140: float32 subnormals
  }
}

void set_bits(Tensor& x, int64_t i, uint64_t bits) {
  std::memcpy(x.bytes.data() + i * dtype_size(x.dtype), &bits, dtype_size(x.dtype));
}

}  // namespace

Tensor random_float_tensor(DType t, Shape shape, std::mt19937_64& rng, FloatData kind) {
  const double scale = kind == FloatData::kHuge   ? std::ldexp(1.0, huge_exponent(t))
                       : kind == FloatData::kTiny ? std::ldexp(1.0, -tiny_exponent(t))
                                                  : 1.0;
  Tensor x = random_tensor(t, std::move(shape), rng, -2.0 * scale, 2.0 * scale);
  if (kind == FloatData::kSpecial) {
    const std::vector<uint64_t> specials = special_patterns(t);
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (rng() % 8 == 0) set_bits(x, i, specials[rng() % specials.size()]);
    }
  }
  return x;
}

std::string GateCounts::summary() const {
  std::ostringstream os;
  os << kernel_cases << " kernel cases (" << outputs << " outputs through the gate), "
     << reference_cases << " reference-path cases";
  return os.str();
}

::testing::AssertionResult gated_equal(const Tensor& expected,
                                       const std::function<Tensor(JitRun&)>& call,
                                       bool expect_kernel, const std::string& context,
                                       GateCounts& counts) {
  GateResult g;
  try {
    g = run_gated(expected, call);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << e.what() << " (" << context << ")";
  }
  if (g.violation) return ::testing::AssertionFailure() << *g.violation << " (" << context << ")";
  if (expect_kernel && g.kernel_calls == 0) {
    return ::testing::AssertionFailure()
           << "no kernel ran: the reference computed the case (" << context << ")";
  }
  ::testing::AssertionResult same = bit_equal(expected, g.actual, context);
  if (!same) return same;
  if (g.kernel_calls > 0) {
    ++counts.kernel_cases;
    counts.outputs += expected.numel();
  } else {
    ++counts.reference_cases;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace mmtune::testing
