// The generators' float16 conversions where the target has no float16 hardware (Halide 21's own
// emulation gets NaN and -0 wrong): every float16 pattern decoded, float32 inputs encoded (the
// float16 edge cases and every 97th float32 pattern), against reference/codecs.h; and the float16
// kernels compiled for targets without F16C, through the gate, on special data.
#include "generators/float16_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "Halide.h"
#include "autotune/halide_ops.h"
#include "reference/codecs.h"
#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

const char* kNoF16c[] = {"x86-64-linux-sse41", "x86-64-linux-avx2-fma"};

TEST(Float16Codec, EmulatedConversionsMatchTheReference) {
  for (const char* target : kNoF16c) {
    const Halide::Target t(target);
    ASSERT_FALSE(gen::has_float16_conversions(t)) << target;
    Halide::Var x("x");
    // Decode: all 65536 patterns.
    Halide::ImageParam h(Halide::UInt(16), 1, "h");
    Halide::Func dec("dec");
    dec(x) = Halide::reinterpret(
        Halide::UInt(32), gen::float16_to_float32(Halide::reinterpret(Halide::Float(16), h(x)), t));
    dec.vectorize(x, 8, Halide::TailStrategy::GuardWithIf);
    Halide::Runtime::Buffer<uint16_t> hb(65536);
    for (int i = 0; i < 65536; ++i) hb(i) = static_cast<uint16_t>(i);
    Halide::Runtime::Buffer<uint32_t> out(65536);
    ASSERT_EQ(Halide::Pipeline(dec).compile_to_callable({h}, t)(hb, out), 0);
    int decode_bad = 0;
    for (int i = 0; i < 65536; ++i) {
      const float want = float16_to_float(static_cast<uint16_t>(i));
      uint32_t want_bits;
      std::memcpy(&want_bits, &want, 4);
      float got;
      const uint32_t got_bits = out(i);
      std::memcpy(&got, &got_bits, 4);
      // NaN: any NaN of the pattern's sign (the reference canonicalizes the payload).
      const bool same = std::isnan(want)
                            ? std::isnan(got) && std::signbit(got) == std::signbit(want)
                            : got_bits == want_bits;
      decode_bad += !same;
    }
    EXPECT_EQ(decode_bad, 0) << target;
    // Encode: float16 edge cases (every value, the ties between neighbours and their float32
    // neighbours, both signs) and every 97th float32 pattern.
    std::vector<uint32_t> inputs;
    for (int i = 0; i < 0x7C00; ++i) {
      const float v = float16_to_float(static_cast<uint16_t>(i));
      const float next = float16_to_float(static_cast<uint16_t>(i + 1));
      for (float w : {v, (v + next) / 2, std::nextafter((v + next) / 2, 0.0f),
                      std::nextafter((v + next) / 2, 1e9f)}) {
        uint32_t b;
        std::memcpy(&b, &w, 4);
        inputs.push_back(b);
        inputs.push_back(b | 0x80000000u);
      }
    }
    for (uint64_t p = 0; p < (uint64_t{1} << 32); p += 97)
      inputs.push_back(static_cast<uint32_t>(p));
    Halide::ImageParam f(Halide::UInt(32), 1, "f");
    Halide::Func enc("enc");
    enc(x) = Halide::reinterpret(
        Halide::UInt(16), gen::float32_to_float16(Halide::reinterpret(Halide::Float(32), f(x)), t));
    enc.vectorize(x, 8, Halide::TailStrategy::GuardWithIf);
    Halide::Runtime::Buffer<uint32_t> fb(inputs.data(), static_cast<int>(inputs.size()));
    Halide::Runtime::Buffer<uint16_t> eb(static_cast<int>(inputs.size()));
    ASSERT_EQ(Halide::Pipeline(enc).compile_to_callable({f}, t)(fb, eb), 0);
    int64_t encode_bad = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      float v;
      std::memcpy(&v, &inputs[i], 4);
      const uint16_t want = float_to_float16(v);
      const uint16_t got = eb(static_cast<int>(i));
      encode_bad += std::isnan(v) ? !((got & 0x7C00) == 0x7C00 && (got & 0x3FF) != 0) : got != want;
    }
    EXPECT_EQ(encode_bad, 0) << target;
    std::cout << "[variants] float16 codec without F16C (" << target
              << "): 65536 patterns decoded, " << inputs.size() << " float32 inputs encoded, "
              << decode_bad + encode_bad << " mismatches\n";
  }
}

// float16 Gemm, QLinearMatMul with float16 scales and QuantMatmulDequant compiled for targets
// without F16C, on plain, huge, tiny and special data, through the gate.
TEST(Float16Codec, KernelsWithoutF16CAreBitExact) {
  std::mt19937_64 rng(testing::variant_seed());
  testing::GateCounts counts;
  for (const char* target : kNoF16c) {
    const schedules::TargetInfo ti = schedules::target_info(target);
    const HalideVariant v{schedules::default_schedule(ti, {32, false}), target};
    for (const auto& s : testing::matmul_shapes(4, 16)) {
      for (int kind = 0; kind < 4; ++kind) {
        const auto data = static_cast<testing::FloatData>(kind);
        Tensor a = testing::random_float_tensor(DType::kFloat16, {s.m, s.k}, rng, data);
        Tensor b = testing::random_float_tensor(DType::kFloat16, {s.k, s.n}, rng, data);
        Tensor c = testing::random_float_tensor(DType::kFloat16, {s.n}, rng, data);
        GemmArgs args;
        args.a = &a;
        args.b = &b;
        args.c = &c;
        args.alpha = 0.75f;
        args.beta = kind % 2 ? 0.5f : 0.0f;
        ASSERT_TRUE(testing::gated_equal(
            gemm(args), [&](JitRun& r) { return gemm_halide(args, v, &r); },
            s.k > 0 && s.m * s.n > 0,
            std::string(target) + " float16 Gemm " + s.category + " " +
                testing::float_data_name(data),
            counts));
      }
    }
    const HalideVariant q{schedules::default_schedule(ti, {32, true}), target};
    for (const testing::QlmCase& c : testing::qlinear_matmul_cases(4, 16)) {
      const testing::QlmInputs in = testing::make_qlinear_matmul_inputs(
          DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat16, c, rng);
      const QLinearMatMulArgs args = in.args(RequantMode::kFloat32);
      Tensor expected;
      try {
        expected = qlinear_matmul(args);
      } catch (const InvalidArgument&) {
        continue;  // a float16 multiplier that overflows: refused by both (checked elsewhere)
      }
      ASSERT_TRUE(testing::gated_equal(
          expected, [&](JitRun& r) { return qlinear_matmul_halide(args, q, &r); },
          expected.numel() > 0 && c.a.back() > 0,
          std::string(target) + " QLinearMatMul float16 scales " + c.name, counts));
    }
  }
  std::cout << "[variants] float16 kernels without F16C: " << counts.summary()
            << ", 0 mismatches\n";
}

}  // namespace
}  // namespace mmtune
