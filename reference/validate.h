// Input checks shared by every operator and every entry point (reference, runtime, CLI). Each throws
// InvalidArgument with a sentence naming the operator, the input, its value and the rule.
#pragma once

#include <initializer_list>
#include <string>

#include "reference/tensor.h"

namespace mmtune {

// "int8, uint8 or float8e4m3fn"
std::string dtype_list(std::initializer_list<DType> types);

const Tensor& require_present(const std::string& op, const std::string& name, const Tensor* t);
void require_dtype(const std::string& op, const std::string& name, const Tensor& t,
                   std::initializer_list<DType> allowed);
// `t` must have the dtype of `ref` (e.g. a zero point and its tensor).
void require_same_dtype(const std::string& op, const std::string& name, const Tensor& t,
                        const std::string& ref_name, const Tensor& ref);
void require_rank(const std::string& op, const std::string& name, const Tensor& t, int64_t rank);
// A scalar or a 1-D tensor with one element.
void require_single_value(const std::string& op, const std::string& name, const Tensor& t);
// The byte count matches the shape (guards tensors built by hand through the C++ API).
void require_consistent(const std::string& op, const std::string& name, const Tensor& t);
// Every element of a float tensor (any float dtype) is finite and > 0.
void require_positive_finite(const std::string& op, const std::string& name, const Tensor& t);

}  // namespace mmtune
