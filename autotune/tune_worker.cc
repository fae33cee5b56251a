// The tuner's worker: compile, gate and time a job's schedules; the pool of child processes.
#include "autotune/tune_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "autotune/gate.h"
#include "autotune/halide_jit.h"
#include "autotune/halide_ops.h"
#include "autotune/tune_inputs.h"
#include "autotune/tune_remote.h"
#include "reference/error.h"
#include "reference/registry.h"

extern char** environ;

namespace mmtune::tune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Times the schedules interleaved, each on its own rotation of the bucket's timing calls.
std::vector<std::vector<double>> measure(const KernelIdentity& id, const Job& job,
                                         const std::vector<HalideVariant>& variants) {
  const std::vector<OpCall> copies =
      timing_calls(id, job.shape.at(0), job.shape.at(1), job.shape.at(2), job.seed);
  Tensor output = run_halide(copies[0].op, copies[0].inputs, copies[0].attrs, variants[0]);
  // Prepacked kernels: each copy's B packed for each variant's layout before the clock starts.
  for (const HalideVariant& v : variants) {
    if (!v.panel_cache) continue;
    for (const OpCall& c : copies) {
      JitRun run;
      run.output = output.bytes.data();
      run.output_bytes = output.bytes.size();
      (void)run_halide(c.op, c.inputs, c.attrs, v, &run);
    }
  }
  // A sample is the compiled kernels' time inside the calls: the JIT's host side (parsing the
  // named inputs, validation, the kernel and panel caches' lookups, parameter widening) costs
  // microseconds a call, the same for every candidate, and would bury the differences between
  // schedules at small shapes (a 64^3 u8.s8 call: 25 us through the JIT, 9 us prepared in the
  // runtime). The runtime's own per-call cost is `mmtune bench`'s to measure.
  return time_interleaved_reported(
      variants.size(), copies.size(),
      [&](std::size_t vi, std::size_t ci) {
        JitRun run;
        run.output = output.bytes.data();
        run.output_bytes = output.bytes.size();
        const OpCall& c = copies[ci];
        (void)run_halide(c.op, c.inputs, c.attrs, variants[vi], &run);
        return run.kernel_calls > 0 && !variants[vi].executor ? run.kernel_seconds : -1.0;
      },
      job.measure);
}

// The last few lines of a file (a dead worker's stderr), on one line, at most ~400 characters.
std::string tail_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff keep = std::min<std::streamoff>(size, 400);
  in.seekg(size - keep);
  std::string text(static_cast<std::size_t>(keep), '\0');
  in.read(text.data(), keep);
  if (keep < size) {
    const std::size_t nl = text.find('\n');
    if (nl != std::string::npos) text.erase(0, nl + 1);  // from a whole line
  }
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    out += (out.empty() ? "" : " | ") + line;
  }
  return out;
}

}  // namespace

bool gate_schedule(const KernelIdentity& id, const Job& job, const HalideVariant& v,
                   const schedules::Tile& tile, nlohmann::json& report) {
  GateOptions o;
  o.shape = job.shape;
  o.full = job.full_gate;
  o.bucket_only = job.bucket_gate;
  o.seed = job.seed;
  o.drop_tail = job.inject_fault == "drop_tail";
  HalideVariant gated = v;
  gated.panel_cache = nullptr;  // each case's B is new: packed by its call
  const GateSummary g = gate_battery(id, gated, tile, o);
  report["cases"] = g.kernel_cases;
  report["reference_cases"] = g.reference_cases;
  report["outputs"] = g.outputs;
  if (!g.first_mismatch.is_null()) report["first_mismatch"] = g.first_mismatch;
  report["full"] = job.full_gate;
  if (job.bucket_gate) report["scope"] = "bucket";
  return g.passed();
}

nlohmann::json Job::to_json() const {
  return {{"identity", identity},
          {"target", target},
          {"schedules", schedules},
          {"baseline", baseline},
          {"bucket", bucket},
          {"shape", shape},
          {"full_gate", full_gate},
          {"bucket_gate", bucket_gate},
          {"measure",
           {{"min_sample_s", measure.min_sample_s},
            {"min_samples", measure.min_samples},
            {"max_samples", measure.max_samples},
            {"max_time_s", measure.max_time_s},
            {"spread", measure.spread},
            {"threads", measure.threads}}},
          {"measure_lock", measure_lock},
          {"inject_fault", inject_fault},
          {"seed", seed},
          {"cost", cost},
          {"runner", runner},
          {"work", work}};
}

