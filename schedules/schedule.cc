// The template seam: dispatch over Schedule::Params.
#include "schedules/schedule.h"

#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>

namespace mmtune::schedules {
namespace {

// Calls f with a value-initialized P of every template, in declaration order.
template <class F, std::size_t... I>
void for_each_template_impl(F&& f, std::index_sequence<I...>) {
  (f(std::variant_alternative_t<I, Schedule::Params>{}), ...);
}
template <class F>
void for_each_template(F&& f) {
  for_each_template_impl(f, std::make_index_sequence<std::variant_size_v<Schedule::Params>>{});
}

// The template named `name` as a defaulted Params, or InvalidArgument listing the known names.
Schedule::Params template_by_name(const std::string& name) {
  std::optional<Schedule::Params> found;
  for_each_template([&](auto p) {
    if (name == decltype(p)::kTemplate) found = decltype(p)::knobs().defaults();
  });
  if (!found) {
    std::string known;
    for (const std::string& n : template_names()) known += (known.empty() ? "" : ", ") + n;
    invalid("schedule", "template '", name, "' is not a schedule template (templates: ", known,
            ")");
  }
  return *found;
}

}  // namespace

Schedule::Schedule() : params_(CpuMatmulParams::knobs().defaults()) {}

const char* Schedule::template_name() const {
  return std::visit([](const auto& p) { return std::decay_t<decltype(p)>::kTemplate; }, params_);
}

std::optional<std::string> Schedule::validate(const TargetInfo& t, Accumulator acc) const {
  return std::visit(
      [&](const auto& p) -> std::optional<std::string> {
        using P = std::decay_t<decltype(p)>;
        if (!P::fits(t)) {
          return std::string("template ") + P::kTemplate + " does not schedule " + t.family +
                 " targets (" + t.target + "); it schedules " + P::kFamilies;
        }
        return p.validate(t, acc);
      },
      params_);
}

MatmulLayout Schedule::layout(const TargetInfo& t, Accumulator acc) const {
  return std::visit([&](const auto& p) { return p.layout(t, acc); }, params_);
}

Tile Schedule::tile(const TargetInfo& t, Accumulator acc) const {
  return std::visit(
      [&](const auto& p) {
        const MatmulLayout l = p.layout(t, acc);
        return Tile{p.tile_rows, l.panel};
      },
      params_);
}

std::string Schedule::tag(const TargetInfo& t, Accumulator acc) const {
  return std::visit(
      [&](const auto& p) {
        return std::decay_t<decltype(p)>::knobs().tag(p, p.layout(t, acc).lanes);
      },
      params_);
}

std::map<std::string, std::string> Schedule::generator_params() const {
  return std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        std::map<std::string, std::string> gp = P::knobs().generator_params(p);
        gp["template"] = P::kTemplate;
        return gp;
      },
      params_);
}

Schedule Schedule::from_generator_params(const std::map<std::string, std::string>& gp,
                                         const std::string& default_template) {
  auto it = gp.find("template");
  const std::string name = it == gp.end() || it->second.empty() ? default_template : it->second;
  Schedule s(template_by_name(name));
  std::visit(
      [&](auto& p) {
        using P = std::decay_t<decltype(p)>;
        std::map<std::string, std::string> own;
        for (const auto& [key, value] : gp) {
          if (key == "template") continue;
          if (P::knobs().find(key)) {
            own[key] = value;
          } else if (!value.empty()) {
            invalid("schedule", "knob ", key, "=", value, " is not a knob of template ",
                    P::kTemplate, " (knobs: ", P::knobs().names(), ")");
          }
        }
        p = P::knobs().from_generator_params(own);
      },
      s.params_);
  return s;
}

bool Schedule::operator==(const Schedule& o) const {
  if (params_.index() != o.params_.index()) return false;
  return std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        return P::knobs().equal(p, std::get<P>(o.params_));
      },
      params_);
}

void to_json(nlohmann::json& j, const Schedule& s) {
  j = std::visit([](const auto& p) { return std::decay_t<decltype(p)>::knobs().to_json(p); },
                 s.params());
}

void from_json(const nlohmann::json& j, Schedule& s) {
  if (!j.is_object()) invalid("schedule", "a schedule must be a JSON object, got ", j.dump());
  std::string name = CpuMatmulParams::kTemplate;
  if (j.contains("template")) {
    if (!j["template"].is_string())
      invalid("schedule", "\"template\" must be a string, got ", j["template"].dump());
    name = j["template"].get<std::string>();
  }
  Schedule::Params p = template_by_name(name);
  std::visit([&](auto& params) { params = std::decay_t<decltype(params)>::knobs().from_json(j); },
             p);
  s = Schedule(p);
}

std::vector<std::string> template_names() {
  std::vector<std::string> names;
  for_each_template([&](auto p) { names.emplace_back(decltype(p)::kTemplate); });
  return names;
}

const std::vector<std::string>& all_knob_names() {
  static const std::vector<std::string> names = [] {
    std::set<std::string> all;
    for_each_template([&](auto p) {
      for (const auto& k : decltype(p)::knobs().knobs()) all.insert(k.name);
    });
    return std::vector<std::string>(all.begin(), all.end());
  }();
  return names;
}

