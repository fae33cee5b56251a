// numpy.matmul shape rules (ONNX MatMulShapeInference), shared by QLinearMatMul and its validation.
#pragma once

#include <string>

#include "tensor.h"

namespace mmtune {

struct MatMulShape {
  Shape batch;  // broadcast batch dims of the output
  int64_t m = 0, k = 0, n = 0;
  Shape a_promoted;  // a's shape with a 1-D a read as [1, K]
  Shape b_promoted;  // b's shape with a 1-D b read as [K, 1]
  Shape out;         // batch + [M] (unless a is 1-D) + [N] (unless b is 1-D)

  Shape a_full() const;    // batch + [M, K]: the view the kernels iterate
  Shape b_full() const;    // batch + [K, N]
  Shape out_full() const;  // batch + [M, N]
};

// Validates ranks, K and batch broadcasting; InvalidArgument names `op`, the inputs and the rule.
MatMulShape matmul_shape(const std::string& op, const std::string& a_name, const Shape& a,
                         const std::string& b_name, const Shape& b);

}  // namespace mmtune
