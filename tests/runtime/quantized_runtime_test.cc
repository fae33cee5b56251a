// Every shipped QLinearMatMul, QGemm and QuantMatmulDequant kernel through mmtune::runtime, bit for
// bit against the reference over the variant suites' shape categories (relative to the kernel's
// tile), and the kernel each call meant to cover must be the one that ran (DispatchInfo).
// QLinearMatMul: per-tensor / per-row / per-column parameters, N-D batch broadcasting, 1-D
// operands, full-range values, an int32 sum that wraps. QGemm: both transposes, every C kind,
// per-column b parameters, alpha, float32 output with and without y_scale. QuantMatmulDequant:
// bias or not, both weight layouts, all-zero rows, K = 0 (which the kernel computes); a prepacked
// twin with its weight packed by prepack_b (K = 0: the plain kernel, nothing to pack). Then the
// calls that take the reference and say why (K = 0, an empty Y, identities without a kernel), and
// the databases' quantized entries against the keys the runtime computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "autotune/kernel_key.h"
#include "mmtune/mmtune.h"
#include "reference/codecs.h"
#include "runtime/host/qlinear_matmul_host.h"
#include "runtime/host/quant_matmul_dequant_host.h"
#include "runtime/src/kernel_call.h"
#include "schedules/cpu/matmul_params.h"
#include "schedules/target_info.h"
#include "tests/runtime/runtime_support.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

// Runs one call through the runtime: it must take `kernel` and match `expected` bit for bit.
template <class Call>
::testing::AssertionResult runs_on_kernel(const std::string& kernel, const Tensor& expected,
                                          Call call, const std::string& context) {
  DispatchInfo info;
  Tensor actual;
  try {
    actual = call(&info);
  } catch (const std::exception& ex) {
    return ::testing::AssertionFailure() << ex.what() << " (" << context << ")";
  }
  if (info.kernel != kernel) {
    return ::testing::AssertionFailure() << "ran " << info.kernel << " instead of " << kernel
                                         << ": " << info.reason << " (" << context << ")";
  }
  return testing::bit_equal(expected, actual, context);
}

std::vector<runtime::KernelInfo> kernels_of(const std::string& op) {
  std::vector<runtime::KernelInfo> out;
  for (const auto& k : runtime::linked_kernel_infos()) {
    if (k.op == op) out.push_back(k);
  }
  return out;
}

std::vector<std::string> names_of(const std::string& op) {
  std::vector<std::string> names;
  // A kernel serving several buckets has a table entry per bucket: it is tested once.
  for (const auto& k : kernels_of(op)) {
    if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
  }
  if (names.empty()) names.push_back("none");  // a build without them: the test reports it
  return names;
}

runtime::KernelInfo kernel_named(const std::string& op, const std::string& name) {
  for (const auto& k : kernels_of(op)) {
    if (k.name == name) return k;
  }
  ADD_FAILURE() << "no " << op << " kernel " << name;
  return {};
}

using testing::tile_of;

Tensor constant(DType t, Shape shape, double v) {
  std::mt19937_64 unused(0);
  return testing::random_tensor(t, std::move(shape), unused, v, v);
}

// float32 values log-uniform in [2^e0, 2^e1].
Tensor scales(Shape shape, std::mt19937_64& rng, double e0, double e1) {
  return testing::random_scales(DType::kFloat32, std::move(shape), rng, e0, e1);
}

uint64_t seed_for(const std::string& name) {
  return testing::variant_seed() ^ std::hash<std::string>()(name);
}

// ---- QLinearMatMul ----

class QLinearMatMulRuntime : public ::testing::TestWithParam<std::string> {};

