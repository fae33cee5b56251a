// The tuner's inputs (autotune/tune_inputs.h): kernel identity specs parse to the identities they
// name and print back canonically (every shipped identity included), malformed or impossible specs
// are refused naming the bad part, every call make_call builds passes the reference and has the
// identity it was built for, and the gate battery is small, free of K = 0 and covers every data
// kind.
#include "autotune/tune_inputs.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/support/test_support.h"

namespace mmtune {
namespace {

using tune::DataKind;

// Every kernel identity of tuned/*.json, each once.
std::vector<KernelIdentity> shipped_identities() {
  std::vector<KernelIdentity> out;
  for (const auto& entry : std::filesystem::directory_iterator(testing::source_dir() + "/tuned")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const nlohmann::json db = nlohmann::json::parse(in);
    for (const nlohmann::json& k : db.at("kernels")) {
      KernelIdentity id{k.at("op").get<std::string>(), k.at("generator").get<std::string>(),
                        k.at("params").get<std::map<std::string, std::string>>()};
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    }
  }
  return out;
}

// Identities beyond the shipped ones: transposes, no C, float8, float16 and bfloat16 scales, QGemm
// without y_scale, every QuantMatmulDequant mode.
const std::vector<std::string> kMoreSpecs = {
    "Gemm:float32:trans_a=true:trans_b=true:has_c=false",
    "Gemm:float16:trans_b=true",
    "Gemm:bfloat16:has_c=false:contract=fma",
    "Gemm:uint64:trans_a=true",
    "QLinearMatMul:uint8,int8,uint8:scale=float16:requant=float64",
    "QLinearMatMul:int8,uint8,uint8:scale=bfloat16",
    "QLinearMatMul:float8e4m3fn,float8e5m2,float8e4m3fnuz:scale=float16",
    "QLinearMatMul:float8e5m2fnuz",
    "QGemm:int8,uint8:output=int8",
    "QGemm:uint8,uint8:y_scale=false",
    "QuantMatmulDequant:x_quant=static_pertoken:smooth=true:bias=false",
    "QuantMatmulDequant:x_quant=static_pertensor:weight=nk",
    "QuantMatmulDequant:fused_scale=true:smooth=true",
};

std::vector<KernelIdentity> all_identities() {
  std::vector<KernelIdentity> ids = shipped_identities();
  for (const std::string& s : kMoreSpecs) ids.push_back(tune::parse_identity_spec(s));
  return ids;
}

std::string kind_names(const std::vector<DataKind>& kinds) {
  std::string s;
  for (DataKind k : kinds) s += std::string(s.empty() ? "" : ",") + tune::data_kind_name(k);
  return s;
}

TEST(TuneInputs, SpecsParseToTheirIdentitiesAndPrintCanonically) {
  struct Row {
    std::string spec, canonical;
  };
  const std::vector<Row> rows = {
      {"Gemm:float32:contract=fma", "Gemm:float32:contract=fma"},
      {"Gemm", "Gemm:float32"},
      {"gemm:int32", "Gemm:int32"},
      {"Gemm:float:trans_a=true", "Gemm:float32:trans_a=true"},
      {"Gemm:float64,float64,float64,float64:has_c=false", "Gemm:float64:has_c=false"},
      {"QLinearMatMul:uint8,int8,uint8:requant=float32", "QLinearMatMul:uint8,int8,uint8"},
      {"qlinear_matmul:int8:requant=float64", "QLinearMatMul:int8,int8,int8:requant=float64"},
      {"QLinearMatMul:uint8,int8,uint8:scale_type=float16",
       "QLinearMatMul:uint8,int8,uint8:scale=float16"},
      {"QLinearMatMul:float8e4m3fn:scale=bfloat16",
       "QLinearMatMul:float8e4m3fn,float8e4m3fn,float8e4m3fn:scale=bfloat16"},
      {"QGemm:uint8,int8:output=float32", "QGemm:uint8,int8"},
      {"QGemm:int8:output=int8", "QGemm:int8,int8:output=int8"},
      {"QGemm:uint8,int8:Y.type=uint8:has_y_scale=true", "QGemm:uint8,int8:output=uint8"},
      {"QGemm:uint8,int8:y_scale=false", "QGemm:uint8,int8:y_scale=false"},
      {"QuantMatmulDequant:x_quant=pertoken", "QuantMatmulDequant"},
      {"quant_matmul_dequant:has_smooth=true", "QuantMatmulDequant:smooth=true"},
      {"QuantMatmulDequant:x_quant=pertensor", "QuantMatmulDequant:x_quant=static_pertensor"},
      {"QuantMatmulDequant:x_quant=static_pertoken:dynamic=false",
       "QuantMatmulDequant:x_quant=static_pertoken"},
      {"QuantMatmulDequant:x_quant=static_pertensor:fused_scale=true",
       "QuantMatmulDequant:fused_scale=true"},
      {"QuantMatmulDequant:transpose_weight=false:bias=false", "QuantMatmulDequant:bias=false"},
      {"QuantMatmulDequant:transpose_weight=true", "QuantMatmulDequant:weight=nk"},
      {"QLinearMatMul:uint8,int8,uint8:prepacked_b=true",
       "QLinearMatMul:uint8,int8,uint8:prepacked_b=true"},
      {"Gemm:float32:prepacked_b=true:contract=fma", "Gemm:float32:contract=fma:prepacked_b=true"},
      {"QGemm:uint8,int8:prepacked_b=true", "QGemm:uint8,int8:prepacked_b=true"},
      {"QuantMatmulDequant:prepacked_b=true:smooth=true",
       "QuantMatmulDequant:smooth=true:prepacked_b=true"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.spec);
    const KernelIdentity id = tune::parse_identity_spec(r.spec);
    EXPECT_EQ(tune::identity_spec(id), r.canonical);
    EXPECT_EQ(tune::parse_identity_spec(r.canonical), id);
  }
  // Whole identities: the defaults are the shipped kernels'.
  EXPECT_EQ(tune::parse_identity_spec("Gemm:float32:contract=fma"),
            (KernelIdentity{"Gemm",
                            "mmtune_gemm",
                            {{"A.type", "float32"},
                             {"B.type", "float32"},
                             {"C.type", "float32"},
                             {"Y.type", "float32"},
                             {"trans_a", "false"},
                             {"trans_b", "false"},
                             {"has_c", "true"},
                             {"contract", "fma"}}}));
  EXPECT_EQ(tune::parse_identity_spec("QLinearMatMul:float8e5m2,float8e4m3fn,float8e5m2fnuz"),
            (KernelIdentity{"QLinearMatMul",
                            "mmtune_qlinear_matmul",
                            {{"a.type", "uint8"},
                             {"b.type", "uint8"},
                             {"y.type", "uint8"},
                             {"a_format", "float8e5m2"},
                             {"b_format", "float8e4m3fn"},
                             {"y_format", "float8e5m2fnuz"},
                             {"scale_type", "float32"},
                             {"requant", "float32"}}}));
  // prepacked_b=true: the plain identity's parameters and prepacked_b; without it, the plain one.
  {
    bool prepacked = false;
    const KernelIdentity pre =
        tune::parse_identity_spec("QLinearMatMul:uint8,int8,uint8:prepacked_b=true");
    EXPECT_EQ(pre.params.at("prepacked_b"), "true");
    EXPECT_EQ(tune::without_prepacked(pre, &prepacked),
              tune::parse_identity_spec("QLinearMatMul:uint8,int8,uint8"));
    EXPECT_TRUE(prepacked);
    (void)tune::without_prepacked(tune::parse_identity_spec("QGemm:uint8,int8"), &prepacked);
    EXPECT_FALSE(prepacked);
  }
  EXPECT_EQ(tune::parse_identity_spec("QuantMatmulDequant:fused_scale=true"),
            (KernelIdentity{"QuantMatmulDequant",
                            "mmtune_quant_matmul_dequant",
                            {{"transpose_weight", "false"},
                             {"fused_scale", "true"},
                             {"dynamic", "false"},
                             {"per_token", "false"},
                             {"has_smooth", "false"},
                             {"has_bias", "true"},
                             {"weight_scale.type", "int64"},
                             {"x_scale.type", "float16"}}}));
}

TEST(TuneInputs, InvalidSpecsNameTheBadPart) {
  struct Row {
    std::string spec, names;  // the spec and a text its message must contain
  };
  const std::vector<Row> rows = {
      {"", "'' is not an operator"},
      {"Conv:float32", "'Conv' is not an operator; OP is one of Gemm (gemm)"},
      {"Gemm:float8e4m3fn", "'float8e4m3fn' in TYPES is not a Gemm type; its types are float32"},
      {"Gemm:float32,int32", "names 2 types; Gemm takes 1"},
      {"QLinearMatMul:uint8,int8", "names 2 types; QLinearMatMul takes 1"},
      {"QGemm:float32", "'float32' in TYPES is not a QGemm type; its types are int8, uint8"},
      {"Gemm:float32:contract=fast", "'contract=fast': contract is one of strict, fma, not 'fast'"},
      {"Gemm:float32:bogus=1", "unknown key 'bogus' in 'bogus=1'; Gemm's keys are A.type"},
      {"Gemm:float32:contract", "'contract' is not KEY=VALUE"},
      {"Gemm:float32::contract=fma", "part 3 is empty"},
      {"Gemm:float32:", "part 3 is empty"},
      {"Gemm:float32:contract=fma:contract=strict", "key 'contract' is given twice"},
      {"Gemm:float32:has_c=maybe", "has_c is one of false, true, not 'maybe'"},
      // The round trip: an integer sum has no contract (its calls run contract=strict).
      {"Gemm:int32:contract=fma", "contract=strict, not contract=fma"},
      {"Gemm:B.type=float64", "no valid call has these parameters"},
      {"QLinearMatMul:float8e4m3fn:requant=float64", "requant=float32, not requant=float64"},
      {"QLinearMatMul:uint8,int8,float8e5m2", "all 8-bit integers or all float8"},
      {"QLinearMatMul:uint8:scale=float64", "scale is one of float32, float16, bfloat16"},
      {"QGemm:uint8,int8:output=uint8:y_scale=false", "y_zero_point is given without y_scale"},
      {"QGemm:uint8,int8:output=float16", "output is one of float32, uint8, int8"},
      {"QuantMatmulDequant:float16", "QuantMatmulDequant takes no TYPES"},
      {"QuantMatmulDequant:x_quant=pertensor:dynamic=true", "per token only"},
      {"QuantMatmulDequant:x_quant=static_pertoken:dynamic=true",
       "'dynamic=true' sets dynamic=true but 'x_quant=static_pertoken' sets dynamic=false"},
      {"QuantMatmulDequant:x_quant=dynamic_pertoken:fused_scale=true", "fused"},
      {"QuantMatmulDequant:x_scale.type=float16", "x_scale.type=float32, not x_scale.type=float16"},
      {"QuantMatmulDequant:x_quant=tokenwise", "x_quant is one of dynamic_pertoken"},
      // Only the identities with a prepacked kernel take prepacked_b, and only =true.
      {"Gemm:float64:prepacked_b=true",
       "prepacked_b=true: only float32 Gemm, 8-bit integer "
       "QLinearMatMul and QGemm, with B not transposed"},
      {"Gemm:float32:trans_b=true:prepacked_b=true", "Gemm:float32:trans_b=true has none"},
      {"QLinearMatMul:float8e4m3fn:prepacked_b=true", "has none"},
      {"QLinearMatMul:uint8:prepacked_b=false", "prepacked_b is one of true, not 'false'"},
      {"QuantMatmulDequant:weight=nk:prepacked_b=true", "QuantMatmulDequant:weight=nk has none"},
      {"QuantMatmulDequant:bias=false:prepacked_b=true", "has none"},
  };
  for (const Row& r : rows) {
    const std::string message =
        testing::invalid_argument_message([&] { tune::parse_identity_spec(r.spec); });
    EXPECT_EQ(message.rfind("--op '" + r.spec + "': ", 0), 0u) << r.spec << ": " << message;
    EXPECT_NE(message.find(r.names), std::string::npos) << r.spec << ": " << message;
  }
}

TEST(TuneInputs, EveryIdentityHasACanonicalSpec) {
  const std::vector<KernelIdentity> shipped = shipped_identities();
  ASSERT_GE(shipped.size(), 20u);
  for (const KernelIdentity& id : all_identities()) {
    const std::string spec = tune::identity_spec(id);
    EXPECT_EQ(tune::parse_identity_spec(spec), id) << spec;
    EXPECT_EQ(tune::identity_spec(tune::parse_identity_spec(spec)), spec);
  }
  // The shipped QuantMatmulDequant kernels are the default modes, with or without smoothing,
  // and the fused scale (the cross targets' databases carry it, as `mmtune verify` checks it);
  // some of them read the weight prepacked (prepacked_b=true, x86 only).
  const std::set<std::string> shipped_modes = {"QuantMatmulDequant",
                                               "QuantMatmulDequant:smooth=true",
                                               "QuantMatmulDequant:fused_scale=true"};
  int prepacked = 0;
  for (const KernelIdentity& id : shipped) {
    if (id.op == "QuantMatmulDequant") {
      bool is_prepacked = false;
      const std::string mode = tune::identity_spec(tune::without_prepacked(id, &is_prepacked));
      EXPECT_EQ(shipped_modes.count(mode), 1u) << tune::identity_spec(id);
      if (is_prepacked) {
        ++prepacked;
        EXPECT_TRUE(tune::has_prepacked_kernel(id, "x86-64-linux-avx2-fma-f16c")) << mode;
        EXPECT_FALSE(tune::has_prepacked_kernel(id, "arm-64-linux-arm_dot_prod")) << mode;
      }
    }
  }
  EXPECT_GE(prepacked, 2);
  // Identities no call has.
  KernelIdentity id = tune::parse_identity_spec("Gemm:int32");
  id.params["contract"] = "fma";
  EXPECT_THROW(tune::identity_spec(id), InvalidArgument);
  id.op = "Conv";
  EXPECT_THROW(tune::identity_spec(id), InvalidArgument);
}

TEST(TuneInputs, DataKindsFitTheIdentity) {
  auto kinds = [](const std::string& spec) {
    return kind_names(tune::data_kinds(tune::parse_identity_spec(spec)));
  };
  EXPECT_EQ(kinds("Gemm:float16"), "random,special,huge,tiny");
  EXPECT_EQ(kinds("Gemm:int64"), "random");
  EXPECT_EQ(kinds("QLinearMatMul:uint8,int8,uint8"), "random,full_range,ties,extreme_scales,wrap");
  EXPECT_EQ(kinds("QLinearMatMul:float8e4m3fn"), "random,special");
  EXPECT_EQ(kinds("QGemm:uint8,int8"), "random,full_range,extreme_scales,wrap");
  EXPECT_EQ(kinds("QGemm:uint8,int8:output=uint8"), "random,full_range,ties,extreme_scales,wrap");
  EXPECT_EQ(kinds("QuantMatmulDequant"), "random,special,huge,tiny,ties,wrap");
  // Products of the wrap data overflow int32 at wrap_k: (255 - 0)^2 or (127 - -128)^2 per step for
  // the 8-bit operators, 127 * 127 (one in 64 negative) for QuantMatmulDequant.
  EXPECT_GT(
      65025.0 * static_cast<double>(tune::wrap_k(tune::parse_identity_spec("QLinearMatMul:int8"))),
      2147483647.0);
  EXPECT_GT(16129.0 * 62.0 / 64.0 *
                static_cast<double>(tune::wrap_k(tune::parse_identity_spec("QuantMatmulDequant"))),
            2147483647.0);
  EXPECT_EQ(tune::wrap_k(tune::parse_identity_spec("Gemm:int32")), 0);
}

TEST(TuneInputs, CallsHaveTheirIdentityAndPassTheReference) {
  struct Shape3 {
    int64_t m, n, k;
  };
  const std::vector<Shape3> shapes = {{1, 1, 1}, {5, 17, 9}, {9, 33, 64}, {2, 70, 0}};
  int64_t calls = 0;
  for (const KernelIdentity& id : all_identities()) {
    const std::string spec = tune::identity_spec(id);
    std::mt19937_64 rng(7);
    for (DataKind kind : tune::data_kinds(id)) {
      for (const Shape3& s : shapes) {
        const std::string context = spec + " " + tune::data_kind_name(kind) +
                                    " M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) +
                                    " K=" + std::to_string(s.k);
        tune::OpCall call;
        // A prepacked identity's calls are its plain identity's.
        ASSERT_NO_THROW(call = tune::make_call(id, s.m, s.n, s.k, kind, rng)) << context;
        EXPECT_EQ(tune::call_identity(call), tune::without_prepacked(id)) << context;
        Tensor y;
        ASSERT_NO_THROW(y = run_reference(call.op, call.inputs, call.attrs)) << context;
        EXPECT_EQ(y.shape, (Shape{s.m, s.n})) << context;
        ++calls;
        // Operands in the identity's layout.
        if (id.op == "Gemm") {
          const bool ta = id.params.at("trans_a") == "true", tb = id.params.at("trans_b") == "true";
          EXPECT_EQ(call.inputs.at("A").shape, ta ? Shape({s.k, s.m}) : Shape({s.m, s.k}));
          EXPECT_EQ(call.inputs.at("B").shape, tb ? Shape({s.n, s.k}) : Shape({s.k, s.n}));
          EXPECT_EQ(call.inputs.count("C"), id.params.at("has_c") == "true" ? 1u : 0u);
        }
      }
    }
    if (const int64_t k = tune::wrap_k(id); k > 0) {
      const tune::OpCall call = tune::make_call(id, 2, 3, k, DataKind::kWrap, rng);
      EXPECT_EQ(tune::call_identity(call), tune::without_prepacked(id)) << spec;
      EXPECT_NO_THROW(run_reference(call.op, call.inputs, call.attrs)) << spec;
    }
  }
  std::cout << "[tune_inputs] " << calls << " calls through the reference\n";

  // Extreme float16 scales stay valid on a wide output (the b scales that would overflow the
  // multiplier are halved).
  const KernelIdentity f16 =
      tune::parse_identity_spec("QLinearMatMul:uint8,int8,uint8:scale=float16");
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5; ++i) {
    const tune::OpCall call = tune::make_call(f16, 64, 257, 64, DataKind::kExtremeScales, rng);
    EXPECT_NO_THROW(run_reference(call.op, call.inputs, call.attrs));
  }

