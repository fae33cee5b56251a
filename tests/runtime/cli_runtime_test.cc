// `mmtune run --impl runtime|halide` end to end on the seed examples, bit for bit against
// `--impl reference`; the --params option; and a user's program linking mmtune::runtime alone (it
// runs, and libHalide is not among its libraries).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autotune/npy.h"
#include "mmtune/mmtune.h"
#include "tests/support/cli_runner.h"
#include "tests/support/json_tensor.h"
#include "tests/support/test_support.h"

namespace mmtune {
namespace {

namespace fs = std::filesystem;

using testing::CliResult;
using testing::slurp;

class CliImpl : public testing::CliFixture {
 protected:
  // Writes the inputs of a seed case; returns the `run` arguments without --impl and --output.
  std::string seed_args(const nlohmann::json& c) {
    const std::string name = c.at("name");
    std::string args = "run --op " + c.at("op").get<std::string>();
    for (const auto& i : c.at("inputs")) {
      const std::string f = path(name + "." + i.at("name").get<std::string>() + ".npy");
      write_npy(f, testing::tensor_from_json(i));
      args += " --input " + i.at("name").get<std::string>() + "=" + f;
    }
    for (const auto& [k, v] : c.at("attributes").items()) args += " --attr " + k + "=" + v.dump();
    return args;
  }

