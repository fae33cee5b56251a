// The integer core shared by QLinearMatMul and QGemm: the exact wrap-around sum
// sum_k (a - za_i)(b - zb_j) (mod 2^32), with the zero points folded out of the inner loop
// (sum ab - za_i sum_k b - zb_j sum_k a + K za_i zb_j, which is the same value mod 2^32), and the
// requantization rules of reference/rounding.h.
#pragma once

#include "Halide.h"
#include "schedules/matmul_pipeline.h"

namespace mmtune::gen {

struct QuantCore {
  Halide::Func column_sums{"column_sums"};  // column_sums(j) = sum_k b(j, k)   (uint32)
  Halide::Func row_sums{"row_sums"};        // row_sums(i) = sum_k a(k, i)      (uint32)
  Halide::Expr k;
  // Added to A and its zero point when the layout flips A's sign (MatmulLayout::flip_a_sign:
  // -128 for uint8 A, +128 for int8 A; row_sums are of the flipped A); 0 otherwise.
  int a_offset = 0;
  // Whether column_sums is computed by the pipeline (a per_column producer); else it is read from
  // an input (a prepacked B's sums).
  bool column_sums_computed = false;
  // The exact int32 accumulator of p's (j, i) given the zero points (int32 Exprs of row i / column
  // j).
  Halide::Expr accumulator(const schedules::MatmulPipeline& p, const Halide::Expr& za,
                           const Halide::Expr& zb) const;
  // For A's zero point za one for all rows (an Expr of neither i nor j) and B's zb(x) per column:
  // offset(x) = K za' zb(x) - za' column_sums(x) (uint32), added to p as a producer (per column
  // where the column sums are computed, else once per call with the inputs).
  Halide::Func column_offset(schedules::MatmulPipeline& p, const Halide::Expr& za,
                             const Halide::Func& zb) const;
  // The same accumulator as accumulator(p, za, zb(j)) from that offset: acc(j, i) + offset(j) -
  // zb_row * row_sums(i), with zb_row B's zero point of column j (zb(j), or zb(0) where it is one
  // for all columns: the row's term is then one per row).
  Halide::Expr accumulator(const schedules::MatmulPipeline& p, const Halide::Func& offset,
                           const Halide::Expr& zb_row) const;
};

// a(k, i) and b(j, k) are the clamped 8-bit inputs (int8 or uint8); a_rows(k, i) is A clamped in
// rows only (clamped_rows), which the row sums read (K in range). Builds the raw sum of a*b into p
// (p.layout set) and adds the column sums (per column) and row sums to p's producers. With
// `prepacked_column_sums` (a prepacked B: runtime/host/packed_b.h), the column sums are read from
// it instead of computed.
QuantCore build_quant_matmul(schedules::MatmulPipeline& p, const Halide::Func& a,
                             const Halide::Func& a_rows, const Halide::Func& b,
                             const Halide::Expr& k,
                             const Halide::Func& prepacked_column_sums = Halide::Func());

// B's zero points zb(x) copied densely once per call (added to p's per-call producers): their
// buffer may have a zero stride, and read per output through it they would be a gather.
Halide::Func dense_zero_points(schedules::MatmulPipeline& p, const Halide::Func& zb);

// y = sat(RNE(fl32(fl32(acc) * m)) + zp) to `out` (int8/uint8): requant mode float32.
Halide::Expr requantize_float32(const Halide::Expr& acc, const Halide::Expr& m,
                                const Halide::Expr& zp, const Halide::Type& out);
// y = sat(RNE(fl64(fl64(acc * m) + zp))): requant mode float64.
Halide::Expr requantize_float64(const Halide::Expr& acc, const Halide::Expr& m,
                                const Halide::Expr& zp, const Halide::Type& out);

// Rounds a float32 to `scale_type` (float32: identity; float16 / bfloat16: RNE) and back.
Halide::Expr round_to_scale_type(const Halide::Expr& x, const Halide::Type& scale_type,
                                 const Halide::Target& target);

}  // namespace mmtune::gen