TEST_P(QLinearMatMulRuntime, ShippedKernelIsBitExact) {
  if (GetParam() == "none") GTEST_SKIP() << "this build has no QLinearMatMul kernels";
  const runtime::KernelInfo kernel = kernel_named("QLinearMatMul", GetParam());
  ASSERT_EQ(kernel.name, GetParam());
  ASSERT_EQ(kernel.identity.count("a_format"), 0u) << "float8 kernels: not covered here";
  const DType ta = *dtype_from_name(kernel.identity.at("a.type"));
  const DType tb = *dtype_from_name(kernel.identity.at("b.type"));
  const DType ty = *dtype_from_name(kernel.identity.at("y.type"));
  ASSERT_EQ(kernel.identity.at("scale_type"), "float32");
  const RequantMode mode = *requant_mode_from_string(kernel.identity.at("requant"));
  const auto [rows, cols] = tile_of(kernel);
  const uint64_t seed = seed_for(kernel.name);
  std::mt19937_64 rng(seed);
  int64_t cases = 0, outputs = 0;
  const runtime::Bucket bucket = testing::bucket_of(kernel.name);
  const testing::BucketThreads threads_in_bucket(bucket);
  int64_t elsewhere = 0;  // batched / vector cases its bucket sends to a sibling kernel
  // A prepacked twin (prepacked_b=true) is called as users call it: b (2-D) packed by prepack_b.
  const bool prepacked = kernel.identity.count("prepacked_b") > 0;
  // A plain kernel of a level below the best (a level with prepacked kernels only above it) runs
  // capped at its own level, as a CPU of that level runs it: uncapped, plain calls from 32 rows
  // and 2^23 products pack b for themselves and run the level above (PackedB.PlainCalls...).
  std::optional<testing::LevelCap> cap;
  if (!prepacked && kernel.target != runtime::kernel_target()) cap.emplace(kernel.target);
  for (testing::QlmCase c : testing::qlinear_matmul_cases(rows, cols)) {
    if (c.a.back() == 0) continue;  // K = 0 takes the reference: QuantizedFallback below
    // A matrix case's M moved into the kernel's bucket (with a per-row parameter's), so that this
    // kernel is the one that serves it.
    const bool matrix = c.a.size() == 2 && c.b.size() == 2;
    if (matrix) {
      const int64_t m = testing::clamp_to(c.a[0], std::max<int64_t>(bucket.m_min, 1), bucket.m_max);
      const int64_t k = testing::clamp_to(c.a[1], std::max<int64_t>(bucket.k_min, 1), bucket.k_max);
      const int64_t n = testing::clamp_to(c.b[1], std::max<int64_t>(bucket.n_min, 1), bucket.n_max);
      if (c.a_param.size() == 2 && c.a_param[0] == c.a[0]) c.a_param[0] = m;
      if (!c.b_param.empty() && c.b_param.back() == c.b[1]) c.b_param.back() = n;
      c.a = {m, k};
      c.b = {k, n};
    }
    const testing::QlmInputs in =
        testing::make_qlinear_matmul_inputs(ta, tb, ty, DType::kFloat32, c, rng);
    const QLinearMatMulArgs args = in.args(mode);
    std::ostringstream context;
    context << kernel.name << " case " << c.name << " (" << c.data << ") a" << shape_str(c.a)
            << " b" << shape_str(c.b) << " params a" << shape_str(c.a_param) << " b"
            << shape_str(c.b_param) << " seed " << seed;
    const Tensor expected = qlinear_matmul(args);
    auto run = [&](DispatchInfo* info) {
      return prepacked && c.b.size() == 2
                 ? runtime::qlinear_matmul(args, runtime::prepack_b(args), info)
                 : runtime::qlinear_matmul(args, info);
    };
    if (!matrix) {
      // Batched and vector calls: bit-exact on whichever kernel their shape selects.
      DispatchInfo info;
      const Tensor actual = run(&info);
      ASSERT_TRUE(testing::bit_equal(expected, actual, context.str()));
      if (info.kernel != kernel.name) {
        // (A batched b cannot be prepacked: its call runs the plain kernel, as it should.)
        if (!(prepacked && c.b.size() != 2)) ++elsewhere;
        continue;
      }
    } else {
      ASSERT_TRUE(runs_on_kernel(kernel.name, expected, run, context.str()));
    }
    ++cases;
    outputs += expected.numel();
  }
  // Every case a one-bucket kernel gets; every matrix case at least.
  if (bucket.m_min == 0 && bucket.m_max < 0) {
    EXPECT_EQ(elsewhere, 0);
  }
  std::cout << "[runtime] " << kernel.name << ": " << cases << " cases, " << outputs
            << " outputs bit-exact" << (prepacked ? " (b prepacked)" : "") << "\n";
}

INSTANTIATE_TEST_SUITE_P(Shipped, QLinearMatMulRuntime,
                         ::testing::ValuesIn(names_of("QLinearMatMul")),
                         [](const auto& info) { return info.param; });

// ---- QGemm ----

