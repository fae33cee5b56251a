// Hand-derived cases for the rules of SEMANTICS.md §8 that random data rarely reaches: int32
// wrap-around, ties in requantization, float8 saturation, the two float contracts, float16 double
// rounding, integer Gemm overflow, QGemm's scale order, QuantMatmulDequant's steps. Each expected
// value is worked out in the comment beside it, not taken from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "reference/codecs.h"
#include "reference/registry.h"

namespace mmtune {
namespace {

using D = DType;

Tensor f32(Shape s, const std::vector<float>& v) {
  return Tensor::from(D::kFloat32, std::move(s), v);
}
Tensor f16(Shape s, const std::vector<float>& v) {
  std::vector<uint16_t> bits;
  for (float x : v) bits.push_back(float_to_float16(x));
  return Tensor::from(D::kFloat16, std::move(s), bits);
}
Tensor u8(Shape s, const std::vector<uint8_t>& v) {
  return Tensor::from(D::kUInt8, std::move(s), v);
}
Tensor i8(Shape s, const std::vector<int8_t>& v) { return Tensor::from(D::kInt8, std::move(s), v); }
Tensor e4m3(Shape s, const std::vector<float>& v) {
  std::vector<uint8_t> bits;
  for (float x : v) bits.push_back(float_to_float8(D::kFloat8E4M3FN, x, true));
  return Tensor::from(D::kFloat8E4M3FN, std::move(s), bits);
}

NamedTensors qlm(Tensor a, Tensor b, float as, float bs, float ys, Tensor a_zp, Tensor b_zp,
                 Tensor y_zp) {
  NamedTensors in;
  in.emplace("a", std::move(a));
  in.emplace("b", std::move(b));
  in.emplace("a_scale", f32({}, {as}));
  in.emplace("b_scale", f32({}, {bs}));
  in.emplace("y_scale", f32({}, {ys}));
  in.emplace("a_zero_point", std::move(a_zp));
  in.emplace("b_zero_point", std::move(b_zp));
  in.emplace("y_zero_point", std::move(y_zp));
  return in;
}

TEST(Semantics, QLinearMatMulInt32AccumulatorWraps) {
  // 255 * 255 = 65025 per step; K = 33026 gives 2,147,515,650 = 2^31 + 31,002, which wraps to
  // -2,147,452,646. With M = 2^-24 (y_scale 2^24): -127.998... -> -128. Unwrapped it would be
  // 128.0018... -> saturated 127.
  const int64_t k = 33026;
  const Tensor a = u8({1, k}, std::vector<uint8_t>(k, 255));
  const Tensor b = u8({k, 1}, std::vector<uint8_t>(k, 255));
  for (const char* mode : {"float32", "float64"}) {
    const Tensor y = run_reference(
        "QLinearMatMul", qlm(a, b, 1.0f, 1.0f, 16777216.0f, u8({}, {0}), u8({}, {0}), i8({}, {0})),
        {{"requant", mode}});
    EXPECT_EQ(y.data<int8_t>()[0], -128) << mode;
  }
}

TEST(Semantics, RequantTiesRoundToEvenAndZeroPointOrderDependsOnMode) {
  // acc = (a - 0)(b - 0) with a = [5] or [7], b = [1]; M = 0.5 * 1 / 1 = 0.5.
  // float32 mode: RNE(2.5) = 2, RNE(3.5) = 4, then + zp.
  // float64 mode adds zp before rounding: zp = 1: RNE(3.5) = 4 and RNE(4.5) = 4.
  struct Row {
    uint8_t a;
    uint8_t zp;
    const char* mode;
    uint8_t expected;
  };
  for (const Row& r : {Row{5, 0, "float32", 2}, Row{7, 0, "float32", 4}, Row{5, 1, "float32", 3},
                       Row{7, 1, "float32", 5}, Row{5, 1, "float64", 4}, Row{7, 1, "float64", 4},
                       Row{5, 0, "float64", 2}, Row{7, 0, "float64", 4}}) {
    const Tensor y = run_reference("QLinearMatMul",
                                   qlm(u8({1, 1}, {r.a}), u8({1, 1}, {1}), 0.5f, 1.0f, 1.0f,
                                       u8({}, {0}), u8({}, {0}), u8({}, {r.zp})),
                                   {{"requant", r.mode}});
    EXPECT_EQ(y.data<uint8_t>()[0], r.expected) << int(r.a) << " zp " << int(r.zp) << " " << r.mode;
  }
}

TEST(Semantics, QLinearMatMulFloat8ExactSumAndSaturation) {
  // a = [1.5, 2], b = [2, 0.5]^T: acc = 3 + 1 = 4; E4M3FN 4.0 = exponent 2 + bias 7 = 9 -> 0x48.
  NamedTensors in = qlm(e4m3({1, 2}, {1.5f, 2.0f}), e4m3({2, 1}, {2.0f, 0.5f}), 1.0f, 1.0f, 1.0f,
                        e4m3({}, {0}), e4m3({}, {0}), e4m3({}, {0}));
  EXPECT_EQ(run_reference("QLinearMatMul", in, {}).data<uint8_t>()[0], 0x48);
  // a = [448, 448], b = [1, 1]: acc = 896 > 448 = max -> saturates to 0x7E; negative -> 0xFE.
  in = qlm(e4m3({1, 2}, {448.0f, 448.0f}), e4m3({2, 2}, {1.0f, -1.0f, 1.0f, -1.0f}), 1.0f, 1.0f,
           1.0f, e4m3({}, {0}), e4m3({}, {0}), e4m3({}, {0}));
  const Tensor y = run_reference("QLinearMatMul", in, {});
  EXPECT_EQ(y.data<uint8_t>()[0], 0x7E);
  EXPECT_EQ(y.data<uint8_t>()[1], 0xFE);
}

TEST(Semantics, GemmStrictAndFmaContractsDiffer) {
  // A = [1, 1 + 2^-12], B = [-1, 1 + 2^-12]^T. Step 0: acc = -1 either way.
  // strict: fl32((1 + 2^-12)^2) = fl32(1 + 2^-11 + 2^-24) = 1 + 2^-11; acc = 2^-11.
  // fma: fma(1 + 2^-12, 1 + 2^-12, -1) = 2^-11 + 2^-24 exactly.
  const float e = 1.0f + std::ldexp(1.0f, -12);
  NamedTensors in;
  in.emplace("A", f32({1, 2}, {1.0f, e}));
  in.emplace("B", f32({2, 1}, {-1.0f, e}));
  EXPECT_EQ(run_reference("Gemm", in, {{"contract", "strict"}}).data<float>()[0],
            std::ldexp(1.0f, -11));
  EXPECT_EQ(run_reference("Gemm", in, {{"contract", "fma"}}).data<float>()[0],
            std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));
}

TEST(Semantics, GemmFloat16SumsInFloat32ThenRoundsOnce) {
  // [2048, 1, 1, 1, 1] . [1, 1, 1, 1, 1] = 2052 in float32, representable in float16 (spacing 2 at
  // 2048). Summing in float16 would give 2048 (each 2048 + 1 ties to even 2048).
  NamedTensors in;
  in.emplace("A", f16({1, 5}, {2048, 1, 1, 1, 1}));
  in.emplace("B", f16({5, 1}, {1, 1, 1, 1, 1}));
  const Tensor y = run_reference("Gemm", in, {});
  EXPECT_EQ(float16_to_float(y.data<uint16_t>()[0]), 2052.0f);
}

TEST(Semantics, GemmBetaZeroIgnoresCEvenIfNaN) {
  NamedTensors in;
  in.emplace("A", f32({1, 1}, {2.0f}));
  in.emplace("B", f32({1, 1}, {-0.0f}));
  in.emplace("C", f32({}, {NAN}));
  // The sum starts at exact +0 (§8): +0 + fl(2 * -0) = +0 + -0 = +0; alpha = 1; C ignored.
  const float y = run_reference("Gemm", in, {{"beta", "0"}}).data<float>()[0];
  EXPECT_EQ(y, 0.0f);
  EXPECT_FALSE(std::signbit(y));
  // alpha = -1: -1 * +0 = -0, kept (no C term is added).
  const float z = run_reference("Gemm", in, {{"beta", "0"}, {"alpha", "-1"}}).data<float>()[0];
  EXPECT_TRUE(std::signbit(z));
}

TEST(Semantics, IntegerGemmWrapsExactlyAndSaturatesTheFloatEpilogue) {
  NamedTensors in;
  // int32: 2^30 * 2 + 2^30 * 2 = 2^32 wraps to 0 (alpha = 1: exact path).
  in.emplace("A", Tensor::from<int32_t>(D::kInt32, {1, 2}, {1 << 30, 1 << 30}));
  in.emplace("B", Tensor::from<int32_t>(D::kInt32, {2, 1}, {2, 2}));
  EXPECT_EQ(run_reference("Gemm", in, {}).data<int32_t>()[0], 0);
  // alpha = 0.5: float64 epilogue of the wrapped acc 0 -> 0.
  EXPECT_EQ(run_reference("Gemm", in, {{"alpha", "0.5"}}).data<int32_t>()[0], 0);
  // acc = 2^30 (B = [1, 0]); alpha = 4 -> 2^32 > INT32_MAX -> saturates; alpha = -4 -> INT32_MIN.
  in["B"] = Tensor::from<int32_t>(D::kInt32, {2, 1}, {1, 0});
  EXPECT_EQ(run_reference("Gemm", in, {{"alpha", "4"}}).data<int32_t>()[0], INT32_MAX);
  EXPECT_EQ(run_reference("Gemm", in, {{"alpha", "-4"}}).data<int32_t>()[0], INT32_MIN);
  // alpha = 1.5, C = 7, beta = 0.25: 2^30 * 1.5 + 1.75 = 1610612737.75 -> truncates to 1610612737.
  in.emplace("C", Tensor::from<int32_t>(D::kInt32, {}, {7}));
  EXPECT_EQ(run_reference("Gemm", in, {{"alpha", "1.5"}, {"beta", "0.25"}}).data<int32_t>()[0],
            1610612737);
  // uint32, alpha = -1: -x truncates below 0 -> saturates to 0.
  NamedTensors u;
  u.emplace("A", Tensor::from<uint32_t>(D::kUInt32, {1, 1}, {5}));
  u.emplace("B", Tensor::from<uint32_t>(D::kUInt32, {1, 1}, {3}));
  EXPECT_EQ(run_reference("Gemm", u, {{"alpha", "-1"}}).data<uint32_t>()[0], 0u);
  // int64 above 2^53 stays exact when alpha = 1 and beta = 1: (2^53 + 1) * 1 + C 2 = 2^53 + 3.
  NamedTensors l;
  l.emplace("A", Tensor::from<int64_t>(D::kInt64, {1, 1}, {(int64_t{1} << 53) + 1}));
  l.emplace("B", Tensor::from<int64_t>(D::kInt64, {1, 1}, {1}));
  l.emplace("C", Tensor::from<int64_t>(D::kInt64, {1}, {2}));
  EXPECT_EQ(run_reference("Gemm", l, {}).data<int64_t>()[0], (int64_t{1} << 53) + 3);
}

TEST(Semantics, QGemmAddsCBeforeScalingAndScalesLeftToRight) {
  // A = [10, 20] - 10, B = [1, 3]^T - 1: sum = 0 * 0 + 10 * 2 = 20; + C 5 = 25.
  // s = fl32(fl32(2 * 0.5) * 0.25) = 0.25 -> float output 6.25.
  NamedTensors in;
  in.emplace("A", u8({1, 2}, {10, 20}));
  in.emplace("a_scale", f32({}, {0.5f}));
  in.emplace("a_zero_point", u8({}, {10}));
  in.emplace("B", u8({2, 1}, {1, 3}));
  in.emplace("b_scale", f32({}, {0.25f}));
  in.emplace("b_zero_point", u8({}, {1}));
  in.emplace("C", Tensor::from<int32_t>(D::kInt32, {1, 1}, {5}));
  EXPECT_EQ(run_reference("QGemm", in, {{"alpha", "2"}}).data<float>()[0], 6.25f);
  // y_scale 0.5: s = 0.5; 25 * 0.5 = 12.5 -> RNE 12; + zp 100 = 112.
  in.emplace("y_scale", f32({}, {0.5f}));
  in.emplace("y_zero_point", u8({}, {100}));
  EXPECT_EQ(run_reference("QGemm", in, {{"alpha", "2"}}).data<uint8_t>()[0], 112);
}

// The schema's type combinations beyond ONNX Runtime's kernels: int8 A with uint8 B, and a
// quantized output of the other type than A. Hand-derived: A = [-5, 7] - (-1) = [-4, 8],
// B = [200, 100]^T - 100 = [100, 0]^T: sum = -400; C = 10: acc = -390; s = fl32(1 * 0.5 * 0.5) /
// 0.25 = 1; -390 + zp: uint8 output zp 200 -> sat(-190) = 0; zp 255 -> 0; int8 output zp 100 ->
// sat(-290) = -128; with C = 500: acc = 100 -> int8 zp 100 -> sat(200) = 127, uint8 zp 20 -> 120.
TEST(Semantics, QGemmComputesEveryTypeCombinationOfTheSchema) {
  NamedTensors in;
  in.emplace("A", i8({1, 2}, {-5, 7}));
  in.emplace("a_scale", f32({}, {0.5f}));
  in.emplace("a_zero_point", i8({}, {-1}));
  in.emplace("B", u8({2, 1}, {200, 100}));
  in.emplace("b_scale", f32({}, {0.5f}));
  in.emplace("b_zero_point", u8({}, {100}));
  in.emplace("C", Tensor::from<int32_t>(D::kInt32, {1, 1}, {10}));
  EXPECT_EQ(run_reference("QGemm", in, {}).data<float>()[0], -97.5f);  // -390 * 0.25
  in.emplace("y_scale", f32({}, {0.25f}));
  in.emplace("y_zero_point", u8({}, {200}));
  EXPECT_EQ(run_reference("QGemm", in, {}).data<uint8_t>()[0], 0);
  in["y_zero_point"] = i8({}, {100});
  EXPECT_EQ(run_reference("QGemm", in, {}).data<int8_t>()[0], -128);
  in["C"] = Tensor::from<int32_t>(D::kInt32, {1, 1}, {500});
  EXPECT_EQ(run_reference("QGemm", in, {}).data<int8_t>()[0], 127);
  in["y_zero_point"] = u8({}, {20});
  EXPECT_EQ(run_reference("QGemm", in, {}).data<uint8_t>()[0], 120);
  // uint8 A with int8 B and an int8 output: A = [3] - 1 = [2], B = [-7] - (-3) = [-4]: -8; s = 1.
  NamedTensors u;
  u.emplace("A", u8({1, 1}, {3}));
  u.emplace("a_scale", f32({}, {1.0f}));
  u.emplace("a_zero_point", u8({}, {1}));
  u.emplace("B", i8({1, 1}, {-7}));
  u.emplace("b_scale", f32({}, {1.0f}));
  u.emplace("b_zero_point", i8({}, {-3}));
  u.emplace("y_scale", f32({}, {1.0f}));
  u.emplace("y_zero_point", i8({}, {5}));
  EXPECT_EQ(run_reference("QGemm", u, {}).data<int8_t>()[0], -3);
}

TEST(Semantics, QuantMatmulDequantDynamicRowScale) {
  // Row 0: x = [127, -63.5, 1, 0]: row max 127, s = 127/127 = 1, inv = 1, v = x,
  // RNE: [127, -64 (tie to even), 1, 0]. w = [1, 2, 3, 4]: acc = 127 - 128 + 3 + 0 = 2.
  // f = 2 * 0.5 (weight scale) * 1 (s) = 1.0 -> float16 0x3C00.
  // Row 1 is all zeros: s = 0, inv = +Inf, v = 0 * Inf = NaN -> x_q = 0 -> out +0.
  NamedTensors in;
  in.emplace("x", f16({2, 4}, {127, -63.5f, 1, 0, 0, 0, 0, 0}));
  in.emplace("weight", i8({1, 4}, {1, 2, 3, 4}));
  in.emplace("weight_scale", f32({1}, {0.5f}));
  const Tensor y = run_reference("QuantMatmulDequant", in, {});
  EXPECT_EQ(y.data<uint16_t>()[0], 0x3C00);
  EXPECT_EQ(y.data<uint16_t>()[1], 0x0000);
}

TEST(Semantics, QuantMatmulDequantStaticScaleSaturatesInt8AndFloat16) {
  // pertensor x_scale 0.5: inv = 2; x = 100 -> v = 200 -> int8 saturates to 127.
  // w = [1, 0, 0, 0]: acc = 127. weight scale 1000: 127 * 1000 * 0.5 = 63500 -> float16 RNE at
  // spacing 32: 63500 / 32 = 1984.375 -> 63488. weight scale 2000: 127000 -> saturates to 65504.
  NamedTensors in;
  in.emplace("x", f16({1, 4}, {100, 0, 0, 0}));
  in.emplace("weight", i8({4, 2}, {1, 1, 0, 0, 0, 0, 0, 0}));
  in.emplace("weight_scale", f32({2}, {1000.0f, 2000.0f}));
  in.emplace("x_scale", f32({}, {0.5f}));
  const Tensor y = run_reference("QuantMatmulDequant", in,
                                 {{"x_quant_mode", "pertensor"}, {"transpose_weight", "0"}});
  EXPECT_EQ(float16_to_float(y.data<uint16_t>()[0]), 63488.0f);
  EXPECT_EQ(y.data<uint16_t>()[1], 0x7BFF);
}

TEST(Semantics, QuantMatmulDequantFusedInt64Scale) {
  // int64 weight scale holds float32 bits of 0.25 (0x3E800000) in its low 32 bits, any high bits;
  // no x-scale multiply in the epilogue. x_scale (float16) 1: x = [3, 0] -> x_q = [3, 0];
  // w = [5, 7]: acc = 15 -> 15 * 0.25 = 3.75.
  NamedTensors in;
  in.emplace("x", f16({1, 2}, {3, 0}));
  in.emplace("weight", i8({1, 2}, {5, 7}));
  in.emplace("weight_scale",
             Tensor::from<int64_t>(D::kInt64, {1}, {(int64_t{0x12} << 32) | 0x3E800000}));
  in.emplace("x_scale", f16({1}, {1.0f}));
  const Tensor y = run_reference("QuantMatmulDequant", in, {{"x_quant_mode", "pertensor"}});
  EXPECT_EQ(float16_to_float(y.data<uint16_t>()[0]), 3.75f);
}

TEST(Semantics, BatchBroadcastAndPerRowPerColumnParameters) {
  // a [2,1,2,1] (batch [2,1]) x b [3,1,2] (batch [3]) -> y [2,3,2,2]. K = 1, so y = requant of
  // (a - za_row)(b - zb_col) * as_row * bs_col / ys. a_scale [2,1] per row = [1, 2]; b_scale [2]
  // per column = [1, 0.5]; zero points 0; ys = 1. a values: batch0 = [1, 2], batch1 = [3, 4]; b
  // values: batch j = [j+1, 2(j+1)].
  NamedTensors in;
  in.emplace("a", u8({2, 1, 2, 1}, {1, 2, 3, 4}));
  in.emplace("b", u8({3, 1, 2}, {1, 2, 2, 4, 3, 6}));
  in.emplace("a_scale", f32({2, 1}, {1.0f, 2.0f}));
  in.emplace("b_scale", f32({2}, {1.0f, 0.5f}));
  in.emplace("y_scale", f32({}, {1.0f}));
  in.emplace("a_zero_point", u8({}, {0}));
  in.emplace("b_zero_point", u8({1, 2}, {0, 0}));
  in.emplace("y_zero_point", u8({}, {0}));
  const Tensor y = run_reference("QLinearMatMul", in, {});
  ASSERT_EQ(y.shape, (Shape{2, 3, 2, 2}));
  for (int p = 0; p < 2; ++p) {
    for (int q = 0; q < 3; ++q) {
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          const double a = 2 * p + i + 1, b = (q + 1) * (j + 1), as = i + 1, bs = j ? 0.5 : 1.0;
          const double expected = std::nearbyint(a * b * as * bs);
          EXPECT_EQ(y.data<uint8_t>()[((p * 3 + q) * 2 + i) * 2 + j], std::min(expected, 255.0))
              << p << q << i << j;
        }
      }
    }
  }
  // 1-D a and b: [K] x [K] -> scalar.
  NamedTensors v =
      qlm(u8({3}, {1, 2, 3}), u8({3}, {4, 5, 6}), 1, 1, 1, u8({}, {0}), u8({}, {0}), u8({}, {0}));
  const Tensor s = run_reference("QLinearMatMul", v, {});
  EXPECT_EQ(s.shape, Shape{});
  EXPECT_EQ(s.data<uint8_t>()[0], 32);  // 4 + 10 + 18
}

TEST(Semantics, EmptyDimensionsGiveEmptyOutputs) {
  NamedTensors v = qlm(u8({0, 4}, {}), u8({4, 3}, std::vector<uint8_t>(12, 1)), 1, 1, 1,
                       u8({}, {0}), u8({}, {0}), u8({}, {0}));
  EXPECT_EQ(run_reference("QLinearMatMul", v, {}).shape, (Shape{0, 3}));
  // K = 0: Gemm gives alpha * 0 + beta * C.
  NamedTensors g;
  g.emplace("A", f32({2, 0}, {}));
  g.emplace("B", f32({0, 2}, {}));
  g.emplace("C", f32({2}, {1.5f, -2.0f}));
  const Tensor y = run_reference("Gemm", g, {{"beta", "2"}});
  EXPECT_EQ(y.data<float>()[0], 3.0f);
  EXPECT_EQ(y.data<float>()[3], -4.0f);
}

}  // namespace
}  // namespace mmtune
