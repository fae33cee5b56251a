// The tuning database: records round-trip, fsynced appends survive a reopen, a torn last line is
// reported and cut off, a malformed line elsewhere is an error naming it, one writer at a time,
// merge unions by candidate key, best picks the fastest passed record (finalists first).
#include "autotune/tuning_db.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "autotune/kernel_key.h"
#include "autotune/tune_buckets.h"
#include "autotune/tune_inputs.h"
#include "autotune/tune_report.h"
#include "autotune/tuner.h"
#include "reference/error.h"
#include "tests/support/test_support.h"

namespace mmtune::tune {
namespace {

namespace fs = std::filesystem;

class TuningDb : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mmtune_db_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

Record record(int tile_rows, Outcome o, double rate,
              const std::string& bucket = "m1.n1-512.k1-512") {
  Record r;
  r.identity = "Gemm:float32";
  r.bucket = bucket;
  r.target = "x86-64-linux-avx2-fma";
  r.schedule = {{"template", "cpu_matmul"}, {"tile_rows", tile_rows}};
  r.shape = {1, 64, 64};
  r.outcome = o;
  r.rate = rate;
  r.samples_s = {1e-6, 1.1e-6};
  r.gate = {{"cases", 3}, {"outputs", 100}};
  r.provenance = {{"cpu", "test"}};
  return r;
}

// The kernels of the tuned database written from `rs`.
nlohmann::json tuned_database_kernels(const std::vector<Record>& rs) {
  return tuned_database(rs, "x86-64-linux-avx2-fma").at("kernels");
}

std::string read_text(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(TuningDb, RecordsRoundTripThroughAReopen) {
  {
    Database db = Database::open(path("db.jsonl"), true);
    db.append(record(4, Outcome::kPassed, 1e9));
    db.append(record(6, Outcome::kIncorrect, 0));
    Record extra = record(8, Outcome::kTimeout, 0);
    extra.extra["future_key"] = {1, 2};
    extra.detail = "killed";
    db.append(extra);
  }
  const Database db = Database::open(path("db.jsonl"), false);
  ASSERT_EQ(db.records().size(), 3u);
  EXPECT_TRUE(db.warnings().empty());
  EXPECT_EQ(db.records()[0].outcome, Outcome::kPassed);
  EXPECT_EQ(db.records()[0].rate, 1e9);
  EXPECT_EQ(db.records()[1].outcome, Outcome::kIncorrect);
  EXPECT_EQ(db.records()[2].extra.at("future_key"), nlohmann::json({1, 2}));
  EXPECT_EQ(db.records()[2].detail, "killed");
  EXPECT_TRUE(db.contains(record(6, Outcome::kPassed, 0).key()));  // the key ignores the outcome
  EXPECT_FALSE(db.contains(record(3, Outcome::kPassed, 0).key()));
  // Every line is one JSON object with the documented keys.
  std::ifstream in(path("db.jsonl"));
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    const auto j = nlohmann::json::parse(line);
    for (const char* key : {"identity", "bucket", "shape", "target", "schedule", "outcome",
                            "samples_s", "rate", "gate", "provenance"}) {
      EXPECT_TRUE(j.contains(key)) << key << " in " << line;
    }
  }
  EXPECT_EQ(lines, 3);
}

TEST_F(TuningDb, TornLastLineIsReportedAndCutOff) {
  {
    Database db = Database::open(path("db.jsonl"), true);
    db.append(record(4, Outcome::kPassed, 1e9));
    db.append(record(6, Outcome::kPassed, 2e9));
  }
  const std::string whole = read_text(path("db.jsonl"));
  // A crash in the middle of the third write.
  const std::string third = record(8, Outcome::kPassed, 3e9).to_json().dump();
  {
    std::ofstream out(path("db.jsonl"), std::ios::app | std::ios::binary);
    out << third.substr(0, third.size() / 2);
  }
  {
    const Database ro = Database::open(path("db.jsonl"), false);  // reading alone cuts nothing
    EXPECT_EQ(ro.records().size(), 2u);
    ASSERT_EQ(ro.warnings().size(), 1u);
    EXPECT_NE(ro.warnings()[0].find(":3: torn last line"), std::string::npos) << ro.warnings()[0];
  }
  EXPECT_NE(read_text(path("db.jsonl")), whole);
  {
    Database db = Database::open(path("db.jsonl"), true);
    EXPECT_EQ(db.records().size(), 2u);
    EXPECT_EQ(db.warnings().size(), 1u);
    EXPECT_EQ(read_text(path("db.jsonl")), whole);  // cut back to the last whole record
    db.append(record(8, Outcome::kPassed, 3e9));
  }
  const Database db = Database::open(path("db.jsonl"), false);
  EXPECT_EQ(db.records().size(), 3u);
  EXPECT_TRUE(db.warnings().empty());
}

TEST_F(TuningDb, MalformedLineBeforeTheLastIsAnError) {
  {
    std::ofstream out(path("db.jsonl"));
    out << record(4, Outcome::kPassed, 1).to_json().dump() << "\n"
        << "{not json\n"
        << record(6, Outcome::kPassed, 1).to_json().dump() << "\n";
  }
  const std::string msg =
      testing::invalid_argument_message([&] { (void)Database::open(path("db.jsonl"), false); });
  EXPECT_NE(msg.find("db.jsonl:2: not a JSON object"), std::string::npos) << msg;
  // A record without a required key, and an unknown outcome.
  {
    std::ofstream out(path("bad.jsonl"));
    nlohmann::json j = record(4, Outcome::kPassed, 1).to_json();
    j.erase("rate");
    out << j.dump() << "\n";
  }
  EXPECT_NE(testing::invalid_argument_message([&] {
              (void)Database::open(path("bad.jsonl"), false);
            }).find("bad.jsonl:1: database record: has no 'rate' key"),
            std::string::npos);
  EXPECT_NE(testing::invalid_argument_message([] {
              (void)parse_outcome("fast");
            }).find("outcome 'fast' is not passed"),
            std::string::npos);
}

TEST_F(TuningDb, OneWriterAtATime) {
  Database first = Database::open(path("db.jsonl"), true);
  const std::string msg =
      testing::invalid_argument_message([&] { (void)Database::open(path("db.jsonl"), true); });
  EXPECT_NE(msg.find("another process is writing it"), std::string::npos) << msg;
  // Readers are not locked out.
  EXPECT_NO_THROW((void)Database::open(path("db.jsonl"), false));
}

TEST_F(TuningDb, MergeUnionsByCandidateKeyAndBestPicksTheFastest) {
  {
    Database a = Database::open(path("a.jsonl"), true);
    a.append(record(4, Outcome::kPassed, 1e9));
    a.append(record(6, Outcome::kPassed, 3e9));
    Database b = Database::open(path("b.jsonl"), true);
    b.append(record(6, Outcome::kPassed, 9e9));  // the same candidate: a's record is kept
    b.append(record(8, Outcome::kIncorrect, 0));
    b.append(record(2, Outcome::kPassed, 2e9, "m2-8.n1-512.k1-512"));
  }
  EXPECT_EQ(merge_databases({path("a.jsonl"), path("b.jsonl")}, path("m/merged.jsonl")), 4u);
  const Database m = Database::open(path("m/merged.jsonl"), false);
  ASSERT_EQ(m.records().size(), 4u);
  const auto best = best_records(m.records());
  ASSERT_EQ(best.size(), 2u);
  const Winner& w = best.begin()->second.record->bucket == "m1.n1-512.k1-512"
                        ? best.begin()->second
                        : std::next(best.begin())->second;
  EXPECT_EQ(w.record->rate, 3e9);
  EXPECT_EQ(w.candidates, 3);
  EXPECT_EQ(w.passed, 2);
  // A finalist's re-measurement outranks the search records, even when slower.
  std::vector<Record> rs = m.records();
  Record fin = record(4, Outcome::kPassed, 2.5e9);
  fin.extra["stage"] = "final";
  EXPECT_NE(fin.key(), record(4, Outcome::kPassed, 1).key());
  rs.push_back(fin);
  for (const auto& [g, win] : best_records(rs)) {
    if (win.record->bucket == "m1.n1-512.k1-512") {
      EXPECT_EQ(win.record->rate, 2.5e9);
    }
  }
  // A baseline, however fast, is neither a winner nor a candidate; its key is its own.
  Record base = record(4, Outcome::kPassed, 1e12);
  base.schedule = {{"baseline", "openblas"}};
  base.extra["stage"] = "baseline";
  EXPECT_TRUE(is_baseline(base));
  EXPECT_FALSE(is_baseline(fin));
  const nlohmann::json kernels = tuned_database_kernels(rs);
  rs.push_back(base);
  for (const auto& [g, win] : best_records(rs)) {
    EXPECT_FALSE(is_baseline(*win.record)) << g;
    if (win.record->bucket == "m1.n1-512.k1-512") {
      EXPECT_EQ(win.record->rate, 2.5e9);
      EXPECT_EQ(win.candidates, 4);  // the finalist's record counts, the baseline's does not
    }
  }
  EXPECT_EQ(tuned_database_kernels(rs), kernels);
  // Merge of a missing file names it, and leaves no output.
  const std::string msg = testing::invalid_argument_message(
      [&] { merge_databases({path("missing.jsonl")}, path("out.jsonl")); });
  EXPECT_NE(msg.find("missing.jsonl"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(path("out.jsonl")));
}

TEST(TuningDbMerge, BucketsWithinNoiseShareOneScheduleOthersKeepTheirOwn) {
  const std::string a = "m1.n1-512.k1-512", b = "m2-8.n1-512.k1-512", c = "m65-.n1-512.k1-512";
  // Bucket a: schedule 4 wins (10), 6 is 2% behind (within the 3% floor). Bucket b: 6 wins (20),
  // 4 is 10% behind (outside). Bucket c: 8 wins (30), 6 at 29.4 (2% behind), 4 at 27 (10%).
  // The fewest schedules serving every bucket: 6 alone serves a, b and c.
  std::vector<Record> rs = {
      record(4, Outcome::kPassed, 10e9, a), record(6, Outcome::kPassed, 9.8e9, a),
      record(6, Outcome::kPassed, 20e9, b), record(4, Outcome::kPassed, 18e9, b),
      record(8, Outcome::kPassed, 30e9, c), record(6, Outcome::kPassed, 29.4e9, c),
      record(4, Outcome::kPassed, 27e9, c)};
  auto serving = merge_within_noise(rs, best_records(rs));
  ASSERT_EQ(serving.size(), 3u);
  for (const auto& [group, s] : serving) {
    EXPECT_EQ(s.served->schedule.at("tile_rows"), 6) << group;
    EXPECT_EQ(s.served->bucket, s.winner->bucket) << group;  // its own record in that bucket
    EXPECT_DOUBLE_EQ(s.tolerance, kMergeNoiseFloor) << group;
  }
  // Without 6's record in c, two schedules are needed: 6 for a and b, and c keeps its own winner
  // 8, since 4 at 27 is 10% behind 8's 30.
  rs.erase(rs.begin() + 5);
  const auto rows_of = [](const std::map<std::string, Serving>& sv) {
    std::map<std::string, int> rows;
    for (const auto& [group, s] : sv) rows[s.winner->bucket] = s.served->schedule.at("tile_rows");
    return rows;
  };
  auto rows = rows_of(merge_within_noise(rs, best_records(rs)));
  EXPECT_EQ(rows[a], 6);
  EXPECT_EQ(rows[b], 6);
  EXPECT_EQ(rows[c], 8);
  // Noisy measurements widen the tolerance, up to kMergeNoiseCap: with schedule 4's samples in b
  // and c spread by 25% (interquartile range over median), 10% behind is still outside it...
  Record noisy_b = record(4, Outcome::kPassed, 18e9, b),
         noisy_c = record(4, Outcome::kPassed, 27e9, c);
  noisy_b.samples_s = noisy_c.samples_s = {1.0, 1.1, 1.2, 1.3, 0.9, 1.0, 1.2, 0.95};
  EXPECT_NEAR(relative_spread(noisy_b), 0.25, 1e-12);
  rs[3] = noisy_b;
  rs.back() = noisy_c;
  rows = rows_of(merge_within_noise(rs, best_records(rs)));
  EXPECT_EQ(rows[a], 6);
  EXPECT_EQ(rows[b], 6);
  EXPECT_EQ(rows[c], 8);
  // ...and 4% behind, beyond the 3% floor but within the cap, is within noise: 4 alone serves all
  // three.
  rs[3].rate = 20e9 * 0.96;
  rs.back().rate = 30e9 * 0.96;
  rows = rows_of(merge_within_noise(rs, best_records(rs)));
  EXPECT_EQ(rows[a], 4);
  EXPECT_EQ(rows[b], 4);
  EXPECT_EQ(rows[c], 4);

  // A finalist winner's interleaved re-measurement reads lower than the search's one-at-a-time
  // rates: a search record is held to the bucket's best search record, not to the finalist's rate.
  // In c, 8's search record is 30 and its final 27; 6's search record at 28.2 is 6% behind 30, so
  // it does not serve c although it is above 27.
  {
    std::vector<Record> staged = {
        record(6, Outcome::kPassed, 20e9, b), record(8, Outcome::kPassed, 30e9, c),
        record(8, Outcome::kPassed, 27e9, c), record(6, Outcome::kPassed, 28.2e9, c)};
    staged[2].extra["stage"] = "final";
    auto r = rows_of(merge_within_noise(staged, best_records(staged)));
    EXPECT_EQ(r[b], 6);
    EXPECT_EQ(r[c], 8);
    staged[3].rate = 29.4e9;  // 2% behind the best search record: within the floor
    r = rows_of(merge_within_noise(staged, best_records(staged)));
    EXPECT_EQ(r[c], 6);
  }

  // Equal coverage: a schedule whose tasks run in parallel is preferred to a serial winner within
  // noise of it (as fast at the run's threads, and it scales beyond them); outside the noise, not.
  // Shape 1x64x64: strips of 16 columns are 4 tasks; one 64-column strip, or tile rows at M = 1,
  // are one.
  Record serial = record(4, Outcome::kPassed, 10e9, a), par = record(6, Outcome::kPassed, 9.9e9, a);
  serial.schedule["parallel"] = false;
  serial.schedule["n_block"] = 16;
  par.schedule["parallel"] = true;
  par.schedule["n_block"] = 16;
  EXPECT_FALSE(runs_parallel(serial));
  EXPECT_TRUE(runs_parallel(par));
  std::vector<Record> two = {serial, par};
  auto only = merge_within_noise(two, best_records(two));
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only.begin()->second.winner->schedule.at("tile_rows"), 4);
  EXPECT_EQ(only.begin()->second.served->schedule.at("tile_rows"), 6);
  two[1].schedule["n_block"] = 64;  // one task: no better than the serial winner
  EXPECT_FALSE(runs_parallel(two[1]));
  only = merge_within_noise(two, best_records(two));
  EXPECT_EQ(only.begin()->second.served->schedule.at("tile_rows"), 4);
  // With B prepacked, the row blocks (or tile rows) of each strip are tasks too, counted at the
  // bucket's smallest M (the kernel serves all of its bucket): one 64-column strip in m65-256 timed
  // at 256 rows is, at M = 65, 11 tasks of 6-row tiles, 3 of 32-row blocks, 2 of 64-row blocks and
  // 1 of a 128-row block (two at the timed M).
  Record pre = two[1];
  pre.bucket = "m65-256.n1-512.k1-512";
  pre.shape = {256, 64, 64};
  EXPECT_FALSE(runs_parallel(pre)) << "one strip, and without prepacked B only strips are tasks";
  pre.identity += ":prepacked_b=true";
  EXPECT_TRUE(runs_parallel(pre));
  pre.schedule["m_block"] = 32;
  EXPECT_TRUE(runs_parallel(pre));
  pre.schedule["m_block"] = 64;
  EXPECT_TRUE(runs_parallel(pre));
  pre.schedule["m_block"] = 128;
  EXPECT_FALSE(runs_parallel(pre)) << "one task for every call of 65-128 rows";
  // In m9-64 (M = 9 at least): 6-row tiles are two tasks, a 32-row block one.
  pre.bucket = "m9-64.n1-512.k1-512";
  pre.shape = {64, 64, 64};
  pre.schedule["m_block"] = 0;
  EXPECT_TRUE(runs_parallel(pre));
  pre.schedule["m_block"] = 32;
  EXPECT_FALSE(runs_parallel(pre));
  two[1].schedule["n_block"] = 0;  // tile rows at M = 1: one task
  EXPECT_FALSE(runs_parallel(two[1]));
  two[1].schedule["n_block"] = 16;
  two[1].rate = 9.0e9;  // 10% behind: the winner serves
  only = merge_within_noise(two, best_records(two));
  EXPECT_EQ(only.begin()->second.served->schedule.at("tile_rows"), 4);
}

// A baseline's record: schedule {"baseline": NAME}, stage "baseline".
Record baseline(const std::string& name, Outcome o, double rate,
                const std::string& bucket = "m1.n1-512.k1-512") {
  Record r = record(4, o, rate, bucket);
  r.schedule = {{"baseline", name}};
  r.extra["stage"] = "baseline";
  return r;
}

TEST_F(TuningDb, BaselinesAreNeverWinners) {
  const std::string target = "x86-64-linux-avx2-fma";
  std::vector<Record> rs;
  rs.push_back(record(4, Outcome::kPassed, 1e9));
  rs.push_back(record(6, Outcome::kIncorrect, 0));
  // Faster than every candidate, in the same bucket and alone in another one.
  rs.push_back(baseline("Adams2019", Outcome::kPassed, 50e9));
  rs.push_back(baseline("openblas", Outcome::kPassed, 60e9, "m2-8.n1-512.k1-512"));
  for (Record& r : rs) r.target = target;
  EXPECT_TRUE(is_baseline(rs[2]));
  EXPECT_FALSE(is_baseline(rs[0]));
  EXPECT_EQ(baseline_name(rs[3]), "openblas");
  EXPECT_EQ(baseline_name(rs[0]), "");
  // The baseline's key differs from a candidate's of the same bucket (resume tells them apart).
  EXPECT_NE(rs[2].key(), rs[0].key());
  const auto best = best_records(rs);
  ASSERT_EQ(best.size(), 1u);  // the bucket with only a baseline has no winner
  const Winner& w = best.begin()->second;
  EXPECT_EQ(w.record->rate, 1e9);
  EXPECT_EQ(w.candidates, 2);  // baselines are not candidates
  EXPECT_EQ(w.passed, 1);
  // Nor does the tuned database ship them.
  const nlohmann::json tuned = tuned_database(rs, target);
  ASSERT_EQ(tuned.at("kernels").size(), 1u) << tuned.dump();
  EXPECT_EQ(tuned["kernels"][0].at("schedule"), rs[0].schedule);
  EXPECT_EQ(tuned.dump().find("baseline"), std::string::npos) << tuned.dump();
}

// A passed record of `bucket` at `shape`, its schedule parallel or not.
Record passed_at(int tile_rows, bool parallel, double rate, const std::string& bucket,
                 std::vector<int64_t> shape) {
  Record r = record(tile_rows, Outcome::kPassed, rate, bucket);
  r.schedule["parallel"] = parallel;
  r.shape = std::move(shape);
  return r;
}

// --parallel-only: where a schedule that splits into parallel tasks passed, the bucket's kernel is
// one of those, however much faster a serial one ran at the run's thread count; a bucket where none
// did keeps its serial winner.
TEST(TuningDbEmit, ParallelOnlyPassesOverSerialWinnersWhereAParallelScheduleRan) {
  const std::string a = "m9-64.n1-512.k1-512", b = "m65-256.n1-512.k1-512";
  const std::vector<Record> rs = {
      passed_at(4, false, 10e9, a, {64, 64, 64}),  // serial winner, 11 % ahead
      passed_at(6, true, 9e9, a, {64, 64, 64}),    // 11 tile rows of 6: parallel tasks
      passed_at(2, true, 12e9, a, {64, 64, 64}),   // parallel flag, but failed the gate
      passed_at(8, false, 5e9, b, {128, 64, 64}),  // b: serial only
      passed_at(1, true, 4e9, b, {1, 64, 64})};    // one row: a single task, not parallel
  std::vector<Record> with_failure = rs;
  with_failure[2].outcome = Outcome::kIncorrect;
  EXPECT_FALSE(runs_parallel(with_failure[0]));
  EXPECT_TRUE(runs_parallel(with_failure[1]));
  EXPECT_FALSE(runs_parallel(with_failure[4]));
  const auto rows = [](const nlohmann::json& kernels) {
    // The bucket's m_min (0 for a: the emitted buckets of an identity cover every M) -> the
    // kernel's tile rows.
    std::map<int64_t, int> by_m_min;
    for (const auto& k : kernels) {
      for (const auto& bucket :
           k.at("bucket").is_array() ? k.at("bucket") : nlohmann::json::array({k.at("bucket")}))
        by_m_min[bucket.value("m_min", int64_t{0})] = k.at("schedule").at("tile_rows").get<int>();
    }
    return by_m_min;
  };
  const std::string target = "x86-64-linux-avx2-fma";
  auto plain = rows(tuned_database(with_failure, target).at("kernels"));
  EXPECT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0], 4);
  EXPECT_EQ(plain[65], 8);
  auto parallel = rows(tuned_database(with_failure, target, true).at("kernels"));
  EXPECT_EQ(parallel.size(), 2u);
  EXPECT_EQ(parallel[0], 6);   // the passed parallel schedule, 10 % behind
  EXPECT_EQ(parallel[65], 8);  // no parallel schedule passed in b
}

