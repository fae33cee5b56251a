// The per-target seam and the knob tables: every face of a template's table agrees with the others,
// a schedule that does not fit its target is refused before anything is compiled (by the JIT and by
// the generators themselves), and docs/naming.md carries each template's table as the code states
// it.
#include "schedules/schedule.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "Halide.h"
#include "autotune/halide_ops.h"
#include "autotune/kernel_key.h"
#include "autotune/tune_inputs.h"
#include "runtime/host/cpu_features.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using schedules::Accumulator;
using schedules::CpuMatmulParams;
using schedules::Schedule;
using schedules::TargetInfo;

const TargetInfo kAvx2 = schedules::target_info("x86-64-linux-avx2-fma-f16c");
const TargetInfo kCuda = schedules::target_info("x86-64-linux-cuda-cuda_capability_80");
const TargetInfo kHvx = schedules::target_info("hexagon-32-noos-hvx-hvx_128-hvx_v66");

std::string error_of(const std::function<void()>& f) {
  return testing::invalid_argument_message(f);
}

// Every face of the table round-trips every draw of the space (and the defaults).
TEST(KnobTable, JsonAndGeneratorParamsRoundTrip) {
  std::mt19937_64 rng(testing::variant_seed());
  int checked = 0;
  for (const Accumulator acc :
       {Accumulator{32, false}, Accumulator{32, true}, Accumulator{64, false}}) {
    std::vector<Schedule> all = {schedules::default_schedule(kAvx2, acc)};
    for (int n = 0; n < 200; ++n) all.push_back(schedules::sample("cpu_matmul", kAvx2, acc, rng));
    for (const Schedule& s : all) {
      EXPECT_EQ(s.validate(kAvx2, acc), std::nullopt);
      const nlohmann::json j = s;
      EXPECT_EQ(j.at("template"), "cpu_matmul");
      EXPECT_EQ(j.get<Schedule>(), s) << j.dump();
      EXPECT_EQ(Schedule::from_generator_params(s.generator_params()), s) << j.dump();
      // Every knob appears in both faces.
      EXPECT_EQ(j.size(), CpuMatmulParams::knobs().knobs().size() + 1);
      EXPECT_EQ(s.generator_params().size(), CpuMatmulParams::knobs().knobs().size() + 1);
      ++checked;
    }
  }
  std::cout << "[schedule] " << checked
            << " schedules round-tripped through JSON and generator params\n";
}

TEST(KnobTable, DrawsCoverEverySearchedValue) {
  // Over enough draws, each knob takes each of its searched values at least once (exact sums: the
  // K-regrouping knob too; float sums: never; copy_b only with B prepacked).
  std::mt19937_64 rng(7);
  for (const bool exact : {false, true}) {
    std::map<std::string, std::set<int>> seen;
    std::set<int> copy_b_without_prepacked;
    for (int n = 0; n < 3000; ++n) {
      Accumulator acc{32, exact};
      acc.b_prepacked = n % 2 == 1;
      const Schedule s = schedules::sample("cpu_matmul", kAvx2, acc, rng);
      if (!acc.b_prepacked) copy_b_without_prepacked.insert(s.get_if<CpuMatmulParams>()->copy_b);
      const CpuMatmulParams& p = *s.get_if<CpuMatmulParams>();
      for (const auto& k : CpuMatmulParams::knobs().knobs()) seen[k.name].insert(k.get(p));
    }
    EXPECT_EQ(copy_b_without_prepacked, std::set<int>{0}) << "copy_b drawn for a plain B";
    for (const auto& k : CpuMatmulParams::knobs().knobs()) {
      if (k.exact_only && !exact) {
        EXPECT_EQ(seen[k.name], std::set<int>{k.default_value}) << k.name;
        continue;
      }
      if (std::string(k.name) == "vector_width") {
        // fit_draw keeps the natural width (0) or a vector of two registers (16 32-bit lanes on
        // AVX2) and nothing else.
        EXPECT_EQ(seen[k.name], (std::set<int>{0, 16})) << "exact=" << exact;
        continue;
      }
      for (int v : k.search) {
        // Block sizes are rounded up to whole tiles, so a drawn block may appear as a multiple.
        const bool rounded = std::string(k.name) == "n_block" || std::string(k.name) == "m_block";
        if (rounded) continue;
        if (std::string(k.name) == "tile_rows" && v == 16) {
          // 16 accumulators + a B vector + A's broadcast: more than AVX2's 16 registers.
          EXPECT_FALSE(seen[k.name].count(v)) << "a 16-row tile drawn for AVX2";
          continue;
        }
        EXPECT_TRUE(seen[k.name].count(v))
            << k.name << "=" << v << " never drawn (exact=" << exact << ")";
      }
    }
  }
  // AVX-512's 32 registers hold a 16-row tile of one vector a row.
  const TargetInfo avx512 = schedules::target_info("x86-64-linux-avx512_zen4-avx2-fma-f16c");
  std::set<std::pair<int, int>> tiles;
  for (int n = 0; n < 3000; ++n) {
    const CpuMatmulParams p =
        *schedules::sample("cpu_matmul", avx512, {32, false}, rng).get_if<CpuMatmulParams>();
    tiles.insert({p.tile_rows, p.tile_vectors});
  }
  EXPECT_TRUE(tiles.count({16, 1}));
  EXPECT_TRUE(tiles.count({12, 2}));
  EXPECT_FALSE(tiles.count({16, 2})) << "35 registers";
}

// The search's vector widths: the natural one or two registers' worth; a drawn tile that would not
// fit the registers in double-width vectors keeps its columns with half as many vectors.
TEST(KnobTable, FitDrawKeepsTwoRegisterVectorsAndTheTilesColumns) {
  const TargetInfo avx512 = schedules::target_info("x86-64-linux-avx512_zen4-avx2-fma-f16c");
  const schedules::Accumulator f32{32, false};
  auto fitted = [&](const TargetInfo& t, int rows, int vectors, int width) {
    CpuMatmulParams p = CpuMatmulParams::defaults(t, f32);
    p.tile_rows = rows;
    p.tile_vectors = vectors;
    p.vector_width = width;
    p.n_block = 0;
    p.fit_draw(t, f32);
    return std::to_string(p.tile_rows) + "x" + std::to_string(p.tile_vectors) + "w" +
           std::to_string(p.vector_width) + (p.validate(t, f32) ? " invalid" : "");
  };
  EXPECT_EQ(fitted(kAvx2, 6, 2, 16), "6x1w16");  // 6x16: 12 registers of accumulators either way
  EXPECT_EQ(fitted(kAvx2, 4, 2, 16), "4x1w16");
  EXPECT_EQ(fitted(kAvx2, 2, 2, 16), "2x2w16");          // 2x32w16 fits as drawn: left as it is
  EXPECT_EQ(fitted(kAvx2, 4, 4, 16), "4x2w16 invalid");  // halved once only
  EXPECT_EQ(fitted(kAvx2, 4, 3, 16), "4x3w16 invalid");  // odd: nothing to halve
  EXPECT_EQ(fitted(kAvx2, 4, 2, 8), "4x2w0");            // the natural width is 0
  EXPECT_EQ(fitted(kAvx2, 4, 2, 32), "4x2w0");           // four registers: not searched
  EXPECT_EQ(fitted(avx512, 4, 2, 16), "4x2w0");
  EXPECT_EQ(fitted(avx512, 6, 4, 32), "6x2w32");
  // Fitting a fitted draw changes nothing.
  CpuMatmulParams p = CpuMatmulParams::defaults(kAvx2, f32);
  p.tile_rows = 6;
  p.tile_vectors = 2;
  p.vector_width = 16;
  p.n_block = 256;
  p.fit_draw(kAvx2, f32);
  CpuMatmulParams again = p;
  again.fit_draw(kAvx2, f32);
  EXPECT_TRUE(CpuMatmulParams::knobs().equal(p, again));
  EXPECT_EQ(Schedule(p).tag(kAvx2, f32), "6x16w16k4n256pt");
}

