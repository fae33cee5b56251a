// Every shipped Gemm kernel through mmtune::runtime::gemm, bit for bit against the reference: the
// variant suites' shape categories (relative to the kernel's tile, moved into its bucket), both
// transposes (materialized by the runtime), every C broadcast and an absent C, alpha/beta, Inf and
// NaN inputs for the float types, and the kernel each call meant to cover must be the one that ran
// (DispatchInfo). A prepacked twin (identity prepacked_b=true) is called the way users call it:
// B packed by prepack_b, then gemm(args, packed).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "autotune/halide_ops.h"
#include "autotune/kernel_key.h"
#include "mmtune/mmtune.h"
#include "reference/gemm.h"
#include "runtime/src/kernel_table.h"
#include "schedules/cpu/matmul_params.h"
#include "schedules/target_info.h"
#include "tests/runtime/runtime_support.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

using testing::bucket_of;

std::vector<runtime::KernelInfo> gemm_kernels() {
  std::vector<runtime::KernelInfo> out;
  for (const auto& k : runtime::linked_kernel_infos()) {
    if (k.op == "Gemm") out.push_back(k);
  }
  return out;
}

// Element i of a float tensor := +Inf, or a NaN whose payload is not the canonical one.
void set_special(Tensor& x, int64_t i, bool nan) {
  switch (x.dtype) {
    case DType::kFloat32:
      x.data<uint32_t>()[i] = nan ? 0xFFC00123u : 0x7F800000u;
      break;
    case DType::kFloat64:
      x.data<uint64_t>()[i] = nan ? 0xFFF8000000000123ull : 0x7FF0000000000000ull;
      break;
    case DType::kFloat16:
      x.data<uint16_t>()[i] = nan ? 0xFE03 : 0x7C00;
      break;
    case DType::kBFloat16:
      x.data<uint16_t>()[i] = nan ? 0xFFC3 : 0x7F80;
      break;
    default:
      break;
  }
}

class GemmRuntime : public ::testing::TestWithParam<std::string> {};

TEST_P(GemmRuntime, ShippedKernelIsBitExact) {
  if (GetParam() == "none") GTEST_SKIP() << "this build has no Gemm kernels";
  runtime::KernelInfo kernel;
  for (const auto& k : gemm_kernels()) {
    if (k.name == GetParam()) kernel = k;
  }
  ASSERT_EQ(kernel.name, GetParam());
  const DType t = *dtype_from_name(kernel.identity.at("A.type"));
  const FloatContract contract = *float_contract_from_string(kernel.identity.at("contract"));
  const auto [rows, cols] = testing::tile_of(kernel);
  const runtime::Bucket bucket = bucket_of(kernel.name);
  const testing::BucketThreads threads_in_bucket(bucket);
  const uint64_t seed = testing::variant_seed() ^ std::hash<std::string>()(kernel.name);
  std::mt19937_64 rng(seed);
  const testing::ValueRange range = testing::gemm_value_range(t);
  const std::vector<std::pair<float, float>> alpha_beta = {
      {1.0f, 1.0f}, {0.75f, 0.0f}, {-1.5f, 0.5f}, {1.0f, 0.0f}, {2.0f, -1.0f}};
  const bool slow = dtype_size(t) == 8 && t != DType::kFloat64;  // emulated 64-bit multiplies
  const bool prepacked = kernel.identity.count("prepacked_b") > 0;
  int64_t cases = 0;
  int combo = -1;  // the case number, counted before each case
  // Every layout x C kind on each shape, alpha/beta rotating. A shape of more than 2^24
  // multiply-adds (a bucket of large shapes: 65x513x513 and up) takes each C kind once, the
  // layouts rotating over them, so every layout and every C kind still runs on it; MMTUNE_LONG=1
  // runs all 24 there too. (The reference's scalar sums dominate: the full product took 60-100 s
  // per such kernel and level.)
  const char* long_env = std::getenv("MMTUNE_LONG");
  const bool long_run = long_env && std::string(long_env) == "1";
  int shape_index = 0;
  for (const auto& shape :
       testing::shapes_in_bucket(testing::matmul_shapes(rows, cols, !slow), bucket, 1)) {
    const int64_t m = shape.m, n = shape.n, k = shape.k;
    const bool large = !long_run && m * n * k > (int64_t{1} << 24);
    const int rotation = shape_index++;
    for (int layout = 0; layout < 4; ++layout) {
      for (int c_kind = 0; c_kind < 6; ++c_kind) {
        if (large && layout != (c_kind + rotation) % 4) continue;
        ++combo;
        GemmArgs args;
        args.trans_a = layout & 1;
        args.trans_b = layout & 2;
        args.contract = contract;
        // Float data rotates over plain, huge (products at the accumulator's overflow), tiny (in
        // its subnormal range) and special values (subnormals, -0, extremes, Inf, NaN payloads).
        const auto data = static_cast<testing::FloatData>(combo % 4);
        auto make = [&](Shape s) {
          return is_float(t) ? testing::random_float_tensor(t, std::move(s), rng, data)
                             : testing::random_tensor(t, std::move(s), rng, range.lo, range.hi);
        };
        Tensor a = make(args.trans_a ? Shape{k, m} : Shape{m, k});
        Tensor b = make(args.trans_b ? Shape{n, k} : Shape{k, n});
        const std::vector<Shape> c_shapes = {{}, {}, {n}, {1, n}, {m, 1}, {m, n}};  // 0: absent
        Tensor c = make(c_shapes[c_kind]);
        // Float types, now and then: an Inf or a (non-canonical) NaN in A or in C, so that Inf
        // propagation, canonical NaN results and beta = 0 ignoring a NaN C are compared too.
        if (is_float(t) && combo % 4 == 3) {
          Tensor& target = (combo / 4) % 2 == 0 || c.numel() == 0 ? a : c;
          const bool nan = (combo / 8) % 2 == 0;
          set_special(target, static_cast<int64_t>(rng() % target.numel()), nan);
        }
        args.a = &a;
        args.b = &b;
        args.c = c_kind == 0 ? nullptr : &c;
        std::tie(args.alpha, args.beta) = alpha_beta[combo % alpha_beta.size()];
        std::ostringstream context;
        context << kernel.name << " " << shape.category << " M=" << m << " N=" << n << " K=" << k
                << " transA=" << args.trans_a << " transB=" << args.trans_b
                << " C=" << (c_kind == 0 ? "absent" : shape_str(c.shape)) << " alpha=" << args.alpha
                << " beta=" << args.beta
                << " data=" << (is_float(t) ? testing::float_data_name(data) : "integer")
                << " seed=" << seed;
        const Tensor expected = gemm(args);
        DispatchInfo info;
        Tensor actual;
        try {
          actual = prepacked ? runtime::gemm(args, runtime::prepack_b(args), &info)
                             : runtime::gemm(args, &info);
        } catch (const std::exception& e) {
          FAIL() << e.what() << " (" << context.str() << ")";
        }
        // The kernel this case meant to cover must be the one that ran.
        ASSERT_EQ(info.kernel, kernel.name) << info.reason << " (" << context.str() << ")";
        ASSERT_TRUE(testing::bit_equal(expected, actual, context.str()));
        ++cases;
      }
    }
  }
  std::cout << "[runtime] " << kernel.name << ": " << cases << " cases bit-exact"
            << (prepacked ? " (B prepacked)" : "") << "\n";
}

