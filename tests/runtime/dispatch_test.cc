// The runtime's dispatch: kernel selection by identity and bucket, the paths that fall back to the
// reference (and say so), validation identical to the reference's, Halide runtime errors mapped to
// KernelError, threads, CPU checks, and the kernel names of the linked table and the shipped
// databases against docs/naming.md.
#include "runtime/src/dispatch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "autotune/halide_ops.h"
#include "autotune/kernel_key.h"
#include "autotune/kernel_naming.h"
#include "mmtune/mmtune.h"
#include "reference/codecs.h"
#include "reference/registry.h"
#include "reference/validate.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/kernel_identity.h"
#include "runtime/src/kernel_call.h"
#include "runtime/src/kernel_table.h"
#include "schedules/schedule.h"
#include "schedules/target_info.h"
#include "tests/runtime/runtime_support.h"
#include "tests/support/test_support.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

namespace fs = std::filesystem;
using runtime::Bucket;
using runtime::KernelEntry;
using runtime::KernelTable;

// ---- Selection over a table made here (no kernel is called) ----

const char* kF32 =
    "A.type=float32 B.type=float32 C.type=float32 Y.type=float32 contract=strict has_c=true "
    "trans_a=false trans_b=false";

KernelTable synthetic_table() {
  static const KernelEntry entries[] = {
      {"small_m", "Gemm", "mmtune_gemm", kF32, "", {1, 3, 0, -1, 0, -1}, nullptr},
      {"mid_m", "Gemm", "mmtune_gemm", kF32, "", {4, 64, 0, -1, 0, -1}, nullptr},
      {"wide_n", "Gemm", "mmtune_gemm", kF32, "", {65, -1, 1024, -1, 0, -1}, nullptr},
      {"other_op", "QGemm", "mmtune_qgemm", kF32, "", {0, -1, 0, -1, 0, -1}, nullptr},
  };
  return {"x86-64-linux-avx2-fma-f16c", "synthetic", entries, 4};
}

std::map<std::string, std::string> f32_identity() { return runtime::parse_params(kF32); }

TEST(Select, BucketContainingTheShapeWins) {
  const KernelTable t = synthetic_table();
  EXPECT_STREQ(runtime::select_kernel(t, "Gemm", f32_identity(), 1, 100, 100, 1).kernel->name,
               "small_m");
  EXPECT_STREQ(runtime::select_kernel(t, "Gemm", f32_identity(), 3, 100, 100, 1).kernel->name,
               "small_m");
  EXPECT_STREQ(runtime::select_kernel(t, "Gemm", f32_identity(), 4, 100, 100, 1).kernel->name,
               "mid_m");
  EXPECT_STREQ(runtime::select_kernel(t, "Gemm", f32_identity(), 500, 2048, 100, 1).kernel->name,
               "wide_n");
  const auto s = runtime::select_kernel(t, "Gemm", f32_identity(), 64, 1, 1, 1);
  EXPECT_EQ(s.reason, "bucket m 4..64 contains M=64 N=1 K=1 on 1 thread");
}

TEST(Select, OutsideEveryBucketTheNearestRuns) {
  const KernelTable t = synthetic_table();
  // M = 500, N = 100: no bucket; mid_m is 500/64 away in M, wide_n 1024/100 away in N.
  const auto s = runtime::select_kernel(t, "Gemm", f32_identity(), 500, 100, 100, 1);
  ASSERT_NE(s.kernel, nullptr);
  EXPECT_STREQ(s.kernel->name, "mid_m");
  EXPECT_EQ(s.reason, "no bucket contains M=500 N=100 K=100 on 1 thread; nearest bucket m 4..64");
}

TEST(Select, AnotherIdentityOrOperatorHasNoKernel) {
  const KernelTable t = synthetic_table();
  auto id = f32_identity();
  id["contract"] = "fma";
  const auto s = runtime::select_kernel(t, "Gemm", id, 8, 8, 8, 1);
  EXPECT_EQ(s.kernel, nullptr);
  EXPECT_EQ(s.reason,
            "no Gemm kernel in this build (x86-64-linux-avx2-fma-f16c) computes A.type=float32 "
            "B.type=float32 C.type=float32 Y.type=float32 contract=fma has_c=true trans_a=false "
            "trans_b=false");
  EXPECT_EQ(runtime::select_kernel(t, "QLinearMatMul", f32_identity(), 8, 8, 8, 1).kernel, nullptr);
  EXPECT_STREQ(runtime::select_kernel(t, "QGemm", f32_identity(), 8, 8, 8, 1).kernel->name,
               "other_op");
}

TEST(Select, BucketText) {
  EXPECT_EQ(Bucket{}.to_string(), "any");
  EXPECT_EQ((Bucket{4, -1, 0, -1, 0, -1}).to_string(), "m 4..");
  EXPECT_EQ((Bucket{0, 8, 16, 32, 1, -1}).to_string(), "m ..8 n 16..32 k 1..");
  EXPECT_EQ((Bucket{0, 64, 0, 512, 0, 512, 2, -1}).to_string(),
            "m ..64 n ..512 k ..512 threads 2..");
  EXPECT_EQ((Bucket{0, -1, 0, -1, 0, -1, 0, 1}).to_string(), "threads ..1");
}

