// One spelling per enum value: a table of (name, value) pairs from which printing, parsing and the
// list of allowed names derive (the CLI's attributes, the generators' GeneratorParams, kernel
// identities and the databases all read the same table).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace mmtune {

template <class E>
using EnumNames = std::map<std::string, E>;

template <class E>
const char* enum_name(const EnumNames<E>& names, E value) {
  for (const auto& [name, v] : names) {
    if (v == value) return name.c_str();
  }
  return "?";
}

template <class E>
std::optional<E> enum_from_name(const EnumNames<E>& names, std::string_view name) {
  auto it = names.find(std::string(name));
  if (it == names.end()) return std::nullopt;
  return it->second;
}

// "fma, strict": the allowed names, for error messages.
template <class E>
std::string enum_name_list(const EnumNames<E>& names) {
  std::string s;
  for (const auto& [name, v] : names) s += (s.empty() ? "" : ", ") + name;
  return s;
}

}  // namespace mmtune