TEST(KnobTable, RefusesUnknownKnobsTypesAndTemplates) {
  EXPECT_NE(error_of([] {
              nlohmann::json{{"template", "cpu_matmul"}, {"tile_row", 4}}.get<Schedule>();
            }).find("cpu_matmul has no knob 'tile_row'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              nlohmann::json{{"tile_rows", true}}.get<Schedule>();
            }).find("tile_rows=true is not an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              nlohmann::json{{"pack_b", 1}}.get<Schedule>();
            }).find("pack_b=1 is not true or false"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              nlohmann::json{{"template", "gpu_magic"}}.get<Schedule>();
            })
                .find("template 'gpu_magic' is not a schedule template (templates: cpu_matmul, "
                      "arm_matmul, hvx_matmul, cuda_matmul)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Schedule::from_generator_params({{"template", "cpu_matmul"}, {"tile_rows", "x"}});
            }).find("tile_rows=x is not an integer"),
            std::string::npos);
  // A database entry without "template" is a cpu_matmul schedule (the format before templates).
  const Schedule old_format = nlohmann::json{{"tile_rows", 2}}.get<Schedule>();
  EXPECT_EQ(std::string(old_format.template_name()), "cpu_matmul");
}

TEST(KnobTable, ValidationNamesTheKnobAndTheRule) {
  CpuMatmulParams p = CpuMatmulParams::knobs().defaults();
  p.tile_rows = 17;
  EXPECT_NE(
      Schedule(p).validate(kAvx2, {32, false}).value_or("").find("tile_rows=17 is outside 1..16"),
      std::string::npos);
  p = CpuMatmulParams::defaults(kAvx2, {32, true});
  p.k_group = 4;
  EXPECT_NE(
      Schedule(p).validate(kAvx2, {32, false}).value_or("").find("k_group=4 regroups the K sum"),
      std::string::npos);
  EXPECT_EQ(Schedule(p).validate(kAvx2, {32, true}), std::nullopt);
  p.pack_a = true;
  EXPECT_NE(Schedule(p).validate(kAvx2, {32, true}).value_or("").find("pack_a needs k_group=1"),
            std::string::npos);
  p.k_group = 1;
  EXPECT_EQ(Schedule(p).validate(kAvx2, {32, true}), std::nullopt);
}

TEST(KnobTable, TagsDeriveFromTheTable) {
  CpuMatmulParams p = CpuMatmulParams::knobs().defaults();
  EXPECT_EQ(Schedule(p).tag(kAvx2, {32, false}), "6x32k4n256pt");
  p.tile_vectors = 2;
  p.k_group = 4;
  p.m_block = 12;
  p.specialize_tails = true;
  p.k_block = 0;
  p.parallel = false;
  EXPECT_EQ(Schedule(p).tag(kAvx2, {32, true}), "6x16k4n256pg4m12s");
  p.k_group = 1;
  p.k_block = 64;
  EXPECT_EQ(Schedule(p).tag(kAvx2, {64, false}), "6x8k4n256pm12sb64");
  p.pack_a = true;
  EXPECT_EQ(Schedule(p).tag(kAvx2, {64, false}), "6x8k4n256pm12sb64a");
  p.pack_a = false;
  p.k_block = 0;
  p.copy_b = true;
  EXPECT_EQ(Schedule(p).tag(kAvx2, {64, false}), "6x8k4n256pm12sc");
}

// copy_b copies a prepacked B's strips: refused, with its rule, where there is nothing to copy (a
// plain B is packed per strip already), no strip, K blocks or AMX tiles.
TEST(KnobTable, CopyBNeedsAPrepackedBInStrips) {
  CpuMatmulParams p = CpuMatmulParams::defaults(kAvx2, {32, false});
  p.n_block = 4 * p.tile_columns(kAvx2, 32);
  p.copy_b = true;
  Accumulator prepacked{32, false};
  prepacked.b_prepacked = true;
  EXPECT_EQ(Schedule(p).validate(kAvx2, prepacked), std::nullopt);
  auto refused = [&](const CpuMatmulParams& q, const Accumulator& acc) {
    return Schedule(q).validate(kAvx2, acc).value_or("").find("copy_b copies a prepacked B") !=
           std::string::npos;
  };
  EXPECT_TRUE(refused(p, {32, false}));
  CpuMatmulParams q = p;
  q.n_block = 0;
  EXPECT_TRUE(refused(q, prepacked));
  q = p;
  q.m_block = 2 * q.tile_rows;
  q.k_block = 16;
  EXPECT_TRUE(refused(q, prepacked));
  q.k_block = 0;
  EXPECT_EQ(Schedule(q).validate(kAvx2, prepacked), std::nullopt);
}

// docs/naming.md states each template's knob table exactly as the code declares it.
TEST(KnobTable, NamingDocCarriesEveryTemplatesTable) {
  std::ifstream in(testing::source_dir() + "/docs/naming.md");
  std::stringstream doc;
  doc << in.rdbuf();
  for (const std::string& name : schedules::template_names()) {
    const std::string table = schedules::knob_table_markdown(name);
    EXPECT_NE(doc.str().find(table), std::string::npos)
        << "docs/naming.md lacks the current knob table of " << name << ":\n"
        << table;
  }
}

// ---- The per-target seam ----

// hvx_matmul: exact sums of at most 32-bit lanes only, each refusal a sentence; uint8 x uint8 only
// in vrmpy groups (the sequential form was found wrong by mmtune verify, docs/targets.md).
TEST(Seam, HvxRefusesWhatItCannotComputeExactly) {
  using schedules::Accumulator;
  const schedules::TargetInfo hvx = schedules::target_info("hexagon-32-noos-hvx-hvx_128-hvx_v66");
  const Schedule s8 = schedules::default_schedule(hvx, Accumulator{32, true, 8, false});
  EXPECT_STREQ(s8.template_name(), "hvx_matmul");
  EXPECT_EQ(s8.register_tiled()->k_group, 4);
  EXPECT_EQ(s8.validate(hvx, Accumulator{32, true, 8, false, true}), std::nullopt);
  EXPECT_EQ(schedules::default_schedule(hvx, Accumulator{32, true, 32}).register_tiled()->k_group,
            1);
  auto why = [&](const Schedule& s, Accumulator acc) { return s.validate(hvx, acc).value_or(""); };
  EXPECT_NE(why(s8, Accumulator{32, false, 32}).find("exact integer sums only"), std::string::npos);
  EXPECT_NE(why(s8, Accumulator{64, true, 64}).find("no 64-bit integer lanes"), std::string::npos);
  schedules::HvxMatmulParams p = *s8.get_if<schedules::HvxMatmulParams>();
  p.k_group = 1;
  EXPECT_EQ(why(Schedule(p), Accumulator{32, true, 8, false}), "");  // int8 x int8: fine
  EXPECT_NE(
      why(Schedule(p), Accumulator{32, true, 8, false, true}).find("groups of 4 (vrmpy) only"),
      std::string::npos);
  p.k_group = 4;
  p.vector_epilogue = true;
  EXPECT_NE(why(Schedule(p), Accumulator{32, true, 8, false}).find("from v68 on"),
            std::string::npos);
  EXPECT_EQ(Schedule(p).validate(schedules::target_info("hexagon-32-noos-hvx-hvx_128-hvx_v68"),
                                 Accumulator{32, true, 8, false}),
            std::nullopt);
  EXPECT_NE(Schedule(s8)
                .validate(schedules::target_info("hexagon-32-noos-hvx"), Accumulator{32, true, 8})
                .value_or("")
                .find("needs the hvx_128 feature"),
            std::string::npos);
}

