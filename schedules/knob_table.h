// A schedule template's knob table: every knob declared once (name, type, default, allowed range,
// the values the search draws, its tag in kernel names, a one-line meaning), and the faces that
// derive from it: JSON, Halide generator parameters, range checks, random draws, the name tag and
// the documentation. A template declares its knobs with an X-macro list (see cpu/matmul_params.h)
// that also declares the params struct's fields, so adding a knob is one line.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reference/error.h"

namespace mmtune::schedules {

enum class KnobType { kInt, kBool };

// How a knob appears in the schedule tag of a kernel name (docs/naming.md).
enum class TagStyle {
  kNone,   // not in the tag
  kValue,  // prefix + value; left out when the value is the knob's `tag_omit`
  kLanes,  // prefix + value x the accumulator's lanes (a count of vectors shown as columns)
  kFlag,   // prefix when true
};

template <class P>
struct Knob {
  const char* name;
  KnobType type;
  int default_value;
  int min, max;             // the allowed range (bool: 0..1)
  std::vector<int> search;  // what the search draws from, uniformly (a repeat weights a value)
  const char* tag_prefix;
  TagStyle tag_style;
  int tag_omit;
  const char* meaning;
  bool exact_only;  // changes the order of the K sum: only exact (integer) sums may leave the
                    // default; never drawn for float sums
  int (*get)(const P&);
  void (*set)(P&, int);
};

template <class T>
constexpr KnobType knob_type_of() {
  return std::is_same_v<T, bool> ? KnobType::kBool : KnobType::kInt;
}

// The table of template P, whose name is P::kTemplate.
template <class P>
class KnobTable {
 public:
  explicit KnobTable(std::vector<Knob<P>> knobs) : knobs_(std::move(knobs)) {}
  const std::vector<Knob<P>>& knobs() const { return knobs_; }

  const Knob<P>* find(const std::string& name) const {
    for (const Knob<P>& k : knobs_) {
      if (name == k.name) return &k;
    }
    return nullptr;
  }

  // The defaults of every knob.
  P defaults() const {
    P p;
    for (const Knob<P>& k : knobs_) k.set(p, k.default_value);
    return p;
  }

  bool equal(const P& a, const P& b) const {
    for (const Knob<P>& k : knobs_) {
      if (k.get(a) != k.get(b)) return false;
    }
    return true;
  }

  // The first knob outside its range, as a sentence, or nullopt.
  std::optional<std::string> check_ranges(const P& p) const {
    for (const Knob<P>& k : knobs_) {
      const int v = k.get(p);
      if (v < k.min || v > k.max) {
        std::ostringstream os;
        os << k.name << "=" << v << " is outside " << k.min << ".." << k.max << " (" << k.meaning
           << ")";
        return os.str();
      }
    }
    return std::nullopt;
  }

  // Generator-parameter face: knob name -> value text ("true"/"false" for booleans).
  std::map<std::string, std::string> generator_params(const P& p) const {
    std::map<std::string, std::string> gp;
    for (const Knob<P>& k : knobs_) gp[k.name] = value_text(k, k.get(p));
    return gp;
  }

  // Parses generator parameters: every key must be a knob of this template (an empty value keeps
  // the default); InvalidArgument naming the key otherwise.
  P from_generator_params(const std::map<std::string, std::string>& gp) const {
    P p = defaults();
    for (const auto& [key, text] : gp) {
      const Knob<P>* k = find(key);
      if (!k) invalid("schedule", P::kTemplate, " has no knob '", key, "' (knobs: ", names(), ")");
      if (text.empty()) continue;
      k->set(p, parse_value(*k, text));
    }
    return p;
  }

  // JSON face: {"template": P::kTemplate, knob: value, ...}.
  nlohmann::json to_json(const P& p) const {
    nlohmann::json j = nlohmann::json::object();
    j["template"] = P::kTemplate;
    for (const Knob<P>& k : knobs_) {
      if (k.type == KnobType::kBool) {
        j[k.name] = k.get(p) != 0;
      } else {
        j[k.name] = k.get(p);
      }
    }
    return j;
  }

