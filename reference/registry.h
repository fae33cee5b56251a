// The operators by name: their inputs and attributes as ONNX states them, and a generic entry point
// that maps named tensors and text attributes onto the typed reference functions. The CLI and the
// tests go through here, so every entry point shares one set of names, defaults and checks.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gemm.h"
#include "qgemm.h"
#include "qlinear_matmul.h"
#include "quant_matmul_dequant.h"
#include "tensor.h"

namespace mmtune {

struct InputSpec {
  std::string name;
  bool optional;
};

struct AttrSpec {
  std::string name;
  std::string default_value;
  std::string doc;
};

struct OpSpec {
  std::string name;               // ONNX name, e.g. "QLinearMatMul"
  std::string alias;              // snake case, e.g. "qlinear_matmul"
  std::vector<InputSpec> inputs;  // in ONNX input order
  std::vector<AttrSpec> attrs;
};

using NamedTensors = std::map<std::string, Tensor>;
using Attributes = std::map<std::string, std::string>;  // name -> value as typed on a command line

const std::vector<OpSpec>& operator_specs();
// By ONNX name or alias; InvalidArgument listing the known operators otherwise.
const OpSpec& find_operator(std::string_view name);

// Rejects input or attribute names the operator does not have, and missing required inputs.
void check_names(const OpSpec& op, const NamedTensors& inputs, const Attributes& attrs);

// Typed arguments from named tensors and text attributes: checks the names, parses the attributes
// (InvalidArgument on a malformed value). The returned args point into `inputs`.
QLinearMatMulArgs qlinear_matmul_args(const NamedTensors& inputs, const Attributes& attrs);
GemmArgs gemm_args(const NamedTensors& inputs, const Attributes& attrs);
QGemmArgs qgemm_args(const NamedTensors& inputs, const Attributes& attrs);
QuantMatmulDequantArgs quant_matmul_dequant_args(const NamedTensors& inputs,
                                                 const Attributes& attrs);

// Evaluates `op` with the reference: checks names, parses attributes (InvalidArgument on a
// malformed value), validates, computes.
Tensor run_reference(std::string_view op, const NamedTensors& inputs, const Attributes& attrs);

}  // namespace mmtune
