// A lowering pass for the cpu_matmul template's AMX form: several accumulator tiles at once.
//
// Halide 21's AMX lowering (ExtractTileOperations) gives each 16x16 tile of the output its own
// sequence: tilezero, K/64 x (tileloadd A, tileloadd B, tdpbusd), tilestored, epilogue, one
// accumulator tile at a time: two tile loads per tile multiply. The pass runs after it (Halide
// runs custom passes on the lowered statement) and unrolls and jams the loops over tiles: the
// innermost loop whose body is a tile's sequence by jams[0] (two tiles of a row or a column of
// tiles), then the loop around it by jams[1] (its copies' inner loops fused: two by two). The
// tiles of one iteration are zeroed together, summed in one K loop whose step multiplies each tile
// in turn, with each distinct tile load bound once (A's tile shared by the tiles of one row, B's by
// those of one column: two by two, four loads per four multiplies), then copied and requantized
// tile by tile in order. Each tile keeps its own accumulator and its K order: the outputs are
// exactly those of the loops it replaces. A loop not in the form it knows (the branches with tail
// guards, whose tiles sit under conditions) is left as it is; a loop whose tile count is not a
// multiple of the factor runs its last tiles in the original form.
#pragma once

#include <Halide.h>

#include <utility>
#include <vector>

namespace mmtune::schedules {

// The pass, for Halide::Pipeline::add_custom_lowering_pass: jams[0] tiles of the innermost loop
// over tiles at once, jams[1] of the loop around it (a factor of 1: that loop as it is).
class AmxJam : public Halide::Internal::IRMutator {
 public:
  explicit AmxJam(std::vector<int> jams) : jams_(std::move(jams)) {}

 protected:
  using Halide::Internal::IRMutator::visit;
  Halide::Internal::Stmt visit(const Halide::Internal::For* op) override;

 private:
  std::vector<int> jams_;
};

}  // namespace mmtune::schedules
