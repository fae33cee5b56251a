// The tuning database: append-only JSON Lines, one object per candidate the tuner tried, whatever
// became of it (failures are data). Each record is flushed and fsynced as it is written; an
// exclusive lock keeps a second writer out; a torn last line (a crash mid-write) is detected,
// reported and dropped when the file is opened. `mmtune db merge` unions databases written by
// independent shards; `mmtune db best` and `mmtune emit` read the winners from one.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mmtune::tune {

// What became of a candidate.
enum class Outcome {
  kPassed,       // the gate found every output bit-exact; measured
  kIncorrect,    // the gate found a wrong output (or a write outside it); never chosen
  kBuildFailed,  // the compile failed or its worker died while compiling
  kRunFailed,    // the kernel failed or its worker died while running
  kTimeout,      // its worker exceeded the time allowed and was killed
  kInvalid,      // the schedule does not fit the target or the sum (never compiled)
};
const char* outcome_name(Outcome o);
// InvalidArgument naming the text for anything but the six names above.
Outcome parse_outcome(const std::string& text);

// One candidate's record. Known keys are typed; the JSON object keeps every key, so records written
// by newer versions survive a merge.
struct Record {
  std::string identity;  // kernel identity spec, "Gemm:float32:contract=fma"
  std::string bucket;    // shape bucket, "m9-64.n257-2048.k257-2048"
  std::string target;    // Halide target string
  nlohmann::json schedule;
  std::vector<int64_t> shape;  // M, N, K it was measured on
  Outcome outcome = Outcome::kInvalid;
  std::vector<double> samples_s;  // seconds per call, every sample
  double rate = 0;      // 2*M*N*K / median seconds (0 unless passed; a baseline's whenever timed)
  nlohmann::json gate;  // cases and outputs compared, first mismatch
  nlohmann::json provenance;  // CPU, Halide, mmtune, compiler, date, load average
  std::string detail;         // why it failed, in a sentence
  nlohmann::json extra = nlohmann::json::object();  // any other key

  // The candidate's key: identity, target, bucket, schedule, stage (extra "stage": "final" for
  // a finalist's re-measurement, "baseline" for a baseline's) and strategy (extra "strategy": each
  // strategy's search is its own experiment). A database holds each key once (a resumed run never
  // measures a candidate twice).
  std::string key() const;
  nlohmann::json to_json() const;
  // InvalidArgument naming the missing or mistyped key.
  static Record from_json(const nlohmann::json& j);
};

// A database file opened for reading, and for appending when `writable`.
class Database {
 public:
  // Reads every record. A last line without its newline, or one that is not a JSON object, is a
  // torn write: it is reported in warnings() and, when writable, cut off the file. Any other
  // malformed line is an InvalidArgument naming the file and line. When writable, the file (and
  // its folder) is created if missing and locked: a second writer gets InvalidArgument naming it.
  static Database open(const std::string& path, bool writable);
  Database(Database&& o) noexcept;
  Database& operator=(Database&&) = delete;
  Database(const Database&) = delete;
  ~Database();

  const std::string& path() const { return path_; }
  const std::vector<Record>& records() const { return records_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  bool contains(const std::string& key) const { return keys_.count(key) != 0; }

  // Writes one line and fsyncs it before returning; the record's key must be new.
  void append(const Record& r);

 private:
  Database() = default;
  std::string path_;
  int fd_ = -1;
  std::vector<Record> records_;
  std::set<std::string> keys_;
  std::vector<std::string> warnings_;
};

// The union of `inputs` (first occurrence of each key kept, in input order), written to `output`
// whole or not at all. Returns the number of records written; warnings of the inputs are appended
// to `warnings`.
std::size_t merge_databases(const std::vector<std::string>& inputs, const std::string& output,
                            std::vector<std::string>* warnings = nullptr);

// A baseline's record (extra "stage": "baseline", schedule {"baseline": NAME}): what the winners
// are compared with (Halide's autoschedulers on the same algorithm, libraries), timed on the
// bucket's shape as candidates are; never a candidate, never a winner.
bool is_baseline(const Record& r);
// The name of a baseline record ("Adams2019", "openblas", ...), or "" for any other record.
std::string baseline_name(const Record& r);

// The winner of each (identity, target, bucket): the passed finalist re-measurement with the
// highest rate, else the passed search record with the highest rate. Baseline records are never
// winners and are not counted.
struct Winner {
  const Record* record;
  int candidates = 0;  // search and finalist records of its bucket, any outcome
  int passed = 0;
};
std::map<std::string, Winner> best_records(const std::vector<Record>& records);

// One finalist re-measured at every listed shape of its bucket (the records of one schedule, the
// representative shape's first): the representative's record (its shape, samples and gate), its
// rate the geometric mean of the shapes' rates, extra "shape_rates" [{"shape": [M, N, K], "rate":
// R, "outcome": O}] each; not passed (the first failing shape's outcome, its detail naming the
// shape) unless every shape passed. A bucket spans shapes whose best schedules differ (128 x 4096
// x 4096 wants strips for its two tasks, 1024^3 does not); ranked at its median shape alone, the
// winner can lose 20 % at the others. One record: unchanged.
Record combine_shape_records(const std::vector<Record>& at_shapes);

// A record's measurement noise: the interquartile range of its samples over their median (0 with
// fewer than 4 samples).
double relative_spread(const Record& r);

// Buckets whose winners are within measurement noise of each other share one kernel. For each
// (identity, target), schedule S may serve bucket B when S passed in B at a rate within the noise
// of B's winner: rate(S, B) >= rate(winner) * (1 - t), with t = max(kMergeNoiseFloor, spread of
// either) but at most kMergeNoiseCap, and S's finalist re-measurement in B preferred to its
// search record. Rates compare within a stage: when B's winner is a finalist, a search record is
// compared with B's best search record (the finalists are re-measured interleaved, which reads
// lower). (On a loaded machine the samples spread by 10-25 %; a schedule merged in at 6-18 %
// behind its bucket's winner at the one shape timed lost up to 2x at the bucket's other shapes:
// docs/performance.md, 2026-12-01.) The fewest schedules serving every bucket are chosen greedily
// (most buckets first, then one that splits into parallel tasks, then the higher summed rate),
// each bucket taking the chosen schedule with its best rate there. Every bucket of `best` gets one
// entry, keyed like best_records. (Candidates are timed on the run's thread count; a parallel
// schedule within the noise of a serial winner is as fast there and scales with the threads a
// user sets, the serial one does not.)
constexpr double kMergeNoiseFloor = 0.03;
constexpr double kMergeNoiseCap = 0.05;
// Whether a record's schedule splits its shape into two or more parallel tasks (cpu_matmul and the
// templates sharing its knobs: "parallel" true, and more than one strip, row block or tile row;
// with B prepacked, the row blocks or tile rows of every strip count). Rows are counted at the
// smallest M of the shape's bucket (a kernel serves its whole bucket: 128-row blocks timed at 256^3
// are two tasks there but one for every call of up to 128 rows).
bool runs_parallel(const Record& r);
struct Serving {
  const Record* winner;  // the bucket's own winner (best_records)
  const Record* served;  // the record of the schedule that serves it, in this bucket
  double tolerance;      // the relative noise allowed for this bucket
};
std::map<std::string, Serving> merge_within_noise(const std::vector<Record>& records,
                                                  const std::map<std::string, Winner>& best);

}  // namespace mmtune::tune
