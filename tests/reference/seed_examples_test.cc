// The seeds' worked examples (tests/data/*_examples.json, copied from spec/): QLinearMatMul
// exactly, Gemm within the precision the outputs were printed with (8 digits after rounding to
// float32).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "reference/registry.h"
#include "tests/support/json_tensor.h"
#include "tests/support/test_support.h"

namespace mmtune {
namespace {

using testing::source_dir;
using testing::tensor_from_json;

nlohmann::json load(const std::string& file) {
  std::ifstream in(source_dir() + "/tests/data/" + file);
  if (!in) throw std::runtime_error("cannot open tests/data/" + file);
  return nlohmann::json::parse(in);
}

Attributes attributes_of(const nlohmann::json& c) {
  Attributes attrs;
  for (const auto& [k, v] : c.at("attributes").items()) {
    attrs[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  return attrs;
}

NamedTensors inputs_of(const nlohmann::json& c) {
  NamedTensors in;
  for (const auto& i : c.at("inputs"))
    in.emplace(i.at("name").get<std::string>(), tensor_from_json(i));
  return in;
}

TEST(SeedExamples, QLinearMatMulExactInBothRequantModes) {
  const auto doc = load("qlinearmatmul_examples.json");
  ASSERT_GE(doc.at("cases").size(), 12u);
  int64_t outputs = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string name = c.at("name");
    const Tensor expected = tensor_from_json(c.at("outputs").at(0));
    for (const char* mode : {"float32", "float64"}) {
      Attributes attrs = attributes_of(c);
      attrs["requant"] = mode;
      const Tensor y = run_reference("QLinearMatMul", inputs_of(c), attrs);
      EXPECT_TRUE(testing::bit_equal(expected, y, name + " requant=" + mode));
      outputs += y.numel();
    }
  }
  std::cout << "[seed examples] QLinearMatMul: " << doc.at("cases").size() << " cases x 2 modes, "
            << outputs << " outputs compared exactly\n";
}

TEST(SeedExamples, GemmWithinPrintedPrecision) {
  const auto doc = load("gemm_examples.json");
  ASSERT_GE(doc.at("cases").size(), 12u);
  int64_t outputs = 0, identical = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string name = c.at("name");
    // The expected values are printed with 8 significant digits: their own rounding error is at
    // most half a unit in the 8th digit, and the seed's BLAS summation order differs from the
    // K-ordered sum by up to ~8 float32 ulps where terms cancel (measured: rtol 2e-7 fails on 5
    // outputs).
    const Tensor expected = tensor_from_json(c.at("outputs").at(0));
    for (const char* contract : {"strict", "fma"}) {
      Attributes attrs = attributes_of(c);
      attrs["contract"] = contract;
      const Tensor y = run_reference("Gemm", inputs_of(c), attrs);
      EXPECT_TRUE(testing::all_close(expected, y, 1e-6, 1e-7, name + " contract=" + contract));
      outputs += y.numel();
      for (int64_t i = 0; i < y.numel(); ++i)
        identical += y.data<float>()[i] == expected.data<float>()[i];
    }
  }
  std::cout << "[seed examples] Gemm: " << doc.at("cases").size() << " cases x 2 contracts, "
            << outputs << " outputs within rtol 1e-6 + atol 1e-7, " << identical
            << " identical to the printed value rounded to float32\n";
}

}  // namespace
}  // namespace mmtune