class QGemmRuntime : public ::testing::TestWithParam<std::string> {};

TEST_P(QGemmRuntime, ShippedKernelIsBitExact) {
  if (GetParam() == "none") GTEST_SKIP() << "this build has no QGemm kernels";
  const runtime::KernelInfo kernel = kernel_named("QGemm", GetParam());
  ASSERT_EQ(kernel.name, GetParam());
  const DType ta = *dtype_from_name(kernel.identity.at("A.type"));
  const DType tb = *dtype_from_name(kernel.identity.at("B.type"));
  const DType ty = *dtype_from_name(kernel.identity.at("Y.type"));
  const bool quantized = ty != DType::kFloat32;
  const auto [rows, cols] = tile_of(kernel);
  const uint64_t seed = seed_for(kernel.name);
  std::mt19937_64 rng(seed);
  const float alphas[] = {1.0f, 0.75f, -1.5f, 2.0f};
  // A prepacked twin (prepacked_b=true) is called as users call it: B packed by prepack_b.
  const bool prepacked = kernel.identity.count("prepacked_b") > 0;
  // A plain kernel of a level below the best: capped at its level (as in QLinearMatMulRuntime).
  std::optional<testing::LevelCap> cap;
  if (!prepacked && kernel.target != runtime::kernel_target()) cap.emplace(kernel.target);
  int64_t cases = 0;
  int combo = 0;
  // Each shape moved into the kernel's bucket, so that this kernel is the one that serves it.
  const runtime::Bucket bucket = testing::bucket_of(kernel.name);
  const testing::BucketThreads threads_in_bucket(bucket);
  std::vector<tune::MatmulShape> shapes = testing::matmul_shapes(rows, cols);
  // K = 0 is the reference's: QuantizedFallback below.
  shapes.erase(std::remove_if(shapes.begin(), shapes.end(), [](const auto& s) { return s.k == 0; }),
               shapes.end());
  for (const auto& s : testing::shapes_in_bucket(shapes, bucket, 0)) {
    const int64_t m = s.m, n = s.n, k = s.k;
    // Every layout on each shape; C kind, per-column parameters, alpha and y_scale rotating.
    for (int layout = 0; layout < 4; ++layout, ++combo) {
      QGemmArgs args;
      args.trans_a = layout & 1;
      args.trans_b = layout & 2;
      const Tensor a = testing::random_tensor(ta, args.trans_a ? Shape{k, m} : Shape{m, k}, rng,
                                              testing::quant_min(ta), testing::quant_max(ta));
      const Tensor b = testing::random_tensor(tb, args.trans_b ? Shape{n, k} : Shape{k, n}, rng,
                                              testing::quant_min(tb), testing::quant_max(tb));
      const Tensor az =
          testing::random_tensor(ta, {}, rng, testing::quant_min(ta), testing::quant_max(ta));
      const bool per_column = combo % 2 == 1;
      const Tensor bz = testing::random_tensor(tb, per_column ? Shape{n} : Shape{}, rng,
                                               testing::quant_min(tb), testing::quant_max(tb));
      const double e = -std::log2(static_cast<double>(k) * 128.0);
      const Tensor as = scales({}, rng, e / 2 - 1, e / 2 + 1);
      const Tensor bs = scales(per_column ? Shape{n} : Shape{}, rng, e / 2 - 1, e / 2 + 1);
      const std::vector<Shape> c_shapes = {{}, {}, {n}, {1, n}, {m, n}};  // 0: absent
      const int c_kind = (combo / 2) % 5;
      const Tensor c = testing::random_tensor(DType::kInt32, c_shapes[c_kind], rng, -20000, 20000);
      const Tensor ys = scales({}, rng, -8, -6);
      const Tensor yz = quantized ? testing::random_tensor(ty, {}, rng, testing::quant_min(ty),
                                                           testing::quant_max(ty))
                                  : Tensor();
      args.a = &a;
      args.b = &b;
      args.a_scale = &as;
      args.a_zero_point = &az;
      args.b_scale = &bs;
      args.b_zero_point = &bz;
      args.c = c_kind == 0 ? nullptr : &c;
      args.alpha = alphas[combo % 4];
      // Quantized: y_scale and y_zero_point; float32: y_scale every other call (the kernel runs
      // with y_scale = 1 when it is absent).
      if (quantized) {
        args.y_scale = &ys;
        args.y_zero_point = &yz;
      } else if (combo % 3 == 1) {
        args.y_scale = &ys;
      }
      std::ostringstream context;
      context << kernel.name << " " << s.category << " M=" << m << " N=" << n << " K=" << k
              << " transA=" << args.trans_a << " transB=" << args.trans_b
              << " C=" << (c_kind == 0 ? "absent" : shape_str(c.shape))
              << " per_column=" << per_column << " alpha=" << args.alpha
              << " y_scale=" << (args.y_scale != nullptr) << " seed=" << seed;
      const Tensor expected = qgemm(args);
      ASSERT_TRUE(runs_on_kernel(
          kernel.name, expected,
          [&](DispatchInfo* info) {
            return prepacked ? runtime::qgemm(args, runtime::prepack_b(args), info)
                             : runtime::qgemm(args, info);
          },
          context.str()));
      ++cases;
    }
  }
  std::cout << "[runtime] " << kernel.name << ": " << cases << " cases bit-exact"
            << (prepacked ? " (B prepacked)" : "") << "\n";
}

