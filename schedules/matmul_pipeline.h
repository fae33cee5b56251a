// The handle a schedule template schedules: the Funcs of a matmul pipeline, filled in by a
// generator's algorithm (generators/matmul_core builds the sum; each generator adds its epilogue
// and producers), each labelled with its role so that every template knows what to do with it.
#pragma once

#include <vector>

#include "Halide.h"
#include "schedules/matmul_layout.h"

namespace mmtune::schedules {

struct MatmulPipeline {
  // out(j, i): the Output; its definition inlines acc. j and i (column, row) are the pure vars of
  // out, acc and part.
  Halide::Func out;
  Halide::Var j{"j"}, i{"i"};
  // acc(j, i): pure definition, then one update over r (or rb), K in order.
  Halide::Func acc{"acc"};
  // K (grouped: r.x = kk within a group, r.y = the group).
  Halide::RDom r;
  // When defined: packed_b(jj, k, jp) = b(jp * panel + jj, k); grouped:
  // packed_b(kk, jj, kg, jp) = b(jp * panel + jj, kg * g + kk).
  Halide::Func packed_b{"packed_b"};
  // When defined (grouped): packed_a(kk, kg, i) = a(kg * g + kk, i).
  Halide::Func packed_a{"packed_a"};
  // K in order (k_group 1): the A operand the sum reads, a(k, i), so that a template may stage it
  // (e.g. a copy of a block's rows with the rows innermost, which the inner loop reads from one
  // pointer).
  Halide::Func a;
  // When defined (grouped exact 8-bit sums): acc sums the K blocks' partial sums over rb in uint32
  // (wrap-around defined); part(j, i, kb) sums block kb's products over r in int32, where it cannot
  // overflow (a block holds at most 2^15 products of magnitude below 2^16).
  Halide::Func part{"part"};
  Halide::RDom rb;
  // layout.amx: part(jj, i, jp) is instead the int32 sum of column jp * panel + jj over the whole
  // K (r: r.x the 64 bytes of a tile step, r.y the step), computed in an AMX tile; amx_out(jj, i,
  // jp) its copy to memory, and acc(j, i) = amx_out(j % panel, i, j / panel) as uint32 (pure).
  Halide::Func amx_out{"amx_out"};
  // What the algorithm was built for.
  MatmulLayout layout;
  // When defined, B arrives prepacked by the host (runtime/host/packed_b.h) and `prepacked` reads
  // it (widened to the accumulation type); packed_b is then a view of it that stays inline, never
  // computed. Its flat 2-D form of packed_b: grouped prepacked(kk + g * jj, kg + KG * jp), else
  // prepacked(jj, k + K * jp), with KG the K groups a panel holds (runtime/host/packed_b.h). Used
  // when layout.packs_b(); otherwise a prepacked B is B itself. The host pads it with whole panels
  // up to the strips and tiles a schedule computes past n (no clamp in the inner loop: it would
  // cost the dense loads).
  Halide::Func prepacked;

  // Producers besides the sum, by role:
  // f(j, ...) read per output column (e.g. B's column sums): computed where B is packed.
  std::vector<Halide::Func> per_column;
  // read everywhere (e.g. per-call scales): once per call.
  std::vector<Halide::Func> per_call;
  // f(i) = one integer sum over K of row i, wrapping (e.g. A's row sums, so the order is free):
  // on CPUs where the rows' tiles are computed (per tile row, row block or task), each sum kept in
  // vector lanes across K (rfactor); once per call on a GPU.
  std::vector<Halide::Func> row_sums;
  // f(i, kb) = the int32 sum of one block of row i's K groups (kk, kg), read from packed_a, that a
  // row_sums Func adds over kb (layout.row_sums_grouped): computed per row of that sum.
  std::vector<Halide::Func> row_sum_blocks;
  // f(k, i) or f(i), rows independent (e.g. per-row quantization of A): once per call, rows in
  // parallel.
  std::vector<Halide::Func> per_row;
  // f(j) of the call's inputs alone (e.g. a per-column requantization multiplier): once per call,
  // vectorized.
  std::vector<Halide::Func> column_params;

  // Conditions on the call's parameters (most specific first; layout.epilogue_cases) under which
  // out's definition simplifies: it is written as selects on them (e.g. A's parameters one for all
  // rows: the requantization multiplier and zero-point terms are then per column, computed once per
  // call in column_params instead of per output), and the template gives each a branch of out's
  // loop nest, in which the selects resolve.
  std::vector<Halide::Expr> epilogue_cases;
};

}  // namespace mmtune::schedules