Job Job::from_json(const nlohmann::json& j) {
  Job job;
  job.identity = j.at("identity").get<std::string>();
  job.target = j.at("target").get<std::string>();
  job.schedules = j.at("schedules").get<std::vector<nlohmann::json>>();
  job.baseline = j.at("baseline").get<std::string>();
  job.bucket = j.at("bucket").get<std::string>();
  job.shape = j.at("shape").get<std::vector<int64_t>>();
  job.full_gate = j.at("full_gate").get<bool>();
  job.bucket_gate = j.at("bucket_gate").get<bool>();
  const auto& m = j.at("measure");
  job.measure.min_sample_s = m.at("min_sample_s").get<double>();
  job.measure.min_samples = m.at("min_samples").get<int>();
  job.measure.max_samples = m.at("max_samples").get<int>();
  job.measure.max_time_s = m.at("max_time_s").get<double>();
  job.measure.spread = m.at("spread").get<double>();
  job.measure.threads = m.at("threads").get<int>();
  job.measure_lock = j.at("measure_lock").get<std::string>();
  job.inject_fault = j.at("inject_fault").get<std::string>();
  job.seed = j.at("seed").get<uint64_t>();
  job.cost = j.value("cost", "");
  job.runner = j.value("runner", "");
  job.work = j.value("work", "");
  return job;
}

std::vector<Record> evaluate(const Job& job, const std::function<void(const std::string&)>& phase) {
  if (!job.cost.empty()) return evaluate_remote(job, phase);
  // A prepacked identity's candidates read B packed once: gated on its calls, each packing its
  // B, and timed on calls whose B was packed before the clock started (what prepack_b users run).
  bool prepacked = false;
  const KernelIdentity keyed = parse_identity_spec(job.identity);
  const KernelIdentity id = without_prepacked(keyed, &prepacked);
  auto panel_cache = prepacked ? std::make_shared<PanelCache>() : nullptr;
  const schedules::TargetInfo info = schedules::target_info(resolve_target(job.target));
  std::vector<Record> records;
  std::vector<HalideVariant> passed;
  std::vector<std::size_t> passed_index;
  for (std::size_t i = 0; i < job.schedules.size(); ++i) {
    Record r;
    r.identity = job.identity;
    r.bucket = job.bucket;
    r.target = job.target;
    r.schedule = job.schedules[i];
    r.shape = job.shape;
    HalideVariant v;
    v.target = job.target;
    schedules::Tile tile;
    try {
      if (job.baseline.empty()) {
        v.schedule = job.schedules[i].get<schedules::Schedule>();
        v.prepacked_b = prepacked;
        v.panel_cache = panel_cache;
      } else {
        // The autoscheduler optimizes for the bucket's shape and the threads it is timed on.
        v.autoschedule = Autoschedule{job.baseline, job.shape.at(0), job.shape.at(1),
                                      job.shape.at(2), job.measure.threads};
      }
      const KernelKey key = kernel_key(v.prepacked_b ? keyed : id, v);
      tile = key.schedule.tile(info, accumulator_of(id));
      phase("compile " + std::to_string(i));
      if (job.inject_fault == "abort_compile") std::abort();  // tests: a compiler crash
      const auto compile_start = Clock::now();
      try {
        (void)jit::compile(key, job.target);
      } catch (const std::exception& e) {
        r.outcome = Outcome::kBuildFailed;
        r.detail = e.what();
        r.extra["compile_s"] = seconds_since(compile_start);
        records.push_back(r);
        continue;
      }
      r.extra["compile_s"] = seconds_since(compile_start);  // an autoscheduler's search included
    } catch (const InvalidArgument& e) {
      r.outcome = Outcome::kInvalid;
      r.detail = e.what();
      records.push_back(r);
      continue;
    }
    phase("gate " + std::to_string(i));
    try {
      const bool ok = gate_schedule(id, job, v, tile, r.gate);
      r.outcome = ok ? Outcome::kPassed : Outcome::kIncorrect;
      if (!ok) r.detail = "the gate found an output that differs from the reference";
    } catch (const std::exception& e) {
      r.outcome = Outcome::kRunFailed;
      r.detail = e.what();
    }
    if (r.outcome == Outcome::kPassed) {
      passed.push_back(v);
      passed_index.push_back(records.size());
    }
    records.push_back(r);
  }
  if (passed.empty()) return records;
  phase("wait");
  FileLock turn(job.measure_lock);
  phase("measure");
  try {
    const auto samples = measure(id, job, passed);
    const double ops = 2.0 * static_cast<double>(job.shape.at(0)) *
                       static_cast<double>(job.shape.at(1)) * static_cast<double>(job.shape.at(2));
    for (std::size_t p = 0; p < passed.size(); ++p) {
      Record& r = records[passed_index[p]];
      r.samples_s = samples[p];
      const double med = median_of(samples[p]);
      r.rate = med > 0 ? ops / med : 0;
    }
  } catch (const std::exception& e) {
    for (std::size_t idx : passed_index) {
      records[idx].outcome = Outcome::kRunFailed;
      records[idx].detail = std::string("timing failed: ") + e.what();
    }
  }
  return records;
}