// arm_matmul's defaults on AArch64: 8 x 3-vector tiles in strips of whole tiles; the dot-product
// group (sdot/udot) for 8-bit operands where the target has arm_dot_prod, never for floats or
// 32-bit integers; mixed-sign operands in that group have A's sign flipped (no usdot in Halide
// 21), and only they.
TEST(Seam, ArmDefaultsFollowTheTargetAndTheOperands) {
  using schedules::Accumulator;
  const schedules::TargetInfo dot = schedules::target_info("arm-64-linux-arm_dot_prod");
  const schedules::TargetInfo neon = schedules::target_info("arm-64-linux");
  auto schedule = [](const schedules::TargetInfo& t, Accumulator acc) {
    const Schedule s = schedules::default_schedule(t, acc);
    EXPECT_STREQ(s.template_name(), "arm_matmul");
    EXPECT_EQ(s.validate(t, acc), std::nullopt);
    return s;
  };
  auto k_group = [&](const schedules::TargetInfo& t, Accumulator acc) {
    return schedule(t, acc).register_tiled()->k_group;
  };
  const Schedule s8 = schedule(dot, Accumulator{32, true, 8, false});
  EXPECT_EQ(s8.register_tiled()->k_group, 4);
  EXPECT_EQ(s8.register_tiled()->tile_rows, 8);
  EXPECT_EQ(s8.register_tiled()->n_block % s8.register_tiled()->tile_columns(dot, 32), 0);
  EXPECT_FALSE(s8.layout(dot, Accumulator{32, true, 8, false}).flip_a_sign);
  const Accumulator mixed{32, true, 8, true};  // uint8 x int8
  const Schedule m8 = schedule(dot, mixed);
  EXPECT_EQ(m8.register_tiled()->k_group, 4);
  EXPECT_TRUE(m8.layout(dot, mixed).flip_a_sign);
  // Sequential K (k_group 1) sums the mixed products as they are.
  schedules::ArmMatmulParams sequential = *m8.get_if<schedules::ArmMatmulParams>();
  sequential.k_group = 1;
  EXPECT_FALSE(sequential.layout(dot, mixed).flip_a_sign);
  EXPECT_FALSE(schedule(neon, mixed).layout(neon, mixed).flip_a_sign);
  EXPECT_EQ(k_group(neon, Accumulator{32, true, 8, false}), 1);  // no dot product
  EXPECT_EQ(k_group(dot, Accumulator{32, true, 32, false}), 1);  // int32 Gemm
  EXPECT_EQ(schedule(dot, Accumulator{32, false, 32}).tag(dot, {32, false}), "8x12k4n192pt");
  // 64-bit lanes: a tile that fits the 32 registers.
  (void)schedule(dot, Accumulator{64, false, 64});
}

// cpu_matmul's K group on x86 follows the target's 8-bit dot product: 4 with VNNI (vpdpbusd), 2
// without (pmaddwd over 16-bit-widened operands: a group of 4 there compiles to a pmaddwd plus
// shuffles and adds per pair sum, 1.6-1.7x slower at 128x4096x4096 u8.s8 on AVX2,
// docs/performance.md); 1 for float sums and wider integers. The GEMV seeds of exact 8-bit sums
// take the same group first.
TEST(Seam, X86KGroupFollowsTheTargetsDotProduct) {
  using schedules::Accumulator;
  const Accumulator u8s8{32, true, 8, true};
  const Accumulator s32{32, true, 32};
  const Accumulator f32{32, false, 32};
  const std::vector<std::pair<const char*, int>> targets = {
      {"x86-64-linux-avx512_zen4-avx2-fma-f16c", 4},
      {"x86-64-linux-avx2-fma-f16c-avxvnni", 4},
      {"x86-64-linux-avx2-fma-f16c", 2},
      {"x86-64-linux-sse41", 2}};
  for (const auto& [target, group] : targets) {
    const TargetInfo t = schedules::target_info(target);
    EXPECT_EQ(t.dot8_group, group) << target;
    const Schedule s8 = schedules::default_schedule(t, u8s8);
    EXPECT_STREQ(s8.template_name(), "cpu_matmul");
    EXPECT_EQ(s8.validate(t, u8s8), std::nullopt) << target;
    EXPECT_EQ(s8.register_tiled()->k_group, group) << target;
    EXPECT_EQ(s8.layout(t, u8s8).k_group, group) << target;
    // Pairs (pmaddwd) multiply 16-bit lanes: A's groups are packed widened once; a group of four
    // (vpdpbusd) reads A's bytes as they are.
    EXPECT_EQ(s8.layout(t, u8s8).widen_a, group == 2) << target;
    CpuMatmulParams sequential = *s8.get_if<CpuMatmulParams>();
    sequential.k_group = 1;
    EXPECT_FALSE(sequential.layout(t, u8s8).widen_a) << target;
    EXPECT_FALSE(schedules::default_schedule(t, s32).layout(t, s32).widen_a) << target;
    EXPECT_EQ(schedules::default_schedule(t, s32).register_tiled()->k_group, 1) << target;
    EXPECT_EQ(schedules::default_schedule(t, f32).register_tiled()->k_group, 1) << target;
    int packed = 0;
    for (const Schedule& s : schedules::shape_seeds(t, u8s8, 1)) {
      const auto& p = std::get<CpuMatmulParams>(s.params());
      // The K-blocked form over four panels sums in K order (k_group 1): ShapeSeeds covers it.
      if (!p.pack_b || p.k_block > 0) continue;
      ++packed;
      EXPECT_EQ(p.k_group, group) << target;
      EXPECT_EQ(s.validate(t, u8s8), std::nullopt) << target;
    }
    EXPECT_GT(packed, 0) << target;
  }
  EXPECT_EQ(schedules::target_info("arm-64-linux-arm_dot_prod").dot8_group, 4);
  // Widening is x86's pmaddwd alone: AArch64's knob never takes pairs (1 or 4), and a pair form
  // set there by hand still keeps A 8-bit.
  const TargetInfo arm = schedules::target_info("arm-64-linux-arm_dot_prod");
  schedules::ArmMatmulParams pairs =
      *schedules::default_schedule(arm, u8s8).get_if<schedules::ArmMatmulParams>();
  pairs.k_group = 2;
  EXPECT_FALSE(pairs.layout(arm, u8s8).widen_a);
  EXPECT_EQ(schedules::target_info("arm-64-linux").dot8_group, 1);
  EXPECT_EQ(schedules::target_info("hexagon-32-noos-hvx-hvx_128-hvx_v66").dot8_group, 4);
  EXPECT_EQ(schedules::target_info("x86-64-linux-cuda-cuda_capability_80").dot8_group, 1);
}

