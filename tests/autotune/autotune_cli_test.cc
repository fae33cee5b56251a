// `mmtune autotune` end to end, as a user runs it: a deliberately wrong kernel is recorded as
// incorrect (never chosen), `kill -9` mid-run loses only in-flight candidates and a rerun resumes
// without measuring anything twice, two shards merged hold the same candidates as one unsharded
// run, and the emitted tuned database names kernels the build accepts. Small shapes and few
// candidates keep each test within a minute or two on 2 cores.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "autotune/kernel_naming.h"
#include "autotune/tune_buckets.h"
#include "autotune/tuning_db.h"
#include "schedules/schedule.h"
#include "tests/support/cli_runner.h"

namespace mmtune::testing {
namespace {

namespace fs = std::filesystem;
using tune::Database;
using tune::Outcome;
using tune::Record;
using tune::shape_bucket_name;
using tune::threads_of_bucket_name;

std::set<std::string> keys_of(const std::string& db) {
  std::set<std::string> keys;
  const Database d = Database::open(db, false);
  for (const Record& r : d.records()) keys.insert(r.key());
  return keys;
}

// The database's records that are candidates (not baselines).
std::vector<Record> candidates_of(const Database& d) {
  std::vector<Record> out;
  for (const Record& r : d.records()) {
    if (!tune::is_baseline(r)) out.push_back(r);
  }
  return out;
}

int count_lines(const std::string& p) {
  std::ifstream in(p);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

class Autotune : public CliFixture {};

// Short timing: tiny shapes are stable within a few samples; no baselines (their own tests); no
// package (its own tests: AutotuneEndsWithThePackage..., tests/install).
const char* kQuick = " --quiet --jobs 2 --finalists 0 --baselines none --no-package";

TEST_F(Autotune, GateRecordsAWrongKernelAsIncorrectAndNeverChoosesIt) {
  const std::string db = path("wrong.jsonl");
  // Every candidate's last output element is left unwritten (the gate's poison stays there).
  const CliResult r =
      run("autotune --op Gemm:float32 --shape 7,19,13 --max-candidates 3"
          " --strategy random --inject-fault drop_tail --out " +
          path("out") + " --db " + db + kQuick);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const Database d = Database::open(db, false);
  const std::vector<Record> candidates = candidates_of(d);
  ASSERT_EQ(candidates.size(), 3u);
  for (const Record& rec : candidates) {
    EXPECT_EQ(rec.outcome, Outcome::kIncorrect) << rec.to_json().dump();
    ASSERT_TRUE(rec.gate.contains("first_mismatch")) << rec.to_json().dump();
    const auto& m = rec.gate["first_mismatch"];
    // The last element of the first case the kernel computed: its bits and value, both sides.
    ASSERT_TRUE(m.contains("index")) << m.dump();
    const auto shape = m.at("shape");
    EXPECT_EQ(m.at("index").get<int64_t>(), shape[0].get<int64_t>() * shape[1].get<int64_t>() - 1)
        << m.dump();
    EXPECT_NE(m.at("expected"), m.at("actual"));
    EXPECT_EQ(rec.rate, 0);
    EXPECT_TRUE(rec.samples_s.empty());  // never timed
  }
  EXPECT_TRUE(tune::best_records(d.records()).empty());
  // The emitted database has no kernel for it.
  const auto tuned =
      nlohmann::json::parse(slurp(path("out") + "/tuned/" + d.records()[0].target + ".json"));
  EXPECT_TRUE(tuned.at("kernels").empty()) << tuned.dump();
  // The same run without the fault passes: the gate rejected the fault, not the kernels.
  const CliResult ok =
      run("autotune --op Gemm:float32 --shape 7,19,13 --max-candidates 1"
          " --strategy random --no-emit --out " +
          path("out2") + kQuick);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const Database d2 = Database::open(path("out2") + "/tuning.jsonl", false);
  const std::vector<Record> c2 = candidates_of(d2);
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_EQ(c2[0].outcome, Outcome::kPassed) << c2[0].to_json().dump();
  EXPECT_GT(c2[0].gate.at("cases").get<int>(), 5);
  EXPECT_GT(c2[0].rate, 0);
}

TEST_F(Autotune, KillNineThenResumeMeasuresNothingTwice) {
  const std::string db = path("db.jsonl");
  const std::string args =
      "autotune --op Gemm:float32 --shape 5,40,33 --max-candidates 6"
      " --strategy random --seed 7 --no-emit --out " +
      path("out") + " --db " + db + kQuick;
  // Start, wait for the two baselines and the first two candidates, kill -9 the whole process
  // group mid-run.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    const std::string cmd = "'" + cli_path() + "' " + args + " > /dev/null 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    std::_Exit(127);
  }
  ::setpgid(pid, pid);
  const auto t0 = std::chrono::steady_clock::now();
  while (count_lines(db) < 4 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(300)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  // The worker children have their own process groups: wait for them to notice nothing (they
  // finish or die on their own; their output pipe is gone).
  const int before = count_lines(db);
  ASSERT_GE(before, 4) << "the run wrote too few records within 300 s";
  ASSERT_LT(before, 8) << "the run finished before it could be killed";
  const std::set<std::string> first = keys_of(db);
  // A torn line, as a crash mid-write leaves it.
  {
    std::ofstream out(db, std::ios::app);
    out << R"({"identity":"Gemm:float32","buck)";
  }
  const CliResult r = sh("'" + cli_path() + "' " + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Database d = Database::open(db, false);
  EXPECT_TRUE(d.warnings().empty());
  // max-candidates in all (the first run's count toward it), and the baselines once.
  EXPECT_EQ(candidates_of(d).size(), 6u);
  EXPECT_EQ(d.records().size(), 8u);
  const std::set<std::string> after = keys_of(db);
  EXPECT_EQ(after.size(), d.records().size());  // no candidate twice
  for (const std::string& k : first) EXPECT_TRUE(after.count(k)) << k;
  // The same seed unsharded, uninterrupted, tries the same candidates.
  const CliResult clean =
      run("autotune --op Gemm:float32 --shape 5,40,33 --max-candidates 6"
          " --strategy random --seed 7 --no-emit --out " +
          path("clean") + kQuick);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(keys_of(path("clean") + "/tuning.jsonl"), after);
}

// A bucket of several listed shapes: its finalists are timed at each (the search at the median
// shape only) and ranked by the geometric mean of those rates; the tuned database says so.
TEST_F(Autotune, FinalistsAreTimedAtEveryShapeOfTheirBucket) {
  const CliResult r =
      run("autotune --op Gemm:float32 --shape 70,40,33 --shape 96,64,48 --shape 80,24,40"
          " --max-candidates 3 --strategy random --seed 5 --finalists 2 --quiet --jobs 2"
          " --baselines none --no-package --out " +
          path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Database d = Database::open(path("out") + "/tuning.jsonl", false);
  int finals = 0;
  for (const Record& rec : candidates_of(d)) {
    if (rec.extra.value("stage", "") != "final") continue;
    ++finals;
    ASSERT_EQ(rec.outcome, Outcome::kPassed) << rec.to_json().dump();
    // The median shape by operations (80x24x40 < 70x40x33 < 96x64x48) first.
    EXPECT_EQ(rec.shape, (std::vector<int64_t>{70, 40, 33}));
    const auto& sr = rec.extra.at("shape_rates");
    ASSERT_EQ(sr.size(), 3u) << rec.to_json().dump();
    std::set<std::vector<int64_t>> shapes;
    double log_sum = 0;
    for (const auto& e : sr) {
      shapes.insert(e.at("shape").get<std::vector<int64_t>>());
      EXPECT_EQ(e.at("outcome"), "passed");
      ASSERT_GT(e.at("rate").get<double>(), 0);
      log_sum += std::log(e.at("rate").get<double>());
    }
    EXPECT_EQ(shapes, (std::set<std::vector<int64_t>>{{70, 40, 33}, {96, 64, 48}, {80, 24, 40}}));
    EXPECT_NEAR(rec.rate, std::exp(log_sum / 3), 1e-9 * rec.rate);
  }
  EXPECT_EQ(finals, 2);
  const Record& any = d.records().front();
  const auto tuned = nlohmann::json::parse(slurp(path("out") + "/tuned/" + any.target + ".json"));
  ASSERT_EQ(tuned.at("kernels").size(), 1u) << tuned.dump();
  const std::string prov = tuned["kernels"][0].at("provenance").get<std::string>();
  EXPECT_NE(prov.find("the geometric mean of a finalist's rates at 70x40x33 "), std::string::npos)
      << prov;
}

// --threads 1,2: each bucket is a unit at each count (its records' bucket names and provenance
// say which, the timing ran at that count), and the emitted buckets cover both counts: one
// kernel without a range, or thread ranges that meet.
TEST_F(Autotune, SeveralThreadCountsTuneEachBucketAtEach) {
  const CliResult r =
      run("autotune --op Gemm:float32 --shape 40,64,48 --max-candidates 3 --strategy random"
          " --seed 3 --finalists 1 --quiet --threads 1,2 --baselines none --no-package --out " +
          path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Database d = Database::open(path("out") + "/tuning.jsonl", false);
  std::map<std::string, int> records_of;
  for (const Record& rec : candidates_of(d)) {
    ++records_of[rec.bucket];
    const int t = threads_of_bucket_name(rec.bucket);
    EXPECT_EQ(rec.provenance.value("threads", 0), t) << rec.to_json().dump();
    EXPECT_EQ(shape_bucket_name(rec.bucket), "m9-64.n1-512.k1-512");
  }
  EXPECT_EQ(records_of.size(), 2u);
  EXPECT_GE(records_of["m9-64.n1-512.k1-512.t1"], 3);
  EXPECT_GE(records_of["m9-64.n1-512.k1-512.t2"], 3);
  const Record& any = d.records().front();
  const auto tuned = nlohmann::json::parse(slurp(path("out") + "/tuned/" + any.target + ".json"));
  const auto& kernels = tuned.at("kernels");
  ASSERT_GE(kernels.size(), 1u);
  ASSERT_LE(kernels.size(), 2u);
  if (kernels.size() == 1) {
    EXPECT_EQ(kernels[0].at("bucket"), "any") << tuned.dump();
  } else {
    // One bucket (the identity's only shape bucket: no M, N or K bounds) per kernel, one up to 1
    // thread and one from 2.
    std::set<std::string> ranges;
    for (const auto& k : kernels) ranges.insert(k.at("bucket").dump());
    EXPECT_EQ(ranges, (std::set<std::string>{R"({"threads_max":1})", R"({"threads_min":2})"}))
        << tuned.dump();
  }
}

TEST_F(Autotune, TwoShardsMergedHoldTheCandidatesOfOneRun) {
  const std::string common =
      " --op Gemm:float32 --op Gemm:int32 --shape 1,64,64 --shape 16,64,64"
      " --max-candidates 2 --strategy random --seed 3 --no-emit" +
      std::string(kQuick);
  ASSERT_EQ(run("autotune" + common + " --out " + path("all")).exit_code, 0);
  for (int i = 0; i < 2; ++i) {
    const std::string s = std::to_string(i);
    const CliResult r = run("autotune" + common + " --shard " + s + "/2 --out " + path("s" + s) +
                            " --db " + path("shard" + s + ".jsonl"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const CliResult m = run("db merge " + path("shard0.jsonl") + " " + path("shard1.jsonl") + " -o " +
                          path("merged.jsonl"));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const auto whole = keys_of(path("all") + "/tuning.jsonl");
  // 2 identities x 2 buckets x 2 candidates, and float32 Gemm's 2 baselines in each bucket.
  EXPECT_EQ(whole.size(), 8u + 4u);
  EXPECT_EQ(keys_of(path("merged.jsonl")), whole);
  EXPECT_LT(keys_of(path("shard0.jsonl")).size(), whole.size());  // each shard did a part
  // Emit from the union: one kernel per winner, named by the rule, with its buckets.
  const CliResult e =
      run("emit --no-package --db " + path("merged.jsonl") + " --out " + path("emitted"));
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_FALSE(fs::exists(path("emitted") + "/package"));
  const Database d = Database::open(path("merged.jsonl"), false);
  const std::string target = d.records()[0].target;
  const auto tuned = nlohmann::json::parse(slurp(path("emitted") + "/tuned/" + target + ".json"));
  EXPECT_EQ(tuned.at("target"), target);
  ASSERT_FALSE(tuned.at("kernels").empty());
  int buckets = 0;
  for (const auto& k : tuned.at("kernels")) {
    std::map<std::string, std::string> identity;
    for (const auto& [key, v] : k.at("params").items()) identity[key] = v.get<std::string>();
    const auto s = k.at("schedule").get<schedules::Schedule>();
    EXPECT_EQ(k.at("name"), kernel_name(k.at("op"), identity, s.generator_params(), target));
    EXPECT_FALSE(k.at("provenance").get<std::string>().empty());
    buckets += k.at("bucket").is_array() ? static_cast<int>(k.at("bucket").size()) : 1;
  }
  EXPECT_EQ(buckets, static_cast<int>(tune::best_records(d.records()).size()));
  // db best lists the same winners.
  const CliResult b = run("db best " + path("merged.jsonl"));
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("Gemm:float32"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("Gemm:int32"), std::string::npos) << b.out;
  // A --target the database lacks is refused, naming the ones it has.
  const CliResult other = run("emit --db " + path("merged.jsonl") + " --out " + path("other") +
                              " --target x86-64-linux-sse41 --target " + target);
  if (target != "x86-64-linux-sse41") {
    EXPECT_EQ(other.exit_code, 1) << other.err;
    EXPECT_NE(other.err.find(
                  "has no records for --target x86-64-linux-sse41 (its targets: " + target + ")"),
              std::string::npos)
        << other.err;
    EXPECT_FALSE(fs::exists(path("other")));
  }
}

// `mmtune autotune` ends by building the package of its kernels (<out>/package, as `mmtune emit`
// does: tests/install/tuned_package_test.sh builds and uses one). Without a source tree to build
// it from, it refuses before tuning; when the build fails, the run fails with the reason and where
// the tuning results are, which it keeps, and writes no package.
TEST_F(Autotune, AutotuneEndsWithThePackageOrSaysWhyNot) {
  const std::string args =
      "' autotune --op Gemm:float32 --shape 4,16,16 --max-candidates 1 --strategy random --quiet"
      " --jobs 2 --finalists 0 --baselines none --out ";
  const CliResult none =
      sh("MMTUNE_SOURCE_DIR='" + path("nowhere") + "' '" + cli_path() + args + path("none"));
  EXPECT_EQ(none.exit_code, 1) << none.err << none.out;
  EXPECT_NE(none.err.find("MMTUNE_SOURCE_DIR='" + path("nowhere") +
                          "' is not one (no CMakeLists.txt and cmake/MmtuneKernels.cmake there)"),
            std::string::npos)
      << none.err;
  EXPECT_NE(none.err.find("or pass --no-package"), std::string::npos) << none.err;
  EXPECT_FALSE(fs::exists(path("none") + "/tuning.jsonl"));  // refused before tuning

  // A tree whose configure step fails: the package's build fails after the tuning.
  fs::create_directories(path("broken") + "/cmake");
  std::ofstream(path("broken") + "/cmake/MmtuneKernels.cmake") << "\n";
  std::ofstream(path("broken") + "/CMakeLists.txt")
      << "cmake_minimum_required(VERSION 3.28)\nproject(broken NONE)\n"
         "message(FATAL_ERROR \"this tree cannot be configured\")\n";
  const std::string out = path("out");
  const CliResult r = sh("MMTUNE_SOURCE_DIR='" + path("broken") + "' '" + cli_path() + args + out);
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("the package's configure step failed (exit code 1)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("this tree cannot be configured"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("`mmtune emit --db " + out + "/tuning.jsonl --out " + out +
                       "` builds the package again"),
            std::string::npos)
      << r.err;
  const Database d = Database::open(out + "/tuning.jsonl", false);
  ASSERT_FALSE(d.records().empty());
  EXPECT_TRUE(fs::exists(out + "/tuned/" + d.records()[0].target + ".json"));
  EXPECT_FALSE(fs::exists(out + "/package"));
}

// The BLAS baselines (float32 Gemm: OpenBLAS and oneDNN; u8.s8->u8 QLinearMatMul: oneDNN's int8
// GEMM, checked against the reference's int32 sums) are records of the database, timed once (a
// rerun measures none again) and never winners; the machine's figures are measured at the start
// of the run into machine.json, and the report shows both.
TEST_F(Autotune, BaselinesAndMachineFiguresAreRecordedButNeverWin) {
  const std::string args =
      "autotune --op Gemm:float32 --op QLinearMatMul:uint8,int8,uint8 --op Gemm:int32"
      " --shape 4,64,96 --max-candidates 1 --strategy random --out " +
      path("out") + kQuick;
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::cout << "[ autotune ] 3 identities, 1 candidate each, in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
            << " s\n";
  const std::string db = path("out") + "/tuning.jsonl";
  const Database d = Database::open(db, false);
  std::map<std::string, const Record*> baselines;  // "identity baseline" -> record
  for (const Record& rec : d.records()) {
    if (!tune::is_baseline(rec)) continue;
    baselines[rec.identity + " " + rec.schedule.at("baseline").get<std::string>()] = &rec;
  }
  ASSERT_EQ(baselines.size(), 3u) << r.err;  // none for int32 Gemm
  for (const auto& [name, rec] : baselines) {
    EXPECT_EQ(rec->bucket, d.records().front().bucket) << name;
    EXPECT_EQ(rec->shape, (std::vector<int64_t>{4, 64, 96})) << name;
    EXPECT_GT(rec->rate, 0) << name << ": " << rec->to_json().dump();
    EXPECT_GE(rec->samples_s.size(), 3u) << name;
    EXPECT_FALSE(rec->extra.value("note", "").empty()) << name;
    EXPECT_FALSE(rec->provenance.empty()) << name;
  }
  const Record* gemm = baselines.at("Gemm:float32 openblas");
  EXPECT_EQ(gemm->outcome, Outcome::kPassed) << gemm->to_json().dump();
  EXPECT_NE(gemm->extra.value("note", "").find("OpenBLAS"), std::string::npos);
  EXPECT_NE(gemm->extra.value("note", "").find("not bit-exact"), std::string::npos);
  EXPECT_EQ(baselines.at("Gemm:float32 onednn")->outcome, Outcome::kPassed);
  // The int8 GEMM: every output checked; `incorrect` exactly when some sum differs.
  const Record* q = baselines.at("QLinearMatMul:uint8,int8,uint8 onednn");
  ASSERT_TRUE(q->gate.contains("mismatches")) << q->to_json().dump();
  EXPECT_EQ(q->gate.at("outputs").get<int64_t>(), 4 * 64);
  EXPECT_EQ(q->outcome,
            q->gate.at("mismatches").get<int64_t>() > 0 ? Outcome::kIncorrect : Outcome::kPassed)
      << q->to_json().dump();
  // Never winners: each unit's winner is its candidate.
  const auto best = tune::best_records(d.records());
  ASSERT_EQ(best.size(), 3u);
  for (const auto& [group, w] : best) {
    EXPECT_FALSE(tune::is_baseline(*w.record)) << group;
    EXPECT_EQ(w.candidates, 1) << group;
  }
  // The machine, measured at the start.
  const auto machine = nlohmann::json::parse(slurp(path("out") + "/machine.json"));
  ASSERT_FALSE(machine.at("peak").empty()) << machine.dump();
  for (const auto& e : machine.at("peak")) EXPECT_GT(e.at("flops").get<double>(), 1e9) << e;
  for (const auto& e : machine.at("bandwidth"))
    EXPECT_GT(e.at("bytes_per_s").get<double>(), 1e8) << e;
  EXPECT_EQ(machine.at("peak").front().at("threads"), 1);
  EXPECT_FALSE(machine.at("cpu").get<std::string>().empty());
  EXPECT_FALSE(machine.at("time").get<std::string>().empty());
  std::cout << "[ autotune ] machine measured in " << machine.at("seconds")
            << " s: " << machine.dump() << "\n";
  const std::string report = slurp(path("out") + "/report.html");
  EXPECT_NE(report.find("<svg id=\"roofline\""), std::string::npos);
  EXPECT_NE(report.find("<table class=\"baselines\">"), std::string::npos);
  // A rerun measures no baseline again (the machine, yes).
  const std::size_t before = d.records().size();
  const CliResult again = run(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Database::open(db, false).records().size(), before);
}

bool is_library(const Record& r) {  // OpenBLAS / oneDNN, timed by the tuner itself
  const std::string name = tune::baseline_name(r);
  return name == "openblas" || name == "onednn";
}

// The Halide autoscheduler baselines of a database.
std::vector<Record> baselines_of(const Database& d) {
  std::vector<Record> out;
  for (const Record& r : d.records()) {
    if (tune::is_baseline(r) && !is_library(r)) out.push_back(r);
  }
  return out;
}

// Records other than the library baselines.
std::size_t without_libraries(const Database& d) {
  std::size_t n = 0;
  for (const Record& r : d.records()) n += !is_library(r);
  return n;
}

// Halide's autoschedulers on the same algorithm: one record each per identity and bucket, passed
// (gated, timed) or failed with the reason; never measured twice, never the winner; in the report.
TEST_F(Autotune, BaselinesAreRecordedOnceNeverWinAndAreReported) {
  const std::string args =
      "autotune --op Gemm:float32 --shape 7,19,13 --max-candidates 2 --strategy random --seed 5"
      " --baseline-gate full --quiet --jobs 2 --finalists 0 --no-package --out " +
      path("out");
  const CliResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const Database d = Database::open(path("out") + "/tuning.jsonl", false);
  const std::vector<Record> bs = baselines_of(d);
  ASSERT_EQ(bs.size(), 3u) << r.out;
  EXPECT_EQ(without_libraries(d), 5u);  // 2 candidates + 3 autoscheduler baselines
  std::set<std::string> names;
  for (const Record& b : bs) {
    const std::string name = tune::baseline_name(b);
    names.insert(name);
    EXPECT_EQ(b.schedule, nlohmann::json({{"baseline", name}}));
    EXPECT_EQ(b.extra.value("stage", ""), "baseline");
    EXPECT_EQ(b.shape, (std::vector<int64_t>{7, 19, 13}));
    if (b.outcome == Outcome::kPassed) {
      // Gated on the battery as a candidate, then timed.
      EXPECT_GT(b.gate.at("cases").get<int>(), 5) << b.to_json().dump();
      EXPECT_GT(b.rate, 0) << b.to_json().dump();
      EXPECT_FALSE(b.samples_s.empty());
    } else if (b.outcome == Outcome::kIncorrect) {
      EXPECT_TRUE(b.gate.contains("first_mismatch")) << b.to_json().dump();
      EXPECT_EQ(b.rate, 0);
    } else {
      EXPECT_FALSE(b.detail.empty()) << b.to_json().dump();
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"Adams2019", "Mullapudi2016", "Li2018"}));
  // The winner is a candidate, and the tuned database ships no baseline.
  const auto best = tune::best_records(d.records());
  ASSERT_EQ(best.size(), 1u);
  EXPECT_FALSE(tune::is_baseline(*best.begin()->second.record));
  const std::string target = d.records()[0].target;
  const auto tuned = nlohmann::json::parse(slurp(path("out") + "/tuned/" + target + ".json"));
  ASSERT_EQ(tuned.at("kernels").size(), 1u) << tuned.dump();
  EXPECT_TRUE(tuned["kernels"][0].at("schedule").contains("template")) << tuned.dump();
  EXPECT_EQ(tuned.dump().find("baseline"), std::string::npos) << tuned.dump();
  // The report has a row per baseline in its baselines table.
  const std::string html = slurp(path("out") + "/report.html");
  const std::size_t table = html.find("<table class=\"baselines\">");
  ASSERT_NE(table, std::string::npos) << html;
  for (const char* name : {">Adams2019<", ">Mullapudi2016<", ">Li2018<"}) {
    EXPECT_NE(html.find(name, table), std::string::npos) << name;
  }
  // A rerun measures nothing again, baselines included.
  const std::set<std::string> before = keys_of(path("out") + "/tuning.jsonl");
  const CliResult again = run(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find(" 0 new records,"), std::string::npos) << again.out;
  EXPECT_EQ(keys_of(path("out") + "/tuning.jsonl"), before);
  // --baselines none runs none (the search is exhausted at --max-candidates).
  const CliResult none = run(args + " --baselines none");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find(" 0 new records"), std::string::npos) << none.out;
}

// --baseline-gate bucket: the autoschedulers' kernels are gated on the bucket's own shape only
// (they are made for it and may refuse smaller shapes), then timed; the report says so.
TEST_F(Autotune, BaselinesGatedOnTheBucketShapeAreTimed) {
  const CliResult r =
      run("autotune --op Gemm:float32 --shape 7,19,13 --max-candidates 1 --strategy random"
          " --baseline-gate bucket --quiet --jobs 2 --finalists 0 --no-package --out " +
          path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const Database d = Database::open(path("out") + "/tuning.jsonl", false);
  const std::vector<Record> bs = baselines_of(d);
  ASSERT_EQ(bs.size(), 3u);
  int timed = 0;
  for (const Record& b : bs) {
    // Another record than the same autoscheduler's under the full gate.
    EXPECT_EQ(b.schedule,
              nlohmann::json({{"baseline", tune::baseline_name(b)}, {"gate", "bucket"}}));
    if (b.outcome != Outcome::kPassed && b.outcome != Outcome::kIncorrect) continue;
    EXPECT_EQ(b.gate.value("scope", ""), "bucket") << b.to_json().dump();
    EXPECT_EQ(b.gate.at("cases").get<int>(), 2) << b.to_json().dump();  // random + one other kind
    if (b.outcome == Outcome::kPassed && b.rate > 0) ++timed;
  }
  EXPECT_GE(timed, 1) << "no autoscheduler's kernel passed the bucket's gate and was timed";
  const std::string html = slurp(path("out") + "/report.html");
  EXPECT_NE(html.find("gated on the bucket's shape only"), std::string::npos);
}

// A baseline whose worker dies while compiling is a record naming why, not a missing row.
TEST_F(Autotune, ABaselineThatCrashesTheCompilerIsRecorded) {
  const CliResult r =
      run("autotune --op Gemm:float32 --shape 7,19,13 --max-candidates 1 --strategy random"
          " --baselines li2018 --inject-fault abort_compile --no-emit --quiet --jobs 2"
          " --finalists 0 --out " +
          path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const Database d = Database::open(path("out") + "/tuning.jsonl", false);
  ASSERT_EQ(without_libraries(d), 2u);
  const std::vector<Record> bs = baselines_of(d);
  ASSERT_EQ(bs.size(), 1u);
  EXPECT_EQ(bs[0].schedule.at("baseline"), "Li2018");  // the canonical name
  EXPECT_EQ(bs[0].outcome, Outcome::kBuildFailed) << bs[0].to_json().dump();
  EXPECT_NE(bs[0].detail.find("signal 6"), std::string::npos) << bs[0].detail;
  EXPECT_NE(bs[0].detail.find("phase 'compile 0'"), std::string::npos) << bs[0].detail;
}

TEST_F(Autotune, BadArgumentsAreRefusedBeforeAnythingRuns) {
  struct Case {
    std::string args, want;
  };
  const std::vector<Case> cases = {
      {"--op Gemm:float33", "float33"},
      {"--op Conv", "Conv"},
      {"--op Gemm:float64:prepacked_b=true", "prepacked_b=true: only float32 Gemm"},
      {"--shape 1,2", "--shape '1,2' is not M,N,K"},
      {"--shape 0,4,4", "--shape '0,4,4' is not M,N,K"},
      {"--budget 5x", "unit 'x'"},
      {"--shard 2/2", "--shard '2/2' is not I/N"},
      {"--strategy greedy", "--strategy 'greedy'"},
      {"--target x86-64-linux-avx9", "avx9"},
      {"--ops-from " + path("none.json"), "none.json': cannot be read"},
      {"--ops-from " + path("not_json.json"), "not_json.json': is not JSON"},
      {"--ops-from " + path("bad_kernel.json"), "kernel 0: identity_spec"},
      {"--baselines Adams2019,Halide2030", "--baselines: 'Halide2030' is not one of Halide's"},
      {"--baselines Li2018,,Adams2019", "--baselines 'Li2018,,Adams2019' is not a comma list"},
      {"--baseline-gate some", "--baseline-gate 'some' is not full or bucket"},
      {"--threads 0", "--threads '0': '0' is not a thread count from 1 to 1024"},
      {"--threads 1,x", "--threads '1,x': 'x' is not a thread count"},
      {"--threads 2,1,2", "--threads: 2 is listed twice"},
      {"--threads 1,,2", "--threads '1,,2': '' is not a thread count"},
  };
  std::ofstream(path("not_json.json")) << "{\"kernels\": [";
  std::ofstream(path("bad_kernel.json"))
      << R"({"kernels": [{"op": "Gemm", "generator": "mmtune_gemm", "params": {}},)"
      << R"( {"op": "Gemm", "generator": "mmtune_gemm", "params": {"A.type": "float33"}}]})";
  for (const Case& c : cases) {
    const CliResult r = run("autotune --quiet --out " + path("out") + " " + c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.args << ": " << r.err;
    EXPECT_FALSE(fs::exists(path("out") + "/tuning.jsonl")) << c.args;
  }
}

TEST_F(Autotune, OpsFromADatabaseTunesItsIdentitiesWithItsSchedulesFirst) {
  // Two kernels of one identity (two buckets) and one of another: two identities, each with its
  // database schedules as the first candidates, before anything else is drawn.
  const nlohmann::json a = {{"template", "cpu_matmul"},
                            {"tile_rows", 3},
                            {"tile_vectors", 1},
                            {"k_unroll", 2},
                            {"n_block", 0},
                            {"pack_b", false},
                            {"parallel", false}};
  nlohmann::json b = a;
  b["tile_rows"] = 5;
  const nlohmann::json gemm = {{"A.type", "float32"}, {"B.type", "float32"}, {"C.type", "float32"},
                               {"Y.type", "float32"}, {"trans_a", "false"},  {"trans_b", "false"},
                               {"has_c", "true"},     {"contract", "fma"}};
  nlohmann::json gemm_int = gemm;
  for (const char* p : {"A.type", "B.type", "C.type", "Y.type"}) gemm_int[p] = "int32";
  gemm_int["contract"] = "strict";
  const nlohmann::json db = {
      {"target", "x86-64-linux-avx2-fma-f16c"},
      {"kernels",
       {{{"op", "Gemm"}, {"generator", "mmtune_gemm"}, {"params", gemm}, {"schedule", a}},
        {{"op", "Gemm"}, {"generator", "mmtune_gemm"}, {"params", gemm}, {"schedule", b}},
        {{"op", "Gemm"}, {"generator", "mmtune_gemm"}, {"params", gemm_int}, {"schedule", b}}}}};
  std::ofstream(path("ship.json")) << db.dump();
  const CliResult r =
      run("autotune --quiet --finalists 0 --baselines none --no-package --ops-from " +
          path("ship.json") +
          " --target x86-64-linux-avx2-fma-f16c --shape 3,40,24 --max-candidates 3"
          " --jobs 1 --out " +
          path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Database d = Database::open(path("out") + "/tuning.jsonl", false);
  std::map<std::string, std::vector<nlohmann::json>> tried;  // identity -> schedules in order
  for (const Record& rec : d.records()) {
    if (!tune::is_baseline(rec)) tried[rec.identity].push_back(rec.schedule);  // not the BLAS
  }
  ASSERT_EQ(tried.size(), 2u);
  const auto& fma = tried.at("Gemm:float32:contract=fma");
  const auto& s32 = tried.at("Gemm:int32");
  ASSERT_EQ(fma.size(), 3u);
  ASSERT_EQ(s32.size(), 3u);
  // The first is the template's default; then the database's schedules, in its order (compared on
  // the knobs the database gives; the tuner fills in the rest).
  auto same = [](const nlohmann::json& tried_schedule, const nlohmann::json& given) {
    for (const auto& [k, v] : given.items()) {
      if (tried_schedule.value(k, nlohmann::json()) != v) return false;
    }
    return true;
  };
  EXPECT_TRUE(same(fma[1], a)) << fma[1];
  EXPECT_TRUE(same(fma[2], b)) << fma[2];
  EXPECT_TRUE(same(s32[1], b)) << s32[1];
}

// A prepacked identity (prepacked_b=true): its candidates are the kernels that read B prepacked,
// gated (a wrong one is recorded incorrect) and timed; its first candidates after the default are
// the plain identity's best schedule in the database; the emitted database carries both
// identities' kernels, the prepacked one named and keyed so.
TEST_F(Autotune, APrepackedIdentityIsTunedAsThePrepackedKernel) {
  const std::string db = path("pre.jsonl");
  const std::string shape = " --shape 2,70,40 --target x86-64-linux-sse41";
  const CliResult plain = run("autotune --op QLinearMatMul:uint8,int8,uint8 --max-candidates 2" +
                              shape + " --no-emit --out " + path("out") + " --db " + db + kQuick);
  ASSERT_EQ(plain.exit_code, 0) << plain.err << plain.out;
  // The plain identity's best of the bucket: a passed record of another schedule, the fastest.
  const nlohmann::json seeded = {{"template", "cpu_matmul"},
                                 {"tile_rows", 2},
                                 {"tile_vectors", 2},
                                 {"k_unroll", 2},
                                 {"n_block", 0},
                                 {"pack_b", false},
                                 {"parallel", false},
                                 {"k_group", 1},
                                 {"m_block", 0},
                                 {"specialize_tails", false},
                                 {"k_block", 0},
                                 {"pack_a", false},
                                 {"amx", false},
                                 {"amx_jam", 1},
                                 {"copy_b", false},
                                 {"vector_width", 0}};
  {
    Database w = Database::open(db, true);
    Record fastest = candidates_of(w).at(0);
    ASSERT_EQ(fastest.outcome, Outcome::kPassed);
    fastest.schedule = seeded;
    fastest.rate *= 1000;
    w.append(fastest);
  }
  const CliResult pre =
      run("autotune --op QLinearMatMul:uint8,int8,uint8:prepacked_b=true --max-candidates 3" +
          shape + " --out " + path("out") + " --db " + db + kQuick);
  ASSERT_EQ(pre.exit_code, 0) << pre.err << pre.out;
  const Database d = Database::open(db, false);
  std::vector<Record> plain_records, pre_records;
  for (const Record& r : candidates_of(d)) {
    (r.identity == "QLinearMatMul:uint8,int8,uint8" ? plain_records : pre_records).push_back(r);
  }
  ASSERT_EQ(plain_records.size(), 3u);
  ASSERT_EQ(pre_records.size(), 3u);
  for (const Record& r : pre_records) {
    EXPECT_EQ(r.identity, "QLinearMatMul:uint8,int8,uint8:prepacked_b=true");
    EXPECT_EQ(r.outcome, Outcome::kPassed) << r.to_json().dump();
    EXPECT_GT(r.gate.at("cases").get<int>(), 5);
    EXPECT_GT(r.rate, 0);
  }
  // Seeded: the plain identity's best schedule of the bucket is among the first candidates (the
  // template's default, then it; two workers finish them in either order).
  const auto best = tune::best_records(plain_records);
  ASSERT_EQ(best.size(), 1u);
  ASSERT_EQ(best.begin()->second.record->schedule, seeded);
  EXPECT_TRUE(pre_records[0].schedule == seeded || pre_records[1].schedule == seeded)
      << pre_records[0].schedule << " " << pre_records[1].schedule;

  const auto tuned = nlohmann::json::parse(slurp(path("out") + "/tuned/x86-64-linux-sse41.json"));
  int prepacked = 0, others = 0;
  for (const auto& k : tuned.at("kernels")) {
    const bool is_pre = k.at("params").value("prepacked_b", "") == "true";
    ++(is_pre ? prepacked : others);
    EXPECT_EQ(k.at("name").get<std::string>().find("_prepacked__") != std::string::npos, is_pre)
        << k.dump();
  }
  EXPECT_EQ(prepacked, 1) << tuned.dump();
  EXPECT_EQ(others, 1) << tuned.dump();

  // The gate runs on the prepacked kernels: a kernel that leaves an element unwritten fails it.
  const CliResult wrong =
      run("autotune --op QLinearMatMul:uint8,int8,uint8:prepacked_b=true --max-candidates 2" +
          shape + " --inject-fault drop_tail --no-emit --out " + path("out3") + " --db " +
          path("wrong.jsonl") + kQuick);
  ASSERT_EQ(wrong.exit_code, 0) << wrong.err;
  const std::vector<Record> bad = candidates_of(Database::open(path("wrong.jsonl"), false));
  ASSERT_EQ(bad.size(), 2u);
  for (const Record& r : bad) EXPECT_EQ(r.outcome, Outcome::kIncorrect) << r.to_json().dump();
}

// `mmtune db compare`: each database's kernel for the call, gated and timed; one kernel is timed
// once ("same schedule"); databases of different targets are refused.
TEST_F(Autotune, DbCompareTimesEachDatabasesKernelForTheCall) {
  const nlohmann::json params = {
      {"A.type", "float32"}, {"B.type", "float32"}, {"C.type", "float32"}, {"Y.type", "float32"},
      {"trans_a", "false"},  {"trans_b", "false"},  {"has_c", "true"},     {"contract", "strict"}};
  auto db_with = [&](int rows, const std::string& target) {
    const nlohmann::json s = {{"template", "cpu_matmul"},
                              {"tile_rows", rows},
                              {"tile_vectors", 1},
                              {"k_unroll", 2},
                              {"n_block", 0},
                              {"pack_b", false},
                              {"parallel", false}};
    const std::string name = kernel_name("Gemm",
                                         {{"A.type", "float32"},
                                          {"B.type", "float32"},
                                          {"C.type", "float32"},
                                          {"Y.type", "float32"},
                                          {"trans_a", "false"},
                                          {"trans_b", "false"},
                                          {"has_c", "true"},
                                          {"contract", "strict"}},
                                         s.get<schedules::Schedule>().generator_params(), target);
    return nlohmann::json{{"target", target},
                          {"kernels",
                           {{{"name", name},
                             {"op", "Gemm"},
                             {"generator", "mmtune_gemm"},
                             {"params", params},
                             {"schedule", s},
                             {"bucket", "any"},
                             {"provenance", "test"}}}}};
  };
  const std::string t = "x86-64-linux-sse41";
  std::ofstream(path("a.json")) << db_with(2, t).dump();
  std::ofstream(path("b.json")) << db_with(3, t).dump();
  std::ofstream(path("c.json")) << db_with(3, "x86-64-linux-avx2-fma-f16c").dump();
  const CliResult r =
      run("db compare " + path("a.json") + " " + path("b.json") + " --shape 5,24,16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json row = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  EXPECT_NE(row.at("base_kernel"), row.at("new_kernel"));
  EXPECT_GT(row.at("base_rate").get<double>(), 0) << r.out;
  EXPECT_GT(row.at("new_rate").get<double>(), 0) << r.out;
  EXPECT_EQ(row.at("note"), "");
  const CliResult same =
      run("db compare " + path("b.json") + " " + path("b.json") + " --shape 5,24,16");
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("same schedule"), std::string::npos) << same.out;
  const CliResult other =
      run("db compare " + path("a.json") + " " + path("c.json") + " --shape 5,24,16");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("compare databases of one target"), std::string::npos) << other.err;
}

// `mmtune bench`: the runtime's call timed against what computes the same thing, each checked
// first; implementations that do not compute the identity, bad shapes and unknown names are refused
// before anything is timed.
TEST_F(Autotune, BenchTimesTheRuntimeCallAgainstTheLibraries) {
  const CliResult r = run(
      "bench --op Gemm:float32:contract=fma --shape 16,64,64 --impl all --max-time 0.05 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rows = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by_impl;
  for (const nlohmann::json& row : rows) {
    EXPECT_EQ(row.at("op"), "Gemm:float32:contract=fma");
    EXPECT_EQ(row.at("shape"), nlohmann::json({16, 64, 64}));
    EXPECT_EQ(row.at("threads"), 1);
    EXPECT_GT(row.at("rate").get<double>(), 0) << row.dump();
    by_impl[row.at("impl").get<std::string>()] = row;
  }
  ASSERT_TRUE(by_impl.count("runtime")) << r.out;
  EXPECT_TRUE(by_impl.count("openblas")) << r.out;
  EXPECT_TRUE(by_impl.count("onednn")) << r.out;
  // The JIT runs the runtime's schedule and `kernel` calls the runtime's kernel directly, so both
  // are there exactly when the runtime has a kernel.
  const bool has_kernel = by_impl["runtime"].at("kernel") != "reference";
  EXPECT_EQ(by_impl.count("halide") == 1, has_kernel) << r.out;
  EXPECT_EQ(by_impl.count("kernel") == 1, has_kernel) << r.out;
  if (has_kernel) {
    EXPECT_EQ(by_impl["kernel"].at("kernel"),
              by_impl["runtime"].at("kernel").get<std::string>() + " (called directly)");
  }
  // The call with B prepacked once: the prepacked twin where the build has float32 Gemm twins.
  ASSERT_TRUE(by_impl.count("prepacked")) << r.out;
  EXPECT_NE(by_impl["prepacked"].at("note").get<std::string>().find("prepack_b"),
            std::string::npos);
  if (has_kernel) {
    EXPECT_NE(by_impl["prepacked"].at("kernel").get<std::string>().find("_prepacked__"),
              std::string::npos)
        << r.out;
  }
  for (const auto& [impl, row] : by_impl) {
    // Seconds per call and the rate are one figure: 2 M N K operations a call.
    EXPECT_NEAR(row.at("seconds").get<double>() * row.at("rate").get<double>(), 2.0 * 16 * 64 * 64,
                1.0)
        << impl;
  }
  EXPECT_EQ(rows.size(), by_impl.size());
  const CliResult q_kernel =
      run("bench --op QLinearMatMul:uint8,int8,uint8 --shape 4,32,48 --impl kernel");
  EXPECT_EQ(q_kernel.exit_code, 1);
  EXPECT_NE(q_kernel.err.find("--impl kernel: Gemm only so far"), std::string::npos)
      << q_kernel.err;

  const CliResult q =
      run("bench --op QLinearMatMul:uint8,int8,uint8 --shape 4,32,48 --impl runtime,onednn "
          "--max-time 0.05 --json");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const nlohmann::json qrows = nlohmann::json::parse(q.out);
  ASSERT_EQ(qrows.size(), 2u) << q.out;
  EXPECT_EQ(qrows[1].at("impl"), "onednn");
  EXPECT_NE(qrows[1].at("note").get<std::string>().find("int32 sums"), std::string::npos);
  EXPECT_GE(qrows[1].at("wrong").get<int64_t>(), 0);

  const CliResult text =
      run("bench --op Gemm:float32 --shape 8,32,32 --impl runtime,openblas --max-time 0.05");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("8x32x32"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("openblas"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1.00x"), std::string::npos) << text.out;  // the runtime against itself

  // QuantMatmulDequant's weight prepacked, and its prepared call (each checked bit for bit before
  // it is timed).
  const CliResult q_prepacked =
      run("bench --op QuantMatmulDequant:weight=nk --shape 4,16,16 --impl prepacked --max-time "
          "0.05 --json");
  ASSERT_EQ(q_prepacked.exit_code, 0) << q_prepacked.err;
  const nlohmann::json q_rows = nlohmann::json::parse(q_prepacked.out);
  ASSERT_EQ(q_rows.size(), 1u) << q_prepacked.out;
  EXPECT_EQ(q_rows[0].at("impl"), "prepacked");
  EXPECT_EQ(q_rows[0].at("wrong"), 0);
  const CliResult q_prepared =
      run("bench --op QuantMatmulDequant --shape 4,16,16 --impl prepared --max-time 0.05 --json");
  ASSERT_EQ(q_prepared.exit_code, 0) << q_prepared.err;
  const nlohmann::json qp_rows = nlohmann::json::parse(q_prepared.out);
  ASSERT_EQ(qp_rows.size(), 1u) << q_prepared.out;
  EXPECT_EQ(qp_rows[0].at("impl"), "prepared");
  EXPECT_EQ(qp_rows[0].at("wrong"), 0);
  EXPECT_GT(qp_rows[0].at("rate").get<double>(), 0.0);
  const CliResult not_blas = run("bench --op QGemm:uint8,int8 --shape 4,4,4 --impl openblas");
  EXPECT_EQ(not_blas.exit_code, 1);
  EXPECT_NE(not_blas.err.find("openblas does not compute QGemm:uint8,int8"), std::string::npos)
      << not_blas.err;
  const CliResult bad_shape = run("bench --op Gemm:float32 --shape 4,0,4");
  EXPECT_EQ(bad_shape.exit_code, 1);
  EXPECT_NE(bad_shape.err.find("--shape '4,0,4' is not M,N,K"), std::string::npos) << bad_shape.err;
  const CliResult bad_impl = run("bench --op Gemm:float32 --shape 4,4,4 --impl mkl");
  EXPECT_EQ(bad_impl.exit_code, 1);
  EXPECT_NE(bad_impl.err.find("--impl 'mkl' is not"), std::string::npos) << bad_impl.err;
  EXPECT_TRUE(bad_impl.out.empty()) << bad_impl.out;
}

// The 8-bit anchors: oneDNN's int8 matmul primitive and XNNPACK's qu8 and qs8 fully-connected
// operators are in `all` for every int8/uint8 QLinearMatMul, at every thread count; each output
// is compared with the reference's and the differing ones counted; rows that compute another
// operation (qs8's symmetric weights, oneDNN's int32 sums) say so. Not for other identities.
TEST_F(Autotune, BenchTimesTheInt8AnchorsWithTheirMismatches) {
  for (const std::string spec : {"QLinearMatMul:uint8,int8,uint8", "QLinearMatMul:int8,int8,int8",
                                 "QLinearMatMul:uint8,uint8,uint8"}) {
    const CliResult r = run("bench --op " + spec +
                            " --shape 5,24,40 --impl all --threads 1,2 --max-time 0.02 --json");
    ASSERT_EQ(r.exit_code, 0) << spec << ": " << r.err;
    std::map<std::pair<std::string, int>, nlohmann::json> rows;
    for (const nlohmann::json& row : nlohmann::json::parse(r.out)) {
      EXPECT_EQ(row.at("op"), spec);
      EXPECT_EQ(row.at("shape"), nlohmann::json({5, 24, 40}));
      EXPECT_GT(row.at("rate").get<double>(), 0) << row.dump();
      rows[{row.at("impl").get<std::string>(), row.at("threads").get<int>()}] = row;
    }
    auto has = [&](const std::string& impl, int t) { return rows.count({impl, t}) == 1; };
    auto row_of = [&](const std::string& impl, int t) -> const nlohmann::json& {
      return rows.at({impl, t});
    };
    for (int t : {1, 2}) {
      for (const std::string impl : {"onednn_matmul", "xnnpack_qu8", "xnnpack_qs8"}) {
        ASSERT_TRUE(has(impl, t)) << spec << " " << impl << " " << t << ": " << r.out;
        const nlohmann::json& row = row_of(impl, t);
        const std::string note = row.at("note").get<std::string>();
        EXPECT_GE(row.at("wrong").get<int64_t>(), 0) << row.dump();
        EXPECT_NE(note.find(" of 120 outputs differ from the reference's"), std::string::npos)
            << row.dump();
        // Not the same operation exactly where the note says which zero point it ran instead.
        EXPECT_EQ(!row.at("same_operation").get<bool>(),
                  note.find("not the same operation: b_zero_point") != std::string::npos)
            << row.dump();
      }
      // qu8 takes every zero point (the other types' bytes flipped): the same operation.
      EXPECT_TRUE(row_of("xnnpack_qu8", t).at("same_operation").get<bool>());
      EXPECT_NE(row_of("xnnpack_qs8", t).at("kernel").get<std::string>().find("XNNPACK"),
                std::string::npos);
    }
    if (spec == "QLinearMatMul:uint8,int8,uint8") {
      ASSERT_TRUE(has("onednn", 1)) << r.out;
      EXPECT_FALSE(row_of("onednn", 1).at("same_operation").get<bool>());  // int32 sums alone
    }
  }
  // A uint8 b has zero point 128 in qs8's int8 (never the bench's data here): marked in the text.
  const CliResult text =
      run("bench --op QLinearMatMul:uint8,uint8,uint8 --shape 5,24,40 --impl xnnpack_qs8 "
          "--max-time 0.02");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("xnnpack_qs8"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[not the same operation: b_zero_point 128"), std::string::npos)
      << text.out;
  const CliResult not_int8 =
      run("bench --op Gemm:float32 --shape 4,4,4 --impl onednn_matmul --max-time 0.02");
  EXPECT_EQ(not_int8.exit_code, 1);
  EXPECT_NE(not_int8.err.find("onednn_matmul does not compute Gemm:float32"), std::string::npos)
      << not_int8.err;
  const CliResult float8 =
      run("bench --op QLinearMatMul:float8e4m3fn --shape 4,4,4 --impl xnnpack_qu8 --max-time 0.02");
  EXPECT_EQ(float8.exit_code, 1);
  EXPECT_NE(float8.err.find("xnnpack_qu8 does not compute"), std::string::npos) << float8.err;
}

}  // namespace
}  // namespace mmtune::testing