int worker_main(const std::string& job_file) {
  try {
    std::ifstream in(job_file);
    if (!in) {
      std::cerr << "mmtune worker: cannot read " << job_file << "\n";
      return 3;
    }
    const Job job = Job::from_json(nlohmann::json::parse(in));
    auto say = [](const std::string& p) { std::cout << "phase " << p << std::endl; };
    const std::vector<Record> records = evaluate(job, say);
    nlohmann::json out = nlohmann::json::array();
    for (const Record& r : records) out.push_back(r.to_json());
    std::cout << "result " << out.dump() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "mmtune worker: " << e.what() << "\n";
    return 3;
  }
}

// ---------------------------------------------------------------------------------------------
// The pool.

struct WorkerPool::Child {
  pid_t pid = -1;
  int out_fd = -1;
  std::string job_file;
  std::string err_file;  // its stderr
  Job job;
  std::string buffer;  // stdout so far
  std::string phase = "start";
  Clock::time_point phase_start = Clock::now();
  Clock::time_point started = Clock::now();
  bool timed_out = false;
  double limit_s = 0;  // the limit it exceeded
};

WorkerPool::WorkerPool(std::string exe, std::string scratch_dir, int parallel, double timeout_s)
    : exe_(std::move(exe)),
      scratch_(std::move(scratch_dir)),
      parallel_(std::max(1, parallel)),
      timeout_s_(timeout_s) {}

WorkerPool::~WorkerPool() { kill_all(); }

bool WorkerPool::full() const { return static_cast<int>(children_.size()) >= parallel_; }
bool WorkerPool::idle() const { return children_.empty(); }
std::size_t WorkerPool::running() const { return children_.size(); }