// Buckets of one shape range split by the pool's thread count: a kernel that splits small calls
// into tasks for 2 threads, a serial one for 1; beyond both ranges the nearest in log2 distance.
TEST(Select, TheThreadCountChoosesAmongBucketsOfOneShapeRange) {
  static const KernelEntry entries[] = {
      {"one_thread", "Gemm", "mmtune_gemm", kF32, "", {0, 64, 0, 512, 0, 512, 0, 1}, nullptr},
      {"two_to_four", "Gemm", "mmtune_gemm", kF32, "", {0, 64, 0, 512, 0, 512, 2, 4}, nullptr},
      {"large", "Gemm", "mmtune_gemm", kF32, "", {65, -1, 0, -1, 0, -1}, nullptr},
      {"wide_two", "Gemm", "mmtune_gemm", kF32, "", {0, 64, 1024, -1, 0, -1, 2, 2}, nullptr},
  };
  const KernelTable t{"x86-64-linux-avx2-fma-f16c", "synthetic", entries, 3};
  const KernelTable ranged{"x86-64-linux-avx2-fma-f16c", "synthetic", entries, 4};
  const auto name = [&](int64_t m, int64_t threads) {
    return std::string(
        runtime::select_kernel(t, "Gemm", f32_identity(), m, 64, 64, threads).kernel->name);
  };
  EXPECT_EQ(name(64, 1), "one_thread");
  EXPECT_EQ(name(64, 2), "two_to_four");
  EXPECT_EQ(name(1, 4), "two_to_four");
  EXPECT_EQ(name(65, 1), "large");
  EXPECT_EQ(name(65, 2), "large");
  // Outside every bucket, one whose thread range holds the count wins over a nearer one that
  // does not: at M = 300, N = 64 on 1 thread "large" (any thread count), on 2 as well.
  EXPECT_EQ(name(300, 1), "large");
  EXPECT_EQ(name(300, 2), "large");
  // On 8 threads no small-M bucket holds the count; "large" is the only bucket that does.
  EXPECT_EQ(name(8, 8), "large");
  const auto s = runtime::select_kernel(t, "Gemm", f32_identity(), 64, 64, 64, 2);
  EXPECT_EQ(s.reason,
            "bucket m ..64 n ..512 k ..512 threads 2..4 contains M=64 N=64 K=64 on 2 threads");
  // Every bucket with a thread range, none holding the count: the nearest of all. M = 8, N = 2048
  // on 16 threads: wide_two is log2(16/2) = 3 away, two_to_four log2(2048/512) + log2(16/4) = 4,
  // one_thread 2 + 4.
  std::vector<KernelEntry> only_ranged = {entries[0], entries[1], entries[3]};
  const KernelTable r{"x86-64-linux-avx2-fma-f16c", "synthetic", only_ranged.data(), 3};
  EXPECT_EQ(runtime::select_kernel(r, "Gemm", f32_identity(), 8, 2048, 64, 16).kernel->name,
            std::string("wide_two"));
  // With "large" there too (any thread count), it serves that call instead.
  EXPECT_EQ(runtime::select_kernel(ranged, "Gemm", f32_identity(), 8, 2048, 64, 16).kernel->name,
            std::string("large"));
}

// A call that asks for no DispatchInfo builds no reason text (the hot path); its kernel must be the
// one an explained call names, for every identity linked here, at every level, for shapes inside,
// between and beyond the buckets, and through the per-level groups a PackedB keeps.
TEST(Select, TheChoiceIsTheSameWithAndWithoutItsReason) {
  if (runtime::kernel_target() == "none") GTEST_SKIP() << "this build has no kernels";
  const std::vector<int64_t> sizes = {1,  2,   3,   4,   9,   16,   63,   64,
                                      65, 128, 511, 512, 513, 4096, 11008};
  int compared = 0, distinct_kernels = 0;
  for (const runtime::Level& level : runtime::levels()) {
    for (const runtime::IdentityGroup& g : level.groups) {
      const auto groups = runtime::groups_by_level(g.op, g.identity);
      ASSERT_EQ(groups.size(), runtime::levels().size());
      std::set<const KernelEntry*> seen;
      for (int64_t m : sizes) {
        for (int64_t n : {int64_t{1}, int64_t{64}, int64_t{512}, int64_t{4096}}) {
          for (int64_t k : {int64_t{1}, int64_t{300}, int64_t{4096}, int64_t{8192}}) {
            const runtime::Selection explained = runtime::select_linked(g.op, g.identity, m, n, k);
            const runtime::Selection quiet =
                runtime::select_linked(g.op, g.identity, m, n, k, /*explain=*/false);
            const runtime::Selection grouped =
                runtime::select_linked(g.op, g.identity, m, n, k, false, &groups);
            EXPECT_EQ(quiet.kernel, explained.kernel) << explained.reason;
            EXPECT_EQ(grouped.kernel, explained.kernel) << explained.reason;
            EXPECT_TRUE(quiet.reason.empty()) << quiet.reason;
            EXPECT_FALSE(explained.reason.empty());
            seen.insert(explained.kernel);
            ++compared;
          }
        }
      }
      distinct_kernels += static_cast<int>(seen.size());
    }
  }
  EXPECT_GT(compared, 0);
  // The shapes reach more than one bucket of some identity (else this compares nothing that
  // depends on the shape).
  EXPECT_GT(distinct_kernels, static_cast<int>(runtime::used_groups().size()));
}

