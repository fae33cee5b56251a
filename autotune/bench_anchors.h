// The 8-bit anchors of `mmtune bench`: oneDNN's int8 matmul primitive and XNNPACK's quantized
// fully-connected operators (autotune/blas.h), the prepacked int8 paths of those libraries, set up
// on the bench's input copies of an integer QLinearMatMul and compared with the reference.
//
// Every 8-bit type is reached from the other by flipping the top bit of each byte (x ^ 0x80 is
// x + 128 from int8 to uint8 and x - 128 the other way, zero points alike), which leaves each
// difference x - zero point, and so the operation, unchanged:
//   onednn_matmul  a and y in their own types (oneDNN takes u8 or s8 for both), b as s8 (a uint8
//                  b flipped before the reorder, once);
//   xnnpack_qu8    all three as uint8: b flipped before packing (once); an int8 a flipped once per
//                  input copy and an int8 y flipped back for the comparison, both outside the
//                  timed call (a caller with int8 activations would pay those passes each call);
//   xnnpack_qs8    all three as int8, the same way; qs8's weights are symmetric, so b's zero point
//                  is 0 in int8 (-128 for a uint8 b): where the bench's is not, the anchor computes
//                  another operation and is compared with the reference run with that zero point.
// Where oneDNN refuses a nonzero weights zero point it is 0 the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autotune/tune_inputs.h"
#include "reference/tensor.h"
#include "runtime/host/kernel_identity.h"

namespace mmtune::cli {

// "onednn_matmul", "xnnpack_qu8", "xnnpack_qs8" where `id` is QLinearMatMul with int8 or uint8 a,
// b and y; none otherwise.
std::vector<std::string> int8_anchors(const KernelIdentity& id);

// Anchor `name` set up on `copies` (timing_calls of a 2-D QLinearMatMul, per-tensor scales and
// zero points): the weights of every copy prepacked, the output made once, and copy 0 run once
// and compared with `want` (the reference's result on copy 0), or with the reference's result
// with the anchor's weights zero point where that differs from the bench's.
struct Int8Anchor {
  std::function<void(std::size_t)> call;  // the timed call on copy ci
  std::function<void(int)> set_threads;   // before the timed calls at a thread count
  // Untimed, before (true) and after (false) each sample: its thread pool's workers woken / sent
  // to sleep (or none).
  std::function<void(bool)> around;
  std::string kernel;    // the library's build and the implementation it chose
  std::string note;      // what it computes and what is timed
  std::string not_same;  // empty when it computes the bench's operation; else how it differs
  int64_t wrong = 0;     // outputs that differ from the reference's
};
Int8Anchor prepare_int8_anchor(const std::string& name, const std::vector<tune::OpCall>& copies,
                               const Tensor& want);

}  // namespace mmtune::cli
