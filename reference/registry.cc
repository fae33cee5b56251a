// Operators by name: specs, attribute parsing and dispatch to the typed reference functions.
#include "reference/registry.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace mmtune {
namespace {

const Tensor* get(const NamedTensors& in, const char* name) {
  auto it = in.find(name);
  return it == in.end() ? nullptr : &it->second;
}

std::string attr(const OpSpec& op, const Attributes& attrs, const std::string& name) {
  auto it = attrs.find(name);
  if (it != attrs.end()) return it->second;
  for (const AttrSpec& a : op.attrs) {
    if (a.name == name) return a.default_value;
  }
  MMTUNE_CHECK(false, op.name << " has no attribute " << name);
}

int64_t attr_int(const OpSpec& op, const Attributes& attrs, const std::string& name) {
  const std::string v = attr(op, attrs, name);
  errno = 0;
  char* end = nullptr;
  const long long r = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE) {
    invalid(op.name, "attribute ", name, "=", v, " is not an integer");
  }
  return r;
}

float attr_float(const OpSpec& op, const Attributes& attrs, const std::string& name) {
  const std::string v = attr(op, attrs, name);
  char* end = nullptr;
  // strtof rounds the decimal text to the nearest float32, as ONNX stores float attributes.
  const float r = std::strtof(v.c_str(), &end);
  if (v.empty() || *end != '\0') invalid(op.name, "attribute ", name, "=", v, " is not a number");
  if (!std::isfinite(r)) invalid(op.name, "attribute ", name, "=", v, " is not a finite float32");
  return r;
}

template <class E>
E attr_enum(const OpSpec& op, const Attributes& attrs, const std::string& name,
            const EnumNames<E>& names) {
  const std::string v = attr(op, attrs, name);
  const std::optional<E> e = enum_from_name(names, v);
  if (!e) invalid(op.name, "attribute ", name, "=", v, " is not one of ", enum_name_list(names));
  return *e;
}

const std::vector<OpSpec> kSpecs = {
    {"QLinearMatMul",
     "qlinear_matmul",
     {{"a", false},
      {"a_scale", false},
      {"a_zero_point", false},
      {"b", false},
      {"b_scale", false},
      {"b_zero_point", false},
      {"y_scale", false},
      {"y_zero_point", false}},
     {{"opset", "21",
       "ONNX version: 10 (int8/uint8, float32 scales) or 21 (adds float16/bfloat16 "
       "scales and float8)"},
      {"requant", "float32",
       "requantization: float32 (ONNX Runtime) or float64 (ONNX reference)"}}},
    {"Gemm",
     "gemm",
     {{"A", false}, {"B", false}, {"C", true}},
     {{"alpha", "1.0", "float32 scalar multiplier of A*B"},
      {"beta", "1.0", "float32 scalar multiplier of C"},
      {"transA", "0", "non-zero: A is (K, M)"},
      {"transB", "0", "non-zero: B is (N, K)"},
      {"contract", "strict", "float K sum: strict (separate roundings) or fma"}}},
    {"QGemm",
     "qgemm",
     {{"A", false},
      {"a_scale", false},
      {"a_zero_point", false},
      {"B", false},
      {"b_scale", false},
      {"b_zero_point", false},
      {"C", true},
      {"y_scale", true},
      {"y_zero_point", true}},
     {{"alpha", "1.0", "float32 scalar multiplier"},
      {"transA", "0", "non-zero: A is (K, M)"},
      {"transB", "0", "non-zero: B is (N, K)"}}},
    {"QuantMatmulDequant",
     "quant_matmul_dequant",
     {{"x", false},
      {"weight", false},
      {"weight_scale", false},
      {"bias", true},
      {"x_scale", true},
      {"x_offset", true},
      {"smooth_scale", true}},
     {{"x_quant_mode", "pertoken", "pertoken or pertensor"},
      {"transpose_weight", "1", "non-zero: weight is (n, k); zero: (k, n)"}}},
};

}  // namespace

const std::vector<OpSpec>& operator_specs() { return kSpecs; }

const OpSpec& find_operator(std::string_view name) {
  for (const OpSpec& s : kSpecs) {
    if (name == s.name || name == s.alias) return s;
  }
  std::string known;
  for (const OpSpec& s : kSpecs) known += (known.empty() ? "" : ", ") + s.name;
  invalid("mmtune", "unknown operator '", name, "'; known operators: ", known);
}