// A run at several thread counts (--threads 1,2,4) tunes each bucket at each, its name saying
// which. Where the winners of a shape bucket differ by count, the emitted buckets hold thread
// ranges (from a count to the next one less one; a kernel winning adjacent counts serves both as
// one range); where one kernel wins every count, its bucket has no range. At 1 thread a serial
// schedule may win even with --parallel-only.
TEST(TuningDbEmit, ThreadCountsWhoseWinnersDifferGetThreadRanges) {
  EXPECT_EQ(bucket_name_at_threads("m9-64.n1-512.k1-512", 2), "m9-64.n1-512.k1-512.t2");
  EXPECT_EQ(threads_of_bucket_name("m9-64.n1-512.k1-512.t2"), 2);
  EXPECT_EQ(threads_of_bucket_name("m9-64.n1-512.k1-512.t16"), 16);
  EXPECT_EQ(threads_of_bucket_name("m9-64.n1-512.k1-512"), 0);
  EXPECT_EQ(threads_of_bucket_name("m257+.n4097+.k4097+"), 0);
  EXPECT_EQ(shape_bucket_name("m9-64.n1-512.k1-512.t2"), "m9-64.n1-512.k1-512");
  EXPECT_EQ(shape_bucket_name("m9-64.n1-512.k1-512"), "m9-64.n1-512.k1-512");
  const std::string a = "m9-64.n1-512.k1-512", b = "m65-256.n1-512.k1-512",
                    c = "m257+.n1-512.k1-512";
  const std::vector<Record> rs = {
      // a: a serial schedule wins at 1 thread, a parallel one (11 tasks of 6 rows) at 2.
      passed_at(4, false, 10e9, a + ".t1", {64, 64, 64}),
      passed_at(6, true, 7e9, a + ".t1", {64, 64, 64}),
      passed_at(6, true, 15e9, a + ".t2", {64, 64, 64}),
      passed_at(4, false, 10e9, a + ".t2", {64, 64, 64}),
      // b: one schedule wins both counts.
      passed_at(8, true, 12e9, b + ".t1", {128, 64, 64}),
      passed_at(2, true, 6e9, b + ".t1", {128, 64, 64}),
      passed_at(8, true, 20e9, b + ".t2", {128, 64, 64}),
      passed_at(2, true, 10e9, b + ".t2", {128, 64, 64}),
      // c, at 1, 2 and 4 threads: one winner at 1, another at 2 and 4.
      passed_at(3, true, 12e9, c + ".t1", {300, 64, 64}),
      passed_at(5, true, 9e9, c + ".t1", {300, 64, 64}),
      passed_at(5, true, 20e9, c + ".t2", {300, 64, 64}),
      passed_at(3, true, 14e9, c + ".t2", {300, 64, 64}),
      passed_at(5, true, 35e9, c + ".t4", {300, 64, 64}),
      passed_at(3, true, 20e9, c + ".t4", {300, 64, 64})};
  for (const bool parallel_only : {false, true}) {
    const nlohmann::json kernels =
        tuned_database(rs, "x86-64-linux-avx2-fma", parallel_only).at("kernels");
    std::map<int, nlohmann::json> bucket_of_tile;
    for (const auto& k : kernels) bucket_of_tile[k.at("schedule").at("tile_rows")] = k.at("bucket");
    ASSERT_EQ(bucket_of_tile.size(), 5u) << kernels.dump();
    const std::string context = (parallel_only ? "--parallel-only: " : "") + kernels.dump();
    EXPECT_EQ(bucket_of_tile[4], nlohmann::json({{"m_max", 64}, {"threads_max", 1}})) << context;
    EXPECT_EQ(bucket_of_tile[6], nlohmann::json({{"m_max", 64}, {"threads_min", 2}})) << context;
    EXPECT_EQ(bucket_of_tile[8], nlohmann::json({{"m_min", 65}, {"m_max", 256}})) << context;
    EXPECT_EQ(bucket_of_tile[3], nlohmann::json({{"m_min", 257}, {"threads_max", 1}})) << context;
    EXPECT_EQ(bucket_of_tile[5], nlohmann::json({{"m_min", 257}, {"threads_min", 2}})) << context;
  }
}

