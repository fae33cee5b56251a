// numpy.matmul shape rules.
#include "reference/matmul_shape.h"

#include "reference/broadcast.h"

namespace mmtune {

Shape MatMulShape::a_full() const {
  Shape s = batch;
  s.push_back(m);
  s.push_back(k);
  return s;
}
Shape MatMulShape::b_full() const {
  Shape s = batch;
  s.push_back(k);
  s.push_back(n);
  return s;
}
Shape MatMulShape::out_full() const {
  Shape s = batch;
  s.push_back(m);
  s.push_back(n);
  return s;
}

MatMulShape matmul_shape(const std::string& op, const std::string& a_name, const Shape& a,
                         const std::string& b_name, const Shape& b) {
  if (a.empty())
    invalid(op, a_name, " is a scalar (shape []); matrix multiplication needs rank >= 1");
  if (b.empty())
    invalid(op, b_name, " is a scalar (shape []); matrix multiplication needs rank >= 1");
  shape_numel(a, op + ": " + a_name);
  shape_numel(b, op + ": " + b_name);
  MatMulShape s;
  s.a_promoted = a.size() == 1 ? Shape{1, a[0]} : a;
  s.b_promoted = b.size() == 1 ? Shape{b[0], 1} : b;
  s.m = s.a_promoted[s.a_promoted.size() - 2];
  s.k = s.a_promoted.back();
  const int64_t kb = s.b_promoted[s.b_promoted.size() - 2];
  s.n = s.b_promoted.back();
  if (s.k != kb) {
    invalid(op, a_name, " has shape ", shape_str(a), " and ", b_name, " has shape ", shape_str(b),
            ": the last dim of ", a_name, " (K=", s.k, ") must equal the ",
            b.size() == 1 ? "length" : "second-to-last dim", " of ", b_name, " (", kb, ")");
  }
  const Shape a_batch(s.a_promoted.begin(), s.a_promoted.end() - 2);
  const Shape b_batch(s.b_promoted.begin(), s.b_promoted.end() - 2);
  const auto batch = broadcast_shapes(a_batch, b_batch);
  if (!batch) {
    invalid(op, "the batch dims of ", a_name, " ", shape_str(a_batch), " and ", b_name, " ",
            shape_str(b_batch),
            " do not broadcast (numpy rules: aligned from the right, each pair "
            "equal or one of them 1)");
  }
  s.batch = *batch;
  s.out = s.batch;
  if (a.size() > 1) s.out.push_back(s.m);
  if (b.size() > 1) s.out.push_back(s.n);
  shape_numel(s.out_full(), op + ": output");
  return s;
}

}  // namespace mmtune
