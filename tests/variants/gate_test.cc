// The gate itself (autotune/gate.h): each way a kernel can be wrong without changing the values it
// writes must be caught — an element it does not write (whatever the expected value: the output
// starts as its complement), a write past either end of its output, a result taken from the
// reference when a kernel should have run.
#include "autotune/gate.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/variants/variant_support.h"

namespace mmtune {
namespace {

// A stand-in kernel: writes `expected` into the placed output, except what the test breaks.
struct FakeKernel {
  const Tensor& expected;
  int64_t skip = -1;    // an element left unwritten
  int64_t overrun = 0;  // bytes written past the end (> 0) or before the start (< 0)
  bool runs = true;     // false: returns the expected tensor without running a kernel
  bool timed = true;    // false: counts its call but not the time inside it
  Tensor operator()(JitRun& run) const {
    if (!runs) return expected;
    const std::size_t size = dtype_size(expected.dtype);
    for (int64_t i = 0; i < expected.numel(); ++i) {
      if (i != skip) std::memcpy(run.output + i * size, expected.bytes.data() + i * size, size);
    }
    if (overrun > 0) run.output[expected.bytes.size() + overrun - 1] = 0x42;
    if (overrun < 0) run.output[overrun] = 0x42;
    ++run.kernel_calls;
    if (timed) run.kernel_seconds += 1e-6;
    Tensor y(expected.dtype, expected.shape);
    std::memcpy(y.bytes.data(), run.output, y.bytes.size());
    return y;
  }
};

TEST(Gate, CatchesUnwrittenElementsOverrunsAndReferenceResults) {
  // Zeros are the values a zero-filled output would have matched by luck.
  Tensor expected(DType::kUInt8, {3, 5});
  expected.data<uint8_t>()[7] = 255;
  testing::GateCounts counts;
  EXPECT_TRUE(testing::gated_equal(expected, FakeKernel{expected}, true, "correct", counts));
  EXPECT_EQ(counts.kernel_cases, 1);
  for (int64_t skip : {int64_t{0}, int64_t{7}, int64_t{14}}) {
    const auto r = testing::gated_equal(expected, FakeKernel{expected, skip}, true, "skip", counts);
    EXPECT_FALSE(r) << "an unwritten element " << skip << " passed";
  }
  for (int64_t overrun : {int64_t{1}, int64_t{kGuardBytes}, int64_t{-1}, -int64_t{kGuardBytes}}) {
    const auto r =
        testing::gated_equal(expected, FakeKernel{expected, -1, overrun}, true, "overrun", counts);
    EXPECT_FALSE(r) << "a write " << overrun << " bytes outside passed";
    EXPECT_NE(std::string(r.message()).find("guard region"), std::string::npos) << r.message();
  }
  // The tuner's samples are the seconds counted inside the kernels: a call counted without them
  // is refused.
  const auto untimed = testing::gated_equal(expected, FakeKernel{expected, -1, 0, true, false},
                                            true, "untimed", counts);
  EXPECT_FALSE(untimed);
  EXPECT_NE(std::string(untimed.message()).find("took 0 s"), std::string::npos)
      << untimed.message();
  const auto ref =
      testing::gated_equal(expected, FakeKernel{expected, -1, 0, false}, true, "ref", counts);
  EXPECT_FALSE(ref);
  EXPECT_NE(std::string(ref.message()).find("no kernel ran"), std::string::npos) << ref.message();
  // Where no kernel is expected (K = 0), a reference result is counted as such.
  EXPECT_TRUE(
      testing::gated_equal(expected, FakeKernel{expected, -1, 0, false}, false, "k0", counts));
  EXPECT_EQ(counts.reference_cases, 1);
  // Floats: an unwritten NaN output is caught too (bitwise complement, compared bit for bit).
  Tensor nan = Tensor::from<uint32_t>(DType::kFloat32, {2}, {0x7FC00000u, 0x80000000u});
  EXPECT_FALSE(testing::gated_equal(nan, FakeKernel{nan, 0}, true, "nan", counts));
  EXPECT_FALSE(testing::gated_equal(nan, FakeKernel{nan, 1}, true, "-0", counts));
}

}  // namespace
}  // namespace mmtune
