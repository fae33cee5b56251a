// `mmtune run` end to end: the seed examples through .npy files and the binary, and its error paths
// (exit code, message, and no output file written or overwritten on failure).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autotune/npy.h"
#include "reference/codecs.h"
#include "tests/support/cli_runner.h"
#include "tests/support/json_tensor.h"
#include "tests/support/test_support.h"

namespace mmtune {
namespace {

namespace fs = std::filesystem;

using testing::CliResult;
using testing::slurp;

class CliRun : public testing::CliFixture {};

nlohmann::json load(const std::string& file) {
  std::ifstream in(testing::source_dir() + "/tests/data/" + file);
  return nlohmann::json::parse(in);
}

TEST_F(CliRun, ReproducesEverySeedExample) {
  int cases = 0;
  for (const char* file : {"qlinearmatmul_examples.json", "gemm_examples.json"}) {
    const nlohmann::json doc = load(file);
    for (const auto& c : doc.at("cases")) {
      const std::string name = c.at("name");
      std::string args =
          "run --op " + c.at("op").get<std::string>() + " --output " + path(name + ".y.npy");
      for (const auto& i : c.at("inputs")) {
        const std::string f = path(name + "." + i.at("name").get<std::string>() + ".npy");
        write_npy(f, testing::tensor_from_json(i));
        args += " --input " + i.at("name").get<std::string>() + "=" + f;
      }
      for (const auto& [k, v] : c.at("attributes").items()) args += " --attr " + k + "=" + v.dump();
      const CliResult r = run(args);
      ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
      const Tensor expected = testing::tensor_from_json(c.at("outputs").at(0));
      const Tensor y = read_npy(path(name + ".y.npy"));
      if (expected.dtype == DType::kFloat32) {
        EXPECT_TRUE(testing::all_close(expected, y, 1e-6, 1e-7, name));
      } else {
        EXPECT_TRUE(testing::bit_equal(expected, y, name));
      }
      ++cases;
    }
  }
  EXPECT_EQ(cases, 24);
  std::cout << "[cli] " << cases << " seed examples reproduced through mmtune run\n";
}

TEST_F(CliRun, InputDirAndDtypeSuffixReadFloat8BitPatterns) {
  // a = [1.5, 2] and b = [2, 0.5] as E4M3FN bit patterns stored in uint8 files: acc = 4 -> 0x48.
  auto bits = [](const std::vector<float>& v) {
    std::vector<uint8_t> b;
    for (float x : v) b.push_back(float_to_float8(DType::kFloat8E4M3FN, x, true));
    return b;
  };
  write_npy(path("a.npy"), Tensor::from(DType::kUInt8, {1, 2}, bits({1.5f, 2.0f})));
  write_npy(path("b.npy"), Tensor::from(DType::kUInt8, {2, 1}, bits({2.0f, 0.5f})));
  write_npy(path("zp.npy"), Tensor::from<uint8_t>(DType::kUInt8, {}, {0}));
  write_npy(path("s.npy"), Tensor::from<float>(DType::kFloat32, {}, {1.0f}));
  std::string args = "run --op QLinearMatMul --output " + path("y.npy") +
                     " --input a=" + path("a.npy") + ":float8e4m3fn --input b=" + path("b.npy") +
                     ":float8e4m3fn";
  for (const char* z : {"a_zero_point", "b_zero_point", "y_zero_point"}) {
    args += std::string(" --input ") + z + "=" + path("zp.npy") + ":float8e4m3fn";
  }
  for (const char* s : {"a_scale", "b_scale", "y_scale"})
    args += std::string(" --input ") + s + "=" + path("s.npy");
  const CliResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("float8e4m3fn [1,1] (stored as |u1 bit patterns)"), std::string::npos)
      << r.out;
  const Tensor y = read_npy(path("y.npy"), DType::kFloat8E4M3FN);
  EXPECT_EQ(y.data<uint8_t>()[0], 0x48);

