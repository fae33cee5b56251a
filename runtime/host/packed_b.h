// Prepacked B: the weights of a matmul copied once into the panels a kernel's inner loop reads
// (and, for 8-bit integer B, their column sums), so that repeated calls with the same weights do no
// packing. Shared by the runtime (mmtune::runtime::prepack_b) and the JIT path (the variant tests
// run prepacked kernels of random schedules through it). No libHalide.
//
// The packed form is the one the generators' prepacked_b kernels read (generators/matmul_core.cc,
// schedules/matmul_pipeline.h): a flat 2-D buffer of B's dtype (Halide dims (d0, d1)),
//   grouped K (k_group g > 1):  P(kk + g * jj, kg + G * jp) = B[kg * g + kk][jp * panel + jj],
//                               zero where kg * g + kk >= K;
//   packed, g = 1:              P(jj, k + K * jp)           = B[k][jp * panel + jj];
// columns past N repeat column N - 1 (they feed outputs never stored) up to whole strips of the
// schedule (n_block; else whole panels), which it computes past N; G is the number of K groups a
// panel holds (packed_groups). A layout that packs nothing reads B itself.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "reference/tensor.h"

namespace mmtune {

// The part of a kernel's data layout a prepacked B depends on.
struct PanelLayout {
  int panel = 1;        // columns per panel
  int k_group = 1;      // K consumed in groups of k_group
  bool pack_b = false;  // B read from panels (always with k_group > 1)
  bool dot8 = false;    // an 8-bit integer sum: K groups in blocks of at most 2^15 products
  int strip = 0;        // columns per strip (n_block, a multiple of panel; 0: none)
  // A block's K groups rounded up to a multiple of this (16 for the AMX form: whole 64-byte tile
  // steps; schedules::MatmulLayout::group_align), the padding zero.
  int group_align = 1;
  bool packs() const { return pack_b || k_group > 1; }
  bool operator==(const PanelLayout& o) const {
    return panel == o.panel && k_group == o.k_group && pack_b == o.pack_b && dot8 == o.dot8 &&
           strip == o.strip && group_align == o.group_align;
  }
  std::string to_string() const;  // "panels of 32 columns, K in groups of 4"
};

// The layout a cpu_matmul schedule (its generator parameters, as the kernel tables list them)
// builds on `target` for an accumulator of `acc_bits` (exact: an integer sum, whose K may be
// grouped). It restates schedules::CpuMatmulParams::layout for the runtime, which links no
// schedules; tests/runtime/packed_b_test.cc compares the two over the template's whole space.
PanelLayout panel_layout(const std::string& target,
                         const std::map<std::string, std::string>& schedule, int acc_bits,
                         bool exact, bool dot8);

// K groups per panel: ceil(K / g), rounded up to whole blocks for 8-bit sums, each block's groups
// to a multiple of group_align (the kernels read that many; generators/matmul_core.cc
// build_dot8_matmul).
int64_t packed_groups(int64_t k, const PanelLayout& l);
// Panels of an N-column B: whole strips (or panels) covering N.
int64_t packed_panels(int64_t n, const PanelLayout& l);

// The shape {d1, d0} of pack_b_panels(b, l) for a (K, N) B that `l` packs.
Shape packed_shape(int64_t k, int64_t n, const PanelLayout& l);

// B (K, N), a dense row-major tensor, in the packed form of `l` (B itself when l packs nothing):
// a tensor of B's dtype and shape {d1, d0}, in `storage` (its contents unspecified; its capacity
// reused when it holds the packing).
Tensor pack_b_panels(const Tensor& b, const PanelLayout& l, Bytes storage = {});

// Column sums of an 8-bit integer B (K, N): sum over k of B[k][j], mod 2^32 (uint32, N).
Tensor column_sums_mod32(const Tensor& b);

// A 2-D B prepacked for one kernel layout: what a prepacked_b kernel reads instead of B (the same
// for every batch entry of a QLinearMatMul).
struct PackedOperand {
  const Tensor* panels = nullptr;       // pack_b_panels(b, layout)
  const Tensor* column_sums = nullptr;  // column_sums_mod32(b) (8-bit integers), else nullptr
};

}  // namespace mmtune