// A plain Gemm call without a DispatchInfo remembers its choice per thread (gemm.cc): keyed by
// type, contract, M, N, K, the pool's thread count and the allowed level. The kernel it runs is
// the one a call with a DispatchInfo names (which chooses afresh), for shapes of several buckets
// asked again after the thread count or the level changed; the outputs are the same bits.
TEST(Select, PlainGemmCallsFollowTheThreadCountAndTheLevel) {
  if (runtime::kernel_target() == "none") GTEST_SKIP() << "this build has no kernels";
  std::mt19937_64 rng(testing::variant_seed());
  const std::vector<std::array<int64_t, 3>> shapes = {
      {1, 64, 64}, {16, 64, 64}, {64, 64, 64}, {100, 300, 200}, {260, 160, 96}, {9, 600, 520}};
  std::vector<std::string> caps;
  for (const runtime::KernelLevel& l : runtime::kernel_levels())
    if (l.target == "none" || !cpu_cannot_run(l.target)) caps.push_back(l.target);
  const int previous = set_num_threads(1);
  int calls = 0, on_kernels = 0;
  // Shapes whose kernel changed with the threads or the level among levels that run kernels (not
  // counting "none", whose reference any kernel differs from).
  std::set<std::string> differing;
  for (const FloatContract contract : {FloatContract::kFma, FloatContract::kStrict}) {
    for (const auto& [m, n, k] : shapes) {
      const Tensor a = testing::random_tensor(DType::kFloat32, {m, k}, rng, -2, 2);
      const Tensor b = testing::random_tensor(DType::kFloat32, {k, n}, rng, -2, 2);
      const Tensor c = testing::random_tensor(DType::kFloat32, {n}, rng, -2, 2);
      GemmArgs args;
      args.a = &a;
      args.b = &b;
      args.c = &c;
      args.beta = 0.5f;
      args.contract = contract;
      const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" +
                                std::to_string(k) + " " + to_string(contract);
      std::set<std::string> kernels;
      for (const std::string& cap : caps) {
        const testing::LevelCap capped(cap);
        for (const int threads : {1, 2, 1}) {
          set_num_threads(threads);
          DispatchInfo info;
          const Tensor explained = runtime::gemm(args, &info);
          for (int repeat = 0; repeat < 2; ++repeat) {
            runtime::forget_last_kernel_called();
            const Tensor y = runtime::gemm(args);
            const runtime::KernelEntry* ran = runtime::last_kernel_called();
            const std::string where = shape + " at " + cap + ", " + std::to_string(threads) +
                                      " thread(s), call " + std::to_string(repeat + 1);
            EXPECT_EQ(ran ? std::string(ran->name) : "reference", info.kernel)
                << where << ": " << info.reason;
            EXPECT_TRUE(testing::bit_equal(explained, y, where));
            ++calls;
            on_kernels += ran != nullptr;
          }
          if (info.kernel != "reference") kernels.insert(info.kernel);
        }
      }
      if (kernels.size() > 1) differing.insert(shape);
    }
  }
  set_num_threads(previous);
  EXPECT_GT(on_kernels, 0);
  // Two levels with kernels give some shape other kernels: the remembered choice was asked to
  // change from one kernel to another, not only to repeat (or to give way to the reference).
  if (caps.size() > 2) {
    EXPECT_FALSE(differing.empty());
  }
  std::cout << "[select] " << calls << " plain calls without a DispatchInfo (" << on_kernels
            << " on kernels) ran the kernel an explained call names; " << differing.size() << " of "
            << 2 * shapes.size() << " shapes changed kernel with the level or threads\n";
}

// A tensor the kernels' 32-bit buffers cannot address takes the reference path (checked on shapes:
// nothing this large is allocated).
TEST(Select, TensorsBeyond32BitBuffersTakeTheReference) {
  EXPECT_TRUE(fits_halide_buffer({46340, 46340}, DType::kUInt8));
  EXPECT_FALSE(fits_halide_buffer({1 << 16, 1 << 14}, DType::kFloat64));
  EXPECT_FALSE(fits_halide_buffer({int64_t{1} << 31, 1}, DType::kUInt8));
  if (runtime::kernel_target() == "none") GTEST_SKIP() << "this build has no kernels";
  const Tensor dummy(DType::kFloat64, {});
  GemmArgs args;
  args.a = args.b = args.c = &dummy;
  const int64_t m = 1 << 16, n = 1 << 14, k = 1;
  DispatchInfo info;
  const KernelEntry* e = runtime::choose_kernel(gemm_identity(args), m, n, k,
                                                {{{m, k}, DType::kFloat64},
                                                 {{k, n}, DType::kFloat64},
                                                 {{}, DType::kFloat64},
                                                 {{m, n}, DType::kFloat64}},
                                                &info);
  EXPECT_EQ(e, nullptr);
  EXPECT_EQ(info.kernel, "reference");
  EXPECT_NE(info.reason.find("exceeds the kernels' 32-bit buffers"), std::string::npos)
      << info.reason;
}

// ---- Through the API: what takes the reference path, and says so ----