// cuda_matmul's defaults validate for every sum a CUDA kernel keeps exact: integer sums (dp4a
// groups for 8-bit products, same-sign or mixed), and float sums whose steps may be fused without
// changing a bit (the fma contract; float16 and float8 products, exact in their accumulators).
// Exact sums stage K tiles in shared memory, float sums keep theirs in registers.
TEST(Seam, CudaDefaultsFollowTheSum) {
  using schedules::CudaMatmulParams;
  struct Case {
    Accumulator acc;
    const char* tag;
  };
  const std::vector<Case> cases = {
      {{32, true, 8, false}, "32x64r4c4s16k4g4"},            // int8 x int8, uint8 x uint8
      {{32, true, 8, true}, "32x64r4c4s16k4g4"},             // uint8 x int8
      {{32, true, 32}, "32x64r4c4s16k4"},                    // int32 Gemm
      {{64, true, 64}, "32x64r4c4s16k4"},                    // int64 Gemm
      {{32, false, 32, false, false, true}, "32x64r4c4k4"},  // float32 Gemm, contract=fma
      {{32, false, 16, false, false, true}, "32x64r4c4k4"},  // float16 Gemm (and bfloat16, fma)
      {{64, false, 64, false, false, true}, "32x64r4c4k4"},  // float64 Gemm, contract=fma
      {{64, false, 8, false, false, true}, "32x64r4c4k4"},   // float8 QLinearMatMul
  };
  for (const Case& c : cases) {
    const Schedule s = schedules::default_schedule(kCuda, c.acc);
    EXPECT_STREQ(s.template_name(), "cuda_matmul");
    EXPECT_EQ(s.validate(kCuda, c.acc), std::nullopt) << c.tag;
    EXPECT_EQ(s.tag(kCuda, c.acc), c.tag);
    const schedules::MatmulLayout l = s.layout(kCuda, c.acc);
    EXPECT_EQ(l.lanes, 1);
    EXPECT_EQ(l.panel, 64);
    EXPECT_FALSE(l.pack_b);
    EXPECT_EQ(l.k_group, c.acc.exact && c.acc.operand_bits == 8 ? 4 : 1);
    EXPECT_TRUE(schedules::shape_seeds(kCuda, c.acc, 1).empty());
    const CudaMatmulParams& p = *s.get_if<CudaMatmulParams>();
    EXPECT_LE(p.threads(), 1024);
    EXPECT_LE(p.shared_bytes(c.acc), 48 * 1024);
  }
  // The accumulators the identities state, as the generators state them.
  auto acc = [](const char* spec) { return accumulator_of(tune::parse_identity_spec(spec)); };
  EXPECT_TRUE(acc("Gemm:float32:contract=fma").fusable);
  EXPECT_FALSE(acc("Gemm:float32").fusable);
  EXPECT_TRUE(acc("Gemm:float16").fusable);
  EXPECT_FALSE(acc("Gemm:bfloat16").fusable);
  EXPECT_TRUE(acc("Gemm:bfloat16:contract=fma").fusable);
  EXPECT_FALSE(acc("Gemm:float64").fusable);
  EXPECT_FALSE(acc("Gemm:int32").fusable);
  EXPECT_TRUE(acc("QLinearMatMul:float8e4m3fn,float8e4m3fn,float8e4m3fn").fusable);
}

// What cuda_matmul refuses, each with its sentence: float sums of separately rounded steps (Halide
// 21's PTX fuses them), knobs that regroup a float sum or group what dp4a cannot, and blocks beyond
// a GPU's limits (threads, shared memory, registers).
TEST(Seam, CudaRefusesWhatItCannotKeepExactOrFit) {
  using schedules::CudaMatmulParams;
  auto why = [](const CudaMatmulParams& p, Accumulator acc) {
    return Schedule(p).validate(kCuda, acc).value_or("");
  };
  auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const CudaMatmulParams base = CudaMatmulParams::knobs().defaults();
  // float32 (strict), bfloat16 (strict: its products may leave float32's range) and float64
  // (strict) sums.
  for (const Accumulator a : {Accumulator{32, false, 32}, Accumulator{32, false, 16}}) {
    const std::string w = why(base, a);
    EXPECT_TRUE(has(w,
                    "cuda_matmul cannot sum float32 exactly with separately rounded steps: "
                    "Halide 21 compiles CUDA kernels with FMA contraction on"))
        << w;
    EXPECT_TRUE(has(w, "AllowFPOpFusion=Fast")) << w;
  }
  EXPECT_TRUE(has(why(base, {64, false, 64}),
                  "cuda_matmul cannot sum float64 exactly with separately rounded steps"));
  // The default of a refused sum is the table's (the refusal names the sum, not a knob).
  EXPECT_TRUE(has(schedules::default_schedule(kCuda, {32, false, 32})
                      .validate(kCuda, {32, false, 32})
                      .value_or(""),
                  "cannot sum float32 exactly"));
  const Accumulator f32{32, false, 32, false, false, true}, s8{32, true, 8}, i64{64, true, 64};
  using Set = std::function<void(CudaMatmulParams&)>;
  struct Refusal {
    Set set;
    Accumulator acc;
    std::string why;
  };
  const Set big_block = [](CudaMatmulParams& p) {
    p.tile_rows = 64;
    p.tile_cols = 128;
    p.thread_rows = 8;
    p.thread_cols = 8;
  };
  const std::vector<Refusal> refusals = {
      {[](CudaMatmulParams& p) { p.k_group = 4; }, f32,
       "k_group=4 regroups the K sum, which only exact integer sums allow"},
      {[](CudaMatmulParams& p) { p.k_group = 4; },
       {32, true, 32},
       "k_group=4 needs 8-bit operands (dp4a sums groups of four 8-bit products), not 32-bit ones"},
      {[](CudaMatmulParams& p) { p.thread_rows = 3; }, s8,
       "a 32x64 block tile is not made of whole 3x4 thread tiles"},
      {[](CudaMatmulParams& p) {
         p.tile_rows = 64;
         p.thread_rows = 1;
         p.thread_cols = 2;
       },
       s8, "a 64x64 block of 1x2 thread tiles has 2048 threads; a CUDA block has at most 1024"},
      {[](CudaMatmulParams& p) { p.k_tile = 6; }, s8,
       "k_tile=6 is not 0 or a multiple of k_unroll x k_group = 4"},
      {[&](CudaMatmulParams& p) {
         big_block(p);
         p.k_tile = 32;
       },
       i64,
       "a 64x128 block with k_tile=32 needs 114688 bytes of shared memory for 64-bit sums; a "
       "block has 49152 (48 KiB)"},
      // Sums in registers: 8 x 16 64-bit ones are too many for a thread; 1024 threads of 84
      // registers too many for an SM.
      {[&](CudaMatmulParams& p) {
         big_block(p);
         p.k_tile = 0;
         p.thread_cols = 16;
       },
       i64,
       "a 8x16 thread tile of 64-bit sums needs about 344 registers a thread, 22016 for the "
       "block's 64 threads; a thread has at most 255, an SM 65536"},
      {[&](CudaMatmulParams& p) {
         big_block(p);
         p.k_tile = 0;
         p.tile_rows = 256;
         p.thread_cols = 4;
       },
       s8, "needs about 84 registers a thread, 86016 for the block's 1024 threads"},
  };
  for (const Refusal& r : refusals) {
    CudaMatmulParams p = base;
    r.set(p);
    EXPECT_TRUE(has(why(p, r.acc), r.why)) << why(p, r.acc);
  }
  // What fits one sum may not fit another: the same knobs for 8-bit sums.
  CudaMatmulParams p = base;
  p.k_group = 4;
  EXPECT_EQ(why(p, s8), "");
  big_block(p);
  p.k_tile = 0;
  p.thread_cols = 16;
  EXPECT_EQ(why(p, s8), "");
}

