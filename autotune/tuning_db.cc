// The tuning database: JSON Lines, fsynced appends, a writer lock, torn-line recovery.
#include "autotune/tuning_db.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "autotune/atomic_file.h"
#include "autotune/tune_buckets.h"
#include "reference/error.h"

namespace mmtune::tune {
namespace {

constexpr const char* kOutcomes[] = {"passed",     "incorrect", "build_failed",
                                     "run_failed", "timeout",   "invalid"};

std::string errno_text() { return std::strerror(errno); }

std::string read_whole(const std::string& path, int fd) {
  std::string text;
  if (fd >= 0) {
    char buf[1 << 16];
    if (::lseek(fd, 0, SEEK_SET) < 0) invalid("database", path, ": cannot seek: ", errno_text());
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) invalid("database", path, ": cannot read: ", errno_text());
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    return text;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) invalid("database", "cannot open '", path, "' for reading");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

const nlohmann::json& require(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) invalid("database record", "has no '", key, "' key");
  return *it;
}

template <class T>
T typed(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = require(j, key);
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    invalid("database record", "'", key, "' has the wrong type: ", v.dump());
  }
}

}  // namespace

const char* outcome_name(Outcome o) { return kOutcomes[static_cast<int>(o)]; }

Outcome parse_outcome(const std::string& text) {
  for (int i = 0; i < 6; ++i) {
    if (text == kOutcomes[i]) return static_cast<Outcome>(i);
  }
  invalid("database record", "outcome '", text,
          "' is not passed, incorrect, build_failed, run_failed, timeout or invalid");
}

std::string Record::key() const {
  std::string k = identity + "|" + target + "|" + bucket + "|" + schedule.dump();
  if (extra.contains("stage")) k += "|" + extra["stage"].dump();
  // Each strategy's search is its own experiment (random against evolutionary at equal budget).
  if (extra.contains("strategy")) k += "|" + extra["strategy"].dump();
  return k;
}

nlohmann::json Record::to_json() const {
  nlohmann::json j = extra.is_object() ? extra : nlohmann::json::object();
  j["identity"] = identity;
  j["bucket"] = bucket;
  j["target"] = target;
  j["schedule"] = schedule;
  j["shape"] = shape;
  j["outcome"] = outcome_name(outcome);
  j["samples_s"] = samples_s;
  j["rate"] = rate;
  j["gate"] = gate.is_null() ? nlohmann::json::object() : gate;
  j["provenance"] = provenance.is_null() ? nlohmann::json::object() : provenance;
  if (!detail.empty()) j["detail"] = detail;
  return j;
}

Record Record::from_json(const nlohmann::json& j) {
  if (!j.is_object()) invalid("database record", "is not a JSON object: ", j.dump());
  Record r;
  r.identity = typed<std::string>(j, "identity");
  r.bucket = typed<std::string>(j, "bucket");
  r.target = typed<std::string>(j, "target");
  r.schedule = require(j, "schedule");
  r.shape = typed<std::vector<int64_t>>(j, "shape");
  r.outcome = parse_outcome(typed<std::string>(j, "outcome"));
  r.samples_s = typed<std::vector<double>>(j, "samples_s");
  r.rate = typed<double>(j, "rate");
  r.gate = require(j, "gate");
  r.provenance = require(j, "provenance");
  if (j.contains("detail")) r.detail = typed<std::string>(j, "detail");
  for (auto it = j.begin(); it != j.end(); ++it) {
    static const std::set<std::string> known = {"identity", "bucket",     "target",    "schedule",
                                                "shape",    "outcome",    "samples_s", "rate",
                                                "gate",     "provenance", "detail"};
    if (!known.count(it.key())) r.extra[it.key()] = it.value();
  }
  return r;
}

