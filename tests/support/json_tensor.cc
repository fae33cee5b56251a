// JSON tensors of the worked examples.
#include "tests/support/json_tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "reference/codecs.h"

namespace mmtune::testing {
namespace {

// Rounds x to the narrow format by choosing, among the pattern that float32 rounding gives and its
// two neighbours, the value nearest to x (ties: even pattern). Obviously correct, unlike a chain of
// two roundings (double -> float32 -> narrow can round twice).
uint16_t nearest_narrow(double x, uint16_t (*encode)(float), float (*decode)(uint16_t)) {
  if (std::isnan(x)) return encode(std::numeric_limits<float>::quiet_NaN());
  const uint16_t mid = encode(static_cast<float>(x));
  uint16_t best = mid;
  double best_err = std::fabs(static_cast<double>(decode(mid)) - x);
  for (int delta : {-1, 1}) {
    const uint16_t c = static_cast<uint16_t>(mid + delta);
    // Stay within the same sign and below the NaN/Inf patterns.
    if ((c & 0x8000) != (mid & 0x8000)) continue;
    const double v = decode(c);
    if (std::isnan(v)) continue;
    const double err = std::fabs(v - x);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return best;
}

}  // namespace

uint16_t double_to_float16(double x) {
  return nearest_narrow(x, float_to_float16, float16_to_float);
}
uint16_t double_to_bfloat16(double x) {
  return nearest_narrow(x, float_to_bfloat16, bfloat16_to_float);
}

Tensor tensor_from_json(const nlohmann::json& j) {
  const std::string name = j.at("dtype").get<std::string>();
  const auto dtype = dtype_from_name(name);
  if (!dtype) throw std::runtime_error("unknown dtype " + name);
  Tensor t(*dtype, j.at("shape").get<Shape>());
  const auto& data = j.at("data");
  if (static_cast<int64_t>(data.size()) != t.numel())
    throw std::runtime_error("data size mismatch");
  for (int64_t i = 0; i < t.numel(); ++i) {
    const auto& v = data[static_cast<std::size_t>(i)];
    auto put_int = [&](auto type_tag) {
      using T = decltype(type_tag);
      const auto x = v.get<int64_t>();
      if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          x > static_cast<int64_t>(std::numeric_limits<T>::max())) {
        throw std::runtime_error("value out of range for " + name);
      }
      t.data<T>()[i] = static_cast<T>(x);
    };
    switch (*dtype) {
      case DType::kInt8:
        put_int(int8_t{});
        break;
      case DType::kUInt8:
        put_int(uint8_t{});
        break;
      case DType::kInt32:
        put_int(int32_t{});
        break;
      case DType::kInt64:
        put_int(int64_t{});
        break;
      // strtof on the number's text: one rounding from decimal to float32.
      case DType::kFloat32:
        t.data<float>()[i] = std::strtof(v.dump().c_str(), nullptr);
        break;
      case DType::kFloat64:
        t.data<double>()[i] = v.get<double>();
        break;
      case DType::kFloat16:
        t.data<uint16_t>()[i] = double_to_float16(v.get<double>());
        break;
      case DType::kBFloat16:
        t.data<uint16_t>()[i] = double_to_bfloat16(v.get<double>());
        break;
      default:
        throw std::runtime_error("tensor_from_json: unsupported dtype " + name);
    }
  }
  return t;
}

}  // namespace mmtune::testing
