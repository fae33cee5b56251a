// The tuner's worker: one job (a kernel identity, a target, one or more schedules, the bucket's
// shape) compiled, gated bit for bit against the reference and timed, in a process of its own (or a
// baseline: the same algorithm under one of Halide's autoschedulers, through the same gate and
// timing). The
// wheel's libHalide aborts the whole process on some schedules (LLVM assertions), so the tuner
// runs each job in a child (`mmtune __tune-worker JOB.json`): a crash or a hang costs that job's
// records, not the run. Children report their phase on stdout as they go, so a death is attributed
// to the compile or the run.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/kernel_key.h"
#include "autotune/tune_inputs.h"
#include "autotune/tune_timing.h"
#include "autotune/tuning_db.h"

namespace mmtune::tune {

struct Job {
  std::string identity;                   // spec, autotune/tune_inputs.h
  std::string target;                     // Halide target string
  std::vector<nlohmann::json> schedules;  // one (a search candidate) or the finalists
  // "" for schedules of the template; else one of Halide's autoschedulers (jit::autoschedulers())
  // schedules the kernel for `shape`, and `schedules` is the one record's {"baseline": NAME}. It
  // is gated and timed exactly as a candidate.
  std::string baseline;
  std::string bucket;
  std::vector<int64_t> shape;  // M, N, K the bucket is measured on
  bool full_gate = false;      // every data kind on every gate shape (finalists)
  // Only the gate cases of the bucket's own shape (baselines under --baseline-gate bucket: Halide's
  // autoschedulers make kernels for their estimates, which may refuse shapes below their tiles).
  bool bucket_gate = false;
  MeasureOptions measure;
  std::string measure_lock;  // a file locked while timing (one timer at a time)
  // Tests only: "drop_tail" corrupts the last output; "abort_compile" aborts the worker while it
  // compiles (a compiler crash).
  std::string inject_fault;
  uint64_t seed = 1;
  // A target this machine does not run (autotune/tune_remote.h): how the schedules are costed
  // there ("qemu_instructions" or "device_time"; "" for this machine's own timing), the runner
  // command that reaches the target ("" for its default, qemu), and the folder the kernel
  // runners are built in.
  std::string cost;
  std::string runner;
  std::string work;

  nlohmann::json to_json() const;
  static Job from_json(const nlohmann::json& j);
};

// Gates one schedule of the job: every case of the battery (autotune/gate.h) through the guarded,
// poisoned output, with the job's shape, scope and seed. Returns whether every output matched;
// `report` receives the counts and the first mismatch.
bool gate_schedule(const KernelIdentity& id, const Job& job, const HalideVariant& v,
                   const schedules::Tile& tile, nlohmann::json& report);

// Runs the job in this process: one record per schedule (identity, bucket, target, schedule,
// shape, outcome, gate, samples, rate; provenance is the caller's). `phase` is told "compile i",
// "gate i", "wait", "measure" as the work proceeds.
std::vector<Record> evaluate(const Job& job, const std::function<void(const std::string&)>& phase);

// The child's main: reads the job file, evaluates, prints phase lines and one final line
// "result <json array of records>". Returns the exit code.
int worker_main(const std::string& job_file);

// Runs jobs in child processes of `exe` (this program), at most `parallel` at once, each killed
// after `timeout_s` seconds of compile or gate work (waiting for the timer lock and timing itself
// have their own bound: the measure options). A job whose child dies or times out gets records
// with outcome build_failed / run_failed / timeout naming the phase.
class WorkerPool {
 public:
  WorkerPool(std::string exe, std::string scratch_dir, int parallel, double timeout_s);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  bool full() const;
  bool idle() const;
  void submit(const Job& job);
  // Waits up to `wait_s` for a job to finish; returns the records of every job that finished.
  std::vector<Record> collect(double wait_s);
  // Kills every running child (Ctrl-C after the grace period); their jobs return no records.
  void kill_all();
  std::size_t running() const;

 private:
  struct Child;
  std::string exe_, scratch_;
  int parallel_;
  double timeout_s_;
  std::vector<Child*> children_;
  uint64_t next_id_ = 0;
};

}  // namespace mmtune::tune