INSTANTIATE_TEST_SUITE_P(Shipped, QGemmRuntime, ::testing::ValuesIn(names_of("QGemm")),
                         [](const auto& info) { return info.param; });

// ---- QuantMatmulDequant ----

class QuantMatmulDequantRuntime : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantMatmulDequantRuntime, ShippedKernelIsBitExact) {
  if (GetParam() == "none") GTEST_SKIP() << "this build has no QuantMatmulDequant kernels";
  const runtime::KernelInfo kernel = kernel_named("QuantMatmulDequant", GetParam());
  ASSERT_EQ(kernel.name, GetParam());
  ASSERT_EQ(kernel.identity.at("dynamic"), "true") << "static kernels: not covered here";
  ASSERT_EQ(kernel.identity.at("fused_scale"), "false");
  const bool smooth = kernel.identity.at("has_smooth") == "true";
  // A prepacked twin (prepacked_b=true) is called as users call it: the weight packed by
  // prepack_b, from either layout.
  const bool prepacked = kernel.identity.count("prepacked_b") > 0;
  const auto [rows, cols] = tile_of(kernel);
  const uint64_t seed = seed_for(kernel.name);
  std::mt19937_64 rng(seed);
  int64_t cases = 0, plain_k0 = 0;
  int combo = 0;
  // Each shape moved into the kernel's bucket, so that this kernel is the one that serves it.
  const runtime::Bucket bucket = testing::bucket_of(kernel.name);
  const testing::BucketThreads threads_in_bucket(bucket);
  for (const auto& s : testing::shapes_in_bucket(testing::matmul_shapes(rows, cols), bucket, 0)) {
    const int64_t m = s.m, n = s.n, k = s.k;
    // Bias or not x both weight layouts on each shape (K = 0 included: the kernel computes it).
    for (int variant = 0; variant < 4; ++variant, ++combo) {
      const bool bias = variant & 1, transpose = !(variant & 2);
      Tensor x = testing::random_tensor(DType::kFloat16, {m, k}, rng, -8.0, 8.0);
      if (combo % 3 == 2 && k > 0) {
        // An all-zero row (signed zeros mixed): s = 0, inv = +Inf, 0 * Inf -> 0.
        for (int64_t q = 0; q < k; ++q) x.data<uint16_t>()[q] = rng() % 2 ? 0x8000 : 0x0000;
      }
      const Tensor w = testing::random_tensor(DType::kInt8, transpose ? Shape{n, k} : Shape{k, n},
                                              rng, -128, 127);
      const Tensor ws = testing::random_tensor(DType::kFloat32, {n}, rng, 1e-3, 5e-2);
      const Tensor bi = testing::random_tensor(DType::kInt32, {n}, rng, -5000, 5000);
      const Tensor sm = testing::random_tensor(DType::kFloat16, {k}, rng, -2.0, 2.0);
      QuantMatmulDequantArgs args;
      args.x = &x;
      args.weight = &w;
      args.weight_scale = &ws;
      args.bias = bias ? &bi : nullptr;
      args.smooth_scale = smooth ? &sm : nullptr;
      args.transpose_weight = transpose;
      std::ostringstream context;
      context << kernel.name << " " << s.category << " M=" << m << " N=" << n << " K=" << k
              << " bias=" << bias << " transpose_weight=" << transpose << " seed=" << seed;
      const Tensor expected = quant_matmul_dequant(args);
      auto run = [&](DispatchInfo* info) {
        return prepacked ? runtime::quant_matmul_dequant(args, runtime::prepack_b(args), info)
                         : runtime::quant_matmul_dequant(args, info);
      };
      if (prepacked && k == 0) {
        // An empty weight has nothing to pack: the call runs the plain kernel, and says so.
        DispatchInfo info;
        ASSERT_TRUE(testing::bit_equal(expected, run(&info), context.str()));
        EXPECT_NE(
            info.reason.find("weight not prepacked for it (weight is empty: nothing to pack)"),
            std::string::npos)
            << info.reason << " (" << context.str() << ")";
        ++plain_k0;
        continue;
      }
      ASSERT_TRUE(runs_on_kernel(kernel.name, expected, run, context.str()));
      ++cases;
    }
  }
  std::cout << "[runtime] " << kernel.name << ": " << cases << " cases bit-exact"
            << (prepacked ? " (weight prepacked; " + std::to_string(plain_k0) +
                                " with K = 0 on the plain kernel, bit-exact)"
                          : "")
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(Shipped, QuantMatmulDequantRuntime,
                         ::testing::ValuesIn(names_of("QuantMatmulDequant")),
                         [](const auto& info) { return info.param; });

// ---- What takes the reference, and says why ----

struct QlmInputs {
  Tensor a, as, az, b, bs, bz, ys, yz;
  QLinearMatMulArgs args() const {
    return {&a, &as, &az, &b, &bs, &bz, &ys, &yz, 21, RequantMode::kFloat32};
  }
};

QlmInputs qlm_inputs(DType ta, DType tb, DType ty, DType scale, Shape a_shape, Shape b_shape,
                     std::mt19937_64& rng) {
  QlmInputs in;
  in.a = testing::random_tensor(ta, std::move(a_shape), rng, testing::quant_min(ta),
                                testing::quant_max(ta));
  in.b = testing::random_tensor(tb, std::move(b_shape), rng, testing::quant_min(tb),
                                testing::quant_max(tb));
  in.az =
      testing::random_tensor(ta, {}, rng, testing::quant_min(ta) / 2, testing::quant_max(ta) / 2);
  in.bz =
      testing::random_tensor(tb, {}, rng, testing::quant_min(tb) / 2, testing::quant_max(tb) / 2);
  in.yz = testing::random_tensor(ty, {}, rng, testing::quant_min(ty), testing::quant_max(ty));
  auto scalar = [&](float v) {
    Tensor t(scale, {});
    if (scale == DType::kFloat32)
      t.data<float>()[0] = v;
    else
      t.data<uint16_t>()[0] = float_to_float16(v);
    return t;
  };
  in.as = scalar(0.02f);
  in.bs = scalar(0.03f);
  in.ys = scalar(0.5f);
  return in;
}

bool has_kernels() { return runtime::kernel_target() != "none"; }

// The host hands the kernels a parameter that is one value for all rows (or columns) with stride
// 0, whatever its shape: the kernels' per-tensor branch (the multiplier and zero-point terms per
// column, once per call) serves exactly those calls. The outputs of both branches are checked
// against the reference by the shipped-kernel tests above (cases equal_params, *_differs).
TEST(QLinearMatMulHost, ParametersOneForAllAreViewedWithStrideZero) {
  std::mt19937_64 rng(testing::variant_seed());
  const int64_t m = 7, n = 9, k = 5;
  QlmInputs in =
      qlm_inputs(DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, {m, k}, {k, n}, rng);
  auto strides = [&] {
    const QLinearMatMulPlan plan = validate_qlinear_matmul(in.args());
    QLinearMatMulEntryParams p;
    widen_entry_params(in.args(), plan, {}, p);
    const auto views = param_views(p, m, n);
    std::array<int, 4> s{};
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(views[i].dim(0).extent(), i < 2 ? m : n);
      s[i] = views[i].dim(0).stride();
    }
    return s;
  };
  // Per tensor: a_scale, a_zero_point, b_zero_point stride 0; b_scale is always read per column.
  EXPECT_EQ(strides(), (std::array<int, 4>{0, 0, 1, 0}));
  // Per row and per column, every value the same: the same views.
  in.as = Tensor::from(DType::kFloat32, {m, 1}, std::vector<float>(m, 0.02f));
  in.az = Tensor::from(DType::kUInt8, {m, 1}, std::vector<uint8_t>(m, 7));
  in.bz = Tensor::from(DType::kInt8, {1, n}, std::vector<int8_t>(n, -3));
  EXPECT_EQ(strides(), (std::array<int, 4>{0, 0, 1, 0}));
  // One row's scale differs: A's parameters per row (both, as the kernels branch on both).
  in.as.data<float>()[m - 1] = 0.04f;
  EXPECT_EQ(strides(), (std::array<int, 4>{1, 1, 1, 0}));
  in.as.data<float>()[m - 1] = 0.02f;
  // One row's zero point differs.
  in.az.data<uint8_t>()[0] = 8;
  EXPECT_EQ(strides(), (std::array<int, 4>{1, 1, 1, 0}));
  in.az.data<uint8_t>()[0] = 7;
  // One column's zero point differs.
  in.bz.data<int8_t>()[n - 1] = -2;
  EXPECT_EQ(strides(), (std::array<int, 4>{0, 0, 1, 1}));
}

