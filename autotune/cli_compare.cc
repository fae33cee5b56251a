// `mmtune db compare`: see cli_compare.h.
#include "autotune/cli_compare.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "autotune/tune_inputs.h"
#include "reference/error.h"
#include "runtime/host/cpu_features.h"
#include "runtime/src/kernel_table.h"

namespace mmtune::tune {
namespace {

// A tuned database as the runtime's dispatch sees it: one entry per (kernel, bucket), in file
// order.
struct Loaded {  // NOLINT(bugprone-exception-escape): built once per command, outside noexcept code
  std::string path, target;
  nlohmann::json kernels;                     // the file's kernel objects
  std::vector<std::string> identity_text;     // per entry: "k=v ..." sorted (the table's form)
  std::vector<std::string> schedule_text;     // per entry (unused by select_kernel)
  std::vector<runtime::KernelEntry> entries;  // point into the strings above
  std::vector<std::size_t> kernel_of;         // per entry: index in `kernels`
};

std::string params_text(const nlohmann::json& params) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : params.items())
    sorted[k] = v.is_string() ? v.get<std::string>() : v.dump();
  std::string s;
  for (const auto& [k, v] : sorted) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

runtime::Bucket bucket_of_json(const nlohmann::json& b, const std::string& where) {
  runtime::Bucket out;
  if (b.is_string() && b.get<std::string>() == "any") return out;
  if (!b.is_object()) invalid(where, "bucket ", b.dump(), " is not \"any\" or an object");
  static const std::set<std::string> kKeys = {"m_min", "m_max", "n_min",       "n_max",
                                              "k_min", "k_max", "threads_min", "threads_max"};
  for (const auto& item : b.items()) {
    if (!kKeys.count(item.key())) {
      invalid(where, "bucket ", b.dump(), ": '", item.key(),
              "' is not m_min, m_max, n_min, n_max, k_min, k_max, threads_min or threads_max");
    }
  }
  auto get = [&](const char* key, int64_t& v) {
    if (b.contains(key)) {
      if (!b[key].is_number_integer() || b[key].get<int64_t>() < 0) {
        invalid(where, "bucket ", b.dump(), ": ", key, " is not a non-negative integer");
      }
      v = b[key].get<int64_t>();
    }
  };
  get("m_min", out.m_min);
  get("m_max", out.m_max);
  get("n_min", out.n_min);
  get("n_max", out.n_max);
  get("k_min", out.k_min);
  get("k_max", out.k_max);
  get("threads_min", out.threads_min);
  get("threads_max", out.threads_max);
  return out;
}

void load(Loaded& d, const std::string& path) {
  const std::string where = "db compare: '" + path + "'";
  const nlohmann::json j = read_tuned_database(path, where);
  if (!j.contains("target") || !j["target"].is_string()) {
    invalid(where, "is not a tuned database: it needs a string \"target\"");
  }
  d.path = path;
  d.target = j["target"].get<std::string>();
  d.kernels = j["kernels"];
  // Strings first (the entries point into them), then the entries.
  std::vector<runtime::Bucket> buckets;
  for (std::size_t i = 0; i < d.kernels.size(); ++i) {
    const nlohmann::json& k = d.kernels[i];
    if (!k.is_object() || !k.contains("name") || !k.contains("op") || !k.contains("generator") ||
        !k.contains("params") || !k.contains("schedule") || !k.contains("bucket")) {
      invalid(where, "kernel ", i, " needs name, op, generator, params, schedule and bucket");
    }
    const nlohmann::json& b = k["bucket"];
    for (const nlohmann::json& one : b.is_array() ? b : nlohmann::json::array({b})) {
      buckets.push_back(bucket_of_json(one, where + " kernel " + k["name"].dump()));
      d.identity_text.push_back(params_text(k["params"]));
      d.schedule_text.push_back(params_text(k["schedule"]));
      d.kernel_of.push_back(i);
    }
  }
  for (std::size_t e = 0; e < buckets.size(); ++e) {
    const nlohmann::json& k = d.kernels[d.kernel_of[e]];
    d.entries.push_back(runtime::KernelEntry{k["name"].get_ref<const std::string&>().c_str(),
                                             k["op"].get_ref<const std::string&>().c_str(),
                                             k["generator"].get_ref<const std::string&>().c_str(),
                                             d.identity_text[e].c_str(), d.schedule_text[e].c_str(),
                                             buckets[e], nullptr});
  }
}

// The kernel object the database dispatches (m, n, k) of `id` on `threads` threads to, or nullptr.
const nlohmann::json* pick(const Loaded& d, const KernelIdentity& id, int64_t m, int64_t n,
                           int64_t k, int threads) {
  const runtime::KernelTable table{d.target.c_str(), d.path.c_str(), d.entries.data(),
                                   d.entries.size()};
  const runtime::Selection s = runtime::select_kernel(table, id.op, id.params, m, n, k, threads);
  if (!s.kernel) return nullptr;
  return &d.kernels[d.kernel_of[static_cast<std::size_t>(s.kernel - d.entries.data())]];
}

}  // namespace