// cuda_matmul's search space: every draw validates and round-trips JSON and generator parameters;
// float sums never regroup K.
TEST(Seam, CudaDrawsAreValidAndRoundTrip) {
  using schedules::CudaMatmulParams;
  std::mt19937_64 rng(testing::variant_seed());
  for (const Accumulator acc : {Accumulator{32, true, 8}, Accumulator{64, true, 64},
                                Accumulator{32, false, 32, false, false, true}}) {
    std::set<int> k_groups, k_tiles;
    for (int n = 0; n < 300; ++n) {
      const Schedule s = schedules::sample("cuda_matmul", kCuda, acc, rng);
      ASSERT_EQ(s.validate(kCuda, acc), std::nullopt);
      const nlohmann::json j = s;
      EXPECT_EQ(j.get<Schedule>(), s) << j.dump();
      EXPECT_EQ(Schedule::from_generator_params(s.generator_params()), s) << j.dump();
      const Schedule m = schedules::mutate(s, kCuda, acc, rng);
      EXPECT_EQ(m.validate(kCuda, acc), std::nullopt);
      k_groups.insert(s.get_if<CudaMatmulParams>()->k_group);
      k_tiles.insert(s.get_if<CudaMatmulParams>()->k_tile);
    }
    const std::set<int> groups = acc.operand_bits == 8 ? std::set<int>{1, 4} : std::set<int>{1};
    EXPECT_EQ(k_groups, groups);
    EXPECT_TRUE(k_tiles.count(0) && k_tiles.count(16)) << acc.bits;
  }
}

// The kernels themselves, compiled for CUDA in this process as the AOT build does (GenGen): PTX for
// sm_80 with dp4a where the 8-bit products are signed or mixed, no atomics, and the epilogue and
// the producers with float steps left to the host (no kernel of theirs in the device code).
TEST(Seam, CudaKernelsCompileToPtx) {
  struct Case {
    const char* spec;
    std::vector<std::string> knobs;
    bool dp4a;
  };
  const std::vector<Case> cases = {
      {"QGemm:int8,int8:output=float32", {}, true},                        // staged, dp4a
      {"QGemm:uint8,int8:output=uint8", {"k_tile=0", "k_group=4"}, true},  // registers, dp4a
      {"QuantMatmulDequant", {}, true},  // x_q, scales on the host
      {"QLinearMatMul:float8e4m3fn,float8e4m3fn,float8e4m3fn", {}, false},
      {"Gemm:float32:contract=fma", {}, false},
      {"Gemm:bfloat16:contract=fma", {"k_tile=16"}, false},  // widened on the host
      {"Gemm:int64", {}, false},
  };
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("mmtune_cuda_" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  int n = 0;
  for (const Case& c : cases) {
    const KernelIdentity id = tune::parse_identity_spec(c.spec);
    const std::string name = "cuda_kernel_" + std::to_string(n++);
    std::vector<std::string> args = {
        "gengen",      "-g",
        id.generator,  "-f",
        name,          "-o",
        dir,           "-e",
        "device_code", "target=x86-64-linux-cuda-cuda_capability_80-no_runtime"};
    for (const auto& [k, v] : id.params) args.push_back(k + "=" + v);
    for (const std::string& k : c.knobs) args.push_back(k);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    ASSERT_EQ(Halide::Internal::generate_filter_main(static_cast<int>(argv.size()), argv.data()), 0)
        << c.spec;
    std::ifstream in(dir + "/" + name + ".device_code");
    std::stringstream ptx;
    ptx << in.rdbuf();
    const std::string text = ptx.str();
    EXPECT_NE(text.find(".target sm_80"), std::string::npos) << c.spec;
    EXPECT_EQ(text.find("dp4a") != std::string::npos, c.dp4a) << c.spec;
    EXPECT_EQ(text.find("atom."), std::string::npos) << c.spec;
    for (const char* host : {"_kernel_Y_", "_kernel_y_", "_kernel_x_q_", "_kernel_inv_"}) {
      EXPECT_EQ(text.find(host), std::string::npos) << c.spec << ": " << host;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Seam, ATemplateThatDoesNotFitTheTargetIsRefused) {
  const Schedule cpu;
  EXPECT_NE(cpu.validate(kCuda, {32, false})
                .value_or("")
                .find("template cpu_matmul does not schedule cuda targets"),
            std::string::npos);
  EXPECT_NE(cpu.validate(kHvx, {32, true}).value_or("").find("does not schedule hexagon targets"),
            std::string::npos);
  // AArch64 has its own table of the register-tiled schedule (arm_matmul), the default there.
  const schedules::TargetInfo arm = schedules::target_info("arm-64-linux-arm_dot_prod");
  EXPECT_NE(cpu.validate(arm, {32, true}).value_or("").find("does not schedule arm targets"),
            std::string::npos);
  EXPECT_EQ(schedules::default_template(arm), "arm_matmul");
  EXPECT_EQ(schedules::default_schedule(arm, {32, true}).validate(arm, {32, true}), std::nullopt);
  EXPECT_NE(Schedule(schedules::ArmMatmulParams::knobs().defaults())
                .validate(kAvx2, {32, false})
                .value_or("")
                .find("template arm_matmul does not schedule x86 targets"),
            std::string::npos);
  // CUDA targets have cuda_matmul, which schedules nothing else; 32-bit ARM has no template yet.
  EXPECT_EQ(schedules::default_template(kCuda), "cuda_matmul");
  EXPECT_NE(Schedule(schedules::CudaMatmulParams::knobs().defaults())
                .validate(kAvx2, {32, true})
                .value_or("")
                .find("template cuda_matmul does not schedule x86 targets"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              schedules::default_template(schedules::target_info("arm-32-linux"));
            }).find("no schedule template schedules arm targets yet (arm-32-linux)"),
            std::string::npos);
  std::mt19937_64 rng(1);
  EXPECT_NE(error_of([&] {
              schedules::sample("cpu_matmul", kHvx, {32, true}, rng);
            }).find("does not schedule hexagon"),
            std::string::npos);
}

TEST(Seam, TheJitRefusesBeforeCompiling) {
  const Tensor a(DType::kFloat32, {2, 3}), b(DType::kFloat32, {3, 2});
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  const std::size_t compiled = jit_cache_size();
  const std::string why = error_of([&] {
    gemm_halide(args, HalideVariant{Schedule(), "x86-64-linux-cuda-cuda_capability_80"});
  });
  EXPECT_NE(why.find("Gemm: schedule: template cpu_matmul does not schedule cuda targets"),
            std::string::npos)
      << why;
  EXPECT_EQ(jit_cache_size(), compiled);  // nothing was compiled
}

// The fma contract needs a fused multiply-add: refused for a target without one before compiling
// (a true fma there would be a libm call per element; an unfused one would break the contract).
TEST(Seam, TheFmaContractIsRefusedWithoutFusedMultiplyAdd) {
  const Tensor a(DType::kFloat32, {2, 3}), b(DType::kFloat32, {3, 2});
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  args.contract = FloatContract::kFma;
  const TargetInfo sse41 = schedules::target_info("x86-64-linux-sse41");
  const HalideVariant v{schedules::default_schedule(sse41, {32, false}), "x86-64-linux-sse41"};
  const std::string why = error_of([&] { gemm_halide(args, v); });
  EXPECT_NE(
      why.find(
          "Gemm: contract=fma needs a fused multiply-add, which target x86-64-linux-sse41 lacks"),
      std::string::npos)
      << why;
  // float16 has no contract (both round alike): its fma call is the strict kernel, allowed
  // anywhere.
  const Tensor h(DType::kFloat16, {2, 3}), g(DType::kFloat16, {3, 2});
  args.a = &h;
  args.b = &g;
  EXPECT_EQ(error_of([&] { gemm_halide(args, v); }), "(no InvalidArgument)");
  EXPECT_TRUE(schedules::target_info("x86-64-linux-avx2-fma").fma);
  EXPECT_TRUE(schedules::target_info("x86-64-linux-avx512_skylake").fma);
  EXPECT_TRUE(schedules::target_info("arm-64-linux").fma);
  EXPECT_FALSE(schedules::target_info("x86-64-linux-avx2").fma);
}

// The generators check it themselves (the AOT build calls them without the JIT's checks): a Halide
// user error naming the reason, raised in generate(), before any code is generated.
TEST(Seam, TheGeneratorRefusesAScheduleThatDoesNotFit) {
  struct Case {
    std::string target;
    std::map<std::string, std::string> params;
    std::string message;
  };
  const std::vector<Case> cases = {
      // CUDA's template refuses a float32 sum of separately rounded steps (its steps would be
      // fused), and blocks beyond the GPU's limits.
      {"x86-64-linux-cuda-cuda_capability_80",
       {},
       "cuda_matmul cannot sum float32 exactly with separately rounded steps"},
      {"x86-64-linux-cuda-cuda_capability_80",
       {{"contract", "fma"}, {"tile_rows", "64"}, {"thread_rows", "1"}, {"thread_cols", "1"}},
       "has 4096 threads; a CUDA block has at most 1024"},
      {"x86-64-linux-cuda-cuda_capability_80",
       {{"template", "cpu_matmul"}},
       "does not schedule cuda targets"},
      {"x86-64-linux-avx2", {{"tile_rows", "16"}, {"tile_vectors", "8"}}, "vector registers"},
      {"x86-64-linux-avx2", {{"k_group", "4"}}, "regroups the K sum"},
      {"x86-64-linux-avx2", {{"template", "nope"}}, "template 'nope' is not a schedule template"},
      {"x86-64-linux-sse41",
       {{"contract", "fma"}},
       "contract=fma needs a fused multiply-add, which target x86-64-linux-sse41 lacks"},
  };
  for (const Case& c : cases) {
    auto gen = Halide::Internal::GeneratorRegistry::create(
        "mmtune_gemm", Halide::GeneratorContext(Halide::Target(c.target)));
    ASSERT_NE(gen, nullptr);
    std::map<std::string, std::string> gp = c.params;
    gp["A.type"] = gp["B.type"] = gp["C.type"] = gp["Y.type"] = "float32";
    std::string message;
    try {
      gen->set_generatorparam_values(gp);
      gen->build_pipeline();
    } catch (const Halide::Error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(c.message), std::string::npos) << c.target << ": " << message;
  }
}

}  // namespace
}  // namespace mmtune