TEST(QuantizedFallback, EmptySumAndEmptyOutputTakeTheReference) {
  std::mt19937_64 rng(testing::variant_seed());
  DispatchInfo info;
  // QLinearMatMul, K = 0: the requantized zero.
  const QlmInputs k0 =
      qlm_inputs(DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32, {3, 0}, {0, 5}, rng);
  Tensor y = runtime::qlinear_matmul(k0.args(), &info);
  EXPECT_EQ(info.kernel, "reference");
  EXPECT_EQ(info.reason, "K is 0 (an empty sum): the reference computes it");
  EXPECT_TRUE(testing::bit_equal(qlinear_matmul(k0.args()), y, "QLinearMatMul K = 0"));
  // QLinearMatMul, M = 0.
  const QlmInputs m0 = qlm_inputs(DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat32,
                                  {2, 0, 4}, {4, 5}, rng);
  y = runtime::qlinear_matmul(m0.args(), &info);
  EXPECT_EQ(info.kernel, "reference");
  EXPECT_EQ(info.reason, "Y is empty");
  EXPECT_EQ(y.shape, (Shape{2, 0, 5}));

  // QGemm, K = 0: the epilogue of C alone.
  const Tensor a = testing::random_tensor(DType::kUInt8, {4, 0}, rng, 0, 255);
  const Tensor b = testing::random_tensor(DType::kInt8, {0, 6}, rng, -128, 127);
  const Tensor az = constant(DType::kUInt8, {}, 3), bz = constant(DType::kInt8, {}, -2);
  const Tensor as = constant(DType::kFloat32, {}, 0.25), bs = constant(DType::kFloat32, {}, 0.5);
  const Tensor c = testing::random_tensor(DType::kInt32, {6}, rng, -100, 100);
  QGemmArgs q;
  q.a = &a;
  q.b = &b;
  q.a_scale = &as;
  q.a_zero_point = &az;
  q.b_scale = &bs;
  q.b_zero_point = &bz;
  q.c = &c;
  y = runtime::qgemm(q, &info);
  EXPECT_EQ(info.kernel, "reference");
  EXPECT_EQ(info.reason, "K is 0 (an empty sum): the reference computes it");
  EXPECT_TRUE(testing::bit_equal(qgemm(q), y, "QGemm K = 0"));

  // QuantMatmulDequant, N = 0: nothing to compute (K = 0 runs the kernel: the shipped suite).
  const Tensor x = testing::random_tensor(DType::kFloat16, {3, 8}, rng, -1, 1);
  const Tensor w(DType::kInt8, {0, 8});
  const Tensor ws(DType::kFloat32, {0});
  QuantMatmulDequantArgs d;
  d.x = &x;
  d.weight = &w;
  d.weight_scale = &ws;
  y = runtime::quant_matmul_dequant(d, &info);
  EXPECT_EQ(info.kernel, "reference");
  EXPECT_EQ(info.reason, "Y is empty");
  EXPECT_EQ(y.shape, (Shape{3, 0}));
}