  // Unknown keys and values of the wrong JSON type are rejected; missing knobs keep the default.
  P from_json(const nlohmann::json& j) const {
    if (!j.is_object())
      invalid("schedule", P::kTemplate, " parameters must be a JSON object, got ", j.dump());
    P p = defaults();
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      const nlohmann::json& v = it.value();
      if (key == "template") {
        if (!v.is_string() || v.get<std::string>() != P::kTemplate) {
          invalid("schedule", "template ", v.dump(), " is not ", P::kTemplate);
        }
        continue;
      }
      const Knob<P>* k = find(key);
      if (!k) invalid("schedule", P::kTemplate, " has no knob '", key, "' (knobs: ", names(), ")");
      if (k->type == KnobType::kBool) {
        if (!v.is_boolean())
          invalid("schedule", P::kTemplate, " knob ", key, "=", v.dump(), " is not true or false");
        k->set(p, v.get<bool>() ? 1 : 0);
      } else {
        if (!v.is_number_integer())
          invalid("schedule", P::kTemplate, " knob ", key, "=", v.dump(), " is not an integer");
        k->set(p, v.get<int>());
      }
    }
    return p;
  }

  // The first knob outside its range, or one that regroups a float sum, as a sentence, or nullopt.
  std::optional<std::string> check(const P& p, bool exact_sum) const {
    if (auto why = check_ranges(p)) return why;
    for (const Knob<P>& k : knobs_) {
      if (k.exact_only && !exact_sum && k.get(p) != k.default_value) {
        std::ostringstream os;
        os << k.name << "=" << k.get(p)
           << " regroups the K sum, which only exact integer sums allow";
        return os.str();
      }
    }
    return std::nullopt;
  }

  // One uniform draw per knob from its search values, in table order (validity is the template's to
  // check); knobs that regroup the sum keep their default for float sums.
  P draw(std::mt19937_64& rng, bool exact_sum) const {
    P p = defaults();
    for (const Knob<P>& k : knobs_) {
      if (k.exact_only && !exact_sum) continue;
      k.set(p, k.search[std::uniform_int_distribution<std::size_t>(0, k.search.size() - 1)(rng)]);
    }
    return p;
  }

  // A neighbour of `p`: one knob (and, half the time, a second) set to another of its searched
  // values; knobs that regroup the sum stay put for float sums (validity is the template's to
  // check).
  P mutate(const P& p, std::mt19937_64& rng, bool exact_sum) const {
    std::vector<const Knob<P>*> open;
    for (const Knob<P>& k : knobs_) {
      if (k.search.size() > 1 && !(k.exact_only && !exact_sum)) open.push_back(&k);
    }
    P out = p;
    if (open.empty()) return out;
    const int changes = std::uniform_int_distribution<int>(0, 1)(rng) + 1;
    for (int c = 0; c < changes; ++c) {
      const Knob<P>& k = *open[std::uniform_int_distribution<std::size_t>(0, open.size() - 1)(rng)];
      for (int attempt = 0; attempt < 8; ++attempt) {
        const int v =
            k.search[std::uniform_int_distribution<std::size_t>(0, k.search.size() - 1)(rng)];
        if (v != k.get(out)) {
          k.set(out, v);
          break;
        }
      }
    }
    return out;
  }

  // The schedule tag of kernel names: each knob's part in table order.
  std::string tag(const P& p, int lanes) const {
    std::ostringstream os;
    for (const Knob<P>& k : knobs_) {
      const int v = k.get(p);
      switch (k.tag_style) {
        case TagStyle::kNone:
          break;
        case TagStyle::kValue:
          if (v != k.tag_omit) os << k.tag_prefix << v;
          break;
        case TagStyle::kLanes:
          os << k.tag_prefix << v * lanes;
          break;
        case TagStyle::kFlag:
          if (v != 0) os << k.tag_prefix;
          break;
      }
    }
    return os.str();
  }