// A finalist timed at each listed shape of its bucket is ranked by the geometric mean of its rates
// there: the schedule fastest at the shape the search timed can lose to one that is faster across
// the bucket; a shape where it failed makes the finalist a failure naming that shape.
TEST(TuningDbFinalists, RankedByTheGeometricMeanOverTheBucketsShapes) {
  const std::string bucket = "m65-256.n513-4096.k1025-4096";
  auto at = [&](int tile_rows, std::vector<int64_t> shape, double rate) {
    Record r = record(tile_rows, Outcome::kPassed, rate, bucket);
    r.shape = std::move(shape);
    r.samples_s = {1e-3, 1.1e-3, 1.2e-3, 1.3e-3};
    r.extra["stage"] = "final";
    return r;
  };
  const std::vector<int64_t> median = {128, 4096, 4096}, square = {1024, 1024, 1024},
                             tall = {512, 4096, 4096};
  // Schedule 4: fastest at the median shape, slow at the others; 6: a little behind there.
  const Record a =
      combine_shape_records({at(4, median, 3000e9), at(4, square, 3000e9), at(4, tall, 2400e9)});
  const Record b =
      combine_shape_records({at(6, median, 2800e9), at(6, square, 4000e9), at(6, tall, 4200e9)});
  EXPECT_EQ(a.outcome, Outcome::kPassed);
  EXPECT_EQ(a.shape, median);  // the shape the search timed, its samples and gate
  EXPECT_EQ(a.samples_s, at(4, median, 1).samples_s);
  EXPECT_NEAR(a.rate, std::cbrt(3000e9 * 3000e9 * 2400e9), 1e3);
  EXPECT_NEAR(b.rate, std::cbrt(2800e9 * 4000e9 * 4200e9), 1e3);
  ASSERT_EQ(b.extra.at("shape_rates").size(), 3u);
  EXPECT_EQ(b.extra["shape_rates"][1].at("shape").get<std::vector<int64_t>>(), square);
  EXPECT_EQ(b.extra["shape_rates"][1].at("rate").get<double>(), 4000e9);
  EXPECT_EQ(b.extra["shape_rates"][2].at("outcome"), "passed");
  // The search records: 4 ahead at the median shape.
  Record search4 = at(4, median, 3100e9), search6 = at(6, median, 2900e9);
  search4.extra.erase("stage");
  search6.extra.erase("stage");
  const std::vector<Record> rs = {search4, search6, a, b};
  const auto best = best_records(rs);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best.begin()->second.record->schedule.at("tile_rows"), 6);
  const nlohmann::json kernels = tuned_database_kernels(rs);
  ASSERT_EQ(kernels.size(), 1u) << kernels.dump();
  EXPECT_EQ(kernels[0].at("schedule").at("tile_rows"), 6);
  const std::string prov = kernels[0].at("provenance").get<std::string>();
  EXPECT_NE(prov.find("bucket m65-256.n513-4096.k1025-4096 3610 G/s, the geometric mean of a "
                      "finalist's rates at 128x4096x4096 2800 G/s 1024x1024x1024 4000 G/s "
                      "512x4096x4096 4200 G/s (4 of 4 candidates passed the gate)"),
            std::string::npos)
      << prov;
  // A failure at any shape: the finalist failed, with that shape's outcome, gate and reason.
  Record wrong = at(6, tall, 0);
  wrong.outcome = Outcome::kIncorrect;
  wrong.rate = 0;
  wrong.gate = {{"first_mismatch", {{"index", 7}}}};
  wrong.detail = "output 7 differs";
  const Record c = combine_shape_records({at(6, median, 2800e9), at(6, square, 4000e9), wrong});
  EXPECT_EQ(c.outcome, Outcome::kIncorrect);
  EXPECT_EQ(c.rate, 0);
  EXPECT_EQ(c.gate, wrong.gate);
  EXPECT_EQ(c.detail, "at 512x4096x4096, a shape of its bucket: output 7 differs");
  EXPECT_EQ(c.extra.at("shape_rates")[2].at("outcome"), "incorrect");
  // One shape: the record as it was measured.
  const Record one = at(4, median, 3000e9);
  EXPECT_EQ(combine_shape_records({one}).to_json(), one.to_json());
  // Records of different schedules are never combined.
  EXPECT_THROW(combine_shape_records({at(4, median, 1e9), at(6, square, 1e9)}), InternalError);
}