// Identities the build ships no kernel for run on the reference, bit for bit, and the reason names
// the identity the call needed.
TEST(QuantizedFallback, IdentitiesWithoutKernelsTakeTheReference) {
  std::mt19937_64 rng(testing::variant_seed() + 1);
  const std::string prefix = testing::no_kernel_prefix("QLinearMatMul");
  DispatchInfo info;
  // float16 scales (no _f16scale kernel shipped), and a type tuple without a kernel.
  for (const auto& [in, needs] : std::vector<std::pair<QlmInputs, std::string>>{
           {qlm_inputs(DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat16, {5, 9}, {9, 7},
                       rng),
            "scale_type=float16"},
           {qlm_inputs(DType::kInt8, DType::kUInt8, DType::kInt8, DType::kFloat32, {5, 9}, {9, 7},
                       rng),
            "a.type=int8 b.type=uint8"}}) {
    const Tensor y = runtime::qlinear_matmul(in.args(), &info);
    EXPECT_EQ(info.kernel, "reference");
    EXPECT_EQ(info.reason.rfind(prefix, 0), 0u) << info.reason;
    EXPECT_NE(info.reason.find(needs), std::string::npos) << info.reason;
    EXPECT_TRUE(testing::bit_equal(qlinear_matmul(in.args()), y, needs));
  }
  // QuantMatmulDequant with a static per-token x_scale (only dynamic kernels are shipped).
  const Tensor x = testing::random_tensor(DType::kFloat16, {4, 16}, rng, -8, 8);
  const Tensor w = testing::random_tensor(DType::kInt8, {10, 16}, rng, -128, 127);
  const Tensor ws = testing::random_tensor(DType::kFloat32, {10}, rng, 1e-3, 5e-2);
  const Tensor xs = testing::random_tensor(DType::kFloat32, {4}, rng, 0.02, 0.1);
  QuantMatmulDequantArgs d;
  d.x = &x;
  d.weight = &w;
  d.weight_scale = &ws;
  d.x_scale = &xs;
  const Tensor y = runtime::quant_matmul_dequant(d, &info);
  EXPECT_EQ(info.kernel, "reference");
  EXPECT_EQ(info.reason.rfind(testing::no_kernel_prefix("QuantMatmulDequant"), 0), 0u)
      << info.reason;
  EXPECT_NE(info.reason.find("dynamic=false"), std::string::npos) << info.reason;
  EXPECT_TRUE(testing::bit_equal(quant_matmul_dequant(d), y, "static per-token"));
}

