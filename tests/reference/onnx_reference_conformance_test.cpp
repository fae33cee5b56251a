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
#include "tests/support/test_support.h"

namespace mmtune {
namespace {

using nlohmann::json;

constexpr const char* kSuite = "onnx_reference";

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return json::parse(in);
}

DType dtype_named(const std::string& name, const std::string& where) {
  const std::optional<DType> t = dtype_from_name(name);
  if (!t) throw std::runtime_error(where + ": unknown dtype '" + name + "'");
  return *t;
}

double decoded(const Tensor& t, int64_t i) {
  if (!is_integer(t.dtype)) return float_at(t, i);
  if (t.dtype == DType::kUInt64) return static_cast<double>(t.data<uint64_t>()[i]);
  return static_cast<double>(int_at(t, i));
}

// Elements whose bit patterns differ (same dtype and shape assumed).
int64_t count_bit_differences(const Tensor& e, const Tensor& a) {
  const std::size_t sz = dtype_size(e.dtype);
  int64_t n = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    n += std::memcmp(e.bytes.data() + i * sz, a.bytes.data() + i * sz, sz) != 0;
  }
  return n;
}

// Elements outside |a - e| <= atol + rtol * |e| (the rule of testing::all_close).
int64_t count_outside(const Tensor& e, const Tensor& a, double rtol, double atol) {
  int64_t n = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    const double x = decoded(e, i), y = decoded(a, i);
    if (std::isnan(x) || std::isnan(y)) {
      n += std::isnan(x) != std::isnan(y);
    } else if (std::isinf(x)) {
      n += x != y;
    } else {
      n += std::fabs(y - x) > atol + rtol * std::fabs(x);
    }
  }
  return n;
}

struct Tally {
  int64_t cases = 0, outputs = 0, mismatches = 0, bit_identical = 0;
  int64_t min_outputs = 0;
  bool tolerance = false;
  std::vector<int64_t> seeds;
};

// Runs every case of index.json through run_reference and compares; prints one line per case, one
// per group and the totals.
void run_suite(const std::string& suite) {
  const std::string dir = testing::vectors_dir(suite);
  const json index = read_json(dir + "/index.json");
  ASSERT_TRUE(index.contains("cases") && index.at("cases").is_array() && !index.at("cases").empty())
      << dir << "/index.json lists no cases";
  ASSERT_TRUE(index.contains("groups") && !index.at("groups").empty())
      << dir << "/index.json lists no groups";

  std::map<std::string, Tally> groups;
  for (const auto& [name, g] : index.at("groups").items()) {
    groups[name].min_outputs = g.at("min_outputs").get<int64_t>();
  }
  Tally total;
  for (const json& entry : index.at("cases")) {
    const std::string name = entry.at("name").get<std::string>();
    const std::string case_dir = dir + "/" + name;
    const json c = read_json(case_dir + "/case.json");
    const std::string op = c.at("op").get<std::string>();
    const int64_t seed = c.at("seed").get<int64_t>();
    const std::string group = c.at("group").get<std::string>();
    ASSERT_TRUE(groups.count(group)) << name << ": group '" << group << "' is not in index.json";

    Attributes attrs;
    for (const auto& [k, v] : c.at("attributes").items()) attrs[k] = v.get<std::string>();
    NamedTensors inputs;
    for (const auto& [iname, spec] : c.at("inputs").items()) {
      const std::string file = case_dir + "/" + spec.at("file").get<std::string>();
      inputs[iname] = read_npy(file, dtype_named(spec.at("dtype").get<std::string>(), file));
    }
    const json& ex = c.at("expected");
    const std::string expected_file = case_dir + "/" + ex.at("file").get<std::string>();
    const Tensor expected =
        read_npy(expected_file, dtype_named(ex.at("dtype").get<std::string>(), expected_file));

    std::ostringstream context;
    context << "case " << name << " (" << op << ", seed " << seed << "; "
            << c.at("note").get<std::string>() << ")";
    Tensor actual;
    bool ran = true;
    try {
      actual = run_reference(op, inputs, attrs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << context.str() << ": run_reference threw: " << e.what();
      ran = false;
    }

    const int64_t outputs = expected.numel();
    int64_t mismatches = outputs, identical = 0;
    const bool tolerance = c.at("compare").is_object();
    const bool same_layout =
        ran && actual.dtype == expected.dtype && actual.shape == expected.shape;
    if (same_layout) identical = outputs - count_bit_differences(expected, actual);
    if (!tolerance) {
      if (ran) {
        EXPECT_TRUE(testing::bit_equal(expected, actual, context.str()));
      }
      if (same_layout) mismatches = outputs - identical;
    } else {
      const double rtol = c.at("compare").at("rtol").get<double>();
      const double atol = c.at("compare").at("atol").get<double>();
      if (ran) {
        EXPECT_TRUE(testing::all_close(expected, actual, rtol, atol, context.str()));
      }
      if (same_layout) mismatches = count_outside(expected, actual, rtol, atol);
    }

    std::cout << "[" << suite << "] " << std::left << std::setw(58) << name << " " << std::setw(13)
              << op << " seed " << std::setw(10) << seed << " outputs " << std::setw(6) << outputs
              << " mismatches " << mismatches;
    if (tolerance) std::cout << " bit-identical " << identical << "/" << outputs;
    std::cout << std::endl;

    for (Tally* t : {&groups[group], &total}) {
      ++t->cases;
      t->outputs += outputs;
      t->mismatches += mismatches;
      t->bit_identical += identical;
      t->tolerance |= tolerance;
      t->seeds.push_back(seed);
    }
  }

  std::cout << "[" << suite << "] per group (combination):" << std::endl;
  for (const auto& [name, t] : groups) {
    std::cout << "[" << suite << "]   " << std::left << std::setw(50) << name << " cases "
              << std::setw(4) << t.cases << " outputs " << std::setw(7) << t.outputs
              << " mismatches " << t.mismatches;
    if (t.tolerance) std::cout << " bit-identical " << t.bit_identical << "/" << t.outputs;
    std::cout << " seeds";
    for (std::size_t i = 0; i < t.seeds.size() && i < 3; ++i) std::cout << " " << t.seeds[i];
    if (t.seeds.size() > 3) std::cout << " ...";
    std::cout << std::endl;
    EXPECT_GE(t.outputs, t.min_outputs) << "group " << name << " has too few outputs";
    EXPECT_GT(t.cases, 0) << "group " << name << " has no cases";
    ::testing::Test::RecordProperty(name + " outputs", std::to_string(t.outputs));
    ::testing::Test::RecordProperty(name + " mismatches", std::to_string(t.mismatches));
  }
  std::cout << "[" << suite << "] total: " << total.cases << " cases, " << total.outputs
            << " outputs compared, " << total.mismatches << " mismatches ("
            << index.at("generator").get<std::string>() << " with " << index.at("versions").dump()
            << ", generated in " << index.at("seconds").dump() << " s)" << std::endl;
  if (index.contains("diagnostics")) {
    for (const auto& [name, d] : index.at("diagnostics").items()) {
      std::cout << "[" << suite << "] diagnostic " << name << ": " << d.dump() << std::endl;
    }
  }
}

TEST(onnx_reference_conformance, EveryCaseMatchesTheReferenceEvaluator) { run_suite(kSuite); }

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