std::vector<std::string> gemm_kernel_names() {
  std::vector<std::string> names;
  // A kernel serving several buckets has a table entry per bucket: it is tested once.
  for (const auto& k : gemm_kernels()) {
    if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
  }
  if (names.empty()) names.push_back("none");  // a build without kernels: the test reports it
  return names;
}

INSTANTIATE_TEST_SUITE_P(Shipped, GemmRuntime, ::testing::ValuesIn(gemm_kernel_names()),
                         [](const auto& info) { return info.param; });

// The shipped set: every Gemm type in the canonical layout has a kernel (float32/float64/bfloat16
// under both contracts where the target has FMA), so no Gemm call of a build with kernels falls
// back for want of one, whatever its shape.
TEST(GemmRuntimeCoverage, EveryGemmTypeHasAKernel) {
  if (runtime::kernel_target() == "none") GTEST_SKIP() << "this build has no kernels";
  const bool has_fma = runtime::kernel_target().find("-fma") != std::string::npos;
  for (const char* type :
       {"float32", "float64", "float16", "bfloat16", "int32", "uint32", "int64", "uint64"}) {
    for (const char* contract : {"strict", "fma"}) {
      const bool applies = contract_applies(*dtype_from_name(type));
      if (std::string(contract) == "fma" && (!applies || !has_fma)) continue;
      // Every shape is served: the bucket containing it, else the nearest bucket of the identity
      // (runtime/src/kernel_table.h). Shapes inside and outside the tuned buckets' N and K ranges.
      const DType t = *dtype_from_name(type);
      const testing::ValueRange range = testing::gemm_value_range(t);
      std::mt19937_64 rng(testing::variant_seed());
      for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{
               {1, 40, 40}, {5, 600, 70}, {16, 40, 700}, {100, 130, 40}}) {
        const Tensor a = testing::random_tensor(t, {m, k}, rng, range.lo, range.hi);
        const Tensor b = testing::random_tensor(t, {k, n}, rng, range.lo, range.hi);
        GemmArgs args;
        args.a = &a;
        args.b = &b;
        args.contract =
            std::string(contract) == "fma" ? FloatContract::kFma : FloatContract::kStrict;
        DispatchInfo info;
        const Tensor y = runtime::gemm(args, &info);
        EXPECT_TRUE(info.used_kernel()) << "Gemm " << type << " " << contract << " at " << m << "x"
                                        << n << "x" << k << ": " << info.reason;
        EXPECT_TRUE(testing::bit_equal(gemm(args), y, std::string(type) + " " + contract));
      }
    }
  }
}