TEST(TuneBuckets, ClassesOfMNAndK) {
  EXPECT_EQ(bucket_of(1, 4096, 4096).name, "m1.n513-4096.k1025-4096");
  EXPECT_EQ(bucket_of(16, 11008, 100).name, "m9-64.n4097+.k1-512");
  EXPECT_EQ(bucket_of(65, 512, 513).name, "m65-256.n1-512.k513-1024");
  // K has a class boundary at 1024 that N does not have.
  EXPECT_EQ(bucket_of(128, 1024, 1024).name, "m65-256.n513-4096.k513-1024");
  EXPECT_EQ(bucket_of(128, 1025, 1025).name, "m65-256.n513-4096.k1025-4096");
  // M has one at 256.
  EXPECT_EQ(bucket_of(256, 4096, 4096).name, "m65-256.n513-4096.k1025-4096");
  EXPECT_EQ(bucket_of(257, 4096, 4096).name, "m257+.n513-4096.k1025-4096");
  EXPECT_EQ(bucket_of(100000, 1, 1).name, "m257+.n1-512.k1-512");
  EXPECT_EQ(bucket_of(300, 10, 10).bounds_json(),
            nlohmann::json({{"m_min", 257}, {"n_max", 512}, {"k_max", 512}}));
  EXPECT_EQ(bucket_of(200, 10, 10).bounds_json(),
            nlohmann::json({{"m_min", 65}, {"m_max", 256}, {"n_max", 512}, {"k_max", 512}}));
  const Bucket b = bucket_of(8, 600, 5000);
  EXPECT_TRUE(b.contains(2, 513, 4097));
  EXPECT_FALSE(b.contains(9, 600, 5000));
  EXPECT_EQ(b.bounds_json(),
            nlohmann::json(
                {{"m_min", 2}, {"m_max", 8}, {"n_min", 513}, {"n_max", 4096}, {"k_min", 4097}}));
  const auto buckets = make_buckets({{"a", 1, 1024, 1024},
                                     {"b", 128, 1024, 1024},
                                     {"c", 1, 4096, 4096},
                                     {"d", 256, 1000, 1000},
                                     {"e", 100, 700, 700},
                                     {"f", 512, 600, 600}});
  // a; b, d, e; c (K 4096 apart from K 1024); f (M 512 apart from M 256)
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0].shapes.size(), 1u);
  EXPECT_EQ(buckets[1].shapes.size(), 3u);
  EXPECT_EQ(buckets[1].representative().name, "b");  // the median operation count of e < b < d
  ASSERT_EQ(buckets[2].shapes.size(), 1u);
  EXPECT_EQ(buckets[2].shapes[0].name, "c");
  ASSERT_EQ(buckets[3].shapes.size(), 1u);
  EXPECT_EQ(buckets[3].shapes[0].name, "f");
  EXPECT_EQ(buckets[3].name, "m257+.n513-4096.k513-1024");
}

