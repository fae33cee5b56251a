// The named entry point (what `mmtune run --impl halide` calls) on every operator: the seeds'
// worked examples and one call of each other operator, bit for bit against run_reference, and the
// same errors for invalid input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "autotune/halide_ops.h"
#include "reference/codecs.h"
#include "tests/support/json_tensor.h"
#include "tests/support/test_support.h"

namespace mmtune {
namespace {

TEST(RunHalide, SeedExamplesMatchTheReferenceBitForBit) {
  int cases = 0;
  for (const char* file : {"qlinearmatmul_examples.json", "gemm_examples.json"}) {
    std::ifstream in(testing::source_dir() + "/tests/data/" + file);
    const nlohmann::json doc = nlohmann::json::parse(in);
    for (const auto& c : doc.at("cases")) {
      NamedTensors inputs;
      for (const auto& i : c.at("inputs"))
        inputs.emplace(i.at("name").get<std::string>(), testing::tensor_from_json(i));
      Attributes attrs;
      for (const auto& [k, v] : c.at("attributes").items()) attrs[k] = v.dump();
      const std::string op = c.at("op");
      EXPECT_TRUE(testing::bit_equal(run_reference(op, inputs, attrs),
                                     run_halide(op, inputs, attrs, {}),
                                     c.at("name").get<std::string>()));
      ++cases;
    }
  }
  EXPECT_EQ(cases, 24);
}

TEST(RunHalide, QGemmAndQuantMatmulDequantByName) {
  NamedTensors q;
  q.emplace("A", Tensor::from<uint8_t>(DType::kUInt8, {2, 3}, {1, 200, 3, 4, 5, 255}));
  q.emplace("a_scale", Tensor::from<float>(DType::kFloat32, {}, {0.05f}));
  q.emplace("a_zero_point", Tensor::from<uint8_t>(DType::kUInt8, {}, {100}));
  q.emplace("B", Tensor::from<int8_t>(DType::kInt8, {3, 2}, {-7, 8, 9, -128, 127, 0}));
  q.emplace("b_scale", Tensor::from<float>(DType::kFloat32, {2}, {0.1f, 0.02f}));
  q.emplace("b_zero_point", Tensor::from<int8_t>(DType::kInt8, {2}, {1, -1}));
  q.emplace("C", Tensor::from<int32_t>(DType::kInt32, {2}, {1000, -1000}));
  const Attributes qa = {{"alpha", "1.5"}, {"transB", "0"}};
  EXPECT_TRUE(
      testing::bit_equal(run_reference("QGemm", q, qa), run_halide("QGemm", q, qa, {}), "QGemm"));

  NamedTensors d;
  std::vector<uint16_t> x;
  for (int i = 0; i < 2 * 16; ++i) x.push_back(float_to_float16(static_cast<float>(i % 7) - 3.25f));
  d.emplace("x", Tensor::from(DType::kFloat16, {2, 16}, x));
  std::vector<int8_t> w;
  for (int i = 0; i < 16 * 16; ++i) w.push_back(static_cast<int8_t>(i * 37 % 255 - 127));
  d.emplace("weight", Tensor::from(DType::kInt8, {16, 16}, w));
  d.emplace("weight_scale",
            Tensor::from<float>(DType::kFloat32, {16}, std::vector<float>(16, 0.125f)));
  EXPECT_TRUE(testing::bit_equal(run_reference("QuantMatmulDequant", d, {}),
                                 run_halide("QuantMatmulDequant", d, {}, {}),
                                 "QuantMatmulDequant"));
}

TEST(RunHalide, InvalidInputGivesTheReferenceMessage) {
  NamedTensors g;
  g.emplace("A", Tensor(DType::kFloat32, {2, 3}));
  g.emplace("B", Tensor(DType::kFloat32, {4, 2}));
  std::string ref, hal;
  try {
    run_reference("Gemm", g, {});
  } catch (const InvalidArgument& e) {
    ref = e.what();
  }
  try {
    run_halide("Gemm", g, {}, {});
  } catch (const InvalidArgument& e) {
    hal = e.what();
  }
  EXPECT_FALSE(ref.empty());
  EXPECT_EQ(ref, hal);
}

}  // namespace
}  // namespace mmtune