std::vector<CompareRow> compare_tuned_databases(const CompareOptions& o) {
  Loaded base, fresh;
  load(base, o.base);
  load(fresh, o.fresh);
  if (base.target != fresh.target) {
    invalid("db compare", "'", o.base, "' is for ", base.target, " and '", o.fresh, "' for ",
            fresh.target, ": compare databases of one target");
  }
  if (auto why = cpu_cannot_run(fresh.target)) {
    invalid("db compare", "target ", fresh.target, " cannot run on this machine (", *why, ")");
  }
  if (o.shapes.empty()) invalid("db compare", "no shapes given (--shapes FILE or --shape M,N,K)");
  // The identities both hold, in NEW's order (or those asked for).
  std::vector<std::pair<std::string, KernelIdentity>> ids;
  const std::vector<DatabaseIdentity> base_ids = identities_of_database(o.base);
  for (const DatabaseIdentity& d : identities_of_database(o.fresh)) {
    const auto in_base = [&](const DatabaseIdentity& b) { return b.spec == d.spec; };
    if (std::any_of(base_ids.begin(), base_ids.end(), in_base)) {
      ids.push_back({d.spec, parse_identity_spec(d.spec)});
    }
  }
  if (!o.ops.empty()) {
    std::vector<std::pair<std::string, KernelIdentity>> chosen;
    for (const std::string& spec : o.ops) {
      const std::string canonical = identity_spec(parse_identity_spec(spec));
      auto it =
          std::find_if(ids.begin(), ids.end(), [&](const auto& p) { return p.first == canonical; });
      if (it == ids.end()) {
        invalid("db compare", "--op '", spec, "': not a kernel identity of both databases");
      }
      chosen.push_back(*it);
    }
    ids = chosen;
  }
  std::filesystem::create_directories(o.scratch);
  WorkerPool pool(o.exe, o.scratch, o.jobs, o.timeout_s);
  std::vector<CompareRow> rows;
  std::vector<bool> same;  // per row: both databases pick one schedule
  // A job's records come back in the order of its schedules: BASE's, then NEW's (when different).
  auto absorb = [&](const std::vector<Record>& records) {
    std::map<std::string, int> seen;  // job label -> records of it so far
    for (const Record& r : records) {
      const std::size_t i = std::stoul(r.bucket.substr(r.bucket.find('-') + 1));
      CompareRow& row = rows[i];
      const int nth = seen[r.bucket]++;
      const double rate = r.outcome == Outcome::kPassed ? r.rate : 0;
      if (nth == 0) row.base_rate = rate;
      if (nth == 1 || same[i]) row.new_rate = rate;
      if (r.outcome != Outcome::kPassed) {
        row.note += std::string(row.note.empty() ? "" : "; ") + (nth == 0 ? "BASE " : "NEW ") +
                    outcome_name(r.outcome) + (r.detail.empty() ? "" : ": " + r.detail);
      }
    }
  };
  for (const auto& [spec, id] : ids) {
    for (const NamedShape& s : o.shapes) {
      const nlohmann::json* b = pick(base, id, s.m, s.n, s.k, o.measure.threads);
      const nlohmann::json* f = pick(fresh, id, s.m, s.n, s.k, o.measure.threads);
      MMTUNE_CHECK(b && f, "db compare: no kernel for an identity both databases hold");
      CompareRow row{spec, s, (*b)["name"].get<std::string>(), (*f)["name"].get<std::string>(), 0,
                     0,    ""};
      Job job;
      job.identity = spec;
      job.target = fresh.target;
      job.schedules = {(*b)["schedule"]};
      // One kernel (its name says identity and schedule; the files may spell the schedule with
      // more or fewer default knobs).
      same.push_back((*f)["schedule"] == (*b)["schedule"] || (*f)["name"] == (*b)["name"]);
      if (same.back()) {
        row.note = "same schedule";
      } else {
        job.schedules.push_back((*f)["schedule"]);
      }
      job.bucket = "compare-" + std::to_string(rows.size());
      job.shape = {s.m, s.n, s.k};
      job.measure = o.measure;
      job.measure_lock = o.scratch + "/measure.lock";
      rows.push_back(row);
      while (pool.full()) absorb(pool.collect(0.5));
      pool.submit(job);
    }
  }
  while (!pool.idle()) absorb(pool.collect(0.5));
  return rows;
}

}  // namespace mmtune::tune
