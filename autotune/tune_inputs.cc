// Kernel identity specs, calls of an identity, the gate battery, and the data generators the tuner
// and the variant suites share.
#include "autotune/tune_inputs.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "reference/codecs.h"
#include "reference/gemm.h"
#include "reference/qgemm.h"

namespace mmtune::tune {

// ---- Data generators ----------------------------------------------------------------------------

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
  const bool differs = c.data == "a_scale_differs" || c.data == "a_zero_point_differs" ||
                       c.data == "b_zero_point_differs";
  if (c.data == "equal_params" || differs) {
    // Per-row / per-column parameters whose values are all one (the kernels' per-tensor branch
    // once the host sees it), or all one but the last of one of them (their general branch).
    for (Tensor* t : {&in.as, &in.az, &in.bs, &in.bz}) {
      const std::size_t w = dtype_size(t->dtype);
      for (int64_t i = 1; i < t->numel(); ++i) {
        std::memcpy(t->bytes.data() + i * w, t->bytes.data(), w);
      }
    }
    // The last element moved: a scale halved, a zero point by one.
    auto differ = [](Tensor& t) {
      const int64_t i = t.numel() - 1;
      auto half = [&] { return static_cast<float>(float_at(t, 0) * 0.5); };
      switch (t.dtype) {
        case DType::kFloat32:
          t.data<float>()[i] = half();
          break;
        case DType::kFloat16:
          t.data<uint16_t>()[i] = float_to_float16(half());
          break;
        case DType::kBFloat16:
          t.data<uint16_t>()[i] = float_to_bfloat16(half());
          break;
        case DType::kInt8:
          t.data<int8_t>()[i] =
              static_cast<int8_t>(t.data<int8_t>()[0] > -128 ? t.data<int8_t>()[0] - 1 : -127);
          break;
        default:
          t.data<uint8_t>()[i] =
              static_cast<uint8_t>(t.data<uint8_t>()[0] > 0 ? t.data<uint8_t>()[0] - 1 : 1);
      }
    };
    if (c.data == "a_scale_differs") differ(in.as);
    if (c.data == "a_zero_point_differs") differ(in.az);
    if (c.data == "b_zero_point_differs") differ(in.bz);
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

QlmInputs make_float8_qlinear_matmul_inputs(DType ta, DType tb, DType ty, DType st, int64_t m,
                                            int64_t n, int64_t k, int special_one_in,
                                            std::mt19937_64& rng, int64_t* specials) {
  QlmInputs in;
  in.a = random_tensor(ta, {m, k}, rng, -8, 8);
  in.b = random_tensor(tb, {k, n}, rng, -8, 8);
  // A few special patterns: every format's NaN (0x7F/0xFF or 0x80), E5M2 infinities, -0.
  for (Tensor* t : {&in.a, &in.b}) {
    if (special_one_in > 0 && rng() % special_one_in == 0 && t->numel() > 0) {
      const uint8_t special[] = {0x7F, 0xFF, 0x80, 0x7C, 0xFC};
      t->data<uint8_t>()[rng() % t->numel()] = special[rng() % 5];
      if (specials) ++*specials;
    }
  }
  in.az = Tensor(ta, {});
  in.bz = Tensor(tb, {});
  in.yz = Tensor(ty, {});
  in.as = random_scales(st, {m, 1}, rng, -3, 3);
  in.bs = random_scales(st, {n}, rng, -3, 3);
  in.ys = random_scales(st, {}, rng, -12, 4);
  return in;
}

QGemmInputs make_qgemm_inputs(DType ta, DType tb, DType ty, const QGemmCase& c,
                              std::mt19937_64& rng) {
  QGemmInputs in;
  in.a = random_tensor(ta, c.trans_a ? Shape{c.k, c.m} : Shape{c.m, c.k}, rng, quant_min(ta),
                       quant_max(ta));
  in.b = random_tensor(tb, c.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, rng, quant_min(tb),
                       quant_max(tb));
  in.as = random_tensor(DType::kFloat32, {}, rng, 0.002, 0.004);
  in.az = random_tensor(ta, {1}, rng, quant_min(ta), quant_max(ta));
  in.bs = random_tensor(DType::kFloat32, c.per_column ? Shape{c.n} : Shape{}, rng, 0.002, 0.004);
  in.bz = random_tensor(tb, in.bs.shape, rng, quant_min(tb), quant_max(tb));
  // Near the int32 limits with big_c, so that C + sum wraps.
  in.c = random_tensor(DType::kInt32, c.c_shape, rng, c.big_c ? 2147000000.0 : -5000.0,
                       c.big_c ? 2147483647.0 : 5000.0);
  in.ys = random_tensor(DType::kFloat32, {}, rng, 0.01, 0.05);
  in.yz = random_tensor(ty, {}, rng, quant_min(ty), quant_max(ty));
  return in;
}

const char* qmd_mode_name(QmdMode m) {
  switch (m) {
    case QmdMode::kDynamic:
      return "dynamic-pertoken";
    case QmdMode::kStaticPerToken:
      return "static-pertoken";
    case QmdMode::kPerTensor:
      return "pertensor-float32";
    case QmdMode::kFused:
      return "fused-int64-pertensor-float16";
  }
  return "?";
}

std::string QmdCombo::name() const {
  std::ostringstream os;
  os << qmd_mode_name(mode) << (smooth ? " smooth" : " no-smooth") << (bias ? " bias" : " no-bias")
     << " transpose_weight=" << transpose;
  return os.str();
}

QGemmArgs QGemmInputs::args(bool with_c, bool with_y_scale, bool with_y_zero_point) const {
  QGemmArgs r;
  r.a = &a;
  r.b = &b;
  r.a_scale = &as;
  r.a_zero_point = &az;
  r.b_scale = &bs;
  r.b_zero_point = &bz;
  r.c = with_c ? &c : nullptr;
  r.y_scale = with_y_scale ? &ys : nullptr;
  r.y_zero_point = with_y_zero_point ? &yz : nullptr;
  return r;
}

QuantMatmulDequantArgs QmdInputs::args() const {
  QuantMatmulDequantArgs a;
  a.x = &x;
  a.weight = &weight;
  a.weight_scale = &weight_scale;
  a.bias = c.bias ? &bias : nullptr;
  a.x_scale = c.mode == QmdMode::kDynamic ? nullptr : &x_scale;
  a.smooth_scale = c.smooth ? &smooth : nullptr;
  a.x_quant_mode = c.mode == QmdMode::kDynamic || c.mode == QmdMode::kStaticPerToken
                       ? XQuantMode::kPerToken
                       : XQuantMode::kPerTensor;
  a.transpose_weight = c.transpose;
  return a;
}

namespace {

float uniform(std::mt19937_64& rng, double lo, double hi) {
  return static_cast<float>(std::uniform_real_distribution<double>(lo, hi)(rng));
}

uint16_t f16(float v) { return float_to_float16(v); }

}  // namespace

QmdInputs make_quant_matmul_dequant_inputs(const QmdCombo& c, const QmdCase& s,
                                           std::mt19937_64& rng) {
  const int64_t m = s.m, n = s.n, k = s.k;
  QmdInputs in;
  in.c = c;
  in.x = random_tensor(DType::kFloat16, {m, k}, rng, -8.0, 8.0);
  in.weight = random_tensor(DType::kInt8, c.transpose ? Shape{n, k} : Shape{k, n}, rng, -128, 127);
  in.smooth = Tensor(DType::kFloat16, {k});
  // Half the smooth values from a set whose products with float16 x often tie in fl16(x * smooth).
  const float tie_prone[] = {1.5f, 0.75f, 1.25f, -1.5f, 0.625f, 1.0f, 3.0f, -0.375f};
  for (int64_t q = 0; q < k; ++q) {
    in.smooth.data<uint16_t>()[q] =
        rng() % 2 ? f16(tie_prone[rng() % 8]) : f16(uniform(rng, -2.0, 2.0));
  }
  in.bias = random_tensor(DType::kInt32, {n}, rng, -5000, 5000);
  if (n >= 2) {
    // Two columns whose bias makes the int32 sum wrap.
    in.bias.data<int32_t>()[0] =
        std::numeric_limits<int32_t>::max() - static_cast<int32_t>(rng() % 64);
    in.bias.data<int32_t>()[n - 1] =
        std::numeric_limits<int32_t>::min() + static_cast<int32_t>(rng() % 64);
  }
  double ws_lo = 1e-3, ws_hi = 5e-2;
  if (s.data == QmdData::kSaturate) ws_lo = 2.0, ws_hi = 64.0;
  if (s.data == QmdData::kWrap) ws_lo = 1e-6, ws_hi = 2e-5;  // |f| of a ~2^31 sum stays below 65504
  if (c.mode == QmdMode::kFused) {
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
    in.weight_scale = random_tensor(DType::kFloat32, {n}, rng, ws_lo, ws_hi);
  }
  switch (c.mode) {
    case QmdMode::kDynamic:
      break;
    case QmdMode::kStaticPerToken:
      // Small scales: |x / s| reaches past 127, so the int8 saturation is exercised.
      in.x_scale = random_tensor(DType::kFloat32, {m}, rng, 0.02, 0.1);
      break;
    case QmdMode::kPerTensor:
      in.x_scale = random_tensor(DType::kFloat32, rng() % 2 ? Shape{} : Shape{1}, rng, 0.02, 0.1);
      break;
    case QmdMode::kFused:
      in.x_scale = random_tensor(DType::kFloat16, rng() % 2 ? Shape{} : Shape{1}, rng, 0.02, 0.1);
      break;
  }

  uint16_t* x = in.x.data<uint16_t>();
  switch (s.data) {
    case QmdData::kRandom:
      break;
    case QmdData::kZeroRows:
      // Rows 0 and m/2 all zero (signed zeros mixed): s = 0, inv = +Inf, v = 0 * Inf = NaN -> 0.
      for (int64_t i : {int64_t{0}, m / 2}) {
        for (int64_t q = 0; q < k; ++q) x[i * k + q] = rng() % 2 ? 0x8000 : 0x0000;
      }
      break;
    case QmdData::kSaturate:
      // Wide x and large weight scales: many outputs beyond +-65504, some just around it.
      for (int64_t e = 0; e < m * k; ++e) x[e] = f16(uniform(rng, -100.0, 100.0));
      break;
    case QmdData::kTies: {
      // v = xf * inv lands on .5: scales that are powers of two (inv exact), x = (t + 0.5) * s. In
      // dynamic mode each row holds +-127, so s = 127 / 127 = 1; smooth is 1.
      for (int64_t q = 0; q < k; ++q) in.smooth.data<uint16_t>()[q] = f16(1.0f);
      const float pow2[] = {1.0f, 0.5f, 2.0f, 0.25f};
      float* xs_pt = c.mode == QmdMode::kStaticPerToken ? in.x_scale.data<float>() : nullptr;
      if (c.mode == QmdMode::kPerTensor) in.x_scale.data<float>()[0] = 1.0f;
      if (c.mode == QmdMode::kFused) in.x_scale.data<uint16_t>()[0] = f16(1.0f);
      for (int64_t i = 0; i < m; ++i) {
        float si = 1.0f;
        if (xs_pt) xs_pt[i] = si = pow2[rng() % 4];
        for (int64_t q = 0; q < k; ++q) {
          // t + 0.5 for t in [-131, 130]: ties on both sides of 0 and past the int8 range.
          const float t = static_cast<float>(static_cast<int64_t>(rng() % 262) - 131) + 0.5f;
          x[i * k + q] =
              f16(c.mode == QmdMode::kDynamic ? std::fmax(-126.5f, std::fmin(126.5f, t)) : t * si);
        }
        if (c.mode == QmdMode::kDynamic && k > 0)
          x[i * k + static_cast<int64_t>(rng() % k)] = f16(rng() % 2 ? 127.0f : -127.0f);
      }
      break;
    }
    case QmdData::kWrap: {
      // x_q = 127 everywhere (scale 1: x = 127, or a dynamic row max of 127) and w = +-127, mostly
      // positive: over k = 150000 the int32 sum passes 2^31 and wraps (and the kernel's internal
      // u8 x s8 sum of (x_q + 128) * w wraps earlier still).
      for (int64_t q = 0; q < k; ++q) in.smooth.data<uint16_t>()[q] = f16(1.0f);
      if (c.mode == QmdMode::kStaticPerToken) {
        for (int64_t i = 0; i < m; ++i) in.x_scale.data<float>()[i] = 1.0f;
      }
      if (c.mode == QmdMode::kPerTensor) in.x_scale.data<float>()[0] = 1.0f;
      if (c.mode == QmdMode::kFused) in.x_scale.data<uint16_t>()[0] = f16(1.0f);
      for (int64_t e = 0; e < m * k; ++e) x[e] = f16(127.0f);
      int8_t* w = in.weight.data<int8_t>();
      for (int64_t e = 0; e < n * k; ++e) w[e] = rng() % 64 == 0 ? -127 : 127;
      break;
    }
    case QmdData::kSpecials:
      // Any float16 pattern: Inf, NaN (any payload), subnormals, +-65504.
      for (int64_t e = 0; e < m * k; ++e) {
        x[e] = rng() % 4 == 0 ? static_cast<uint16_t>(rng()) : x[e];
      }
      // Subnormal scales (valid: finite and > 0): a subnormal weight scale in column 0, and in
      // static per-token mode a subnormal x scale in row 0 (inv = +Inf).
      if (c.mode == QmdMode::kFused) {
        in.weight_scale.data<int64_t>()[0] = static_cast<int64_t>(0x7FFFFFFF00000001ull);
      } else {
        in.weight_scale.data<float>()[0] = 1e-40f;
      }
      if (c.mode == QmdMode::kStaticPerToken) in.x_scale.data<float>()[0] = 1e-40f;
      break;
  }
  return in;
}

namespace {

// ---- Kernel identity specs ----------------------------------------------------------------------

using Params = std::map<std::string, std::string>;
// The identity parameters one VALUE of a KEY sets.
using Assignments = std::vector<std::pair<std::string, std::string>>;

struct KeyDef {
  std::string name;
  std::vector<std::pair<std::string, Assignments>> values;  // VALUE -> what it sets
};

// One operator's spec grammar (the header's table).
struct OpGrammar {
  std::string op, generator;
  std::vector<std::string> type_params;    // what TYPES fills, in order
  std::vector<std::string> format_params;  // QLinearMatMul: the float8 format of each type param
  std::vector<DType> types;                // the types TYPES accepts
  std::vector<KeyDef> keys;                // identity parameters first, then friendly keys
  std::function<void(Params&)> defaults;   // fills what no part set
  // The friendly parts that spell an identity's parameters, in canonical order.
  std::function<std::vector<std::string>(const Params&)> friendly;
};

const std::vector<std::string> kFlags = {"false", "true"};

KeyDef alias_key(const std::string& name, const std::string& param,
                 const std::vector<std::string>& values) {
  KeyDef k{name, {}};
  for (const std::string& v : values) k.values.push_back({v, {{param, v}}});
  return k;
}
KeyDef param_key(const std::string& name, const std::vector<std::string>& values) {
  return alias_key(name, name, values);
}
std::vector<std::string> names_of(const std::vector<DType>& types) {
  std::vector<std::string> out;
  for (DType t : types) out.push_back(dtype_name(t));
  return out;
}

// The value of `p` in `params`, or "" when absent.
std::string get(const Params& params, const std::string& p) {
  auto it = params.find(p);
  return it == params.end() ? "" : it->second;
}
void set_default(Params& params, const std::string& p, const std::string& v) {
  params.emplace(p, v);  // keeps a value a part set
}

const std::vector<DType> kGemmTypes = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                                       DType::kBFloat16, DType::kInt32,   DType::kInt64,
                                       DType::kUInt32,   DType::kUInt64};
const std::vector<DType> kQuantTypes = {DType::kInt8, DType::kUInt8};
const std::vector<DType> kFloat8Types = {DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ,
                                         DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ};

OpGrammar gemm_grammar() {
  OpGrammar g{
      "Gemm", "mmtune_gemm", {"A.type", "B.type", "C.type", "Y.type"}, {}, kGemmTypes, {}, {}, {}};
  for (const std::string& p : g.type_params) g.keys.push_back(param_key(p, names_of(kGemmTypes)));
  for (const char* p : {"trans_a", "trans_b", "has_c"}) g.keys.push_back(param_key(p, kFlags));
  g.keys.push_back(param_key("contract", {"strict", "fma"}));
  g.keys.push_back(param_key("prepacked_b", {"true"}));
  g.defaults = [](Params& p) {
    set_default(p, "A.type", "float32");
    for (const char* t : {"B.type", "C.type", "Y.type"}) set_default(p, t, p["A.type"]);
    set_default(p, "trans_a", "false");
    set_default(p, "trans_b", "false");
    set_default(p, "has_c", "true");
    set_default(p, "contract", "strict");
  };
  g.friendly = [](const Params& p) {
    return std::vector<std::string>{"trans_a=" + get(p, "trans_a"), "trans_b=" + get(p, "trans_b"),
                                    "has_c=" + get(p, "has_c"), "contract=" + get(p, "contract")};
  };
  return g;
}

OpGrammar qlinear_matmul_grammar() {
  std::vector<DType> types = kQuantTypes;
  types.insert(types.end(), kFloat8Types.begin(), kFloat8Types.end());
  OpGrammar g{"QLinearMatMul",
              "mmtune_qlinear_matmul",
              {"a.type", "b.type", "y.type"},
              {"a_format", "b_format", "y_format"},
              types,
              {},
              {},
              {}};
  for (const std::string& p : g.type_params) g.keys.push_back(param_key(p, names_of(kQuantTypes)));
  for (const std::string& p : g.format_params) {
    g.keys.push_back(param_key(p, names_of(kFloat8Types)));
  }
  const std::vector<std::string> scale_types = {"float32", "float16", "bfloat16"};
  g.keys.push_back(param_key("scale_type", scale_types));
  g.keys.push_back(param_key("requant", {"float32", "float64"}));
  g.keys.push_back(alias_key("scale", "scale_type", scale_types));
  g.keys.push_back(param_key("prepacked_b", {"true"}));
  g.defaults = [](Params& p) {
    set_default(p, "a.type", "uint8");
    set_default(p, "b.type", "int8");
    set_default(p, "y.type", "uint8");
    set_default(p, "scale_type", "float32");
    set_default(p, "requant", "float32");
  };
  g.friendly = [](const Params& p) {
    return std::vector<std::string>{"scale=" + get(p, "scale_type"),
                                    "requant=" + get(p, "requant")};
  };
  return g;
}

OpGrammar qgemm_grammar() {
  OpGrammar g{"QGemm", "mmtune_qgemm", {"A.type", "B.type"}, {}, kQuantTypes, {}, {}, {}};
  for (const std::string& p : g.type_params) g.keys.push_back(param_key(p, names_of(kQuantTypes)));
  const std::vector<std::string> outputs = {"float32", "uint8", "int8"};
  g.keys.push_back(param_key("Y.type", outputs));
  g.keys.push_back(param_key("has_y_scale", kFlags));
  g.keys.push_back(alias_key("output", "Y.type", outputs));
  g.keys.push_back(alias_key("y_scale", "has_y_scale", kFlags));
  g.keys.push_back(param_key("prepacked_b", {"true"}));
  g.defaults = [](Params& p) {
    set_default(p, "A.type", "uint8");
    set_default(p, "B.type", "int8");
    set_default(p, "Y.type", "float32");
    set_default(p, "has_y_scale", "true");
  };
  g.friendly = [](const Params& p) {
    return std::vector<std::string>{"output=" + get(p, "Y.type"),
                                    "y_scale=" + get(p, "has_y_scale")};
  };
  return g;
}

OpGrammar quant_matmul_dequant_grammar() {
  OpGrammar g{"QuantMatmulDequant", "mmtune_quant_matmul_dequant", {}, {}, {}, {}, {}, {}};
  for (const char* p :
       {"transpose_weight", "fused_scale", "dynamic", "per_token", "has_smooth", "has_bias"}) {
    g.keys.push_back(param_key(p, kFlags));
  }
  g.keys.push_back(param_key("weight_scale.type", {"float32", "int64"}));
  g.keys.push_back(param_key("x_scale.type", {"float32", "float16"}));
  g.keys.push_back({"x_quant",
                    {{"dynamic_pertoken", {{"dynamic", "true"}, {"per_token", "true"}}},
                     {"static_pertoken", {{"dynamic", "false"}, {"per_token", "true"}}},
                     {"static_pertensor", {{"dynamic", "false"}, {"per_token", "false"}}},
                     {"pertoken", {{"per_token", "true"}}},
                     {"pertensor", {{"per_token", "false"}}}}});
  g.keys.push_back(
      {"weight",
       {{"nk", {{"transpose_weight", "true"}}}, {"kn", {{"transpose_weight", "false"}}}}});
  g.keys.push_back(alias_key("smooth", "has_smooth", kFlags));
  g.keys.push_back(alias_key("bias", "has_bias", kFlags));
  g.keys.push_back(param_key("prepacked_b", {"true"}));
  g.defaults = [](Params& p) {
    set_default(p, "transpose_weight", "false");  // the runtime's kernels read (K, N)
    set_default(p, "fused_scale", "false");
    const bool fused = p["fused_scale"] == "true";
    // A fused weight scale goes with a static per-tensor x scale; dynamic scales are per token.
    set_default(p, "per_token", fused ? "false" : "true");
    set_default(p, "dynamic", p["per_token"] == "true" && !fused ? "true" : "false");
    set_default(p, "has_smooth", "false");
    set_default(p, "has_bias", "true");
    set_default(p, "weight_scale.type", fused ? "int64" : "float32");
    set_default(p, "x_scale.type", fused && p["dynamic"] == "false" ? "float16" : "float32");
  };
  g.friendly = [](const Params& p) {
    std::vector<std::string> parts;
    const std::string dynamic = get(p, "dynamic"), per_token = get(p, "per_token");
    if (per_token == "true") {
      parts.push_back(dynamic == "true" ? "x_quant=dynamic_pertoken" : "x_quant=static_pertoken");
    } else if (dynamic == "false") {
      parts.push_back("x_quant=static_pertensor");
    }
    parts.push_back("fused_scale=" + get(p, "fused_scale"));
    parts.push_back(get(p, "transpose_weight") == "false" ? "weight=kn" : "weight=nk");
    parts.push_back("smooth=" + get(p, "has_smooth"));
    parts.push_back("bias=" + get(p, "has_bias"));
    return parts;
  };
  return g;
}

const std::vector<OpGrammar>& grammars() {
  static const std::vector<OpGrammar> g = {gemm_grammar(), qlinear_matmul_grammar(),
                                           qgemm_grammar(), quant_matmul_dequant_grammar()};
  return g;
}

const OpGrammar* grammar_of(const std::string& op) {
  for (const OpGrammar& g : grammars()) {
    if (g.op == op) return &g;
  }
  return nullptr;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string::size_type start = 0;
  for (;;) {
    const auto end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string key_names(const OpGrammar& g) {
  std::vector<std::string> names;
  for (const KeyDef& k : g.keys) names.push_back(k.name);
  return join(names, ", ");
}

// ---- Calls --------------------------------------------------------------------------------------

const std::string& param(const KernelIdentity& id, const std::string& name) {
  auto it = id.params.find(name);
  if (it == id.params.end()) {
    invalid(id.op, "the kernel identity ", id.to_string(), " has no parameter ", name);
  }
  return it->second;
}
bool param_flag(const KernelIdentity& id, const std::string& name) {
  const std::string& v = param(id, name);
  if (v != "true" && v != "false") {
    invalid(id.op, "the kernel identity's parameter ", name, "=", v, " is not true or false");
  }
  return v == "true";
}
DType param_dtype(const KernelIdentity& id, const std::string& name) {
  const std::string& v = param(id, name);
  const std::optional<DType> t = dtype_from_name(v);
  if (!t) {
    invalid(id.op, "the kernel identity's parameter ", name, "=", v, " is not a type (",
            all_dtype_names(), ")");
  }
  return *t;
}
// QLinearMatMul's operand type: the float8 format where the identity names one, else the type.
DType qlm_type(const KernelIdentity& id, const std::string& operand) {
  return id.params.count(operand + "_format") ? param_dtype(id, operand + "_format")
                                              : param_dtype(id, operand + ".type");
}

bool is_gemm_float(DType t) { return is_float(t) && !is_float8(t); }

// Scale element i set to v, rounded to the scale's type.
void set_scale(Tensor& t, int64_t i, float v) {
  if (t.dtype == DType::kFloat32) t.data<float>()[i] = v;
  if (t.dtype == DType::kFloat16) t.data<uint16_t>()[i] = float_to_float16(v);
  if (t.dtype == DType::kBFloat16) t.data<uint16_t>()[i] = float_to_bfloat16(v);
}

// Halves b's scale in every column whose multiplier fl(fl(a_scale * b_scale) / y_scale) with the
// largest a scale is not finite in the scale type (the reference refuses such a call; it is
// monotonic in both scales), so that extreme float16 scales stay valid.
void keep_multipliers_finite(QlmInputs& in, DType st) {
  if (st != DType::kFloat32 && st != DType::kFloat16 && st != DType::kBFloat16) return;
  if (in.as.dtype != st || in.bs.dtype != st || in.ys.dtype != st || in.ys.numel() != 1) return;
  float max_as = 0;
  for (int64_t i = 0; i < in.as.numel(); ++i) {
    max_as = std::fmax(max_as, static_cast<float>(float_at(in.as, i)));
  }
  const float ys = static_cast<float>(float_at(in.ys, 0));
  for (int64_t j = 0; j < in.bs.numel(); ++j) {
    for (float bs = static_cast<float>(float_at(in.bs, j));
         bs > 0 && !std::isfinite(qlinear_multiplier(st, max_as, bs, ys));
         bs = static_cast<float>(float_at(in.bs, j))) {
      set_scale(in.bs, j, bs * 0.5f);
    }
  }
}

OpCall gemm_call(const KernelIdentity& id, int64_t m, int64_t n, int64_t k, DataKind kind,
                 std::mt19937_64& rng) {
  const bool trans_a = param_flag(id, "trans_a"), trans_b = param_flag(id, "trans_b");
  const FloatData data = kind == DataKind::kHuge      ? FloatData::kHuge
                         : kind == DataKind::kTiny    ? FloatData::kTiny
                         : kind == DataKind::kSpecial ? FloatData::kSpecial
                                                      : FloatData::kPlain;
  auto make = [&](DType t, Shape s) {
    if (is_gemm_float(t)) return random_float_tensor(t, std::move(s), rng, data);
    const ValueRange r = gemm_value_range(t);
    return random_tensor(t, std::move(s), rng, r.lo, r.hi);
  };
  OpCall call{"Gemm", {}, {}};
  call.inputs["A"] = make(param_dtype(id, "A.type"), trans_a ? Shape{k, m} : Shape{m, k});
  call.inputs["B"] = make(param_dtype(id, "B.type"), trans_b ? Shape{n, k} : Shape{k, n});
  if (param_flag(id, "has_c")) call.inputs["C"] = make(param_dtype(id, "C.type"), {m, n});
  // alpha and beta are the kernel's parameters: the plain case and a few that scale, drop or
  // negate C.
  const std::pair<const char*, const char*> alpha_beta[] = {
      {"1", "1"}, {"0.75", "0"}, {"-1.5", "0.5"}, {"2", "-1"}};
  const auto& [alpha, beta] = alpha_beta[rng() % 4];
  call.attrs = {{"alpha", alpha},
                {"beta", beta},
                {"transA", trans_a ? "1" : "0"},
                {"transB", trans_b ? "1" : "0"},
                {"contract", param(id, "contract")}};
  return call;
}

OpCall qlinear_matmul_call(const KernelIdentity& id, int64_t m, int64_t n, int64_t k, DataKind kind,
                           std::mt19937_64& rng) {
  const DType ta = qlm_type(id, "a"), tb = qlm_type(id, "b"), ty = qlm_type(id, "y");
  const DType st = param_dtype(id, "scale_type");
  QlmInputs in;
  if (is_float8(ta) || is_float8(tb) || is_float8(ty)) {
    in = make_float8_qlinear_matmul_inputs(ta, tb, ty, st, m, n, k,
                                           kind == DataKind::kSpecial ? 1 : 0, rng);
  } else {
    QlmCase c{"call", {m, k}, {k, n}, {}, {}};
    if (kind == DataKind::kFullRange || kind == DataKind::kExtremeScales) {
      c.a_param = {m, 1};  // per row
      c.b_param = {n};     // per column
    }
    c.data = kind == DataKind::kFullRange       ? "full_range"
             : kind == DataKind::kTies          ? "ties"
             : kind == DataKind::kExtremeScales ? "extreme_scales"
             : kind == DataKind::kWrap          ? "wrap"
                                                : "random";
    in = make_qlinear_matmul_inputs(ta, tb, ty, st, c, rng);
  }
  keep_multipliers_finite(in, st);
  return {"QLinearMatMul",
          {{"a", std::move(in.a)},
           {"a_scale", std::move(in.as)},
           {"a_zero_point", std::move(in.az)},
           {"b", std::move(in.b)},
           {"b_scale", std::move(in.bs)},
           {"b_zero_point", std::move(in.bz)},
           {"y_scale", std::move(in.ys)},
           {"y_zero_point", std::move(in.yz)}},
          {{"opset", "21"}, {"requant", param(id, "requant")}}};
}

OpCall qgemm_call(const KernelIdentity& id, int64_t m, int64_t n, int64_t k, DataKind kind,
                  std::mt19937_64& rng) {
  const DType ta = param_dtype(id, "A.type"), tb = param_dtype(id, "B.type");
  const bool quantized = param(id, "Y.type") != "float32";
  const DType ty = quantized ? param_dtype(id, "Y.type") : DType::kUInt8;
  const bool per_column = kind == DataKind::kFullRange || kind == DataKind::kExtremeScales;
  const bool big_c = kind == DataKind::kFullRange;
  QGemmInputs in =
      make_qgemm_inputs(ta, tb, ty, {m, n, k, false, false, per_column, {m, n}, big_c}, rng);
  const char* alphas[] = {"1", "1.75", "0.5"};
  std::string alpha = alphas[rng() % 3];
  switch (kind) {
    case DataKind::kTies:
      // s = fl32(fl32(1 * 1) * 0.5) / 1 = 0.5: every odd sum lands on a .5 tie.
      alpha = "1";
      in.as = constant(DType::kFloat32, {}, 1.0);
      in.bs = constant(DType::kFloat32, {}, 0.5);
      in.ys = constant(DType::kFloat32, {}, 1.0);
      break;
    case DataKind::kExtremeScales:
      in.as = random_scales(DType::kFloat32, {}, rng, -4, 4);
      in.bs = random_scales(DType::kFloat32, {n}, rng, -60, 60);
      in.ys = random_scales(DType::kFloat32, {}, rng, -2, 2);
      break;
    case DataKind::kWrap:
      // Every product is (max - min)^2 of the operand types; K of them overflow int32.
      in.a = constant(ta, in.a.shape, quant_max(ta));
      in.b = constant(tb, in.b.shape, quant_max(tb));
      in.az = constant(ta, in.az.shape, quant_min(ta));
      in.bz = constant(tb, in.bz.shape, quant_min(tb));
      break;
    default:
      break;
  }
  OpCall call{"QGemm",
              {{"A", std::move(in.a)},
               {"a_scale", std::move(in.as)},
               {"a_zero_point", std::move(in.az)},
               {"B", std::move(in.b)},
               {"b_scale", std::move(in.bs)},
               {"b_zero_point", std::move(in.bz)},
               {"C", std::move(in.c)}},
              {{"alpha", alpha}}};
  if (param_flag(id, "has_y_scale")) call.inputs["y_scale"] = std::move(in.ys);
  if (quantized) call.inputs["y_zero_point"] = std::move(in.yz);
  return call;
}

OpCall quant_matmul_dequant_call(const KernelIdentity& id, int64_t m, int64_t n, int64_t k,
                                 DataKind kind, std::mt19937_64& rng) {
  const bool fused = param_flag(id, "fused_scale"), dynamic = param_flag(id, "dynamic");
  const bool per_token = param_flag(id, "per_token"), smooth = param_flag(id, "has_smooth");
  const bool bias = param_flag(id, "has_bias"), transpose = param_flag(id, "transpose_weight");
  const QmdMode mode = fused       ? QmdMode::kFused
                       : dynamic   ? QmdMode::kDynamic
                       : per_token ? QmdMode::kStaticPerToken
                                   : QmdMode::kPerTensor;
  const QmdData data = kind == DataKind::kHuge      ? QmdData::kSaturate
                       : kind == DataKind::kTiny    ? QmdData::kZeroRows
                       : kind == DataKind::kTies    ? QmdData::kTies
                       : kind == DataKind::kSpecial ? QmdData::kSpecials
                       : kind == DataKind::kWrap    ? QmdData::kWrap
                                                    : QmdData::kRandom;
  QmdInputs in = make_quant_matmul_dequant_inputs({mode, smooth, bias, transpose},
                                                  {"call", m, n, k, data}, rng);
  // The inputs as the identity says (an inconsistent one fails validation with the reason).
  OpCall call{"QuantMatmulDequant",
              {{"x", std::move(in.x)},
               {"weight", std::move(in.weight)},
               {"weight_scale", std::move(in.weight_scale)}},
              {{"x_quant_mode", per_token ? "pertoken" : "pertensor"},
               {"transpose_weight", transpose ? "1" : "0"}}};
  if (bias) call.inputs["bias"] = std::move(in.bias);
  if (!dynamic) call.inputs["x_scale"] = std::move(in.x_scale);
  if (smooth) call.inputs["smooth_scale"] = std::move(in.smooth);
  return call;
}

OpCall build_call(const KernelIdentity& identity, int64_t m, int64_t n, int64_t k, DataKind kind,
                  std::mt19937_64& rng) {
  const KernelIdentity id = without_prepacked(identity);  // the same call
  if (id.op == "Gemm") return gemm_call(id, m, n, k, kind, rng);
  if (id.op == "QLinearMatMul") return qlinear_matmul_call(id, m, n, k, kind, rng);
  if (id.op == "QGemm") return qgemm_call(id, m, n, k, kind, rng);
  if (id.op == "QuantMatmulDequant") return quant_matmul_dequant_call(id, m, n, k, kind, rng);
  invalid("kernel identity", "operator '", id.op, "' of ", id.to_string(),
          " is not one of Gemm, QLinearMatMul, QGemm, QuantMatmulDequant");
}

// Why `call` does not have identity `id` (nullopt: it does).
std::optional<std::string> identity_mismatch(const KernelIdentity& identity, const OpCall& call) {
  const KernelIdentity id = without_prepacked(identity);  // its calls are the plain kernel's
  KernelIdentity got;
  try {
    got = call_identity(call);
  } catch (const InvalidArgument& e) {
    return std::string("no valid call has these parameters: ") + e.what();
  }
  if (got == id) return std::nullopt;
  std::vector<std::string> diffs;
  if (got.generator != id.generator) {
    diffs.push_back("generator " + got.generator + ", not " + id.generator);
  }
  std::set<std::string> names;
  for (const auto& [p, v] : id.params) names.insert(p);
  for (const auto& [p, v] : got.params) names.insert(p);
  for (const std::string& p : names) {
    const std::string want = get(id.params, p), have = get(got.params, p);
    if (want == have) continue;
    if (have.empty()) {
      diffs.push_back(p + "=" + want + " is not a parameter of its kernel");
    } else if (want.empty()) {
      diffs.push_back(p + "=" + have + " is missing");
    } else {
      diffs.push_back(p + "=" + have + ", not " + p + "=" + want);
    }
  }
  return "a call with these parameters runs another kernel (" + join(diffs, "; ") + ")";
}

}  // namespace

KernelIdentity parse_identity_spec(const std::string& spec) {
  const std::string where = "--op '" + spec + "'";
  const std::vector<std::string> parts = split(spec, ':');
  const OpGrammar* g = nullptr;
  try {
    g = grammar_of(find_operator(parts[0]).name);
  } catch (const InvalidArgument&) {
  }
  if (!g) {
    std::vector<std::string> ops;
    for (const OpGrammar& og : grammars())
      ops.push_back(og.op + " (" + find_operator(og.op).alias + ")");
    invalid(where, "'", parts[0], "' is not an operator; OP is one of ", join(ops, ", "));
  }
  Params set;
  std::map<std::string, std::string> set_by;  // parameter -> the part that set it
  auto assign = [&](const std::string& part, const Assignments& as) {
    for (const auto& [p, v] : as) {
      auto it = set.find(p);
      if (it != set.end() && it->second != v) {
        invalid(where, "'", part, "' sets ", p, "=", v, " but '", set_by[p], "' sets ", p, "=",
                it->second);
      }
      set[p] = v;
      set_by[p] = part;
    }
  };
  std::size_t i = 1;
  if (parts.size() > 1 && !parts[1].empty() && parts[1].find('=') == std::string::npos) {
    const std::string& text = parts[1];
    if (g->type_params.empty()) {
      invalid(where, "'", text, "' is not KEY=VALUE, and ", g->op,
              " takes no TYPES (its keys: ", key_names(*g), ")");
    }
    const std::vector<std::string> names = split(text, ',');
    const std::size_t want = g->type_params.size();
    if (names.size() != 1 && names.size() != want) {
      invalid(where, "TYPES '", text, "' names ", names.size(), " types; ", g->op, " takes 1 (for ",
              join(g->type_params, ", "), ") or ", want, " (", join(g->type_params, ", "),
              " in order)");
    }
    for (std::size_t t = 0; t < want; ++t) {
      const std::string& name = names[names.size() == 1 ? 0 : t];
      const std::optional<DType> d = dtype_from_name(name);
      if (!d || std::find(g->types.begin(), g->types.end(), *d) == g->types.end()) {
        invalid(where, "'", name, "' in TYPES is not a ", g->op, " type; its types are ",
                join(names_of(g->types), ", "));
      }
      if (is_float8(*d) && !g->format_params.empty()) {
        assign(text, {{g->type_params[t], gp_type(*d)}, {g->format_params[t], dtype_name(*d)}});
      } else {
        assign(text, {{g->type_params[t], dtype_name(*d)}});
      }
    }
    ++i;
  }
  std::set<std::string> keys_seen;
  for (; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (part.empty()) invalid(where, "part ", i + 1, " is empty; parts are separated by one ':'");
    const auto eq = part.find('=');
    if (eq == std::string::npos) {
      invalid(where, "'", part, "' is not KEY=VALUE (TYPES may only follow OP); ", g->op,
              "'s keys are ", key_names(*g));
    }
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    auto k = std::find_if(g->keys.begin(), g->keys.end(),
                          [&](const KeyDef& d) { return d.name == key; });
    if (k == g->keys.end()) {
      invalid(where, "unknown key '", key, "' in '", part, "'; ", g->op, "'s keys are ",
              key_names(*g));
    }
    if (!keys_seen.insert(key).second) invalid(where, "key '", key, "' is given twice");
    auto v = std::find_if(k->values.begin(), k->values.end(),
                          [&](const auto& d) { return d.first == value; });
    if (v == k->values.end()) {
      std::vector<std::string> allowed;
      for (const auto& [name, as] : k->values) allowed.push_back(name);
      invalid(where, "'", part, "': ", key, " is one of ", join(allowed, ", "), ", not '", value,
              "'");
    }
    assign(part, v->second);
  }
  g->defaults(set);
  KernelIdentity id{g->op, g->generator, set};
  bool prepacked = false;
  const KernelIdentity plain = without_prepacked(id, &prepacked);
  if (prepacked && !has_prepacked_kernel(plain)) {
    invalid(where,
            "prepacked_b=true: only float32 Gemm, 8-bit integer QLinearMatMul and QGemm, "
            "with B not transposed, and QuantMatmulDequant with a (K, N) weight and a bias have a "
            "kernel reading B prepacked; ",
            identity_spec(plain), " has none");
  }
  std::mt19937_64 rng(1);
  if (auto why = identity_mismatch(id, build_call(id, 2, 3, 4, DataKind::kRandom, rng))) {
    invalid(where, *why);
  }
  return id;
}

bool has_prepacked_kernel(const KernelIdentity& id, const std::string& target) {
  if (id.op == "QuantMatmulDequant") {
    // x86 CPUs only: AArch64's sdot layout sums x_q itself, with no column sums to fold into the
    // bias (generators/quant_matmul_dequant_generator.cc); HVX and CUDA are not built so.
    const bool cpu_x86 = target.empty() ||
                         (target.rfind("x86", 0) == 0 && target.find("-cuda") == std::string::npos);
    return cpu_x86 && get(id.params, "transpose_weight") == "false" &&
           get(id.params, "has_bias") == "true";
  }
  if (get(id.params, "trans_b") == "true" || !get(id.params, "a_format").empty()) return false;
  if (id.op == "Gemm") return get(id.params, "A.type") == "float32";
  return id.op == "QLinearMatMul" || id.op == "QGemm";
}

KernelIdentity without_prepacked(KernelIdentity id, bool* prepacked) {
  auto it = id.params.find("prepacked_b");
  const bool was = it != id.params.end() && it->second == "true";
  if (it != id.params.end()) id.params.erase(it);
  if (prepacked) *prepacked = was;
  return id;
}

std::string identity_spec(const KernelIdentity& id) {
  const OpGrammar* g = grammar_of(id.op);
  if (!g) {
    invalid("identity_spec", "the kernel identity ", id.to_string(), " names operator '", id.op,
            "', not one of Gemm, QLinearMatMul, QGemm, QuantMatmulDequant");
  }
  std::string head = g->op;
  if (!g->type_params.empty()) {
    std::vector<std::string> types;
    for (std::size_t t = 0; t < g->type_params.size(); ++t) {
      const std::string format =
          g->format_params.empty() ? "" : get(id.params, g->format_params[t]);
      types.push_back(format.empty() ? get(id.params, g->type_params[t]) : format);
    }
    // Gemm's one type stands for all four.
    if (g->op == "Gemm") types.resize(1);
    head += ":" + join(types, ",");
  }
  // Every friendly part, then every parameter; then, from the last, each part the spec can do
  // without (parameters go first, so the friendly spelling stays).
  std::vector<std::string> parts = g->friendly(id.params);
  std::set<std::string> keys;  // a key may appear once
  for (const std::string& part : parts) keys.insert(part.substr(0, part.find('=')));
  for (const auto& [p, v] : id.params) {
    if (keys.insert(p).second) parts.push_back(p + "=" + v);
  }
  auto spec_of = [&](const std::vector<std::string>& ps) {
    return ps.empty() ? head : head + ":" + join(ps, ":");
  };
  KernelIdentity back;
  try {
    back = parse_identity_spec(spec_of(parts));
  } catch (const InvalidArgument& e) {
    invalid("identity_spec", "the kernel identity ", id.to_string(),
            " is not the identity of a valid call: ", e.what());
  }
  if (!(back == id)) {
    invalid("identity_spec", "the kernel identity ", id.to_string(),
            " has parameters its operator's kernels do not have (a spec of all of them names ",
            back.to_string(), ")");
  }
  for (std::size_t i = parts.size(); i-- > 0;) {
    std::vector<std::string> fewer = parts;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
    try {
      if (parse_identity_spec(spec_of(fewer)) == id) parts = std::move(fewer);
    } catch (const InvalidArgument&) {
      // The part is needed.
    }
  }
  return spec_of(parts);
}

// ---- Data kinds and calls
// ------------------------------------------------------------------------

const char* data_kind_name(DataKind k) {
  switch (k) {
    case DataKind::kRandom:
      return "random";
    case DataKind::kFullRange:
      return "full_range";
    case DataKind::kHuge:
      return "huge";
    case DataKind::kTiny:
      return "tiny";
    case DataKind::kSpecial:
      return "special";
    case DataKind::kTies:
      return "ties";
    case DataKind::kExtremeScales:
      return "extreme_scales";
    case DataKind::kWrap:
      return "wrap";
  }
  return "?";
}

std::vector<DataKind> data_kinds(const KernelIdentity& id) {
  using K = DataKind;
  if (id.op == "Gemm") {
    if (is_gemm_float(param_dtype(id, "A.type")))
      return {K::kRandom, K::kSpecial, K::kHuge, K::kTiny};
    return {K::kRandom};  // full-range integers: products and sums wrap at any K
  }
  if (id.op == "QLinearMatMul") {
    if (id.params.count("a_format")) return {K::kRandom, K::kSpecial};
    return {K::kRandom, K::kFullRange, K::kTies, K::kExtremeScales, K::kWrap};
  }
  if (id.op == "QGemm") {
    if (param(id, "Y.type") == "float32") {
      return {K::kRandom, K::kFullRange, K::kExtremeScales, K::kWrap};
    }
    return {K::kRandom, K::kFullRange, K::kTies, K::kExtremeScales, K::kWrap};
  }
  if (id.op == "QuantMatmulDequant") {
    return {K::kRandom, K::kSpecial, K::kHuge, K::kTiny, K::kTies, K::kWrap};
  }
  invalid("kernel identity", "operator '", id.op, "' of ", id.to_string(),
          " is not one of Gemm, QLinearMatMul, QGemm, QuantMatmulDequant");
}

int64_t wrap_k(const KernelIdentity& id) {
  const std::vector<DataKind> kinds = data_kinds(id);
  if (std::find(kinds.begin(), kinds.end(), DataKind::kWrap) == kinds.end()) return 0;
  // QuantMatmulDequant: products 127 * 127 (mostly positive); the others: 255 * 255.
  return id.op == "QuantMatmulDequant" ? 150000 : 33100;
}

OpCall make_call(const KernelIdentity& id, int64_t m, int64_t n, int64_t k, DataKind kind,
                 std::mt19937_64& rng) {
  if (m < 1 || n < 1 || k < 0) {
    invalid(id.op, "a call of M=", m, " N=", n, " K=", k,
            " was asked for; M and N must be >= 1 and K >= 0");
  }
  const std::vector<DataKind> kinds = data_kinds(id);
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    std::vector<std::string> names;
    for (DataKind d : kinds) names.push_back(data_kind_name(d));
    invalid(id.op, "data kind ", data_kind_name(kind), " does not apply to ", id.to_string(),
            "; its kinds are ", join(names, ", "));
  }
  OpCall call = build_call(id, m, n, k, kind, rng);
  if (auto why = identity_mismatch(id, call)) {
    invalid(id.op, "the kernel identity ", id.to_string(), ": ", *why);
  }
  return call;
}

KernelIdentity call_identity(const OpCall& call) {
  const std::string op = find_operator(call.op).name;
  if (op == "Gemm") {
    const GemmArgs args = gemm_args(call.inputs, call.attrs);
    validate_gemm(args);
    return gemm_identity(args);
  }
  if (op == "QLinearMatMul") {
    const QLinearMatMulArgs args = qlinear_matmul_args(call.inputs, call.attrs);
    validate_qlinear_matmul(args);
    return qlinear_matmul_identity(args);
  }
  if (op == "QGemm") {
    const QGemmArgs args = qgemm_args(call.inputs, call.attrs);
    validate_qgemm(args);
    return qgemm_identity(args);
  }
  const QuantMatmulDequantArgs args = quant_matmul_dequant_args(call.inputs, call.attrs);
  validate_quant_matmul_dequant(args);
  return quant_matmul_dequant_identity(args);
}

// ---- The gate battery
// ----------------------------------------------------------------------------

namespace {

// v halved (rounding up) when that stays at or above `floor`.
bool halve(int64_t& v, int64_t floor) {
  if ((v + 1) / 2 < floor || v <= 1) return false;
  v = (v + 1) / 2;
  return true;
}

}  // namespace

std::vector<GateCase> gate_cases(const KernelIdentity& id, schedules::Tile tile, int64_t bucket_m,
                                 int64_t bucket_n, int64_t bucket_k) {
  if (tile.rows < 1 || tile.cols < 1 || bucket_m < 1 || bucket_n < 1 || bucket_k < 1) {
    invalid(id.op, "gate cases for a ", tile.rows, "x", tile.cols,
            " tile and the bucket shape M=", bucket_m, " N=", bucket_n, " K=", bucket_k,
            " were asked for; the tile and the bucket's M, N and K must be >= 1");
  }
  const std::vector<DataKind> kinds = data_kinds(id);
  // The kinds besides random and wrap (which needs its own K), in turn over the shapes.
  std::vector<DataKind> others;
  for (DataKind d : kinds) {
    if (d != DataKind::kRandom && d != DataKind::kWrap) others.push_back(d);
  }
  std::vector<GateCase> cases;
  auto add = [&](const std::string& name, int64_t m, int64_t n, int64_t k, DataKind kind) {
    cases.push_back({name + "/" + data_kind_name(kind), m, n, k, kind});
  };
  std::size_t shape_index = 0, turn = 0;
  for (const MatmulShape& s : matmul_shapes(tile.rows, tile.cols)) {
    const std::string name = s.category + "_" + std::to_string(shape_index++);
    if (s.k == 0) continue;  // the host gives K = 0 to the reference: no kernel runs
    add(name, s.m, s.n, s.k, DataKind::kRandom);
    if (!others.empty()) add(name, s.m, s.n, s.k, others[turn++ % others.size()]);
  }
  // The bucket's shape, its N and K (then M down to 65, the largest M class) halved until the
  // reference computes it in tens of milliseconds.
  int64_t m = bucket_m, n = bucket_n, k = bucket_k;
  const int64_t n_floor = std::min<int64_t>(bucket_n, 64),
                k_floor = std::min<int64_t>(bucket_k, 64);
  const int64_t m_floor = std::min<int64_t>(bucket_m, 65);
  while (m * n > kGateMaxOutputs || m * n * k > kGateMaxWork) {
    if (n >= k && halve(n, n_floor)) continue;
    if (halve(k, k_floor) || halve(n, n_floor) || halve(m, m_floor)) continue;
    break;
  }
  const bool reduced = m != bucket_m || n != bucket_n || k != bucket_k;
  const std::string bucket = std::string(reduced ? "bucket_reduced_" : "bucket_") +
                             std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  add(bucket, m, n, k, DataKind::kRandom);
  if (!others.empty()) add(bucket, m, n, k, others.front());
  // Sums long enough to wrap int32, on small outputs: one vector and a column, ragged rows.
  if (const int64_t wk = wrap_k(id); wk > 0) {
    add("wrap_int32", 2, tile.cols + 1, wk, DataKind::kWrap);
    add("wrap_int32_ragged", tile.rows + 1, 3, wk + 1, DataKind::kWrap);
  }
  return cases;
}

nlohmann::json read_tuned_database(const std::string& path, const std::string& where) {
  std::ifstream in(path);
  if (!in) invalid(where, "cannot be read: ", std::strerror(errno));
  nlohmann::json db;
  try {
    db = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    invalid(where, "is not JSON: ", e.what());
  }
  if (!db.is_object() || !db.contains("kernels") || !db["kernels"].is_array()) {
    invalid(where, "is not a tuned database: it needs an array \"kernels\"");
  }
  return db;
}

std::vector<DatabaseIdentity> identities_of_database(const std::string& path) {
  const std::string where = "--ops-from '" + path + "'";
  const nlohmann::json db = read_tuned_database(path, where);
  std::vector<DatabaseIdentity> out;
  std::size_t index = 0;
  for (const nlohmann::json& k : db["kernels"]) {
    const std::string kernel = "kernel " + std::to_string(index++);
    if (!k.is_object() || !k.contains("op") || !k["op"].is_string() || !k.contains("generator") ||
        !k["generator"].is_string() || !k.contains("params") || !k["params"].is_object()) {
      invalid(where, kernel,
              " needs \"op\" and \"generator\" (strings) and \"params\" (an object)");
    }
    KernelIdentity id{k["op"].get<std::string>(), k["generator"].get<std::string>(), {}};
    for (const auto& [p, v] : k["params"].items()) {
      if (!v.is_string()) invalid(where, kernel, ": parameter ", p, " is not a string");
      id.params[p] = v.get<std::string>();
    }
    std::string spec;
    try {
      spec = identity_spec(id);
    } catch (const InvalidArgument& e) {
      invalid(where, kernel, ": ", e.what());
    }
    auto same = [&](const DatabaseIdentity& d) { return d.spec == spec; };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it == out.end()) it = out.insert(out.end(), DatabaseIdentity{spec, {}});
    if (k.contains("schedule") && k["schedule"].is_object()) it->schedules.push_back(k["schedule"]);
  }
  if (out.empty()) invalid(where, "has no kernels");
  return out;
}

}  // namespace mmtune::tune
