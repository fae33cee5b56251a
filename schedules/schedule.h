// A kernel's schedule: the parameters of one schedule template, the template chosen by name
// ("template" in JSON and in the generator parameters). This is the per-target seam: generators and
// the tuner handle a Schedule without naming a template; each template (cpu_matmul now; ARM, HVX
// and CUDA templates beside it) is one alternative of Schedule::Params with its own knob table and
// rules.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "schedules/arm/matmul_params.h"
#include "schedules/cpu/matmul_params.h"
#include "schedules/cuda/matmul_params.h"
#include "schedules/hexagon/matmul_params.h"
#include "schedules/matmul_layout.h"
#include "schedules/target_info.h"

namespace mmtune::schedules {

// The output tile a schedule computes at a time (tests derive edge-case shapes from it).
struct Tile {
  int rows = 1;
  int cols = 1;
};

class Schedule {
 public:
  // Every template, one alternative each. A new template: its params type here, its schedule
  // function in schedule_knobs.cc, nothing else.
  using Params = std::variant<CpuMatmulParams, ArmMatmulParams, HvxMatmulParams, CudaMatmulParams>;

  Schedule();  // cpu_matmul with its table's defaults
  Schedule(const Params& p)
      : params_(p) {}  // NOLINT(google-explicit-constructor): it is its params

  const char* template_name() const;
  const Params& params() const { return params_; }
  template <class P>
  const P* get_if() const {
    return std::get_if<P>(&params_);
  }
  // The register-tiled knobs of cpu_matmul and of the templates that share its schedule function
  // (arm_matmul), or nullptr.
  const CpuMatmulParams* register_tiled() const {
    return std::visit(
        [](const auto& p) -> const CpuMatmulParams* {
          if constexpr (std::is_base_of_v<CpuMatmulParams, std::decay_t<decltype(p)>>) return &p;
          return nullptr;
        },
        params_);
  }

  // Why this schedule cannot compute a sum `acc` on `t`, or nullopt: the template does not schedule
  // t's family, or its knobs do not fit (ranges, combinations, registers).
  std::optional<std::string> validate(const TargetInfo& t, Accumulator acc) const;
  // The data layout the algorithm must build (call only when validate() passed).
  MatmulLayout layout(const TargetInfo& t, Accumulator acc) const;
  Tile tile(const TargetInfo& t, Accumulator acc) const;
  // The schedule part of kernel names (docs/naming.md).
  std::string tag(const TargetInfo& t, Accumulator acc) const;

  // Generator-parameter face: "template" and every knob of the template.
  std::map<std::string, std::string> generator_params() const;
  // From generator parameters: "template" selects (empty or absent: `family_default`'s template);
  // the knobs of that template are read (empty or absent: defaults); a knob of another template
  // with a value is refused.
  static Schedule from_generator_params(
      const std::map<std::string, std::string>& gp,
      const std::string& default_template = CpuMatmulParams::kTemplate);

  bool operator==(const Schedule& o) const;
  bool operator!=(const Schedule& o) const { return !(*this == o); }

 private:
  Params params_;
};

// JSON face: {"template": name, knob: value, ...}; a missing "template" means cpu_matmul (the
// databases written before templates had names). Unknown templates and knobs are refused.
void to_json(nlohmann::json& j, const Schedule& s);
void from_json(const nlohmann::json& j, Schedule& s);

// Every template's name, and the union of their knob names (the generator parameters a generator
// holds, see schedule_knobs.h).
std::vector<std::string> template_names();
const std::vector<std::string>& all_knob_names();

// The template a target's family uses when none is named, or InvalidArgument naming the family
// when no template schedules it yet.
std::string default_template(const TargetInfo& t);
// That template's defaults for `t` and `acc`.
Schedule default_schedule(const TargetInfo& t, Accumulator acc);

// Schedules worth measuring first at a bucket whose products have `m` rows, beyond the defaults:
// on AMX targets for exact 8-bit sums over a prepacked B, the AMX forms (CpuMatmulParams::
// amx_forms, a tile the random draws never make); for M <= 4 the template's GEMV forms (cpu_matmul:
// CpuMatmulParams::gemv_forms), which a short random walk rarely assembles (four knobs must
// agree); for M > 64 on x86 the cache-blocked forms where the sum's K group is 1 (float sums:
// CpuMatmulParams::blocked_forms); empty elsewhere.
std::vector<Schedule> shape_seeds(const TargetInfo& t, Accumulator acc, int64_t m);

// Children of `s` that split an (m, n) product into `threads` parallel tasks where `s` gives
// fewer (a register-tiled schedule with `parallel` on): row blocks of ceil(m / threads) rows in
// whole tile rows, where m_block makes fewer row blocks than threads; strips of ceil(n / threads)
// columns in whole tiles, where n_block makes fewer strips. Only valid children. (At the timed M,
// every m_block >= M is the same kernel, so a search whose parents run one task rarely draws the
// split; with B prepacked, row blocks are tasks, else strips are.)
std::vector<Schedule> thread_splits(const Schedule& s, const TargetInfo& t, Accumulator acc,
                                    int64_t m, int64_t n, int threads);

// The search space: a uniform draw of valid parameters of `template_name` for `t` and `acc`
// (rejection sampling against validate()). InvalidArgument when the template does not fit `t`.
Schedule sample(const std::string& template_name, const TargetInfo& t, Accumulator acc,
                std::mt19937_64& rng);

// A neighbour of `s` in its template's search space: one or two knobs moved to other searched
// values, made consistent and valid for `t` and `acc` (rejection sampling; `s` itself when no
// valid neighbour turns up).
Schedule mutate(const Schedule& s, const TargetInfo& t, Accumulator acc, std::mt19937_64& rng);

// A schedule's knobs as numbers, in table order, with their ranges (the tuner's cost-model
// features).
struct KnobValue {
  std::string name;
  int value, min, max;
  bool is_bool;
};
std::vector<KnobValue> knob_values(const Schedule& s);

// A Markdown table of `template_name`'s knobs (docs/naming.md, the tuner's help).
std::string knob_table_markdown(const std::string& template_name);

}  // namespace mmtune::schedules