  // The same through --input-dir with NAME.DTYPE.npy names.
  fs::create_directories(dir_ / "in");
  for (const char* n : {"a", "b"})
    fs::copy_file(path(std::string(n) + ".npy"),
                  dir_ / "in" / (std::string(n) + ".float8e4m3fn.npy"));
  for (const char* z : {"a_zero_point", "b_zero_point", "y_zero_point"})
    fs::copy_file(path("zp.npy"), dir_ / "in" / (std::string(z) + ".float8e4m3fn.npy"));
  for (const char* s : {"a_scale", "b_scale", "y_scale"})
    fs::copy_file(path("s.npy"), dir_ / "in" / (std::string(s) + ".npy"));
  const CliResult d = run("run --op qlinear_matmul --input-dir " + (dir_ / "in").string() +
                          " --output " + path("y2.npy") + " --print");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("[[4]]"), std::string::npos) << d.out;
}

struct ErrorCase {
  std::string name;
  std::string args;  // {dir} is replaced by the test's folder
  int exit_code;
  std::vector<std::string> stderr_parts;
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class CliErrors : public CliRun, public ::testing::WithParamInterface<ErrorCase> {};

TEST_P(CliErrors, FailCleanlyWithoutTouchingTheOutput) {
  const ErrorCase& c = GetParam();
  // Valid Gemm inputs; a pre-existing output that a failed run must leave untouched.
  write_npy(path("A.npy"), Tensor::from<float>(DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  write_npy(path("B.npy"), Tensor::from<float>(DType::kFloat32, {3, 2}, {1, 0, 0, 1, 1, 1}));
  write_npy(path("B_bad.npy"),
            Tensor::from<float>(DType::kFloat32, {4, 2}, std::vector<float>(8, 1)));
  write_npy(path("I.npy"),
            Tensor::from<int32_t>(DType::kInt32, {3, 2}, std::vector<int32_t>(6, 1)));
  std::ofstream(path("garbage.npy")) << "not a numpy file";
  std::ofstream(path("y.npy")) << "previous result";
  std::string args = c.args;
  for (std::size_t p; (p = args.find("{dir}")) != std::string::npos;)
    args.replace(p, 5, dir_.string());
  const CliResult r = run(args);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  for (const std::string& part : c.stderr_parts) {
    EXPECT_NE(r.err.find(part), std::string::npos) << "'" << part << "' not in: " << r.err;
  }
  EXPECT_EQ(slurp(dir_ / "y.npy"), "previous result");
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos)
        << "left behind: " << e.path();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, CliErrors,
    ::testing::Values(
        ErrorCase{
            "missing_file",
            "run --op Gemm --input A={dir}/A.npy --input B={dir}/nope.npy --output {dir}/y.npy",
            1,
            {"nope.npy"}},
        ErrorCase{
            "not_npy",
            "run --op Gemm --input A={dir}/A.npy --input B={dir}/garbage.npy --output {dir}/y.npy",
            1,
            {"garbage.npy"}},
        ErrorCase{
            "k_mismatch",
            "run --op Gemm --input A={dir}/A.npy --input B={dir}/B_bad.npy --output {dir}/y.npy",
            1,
            {"Gemm: A has shape [2,3]", "inner dimensions differ"}},
        ErrorCase{"dtype_mismatch",
                  "run --op Gemm --input A={dir}/A.npy --input B={dir}/I.npy --output {dir}/y.npy",
                  1,
                  {"B has dtype int32 but A has dtype float32"}},
        ErrorCase{"missing_input",
                  "run --op Gemm --input A={dir}/A.npy --output {dir}/y.npy",
                  1,
                  {"input B is required but missing"}},
        ErrorCase{"unknown_input",
                  "run --op Gemm --input A={dir}/A.npy --input B={dir}/B.npy --input X={dir}/B.npy "
                  "--output {dir}/y.npy",
                  1,
                  {"no input named 'X'"}},
        ErrorCase{"duplicate_input",
                  "run --op Gemm --input A={dir}/A.npy --input A={dir}/A.npy --input B={dir}/B.npy "
                  "--output {dir}/y.npy",
                  1,
                  {"input A is given twice"}},
        ErrorCase{
            "bad_dtype_suffix",
            "run --op Gemm --input A={dir}/A.npy:float7 --input B={dir}/B.npy --output {dir}/y.npy",
            1,
            {"'float7' is not a dtype"}},
        ErrorCase{"bad_reinterpretation",
                  "run --op Gemm --input A={dir}/A.npy:bfloat16 --input B={dir}/B.npy --output "
                  "{dir}/y.npy",
                  1,
                  {"A.npy"}},
        ErrorCase{"bad_attr",
                  "run --op Gemm --input A={dir}/A.npy --input B={dir}/B.npy --attr transA=maybe "
                  "--output {dir}/y.npy",
                  1,
                  {"transA=maybe is not an integer"}},
        ErrorCase{"malformed_attr",
                  "run --op Gemm --input A={dir}/A.npy --input B={dir}/B.npy --attr transA "
                  "--output {dir}/y.npy",
                  1,
                  {"--attr transA is not KEY=VALUE"}},
        ErrorCase{"unknown_op",
                  "run --op Conv --input A={dir}/A.npy --output {dir}/y.npy",
                  1,
                  {"unknown operator 'Conv'"}},
        ErrorCase{"unknown_impl",
                  "run --op Gemm --impl cuda --input A={dir}/A.npy --input B={dir}/B.npy --output "
                  "{dir}/y.npy",
                  1,
                  {"--impl cuda"}},
        ErrorCase{"output_folder_missing",
                  "run --op Gemm --input A={dir}/A.npy --input B={dir}/B.npy --output "
                  "{dir}/no/such/y.npy",
                  1,
                  {"does not exist"}},
        ErrorCase{"output_is_folder",
                  "run --op Gemm --input A={dir}/A.npy --input B={dir}/B.npy --output {dir}",
                  1,
                  {"is a folder"}},
        // Paths longer than the system's limit (found by fuzz_cli: a lookup that fails must not
        // escape as an exception, here of std::filesystem).
        ErrorCase{"overlong_input_path",
                  "run --op Gemm --input A={dir}/A.npy --input B={dir}/" + std::string(5000, 'x') +
                      ":notadtype --output {dir}/y.npy",
                  1,
                  {"'notadtype' is not a dtype"}},
        ErrorCase{
            "overlong_input_dir",
            "run --op Gemm --input-dir {dir}/" + std::string(5000, 'x') + " --output {dir}/y.npy",
            1,
            {"is not a folder"}},
        ErrorCase{"overlong_output",
                  "run --op Gemm --input A={dir}/A.npy --input B={dir}/B.npy --output {dir}/" +
                      std::string(5000, 'y') + "/y.npy",
                  1,
                  {"does not exist"}},
        ErrorCase{
            "missing_op_option", "run --input A={dir}/A.npy --output {dir}/y.npy", 2, {"--op"}},
        ErrorCase{"no_subcommand", "", 2, {}}),
    [](const auto& info) { return info.param.name; });

TEST_F(CliRun, SuccessOverwritesOutputAtomically) {
  write_npy(path("A.npy"), Tensor::from<float>(DType::kFloat32, {1, 2}, {1, 2}));
  write_npy(path("B.npy"), Tensor::from<float>(DType::kFloat32, {2, 1}, {3, 4}));
  std::ofstream(path("y.npy")) << "previous result";
  const CliResult r =
      run("run --op Gemm --input A=" + path("A.npy") + " --input B=" + path("B.npy") +
          " --attr alpha=0.5 --output " + path("y.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy(path("y.npy")).data<float>()[0], 5.5f);  // (1*3 + 2*4) * 0.5
}

TEST_F(CliRun, OpsListsEveryOperator) {
  const CliResult r = run("ops");
  ASSERT_EQ(r.exit_code, 0);
  for (const char* op : {"QLinearMatMul", "Gemm", "QGemm", "QuantMatmulDequant", "requant=float32",
                         "contract=strict"}) {
    EXPECT_NE(r.out.find(op), std::string::npos) << op;
  }
}

}  // namespace
}  // namespace mmtune
