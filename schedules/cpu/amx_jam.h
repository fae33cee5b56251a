// A lowering pass for the cpu_matmul template's AMX form: several accumulator tiles at once.
//
// Halide 21's AMX lowering (ExtractTileOperations) gives each tile of the output its own
// sequence: tilezero, K/64 x (tileloadd A, tileloadd B, tdpbusd), tilestored, epilogue, one
// accumulator tile at a time. Two tile loads per multiply bound it (and the epilogue of one tile
// waits for the whole sum of the next). The pass unrolls and jams the innermost loop over tiles:
// `jam` consecutive tiles of that loop (rows of tiles, or columns) are zeroed together, summed in
// one K loop whose step multiplies each tile in turn (a tile load shared by the tiles that read the
// same A rows or B columns is then loaded once per tile, after LLVM's common-subexpression pass),
// stored, then each one's epilogue in order. Each tile's sum keeps its K order and its own
// accumulator; the outputs are exactly those of the loop it replaces. A loop that is not in that
// form (the guarded ragged-edge loops, for one) is left as it is; a loop whose extent is not a
// multiple of jam runs its last tiles in the original form.
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
  // Loops jammed so far (over every function this pass lowered).
  int jammed() const { return jammed_; }

 protected:
  using Halide::Internal::IRMutator::visit;
  Halide::Internal::Stmt visit(const Halide::Internal::For* op) override;

 private:
  std::vector<int> jams_;
  int jammed_ = 0;
};

}  // namespace mmtune::schedules
