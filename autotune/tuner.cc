// The tuning loop: units of (identity, bucket), shards, budget, workers, database, progress.
#include "autotune/tuner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "Halide.h"
#include "autotune/atomic_file.h"
#include "autotune/cross_build.h"
#include "autotune/halide_jit.h"
#include "autotune/kernel_key.h"
#include "autotune/kernel_naming.h"
#include "autotune/tune_baselines.h"
#include "autotune/tune_buckets.h"
#include "autotune/tune_inputs.h"
#include "autotune/tune_machine.h"
#include "autotune/tune_remote.h"
#include "autotune/tune_report.h"
#include "autotune/tune_search.h"
#include "autotune/tune_timing.h"
#include "mmtune_commit.h"  // generated at build time: MMTUNE_GIT_COMMIT
#include "reference/error.h"
#include "runtime/host/cpu_features.h"

namespace mmtune::tune {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_interrupts{0};
extern "C" void on_interrupt(int) { g_interrupts.fetch_add(1); }

// Installs the Ctrl-C handler for the run's lifetime: the first Ctrl-C stops new work and lets the
// in-flight candidates finish into the database; the second kills them.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupts = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~InterruptGuard() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpuinfo_field(const std::string& field) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "";
}

uint64_t mix(uint64_t seed, const std::string& text) {
  uint64_t h = seed ^ 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string rate_text(double rate) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(rate >= 1e11 ? 0 : 1) << rate / 1e9 << " G/s";
  return os.str();
}

// A record's rate with its unit: G/s, or operations per instruction for the qemu proxy.
std::string rate_text(const Record& r) {
  if (cost_kind(r) != kCostQemuInstructions) return rate_text(r.rate);
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << r.rate << " op/instruction (qemu count, proxy)";
  return os.str();
}

// Progress: one live line on a terminal, a plain line every 10 s otherwise, nothing when quiet.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(::isatty(2) != 0) {}
  void update(const std::string& text, bool force = false) {
    if (quiet_) return;
    const auto now = Clock::now();
    if (tty_) {
      std::cerr << "\r\033[K" << text << std::flush;
      shown_ = true;
    } else if (force || now - last_ > std::chrono::seconds(10)) {
      std::cerr << text << "\n";
      last_ = now;
    }
  }
  void line(const std::string& text) {
    if (quiet_) return;
    if (tty_ && shown_) std::cerr << "\r\033[K";
    std::cerr << text << "\n";
    shown_ = false;
  }

 private:
  bool quiet_, tty_, shown_ = false;
  Clock::time_point last_{};
};

struct Unit {
  std::string identity;  // canonical spec
  KernelIdentity id;
  Bucket bucket;  // its name carries the thread count in a run at several
  int threads = 1;
};

}  // namespace

nlohmann::json provenance(int threads) {
  nlohmann::json p;
  p["cpu"] = cpuinfo_field("model name");
  std::istringstream flags(cpuinfo_field("flags"));
  std::vector<std::string> kept;
  static const std::set<std::string> relevant = {
      "sse4_1",   "avx",         "avx2",        "fma",      "f16c",        "avx512f",  "avx512bw",
      "avx512vl", "avx512_vnni", "avx512_bf16", "avx_vnni", "avx512_fp16", "amx_int8", "amx_bf16"};
  for (std::string f; flags >> f;) {
    if (relevant.count(f)) kept.push_back(f);
  }
  p["cpu_flags"] = kept;
  p["cores"] = ::sysconf(_SC_NPROCESSORS_ONLN);
  p["halide"] = std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) +
                "." + std::to_string(HALIDE_VERSION_PATCH);
  p["mmtune"] = MMTUNE_GIT_COMMIT;
#if defined(__clang__)
  p["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  p["compiler"] = std::string("gcc ") + __VERSION__;
#endif
  p["date"] = utc_now();
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) == 3) p["load_average"] = {load[0], load[1], load[2]};
  p["threads"] = threads;
  return p;
}

void write_json_atomically(const nlohmann::json& j, const std::string& path) {
  write_text_atomically(j.dump(2) + "\n", path);
}

void write_text_atomically(const std::string& text, const std::string& path) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (!p.parent_path().empty()) std::filesystem::create_directories(p.parent_path(), ec);
  write_file_atomically(path, "the tuner's output", text);
}

