// float16 <-> float32 as Halide expressions, exact on every target (reference/codecs.h's rules).
// Halide converts float16 in hardware where the target has it (x86 F16C, ARM fp16) and emulates it
// elsewhere; Halide 21's emulation is wrong for some inputs (NaN and -0 decode to the wrong values:
// an SSE4.1 float16 Gemm gave -Inf for -0 x Inf, found by the runtime suite of the SSE4.1 kernels).
// Without the hardware, these convert with integer arithmetic on the bit patterns.
#pragma once

#include "Halide.h"

namespace mmtune::gen {

// Whether `t` converts float16 in hardware (the conversions below then are Halide's casts).
bool has_float16_conversions(const Halide::Target& t);

// The float32 value of a float16 Expr (exact, every pattern: NaN stays NaN with its sign).
Halide::Expr float16_to_float32(const Halide::Expr& f16, const Halide::Target& t);

// The float16 nearest a float32 Expr, ties to even, subnormals included, overflow to +-Inf; NaN
// gives a NaN (callers that output NaN canonicalize it themselves).
Halide::Expr float32_to_float16(const Halide::Expr& f32, const Halide::Target& t);

}  // namespace mmtune::gen