Tensor f32(Shape s, float v) {
  Tensor t(DType::kFloat32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v + static_cast<float>(i % 7);
  return t;
}

TEST(Fallback, EmptySumAndEmptyOutputTakeTheReference) {
  const Tensor a = f32({3, 0}, 1), b = f32({0, 4}, 1), c = f32({4}, 0.5f);
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  args.c = &c;
  args.beta = 2.0f;
  DispatchInfo info;
  const Tensor y = runtime::gemm(args, &info);
  EXPECT_EQ(info.kernel, "reference");
  EXPECT_NE(info.reason.find("K is 0"), std::string::npos) << info.reason;
  EXPECT_TRUE(testing::bit_equal(gemm(args), y));

  const Tensor a0 = f32({0, 5}, 1), b5 = f32({5, 4}, 1);
  args.a = &a0;
  args.b = &b5;
  const Tensor y0 = runtime::gemm(args, &info);
  EXPECT_EQ(info.kernel, "reference");
  EXPECT_EQ(info.reason, "Y is empty");
  EXPECT_EQ(y0.shape, (Shape{0, 4}));
}

// A call whose identity has no kernel in this build (QLinearMatMul with float16 scales: the shipped
// kernels take float32 ones) runs the reference, bit for bit what run_reference gives, and says so.
TEST(Fallback, IdentityWithoutKernelsTakesTheReference) {
  auto f16 = [](float v) {
    return Tensor::from<uint16_t>(DType::kFloat16, {}, {float_to_float16(v)});
  };
  NamedTensors in;
  in["a"] = Tensor::from<uint8_t>(DType::kUInt8, {2, 3}, {1, 2, 3, 4, 5, 6});
  in["a_scale"] = f16(0.5f);
  in["a_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {1});
  in["b"] = Tensor::from<int8_t>(DType::kInt8, {3, 2}, {-1, 2, 3, -4, 5, 6});
  in["b_scale"] = f16(0.25f);
  in["b_zero_point"] = Tensor::from<int8_t>(DType::kInt8, {}, {0});
  in["y_scale"] = f16(0.125f);
  in["y_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {128});
  DispatchInfo info;
  const Tensor y = runtime::run("QLinearMatMul", in, {}, &info);
  EXPECT_EQ(info.kernel, "reference");
  EXPECT_EQ(info.reason.rfind(testing::no_kernel_prefix("QLinearMatMul"), 0), 0u) << info.reason;
  EXPECT_NE(info.reason.find("scale_type=float16"), std::string::npos) << info.reason;
  EXPECT_TRUE(testing::bit_equal(run_reference("QLinearMatMul", in, {}), y));
}

// ---- Validation: the reference's messages, before anything runs ----

using testing::invalid_argument_message;
std::string error_of(const std::function<void()>& f) { return invalid_argument_message(f); }

TEST(Validation, MessagesAreTheReferences) {
  const Tensor a = f32({3, 5}, 1), b = f32({4, 6}, 1), b_ok = f32({5, 6}, 1),
               c_bad = f32({2, 6}, 1);
  const Tensor i8 = Tensor::from<int8_t>(DType::kInt8, {1, 1}, {1});
  const Tensor f64 = Tensor(DType::kFloat64, {5, 6});
  const Tensor rank3 = f32({1, 3, 5}, 1);
  struct Case {
    const char* name;
    GemmArgs args;
  };
  std::vector<Case> cases;
  auto add = [&](const char* name, const Tensor* x, const Tensor* y, const Tensor* z) {
    GemmArgs g;
    g.a = x;
    g.b = y;
    g.c = z;
    cases.push_back({name, g});
  };
  add("inner dims differ", &a, &b, nullptr);
  add("C does not broadcast", &a, &b_ok, &c_bad);
  add("int8 is not a Gemm type", &i8, &i8, nullptr);
  add("B dtype differs", &a, &f64, nullptr);
  add("A rank 3", &rank3, &b_ok, nullptr);
  add("A missing", nullptr, &b_ok, nullptr);
  for (const Case& c : cases) {
    const std::string expected = error_of([&] { gemm(c.args); });
    ASSERT_NE(expected, "(no InvalidArgument)") << c.name;
    EXPECT_EQ(error_of([&] { runtime::gemm(c.args); }), expected) << c.name;
  }
  // The named entry point: unknown attribute, as run_reference says it.
  NamedTensors in{{"A", a}, {"B", b_ok}};
  EXPECT_EQ(error_of([&] {
              runtime::run("Gemm", in, {{"transC", "1"}});
            }),
            error_of([&] {
              run_reference("Gemm", in, {{"transC", "1"}});
            }));
  EXPECT_EQ(error_of([&] { set_num_threads(-1); }),
            "mmtune::set_num_threads: n=-1 is negative; expected 0 (default) or a thread count");
}

// ---- Halide runtime errors ----

const KernelEntry* linked_f32_kernel() {
  for (const KernelEntry* e : testing::used_entries()) {
    const auto identity = runtime::parse_params(e->identity);
    if (std::string(e->op) == "Gemm" && identity.at("A.type") == "float32" &&
        identity.count("prepacked_b") == 0)  // a prepacked kernel's B is panels
      return e;
  }
  return nullptr;
}

// The API builds every buffer to the kernels' constraints, so the error is provoked one level
// below: a linked kernel called with a C smaller than Y (C is read unclamped). The message names
// the kernel and carries Halide's.
TEST(HalideErrors, MappedToKernelErrorNamingTheKernel) {
  const KernelEntry* k = linked_f32_kernel();
  if (!k) GTEST_SKIP() << "this build has no float32 Gemm kernel";
  const Tensor a = f32({4, 4}, 1), b = f32({4, 4}, 1), c = f32({1, 1}, 1);
  Tensor y(DType::kFloat32, {4, 4});
  auto av = view(a, a.shape), bv = view(b, b.shape), cv = view(c, c.shape), yv = view(y, y.shape);
  const auto fn = reinterpret_cast<runtime::GemmKernelFn>(k->fn);
  try {
    runtime::KernelCall call(*k);
    call.check(fn(call.user_context(), av.raw_buffer(), bv.raw_buffer(), cv.raw_buffer(), 1.0f,
                  1.0f, yv.raw_buffer()));
    FAIL() << "no error from a C smaller than Y";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.kernel(), k->name);
    EXPECT_EQ(e.code(), halide_error_code_access_out_of_bounds);
    const std::string what = e.what();
    EXPECT_NE(what.find(std::string("kernel ") + k->name + " failed"), std::string::npos) << what;
    EXPECT_NE(what.find("Input buffer C"), std::string::npos) << what;
  }
  // (A call outside any KernelCall, as other Halide code in the process makes, goes to the handler
  // that was installed before ours: Halide's default prints and aborts, so it is not tried here.)
  // The next good call through the API is unaffected.
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  EXPECT_TRUE(testing::bit_equal(gemm(args), runtime::gemm(args)));
}

// Each live kernel call gets the messages raised with its user context and no other's, however many
// are live at once: more than the error routing's lock-free slots (64), so that the calls beyond
// them take its locked list; calls ending in any order free their places for later ones.
TEST(HalideErrors, ManyLiveCallsEachGetTheirOwnMessages) {
  const KernelEntry* k = linked_f32_kernel();
  if (!k) GTEST_SKIP() << "this build has no float32 Gemm kernel";
  std::vector<std::unique_ptr<runtime::KernelCall>> calls;
  std::vector<std::string> marks;
  auto open = [&](std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      calls.push_back(std::make_unique<runtime::KernelCall>(*k));
      marks.push_back("mark " + std::to_string(marks.size()));
    }
  };
  auto expect_own_messages = [&] {
    for (std::size_t i = 0; i < calls.size(); ++i)
      if (calls[i]) halide_error(calls[i]->user_context(), marks[i].c_str());
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (!calls[i]) continue;
      try {
        calls[i]->check(-1);
        ADD_FAILURE() << "check(-1) did not throw";
      } catch (const KernelError& e) {
        const std::string what = e.what();
        const std::string tail = "): " + marks[i];
        EXPECT_EQ(what.substr(what.size() - std::min(what.size(), tail.size())), tail) << what;
      }
    }
  };
  open(100);
  expect_own_messages();
  for (std::size_t i = 0; i < calls.size(); i += 3) calls[i].reset();  // ended, out of order
  for (std::size_t i = 0; i < calls.size(); ++i)
    if (calls[i]) {
      calls[i] = std::make_unique<runtime::KernelCall>(*k);  // a fresh message
      marks[i] += " again";
    }
  open(40);
  expect_own_messages();
}