namespace {

// A kernel's bucket objects (an array) with the thread ranges of each shape bucket joined where
// adjacent and left out where they cover every count; one object when one remains.
nlohmann::json merge_thread_ranges(const nlohmann::json& buckets) {
  const auto shape_of = [](nlohmann::json b) {
    b.erase("threads_min");
    b.erase("threads_max");
    return b;
  };
  std::vector<nlohmann::json> out;
  std::vector<bool> done(buckets.size(), false);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (done[i]) continue;
    const nlohmann::json shape = shape_of(buckets[i]);
    std::vector<std::pair<int64_t, int64_t>> ranges;  // (min, max); 0 / -1: unbounded
    for (std::size_t j = i; j < buckets.size(); ++j) {
      if (done[j] || shape_of(buckets[j]) != shape) continue;
      done[j] = true;
      ranges.emplace_back(buckets[j].value("threads_min", int64_t{0}),
                          buckets[j].value("threads_max", int64_t{-1}));
    }
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<int64_t, int64_t>> joined;
    for (const auto& r : ranges) {
      if (!joined.empty() && joined.back().second >= 0 && r.first <= joined.back().second + 1) {
        joined.back().second = r.second < 0 ? -1 : std::max(joined.back().second, r.second);
      } else {
        joined.push_back(r);
      }
    }
    for (const auto& [lo, hi] : joined) {
      nlohmann::json b = shape;
      if (lo > 0) b["threads_min"] = lo;
      if (hi >= 0) b["threads_max"] = hi;
      out.push_back(b);
    }
  }
  return out.size() == 1 ? out.front() : nlohmann::json(out);
}

}  // namespace