  fs::path dir_;
};

// Whether this run caps the runtime's level (the runtime suites run again at each lower level with
// MMTUNE_MAX_KERNEL_TARGET set). `--impl halide` compiles the same JIT kernel at every level, so
// the capped runs leave it to the uncapped one.
bool level_capped() {
  const char* cap = std::getenv("MMTUNE_MAX_KERNEL_TARGET");
  return cap != nullptr && *cap != '\0';
}

nlohmann::json load(const std::string& file) {
  std::ifstream in(testing::source_dir() + "/tests/data/" + file);
  return nlohmann::json::parse(in);
}

// Every seed example through the runtime (Gemm and the float32-scale QLinearMatMul ones on the AOT
// kernels, the float16-scale ones on the reference path) and the Gemm ones through the JIT, with
// the shipped default schedule (and once with --params); at a capped level, the runtime alone.
TEST_F(CliImpl, SeedExamplesMatchTheReferenceBitForBit) {
  const bool jit = !level_capped();
  std::ofstream(path("params.json"))
      << R"({"template": "cpu_matmul", "tile_rows": 3, "tile_vectors": 1, "k_unroll": 2,)"
      << R"( "n_block": 0, "pack_b": false, "parallel": false})";
  int runs = 0, kernel_runs = 0, gemm_cases = 0, covered_cases = 0;
  bool qlm_linked = false;
  for (const runtime::KernelInfo& k : runtime::linked_kernel_infos())
    qlm_linked |= k.op == "QLinearMatMul";
  for (const char* file : {"qlinearmatmul_examples.json", "gemm_examples.json"}) {
    const nlohmann::json doc = load(file);
    for (const auto& c : doc.at("cases")) {
      const std::string name = c.at("name");
      const std::string args = seed_args(c);
      const CliResult ref = run(args + " --impl reference --output " + path(name + ".ref.npy"));
      ASSERT_EQ(ref.exit_code, 0) << name << ": " << ref.err;
      const Tensor expected = read_npy(path(name + ".ref.npy"));
      std::vector<std::pair<std::string, std::string>> impls = {{"runtime", ""}};
      // Shipped: every Gemm type; QLinearMatMul int8/uint8 with float32 scales where the linked
      // database has QLinearMatMul kernels (the SSE4.1 one has Gemm only).
      bool covered = c.at("op") == "Gemm";
      for (const auto& input : c.at("inputs"))
        covered |= qlm_linked && input.at("name") == "a_scale" && input.at("dtype") == "float32";
      covered_cases += covered;
      if (c.at("op") == "Gemm") {
        // Each JIT run compiles its kernel (about a second): --params on the first case only.
        if (jit) impls.push_back({"halide", ""});
        if (gemm_cases++ == 0 && jit)
          impls.push_back({"halide", " --params " + path("params.json")});
      }
      for (const auto& [impl, extra] : impls) {
        const std::string out = path(name + "." + impl + ".npy");
        const CliResult r = run(args + " --impl " + impl + extra + " --output " + out);
        ASSERT_EQ(r.exit_code, 0) << name << " --impl " << impl << extra << ": " << r.err;
        EXPECT_NE(r.out.find("(" + impl + "): wrote"), std::string::npos) << r.out;
        EXPECT_TRUE(testing::bit_equal(expected, read_npy(out), name + " --impl " + impl + extra));
        if (impl == "runtime" && r.out.find("  runtime: reference:") == std::string::npos)
          ++kernel_runs;
        if (!extra.empty()) {
          EXPECT_NE(r.out.find("\"tile_rows\":3"), std::string::npos) << r.out;
        }
        ++runs;
      }
    }
  }
  // Every seed case; uncapped, the Gemm ones through the JIT too.
  EXPECT_EQ(runs, jit ? 24 + gemm_cases + 1 : 24);
  EXPECT_GT(gemm_cases, 0);
  if (runtime::kernel_target() != "none") {
    EXPECT_EQ(kernel_runs,
              covered_cases);  // the covered cases ran on kernels, the others on the reference
    if (qlm_linked) {
      EXPECT_GT(covered_cases, gemm_cases);
    } else {
      EXPECT_EQ(covered_cases, gemm_cases);
    }
  }
  std::cout << "[runtime] " << runs << " seed runs through --impl runtime/halide bit-exact\n";
}

TEST_F(CliImpl, TheQLinearMatMulExampleFolder) {
  const std::string in = testing::source_dir() + "/examples/qlinearmatmul_u8";
  const CliResult ref =
      run("run --op QLinearMatMul --input-dir " + in + " --output " + path("ref.npy"));
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  for (const char* impl : {"runtime", "halide"}) {
    if (std::string(impl) == "halide" && level_capped()) continue;  // the uncapped run's
    const CliResult r = run(std::string("run --op QLinearMatMul --impl ") + impl + " --input-dir " +
                            in + " --output " + path(std::string(impl) + ".npy"));
    if (r.exit_code == 1 && r.err.find("no Halide") != std::string::npos)
      continue;  // JIT not there yet
    ASSERT_EQ(r.exit_code, 0) << impl << ": " << r.err;
    EXPECT_TRUE(testing::bit_equal(read_npy(path("ref.npy")),
                                   read_npy(path(std::string(impl) + ".npy")), impl));
  }
}

TEST_F(CliImpl, ParamsErrors) {
  const std::string base =
      "run --op Gemm --input A=" + path("A.npy") + " --input B=" + path("B.npy");
  write_npy(path("A.npy"), Tensor::from<float>(DType::kFloat32, {1, 2}, {1, 2}));
  write_npy(path("B.npy"), Tensor::from<float>(DType::kFloat32, {2, 1}, {3, 4}));
  std::ofstream(path("bad.json")) << R"({"template": "cpu_matmul", "tile_cols": 4})";
  std::ofstream(path("huge.json"))
      << R"({"template": "cpu_matmul", "tile_rows": 16, "tile_vectors": 8})";
  struct Case {
    std::string args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {base + " --impl runtime --params " + path("bad.json"), "applies to --impl halide only"},
      {base + " --impl halide --params " + path("missing.json"), "cannot be read"},
      {base + " --impl halide --params " + path("bad.json"), "cpu_matmul has no knob 'tile_cols'"},
      {base + " --impl halide --params " + path("huge.json"), "vector registers"},
      {base + " --impl halide --attr contract=fma --target x86-64-linux-sse41",
       "Gemm: contract=fma needs a fused multiply-add, which target x86-64-linux-sse41 lacks"},
      {base + " --impl runtime --target x86-64-linux-sse41",
       "--target x86-64-linux-sse41 applies to --impl halide only"},
      {base + " --impl jit",
       "--impl jit is not an implementation; implementations: reference, halide, runtime"},
  };
  for (const Case& c : cases) {
    const CliResult r = run(c.args + " --output " + path("y.npy"));
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(path("y.npy"))) << c.args;
  }
}

// A level cap naming no level of this build is the user's mistake: refused, naming the variable,
// before anything is computed or written.
TEST_F(CliImpl, AnUnknownMaxKernelTargetIsRefused) {
  write_npy(path("A.npy"), Tensor::from<float>(DType::kFloat32, {1, 2}, {1, 2}));
  write_npy(path("B.npy"), Tensor::from<float>(DType::kFloat32, {2, 1}, {3, 4}));
  const CliResult r = sh("MMTUNE_MAX_KERNEL_TARGET=x86-64-linux-avx9 '" + testing::cli_path() +
                         "' run --op Gemm --impl runtime --input A=" + path("A.npy") +
                         " --input B=" + path("B.npy") + " --output " + path("y.npy"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("MMTUNE_MAX_KERNEL_TARGET='x86-64-linux-avx9' is not a kernel target of "
                       "this build"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(path("y.npy")));
}

// The example program (runtime/examples/gemm_example.cc) is built next to the mmtune binary.
TEST_F(CliImpl, AUserProgramLinksTheRuntimeWithoutLibHalide) {
  const std::string example =
      (fs::path(testing::cli_path()).parent_path() / "mmtune_runtime_example").string();
  ASSERT_TRUE(fs::exists(example)) << example;
  const CliResult r = sh("'" + example + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Y = 4.5 4.5 10.5 10.5"), std::string::npos) << r.out;
  if (runtime::kernel_target() != "none") {
    EXPECT_NE(r.out.find("kernel: gemm_f32_strict__"), std::string::npos) << r.out;
  }
  const CliResult ldd = sh("ldd '" + example + "'");
  ASSERT_EQ(ldd.exit_code, 0) << ldd.err;
  EXPECT_EQ(ldd.out.find("libHalide"), std::string::npos) << ldd.out;
}

}  // namespace
}  // namespace mmtune