// ---- Threads ----

// The kernels run on mmtune's pool (runtime/host/thread_pool.h): n - 1 workers at n threads, the
// count set_num_threads gives, started and stopped by it; no other pool starts workers.
TEST(Threads, TheKernelsUseTheThreadsSet) {
  if (runtime::kernel_target() == "none") GTEST_SKIP() << "this build has no kernels";
  std::mt19937_64 rng(testing::variant_seed());
  const Tensor a = testing::random_tensor(DType::kFloat32, {256, 256}, rng, -2, 2);
  const Tensor b = testing::random_tensor(DType::kFloat32, {256, 512}, rng, -2, 2);
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  const Tensor expected = gemm(args);
  const int previous = set_num_threads(1);
  const int base = testing::process_threads();
  set_num_threads(3);
  DispatchInfo info;
  EXPECT_TRUE(testing::bit_equal(expected, runtime::gemm(args, &info), "3 threads"));
  const int with_three = testing::process_threads();
  set_num_threads(1);
  EXPECT_TRUE(testing::bit_equal(expected, runtime::gemm(args), "1 thread"));
  const int with_one = testing::process_threads();
  set_num_threads(previous);
  EXPECT_EQ(with_three, base + 2) << info.kernel;
  EXPECT_EQ(with_one, base) << info.kernel;
  std::cout << "[threads] " << info.kernel << ": " << base << " threads at 1, " << with_three
            << " at 3, " << with_one << " at 1 again\n";
}