// report.html from records: the winner against the template default, one curve per strategy,
// nothing fetched from the network, no script.
TEST(TuneReport, ShowsWinnerAgainstDefaultAndOneCurvePerStrategy) {
  const std::string target = "x86-64-linux-avx2-fma";
  const schedules::TargetInfo info = schedules::target_info(target);
  const KernelIdentity id = parse_identity_spec("Gemm:float32");
  const nlohmann::json def = schedules::default_schedule(info, accumulator_of(id));
  std::vector<Record> rs;
  auto add = [&](const nlohmann::json& schedule, double rate, const char* strategy, double t) {
    Record r = record(4, Outcome::kPassed, rate, "m9-64.n513-4096.k513-4096");
    r.identity = "Gemm:float32";
    r.target = target;
    r.schedule = schedule;
    r.shape = {16, 1024, 1024};
    r.extra["strategy"] = strategy;
    r.extra["elapsed_s"] = t;
    rs.push_back(r);
  };
  nlohmann::json other = def;
  other["tile_rows"] = 2;
  nlohmann::json third = def;
  third["k_unroll"] = 8;
  add(def, 10e9, "evolutionary", 1);
  add(other, 25e9, "evolutionary", 2);
  add(third, 12e9, "random", 3);
  Record wrong = rs[0];
  wrong.schedule["tile_rows"] = 3;
  wrong.outcome = Outcome::kIncorrect;
  wrong.rate = 0;
  rs.push_back(wrong);
  const std::string html = render_report(rs, target);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("gemm_f32_strict__x86_avx2_2x"), std::string::npos) << html;  // the winner
  EXPECT_NE(html.find(">25.00<"), std::string::npos);                               // its G/s
  EXPECT_NE(html.find(">10.00<"), std::string::npos);                               // the default's
  EXPECT_NE(html.find(">2.50x<"), std::string::npos);                               // speed-up
  EXPECT_NE(html.find("incorrect 1;"), std::string::npos);
  std::size_t curves = 0;
  for (std::size_t p = 0; (p = html.find("<polyline", p)) != std::string::npos; ++p) ++curves;
  EXPECT_EQ(curves, 4u);  // 2 strategies x (against candidates, against time)
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // SVG namespace only
  EXPECT_EQ(html.find("https://"), std::string::npos);
  // Time to 95 %: the wrong record (strategy evolutionary, t = 1) is not a passed one; evolutionary
  // reached its best (25) with its third record (the wrong one came second), 1 s after its first;
  // random with its first.
  EXPECT_NE(html.find("evolutionary: best 25.00 G/s; 95 % of it after 3 of 3 candidates, 1 s."),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("random: 95 % of its final best within 5 minutes in 1 of 1 units."),
            std::string::npos);
  EXPECT_NE(html.find("No baseline records."), std::string::npos);  // none in the database
}

