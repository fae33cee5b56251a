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

// The exact sum of 8-bit integer products, mod 2^32, into p: acc is uint32, so its wrap-around is
// defined (Halide treats Int(32) overflow as undefined: its simplifier assumes none, and LLVM's
// adds carry nsw). Sequential K (k_group 1): acc += uint32(a * b). Grouped K: int32 partial sums of
// K blocks of at most 2^15 products (|a * b| < 2^16, so a block's sum never leaves int32), added in
// uint32; the int32 group sums keep the form Halide maps to vpdpbusd / vpmaddwd / sdot.
void build_dot8_matmul(schedules::MatmulPipeline& p, const Halide::Func& a, const Halide::Func& b,
                       const Halide::Expr& k_extent);

// Which axis of a logical matrix (column, row) runs along K: A's columns, B's rows.
enum class KAxis { kColumns, kRows };

// A 2-D input read as (column, row) with its edges clamped, optionally transposed; the K axis's
// clamp marked likely not to bind.
Halide::Func clamped_matrix(const Halide::Func& input, const Halide::Expr& width,
                            const Halide::Expr& height, bool transpose, const std::string& name,
                            KAxis k_axis);
// The same, clamped in rows only: for a consumer that reads columns in range by construction (a
// reduction over K), so that its columns load as dense vectors.
Halide::Func clamped_rows(const Halide::Func& input, const Halide::Expr& height,
                          const std::string& name);

// fma(a, b, c) with one rounding (IEEE fusedMultiplyAdd) for float32/float64: Halide 21 has no fma
// (Halide::fma arrives later), so this calls LLVM's llvm.fma intrinsic as a pure extern, which
// Halide vectorizes lane by lane and LLVM's SLP vectorizer regroups into vfmadd. It is fused
// whatever the fast-math flags of the module; the pipeline must still contain a strict_float
// expression so that Halide compiles the module without fast-math (which would let LLVM split the
// intrinsic on a target without FMA, and mark NaN/Inf poison). A target without FMA computes it in
// software (libm fma): callers refuse such targets.
Halide::Expr fused_multiply_add(const Halide::Expr& a, const Halide::Expr& b,
                                const Halide::Expr& c);

// The saturating conversion of an integral value to `t` (the references' saturate_cast).
Halide::Expr saturate_to(const Halide::Type& t, const Halide::Expr& v);

// The mmtune dtype of a Halide scalar type (float8 travels as uint8).
DType dtype_of(const Halide::Type& t);

}  // namespace mmtune::gen