TEST(Threads, ResultsDoNotDependOnThePoolOrConcurrentCallers) {
  std::mt19937_64 rng(testing::variant_seed());
  const Tensor a = testing::random_tensor(DType::kFloat32, {150, 70}, rng, -2, 2);
  const Tensor b = testing::random_tensor(DType::kFloat32, {70, 300}, rng, -2, 2);
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  const Tensor expected = gemm(args);
  const int previous = set_num_threads(1);
  EXPECT_TRUE(testing::bit_equal(expected, runtime::gemm(args), "1 thread"));
  EXPECT_EQ(set_num_threads(3), 1);
  EXPECT_TRUE(testing::bit_equal(expected, runtime::gemm(args), "3 threads"));
  set_num_threads(previous);
  std::vector<Tensor> results(4);
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) callers.emplace_back([&, i] { results[i] = runtime::gemm(args); });
  for (auto& t : callers) t.join();
  for (const Tensor& r : results)
    EXPECT_TRUE(testing::bit_equal(expected, r, "concurrent callers"));
}

// ---- CPU features ----

TEST(CpuCheck, TargetsThisCpuCannotConfirmAreRefused) {
  EXPECT_EQ(cpu_cannot_run("none"), "this build has no kernels");
  EXPECT_NE(cpu_cannot_run("arm-64-linux-arm_dot_prod"), std::nullopt);
  EXPECT_EQ(cpu_cannot_run("x86-64-linux-sse41-made_up_feature"),
            "mmtune cannot confirm that this CPU has made_up_feature (target "
            "x86-64-linux-sse41-made_up_feature)");
  // Code-generation features are not instructions.
  EXPECT_EQ(cpu_cannot_run("x86-64-linux-user_context-no_asserts"), std::nullopt);
  // Nor is a tuning hint (Halide's host target names the CPU model: tune_znver3).
  EXPECT_EQ(cpu_cannot_run("x86-64-linux-tune_znver3"), std::nullopt);
  // The best level calls use runs here; a level not used says why.
  EXPECT_EQ(cpu_cannot_run(runtime::kernel_target()),
            runtime::kernel_target() == "none"
                ? std::optional<std::string>("this build has no kernels")
                : std::nullopt);
  for (const runtime::KernelLevel& l : runtime::kernel_levels()) {
    EXPECT_EQ(l.used, l.why_unused.empty()) << l.target;
    if (!l.used && l.why_unused.rfind("above the highest level", 0) != 0) {
      EXPECT_EQ(cpu_cannot_run(l.target), l.why_unused) << l.target;
    }
  }
}

// ---- Levels: one library, the best level this CPU runs ----

// A float32 Gemm call (strict contract), and which kernel ran.
DispatchInfo f32_gemm_info() {
  const Tensor a = f32({20, 30}, 1), b = f32({30, 40}, 2);
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  DispatchInfo info;
  EXPECT_TRUE(testing::bit_equal(gemm(args), runtime::gemm(args, &info))) << info.kernel;
  return info;
}

TEST(Levels, TheBestLevelThisCpuRunsIsUsedAndEveryOtherSaysWhyNot) {
  const std::vector<runtime::KernelLevel> levels = runtime::kernel_levels();
  ASSERT_FALSE(levels.empty());
  const char* env = std::getenv("MMTUNE_MAX_KERNEL_TARGET");
  const std::string cap = env ? env : "";
  bool seen_cap = cap.empty();
  std::string first_used;
  for (const runtime::KernelLevel& l : levels) {
    seen_cap |= l.target == cap;
    // Above the cap: unused, saying so; at or below it: used exactly when this CPU runs it.
    if (!seen_cap) {
      EXPECT_FALSE(l.used) << l.target;
      EXPECT_EQ(l.why_unused.rfind("above the highest level allowed", 0), 0u) << l.why_unused;
      continue;
    }
    EXPECT_EQ(l.used, !cpu_cannot_run(l.target).has_value()) << l.target;
    if (l.used && first_used.empty()) first_used = l.target;
  }
  EXPECT_EQ(runtime::kernel_target(), first_used.empty() ? "none" : first_used);
  // Every kernel calls can reach belongs to a used level.
  for (const runtime::KernelInfo& k : runtime::linked_kernel_infos())
    EXPECT_EQ(cpu_cannot_run(k.target), std::nullopt) << k.name << " " << k.target;
}

TEST(Levels, EachUsableLevelServesCallsWhenCappedAndNoneMeansTheReference) {
  int runnable = 0;
  const std::vector<runtime::KernelLevel> levels = runtime::kernel_levels();
  auto rank = [&](const std::string& target) {
    for (std::size_t i = 0; i < levels.size(); ++i)
      if (levels[i].target == target) return static_cast<int>(i);
    return -1;
  };
  for (const runtime::KernelLevel& l : levels) {
    if (l.target == "none" || cpu_cannot_run(l.target)) continue;
    ++runnable;
    const testing::LevelCap cap(l.target);
    EXPECT_EQ(runtime::kernel_target(), l.target);
    // Capped here: this level's kernels and those of lower levels (for identities it lacks).
    for (const runtime::KernelInfo& k : runtime::linked_kernel_infos())
      EXPECT_GE(rank(k.target), rank(l.target)) << k.name << " of " << k.target;
    const DispatchInfo info = f32_gemm_info();
    // (A level may hold only the prepacked float32 kernels, as the AMX level does: the plain call
    // then falls through to the next level.)
    bool level_has_f32 = false;
    for (const runtime::KernelInfo& k : runtime::linked_kernel_infos())
      level_has_f32 |=
          k.target == l.target && k.op == "Gemm" && k.identity.at("A.type") == "float32" &&
          k.identity.at("contract") == "strict" && k.identity.count("prepacked_b") == 0;
    if (level_has_f32) {
      EXPECT_TRUE(info.used_kernel()) << info.reason;
      EXPECT_NE(info.reason.find("(level " + l.target + ")"), std::string::npos) << info.reason;
    }
  }
  {
    const testing::LevelCap none("none");
    EXPECT_EQ(runtime::kernel_target(), "none");
    EXPECT_TRUE(runtime::linked_kernel_infos().empty());
    const DispatchInfo info = f32_gemm_info();
    EXPECT_EQ(info.kernel, "reference");
    EXPECT_EQ(info.reason.rfind("no Gemm kernel in this build (none) computes", 0), 0u)
        << info.reason;
  }
  std::cout << "[levels] " << runnable << " level(s) this CPU runs served a capped call\n";
}

