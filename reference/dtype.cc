// Names, sizes and classes of the element types.
#include "reference/dtype.h"

#include <array>

namespace mmtune {
namespace {

struct Info {
  DType type;
  const char* name;
  std::size_t size;
};

constexpr std::array<Info, 16> kInfo = {{
    {DType::kInt8, "int8", 1},
    {DType::kUInt8, "uint8", 1},
    {DType::kInt16, "int16", 2},
    {DType::kUInt16, "uint16", 2},
    {DType::kInt32, "int32", 4},
    {DType::kUInt32, "uint32", 4},
    {DType::kInt64, "int64", 8},
    {DType::kUInt64, "uint64", 8},
    {DType::kFloat16, "float16", 2},
    {DType::kBFloat16, "bfloat16", 2},
    {DType::kFloat32, "float32", 4},
    {DType::kFloat64, "float64", 8},
    {DType::kFloat8E4M3FN, "float8e4m3fn", 1},
    {DType::kFloat8E4M3FNUZ, "float8e4m3fnuz", 1},
    {DType::kFloat8E5M2, "float8e5m2", 1},
    {DType::kFloat8E5M2FNUZ, "float8e5m2fnuz", 1},
}};

const Info& info(DType t) { return kInfo[static_cast<std::size_t>(t)]; }

}  // namespace

const char* dtype_name(DType t) { return info(t).name; }
std::size_t dtype_size(DType t) { return info(t).size; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const Info& i : kInfo) {
    if (name == i.name) return i.type;
  }
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  return std::nullopt;
}

bool is_float8(DType t) {
  return t == DType::kFloat8E4M3FN || t == DType::kFloat8E4M3FNUZ || t == DType::kFloat8E5M2 ||
         t == DType::kFloat8E5M2FNUZ;
}
bool is_8bit_integer(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
bool is_signed_integer(DType t) {
  return t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64;
}
bool is_integer(DType t) {
  return is_signed_integer(t) || t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 ||
         t == DType::kUInt64;
}
bool is_float(DType t) { return !is_integer(t); }

std::string all_dtype_names() {
  std::string s;
  for (const Info& i : kInfo) {
    if (!s.empty()) s += ", ";
    s += i.name;
  }
  return s;
}

}  // namespace mmtune