TEST(TuneReport, ConvergenceCountsFromTheUnitStart) {
  std::vector<Record> rs;
  const double rates[] = {5e9, 9e9, 9.6e9, 10e9, 9.9e9};
  for (int i = 0; i < 5; ++i) {
    Record r =
        record(2 + i, i == 0 ? Outcome::kBuildFailed : Outcome::kPassed, i == 0 ? 0 : rates[i]);
    r.extra["strategy"] = "evolutionary";
    r.extra["elapsed_s"] = 1000.0 + 100 * i;
    r.extra["unit_s"] = 100.0 * (i + 1);  // the unit began 100 s before the first record
    rs.push_back(r);
  }
  Record fin = rs[3];
  fin.extra["stage"] = "final";  // finalists are not part of the search's convergence
  fin.rate = 50e9;
  rs.push_back(fin);
  std::vector<const Record*> ptrs;
  for (const Record& r : rs) ptrs.push_back(&r);
  const auto c = convergence(ptrs);
  ASSERT_EQ(c.size(), 1u);
  const Convergence& e = c.at("evolutionary");
  EXPECT_EQ(e.best, 10e9);
  EXPECT_EQ(e.candidates, 5);
  EXPECT_EQ(e.candidates_to_95, 3);  // 9.6 >= 9.5
  EXPECT_EQ(e.seconds_to_95, 300.0);
}