void check_names(const OpSpec& op, const NamedTensors& inputs, const Attributes& attrs) {
  auto input_list = [&] {
    std::string s;
    for (const InputSpec& i : op.inputs)
      s += (s.empty() ? "" : ", ") + i.name + (i.optional ? "?" : "");
    return s;
  };
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const InputSpec& i : op.inputs) known |= i.name == name;
    if (!known) invalid(op.name, "has no input named '", name, "'; its inputs are ", input_list());
  }
  for (const InputSpec& i : op.inputs) {
    if (!i.optional && inputs.count(i.name) == 0) {
      invalid(op.name, "input ", i.name, " is required but missing (inputs: ", input_list(), ")");
    }
  }
  for (const auto& [name, v] : attrs) {
    bool known = false;
    std::string list;
    for (const AttrSpec& a : op.attrs) {
      known |= a.name == name;
      list += (list.empty() ? "" : ", ") + a.name;
    }
    if (!known) invalid(op.name, "has no attribute named '", name, "'; its attributes are ", list);
  }
}

namespace {
const OpSpec& checked(const char* name, const NamedTensors& in, const Attributes& attrs) {
  const OpSpec& op = find_operator(name);
  check_names(op, in, attrs);
  return op;
}
}  // namespace

QLinearMatMulArgs qlinear_matmul_args(const NamedTensors& in, const Attributes& attrs) {
  const OpSpec& op = checked("QLinearMatMul", in, attrs);
  QLinearMatMulArgs a;
  a.a = get(in, "a");
  a.a_scale = get(in, "a_scale");
  a.a_zero_point = get(in, "a_zero_point");
  a.b = get(in, "b");
  a.b_scale = get(in, "b_scale");
  a.b_zero_point = get(in, "b_zero_point");
  a.y_scale = get(in, "y_scale");
  a.y_zero_point = get(in, "y_zero_point");
  a.opset = static_cast<int>(attr_int(op, attrs, "opset"));
  a.requant = attr_enum(op, attrs, "requant", requant_mode_names());
  return a;
}

GemmArgs gemm_args(const NamedTensors& in, const Attributes& attrs) {
  const OpSpec& op = checked("Gemm", in, attrs);
  GemmArgs a;
  a.a = get(in, "A");
  a.b = get(in, "B");
  a.c = get(in, "C");
  a.alpha = attr_float(op, attrs, "alpha");
  a.beta = attr_float(op, attrs, "beta");
  a.trans_a = attr_int(op, attrs, "transA") != 0;
  a.trans_b = attr_int(op, attrs, "transB") != 0;
  a.contract = attr_enum(op, attrs, "contract", float_contract_names());
  return a;
}

QGemmArgs qgemm_args(const NamedTensors& in, const Attributes& attrs) {
  const OpSpec& op = checked("QGemm", in, attrs);
  QGemmArgs a;
  a.a = get(in, "A");
  a.a_scale = get(in, "a_scale");
  a.a_zero_point = get(in, "a_zero_point");
  a.b = get(in, "B");
  a.b_scale = get(in, "b_scale");
  a.b_zero_point = get(in, "b_zero_point");
  a.c = get(in, "C");
  a.y_scale = get(in, "y_scale");
  a.y_zero_point = get(in, "y_zero_point");
  a.alpha = attr_float(op, attrs, "alpha");
  a.trans_a = attr_int(op, attrs, "transA") != 0;
  a.trans_b = attr_int(op, attrs, "transB") != 0;
  return a;
}

QuantMatmulDequantArgs quant_matmul_dequant_args(const NamedTensors& in, const Attributes& attrs) {
  const OpSpec& op = checked("QuantMatmulDequant", in, attrs);
  QuantMatmulDequantArgs a;
  a.x = get(in, "x");
  a.weight = get(in, "weight");
  a.weight_scale = get(in, "weight_scale");
  a.bias = get(in, "bias");
  a.x_scale = get(in, "x_scale");
  a.x_offset = get(in, "x_offset");
  a.smooth_scale = get(in, "smooth_scale");
  a.x_quant_mode = attr_enum(op, attrs, "x_quant_mode", x_quant_mode_names());
  a.transpose_weight = attr_int(op, attrs, "transpose_weight") != 0;
  return a;
}

Tensor run_reference(std::string_view op_name, const NamedTensors& in, const Attributes& attrs) {
  const std::string op = find_operator(op_name).name;
  if (op == "QLinearMatMul") return qlinear_matmul(qlinear_matmul_args(in, attrs));
  if (op == "Gemm") return gemm(gemm_args(in, attrs));
  if (op == "QGemm") return qgemm(qgemm_args(in, attrs));
  MMTUNE_CHECK(op == "QuantMatmulDequant", op);
  return quant_matmul_dequant(quant_matmul_dequant_args(in, attrs));
}

}  // namespace mmtune
