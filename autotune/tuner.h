// `mmtune autotune`: for each kernel identity and shape bucket, a search over the schedule
// template's space in which every candidate is compiled in a worker process, gated bit for bit
// against the reference, and timed; every outcome is a database record, so a run can stop at any
// moment and resume; the winners become the tuned database the build consumes.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/shape_list.h"
#include "autotune/tune_worker.h"
#include "autotune/tuning_db.h"

namespace mmtune::tune {

struct TuneOptions {
  std::vector<std::string> ops;    // identity specs (autotune/tune_inputs.h)
  std::vector<NamedShape> shapes;  // the shape list; buckets derive from it
  // Canonical identity spec -> schedules tried first in each of its buckets (--ops-from: the
  // schedules a database ships, so that a winner is never worse than them)
  std::map<std::string, std::vector<nlohmann::json>> incumbents;
  std::string target = "host";  // Halide target (resolved by the tuner)
  double budget_s = 0;          // whole run; 0: no time limit (max_candidates bounds it)
  int max_candidates = 12;      // per (identity, bucket), finalists excluded
  int jobs = 1;                 // workers compiling and gating at once
  double timeout_s = 180;       // per compile-and-gate
  int finalists = 3;            // re-measured interleaved, fully gated
  // Halide autoschedulers (jit::autoschedulers()) run on each unit after its finalists, gated and
  // timed as candidates: records of stage "baseline", never winners.
  std::vector<std::string> baselines = {"Adams2019", "Mullapudi2016", "Li2018"};
  // The baselines' gate: only the cases of the bucket's own shape (true: an autoscheduler's kernel
  // is made for its estimates and often refuses shapes below its tiles), or the candidates' whole
  // battery (false). Baselines are compared with, never shipped.
  bool baseline_bucket_gate = true;
  std::string db;   // the database (JSON Lines)
  std::string out;  // tuned/<target>.json and report go here
  uint64_t seed = 1;
  int shard_index = 0, shard_count = 1;
  std::string strategy = "evolutionary";
  bool quiet = false;
  bool emit = true;            // write tuned/<target>.json at the end
  bool parallel_only = false;  // its winners split into parallel tasks where any passed that did
  std::string exe;             // this program (workers are its children)
  std::string inject_fault;    // tests only (tune_worker.h)
  MeasureOptions measure;      // measure.threads: the thread count when thread_counts is empty
  // More than one: every bucket is tuned at each of these thread counts (a unit each, bucket names
  // bucket_name_at_threads), and the emitted database gives a bucket a thread range per count
  // where their winners differ (tuned_database).
  std::vector<int> thread_counts;
  // A target reached through a kernel runner (autotune/tune_remote.h): the runner command ("" for
  // the target's default, qemu) and the cost ("" for the default: qemu_instructions without a
  // runner, device_time with one).
  std::string runner;
  std::string cost;
};

struct TuneSummary {
  int units = 0;        // (identity, bucket) pairs of this shard
  int new_records = 0;  // written by this run
  int resumed = 0;      // found in the database, not measured again
  bool interrupted = false;
  std::string tuned;   // path of the tuned database written, if any
  std::string report;  // path of report.html, if written
};

TuneSummary autotune(const TuneOptions& o);

// Whether the options' target is tuned through a kernel runner (a target this CPU cannot run, or
// --runner / --cost given) rather than in this process's workers.
bool tunes_remotely(const TuneOptions& o);

// This run's provenance: CPU model and flags, Halide version, mmtune commit, compiler, date, load
// average, threads.
nlohmann::json provenance(int threads);

// The tuned database of `target` from the winners in `records` (final re-measurements preferred):
// one kernel per winning schedule, serving every bucket it won; names per docs/naming.md. With
// parallel_only, a bucket where a schedule that splits into parallel tasks passed
// (tuning_db.h, runs_parallel) is won by such a schedule: the serial ones there are passed over.
// (Candidates are timed at the run's thread count: at 1 thread a serial schedule can win by a few
// percent and then use one core whatever set_num_threads says; docs/performance.md, 2026-12-02.)
// Buckets tuned at several thread counts (names bucket_name_at_threads) get thread ranges,
// threads_min / threads_max, where their winners differ (a count's range ends before the next
// count tuned), none where one kernel wins every count; under parallel_only a serial schedule may
// win the 1-thread bucket.
nlohmann::json tuned_database(const std::vector<Record>& records, const std::string& target,
                              bool parallel_only = false);

// Writes `j` to `path` (pretty, 2 spaces) whole or not at all.
void write_json_atomically(const nlohmann::json& j, const std::string& path);
void write_text_atomically(const std::string& text, const std::string& path);

}  // namespace mmtune::tune
