// QLinearMatMul variants, bit for bit against the reference. int8/uint8: all 8 (a, b, y) type
// tuples x the default schedule and 20 random draws x shape categories (2-D, 1-D operands, N-D
// batch broadcasting), with scale types (float32, float16, bfloat16), both requantization modes and
// per-tensor / per-row / per-column parameters rotating over the draws; plus adversarial inputs:
// full-range values and zero points (16-bit pair sums would saturate), requantization values on
// exact .5 ties, K large enough to wrap int32, extreme per-column scales.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "autotune/halide_ops.h"
#include "reference/codecs.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using testing::host_info;

struct Types {
  DType a, b, y;
};

std::string types_name(const Types& t) {
  auto s = [](DType d) { return d == DType::kInt8 ? "s8" : "u8"; };
  return std::string(s(t.a)) + "_" + s(t.b) + "_" + s(t.y);
}

Tensor constant(DType t, Shape shape, double v) {
  std::mt19937_64 unused(0);
  return testing::random_tensor(t, std::move(shape), unused, v, v);
}

struct Case {
  std::string name;
  Shape a, b;                   // operand shapes
  Shape a_param, b_param;       // scale / zero-point shapes
  std::string data = "random";  // random | full_range | ties | wrap | extreme_scales
};

std::vector<Case> cases_for(int rows, int cols) {
  std::vector<Case> out;
  int n = 0;
  for (const auto& s : testing::matmul_shapes(rows, cols)) {
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
  // N-D batch broadcasting with per-row parameters carrying batch dims, and 1-D operands.
  out.push_back(
      {"batch_broadcast", {2, 1, 5, 7}, {3, 7, 9}, {2, 1, 5, 1}, {3, 1, 9}, "full_range"});
  out.push_back({"batch_broadcast_b", {4, 3, 6}, {1, 6, 2 * cols + 1}, {}, {1, 1, 2 * cols + 1}});
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

void PrintTo(const Types& t, std::ostream* os) { *os << types_name(t); }

class QLinearMatMulVariants : public ::testing::TestWithParam<Types> {};

TEST_P(QLinearMatMulVariants, BitExactAgainstReference) {
  const Types ty = GetParam();
  const uint64_t seed =
      testing::variant_seed() ^ (static_cast<uint64_t>(ty.a) << 8 |
                                 static_cast<uint64_t>(ty.b) << 4 | static_cast<uint64_t>(ty.y));
  const auto draws = testing::schedule_draws(host_info(), {32, true}, 20, seed);
  std::mt19937_64 rng(seed);
  const DType scale_types[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  int64_t cases = 0, outputs = 0;
  for (std::size_t d = 0; d < draws.size(); ++d) {
    const auto& draw = draws[d];
    const DType st = scale_types[d % 3];
    const RequantMode mode = (d / 3) % 2 ? RequantMode::kFloat64 : RequantMode::kFloat32;
    const HalideVariant variant{draw.schedule, "host"};
    for (const Case& c : cases_for(draw.tile.rows, draw.tile.cols)) {
      Tensor a, b, as, bs, ys, az, bz, yz;
      if (c.data == "wrap") {
        // Every product is (max - min)^2 of the operand types; K of them overflow int32.
        a = constant(ty.a, c.a, testing::quant_max(ty.a));
        b = constant(ty.b, c.b, testing::quant_max(ty.b));
        az = constant(ty.a, c.a_param, testing::quant_min(ty.a));
        bz = constant(ty.b, c.b_param, testing::quant_min(ty.b));
      } else {
        a = testing::random_tensor(ty.a, c.a, rng, testing::quant_min(ty.a),
                                   testing::quant_max(ty.a));
        b = testing::random_tensor(ty.b, c.b, rng, testing::quant_min(ty.b),
                                   testing::quant_max(ty.b));
        const bool full = c.data == "full_range" || c.data == "extreme_scales";
        az = testing::random_tensor(ty.a, c.a_param, rng,
                                    full ? testing::quant_min(ty.a) : testing::quant_min(ty.a) / 2,
                                    full ? testing::quant_max(ty.a) : testing::quant_max(ty.a) / 2);
        bz = testing::random_tensor(ty.b, c.b_param, rng,
                                    full ? testing::quant_min(ty.b) : testing::quant_min(ty.b) / 2,
                                    full ? testing::quant_max(ty.b) : testing::quant_max(ty.b) / 2);
      }
      yz =
          testing::random_tensor(ty.y, {}, rng, testing::quant_min(ty.y), testing::quant_max(ty.y));
      if (c.data == "ties") {
        // M = 1 * 0.5 / 1 = 0.5 exactly: every odd accumulator lands on a .5 tie.
        as = constant(st, c.a_param, 1.0);
        bs = constant(st, c.b_param, 0.5);
        ys = constant(st, {}, 1.0);
      } else if (c.data == "extreme_scales") {
        as = testing::random_scales(st, c.a_param, rng, -4, 4);
        bs = testing::random_scales(st, c.b_param, rng, st == DType::kFloat16 ? -14 : -60,
                                    st == DType::kFloat16 ? 14 : 60);
        ys = testing::random_scales(st, {}, rng, -2, 2);
      } else {
        // Products of ~K * 128 * 128 scaled back to about the output range.
        const double e = -std::log2(std::max<double>(1, static_cast<double>(c.a.back())) * 128.0);
        as = testing::random_scales(st, c.a_param, rng, e / 2 - 1, e / 2 + 1);
        bs = testing::random_scales(st, c.b_param, rng, e / 2 - 1, e / 2 + 1);
        ys = testing::random_scales(st, {}, rng, -8, -6);
      }
      QLinearMatMulArgs args{&a, &as, &az, &b, &bs, &bz, &ys, &yz, 21, mode};
      std::ostringstream context;
      context << "QLinearMatMul " << types_name(ty) << " case " << c.name << " a" << shape_str(c.a)
              << " b" << shape_str(c.b) << " params a" << shape_str(c.a_param) << " b"
              << shape_str(c.b_param) << " scale " << dtype_name(st) << " requant "
              << to_string(mode) << " schedule " << draw.name << " "
              << kernel_key(qlinear_matmul_identity(args), variant).to_string() << " seed " << seed;
      Tensor expected;
      try {
        expected = qlinear_matmul(args);
      } catch (const InvalidArgument& e) {
        // Extreme scales may overflow the multiplier in float16: the reference refuses, so must we.
        ASSERT_EQ(c.data, "extreme_scales") << e.what() << "; " << context.str();
        EXPECT_THROW(qlinear_matmul_halide(args, variant), InvalidArgument) << context.str();
        continue;
      }
      Tensor actual;
      try {
        actual = qlinear_matmul_halide(args, variant);
      } catch (const std::exception& e) {
        FAIL() << e.what() << "; " << context.str();
      }
      ASSERT_TRUE(testing::bit_equal(expected, actual, context.str()));
      ++cases;
      outputs += expected.numel();
    }
  }
  std::cout << "[variants] QLinearMatMul " << types_name(ty) << ": " << draws.size()
            << " schedules, " << cases << " cases, " << outputs
            << " outputs compared bit for bit, 0 mismatches\n";
}

INSTANTIATE_TEST_SUITE_P(AllTypeTuples, QLinearMatMulVariants,
                         ::testing::Values(Types{DType::kUInt8, DType::kUInt8, DType::kUInt8},
                                           Types{DType::kUInt8, DType::kInt8, DType::kUInt8},
                                           Types{DType::kInt8, DType::kInt8, DType::kInt8},
                                           Types{DType::kInt8, DType::kUInt8, DType::kInt8},
                                           Types{DType::kUInt8, DType::kUInt8, DType::kInt8},
                                           Types{DType::kUInt8, DType::kInt8, DType::kInt8},
                                           Types{DType::kInt8, DType::kInt8, DType::kUInt8},
                                           Types{DType::kInt8, DType::kUInt8, DType::kUInt8}),
                         [](const auto& info) { return types_name(info.param); });

struct Float8Types {
  DType a, b, y;
};

void PrintTo(const Float8Types& t, std::ostream* os) {
  *os << dtype_name(t.a) << "_" << dtype_name(t.b) << "_" << dtype_name(t.y);
}

class QLinearMatMulFloat8Variants : public ::testing::TestWithParam<Float8Types> {};

// float8 (mmtune's definition, docs/semantics.md): random finite patterns plus NaN / Inf / -0
// patterns sprinkled in, scales spanning underflow to saturation, default + 20 random schedules.
TEST_P(QLinearMatMulFloat8Variants, BitExactAgainstReference) {
  const Float8Types ty = GetParam();
  const uint64_t seed =
      testing::variant_seed() ^ (static_cast<uint64_t>(ty.a) << 16 |
                                 static_cast<uint64_t>(ty.b) << 8 | static_cast<uint64_t>(ty.y));
  const auto draws = testing::schedule_draws(host_info(), {64, false}, 20, seed);
  std::mt19937_64 rng(seed);
  const DType scale_types[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  int64_t cases = 0, outputs = 0, specials = 0;
  for (std::size_t d = 0; d < draws.size(); ++d) {
    const auto& draw = draws[d];
    const DType st = scale_types[d % 3];
    const HalideVariant variant{draw.schedule, "host"};
    for (const auto& s : testing::matmul_shapes(draw.tile.rows, draw.tile.cols, false)) {
      Tensor a = testing::random_tensor(ty.a, {s.m, s.k}, rng, -8, 8);
      Tensor b = testing::random_tensor(ty.b, {s.k, s.n}, rng, -8, 8);
      // A few special patterns: every format's NaN (0x7F/0xFF or 0x80), E5M2 infinities, -0.
      for (Tensor* t : {&a, &b}) {
        if (rng() % 4 == 0 && t->numel() > 0) {
          const uint8_t special[] = {0x7F, 0xFF, 0x80, 0x7C, 0xFC};
          t->data<uint8_t>()[rng() % t->numel()] = special[rng() % 5];
          ++specials;
        }
      }
      Tensor zero_a(ty.a, {}), zero_b(ty.b, {}), zero_y(ty.y, {});
      Tensor as = testing::random_scales(st, {s.m, 1}, rng, -3, 3);
      Tensor bs = testing::random_scales(st, {s.n}, rng, -3, 3);
      Tensor ys = testing::random_scales(st, {}, rng, -12, 4);
      QLinearMatMulArgs args{&a,      &as, &zero_a, &b, &bs,
                             &zero_b, &ys, &zero_y, 21, RequantMode::kFloat32};
      std::ostringstream context;
      context << "QLinearMatMul float8 " << dtype_name(ty.a) << "/" << dtype_name(ty.b) << "->"
              << dtype_name(ty.y) << " " << s.category << " M=" << s.m << " N=" << s.n
              << " K=" << s.k << " scale " << dtype_name(st) << " schedule " << draw.name << " "
              << kernel_key(qlinear_matmul_identity(args), variant).to_string() << " seed " << seed;
      Tensor expected;
      try {
        expected = qlinear_matmul(args);
      } catch (const InvalidArgument& e) {
        ASSERT_NE(st, DType::kFloat32)
            << e.what() << "; " << context.str();  // only a float16 multiplier can overflow
        continue;
      }
      Tensor actual;
      try {
        actual = qlinear_matmul_halide(args, variant);
      } catch (const std::exception& e) {
        FAIL() << e.what() << "; " << context.str();
      }
      ASSERT_TRUE(testing::bit_equal(expected, actual, context.str()));
      ++cases;
      outputs += expected.numel();
    }
  }
  std::cout << "[variants] QLinearMatMul float8 " << dtype_name(ty.a) << "/" << dtype_name(ty.b)
            << "->" << dtype_name(ty.y) << ": " << draws.size() << " schedules, " << cases
            << " cases (" << specials << " with NaN/Inf/-0 inputs), " << outputs
            << " outputs compared bit for bit, 0 mismatches\n";
}

INSTANTIATE_TEST_SUITE_P(
    Formats, QLinearMatMulFloat8Variants,
    ::testing::Values(
        Float8Types{DType::kFloat8E4M3FN, DType::kFloat8E4M3FN, DType::kFloat8E4M3FN},
        Float8Types{DType::kFloat8E5M2, DType::kFloat8E5M2, DType::kFloat8E5M2},
        Float8Types{DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2FNUZ, DType::kFloat8E4M3FNUZ},
        Float8Types{DType::kFloat8E5M2, DType::kFloat8E4M3FN, DType::kFloat8E5M2FNUZ}),
    [](const auto& info) {
      return std::string(dtype_name(info.param.a)) + "_" + dtype_name(info.param.b) + "_" +
             dtype_name(info.param.y);
    });

}  // namespace
}  // namespace mmtune
