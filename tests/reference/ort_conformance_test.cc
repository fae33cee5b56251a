// The reference against ONNX Runtime (vectors of tests/vectors/gen_ort.py): QLinearMatMul-10 in
// requant=float32 mode and com.microsoft QGemm bit for bit, Gemm float32/float64 within a stated
// tolerance (MLAS sums in another order) with the count of bit-identical outputs reported.
#include <gtest/gtest.h>

#include "tests/reference/conformance_support.h"

namespace mmtune {
namespace {

TEST(ort_conformance, EveryCaseMatchesOnnxRuntime) { testing::run_conformance_suite("ort"); }

}  // namespace
}  // namespace mmtune