void WorkerPool::submit(const Job& job) {
  auto* c = new Child;
  c->job = job;
  c->job_file =
      scratch_ + "/job-" + std::to_string(::getpid()) + "-" + std::to_string(next_id_++) + ".json";
  {
    std::ofstream f(c->job_file);
    f << job.to_json().dump();
    if (!f) {
      const std::string file = c->job_file;
      delete c;
      invalid("autotune", "cannot write the job file '", file, "'");
    }
  }
  // The child's stderr goes to a file: compiler warnings (Mullapudi2016 writes one per fused
  // multiply-add) stay off the terminal, and a crash's last words join its record.
  c->err_file = c->job_file.substr(0, c->job_file.size() - 5) + ".err";
  const int err_fd = ::open(c->err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int pipe_fds[2];
  if (err_fd < 0 || ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    if (err_fd >= 0) ::close(err_fd);
    std::remove(c->job_file.c_str());
    delete c;
    invalid("autotune", "cannot create the output files of a worker: ", std::strerror(errno));
  }
  const std::string threads = std::to_string(job.measure.threads);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ::close(err_fd);
    delete c;
    invalid("autotune", "cannot start a worker: ", std::strerror(errno));
  }
  if (pid == 0) {
    // The child: stdout to the pipe, stderr to its file, a process group of its own (Ctrl-C goes
    // to the parent, which decides), the thread count in the environment before Halide's runtime
    // starts.
    ::setpgid(0, 0);
    ::dup2(pipe_fds[1], 1);
    ::dup2(err_fd, 2);
    ::setenv("HL_NUM_THREADS", threads.c_str(), 1);
    const char* argv[] = {exe_.c_str(), "__tune-worker", c->job_file.c_str(), nullptr};
    ::execv(exe_.c_str(), const_cast<char* const*>(argv));
    std::_Exit(127);
  }
  ::close(pipe_fds[1]);
  ::close(err_fd);
  (void)::fcntl(pipe_fds[0], F_SETFL, ::fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
  c->pid = pid;
  c->out_fd = pipe_fds[0];
  children_.push_back(c);
}

std::vector<Record> WorkerPool::collect(double wait_s) {
  std::vector<Record> done;
  const auto deadline = Clock::now() + std::chrono::duration<double>(wait_s);
  for (;;) {
    std::vector<pollfd> fds;
    for (Child* c : children_) fds.push_back({c->out_fd, POLLIN, 0});
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    const int ms = static_cast<int>(std::clamp(left, 0.0, 0.2) * 1000);
    if (!fds.empty()) {
      (void)::poll(fds.data(), fds.size(), ms);
    } else if (ms > 0) {
      ::usleep(static_cast<useconds_t>(ms) * 1000);
    }
    for (std::size_t i = 0; i < children_.size();) {
      Child* c = children_[i];
      bool eof = false;
      char buf[4096];
      for (;;) {
        const ssize_t n = ::read(c->out_fd, buf, sizeof buf);
        if (n > 0) {
          c->buffer.append(buf, static_cast<std::size_t>(n));
          if (n < static_cast<ssize_t>(sizeof buf)) break;
          continue;
        }
        if (n == 0) eof = true;
        break;
      }
      // Phase lines.
      std::size_t nl;
      std::string result_line;
      std::size_t pos = 0;
      while ((nl = c->buffer.find('\n', pos)) != std::string::npos) {
        const std::string line = c->buffer.substr(pos, nl - pos);
        if (line.rfind("phase ", 0) == 0 && line.substr(6) != c->phase) {
          c->phase = line.substr(6);
          c->phase_start = Clock::now();
        }
        pos = nl + 1;
      }
      // Timeouts: compile and gate work; the wait for the timer and timing are bounded by the
      // measure options (a generous multiple of them here).
      const bool timing = c->phase == "wait" || c->phase == "measure";
      const double limit =
          timing ? 10.0 * c->job.measure.max_time_s * static_cast<double>(c->job.schedules.size()) +
                       600.0
                 : timeout_s_;
      if (!eof && !c->timed_out && seconds_since(c->phase_start) > limit) {
        ::kill(-c->pid, SIGKILL);
        ::kill(c->pid, SIGKILL);
        c->timed_out = true;
        c->limit_s = limit;
      }
      if (!eof) {
        ++i;
        continue;
      }
      int status = 0;
      while (::waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
      }
      ::close(c->out_fd);
      std::remove(c->job_file.c_str());
      const std::string last_words = tail_of(c->err_file);
      std::remove(c->err_file.c_str());
      // The result line, if the child got that far.
      const std::size_t at = c->buffer.rfind("result ");
      bool parsed = false;
      if (at != std::string::npos && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        const std::size_t end = c->buffer.find('\n', at);
        const nlohmann::json j =
            nlohmann::json::parse(c->buffer.substr(at + 7, end - at - 7), nullptr, false);
        if (j.is_array()) {
          for (const auto& x : j) done.push_back(Record::from_json(x));
          parsed = true;
        }
      }
      if (!parsed) {
        std::ostringstream why;
        Outcome o = Outcome::kRunFailed;
        if (c->timed_out) {
          o = Outcome::kTimeout;
          why << "killed after " << c->limit_s << " s in phase '" << c->phase << "'";
        } else {
          if (c->phase.rfind("compile", 0) == 0 || c->phase == "start") o = Outcome::kBuildFailed;
          if (WIFSIGNALED(status)) {
            why << "the worker died of signal " << WTERMSIG(status) << " ("
                << strsignal(WTERMSIG(status)) << ") in phase '" << c->phase << "'";
          } else {
            why << "the worker exited with status " << WEXITSTATUS(status) << " in phase '"
                << c->phase << "'";
          }
          if (!last_words.empty()) why << "; its stderr ended: " << last_words;
        }
        // The schedule in progress takes the blame; the others were not reached.
        for (std::size_t s = 0; s < c->job.schedules.size(); ++s) {
          Record r;
          r.identity = c->job.identity;
          r.bucket = c->job.bucket;
          r.target = c->job.target;
          r.schedule = c->job.schedules[s];
          r.shape = c->job.shape;
          r.outcome = o;
          r.detail = why.str();
          done.push_back(r);
        }
      }
      delete c;
      children_.erase(children_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (!done.empty() || Clock::now() >= deadline || children_.empty()) break;
  }
  return done;
}

void WorkerPool::kill_all() {
  for (Child* c : children_) {
    ::kill(-c->pid, SIGKILL);
    ::kill(c->pid, SIGKILL);
    int status = 0;
    while (::waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(c->out_fd);
    std::remove(c->job_file.c_str());
    std::remove(c->err_file.c_str());
    delete c;
  }
  children_.clear();
}

}  // namespace mmtune::tune
