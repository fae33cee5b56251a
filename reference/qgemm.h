// com.microsoft QGemm (ONNX Runtime contrib op), bit-exact reference (SEMANTICS.md §4, §8.5).
#pragma once

#include "tensor.h"

namespace mmtune {

struct QGemmArgs {
  const Tensor* a = nullptr;             // uint8 or int8, (M,K) or (K,M) with transA
  const Tensor* a_scale = nullptr;       // float32, scalar or [1]
  const Tensor* a_zero_point = nullptr;  // same type as a, scalar or [1]
  const Tensor* b = nullptr;             // uint8 or int8, (K,N) or (N,K) with transB
  const Tensor* b_scale = nullptr;       // float32, scalar, [1] or [N]
  const Tensor* b_zero_point = nullptr;  // same type as b, same rank and length as b_scale
  const Tensor* c = nullptr;             // optional int32, broadcast to (M,N), added before scaling
  const Tensor* y_scale = nullptr;       // optional float32, scalar or [1]
  const Tensor* y_zero_point = nullptr;  // optional uint8/int8; absent -> float32 output
  float alpha = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
};

struct QGemmPlan {
  int64_t m = 0, k = 0, n = 0;
  DType out_dtype = DType::kFloat32;
};

QGemmPlan validate_qgemm(const QGemmArgs& args);
Tensor qgemm(const QGemmArgs& args);

}  // namespace mmtune