Database Database::open(const std::string& path, bool writable) {
  Database db;
  db.path_ = path;
  if (writable) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) invalid("database", "cannot create the folder of '", path, "': ", ec.message());
    db.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (db.fd_ < 0) invalid("database", "cannot open '", path, "' for writing: ", errno_text());
    if (::flock(db.fd_, LOCK_EX | LOCK_NB) != 0) {
      const std::string why = errno == EWOULDBLOCK
                                  ? "another process is writing it (one writer per database; "
                                    "give each shard its own --db)"
                                  : errno_text();
      ::close(db.fd_);
      db.fd_ = -1;
      invalid("database", "cannot lock '", path, "': ", why);
    }
  }
  const std::string text = read_whole(path, db.fd_);
  std::size_t pos = 0, good_end = 0;
  int line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    const std::size_t nl = text.find('\n', pos);
    const bool complete = nl != std::string::npos;
    const std::string line = text.substr(pos, complete ? nl - pos : std::string::npos);
    const std::size_t next = complete ? nl + 1 : text.size();
    const bool last = next >= text.size();
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!complete || j.is_discarded() || !j.is_object()) {
      if (!last) {
        invalid("database", path, ":", line_no, ": not a JSON object (", line.substr(0, 80),
                "...); only a database's last line may be torn");
      }
      std::ostringstream os;
      os << path << ":" << line_no << ": torn last line (" << line.size()
         << " bytes, an interrupted write) dropped";
      db.warnings_.push_back(os.str());
      break;
    }
    Record r;
    try {
      r = Record::from_json(j);
    } catch (const InvalidArgument& e) {
      invalid("database", path, ":", line_no, ": ", e.what());
    }
    if (db.keys_.insert(r.key()).second) db.records_.push_back(std::move(r));
    pos = next;
    good_end = next;
  }
  if (writable && good_end < text.size()) {
    if (::ftruncate(db.fd_, static_cast<off_t>(good_end)) != 0 || ::fsync(db.fd_) != 0) {
      invalid("database", "cannot cut the torn last line off '", path, "': ", errno_text());
    }
  }
  return db;
}