  // The same seed draws the same call.
  const KernelIdentity g = tune::parse_identity_spec("Gemm:bfloat16:trans_a=true");
  std::mt19937_64 r1(11), r2(11);
  const tune::OpCall c1 = tune::make_call(g, 7, 9, 13, DataKind::kSpecial, r1);
  const tune::OpCall c2 = tune::make_call(g, 7, 9, 13, DataKind::kSpecial, r2);
  EXPECT_EQ(c1.attrs, c2.attrs);
  for (const auto& [name, t] : c1.inputs) EXPECT_EQ(t.bytes, c2.inputs.at(name).bytes) << name;

  // What make_call refuses.
  const KernelIdentity i32 = tune::parse_identity_spec("Gemm:int32");
  const std::string kind_message = testing::invalid_argument_message(
      [&] { tune::make_call(i32, 2, 2, 2, DataKind::kHuge, rng); });
  EXPECT_NE(kind_message.find("data kind huge does not apply"), std::string::npos) << kind_message;
  EXPECT_THROW(tune::make_call(i32, 0, 2, 2, DataKind::kRandom, rng), InvalidArgument);
  EXPECT_THROW(tune::make_call(i32, 2, 2, -1, DataKind::kRandom, rng), InvalidArgument);
  KernelIdentity bad = i32;
  bad.params["contract"] = "fma";
  EXPECT_THROW(tune::make_call(bad, 2, 2, 2, DataKind::kRandom, rng), InvalidArgument);
  bad.params.erase("contract");
  EXPECT_THROW(tune::make_call(bad, 2, 2, 2, DataKind::kRandom, rng), InvalidArgument);
}

TEST(TuneInputs, GateCasesAreSmallAndCoverEveryKind) {
  const std::vector<schedules::Tile> tiles = {{1, 8}, {6, 16}, {4, 48}, {2, 32}};
  struct Bucket {
    int64_t m, n, k;
  };
  const std::vector<Bucket> buckets = {
      {1, 4096, 4096}, {64, 512, 512}, {4096, 4096, 4096}, {3, 5, 7}, {100000, 8, 8}};
  for (const KernelIdentity& id : all_identities()) {
    const std::vector<DataKind> kinds = tune::data_kinds(id);
    for (const schedules::Tile& tile : tiles) {
      for (const Bucket& b : buckets) {
        const std::vector<tune::GateCase> cases = tune::gate_cases(id, tile, b.m, b.n, b.k);
        const std::string context = tune::identity_spec(id) + " tile " + std::to_string(tile.rows) +
                                    "x" + std::to_string(tile.cols) + " bucket " +
                                    std::to_string(b.m) + "x" + std::to_string(b.n) + "x" +
                                    std::to_string(b.k);
        EXPECT_GE(cases.size(), 15u) << context;
        EXPECT_LE(cases.size(), 60u) << context;
        std::set<DataKind> seen;
        std::set<std::string> names;
        bool bucket_case = false;
        for (const tune::GateCase& c : cases) {
          EXPECT_TRUE(names.insert(c.name).second) << context << ": " << c.name << " twice";
          EXPECT_GT(c.k, 0) << context << ": " << c.name;
          EXPECT_GE(c.m, 1) << context << ": " << c.name;
          EXPECT_GE(c.n, 1) << context << ": " << c.name;
          EXPECT_LE(c.m * c.n, tune::kGateMaxOutputs) << context << ": " << c.name;
          // Only the wrap cases' long sums exceed the bucket's budget (at most 2 x 49 outputs).
          EXPECT_LE(c.m * c.n * c.k, c.kind == DataKind::kWrap ? 15000000 : tune::kGateMaxWork)
              << context << ": " << c.name;
          EXPECT_NE(std::find(kinds.begin(), kinds.end(), c.kind), kinds.end())
              << context << ": " << c.name;
          if (c.kind == DataKind::kWrap) {
            EXPECT_GE(c.k, tune::wrap_k(id)) << context << ": " << c.name;
            EXPECT_LE(c.m * c.n, 200) << context << ": " << c.name;
          }
          seen.insert(c.kind);
          if (c.name.rfind("bucket_", 0) == 0) {
            bucket_case = true;
            // The bucket's own shape when small; else its M class is kept (M above 64 stays above
            // 64) with smaller N and K.
            if (b.m * b.n <= tune::kGateMaxOutputs && b.m * b.n * b.k <= tune::kGateMaxWork) {
              EXPECT_EQ(c.name.rfind("bucket_" + std::to_string(b.m) + "x", 0), 0u)
                  << context << ": " << c.name;
              EXPECT_EQ(c.m, b.m);
              EXPECT_EQ(c.n, b.n);
              EXPECT_EQ(c.k, b.k);
            } else {
              EXPECT_EQ(c.m > 64, b.m > 64) << context << ": " << c.name;
              EXPECT_LE(c.n, b.n);
              EXPECT_LE(c.k, b.k);
            }
          }
        }
        EXPECT_TRUE(bucket_case) << context;
        EXPECT_EQ(seen.size(), kinds.size()) << context << ": kinds " << kind_names(kinds);
      }
    }
  }
  EXPECT_THROW(tune::gate_cases(tune::parse_identity_spec("Gemm"), {0, 8}, 1, 1, 1),
               InvalidArgument);
}

// Every case of the battery is a valid call, and the reference computes a whole battery quickly
// (the tuner runs one per candidate): one identity per operator at a large bucket, every identity
// at a small one.
TEST(TuneInputs, GateBatteriesRunThroughTheReference) {
  const std::set<std::string> timed = {"Gemm:float32", "Gemm:float16",
                                       "QLinearMatMul:uint8,int8,uint8",
                                       "QGemm:uint8,int8:output=uint8", "QuantMatmulDequant"};
  for (const KernelIdentity& id : all_identities()) {
    const std::string spec = tune::identity_spec(id);
    const bool large = timed.count(spec) > 0;
    const auto start = std::chrono::steady_clock::now();
    std::mt19937_64 rng(5);
    const std::vector<tune::GateCase> cases = large ? tune::gate_cases(id, {6, 16}, 64, 4096, 4096)
                                                    : tune::gate_cases(id, {4, 16}, 16, 96, 200);
    int64_t work = 0;
    for (const tune::GateCase& c : cases) {
      const tune::OpCall call = tune::make_call(id, c.m, c.n, c.k, c.kind, rng);
      ASSERT_NO_THROW(run_reference(call.op, call.inputs, call.attrs)) << spec << " " << c.name;
      work += c.m * c.n * c.k;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The work is what bounds the time (seconds are noisy on a shared machine).
    EXPECT_LE(work, 25000000) << spec;
    if (large) {
      std::cout << "[tune_inputs] gate battery of " << spec << " at 64x4096x4096: " << cases.size()
                << " cases, " << work << " multiply-adds, " << seconds
                << " s through the reference\n";
    }
  }
}

}  // namespace
}  // namespace mmtune