nlohmann::json tuned_database(const std::vector<Record>& records, const std::string& target,
                              bool parallel_only) {
  const auto group_of = [](const Record& r) { return r.identity + "|" + r.bucket; };
  std::set<std::string> has_parallel;  // buckets where a parallel schedule passed
  for (const Record& r : records) {
    // A bucket tuned at 1 thread of a run at several counts serves 1-thread calls only: a serial
    // schedule may win it.
    if (parallel_only && r.target == target && r.outcome == Outcome::kPassed && r.rate > 0 &&
        !is_baseline(r) && runs_parallel(r) && threads_of_bucket_name(r.bucket) != 1)
      has_parallel.insert(group_of(r));
  }
  std::vector<Record> mine;
  for (const Record& r : records) {
    if (r.target != target) continue;
    if (has_parallel.count(group_of(r)) && !is_baseline(r) && !runs_parallel(r)) continue;
    mine.push_back(r);
  }
  const auto best = best_records(mine);
  const auto serving = merge_within_noise(mine, best);
  // The thread counts each (identity, shape bucket) was tuned at, in a run at several.
  std::map<std::string, std::vector<int>> counts_of;
  for (const auto& [group, w] : best) {
    const int t = threads_of_bucket_name(w.record->bucket);
    if (t > 0)
      counts_of[w.record->identity + "|" + shape_bucket_name(w.record->bucket)].push_back(t);
  }
  for (auto& [key, counts] : counts_of) std::sort(counts.begin(), counts.end());
  nlohmann::json kernels = nlohmann::json::array();
  std::map<std::string, std::size_t> by_name;  // kernel name -> index in `kernels`
  for (const auto& [group, w] : best) {
    // The schedule serving the bucket: its winner's, or one within noise of it that serves other
    // buckets too (fewer kernels, the same speed within measurement noise).
    const auto sv = serving.find(group);
    const Record& r = sv != serving.end() ? *sv->second.served : *w.record;
    const KernelIdentity id = parse_identity_spec(r.identity);
    const auto schedule = r.schedule.get<schedules::Schedule>();
    const std::string name = kernel_name(id.op, id.params, schedule.generator_params(), target);
    // The bucket's bounds from its shape (every record carries the shape measured), and in a run
    // at several thread counts its count's range: from it to the next count tuned, less one.
    nlohmann::json bounds = bucket_of(r.shape.at(0), r.shape.at(1), r.shape.at(2)).bounds_json();
    if (const int t = threads_of_bucket_name(w.record->bucket); t > 0) {
      const std::vector<int>& counts =
          counts_of.at(w.record->identity + "|" + shape_bucket_name(w.record->bucket));
      const auto at = std::find(counts.begin(), counts.end(), t);
      if (at != counts.begin()) bounds["threads_min"] = t;
      if (at + 1 != counts.end()) bounds["threads_max"] = *(at + 1) - 1;
    }
    std::ostringstream prov;
    const nlohmann::json& p = r.provenance;
    prov << "tuned by mmtune autotune " << p.value("date", "") << " on " << p.value("cpu", "?")
         << " (" << p.value("cores", 0) << " cores), Halide " << p.value("halide", "?")
         << ", mmtune " << p.value("mmtune", "?") << ", " << p.value("threads", 1)
         << " thread(s): bucket " << r.bucket;
    if (const auto sr = r.extra.find("shape_rates"); sr != r.extra.end() && sr->size() > 1) {
      // A finalist ranked over its bucket's shapes: its rate is their geometric mean.
      prov << " " << rate_text(r) << ", the geometric mean of a finalist's rates at";
      for (const nlohmann::json& e : *sr) {
        Record at = r;  // (rate_text reads the record's cost kind)
        at.rate = e["rate"].get<double>();
        prov << " " << shape_text(e["shape"].get<std::vector<int64_t>>()) << " " << rate_text(at);
      }
    } else {
      prov << " at " << shape_text(r.shape) << " " << rate_text(r);
    }
    prov << " (" << w.passed << " of " << w.candidates << " candidates passed the gate)";
    if (&r != w.record) {
      prov << ", serving within " << std::lround(100 * sv->second.tolerance)
           << "% noise of the bucket's own winner (" << rate_text(*w.record) << ")";
    }
    if (auto it = by_name.find(name); it != by_name.end()) {
      nlohmann::json& k = kernels[it->second];
      if (!k["bucket"].is_array()) k["bucket"] = nlohmann::json::array({k["bucket"]});
      k["bucket"].push_back(bounds);
      k["provenance"] = k["provenance"].get<std::string>() + "; " + prov.str();
      continue;
    }
    by_name[name] = kernels.size();
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [key, v] : id.params) params[key] = v;
    kernels.push_back({{"name", name},
                       {"op", id.op},
                       {"generator", id.generator},
                       {"params", params},
                       {"schedule", r.schedule},
                       {"bucket", bounds},
                       {"provenance", prov.str()}});
  }
  // A kernel that won a shape bucket at adjacent thread counts serves their ranges as one; at
  // every count, the bucket without a range.
  for (nlohmann::json& k : kernels) {
    if (k["bucket"].is_array()) k["bucket"] = merge_thread_ranges(k["bucket"]);
  }
  // A dimension on which every bucket of an identity has the same bounds tells its kernels
  // nothing apart: it is left unbounded (the runtime's nearest-bucket rule picks the same kernel
  // for shapes outside it, and the suites test each kernel on its bucket's shapes).
  std::map<std::string, std::vector<nlohmann::json*>> buckets_of;  // identity -> bucket objects
  for (nlohmann::json& k : kernels) {
    nlohmann::json& b = k["bucket"];
    const std::string id = k["op"].dump() + k["params"].dump();
    if (b.is_array()) {
      for (nlohmann::json& one : b) buckets_of[id].push_back(&one);
    } else {
      buckets_of[id].push_back(&b);
    }
  }
  for (auto& entry : buckets_of) {
    std::vector<nlohmann::json*>& bs = entry.second;
    for (const char* dim : {"m", "n", "k"}) {
      const std::string lo = std::string(dim) + "_min", hi = std::string(dim) + "_max";
      auto bounds = [&](const nlohmann::json* b) {
        return std::make_pair(b->value(lo, int64_t{-1}), b->value(hi, int64_t{-1}));
      };
      const bool uniform = std::all_of(bs.begin(), bs.end(), [&](const nlohmann::json* b) {
        return bounds(b) == bounds(bs.front());
      });
      if (!uniform) continue;
      for (nlohmann::json* b : bs) {
        b->erase(lo);
        b->erase(hi);
      }
    }
    // Buckets that differ in M alone tile the M axis: each gap between two of them goes to the
    // nearer one (the runtime's nearest-bucket rule, |log2|), the lowest reaches down to M = 0 and
    // the highest has no upper bound; the database then says which kernel serves every M.
    const bool m_only = std::all_of(bs.begin(), bs.end(), [](const nlohmann::json* b) {
      return !b->contains("n_min") && !b->contains("n_max") && !b->contains("k_min") &&
             !b->contains("k_max");
    });
    // (Buckets of one M range at several thread counts move together.)
    std::map<std::pair<int64_t, int64_t>, std::vector<nlohmann::json*>> by_m;
    for (nlohmann::json* b : bs) {
      by_m[{b->value("m_min", int64_t{0}), b->value("m_max", int64_t{-1})}].push_back(b);
    }
    if (m_only && by_m.size() > 1) {
      std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<nlohmann::json*>>> ranges(
          by_m.begin(), by_m.end());
      const auto set = [](const std::vector<nlohmann::json*>& group, const char* key,
                          int64_t value) {
        for (nlohmann::json* b : group) (*b)[key] = value;
      };
      for (std::size_t i = 0; i + 1 < ranges.size(); ++i) {
        const int64_t hi = ranges[i].first.second;
        const int64_t lo = ranges[i + 1].first.first;
        if (hi < 0 || lo <= hi + 1) continue;
        int64_t split = hi;  // the largest M nearer (or as near) to `hi` than to `lo`
        while ((split + 1) * (split + 1) <= hi * lo) ++split;
        set(ranges[i].second, "m_max", split);
        set(ranges[i + 1].second, "m_min", split + 1);
      }
      for (nlohmann::json* b : ranges.front().second) b->erase("m_min");
      for (nlohmann::json* b : ranges.back().second) b->erase("m_max");
    }
    for (nlohmann::json* b : bs) {
      if (b->is_object() && b->empty()) *b = "any";
    }
  }
  // An identity served by one kernel: that kernel serves every shape.
  std::map<std::string, int> kernels_of;
  for (const nlohmann::json& k : kernels) ++kernels_of[k["op"].dump() + k["params"].dump()];
  for (nlohmann::json& k : kernels) {
    if (kernels_of[k["op"].dump() + k["params"].dump()] == 1) k["bucket"] = "any";
  }
  nlohmann::json db = {
      {"target", target},
      {"note",
       "Written by `mmtune autotune` (or `mmtune emit`) from its tuning database: per kernel "
       "identity and shape bucket, the fastest schedule that passed the bit-for-bit gate; "
       "names per docs/naming.md."},
      {"kernels", kernels}};
  // How the winners were ranked, when not by this machine's clock.
  std::set<std::string> costs;
  for (const auto& [group, w] : best) costs.insert(cost_kind(*w.record));
  costs.erase("");
  for (const std::string& c : costs) db["cost"][c] = cost_description(c);
  return db;
}