Database::Database(Database&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(std::exchange(o.fd_, -1)),
      records_(std::move(o.records_)),
      keys_(std::move(o.keys_)),
      warnings_(std::move(o.warnings_)) {}

Database::~Database() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

void Database::append(const Record& r) {
  MMTUNE_CHECK(fd_ >= 0, "database " << path_ << " was opened read-only");
  const std::string key = r.key();
  MMTUNE_CHECK(!keys_.count(key), "database " << path_ << " already holds " << key);
  const std::string line = r.to_json().dump() + "\n";
  if (!write_all(fd_, reinterpret_cast<const uint8_t*>(line.data()), line.size()) ||
      ::fsync(fd_) != 0) {
    invalid("database", "cannot append to '", path_, "': ", errno_text());
  }
  keys_.insert(key);
  records_.push_back(r);
}

std::size_t merge_databases(const std::vector<std::string>& inputs, const std::string& output,
                            std::vector<std::string>* warnings) {
  std::vector<Record> all;
  std::set<std::string> keys;
  for (const std::string& in : inputs) {
    Database db = Database::open(in, /*writable=*/false);
    if (warnings) warnings->insert(warnings->end(), db.warnings().begin(), db.warnings().end());
    for (const Record& r : db.records()) {
      if (keys.insert(r.key()).second) all.push_back(r);
    }
  }
  const std::filesystem::path out(output);
  std::error_code ec;
  if (!out.parent_path().empty()) std::filesystem::create_directories(out.parent_path(), ec);
  std::string text;
  for (const Record& r : all) text += r.to_json().dump() + "\n";
  write_file_atomically(output, "the merged database", text);
  return all.size();
}

bool is_baseline(const Record& r) {
  return r.extra.is_object() && r.extra.value("stage", "") == "baseline";
}

std::string baseline_name(const Record& r) {
  if (!is_baseline(r)) return "";
  if (r.schedule.is_object() && r.schedule.contains("baseline") &&
      r.schedule["baseline"].is_string()) {
    return r.schedule["baseline"].get<std::string>();
  }
  return r.schedule.dump();
}

std::map<std::string, Winner> best_records(const std::vector<Record>& records) {
  std::map<std::string, Winner> best;
  for (const Record& r : records) {
    if (is_baseline(r)) continue;
    const std::string group = r.identity + "|" + r.target + "|" + r.bucket;
    Winner& w = best.try_emplace(group, Winner{nullptr}).first->second;
    ++w.candidates;
    if (r.outcome != Outcome::kPassed) continue;
    ++w.passed;
    // A finalist's interleaved re-measurement outranks every search record of its bucket.
    const auto final_stage = [](const Record* x) { return x->extra.value("stage", "") == "final"; };
    if (!w.record || final_stage(&r) > final_stage(w.record) ||
        (final_stage(&r) == final_stage(w.record) && r.rate > w.record->rate)) {
      w.record = &r;
    }
  }
  for (auto it = best.begin(); it != best.end();) {
    it = it->second.record ? std::next(it) : best.erase(it);
  }
  return best;
}

Record combine_shape_records(const std::vector<Record>& at_shapes) {
  MMTUNE_CHECK(!at_shapes.empty(), "combine_shape_records: no records");
  Record out = at_shapes.front();
  if (at_shapes.size() == 1) return out;
  nlohmann::json rates = nlohmann::json::array();
  double log_sum = 0;
  const Record* failed = nullptr;
  for (const Record& r : at_shapes) {
    MMTUNE_CHECK(r.schedule == out.schedule && r.identity == out.identity && r.bucket == out.bucket,
                 "combine_shape_records: records of different candidates: "
                     << r.schedule.dump() << " in " << r.bucket << ", " << out.schedule.dump()
                     << " in " << out.bucket);
    rates.push_back({{"shape", r.shape}, {"rate", r.rate}, {"outcome", outcome_name(r.outcome)}});
    if (r.outcome != Outcome::kPassed || !(r.rate > 0)) {
      if (!failed) failed = &r;
    } else {
      log_sum += std::log(r.rate);
    }
  }
  out.extra["shape_rates"] = rates;
  if (failed) {
    out.outcome = failed->outcome == Outcome::kPassed ? Outcome::kRunFailed : failed->outcome;
    out.detail =
        "at " + shape_text(failed->shape) + ", a shape of its bucket: " +
        (failed->detail.empty() ? std::string(outcome_name(failed->outcome)) : failed->detail);
    if (failed->outcome != Outcome::kPassed) out.gate = failed->gate;
    out.rate = 0;
    return out;
  }
  out.rate = std::exp(log_sum / double(at_shapes.size()));
  return out;
}

double relative_spread(const Record& r) {
  if (r.samples_s.size() < 4) return 0;
  std::vector<double> s = r.samples_s;
  std::sort(s.begin(), s.end());
  const auto at = [&](double q) { return s[static_cast<std::size_t>(q * double(s.size() - 1))]; };
  const double median = at(0.5);
  return median > 0 ? (at(0.75) - at(0.25)) / median : 0;
}

bool runs_parallel(const Record& r) {
  const nlohmann::json& s = r.schedule;
  const auto it = s.find("parallel");
  if (it == s.end() || !it->is_boolean() || !it->get<bool>() || r.shape.size() != 3) return false;
  // cpu_matmul's tasks (schedules/cpu/matmul_schedule.cc): strips of n_block columns, else blocks
  // of m_block rows, else rows of tiles; with B prepacked, every block (or tile row) of every
  // strip.
  auto knob = [&](const char* name) { return std::max<int64_t>(s.value(name, 0), 0); };
  auto ceil_div = [](int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 1; };
  // Rows at the smallest M of the timed shape's bucket (m65-256 -> 65), strips at the timed N: the
  // kernel serves every M of its bucket, and a row block as tall as the smallest makes those calls
  // one task.
  const int64_t n = r.shape[1];
  const int64_t m = tune::bucket_of(r.shape[0], n, r.shape[2]).m_min;
  const int64_t strips = knob("n_block") > 0 ? ceil_div(n, knob("n_block")) : 0;
  const int64_t rows = knob("m_block") > 0 ? ceil_div(m, knob("m_block"))
                                           : ceil_div(m, std::max<int64_t>(knob("tile_rows"), 1));
  // (A record's identity is its canonical spec, e.g. "QGemm:uint8,int8:prepacked_b=true".)
  const bool prepacked = r.identity.find("prepacked_b=true") != std::string::npos;
  const int64_t tasks = strips == 0 ? rows : prepacked ? strips * rows : strips;
  return tasks >= 2;
}

std::map<std::string, Serving> merge_within_noise(const std::vector<Record>& records,
                                                  const std::map<std::string, Winner>& best) {
  const auto final_stage = [](const Record& x) { return x.extra.value("stage", "") == "final"; };
  // Per (identity, target): bucket group -> schedule text -> that schedule's record in the bucket.
  std::map<std::string, std::map<std::string, std::map<std::string, const Record*>>> measured;
  std::map<std::string, double> best_search;  // bucket group -> its best search-stage rate
  for (const Record& r : records) {
    const std::string group = r.identity + "|" + r.target + "|" + r.bucket;
    if (r.outcome != Outcome::kPassed || r.rate <= 0 || !best.count(group)) continue;
    const std::string stage = r.extra.value("stage", "");
    if (!stage.empty() && stage != "final") continue;  // only the search and its finalists
    if (stage.empty()) best_search[group] = std::max(best_search[group], r.rate);
    const Record*& slot = measured[r.identity + "|" + r.target][group][r.schedule.dump()];
    if (!slot || final_stage(r) > final_stage(*slot) ||
        (final_stage(r) == final_stage(*slot) && r.rate > slot->rate)) {
      slot = &r;
    }
  }
  std::map<std::string, Serving> out;
  for (const auto& [family, buckets] : measured) {
    // Which buckets each schedule may serve, and its rate there.
    std::map<std::string, std::map<std::string, const Record*>> serves;  // schedule -> group -> rec
    std::map<std::string, double> tolerance;
    for (const auto& [group, by_schedule] : buckets) {
      const Record* w = best.at(group).record;
      const double tol = std::min(kMergeNoiseCap, std::max(kMergeNoiseFloor, relative_spread(*w)));
      // Rates compare within a stage: a finalist's interleaved re-measurement against the winner's,
      // a search record against the best search record (the two stages measure differently: the
      // finalists interleaved, the search one candidate at a time).
      const double search_best = best_search[group];
      for (const auto& [text, r] : by_schedule) {
        const double t = std::min(kMergeNoiseCap, std::max(tol, relative_spread(*r)));
        const double ref = final_stage(*r) || !final_stage(*w) ? w->rate : search_best;
        if (r == w || r->rate >= ref * (1 - t)) serves[text][group] = r;
      }
      tolerance[group] = tol;
    }
    std::set<std::string> uncovered;
    for (const auto& [group, by_schedule] : buckets) uncovered.insert(group);
    std::set<std::string> chosen;
    while (!uncovered.empty()) {
      std::string pick;
      std::size_t pick_count = 0;
      bool pick_parallel = false;
      double pick_sum = -1;
      for (const auto& [text, groups] : serves) {
        if (chosen.count(text)) continue;
        std::size_t count = 0;
        double sum = 0;
        for (const auto& [group, r] : groups) {
          if (uncovered.count(group)) {
            ++count;
            sum += r->rate / best.at(group).record->rate;
          }
        }
        // Whether it splits into parallel tasks, at the shape of a bucket it serves.
        bool parallel = false;
        for (const auto& [group, r] : groups) parallel |= runs_parallel(*r);
        const bool better =
            count > pick_count ||
            (count == pick_count && count > 0 &&
             (parallel > pick_parallel || (parallel == pick_parallel && sum > pick_sum)));
        if (better) {
          pick = text;
          pick_count = count;
          pick_parallel = parallel;
          pick_sum = sum;
        }
      }
      if (pick_count == 0) break;  // cannot happen: every winner serves its own bucket
      chosen.insert(pick);
      for (const auto& [group, r] : serves[pick]) uncovered.erase(group);
    }
    for (const auto& [group, by_schedule] : buckets) {
      const Record* w = best.at(group).record;
      const Record* served = nullptr;
      for (const std::string& text : chosen) {
        auto it = serves[text].find(group);
        if (it != serves[text].end() && (!served || it->second->rate > served->rate)) {
          served = it->second;
        }
      }
      out[group] = Serving{w, served ? served : w, tolerance[group]};
    }
  }
  return out;
}

}  // namespace mmtune::tune