// The arithmetic intensity's denominator: every operand and the output once, in their types.
TEST(TuneReport, CallBytesCountOperandsAndOutput) {
  const double m = 16, n = 1024, k = 1000;
  // float32 Gemm with C: A, B, C and Y, 4 bytes each, and no other input.
  EXPECT_EQ(call_bytes(parse_identity_spec("Gemm:float32"), 16, 1024, 1000),
            4 * (m * k + k * n + m * n + m * n));
  EXPECT_EQ(call_bytes(parse_identity_spec("Gemm:float64:has_c=false"), 16, 1024, 1000),
            8 * (m * k + k * n + m * n));
  // QLinearMatMul u8.s8->u8: 1-byte a, b and y, and six per-tensor scalars (three float32 scales,
  // three 1-byte zero points).
  EXPECT_EQ(call_bytes(parse_identity_spec("QLinearMatMul:uint8,int8,uint8"), 16, 1024, 1000),
            m * k + k * n + m * n + 3 * 4 + 3);
}

// The baselines' table: each baseline record by its name (an autoscheduler, or a library another
// part of the tuner measures), its rate and the winner's ratio to it, or its outcome and why.
TEST(TuneReport, ShowsEveryBaselineByNameWithItsRateOrWhyItFailed) {
  const std::string target = "x86-64-linux-avx2-fma";
  const std::string bucket = "m9-64.n513-4096.k513-4096";
  const schedules::TargetInfo info = schedules::target_info(target);
  const nlohmann::json def =
      schedules::default_schedule(info, accumulator_of(parse_identity_spec("Gemm:float32")));
  std::vector<Record> rs;
  auto add = [&](Record r) {
    r.identity = "Gemm:float32";
    r.target = target;
    r.bucket = bucket;
    r.shape = {16, 1024, 1024};
    r.extra["strategy"] = "evolutionary";
    rs.push_back(r);
  };
  Record d = record(4, Outcome::kPassed, 10e9, bucket);
  d.schedule = def;
  add(d);
  Record w = d;
  w.schedule["tile_rows"] = 2;
  w.rate = 30e9;
  add(w);
  Record adams = baseline("Adams2019", Outcome::kPassed, 12e9, bucket);
  adams.extra["compile_s"] = 61.0;  // its search included
  add(adams);
  Record li = baseline("Li2018", Outcome::kIncorrect, 0, bucket);
  li.gate["first_mismatch"] = {
      {"case", "ragged_k"}, {"shape", {3, 5, 7}},           {"data", "random"},
      {"index", 4},         {"expected", "0x3f800000 (1)"}, {"actual", "0x3f800001 (1)"}};
  add(li);
  Record mu = baseline("Mullapudi2016", Outcome::kBuildFailed, 0, bucket);
  mu.detail = "the worker died of signal 6 (Aborted) in phase 'compile 0'";
  add(mu);
  Record blas = baseline("openblas", Outcome::kPassed, 60e9, bucket);
  blas.extra["note"] = "inexact: sums in its own order";
  add(blas);
  // A second unit, with its own winner and baseline, tabled apart.
  const std::string small = "m1.n513-4096.k513-4096";
  for (double rate : {3e9, 4e9}) {
    Record c = w;
    c.bucket = small;
    c.shape = {1, 1024, 1024};
    c.schedule["tile_rows"] = rate > 3.5e9 ? 1 : 3;
    c.rate = rate;
    rs.push_back(c);
  }
  Record small_baseline = baseline("Adams2019", Outcome::kPassed, 1e9, small);
  small_baseline.identity = "Gemm:float32";
  small_baseline.target = target;
  small_baseline.shape = {1, 1024, 1024};
  rs.push_back(small_baseline);
  const std::string html = render_report(rs, target);
  // The baselines' table: one row per baseline record, each with its own unit's winner.
  const std::size_t at = html.find("<table class=\"baselines\">");
  ASSERT_NE(at, std::string::npos) << html;
  const std::string table = html.substr(at, html.find("</table>", at) - at);
  std::string small_rows, big_rows;
  for (std::size_t p = table.find("<tr><td>"); p != std::string::npos;
       p = table.find("<tr><td>", p + 1)) {
    const std::string row = table.substr(p, table.find("</tr>", p) - p);
    (row.find(">" + small + "<") != std::string::npos ? small_rows : big_rows) += row;
  }
  for (const char* want : {">4.00<", ">1.00<", ">4.00x<"}) {  // its winner, its baseline
    EXPECT_NE(small_rows.find(want), std::string::npos) << want << " in " << small_rows;
  }
  EXPECT_EQ(small_rows.find(">30.00<"), std::string::npos) << small_rows;
  const std::string li_outcome =
      std::string("incorrect: case ragged_k [3,5,7] (random data), element 4 is ") +
      "0x3f800001 (1) where the reference has 0x3f800000 (1)";
  for (const char* want :
       {">Adams2019<", ">12.00<", ">2.50x<", ">61.0<",  // 30 / 12; compile seconds
        ">Li2018<", li_outcome.c_str(), ">Mullapudi2016<",
        "build_failed: the worker died of signal 6", ">openblas<", ">60.00<", ">0.50x<",
        "inexact: sums in its own order"}) {
    EXPECT_NE(big_rows.find(want), std::string::npos) << want << " in " << big_rows;
  }
  // The winners' table: the winner against the default (30 / 10).
  EXPECT_NE(html.find("gemm_f32_strict__x86_avx2_2x"), std::string::npos);
  EXPECT_NE(html.find(">3.00x<"), std::string::npos);
  // Baselines are neither candidates nor winners nor curves.
  EXPECT_NE(html.find("4 candidate records: passed 4;"), std::string::npos) << html;
  EXPECT_NE(html.find("5 baseline records:"), std::string::npos) << html;
  EXPECT_NE(html.find(">openblas 60.00<"), std::string::npos);  // the best baseline
  EXPECT_NE(html.find(">0.50x<"), std::string::npos);
  std::size_t curves = 0;
  for (std::size_t p = 0; (p = html.find("<polyline", p)) != std::string::npos; ++p) ++curves;
  EXPECT_EQ(curves, 4u);  // per unit: one strategy, against candidates and against time
}

}  // namespace
}  // namespace mmtune::tune