// The shipped set covers what the brief asked for: QLinearMatMul u8.s8->u8, u8.u8->u8, s8.s8->s8
// with float32 scales in both requantization modes; QGemm's three type pairs with float32 and
// quantized output; dynamic QuantMatmulDequant with and without smoothing.
TEST(QuantizedCoverage, TheCommonIdentitiesHaveKernels) {
  if (!has_kernels()) GTEST_SKIP() << "this build has no kernels";
  if (runtime::kernel_target().find("avx2") == std::string::npos)
    GTEST_SKIP() << "the SSE4.1 build ships fewer";
  auto has = [](const std::string& op, const std::map<std::string, std::string>& want) {
    for (const auto& k : kernels_of(op)) {
      bool all = true;
      for (const auto& [key, v] : want) all &= k.identity.count(key) && k.identity.at(key) == v;
      if (all) return true;
    }
    return false;
  };
  for (const auto& [a, b, y] : std::vector<std::array<const char*, 3>>{
           {"uint8", "int8", "uint8"}, {"uint8", "uint8", "uint8"}, {"int8", "int8", "int8"}}) {
    for (const char* rq : {"float32", "float64"}) {
      EXPECT_TRUE(has("QLinearMatMul", {{"a.type", a},
                                        {"b.type", b},
                                        {"y.type", y},
                                        {"scale_type", "float32"},
                                        {"requant", rq}}))
          << a << " " << b << " " << y << " " << rq;
    }
    EXPECT_TRUE(has("QGemm", {{"A.type", a}, {"B.type", b}, {"Y.type", "float32"}}))
        << a << " " << b;
    EXPECT_TRUE(has("QGemm", {{"A.type", a}, {"B.type", b}, {"Y.type", a}})) << a << " " << b;
  }
  for (const char* smooth : {"false", "true"}) {
    EXPECT_TRUE(has("QuantMatmulDequant", {{"dynamic", "true"}, {"has_smooth", smooth}})) << smooth;
  }
}

