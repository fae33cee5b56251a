// The handle a schedule template schedules: the Funcs of a matmul pipeline, filled in by a
// generator's algorithm (generators/matmul_core builds the sum; each generator adds its epilogue
// and producers), each labelled with its role so that every template knows what to do with it.
#pragma once

#include <vector>

#include "Halide.h"
#include "schedules/matmul_layout.h"

namespace mmtune::schedules {

struct MatmulPipeline {
  Halide::Func out;            // out(j, i): the Output; its definition inlines acc
  Halide::Var j{"j"}, i{"i"};  // column and row: the pure vars of out and acc
  Halide::Func acc{"acc"};     // acc(j, i): pure definition, then one update over r, K order
  Halide::RDom r;              // K (grouped: r.x = kk within a group, r.y = kg the group)
  Halide::Func packed_b{
      "packed_b"};  // when defined: packed_b(jj, k, jp) = b(jp * panel + jj, k);
                    // grouped: packed_b(kk, jj, kg, jp) = b(jp * panel + jj, kg * g + kk)
  Halide::Func packed_a{
      "packed_a"};      // when defined (grouped): packed_a(kk, kg, i) = a(kg * g + kk, i)
  MatmulLayout layout;  // what the algorithm was built for

  // Producers besides the sum, by role:
  std::vector<Halide::Func> per_column;  // f(j, ...) read per output column (e.g. B's column sums):
                                         // computed where B is packed
  std::vector<Halide::Func> per_call;    // read everywhere (e.g. A's row sums): once per call
  std::vector<Halide::Func> per_row;     // f(k, i) or f(i), rows independent (e.g. per-row
                                         // quantization of A): once per call, rows in parallel
};

}  // namespace mmtune::schedules
