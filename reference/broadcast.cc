// Numpy-style broadcasting helpers.
#include "reference/broadcast.h"

#include <algorithm>

namespace mmtune {

std::optional<Shape> broadcast_shapes(const Shape& x, const Shape& y) {
  const std::size_t rank = std::max(x.size(), y.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const int64_t dx = i < rank - x.size() ? 1 : x[i - (rank - x.size())];
    const int64_t dy = i < rank - y.size() ? 1 : y[i - (rank - y.size())];
    if (dx != dy && dx != 1 && dy != 1) return std::nullopt;
    out[i] = dx == 1 ? dy : dx;
  }
  return out;
}

bool broadcasts_to(const Shape& x, const Shape& target) {
  if (x.size() > target.size()) return false;
  const std::size_t off = target.size() - x.size();
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] != 1 && x[i] != target[off + i]) return false;
  }
  return true;
}

std::vector<int64_t> broadcast_strides(const Shape& x, const Shape& target) {
  MMTUNE_CHECK(broadcasts_to(x, target), shape_str(x) << " to " << shape_str(target));
  std::vector<int64_t> strides(target.size(), 0);
  const std::size_t off = target.size() - x.size();
  int64_t stride = 1;
  for (std::size_t i = x.size(); i-- > 0;) {
    strides[off + i] = x[i] == 1 ? 0 : stride;
    stride *= x[i];
  }
  return strides;
}

bool IndexWalker::next() {
  for (std::size_t d = shape_.size(); d-- > 0;) {
    if (++index_[d] < shape_[d]) return true;
    index_[d] = 0;
  }
  return false;
}

}  // namespace mmtune
