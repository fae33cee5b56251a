// The part every operator shares: C(j, i) = sum over k of a(k, i) * b(j, k), K ascending, with B
// optionally packed into panels the inner loop reads contiguously. Halide dims are (column, row).
#pragma once

#include <functional>

#include "Halide.h"

namespace mmtune::gen {

struct MatmulCore {
  Halide::Func acc{"acc"};            // acc(j, i): pure definition 0, one update over r
  Halide::Func packed_b{"packed_b"};  // packed_b(jj, k, jp) = b(jp * panel + jj, k), when packing;
                                      // grouped: packed_b(kk, jj, kg, jp) = b(jp * panel + jj, kg * g + kk)
  Halide::Func packed_a{"packed_a"};  // grouped only: packed_a(kk, kg, i) = a(kg * g + kk, i)
  Halide::RDom r;                     // r (or r.x = kk, r.y = kg when grouped)
  Halide::Var j{"j"}, i{"i"};
  int panel = 0;
  int k_group = 1;  // > 1: K is consumed in groups of k_group (exact integer sums only), so that
                    // the target's dot-product instructions (pmaddwd, vpdpwssd, vpdpbusd) apply
};

// `a(k, i)` and `b(j, k)` must be readable anywhere (clamp the inputs at their edges: the schedule
// computes whole register tiles). The accumulator starts at `zero`; `step(acc, a, b)` gives the next
// accumulator value, applied in K order.
using MatmulStep = std::function<Halide::Expr(Halide::Expr, Halide::Expr, Halide::Expr)>;
MatmulCore build_matmul(const Halide::Func& a, const Halide::Func& b, const Halide::Expr& k_extent,
                        const Halide::Expr& zero, const MatmulStep& step, int panel, bool pack_b,
                        int k_group = 1);

// A 2-D input read as (column, row) with its edges clamped, optionally transposed.
Halide::Func clamped_matrix(const Halide::Func& input, const Halide::Expr& width,
                            const Halide::Expr& height, bool transpose, const std::string& name);

// Round half to even to an integer-valued float (Halide's round() is ties-to-even), and the
// saturating integer conversions the references use.
Halide::Expr saturate_to(const Halide::Type& t, const Halide::Expr& integral_value);

}  // namespace mmtune::gen