TEST(Levels, AnUnknownCapIsRefusedNamingTheLinkedLevels) {
  const std::string before = runtime::kernel_target();
  const std::string msg = error_of([] { runtime::set_max_kernel_target("x86-64-linux-avx9"); });
  EXPECT_EQ(msg.rfind("mmtune::runtime::set_max_kernel_target: target='x86-64-linux-avx9' is not a "
                      "kernel target of this build; expected one of:",
                      0),
            0u)
      << msg;
  for (const runtime::KernelLevel& l : runtime::kernel_levels())
    EXPECT_NE(msg.find(" " + l.target), std::string::npos) << msg;
  // Refused without effect: calls still use what they used.
  EXPECT_EQ(runtime::kernel_target(), before);
}

// ---- Names (docs/naming.md) ----

TEST(Naming, LinkedKernelsFollowTheGrammar) {
  for (const auto& k : runtime::linked_kernel_infos()) {
    EXPECT_EQ(k.name, kernel_name(k.op, k.identity, k.schedule, k.target)) << k.name;
  }
  EXPECT_EQ(dtype_code("bfloat16"), "bf16");
  EXPECT_EQ(dtype_code("int8"), "s8");
  EXPECT_EQ(dtype_code("uint64"), "u64");
  EXPECT_EQ(dtype_code("float8e4m3fnuz"), "f8e4m3fnuz");
  // The brief's example of a quantized name.
  EXPECT_EQ(kernel_name("QLinearMatMul",
                        {{"a.type", "uint8"},
                         {"b.type", "int8"},
                         {"y.type", "uint8"},
                         {"scale_type", "float32"},
                         {"requant", "float32"}},
                        {{"tile_rows", "6"},
                         {"tile_vectors", "2"},
                         {"k_unroll", "4"},
                         {"n_block", "256"},
                         {"pack_b", "true"},
                         {"parallel", "true"}},
                        "x86-64-linux-avx2-fma-f16c"),
            "qlinear_matmul_u8_s8_u8_f32rq__x86_avx2_6x16k4n256pt");
  // float8: the formats name the types, no requantization mode; the sum is float64, so one SSE4.1
  // vector holds 2 lanes (a 4 x 1-vector tile is 4 x 2).
  EXPECT_EQ(kernel_name("QLinearMatMul",
                        {{"a.type", "uint8"},
                         {"b.type", "uint8"},
                         {"y.type", "uint8"},
                         {"a_format", "float8e4m3fn"},
                         {"b_format", "float8e5m2"},
                         {"y_format", "float8e4m3fn"},
                         {"scale_type", "float16"},
                         {"requant", "float32"}},
                        {{"tile_rows", "4"},
                         {"tile_vectors", "1"},
                         {"n_block", "0"},
                         {"pack_b", "false"},
                         {"parallel", "false"}},
                        "x86-64-linux-sse41"),
            "qlinear_matmul_f8e4m3fn_f8e5m2_f8e4m3fn_f16scale__x86_sse41_4x2k4");
}

// Every committed database (built or not): names follow the grammar, schedules fit the target,
// identities are the keys a canonical call makes, buckets are "any" or bounded objects.
TEST(Naming, ShippedDatabasesAreConsistent) {
  int kernels = 0;
  for (const auto& entry : fs::directory_iterator(testing::source_dir() + "/tuned")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const nlohmann::json db = nlohmann::json::parse(in);
    const std::string target = db.at("target");
    EXPECT_EQ(entry.path().stem().string(), target);
    const schedules::TargetInfo ti = schedules::target_info(target);
    for (const auto& k : db.at("kernels")) {
      const std::string name = k.at("name");
      std::map<std::string, std::string> identity, schedule;
      for (const auto& [key, v] : k.at("params").items()) identity[key] = v.get<std::string>();
      const auto params = k.at("schedule").get<schedules::Schedule>();
      schedule = params.generator_params();
      EXPECT_EQ(name, kernel_name(k.at("op"), identity, schedule, target)) << entry.path();
      EXPECT_FALSE(k.at("provenance").get<std::string>().empty()) << name;
      // A kernel tuned for prepacked weights: its call's identity plus prepacked_b=true.
      const bool prepacked = identity.count("prepacked_b") > 0;
      if (prepacked) {
        EXPECT_EQ(identity.at("prepacked_b"), "true") << name;
        identity.erase("prepacked_b");
      }
      if (k.at("op") == "Gemm") {
        const DType t = *dtype_from_name(identity.at("A.type"));
        // The identity a canonical call of this type and contract computes.
        const Tensor x(t, {1, 1});
        GemmArgs args;
        args.a = args.b = args.c = &x;
        args.contract = *float_contract_from_string(identity.at("contract"));
        // (Validated as the kernel it is: a prepacked one reads B prepacked, e.g. copy_b.)
        KernelIdentity kernel = gemm_identity(args);
        if (prepacked) kernel.params["prepacked_b"] = "true";
        EXPECT_EQ(params.validate(ti, accumulator_of(kernel)), std::nullopt) << name;
        EXPECT_EQ(gemm_identity(args).params, identity) << name;
        if (!ti.fma) {  // contract=fma needs a fused multiply-add
          EXPECT_EQ(identity.at("contract"), "strict") << name;
        }
      }
      ++kernels;
    }
  }
  EXPECT_GE(kernels, 10);
}

}  // namespace
}  // namespace mmtune