std::string default_template(const TargetInfo& t) {
  std::optional<std::string> name;
  for_each_template([&](auto p) {
    if (!name && decltype(p)::fits(t)) name = decltype(p)::kTemplate;
  });
  if (!name)
    invalid("schedule", "no schedule template schedules ", t.family, " targets yet (", t.target,
            ")");
  return *name;
}

Schedule default_schedule(const TargetInfo& t, Accumulator acc) {
  Schedule::Params p = template_by_name(default_template(t));
  std::visit([&](auto& params) { params = std::decay_t<decltype(params)>::defaults(t, acc); }, p);
  return Schedule(p);
}

std::vector<Schedule> shape_seeds(const TargetInfo& t, Accumulator acc, int64_t m) {
  std::vector<Schedule> seeds;
  // For M <= 4 the GEMV forms first: a budget that reaches a few seeds tries both kinds (the AMX
  // forms alone fill 16 candidates).
  if (m <= 4) {
    Schedule::Params p = template_by_name(default_template(t));
    std::visit(
        [&](const auto& params) {
          using P = std::decay_t<decltype(params)>;
          for (const P& g : P::gemv_forms(t, acc)) seeds.emplace_back(Schedule::Params(g));
        },
        p);
  }
  // The AMX forms: the knobs' searched values never draw a 16 x 16 tile of one vector.
  for (const CpuMatmulParams& a : CpuMatmulParams::amx_forms(t, acc))
    seeds.emplace_back(Schedule::Params(a));
  if (CpuMatmulParams::fits(t)) {
    for (const CpuMatmulParams& b : CpuMatmulParams::blocked_forms(t, acc, m))
      seeds.emplace_back(Schedule::Params(b));
  }
  return seeds;
}

std::vector<Schedule> thread_splits(const Schedule& s, const TargetInfo& t, Accumulator acc,
                                    int64_t m, int64_t n, int threads) {
  std::vector<Schedule> out;
  const CpuMatmulParams* p = s.register_tiled();
  if (!p || !p->parallel || threads < 2) return out;
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  auto child = [&](auto edit) {
    Schedule::Params params = s.params();
    std::visit(
        [&](auto& q) {
          if constexpr (std::is_base_of_v<CpuMatmulParams, std::decay_t<decltype(q)>>) edit(q);
        },
        params);
    const Schedule c(params);
    if (!c.validate(t, acc)) out.push_back(c);
  };
  const int64_t rows = ceil_div(ceil_div(m, threads), p->tile_rows) * p->tile_rows;
  if (p->m_block > 0 && ceil_div(m, p->m_block) < threads && rows < m)
    child([&](CpuMatmulParams& q) { q.m_block = static_cast<int>(rows); });
  const int64_t w = p->tile_columns(t, acc.bits);
  const int64_t cols = ceil_div(ceil_div(n, threads), w) * w;
  if (p->n_block > 0 && ceil_div(n, p->n_block) < threads && cols < n)
    child([&](CpuMatmulParams& q) { q.n_block = static_cast<int>(cols); });
  return out;
}

Schedule sample(const std::string& template_name, const TargetInfo& t, Accumulator acc,
                std::mt19937_64& rng) {
  Schedule::Params p = template_by_name(template_name);
  std::visit(
      [&](auto& params) {
        using P = std::decay_t<decltype(params)>;
        if (!P::fits(t)) {
          invalid("schedule", "template ", P::kTemplate, " does not schedule ", t.family,
                  " targets (", t.target, "); it schedules ", P::kFamilies);
        }
        for (int attempt = 0; attempt < 10000; ++attempt) {
          P draw = P::knobs().draw(rng, acc.exact);
          draw.fit_draw(t, acc);
          if (!draw.validate(t, acc)) {
            params = draw;
            return;
          }
        }
        MMTUNE_CHECK(false,
                     "no valid " << P::kTemplate << " parameters in the space for " << t.target);
      },
      p);
  return Schedule(p);
}

Schedule mutate(const Schedule& s, const TargetInfo& t, Accumulator acc, std::mt19937_64& rng) {
  return std::visit(
      [&](const auto& params) -> Schedule {
        using P = std::decay_t<decltype(params)>;
        for (int attempt = 0; attempt < 200; ++attempt) {
          P draw = P::knobs().mutate(params, rng, acc.exact);
          draw.fit_draw(t, acc);
          if (!draw.validate(t, acc) && !P::knobs().equal(draw, params)) return Schedule(draw);
        }
        return s;
      },
      s.params());
}

std::vector<KnobValue> knob_values(const Schedule& s) {
  return std::visit(
      [](const auto& params) {
        using P = std::decay_t<decltype(params)>;
        std::vector<KnobValue> out;
        for (const auto& k : P::knobs().knobs()) {
          out.push_back({k.name, k.get(params), k.min, k.max, k.type == KnobType::kBool});
        }
        return out;
      },
      s.params());
}

std::string knob_table_markdown(const std::string& template_name) {
  return std::visit([](const auto& p) { return std::decay_t<decltype(p)>::knobs().markdown(); },
                    template_by_name(template_name));
}

}  // namespace mmtune::schedules
