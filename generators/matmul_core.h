// The part every operator shares: C(j, i) = sum over k of a(k, i) * b(j, k), K ascending, with B
// optionally packed into panels the inner loop reads contiguously, built into the pipeline handle
// the schedule template schedules. Halide dims are (column, row).
#pragma once

#include <functional>
#include <string>

#include "Halide.h"
#include "reference/dtype.h"
#include "schedules/matmul_pipeline.h"

namespace mmtune::gen {

// `a(k, i)` and `b(j, k)` must be readable anywhere (clamp the inputs at their edges: schedules
// compute whole register tiles). The accumulator starts at `zero`; `step(acc, a, b)` gives the next
// accumulator value, applied in K order. Fills p.acc, p.r, p.packed_b and p.packed_a as p.layout
// asks (K groups only for exact integer sums: the padding beyond K is zero in both operands).
using MatmulStep =
    std::function<Halide::Expr(const Halide::Expr&, const Halide::Expr&, const Halide::Expr&)>;
void build_matmul(schedules::MatmulPipeline& p, const Halide::Func& a, const Halide::Func& b,
                  const Halide::Expr& k_extent, const Halide::Expr& zero, const MatmulStep& step);

// A 2-D input read as (column, row) with its edges clamped, optionally transposed.
Halide::Func clamped_matrix(const Halide::Func& input, const Halide::Expr& width,
                            const Halide::Expr& height, bool transpose, const std::string& name);

// The saturating conversion of an integral value to `t` (the references' saturate_cast).
Halide::Expr saturate_to(const Halide::Type& t, const Halide::Expr& v);

// The mmtune dtype of a Halide scalar type (float8 travels as uint8).
DType dtype_of(const Halide::Type& t);

}  // namespace mmtune::gen