namespace mmtune {
namespace {

// The tuner's splits of a schedule into a parallel task per thread: row blocks of ceil(M / T)
// rows in whole tile rows, strips of ceil(N / T) columns in whole tiles, only where the schedule
// gives fewer tasks than threads, only parallel schedules, nothing at one thread; every child
// valid and otherwise the same.
TEST(ThreadSplits, SplitRowBlocksAndStripsIntoATaskPerThread) {
  const TargetInfo t = schedules::target_info("x86-64-linux-avx2-fma-f16c");
  const Accumulator acc{32, true};
  auto p = std::get<CpuMatmulParams>(schedules::default_schedule(t, acc).params());
  p.tile_rows = 4;
  p.tile_vectors = 2;
  p.vector_width = 0;
  p.m_block = 64;
  p.n_block = 1024;
  p.parallel = true;
  const Schedule s{Schedule::Params(p)};
  ASSERT_EQ(s.validate(t, acc), std::nullopt);
  const int w = p.tile_columns(t, acc.bits);
  auto with = [&](int m_block, int n_block) {
    auto q = p;
    q.m_block = m_block;
    q.n_block = n_block;
    return Schedule(Schedule::Params(q));
  };
  using V = std::vector<Schedule>;
  EXPECT_EQ(schedules::thread_splits(s, t, acc, 64, 64, 2), (V{with(32, 1024), with(64, 32)}));
  // Rounded up to whole tile rows and tiles: 9 rows -> blocks of 8; 50 columns -> strips of 2w.
  EXPECT_EQ(schedules::thread_splits(s, t, acc, 9, 50, 2), (V{with(8, 1024), with(64, 2 * w)}));
  EXPECT_EQ(schedules::thread_splits(s, t, acc, 64, 64, 3), (V{with(24, 1024), with(64, 32)}));
  // Enough tasks already, or no smaller split: nothing.
  EXPECT_TRUE(schedules::thread_splits(s, t, acc, 200, 3000, 2).empty());
  EXPECT_TRUE(schedules::thread_splits(s, t, acc, 4, w, 2).empty());
  EXPECT_TRUE(schedules::thread_splits(s, t, acc, 64, 64, 1).empty());
  auto serial = p;
  serial.parallel = false;
  EXPECT_TRUE(
      schedules::thread_splits(Schedule(Schedule::Params(serial)), t, acc, 64, 64, 2).empty());
  for (const Schedule& c : schedules::thread_splits(s, t, acc, 64, 64, 2))
    EXPECT_EQ(c.validate(t, acc), std::nullopt);
}

// On the AMX level, a small-M bucket's seeds are the GEMV forms first, then the AMX forms (16 of
// them: a budget of 16 candidates used to try the AMX forms alone at M = 1); larger M gets the AMX
// forms only, each block form four tiles at once before one tile at a time.
TEST(ShapeSeeds, GemvFormsComeBeforeTheAmxFormsAtSmallM) {
  const TargetInfo t = schedules::target_info("x86-64-linux-avx512_sapphirerapids-avx2-fma-f16c");
  Accumulator acc{32, true, 8};
  acc.b_prepacked = true;
  const auto amx = CpuMatmulParams::amx_forms(t, acc);
  ASSERT_FALSE(amx.empty());
  const std::vector<Schedule> large = schedules::shape_seeds(t, acc, 128);
  ASSERT_EQ(large.size(), amx.size());
  // Every block form four tiles at once, then every one one tile at a time.
  for (std::size_t i = 0; i < large.size(); ++i) {
    const auto& p = std::get<CpuMatmulParams>(large[i].params());
    EXPECT_TRUE(p.amx) << i;
    EXPECT_EQ(p.amx_jam, i < large.size() / 2 ? 4 : 1) << i;
  }
  const std::vector<Schedule> small = schedules::shape_seeds(t, acc, 1);
  ASSERT_GT(small.size(), amx.size());
  const std::size_t gemv = small.size() - amx.size();
  for (std::size_t i = 0; i < small.size(); ++i) {
    EXPECT_EQ(std::get<CpuMatmulParams>(small[i].params()).amx, i >= gemv) << i;
    EXPECT_EQ(small[i].validate(t, acc), std::nullopt) << i;
  }
}

// `s` through the JIT on `target` against the reference, bit for bit, under each float contract
// the target and `type` have (fma needs an FMA target and a float type); returns the count run.
int expect_exact_under_each_contract(GemmArgs args, const Schedule& s, const char* target,
                                     const std::string& type) {
  int ran = 0;
  for (FloatContract c : {FloatContract::kStrict, FloatContract::kFma}) {
    if (c == FloatContract::kFma &&
        (type == "int32" || std::string(target).find("fma") == std::string::npos))
      continue;
    args.contract = c;
    HalideVariant v;
    v.schedule = s;
    v.target = target;
    EXPECT_TRUE(
        testing::bit_equal(gemm(args), gemm_halide(args, v),
                           std::string(target) + " " + type + " " + nlohmann::json(s).dump()));
    ++ran;
  }
  return ran;
}

// The cache-blocked forms the search seeds buckets of more than 64 rows with, for float sums: the
// 6-row tile of as many vectors as the registers hold, one row block of M's rows (at most 128,
// whole tile rows), strips of 256 and 512 columns, K blocks of 256 and 128; valid where offered;
// none at M <= 64 nor for an 8-bit sum in the target's dot-product group; and bit-exact through
// the JIT on a ragged product (a partial row block, strip and K block) under both float contracts,
// on the first x86 target this CPU runs.
TEST(ShapeSeeds, BlockedFormsForManyRowsOfFloatSums) {
  const Accumulator f32{32, false};
  struct Level {
    const char* target;
    int vectors;
  };
  for (const Level& l : {Level{"x86-64-linux-avx512_zen4-avx2-fma-f16c", 4},
                         Level{"x86-64-linux-avx2-fma-f16c", 2}}) {
    const TargetInfo t = schedules::target_info(l.target);
    EXPECT_TRUE(schedules::shape_seeds(t, f32, 64).empty()) << l.target;
    for (const auto& [m, rows] :
         std::vector<std::pair<int64_t, int>>{{128, 132}, {100, 102}, {4096, 132}}) {
      const std::vector<Schedule> seeds = schedules::shape_seeds(t, f32, m);
      ASSERT_EQ(seeds.size(), 4u) << l.target << " M=" << m;
      std::set<std::pair<int, int>> blocks;
      for (const Schedule& s : seeds) {
        EXPECT_EQ(s.validate(t, f32), std::nullopt);
        const auto& p = std::get<CpuMatmulParams>(s.params());
        EXPECT_EQ(p.tile_rows, 6);
        EXPECT_EQ(p.tile_vectors, l.vectors) << l.target;
        EXPECT_EQ(p.m_block, rows) << l.target << " M=" << m;
        EXPECT_TRUE(p.pack_b && p.parallel && p.k_group == 1);
        blocks.insert({p.n_block, p.k_block});
      }
      EXPECT_EQ(blocks,
                (std::set<std::pair<int, int>>{{256, 128}, {256, 256}, {512, 128}, {512, 256}}));
    }
  }
  // An 8-bit sum in VNNI's K groups of 4 takes no K blocks.
  EXPECT_TRUE(CpuMatmulParams::blocked_forms(
                  schedules::target_info("x86-64-linux-avx512_zen4-avx2-fma-f16c"),
                  Accumulator{32, true, 8}, 128)
                  .empty());

  std::mt19937_64 rng(testing::variant_seed() ^ 0xb1);
  int ran = 0;
  for (const char* target : {"x86-64-linux-avx2-fma-f16c", "x86-64-linux-sse41"}) {
    if (cpu_cannot_run(target) || ran > 0) continue;
    const TargetInfo t = schedules::target_info(target);
    const std::vector<Schedule> seeds = schedules::shape_seeds(t, f32, 130);
    ASSERT_EQ(seeds.size(), 4u) << target;
    const int64_t m = 130, n = 300, k = 700;
    const Tensor a = testing::random_tensor(DType::kFloat32, {m, k}, rng, -100, 100);
    const Tensor b = testing::random_tensor(DType::kFloat32, {k, n}, rng, -100, 100);
    GemmArgs args;
    args.a = &a;
    args.b = &b;
    for (const Schedule& s : {seeds.front(), seeds.back()})
      ran += expect_exact_under_each_contract(args, s, target, "float32");
  }
  EXPECT_GT(ran, 0) << "no x86 target of the test runs on this CPU";
  std::cout << "[schedule] " << ran << " blocked-form products bit-exact through the JIT\n";
}

// The GEMV forms the search seeds small-M buckets with: valid where offered, K in blocks with one
// tile row per block (B streamed once), one tile row over packed panels in the largest K group
// the sum allows (the prepacked form) or over four packed panels at once in K blocks of 2 (B read
// from four streams), only at M <= 4, and bit-exact through the JIT on ragged
// small-M products (float32 under both contracts, int32), on every x86 target this CPU runs.
TEST(ShapeSeeds, GemvFormsAtSmallMAreValidAndBitExact) {
  std::mt19937_64 rng(testing::variant_seed());
  int ran = 0;
  for (const char* target : {"x86-64-linux-avx2-fma-f16c", "x86-64-linux-sse41"}) {
    const TargetInfo t = schedules::target_info(target);
    for (const Accumulator acc : {Accumulator{32, false}, Accumulator{32, true}}) {
      const std::vector<Schedule> seeds = schedules::shape_seeds(t, acc, 1);
      ASSERT_FALSE(seeds.empty()) << target;
      EXPECT_TRUE(schedules::shape_seeds(t, acc, 5).empty());
      int blocked = 0, packed = 0, interleaved = 0;
      for (const Schedule& s : seeds) {
        EXPECT_EQ(s.validate(t, acc), std::nullopt);
        const auto& p = std::get<CpuMatmulParams>(s.params());
        if (p.pack_b && p.k_block > 0) {
          // K in small blocks across a strip of four panels: B read from four streams at once.
          ++interleaved;
          EXPECT_EQ(p.tile_rows, 1);
          EXPECT_EQ(p.m_block, 1);
          EXPECT_EQ(p.k_group, 1);
          EXPECT_EQ(p.n_block, 4 * p.tile_columns(t, acc.bits));
        } else if (p.pack_b) {
          ++packed;
          EXPECT_EQ(p.tile_rows, 1);
          // The largest group that validates: 4 for exact sums of operands of no stated width
          // (8-bit ones take the target's group first: X86KGroupFollowsTheTargetsDotProduct).
          EXPECT_EQ(p.k_group, acc.exact ? 4 : 1);
        } else {
          ++blocked;
          EXPECT_GT(p.k_block, 0);
          EXPECT_EQ(p.m_block, p.tile_rows);
        }
      }
      EXPECT_GT(blocked, 0) << target;
      EXPECT_GT(packed, 0) << target;
      EXPECT_GT(interleaved, 0) << target;
    }
    if (cpu_cannot_run(target)) continue;
    for (const Schedule& s : schedules::shape_seeds(t, {32, false}, 1)) {
      for (const auto& [m, n, k] :
           std::vector<std::array<int64_t, 3>>{{1, 300, 77}, {3, 1030, 130}}) {
        for (const char* type : {"float32", "int32"}) {
          const DType dt = *dtype_from_name(type);
          const Tensor a = testing::random_tensor(dt, {m, k}, rng, -100, 100);
          const Tensor b = testing::random_tensor(dt, {k, n}, rng, -100, 100);
          GemmArgs args;
          args.a = &a;
          args.b = &b;
          ran += expect_exact_under_each_contract(args, s, target, type);
        }
      }
    }
  }
  std::cout << "[schedule] " << ran << " GEMV-form products bit-exact through the JIT\n";
}

// Each schedule of `forms` through the JIT on `target` against the reference, bit for bit:
// float32 under both contracts (fma where the target has it) and int32, A plain and transposed,
// random values in [-100, 100] at each of `shapes` (M, N, K), B in place and/or prepacked as
// `prepacked` lists. Returns the products compared.
int forms_bit_exact(const char* target, const std::vector<Schedule>& forms,
                    const std::vector<std::array<int64_t, 3>>& shapes,
                    const std::vector<bool>& prepacked, std::mt19937_64& rng) {
  const TargetInfo t = schedules::target_info(target);
  int ran = 0;
  for (const Schedule& s : forms) {
    for (const auto& [m, n, k] : shapes) {
      for (const char* type : {"float32", "int32"}) {
        const DType dt = *dtype_from_name(type);
        for (const bool trans_a : {false, true}) {
          const Tensor a =
              testing::random_tensor(dt, trans_a ? Shape{k, m} : Shape{m, k}, rng, -100, 100);
          const Tensor b = testing::random_tensor(dt, {k, n}, rng, -100, 100);
          GemmArgs args;
          args.a = &a;
          args.b = &b;
          args.trans_a = trans_a;
          for (FloatContract c : {FloatContract::kStrict, FloatContract::kFma}) {
            if (dt == DType::kInt32 && c == FloatContract::kFma) continue;
            if (c == FloatContract::kFma && !t.fma) continue;
            args.contract = c;
            for (const bool packed : prepacked) {
              HalideVariant v;
              v.schedule = s;
              v.target = target;
              v.prepacked_b = packed;
              EXPECT_TRUE(testing::bit_equal(
                  gemm(args), gemm_halide(args, v),
                  std::string(target) + " " + type + " transA=" + (trans_a ? "1" : "0") +
                      (packed ? " B prepacked " : " ") + nlohmann::json(s).dump()));
              ++ran;
            }
          }
        }
      }
    }
  }
  return ran;
}

// pack_a copies A into panels of a tile row (or of a row block) where each of its three placements
// puts them: per tile row and K block (k_block), per tile row, per row block (m_block). Only a
// copy: bit-exact through the JIT against the reference for float32 under both contracts and int32,
// A plain and transposed, B in place and prepacked, on ragged shapes (partial tiles, blocks, strips
// and K blocks), on AVX2 (SSE4.1 where this CPU has no AVX2; the placement is the template's,
// whatever the ISA).
TEST(CpuTemplate, PackedAIsOnlyACopyInEveryPlacement) {
  std::mt19937_64 rng(testing::variant_seed() ^ 0x9a);
  int ran = 0;
  for (const char* target : {"x86-64-linux-avx2-fma-f16c", "x86-64-linux-sse41"}) {
    if (cpu_cannot_run(target) || ran > 0) continue;
    const TargetInfo t = schedules::target_info(target);
    const int lanes = t.vector_bits / 32;
    auto form = [&](int rows, int vectors, int n_block, int m_block, int k_block) {
      CpuMatmulParams p = CpuMatmulParams::knobs().defaults();
      p.tile_rows = rows;
      p.tile_vectors = vectors;
      p.n_block = n_block * vectors * lanes;
      p.m_block = m_block;
      p.k_block = k_block;
      p.k_unroll = 4;
      p.specialize_tails = true;
      p.pack_a = true;
      EXPECT_EQ(p.validate(t, {32, false}), std::nullopt) << target;
      return Schedule(p);
    };
    const std::vector<Schedule> forms = {form(4, 2, 2, 4, 16), form(3, 3, 2, 0, 0),
                                         form(2, 2, 3, 6, 0)};
    ran += forms_bit_exact(target, forms, {{7, 53, 37}, {13, 70, 301}}, {false, true}, rng);
  }
  std::cout << "[schedule] " << ran << " products with A packed bit-exact through the JIT\n";
  if (ran == 0) GTEST_SKIP() << "this CPU runs none of the x86 targets";
}

// copy_b copies each strip of a prepacked B into a buffer of its task (the strips then the tasks):
// only a copy, so bit-exact through the JIT against the reference for float32 under both contracts
// and int32, A plain and transposed, on ragged shapes (a partial last strip, tile and row block; N
// below one strip; K not a multiple of the unroll), with and without row blocks, A packed and
// parallel tasks, on AVX2 (SSE4.1 where this CPU has no AVX2).
TEST(CpuTemplate, CopiedPrepackedBIsOnlyACopy) {
  std::mt19937_64 rng(testing::variant_seed() ^ 0xcb);
  int ran = 0;
  for (const char* target : {"x86-64-linux-avx2-fma-f16c", "x86-64-linux-sse41"}) {
    if (cpu_cannot_run(target) || ran > 0) continue;
    const TargetInfo t = schedules::target_info(target);
    const int lanes = t.vector_bits / 32;
    Accumulator acc{32, false};
    acc.b_prepacked = true;
    auto form = [&](int rows, int vectors, int n_tiles, int m_block, bool pack_a, bool parallel) {
      CpuMatmulParams p = CpuMatmulParams::knobs().defaults();
      p.tile_rows = rows;
      p.tile_vectors = vectors;
      p.n_block = n_tiles * vectors * lanes;
      p.m_block = m_block;
      p.k_block = 0;
      p.k_unroll = 4;
      p.specialize_tails = true;
      p.pack_a = pack_a;
      p.parallel = parallel;
      p.copy_b = true;
      EXPECT_EQ(p.validate(t, acc), std::nullopt) << target;
      return Schedule(p);
    };
    const std::vector<Schedule> forms = {form(4, 2, 2, 8, false, true),
                                         form(3, 3, 2, 0, true, true),
                                         form(2, 2, 3, 6, false, false)};
    ran += forms_bit_exact(target, forms, {{7, 53, 37}, {13, 70, 301}, {17, 5, 9}}, {true}, rng);
  }
  std::cout << "[schedule] " << ran << " products with a prepacked B copied bit-exact\n";
  if (ran == 0) GTEST_SKIP() << "this CPU runs none of the x86 targets";
}

// The same copy of B's panels in K groups (the 8-bit sums' layout): u8.s8 -> u8 QLinearMatMul
// through the JIT on the host's own level, in its natural K group, b prepacked, over the variant
// suites' 2-D cases (partial tiles and strips, adversarial data, per-column parameters).
TEST(CpuTemplate, CopiedPrepackedBIsOnlyACopyInKGroups) {
  const TargetInfo& t = testing::host_info();
  if (t.family != "x86") GTEST_SKIP() << "the host is not x86-64";
  Accumulator acc{32, true, 8, true, false, false, true};
  CpuMatmulParams p = CpuMatmulParams::defaults(t, acc);
  p.tile_rows = 4;
  p.tile_vectors = 2;
  p.n_block = 2 * p.tile_columns(t, 32);
  p.m_block = 8;
  p.copy_b = true;
  ASSERT_EQ(p.validate(t, acc), std::nullopt);
  ASSERT_GT(p.k_group, 1) << "the host's 8-bit sums are not in K groups";
  const Schedule s(p);
  std::mt19937_64 rng(testing::variant_seed() ^ 0xcc);
  testing::GateCounts counts;
  for (const testing::QlmCase& c : testing::qlinear_matmul_cases(4, p.tile_columns(t, 32))) {
    if (c.b.size() != 2) continue;  // a prepacked b is 2-D
    const testing::QlmInputs in = testing::make_qlinear_matmul_inputs(
        DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, c, rng);
    const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
    Tensor expected;
    try {
      expected = qlinear_matmul(args);
    } catch (const InvalidArgument&) {
      continue;  // extreme scales the reference refuses (QLinearMatMulVariants checks those)
    }
    HalideVariant v{s, "host"};
    v.prepacked_b = true;
    EXPECT_TRUE(testing::gated_equal(
        expected, [&](JitRun& run) { return qlinear_matmul_halide(args, v, &run); },
        expected.numel() > 0 && c.a.back() > 0, "QLinearMatMul u8.s8->u8 case " + c.name, counts));
  }
  std::cout << "[schedule] copy_b in K groups of " << p.k_group << ": " << counts.summary()
            << ", 0 mismatches\n";
  EXPECT_GT(counts.kernel_cases, 0);
}

}  // namespace
}  // namespace mmtune
