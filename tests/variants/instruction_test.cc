// What the kernels compile to, read from the generated assembly (compiled for x86 targets this
// machine need not run: nothing is executed): the exact integer sums keep the dot-product
// instructions (vpmaddwd, vpdpbusd with AVX-512 VNNI) and never use the saturating vpmaddubsw; a
// Gemm of the fma contract is fused (vfmadd) and one of the strict contract never is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "Halide.h"

namespace mmtune {
namespace {

// The assembly (or, with `what` stmt, the lowered statement) of `generator` with `params` for
// `target`.
std::string assembly(const std::string& generator, const std::map<std::string, std::string>& params,
                     const std::string& target,
                     Halide::OutputFileType what = Halide::OutputFileType::assembly) {
  auto gen = Halide::Internal::GeneratorRegistry::create(
      generator, Halide::GeneratorContext(Halide::Target(target)));
  gen->set_generatorparam_values(params);
  const std::string path = "/tmp/mmtune_asm_" + std::to_string(getpid()) + ".s";
  gen->build_module("kernel").compile({{what, path}});
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::remove(path.c_str());
  return s.str();
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(Instructions, ExactInt8SumsUseDotProductsAndNeverSaturate) {
  struct Case {
    std::string target, k_group, want;
  };
  const std::vector<Case> cases = {
      {"x86-64-linux-avx2-fma-f16c", "1", "vpmaddwd"},
      {"x86-64-linux-avx2-fma-f16c", "4", "vpmaddwd"},
      {"x86-64-linux-avx2-fma-f16c", "2", "vpmaddwd"},
      {"x86-64-linux-avx512_skylake", "2", "vpmaddwd"},
      {"x86-64-linux-avx512_sapphirerapids", "4", "vpdpbusd"},
      {"x86-64-linux-avx512_zen4-avx2-fma-f16c", "4", "vpdpbusd"},
  };
  for (const Case& c : cases) {
    const std::string s = assembly("mmtune_qlinear_matmul",
                                   {{"a.type", "uint8"},
                                    {"b.type", "int8"},
                                    {"y.type", "uint8"},
                                    {"tile_rows", "4"},
                                    {"tile_vectors", "2"},
                                    {"n_block", "0"},
                                    {"pack_b", "true"},
                                    {"k_group", c.k_group}},
                                   c.target);
    EXPECT_GT(count(s, c.want), 0) << c.target << " k_group=" << c.k_group;
    EXPECT_EQ(count(s, "pmaddubsw"), 0) << c.target << ": the saturating pair sum";
    EXPECT_EQ(count(s, "vpdpbusds") + count(s, "vpdpwssds"), 0)
        << c.target << ": saturating dot products";
  }
}

// The AMX form (cpu_matmul's amx knob, B prepacked): every 8-bit sign combination sums in the tile
// multiply of its signs (tdpbusd for uint8 x int8, ...), the tile loaded and stored whole, never
// through a saturating instruction. Compiled for Sapphire Rapids on any host (nothing runs).
// A u8/s8 QLinearMatMul kernel of the AMX form (16 x 16 tiles, strips of 256, row blocks of 64, B
// prepacked), `a` x `b`.
std::map<std::string, std::string> amx_qlinear_matmul(const std::string& a, const std::string& b) {
  return {{"a.type", a},         {"b.type", b},      {"y.type", "uint8"},    {"tile_rows", "16"},
          {"tile_vectors", "1"}, {"n_block", "256"}, {"m_block", "64"},      {"pack_b", "true"},
          {"k_group", "4"},      {"amx", "true"},    {"prepacked_b", "true"}};
}

TEST(Instructions, AmxSumsUseTileMultiplies) {
  const std::string target = "x86-64-linux-avx512_sapphirerapids-avx2-fma-f16c";
  const std::map<std::pair<std::string, std::string>, std::string> want = {
      {{"uint8", "int8"}, "tdpbusd"},
      {{"int8", "int8"}, "tdpbssd"},
      {{"uint8", "uint8"}, "tdpbuud"},
      {{"int8", "uint8"}, "tdpbsud"}};
  for (const auto& [types, instruction] : want) {
    const std::string s =
        assembly("mmtune_qlinear_matmul", amx_qlinear_matmul(types.first, types.second), target);
    const std::string what = types.first + " x " + types.second;
    EXPECT_GT(count(s, instruction), 0) << what;
    EXPECT_GT(count(s, "tileloadd"), 0) << what;
    EXPECT_GT(count(s, "tilestored"), 0) << what;
    EXPECT_EQ(count(s, "pmaddubsw") + count(s, "vpdpbusds") + count(s, "vpdpwssds"), 0)
        << what << ": a saturating sum";
  }
}

// The most tile multiplies one basic block of `s` holds, with that block's tile loads and stores.
struct TileBlock {
  int multiplies = 0, loads = 0, stores = 0;
};
TileBlock busiest_tile_block(const std::string& s) {
  TileBlock best, cur;
  std::istringstream lines(s);
  std::string line;
  auto close = [&]() {
    if (cur.multiplies > best.multiplies) best = cur;
    cur = TileBlock{};
  };
  while (std::getline(lines, line)) {
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const std::string text = line.substr(first);
    if (text.rfind(".LBB", 0) == 0 || text.rfind("# %bb.", 0) == 0 || text[0] == 'j') {
      close();
      continue;
    }
    cur.multiplies += count(text, "tdpbusd");
    cur.loads += count(text, "tileloadd");
    cur.stores += count(text, "tilestored");
  }
  close();
  return best;
}

TEST(Instructions, AmxJamSumsSeveralTilesPerKStepWithoutSpills) {
  // amx_jam (schedules/cpu/amx_jam.h): 1, one tile multiply per K step (two tile loads); 2, two
  // tiles of a column of tiles (B's tile loaded once: three loads); 4, two by two (four loads).
  // No tile store inside the step: the accumulators stay in tile registers (LLVM spills them
  // with tilestored when they do not fit the eight).
  const std::string target = "x86-64-linux-avx512_sapphirerapids-avx2-fma-f16c";
  const std::map<int, TileBlock> want = {{1, {1, 2, 0}}, {2, {2, 3, 0}}, {4, {4, 4, 0}}};
  for (const auto& [jam, expected] : want) {
    std::map<std::string, std::string> params = amx_qlinear_matmul("uint8", "int8");
    params["k_unroll"] = "1";
    params["specialize_tails"] = "true";
    params["amx_jam"] = std::to_string(jam);
    const std::string s = assembly("mmtune_qlinear_matmul", params, target);
    const TileBlock got = busiest_tile_block(s);
    EXPECT_EQ(got.multiplies, expected.multiplies) << "amx_jam=" << jam;
    EXPECT_EQ(got.loads, expected.loads) << "amx_jam=" << jam;
    EXPECT_EQ(got.stores, expected.stores) << "amx_jam=" << jam << ": tiles spilled in the K loop";
  }
}

TEST(Instructions, TheFmaContractIsFusedAndTheStrictOneNever) {
  for (const std::string type : {"float32", "float64"}) {
    std::map<std::string, std::string> p = {
        {"A.type", type},  {"B.type", type},   {"C.type", type},      {"Y.type", type},
        {"has_c", "true"}, {"tile_rows", "4"}, {"tile_vectors", "2"}, {"n_block", "0"}};
    p["contract"] = "fma";
    const std::string fused = assembly("mmtune_gemm", p, "x86-64-linux-avx2-fma-f16c");
    p["contract"] = "strict";
    const std::string strict = assembly("mmtune_gemm", p, "x86-64-linux-avx2-fma-f16c");
    EXPECT_GT(count(fused, "vfmadd"), 0) << type;
    EXPECT_EQ(count(strict, "vfmadd") + count(strict, "vfmsub") + count(strict, "vfnmadd"), 0)
        << type;
  }
}

// Gemm's epilogue reads C through a view of any stride (zero where C broadcasts); the kernels have
// a branch for dense rows of C (C (M, N), a row (N,), the runtime's zero row when there is no C) in
// which C is read a vector at a time, and the general branch reads it element by element. Checked
// in the lowered statement: a load of C as a dense 16-lane ramp, and the strided one besides.
TEST(Instructions, GemmReadsDenseRowsOfCAVectorAtATime) {
  const std::map<std::string, std::string> p = {
      {"A.type", "float32"}, {"B.type", "float32"}, {"C.type", "float32"},
      {"Y.type", "float32"}, {"has_c", "true"},     {"contract", "fma"},
      {"tile_rows", "6"},    {"tile_vectors", "4"}, {"n_block", "128"},
      {"m_block", "132"},    {"k_block", "128"},    {"specialize_tails", "true"}};
  const std::string stmt =
      assembly("mmtune_gemm", p, "x86-64-linux-avx512_skylake", Halide::OutputFileType::stmt);
  const std::regex dense(R"(C\[ramp\([^\]]*, 1, 16\)\])");
  const std::regex strided(R"(C\[ramp\([^\]]*, C\.stride\.0, 16\)\])");
  EXPECT_TRUE(std::regex_search(stmt, dense)) << "no dense vector load of C";
  EXPECT_TRUE(std::regex_search(stmt, strided)) << "no general branch for C of any stride";
}

}  // namespace
}  // namespace mmtune