// float16 products are exact in the float32 accumulator, so both contracts round alike: an fma call
// runs the strict kernel. Integers have no contract at all. (bfloat16 does: see below.)
TEST(GemmRuntimeCoverage, ContractFreeTypesShareTheStrictKernel) {
  if (runtime::kernel_target() == "none") GTEST_SKIP() << "this build has no kernels";
  std::mt19937_64 rng(testing::variant_seed());
  for (DType t : {DType::kFloat16, DType::kInt32}) {
    const testing::ValueRange range = testing::gemm_value_range(t);
    Tensor a = testing::random_tensor(t, {17, 33}, rng, range.lo, range.hi);
    Tensor b = testing::random_tensor(t, {33, 19}, rng, range.lo, range.hi);
    GemmArgs args;
    args.a = &a;
    args.b = &b;
    args.contract = FloatContract::kFma;
    DispatchInfo info;
    const Tensor y = runtime::gemm(args, &info);
    EXPECT_TRUE(info.used_kernel()) << dtype_name(t) << ": " << info.reason;
    EXPECT_EQ(info.kernel.find("_fma"), std::string::npos) << info.kernel;
    EXPECT_TRUE(testing::bit_equal(gemm(args), y, dtype_name(t)));
  }
}

// bfloat16 has float32's exponent range, so its products can overflow in the float32 accumulator:
// -2^127 * 1 + 1.5 * 2^127 * 1.5 is 1.25 * 2^127 (bfloat16 0x7F20, 2.1267648e38) fused, but +Inf
// when the product 2.25 * 2^127 is rounded first. The reference, the JIT kernel and the runtime
// must all give the fused bits under contract=fma, and +Inf under strict.
TEST(GemmContract, BFloat16ProductBeyondFloat32RangeIsFusedEverywhere) {
  const Tensor a = Tensor::from<uint16_t>(DType::kBFloat16, {1, 2}, {0xFF00, 0x7F40});
  const Tensor b = Tensor::from<uint16_t>(DType::kBFloat16, {2, 1}, {0x3F80, 0x3FC0});
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  for (const FloatContract contract : {FloatContract::kFma, FloatContract::kStrict}) {
    args.contract = contract;
    const uint16_t want = contract == FloatContract::kFma ? 0x7F20 : 0x7F80;
    const Tensor ref = gemm(args);
    EXPECT_EQ(ref.data<uint16_t>()[0], want) << to_string(contract);
    const Tensor jit = gemm_halide(args, {});
    EXPECT_EQ(jit.data<uint16_t>()[0], want) << to_string(contract);
    DispatchInfo info;
    const Tensor rt = runtime::gemm(args, &info);
    EXPECT_EQ(rt.data<uint16_t>()[0], want) << to_string(contract) << " " << info.kernel;
    if (runtime::kernel_target().find("-fma") != std::string::npos) {
      EXPECT_EQ(info.kernel.rfind(std::string("gemm_bf16_") + to_string(contract) + "__", 0), 0u)
          << info.kernel;
    }
  }
}

// The fma contract needs a fused multiply-add in the target: the SSE4.1 build has no fma kernels,
// and its fma calls take the reference path, saying so (a computation with no kernel).
TEST(GemmRuntimeCoverage, FmaContractNeedsAnFmaTarget) {
  std::mt19937_64 rng(testing::variant_seed());
  const Tensor a = testing::random_tensor(DType::kFloat32, {20, 30}, rng, -2, 2);
  const Tensor b = testing::random_tensor(DType::kFloat32, {30, 40}, rng, -2, 2);
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  args.contract = FloatContract::kFma;
  DispatchInfo info;
  const Tensor y = runtime::gemm(args, &info);
  EXPECT_TRUE(testing::bit_equal(gemm(args), y));
  const std::string target = runtime::kernel_target();
  if (target.find("-fma") != std::string::npos) {
    EXPECT_EQ(info.kernel.rfind("gemm_f32_fma__", 0), 0u) << info.kernel;
  } else {
    EXPECT_EQ(info.kernel, "reference");
    EXPECT_EQ(info.reason.rfind(testing::no_kernel_prefix("Gemm"), 0), 0u) << info.reason;
    EXPECT_NE(info.reason.find("contract=fma"), std::string::npos) << info.reason;
  }
}

}  // namespace
}  // namespace mmtune