  // "tile_rows, tile_vectors, ..."
  std::string names() const {
    std::string s;
    for (const Knob<P>& k : knobs_) s += (s.empty() ? "" : ", ") + std::string(k.name);
    return s;
  }

  // A Markdown table of the knobs (docs, `--help`).
  std::string markdown() const {
    std::ostringstream os;
    os << "| knob | type | default | range | searched | tag | meaning "
          "|\n|---|---|---|---|---|---|---|\n";
    for (const Knob<P>& k : knobs_) {
      os << "| `" << k.name << "` | " << (k.type == KnobType::kBool ? "bool" : "int") << " | "
         << value_text(k, k.default_value) << " | "
         << (k.type == KnobType::kBool ? "-" : std::to_string(k.min) + ".." + std::to_string(k.max))
         << " | ";
      for (std::size_t i = 0; i < k.search.size(); ++i) {
        if (i == 0 || k.search[i] != k.search[i - 1])
          os << (i ? " " : "") << value_text(k, k.search[i]);
      }
      os << " | " << tag_text(k) << " | " << k.meaning << (k.exact_only ? " (exact sums only)" : "")
         << " |\n";
    }
    return os.str();
  }

 private:
  static std::string value_text(const Knob<P>& k, int v) {
    if (k.type == KnobType::kBool) return v ? "true" : "false";
    return std::to_string(v);
  }

  static std::string tag_text(const Knob<P>& k) {
    const std::string prefix = k.tag_prefix;
    switch (k.tag_style) {
      case TagStyle::kNone:
        return "-";
      case TagStyle::kValue:
        if (k.tag_omit < k.min) return "`" + prefix + "<" + k.name + ">`";
        return "`" + prefix + "<" + k.name + ">`, none at " + value_text(k, k.tag_omit);
      case TagStyle::kLanes:
        return "`" + prefix + "<" + k.name + " x lanes>`";
      case TagStyle::kFlag:
        return "`" + prefix + "` when true";
    }
    return "";
  }

  static int parse_value(const Knob<P>& k, const std::string& text) {
    if (k.type == KnobType::kBool) {
      if (text == "true" || text == "1") return 1;
      if (text == "false" || text == "0") return 0;
      invalid("schedule", P::kTemplate, " knob ", k.name, "=", text, " is not true or false");
    }
    try {
      std::size_t used = 0;
      const int v = std::stoi(text, &used);
      if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    invalid("schedule", P::kTemplate, " knob ", k.name, "=", text, " is not an integer");
  }

  std::vector<Knob<P>> knobs_;
};

}  // namespace mmtune::schedules

// Helpers for a template's X-macro list: MMTUNE_KNOB_FIELD declares the params struct's field,
// MMTUNE_KNOB_ENTRY its table entry. A list entry is
//   X(name, type, default, min, max, (search values...), tag prefix, TagStyle, tag omit,
//     exact sums only, meaning)
#define MMTUNE_KNOB_UNPAREN(...) __VA_ARGS__
#define MMTUNE_KNOB_FIELD(name, type, def, ...) type name = def;
#define MMTUNE_KNOB_ENTRY_FOR(P, name, type, def, lo, hi, search, prefix, style, omit, exact,     \
                              meaning)                                                            \
  ::mmtune::schedules::Knob<P>{#name,                                                             \
                               ::mmtune::schedules::knob_type_of<type>(),                         \
                               static_cast<int>(def),                                             \
                               lo,                                                                \
                               hi,                                                                \
                               {MMTUNE_KNOB_UNPAREN search},                                      \
                               prefix,                                                            \
                               ::mmtune::schedules::TagStyle::style,                              \
                               omit,                                                              \
                               meaning,                                                           \
                               exact,                                                             \
                               [](const P& p) {                                                   \
                                 return static_cast<int>(p.name);                                 \
                               }, /* NOLINTNEXTLINE(bugprone-macro-parentheses): a member name */ \
                               [](P& p, int v) { p.name = static_cast<type>(v); }},