namespace mmtune {
namespace {

// ---- Hostile sizes: a clear error before anything is allocated ----

// An output above the limit (MMTUNE_MAX_OUTPUT_BYTES / set_max_output_bytes) is refused by the
// reference, the JIT and the runtime alike, naming the output, its size and the limit.
TEST(HostileSizes, OutputsAboveTheLimitAreRefused) {
  const int64_t previous = set_max_output_bytes(int64_t{1} << 20);
  const Tensor a(DType::kFloat32, {2048, 1}), b(DType::kFloat32, {1, 2048});  // Y: 16 MiB
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  const std::string want =
      "Gemm: Y would be float32 [2048,2048] (4194304 elements of 4 bytes), more "
      "than the output limit of 1048576 bytes";
  EXPECT_NE(testing::invalid_argument_message([&] { gemm(args); }).find(want), std::string::npos);
  EXPECT_NE(testing::invalid_argument_message([&] { gemm_halide(args, {}); }).find(want),
            std::string::npos);
  EXPECT_NE(testing::invalid_argument_message([&] { runtime::gemm(args); }).find(want),
            std::string::npos);
  set_max_output_bytes(previous);
  EXPECT_EQ(max_output_bytes(), previous);
  EXPECT_NO_THROW(gemm(args));
}

// Element counts beyond 64 bits are refused (the output's shape is the product of two inputs').
TEST(HostileSizes, ElementCountsBeyond64BitsAreRefused) {
  const Tensor a(DType::kUInt8, {int64_t{1} << 32, 0}), b(DType::kUInt8, {0, int64_t{1} << 32});
  NamedTensors in;
  in.emplace("a", a);
  in.emplace("b", b);
  for (const char* s : {"a_scale", "b_scale", "y_scale"})
    in.emplace(s, Tensor::from<float>(DType::kFloat32, {}, {1}));
  for (const char* z : {"a_zero_point", "b_zero_point", "y_zero_point"})
    in.emplace(z, Tensor(DType::kUInt8, {}));
  const std::string msg =
      testing::invalid_argument_message([&] { run_reference("QLinearMatMul", in, {}); });
  EXPECT_NE(msg.find("more than 2^63 elements"), std::string::npos) << msg;
  EXPECT_EQ(testing::invalid_argument_message([&] { runtime::run("QLinearMatMul", in, {}); }), msg);
  EXPECT_EQ(testing::invalid_argument_message([&] { run_halide("QLinearMatMul", in, {}, {}); }),
            msg);
}

// An extent beyond Halide's 32 bits: the JIT refuses it with a sentence rather than make a
// truncated view (the runtime takes the reference path for such calls:
// Select.TensorsBeyond32BitBuffers...).
TEST(HostileSizes, ExtentsBeyondHalideBuffersAreRefusedByTheJit) {
  const Tensor a(DType::kFloat32, {int64_t{1} << 31, 0}), b(DType::kFloat32, {0, 0});
  GemmArgs args;
  args.a = &a;
  args.b = &b;
  const std::string msg = testing::invalid_argument_message([&] { gemm_halide(args, {}); });
  EXPECT_NE(msg.find("Gemm: A is float32 [2147483648,0], beyond the 32-bit Halide buffers"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace mmtune

namespace mmtune {
namespace {

// On x86-64 every build links kernels: a build that ended up with none (MMTUNE_TARGET=none, or a
// host the configure step could not read) would pass every runtime suite by skipping its kernel
// tests. MMTUNE_ALLOW_NO_KERNELS=1 accepts it knowingly (e.g. a reference-only build).
TEST(Build, X86BuildsLinkKernels) {
#if defined(__x86_64__)
  const char* allow = std::getenv("MMTUNE_ALLOW_NO_KERNELS");
  if (allow && std::string(allow) == "1") GTEST_SKIP() << "MMTUNE_ALLOW_NO_KERNELS=1";
  EXPECT_NE(runtime::kernel_target(), "none")
      << "this x86-64 build links no kernels: the runtime suites would skip their kernel tests";
  EXPECT_FALSE(runtime::linked_kernel_infos().empty());
#else
  GTEST_SKIP() << "kernels are built for x86-64 hosts only so far";
#endif
}

}  // namespace
}  // namespace mmtune
