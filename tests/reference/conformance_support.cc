// Runs a folder of generated conformance vectors (tests/vectors/gen_ort.py, gen_onnx_reference.py):
// each case's inputs through the reference, compared exactly or within the case's tolerance.
#include "tests/reference/conformance_support.h"

#include <gtest/gtest.h>

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
#include "reference/registry.h"
#include "reference/tensor.h"
#include "tests/support/test_support.h"

namespace mmtune::testing {
namespace {

using nlohmann::json;

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
}  // namespace

void run_conformance_suite(const std::string& suite) {
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

}  // namespace mmtune::testing