bool tunes_remotely(const TuneOptions& o) {
  return !o.runner.empty() || !o.cost.empty() || cpu_cannot_run(resolve_target(o.target));
}

TuneSummary autotune(const TuneOptions& o) {
  if (o.ops.empty()) invalid("autotune", "no --op given");
  if (o.shapes.empty()) invalid("autotune", "no shapes given");
  if (o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count) {
    invalid("autotune", "--shard ", o.shard_index, "/", o.shard_count,
            " is not I/N with 0 <= I < N");
  }
  if (o.jobs < 1) invalid("autotune", "--jobs ", o.jobs, " must be at least 1");
  if (o.max_candidates < 1)
    invalid("autotune", "--max-candidates ", o.max_candidates, " must be at least 1");
  if (o.strategy != "random" && o.strategy != "evolutionary") {
    invalid("autotune", "--strategy '", o.strategy, "' is not random or evolutionary");
  }
  std::vector<std::string> baselines;
  for (const std::string& b : o.baselines) {
    const std::optional<std::string> name = jit::autoscheduler_name(b);
    if (!name) {
      invalid("autotune", "--baselines: '", b,
              "' is not one of Halide's autoschedulers (Adams2019, Mullapudi2016, Li2018)");
    }
    if (std::find(baselines.begin(), baselines.end(), *name) == baselines.end())
      baselines.push_back(*name);
  }
  const std::string target = resolve_target(o.target);
  // A target this CPU cannot run is tuned through its kernel runner (autotune/tune_remote.h):
  // under qemu with the proxy cost, or on a device with its clock.
  const bool remote = tunes_remotely(o);
  std::string cost;
  if (remote) {
    const verify::Platform platform = verify::platform_of(schedules::target_info(target));
    cost = !o.cost.empty() ? o.cost : o.runner.empty() ? kCostQemuInstructions : kCostDeviceTime;
    if (platform.cannot_run && o.runner.empty()) {
      invalid("autotune", "--target ", target, ": ", *platform.cannot_run,
              ", and no emulator runs it: tune where it runs, with --cost device_time (and "
              "--runner when that is another machine)");
    }
    if (cost == kCostQemuInstructions && platform.counting_runner.empty()) {
      invalid("autotune", "--target ", target, " runs under no qemu, so it has no ",
              kCostQemuInstructions,
              " proxy: time it on its device with --cost device_time "
              "(and --runner when the device is another machine)");
    }
    if (auto why =
            verify::missing_tool(platform, o.runner.empty() || cost == kCostQemuInstructions)) {
      invalid("autotune", "--target ", target, ": ", *why);
    }
  }
  const schedules::TargetInfo info = schedules::target_info(target);
  (void)schedules::default_template(info);  // InvalidArgument when no template schedules it

  // Units: identities x buckets, in a fixed order; this shard's are every shard_count-th.
  // In a run at several thread counts, each bucket at each count (its name says which).
  const std::vector<int> thread_counts =
      o.thread_counts.empty() ? std::vector<int>{o.measure.threads} : o.thread_counts;
  for (std::size_t i = 0; i < thread_counts.size(); ++i) {
    if (thread_counts[i] < 1 ||
        std::count(thread_counts.begin(), thread_counts.end(), thread_counts[i]) > 1) {
      invalid("autotune", "--threads: ", thread_counts[i],
              thread_counts[i] < 1 ? " is not a thread count (1 or more)" : " is listed twice");
    }
  }
  std::vector<Unit> all_units;
  const std::vector<Bucket> buckets = make_buckets(o.shapes);
  for (const std::string& spec : o.ops) {
    const KernelIdentity id = parse_identity_spec(spec);
    const std::string canonical = identity_spec(id);
    for (const Bucket& b : buckets) {
      for (const int t : thread_counts) {
        Unit u{canonical, id, b, t};
        if (thread_counts.size() > 1) u.bucket.name = bucket_name_at_threads(b.name, t);
        all_units.push_back(u);
      }
    }
  }
  std::vector<Unit> units;
  for (std::size_t i = 0; i < all_units.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(o.shard_count)) == o.shard_index)
      units.push_back(all_units[i]);
  }

  Database db = Database::open(o.db, /*writable=*/true);
  Progress progress(o.quiet);
  for (const std::string& w : db.warnings()) progress.line("mmtune autotune: warning: " + w);
  const int max_threads = *std::max_element(thread_counts.begin(), thread_counts.end());
  const nlohmann::json prov = provenance(max_threads);
  const std::string scratch = o.out + "/.work";
  std::filesystem::create_directories(scratch);
  WorkerPool pool(o.exe, scratch, o.jobs, o.timeout_s);
  InterruptGuard guard;

  const std::string measure_lock = scratch + "/measure.lock";
  // The machine's peak FLOP/s and memory bandwidth, for the report's roofline: measured again by
  // every run that writes a report (a resumed run too), under the timer's lock.
  nlohmann::json machine;
  if (remote) {
    progress.line("mmtune autotune: " + target + " through its kernel runner (" +
                  (o.runner.empty() ? "qemu" : o.runner) + "), cost " + cost + ": " +
                  cost_description(cost) +
                  "; no BLAS or autoscheduler baselines and no machine figures for it");
  }
  if (o.emit && !remote) {
    std::vector<int> threads = {1, max_threads, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))};
    {
      FileLock turn(measure_lock);
      machine = measure_machine(threads);
    }
    machine["time"] = utc_now();
    machine["cpu"] = prov.value("cpu", "");
    machine["cores"] = prov.value("cores", 0);
    machine["run_threads"] = max_threads;
    write_json_atomically(machine, o.out + "/machine.json");
    std::ostringstream os;
    os << "mmtune autotune: this machine: peak";
    for (const auto& e : machine["peak"]) {
      os << " " << rate_text(e["flops"].get<double>()) << " (" << e["threads"].get<int>() << "t)";
    }
    os << " float32 FLOP/s (" << machine["vector"].get<std::string>() << "), memory";
    for (const auto& e : machine["bandwidth"]) {
      os << " " << std::fixed << std::setprecision(1) << e["bytes_per_s"].get<double>() / 1e9
         << " GB/s (" << e["threads"].get<int>() << "t)";
    }
    os << ", measured in " << std::setprecision(2) << machine["seconds"].get<double>() << " s";
    progress.line(os.str());
  }

  TuneSummary summary;
  summary.units = static_cast<int>(units.size());
  const auto run_start = Clock::now();
  std::map<std::string, int> outcome_counts;  // of the current unit, for the progress line
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - run_start).count(); };

  // The unit's records of one stage: "" (the search) or "final" of this run's strategy, or
  // "baseline" (any).
  auto records_of = [&](const Unit& u, const std::string& stage) {
    std::vector<const Record*> rs;
    for (const Record& r : db.records()) {
      if (r.identity == u.identity && r.target == target && r.bucket == u.bucket.name &&
          r.extra.value("stage", "") == stage &&
          (stage == "baseline" || r.extra.value("strategy", "evolutionary") == o.strategy)) {
        rs.push_back(&r);
      }
    }
    return rs;
  };
  double unit_start = 0;  // elapsed() when the current unit began
  int unit_threads = 1;   // the current unit's
  auto store = [&](Record r, const std::string& strategy, const std::string& stage) {
    r.provenance = prov;
    r.provenance["threads"] = unit_threads;
    // The load when this record was written (the run's start says little about an hour later).
    double load[3];
    if (::getloadavg(load, 3) == 3) r.provenance["load_average"] = {load[0], load[1], load[2]};
    if (!strategy.empty()) r.extra["strategy"] = strategy;
    r.extra["seed"] = o.seed;
    r.extra["elapsed_s"] = elapsed();
    r.extra["unit_s"] = elapsed() - unit_start;  // since this identity x bucket began
    r.extra["time"] = utc_now();
    if (!stage.empty()) r.extra["stage"] = stage;
    if (db.contains(r.key())) return;  // a duplicate of a crashed job's sibling: kept once
    db.append(r);
    ++summary.new_records;
    ++outcome_counts[(stage.empty() ? "" : stage + "_") + outcome_name(r.outcome)];
  };

  for (std::size_t ui = 0; ui < units.size() && g_interrupts == 0; ++ui) {
    const Unit& u = units[ui];
    outcome_counts.clear();  // the progress line counts this unit's outcomes
    const NamedShape shape = u.bucket.representative();
    unit_start = elapsed();
    const schedules::Accumulator acc = accumulator_of(u.id);
    Strategy strategy(o.strategy, info, acc,
                      mix(o.seed, u.identity + "|" + u.bucket.name + "|" + o.strategy));
    unit_threads = u.threads;
    strategy.set_threads(u.threads);
    std::vector<const Record*> existing = records_of(u, "");
    for (const Record* r : existing) strategy.mark_seen(r->schedule);
    summary.resumed += static_cast<int>(existing.size());
    // Seeds: the incumbents (--ops-from), then the best schedules of the same identity's other
    // buckets. A prepacked identity (prepacked_b=true) also starts from its plain identity's:
    // the same calls, B packed per call.
    bool prepacked = false;
    const std::string plain = identity_spec(without_prepacked(u.id, &prepacked));
    std::vector<schedules::Schedule> seeds;
    std::vector<std::string> seed_from = {u.identity};
    if (prepacked) seed_from.push_back(plain);
    for (const std::string& from : seed_from) {
      auto inc = o.incumbents.find(from);
      if (inc == o.incumbents.end()) continue;
      for (const nlohmann::json& s : inc->second) {
        try {
          seeds.push_back(s.get<schedules::Schedule>());
        } catch (const std::exception& e) {
          progress.line("mmtune autotune: warning: an incumbent schedule of " + from +
                        " is not a schedule (" + e.what() + "): " + s.dump());
        }
      }
    }
    {
      std::vector<Record> same;
      for (const Record& r : db.records()) {
        if (r.target != target || is_baseline(r)) continue;
        if ((r.identity == u.identity && r.bucket != u.bucket.name) ||
            (prepacked && r.identity == plain))
          same.push_back(r);
      }
      for (const auto& [g, w] : best_records(same)) {
        try {
          seeds.push_back(w.record->schedule.get<schedules::Schedule>());
        } catch (const std::exception&) {
        }
      }
    }
    const double remaining_budget = o.budget_s > 0 ? o.budget_s - elapsed() : 0;
    const double unit_deadline =
        o.budget_s > 0 ? elapsed() + remaining_budget / double(units.size() - ui) : 1e300;
    // Every unit measures at least one candidate (the template's default) even when the budget
    // is spent, so that every identity and bucket gets a kernel.
    int tried = static_cast<int>(existing.size());
    auto make_job = [&](std::vector<nlohmann::json> schedules_json, bool full) {
      Job job;
      job.identity = u.identity;
      job.target = target;
      job.schedules = std::move(schedules_json);
      job.bucket = u.bucket.name;
      job.shape = {shape.m, shape.n, shape.k};
      job.full_gate = full;
      job.measure = o.measure;
      job.measure.threads = u.threads;
      job.measure_lock = measure_lock;
      job.inject_fault = o.inject_fault;
      job.seed = mix(o.seed, u.identity + u.bucket.name);
      job.cost = cost;
      job.runner = o.runner;
      job.work = std::filesystem::absolute(scratch).string();
      return job;
    };
    auto status = [&] {
      double best_rate = 0;
      for (const Record* r : records_of(u, "")) best_rate = std::max(best_rate, r->rate);
      std::ostringstream os;
      os << "[" << (ui + 1) << "/" << units.size() << "] " << u.identity << " " << u.bucket.name
         << ": " << tried << "/" << o.max_candidates << " candidates";
      for (const auto& [name, n] : outcome_counts) os << " " << name << "=" << n;
      if (cost == kCostQemuInstructions) {
        os << ", best " << std::fixed << std::setprecision(3) << best_rate << " op/instruction";
      } else {
        os << ", best " << rate_text(best_rate);
      }
      os << ", " << static_cast<int>(elapsed()) << " s";
      if (o.budget_s > 0)
        os << ", ETA " << static_cast<int>(std::max(0.0, o.budget_s - elapsed())) << " s";
      return os.str();
    };
    progress.line("mmtune autotune: " + u.identity + " bucket " + u.bucket.name + " (" +
                  std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" +
                  std::to_string(shape.k) + ", " + std::to_string(existing.size()) +
                  " candidates in the database)");
    // The BLAS libraries that compute the same thing, timed here (they do not crash) before the
    // candidates, each once per database.
    for (const std::string& name : remote ? std::vector<std::string>{} : blas_baselines(u.id)) {
      const nlohmann::json schedule = {{"baseline", name}};
      const Job job = make_job({schedule}, false);
      if (g_interrupts > 0 || db.contains(baseline_stub(job).key())) continue;
      progress.update("[" + std::to_string(ui + 1) + "/" + std::to_string(units.size()) + "] " +
                      u.identity + " " + u.bucket.name + ": timing the " + name + " baseline");
      store(evaluate_baseline(job), "", "baseline");
    }
    bool exhausted = false;
    while (g_interrupts == 0) {
      while (!pool.full() && !exhausted && tried < o.max_candidates &&
             (elapsed() < unit_deadline || tried == 0) && g_interrupts == 0) {
        // The identity's search records of this strategy, every bucket (no finalists, no
        // baselines, no other strategy's experiment).
        std::vector<const Record*> known;
        for (const Record& r : db.records()) {
          if (r.identity == u.identity && r.target == target &&
              r.extra.value("stage", "").empty() &&
              r.extra.value("strategy", "evolutionary") == o.strategy)
            known.push_back(&r);
        }
        const std::vector<schedules::Schedule> next =
            strategy.next(1, known, u.bucket.name, {shape.m, shape.n, shape.k}, seeds);
        if (next.empty()) {
          exhausted = true;
          break;
        }
        pool.submit(make_job({nlohmann::json(next[0])}, false));
        ++tried;
      }
      if (pool.idle()) break;
      for (Record& r : pool.collect(0.5)) store(r, o.strategy, "");
      progress.update(status());
    }
    // Ctrl-C: the in-flight candidates finish into the database (a second Ctrl-C kills them).
    while (!pool.idle()) {
      if (g_interrupts >= 2) {
        pool.kill_all();
        break;
      }
      for (Record& r : pool.collect(0.5)) store(r, o.strategy, "");
    }
    if (g_interrupts > 0) break;
    // Finalists: the best few, fully gated and re-measured interleaved in one worker.
    if (o.finalists > 0 && records_of(u, "final").empty()) {
      std::vector<const Record*> passed;
      for (const Record* r : records_of(u, "")) {
        if (r->outcome == Outcome::kPassed && r->rate > 0) passed.push_back(r);
      }
      std::sort(passed.begin(), passed.end(),
                [](const Record* a, const Record* b) { return a->rate > b->rate; });
      if (static_cast<int>(passed.size()) > o.finalists) passed.resize(o.finalists);
      if (!passed.empty()) {
        std::vector<nlohmann::json> finalists;
        for (const Record* r : passed) finalists.push_back(r->schedule);
        // At the shape the search timed (the full battery), then at each other listed shape of
        // the bucket, one job after the other (nothing compiles while they time): a finalist is
        // ranked by its geometric mean over the bucket's shapes (combine_shape_records).
        std::vector<NamedShape> at = {shape};
        for (const NamedShape& s : u.bucket.shapes) {
          if (s.m != shape.m || s.n != shape.n || s.k != shape.k) at.push_back(s);
        }
        std::map<std::string, std::vector<Record>> measured;  // schedule text -> one per shape
        for (std::size_t si = 0; si < at.size() && g_interrupts == 0; ++si) {
          Job job = make_job(finalists, si == 0);
          job.shape = {at[si].m, at[si].n, at[si].k};
          pool.submit(job);
          while (!pool.idle()) {
            if (g_interrupts >= 2) {
              pool.kill_all();
              break;
            }
            for (Record& r : pool.collect(0.5)) measured[r.schedule.dump()].push_back(r);
          }
        }
        if (g_interrupts == 0) {
          for (const nlohmann::json& f : finalists) {
            auto it = measured.find(f.dump());
            if (it != measured.end()) store(combine_shape_records(it->second), o.strategy, "final");
          }
        }
      }
    }
    // Baselines: each autoscheduler on the same algorithm, once per unit (a resumed run skips the
    // ones in the database), --jobs at once, gated and timed as the candidates.
    for (const std::string& name : remote ? std::vector<std::string>{} : baselines) {
      if (g_interrupts > 0) break;
      // Gated on the bucket's shape only, it is another record than under the full gate.
      nlohmann::json schedule = {{"baseline", name}};
      if (o.baseline_bucket_gate) schedule["gate"] = "bucket";
      Job job = make_job({schedule}, false);
      job.baseline = name;
      job.bucket_gate = o.baseline_bucket_gate;
      Record probe;
      probe.identity = u.identity;
      probe.target = target;
      probe.bucket = u.bucket.name;
      probe.schedule = job.schedules[0];
      probe.extra["stage"] = "baseline";
      if (db.contains(probe.key())) {
        ++summary.resumed;
        continue;
      }
      while (pool.full() && g_interrupts < 2) {
        for (Record& r : pool.collect(0.5)) store(r, "baseline", "baseline");
        progress.update(status());
      }
      if (g_interrupts > 0) break;
      pool.submit(job);
    }
    while (!pool.idle()) {
      if (g_interrupts >= 2) {
        pool.kill_all();
        break;
      }
      for (Record& r : pool.collect(0.5)) store(r, "baseline", "baseline");
      progress.update(status());
    }
    progress.line(status());
  }
  summary.interrupted = g_interrupts > 0;
  if (o.emit && !summary.interrupted) {
    summary.tuned = o.out + "/tuned/" + target + ".json";
    write_json_atomically(tuned_database(db.records(), target, o.parallel_only), summary.tuned);
  }
  if (o.emit) {
    summary.report = o.out + "/report.html";
    write_text_atomically(render_report(db.records(), target, machine), summary.report);
  }
  return summary;
}

}  // namespace mmtune::tune
