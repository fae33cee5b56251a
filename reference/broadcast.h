// Numpy-style broadcasting helpers shared by the operators and their validation.
#pragma once

#include <optional>
#include <vector>

#include "tensor.h"

namespace mmtune {

// Bidirectional (numpy) broadcast of two shapes; nullopt when some aligned pair differs and neither
// is 1.
std::optional<Shape> broadcast_shapes(const Shape& x, const Shape& y);

// True when `x` broadcasts unidirectionally to `target`: rank(x) <= rank(target) and every
// right-aligned dim of x equals the target's or is 1.
bool broadcasts_to(const Shape& x, const Shape& target);

// Element strides of a C-ordered tensor of shape `x` viewed as `target` (x broadcasts to target):
// one entry per target dim, 0 where x is broadcast (missing or 1).
std::vector<int64_t> broadcast_strides(const Shape& x, const Shape& target);

// Walks every multi-index of `shape` in C order (last index fastest).
class IndexWalker {
 public:
  explicit IndexWalker(Shape shape) : shape_(std::move(shape)), index_(shape_.size(), 0) {}
  const std::vector<int64_t>& index() const { return index_; }
  // Advances; false after the last index.
  bool next();

 private:
  Shape shape_;
  std::vector<int64_t> index_;
};

inline int64_t dot_index(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (std::size_t d = 0; d < index.size(); ++d) off += index[d] * strides[d];
  return off;
}

}  // namespace mmtune