// Every committed database's quantized entries: the schedule fits the target (K grouping allowed:
// the sums are exact), and the identity is the key of a call the runtime maps onto that kernel.
TEST(QuantizedCoverage, ShippedDatabaseEntriesAreTheRuntimesKeys) {
  namespace fs = std::filesystem;
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(testing::source_dir() + "/tuned")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const nlohmann::json db = nlohmann::json::parse(in);
    const schedules::TargetInfo ti = schedules::target_info(db.at("target").get<std::string>());
    for (const auto& k : db.at("kernels")) {
      const std::string op = k.at("op"), name = k.at("name");
      if (op == "Gemm") continue;
      std::map<std::string, std::string> id;
      for (const auto& [key, v] : k.at("params").items()) id[key] = v.get<std::string>();
      // A kernel tuned for prepacked weights: its call's key plus prepacked_b=true (prepack_b).
      const bool prepacked = id.count("prepacked_b") > 0;
      if (prepacked) {
        EXPECT_EQ(id.at("prepacked_b"), "true") << name;
        EXPECT_NE(name.find("_prepacked__"), std::string::npos) << name;
        id.erase("prepacked_b");
      }
      const auto params = k.at("schedule").get<schedules::Schedule>();
      KernelIdentity key;
      if (op == "QLinearMatMul") {
        // float8 travels as uint8 in the kernel; the call has the float8 tensors.
        auto type = [&](const char* name, const char* format) {
          return *dtype_from_name(id.count(format) != 0 ? id.at(format) : id.at(name));
        };
        const Tensor a(type("a.type", "a_format"), {1, 1}), b(type("b.type", "b_format"), {1, 1});
        const Tensor y(type("y.type", "y_format"), {}),
            s(*dtype_from_name(id.at("scale_type")), {});
        const QLinearMatMulArgs args{&a, &s, &a, &b, &s,
                                     &b, &s, &y, 21, *requant_mode_from_string(id.at("requant"))};
        key = qlinear_matmul_identity(args);
      } else if (op == "QGemm") {
        // The runtime always passes a y_scale.
        EXPECT_EQ(id.at("has_y_scale"), "true") << name;
        const Tensor a(*dtype_from_name(id.at("A.type")), {1, 1}),
            b(*dtype_from_name(id.at("B.type")), {1, 1});
        const Tensor s(DType::kFloat32, {});
        const Tensor y(
            id.at("Y.type") == "float32" ? DType::kUInt8 : *dtype_from_name(id.at("Y.type")), {});
        QGemmArgs args;
        args.a = &a;
        args.b = &b;
        args.y_scale = &s;
        args.y_zero_point = id.at("Y.type") == "float32" ? nullptr : &y;
        key = qgemm_identity(args);
      } else {
        ASSERT_EQ(op, "QuantMatmulDequant") << name;
        // The runtime always passes a bias and a (K, N) weight.
        EXPECT_EQ(id.at("has_bias"), "true") << name;
        EXPECT_EQ(id.at("transpose_weight"), "false") << name;
        const Tensor t(DType::kFloat32, {1});
        const Tensor ws(id.at("weight_scale.type") == "int64" ? DType::kInt64 : DType::kFloat32,
                        {1});
        const Tensor xs(*dtype_from_name(id.at("x_scale.type")), {1});
        QuantMatmulDequantArgs args;
        args.weight_scale = &ws;
        args.bias = &t;
        args.x_scale = id.at("dynamic") == "true" ? nullptr : &xs;
        args.smooth_scale = id.at("has_smooth") == "true" ? &t : nullptr;
        args.x_quant_mode =
            id.at("per_token") == "true" ? XQuantMode::kPerToken : XQuantMode::kPerTensor;
        args.transpose_weight = false;
        key = quant_matmul_dequant_identity(args);
      }
      EXPECT_EQ(key.params, id) << name;
      // Validated as the kernel it is: with B prepacked where it was tuned so (the AMX form).
      KernelIdentity kernel = key;
      if (prepacked) kernel.params["prepacked_b"] = "true";
      EXPECT_EQ(params.validate(ti, accumulator_of(kernel)), std::nullopt) << name;
      ++checked;
    }
  }
  EXPECT_GE(checked, has_kernels() ? 14 : 0);
}

}  // namespace
}  // namespace mmtune
