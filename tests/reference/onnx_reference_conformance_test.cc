// The reference against the ONNX reference evaluator (vectors of
// tests/vectors/gen_onnx_reference.py): QLinearMatMul in requant=float64 mode (float32, float16 and
// bfloat16 scales, per-row a), Gemm for float16, bfloat16 and the integer types bit for bit, Gemm
// float32/float64 bit for bit on data whose products and partial sums are exact and within a
// tolerance on random data (BLAS order). Also: the two requant modes really differ (SEMANTICS.md
// §1.6).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "autotune/npy.h"
#include "reference/dtype.h"
#include "reference/qlinear_matmul.h"
#include "reference/registry.h"
#include "reference/rounding.h"
#include "reference/tensor.h"
#include "tests/reference/conformance_support.h"
#include "tests/support/test_support.h"

namespace mmtune {
namespace {

TEST(onnx_reference_conformance, EveryCaseMatchesTheReferenceEvaluator) {
  testing::run_conformance_suite("onnx_reference");
}

// SEMANTICS.md §1.6: acc = 1807579, M = float32 bits 0x39D22420; acc * M = 724.50001412...
float split_multiplier() {
  const uint32_t bits = 0x39D22420u;
  float m;
  std::memcpy(&m, &bits, sizeof m);
  return m;
}

// QLinearMatMul uint8 a [1, K] x b [K, accs.size()], zero points 0, a_scale = M, b_scale = y_scale
// = 1, built so that column j accumulates exactly accs[j] (a = 255 except a last 1).
NamedTensors split_inputs(const std::vector<int64_t>& accs, float m) {
  int64_t k = 1;
  for (int64_t acc : accs) k = std::max(k, acc / 255 / 255 + 2);
  const int64_t n = static_cast<int64_t>(accs.size());
  std::vector<uint8_t> a(static_cast<std::size_t>(k), 255), b(static_cast<std::size_t>(k * n), 0);
  a.back() = 1;
  for (int64_t j = 0; j < n; ++j) {
    int64_t s = accs[j] / 255;
    for (int64_t i = 0; i + 1 < k; ++i) {
      const int64_t v = std::min<int64_t>(255, s);
      b[i * n + j] = static_cast<uint8_t>(v);
      s -= v;
    }
    b[(k - 1) * n + j] = static_cast<uint8_t>(accs[j] % 255);
  }
  NamedTensors in;
  in["a"] = Tensor::from<uint8_t>(DType::kUInt8, {1, k}, a);
  in["a_scale"] = Tensor::from<float>(DType::kFloat32, {}, {m});
  in["a_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {0});
  in["b"] = Tensor::from<uint8_t>(DType::kUInt8, {k, n}, b);
  in["b_scale"] = Tensor::from<float>(DType::kFloat32, {}, {1.0f});
  in["b_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {0});
  in["y_scale"] = Tensor::from<float>(DType::kFloat32, {}, {1.0f});
  in["y_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {0});
  return in;
}

std::vector<int> run_split(const NamedTensors& in, const char* requant) {
  const Tensor y = run_reference("QLinearMatMul", in, {{"opset", "10"}, {"requant", requant}});
  std::vector<int> v;
  for (int64_t i = 0; i < y.numel(); ++i) v.push_back(static_cast<int>(y.data<uint8_t>()[i]));
  return v;
}

TEST(onnx_reference_conformance, RequantModesDifferAsSemanticsSection16States) {
  const float m = split_multiplier();
  // The multiplier really is fl32(fl32(a_scale * b_scale) / y_scale) with a_scale = M, b_scale =
  // y_scale = 1.
  EXPECT_EQ(qlinear_multiplier(DType::kFloat32, m, 1.0f, 1.0f), m);
  // The §1.6 numbers through the requantization rules (unbounded range): float32 724, float64 725.
  EXPECT_EQ(static_cast<float>(1807579) * m, 724.5f);
  EXPECT_EQ(requantize_float32(1807579, m, 0, INT32_MIN, INT32_MAX), 724);
  EXPECT_EQ(requantize_float64(1807579, m, 0, INT32_MIN, INT32_MAX), 725);
  // Through run_reference the §1.6 accumulator itself saturates in both modes (724.5 + any zero
  // point lies outside every 8-bit range), so nothing distinguishes them there...
  const NamedTensors literal = split_inputs({1807579}, m);
  EXPECT_EQ(run_split(literal, "float32"), std::vector<int>{255});
  EXPECT_EQ(run_split(literal, "float64"), std::vector<int>{255});
  // ...but the same M with in-range accumulators splits them, both ways:
  //   540153 * M = 216.50000145 (fl32: 216.5, tie -> 216; float64 -> 217)
  //   427881 * M = 171.49999560 (fl32: 171.5, tie -> 172; float64 -> 171)
  // (also the requant-split vectors: ORT gives 216/172, the ONNX evaluator 217/171).
  const NamedTensors in = split_inputs({540153, 427881}, m);
  const std::vector<int> f32 = run_split(in, "float32"), f64 = run_split(in, "float64");
  EXPECT_EQ(f32, (std::vector<int>{216, 172}));
  EXPECT_EQ(f64, (std::vector<int>{217, 171}));
  std::cout << "[onnx_reference] requant split: acc 540153, 427881 with M = 0x39D22420 -> float32 "
            << f32[0] << ", " << f32[1] << "; float64 " << f64[0] << ", " << f64[1]
            << " (acc 1807579 -> 724 / 725 unsaturated, 255 / 255 through QLinearMatMul)"
            << std::endl;
}

}  // namespace
}  // namespace mmtune
