// `mmtune autotune`, `mmtune db best|merge`, `mmtune emit`, and the tuner's hidden worker command.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "autotune/cli.h"
#include "autotune/cli_compare.h"
#include "autotune/emit_package.h"
#include "autotune/kernel_key.h"
#include "autotune/kernel_naming.h"
#include "autotune/process.h"
#include "autotune/shape_list.h"
#include "autotune/tune_buckets.h"
#include "autotune/tune_inputs.h"
#include "autotune/tuner.h"
#include "autotune/tuning_db.h"
#include "reference/error.h"

namespace mmtune::cli {
namespace {

// "90s", "5m", "1h", "1h30m", "2.5m", "300" (seconds).
double parse_duration(const std::string& text) {
  if (text.empty()) invalid("autotune", "--budget '' is not a duration (e.g. 90s, 5m, 1h30m)");
  double total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(text.substr(pos), &used);
    } catch (const std::exception&) {
      invalid("autotune", "--budget '", text, "' is not a duration (e.g. 90s, 5m, 1h30m)");
    }
    pos += used;
    double unit = 1;
    if (pos < text.size()) {
      const char u = text[pos++];
      if (u == 's') {
        unit = 1;
      } else if (u == 'm') {
        unit = 60;
      } else if (u == 'h') {
        unit = 3600;
      } else {
        invalid("autotune", "--budget '", text, "': unit '", std::string(1, u),
                "' is not s, m or h");
      }
    }
    if (!(v >= 0) || !std::isfinite(v)) {
      invalid("autotune", "--budget '", text, "' must be a non-negative duration");
    }
    total += v * unit;
  }
  return total;
}

// "I/N".
void parse_shard(const std::string& text, int& index, int& count) {
  char slash = 0;
  std::istringstream in(text);
  std::string rest;
  if (!(in >> index >> slash >> count) || slash != '/' || (in >> rest) || count < 1 || index < 0 ||
      index >= count) {
    invalid("autotune", "--shard '", text, "' is not I/N with 0 <= I < N (e.g. 0/4)");
  }
}

// "none", or a comma list of autoscheduler names (any case; the tuner checks them).
std::vector<std::string> parse_baselines(const std::string& text) {
  if (text == "none") return {};
  std::vector<std::string> names;
  std::istringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    if (name.empty()) {
      invalid("autotune", "--baselines '", text,
              "' is not a comma list of Adams2019, Mullapudi2016, Li2018, or none");
    }
    names.push_back(name);
  }
  if (names.empty()) {
    invalid("autotune",
            "--baselines '' is not a comma list of Adams2019, Mullapudi2016, Li2018, "
            "or none");
  }
  return names;
}

const char* kAutotuneHelp = R"(
For each kernel identity (--op) and shape bucket (from --shapes / --shape), search the schedule
template's space: every candidate compiles in a worker process, runs bit for bit against the
reference on adversarial inputs into poisoned, guarded outputs, and only then is timed. Every
outcome is a line of the database (--db), fsynced: interrupt at any moment (Ctrl-C finishes the
in-flight candidates) and rerun the same command to resume; nothing is measured twice.

Where OpenBLAS or oneDNN computes the same thing (float32 Gemm, u8.s8->u8 QLinearMatMul), it is
timed as a baseline, once per database; it is never a winner.

After each identity and bucket's search, Halide's own autoschedulers (--baselines: Adams2019,
Mullapudi2016, Li2018 by default; `none` skips them) schedule the same algorithm for the bucket's
shape, each in a worker process of its own, through the same gate and timing: their records
(stage "baseline") are what report.html compares the winner with, never winners themselves. One
that crashes the compiler, exceeds --timeout or computes other bits (e.g. a float sum reordered)
is recorded so (build_failed, timeout, incorrect with the first mismatch). An autoscheduler
makes a kernel for its estimates, which often refuses shapes smaller than its tiles, so baselines
are gated on the bucket's own shape by default (--baseline-gate bucket); --baseline-gate full runs
the candidates' whole battery (records of their own), and the report says which.

A --target this machine cannot run (arm-64-linux-arm_dot_prod, hexagon-32-noos-hvx-hvx_128-hvx_v66)
is tuned through its kernel runner: each candidate built with the target's toolchain, gated bit
for bit on the target (its qemu, or --runner 'ssh board {exe} {args}'), then costed there:
--cost qemu_instructions (the default without --runner) counts the guest instructions one call
executes under qemu, a deterministic proxy named so in the records, tuned/<target>.json and the
report (a measure of work, not of time); --cost device_time (the default with --runner) times the
calls with the device's clock. No baselines, machine figures or package for such a target
(`mmtune build-library` builds its tuned kernels).

Writes to --out: tuning.jsonl (unless --db says otherwise), tuned/<target>.json, the database
the build consumes (cmake -DMMTUNE_DATABASE=<out>/tuned/<target>.json), machine.json (peak
FLOP/s and memory bandwidth, measured at the start), report.html and, unless --no-package, the
package of the tuned kernels, as `mmtune emit` writes it: <out>/package, for other projects'
find_package(mmtune-kernels) and mmtune::kernels.

SPEC is OP[:TYPES][:KEY=VALUE...], e.g.
  Gemm:float32:contract=fma   QLinearMatMul:uint8,int8,uint8:requant=float32
  QGemm:uint8,int8:output=float32   QuantMatmulDequant

prepacked_b=true (float32 Gemm, 8-bit QLinearMatMul and QGemm, B not transposed) tunes the kernel
that reads B prepacked (mmtune::runtime::prepack_b): gated with each case's B packed by its call,
timed with B packed before the clock starts, its first candidates the plain identity's best of
each bucket in the database. A database with such kernels builds them in place of the prepacked
twins of the identity's plain kernels (cmake/MmtuneKernels.cmake).

Examples:
  mmtune autotune                                  # float32 Gemm (fma) and u8.s8->u8 QLinearMatMul
  mmtune autotune --op Gemm:float32 --shapes benchmarks/shapes/llm.txt --budget 30m
  mmtune autotune --op Gemm:bfloat16:contract=fma --shape 1,4096,4096 --max-candidates 40 --jobs 2
  mmtune autotune --baselines Mullapudi2016,Li2018      # skip Adams2019
  mmtune autotune --shape 64,64,64 --threads 1,2 --parallel-only
                                                   # each bucket at 1 and at 2 threads: where the
                                                   # winners differ, buckets with thread ranges
  mmtune autotune --op QLinearMatMul:uint8,int8,uint8:prepacked_b=true --shape 1,4096,4096
  mmtune autotune --target arm-64-linux-arm_dot_prod --op QLinearMatMul:uint8,int8,uint8 --shape 16,1024,1024
  mmtune autotune --ops-from tuned/x86-64-linux-sse41.json --target x86-64-linux-sse41
                                                   # retune every identity a database ships
  mmtune autotune --shard 2/8 --db shard2.jsonl --no-emit ...   # one of 8 independent processes
  mmtune db merge shard*.jsonl -o all.jsonl && mmtune emit --db all.jsonl --out tuned-all
)";

const char* kParallelOnlyHelp =
    "in each bucket where a schedule that splits into parallel tasks passed, the winner is one "
    "of those (row tasks counted at the bucket's smallest M; candidates are timed at --threads: at "
    "1 thread a serial schedule can win by a few percent, then use one core whatever the caller's "
    "thread count; with --threads 1,2 the 1-thread buckets are left out of this rule: their "
    "kernels serve 1-thread calls only)";

const char* kEmitHelp = R"(
Writes DIR/tuned/<target>.json for each target of the database (or each --target), the winners in
the format the build consumes, then the package of their kernels in DIR/package (unless
--no-package): the runtime's API (<mmtune/mmtune.h> and the reference headers it includes), one
static library libmmtune_kernels.a with the kernels of every level, best first (AVX-512, AVX2, the
others), the Halide runtime and the dispatch tables, manifest.json (every kernel: name, operator,
identity, bucket, schedule, target, provenance; the mmtune commit and Halide version that built
it) and the CMake package mmtune-kernels. Another project uses it with DIR/package on
CMAKE_PREFIX_PATH:

  find_package(mmtune-kernels REQUIRED)
  target_link_libraries(app PRIVATE mmtune::kernels)

The package is built by this mmtune source tree's own CMake build (the tree the binary was built
from, or $MMTUNE_SOURCE_DIR) in a folder beside DIR/package, with the build's cmake and
compilers; DIR/package appears, or replaces the previous one, only once every step succeeded.
)";

void print_comparison(const std::vector<tune::CompareRow>& rows, bool json) {
  auto rate = [](double r) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(2) << r / 1e9;
    return r > 0 ? os.str() : std::string("-");
  };
  if (!json) {
    std::cout
        << "| identity | shape | BASE kernel | NEW kernel | BASE G/s | NEW G/s | NEW / BASE | "
           "note |\n|---|---|---|---|---|---|---|---|\n";
  }
  for (const tune::CompareRow& r : rows) {
    const double ratio = r.base_rate > 0 && r.new_rate > 0 ? r.new_rate / r.base_rate : 0;
    if (json) {
      std::cout << nlohmann::json{{"identity", r.identity},
                                  {"shape", {r.shape.m, r.shape.n, r.shape.k}},
                                  {"base_kernel", r.base_kernel},
                                  {"new_kernel", r.new_kernel},
                                  {"base_rate", r.base_rate},
                                  {"new_rate", r.new_rate},
                                  {"note", r.note}}
                       .dump()
                << "\n";
      continue;
    }
    std::ostringstream q;
    q << std::fixed << std::setprecision(2) << ratio << "x";
    std::cout << "| " << r.identity << " | " << r.shape.m << "x" << r.shape.n << "x" << r.shape.k
              << " | " << r.base_kernel << " | " << r.new_kernel << " | " << rate(r.base_rate)
              << " | " << rate(r.new_rate) << " | " << (ratio > 0 ? q.str() : "-") << " | "
              << r.note << " |\n";
  }
}

// --threads: "2" or a comma list "1,2", each 1-1024 (autotune() refuses a count listed twice).
std::vector<int> parse_thread_counts(const std::string& text) {
  std::vector<int> counts;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    std::size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || n < 1 || n > 1024) {
      invalid("autotune", "--threads '", text, "': '", item,
              "' is not a thread count from 1 to 1024 (give one, or a comma list: 1,2)");
    }
    counts.push_back(n);
  }
  if (counts.empty()) invalid("autotune", "--threads '", text, "' names no thread count");
  return counts;
}

}  // namespace

std::function<int()> add_autotune_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("autotune", "Search, gate and time kernel schedules");
  sub->footer(kAutotuneHelp);
  struct Opts {
    std::vector<std::string> ops, shape;
    std::string ops_from, shapes, target = "host", budget, db, out, shard = "0/1",
                                  strategy = "evolutionary";
    std::string baselines = "Adams2019,Mullapudi2016,Li2018", baseline_gate = "bucket";
    int max_candidates = 0, jobs = 0, finalists = 3;
    std::string threads = "1";
    uint64_t seed = 1;
    double timeout = 180;
    bool quiet = false, no_emit = false, no_package = false, parallel_only = false;
    std::string inject_fault;
    std::string runner, cost;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--op", o->ops, "kernel identity SPEC (repeatable)");
  sub->add_option("--ops-from", o->ops_from,
                  "every identity of a tuned database (tuned/<target>.json), after the --op ones");
  sub->add_option("--shapes", o->shapes, "shape list file: `name M N K` a line");
  sub->add_option("--shape", o->shape, "M,N,K (repeatable)");
  sub->add_option("--target", o->target, "Halide target (default: this machine)");
  sub->add_option("--runner", o->runner,
                  "command template that runs the kernel runner on the target, {exe} its path, "
                  "{args} its arguments, e.g. 'ssh board {exe} {args}' (a target this machine does "
                  "not run; default: its qemu)");
  sub->add_option("--cost", o->cost,
                  "how a cross target's candidates are costed: qemu_instructions (the proxy: "
                  "instructions executed under qemu; the default without --runner) or "
                  "device_time (the target's clock through --runner; the default with it)")
      ->check(CLI::IsMember({"qemu_instructions", "device_time"}));
  sub->add_option("--budget", o->budget, "time for the whole run: 90s, 5m, 1h30m");
  sub->add_option("--max-candidates", o->max_candidates,
                  "candidates per identity and bucket (default 12; with --budget, 1000)");
  sub->add_option("--threads", o->threads,
                  "threads of each timed kernel; a comma list (1,2) tunes every bucket at each "
                  "count, and where their winners differ the emitted buckets hold thread ranges "
                  "(the runtime picks by the pool's count)");
  sub->add_option(
      "--jobs", o->jobs,
      "workers compiling and gating at once (default: cores / the largest --threads, at least "
      "1, so that a candidate is timed with the cores its threads need)");
  sub->add_option("--db", o->db, "database (default <out>/tuning.jsonl)");
  sub->add_option("--out", o->out, "output folder (default mmtune-out/<target>)");
  sub->add_option("--seed", o->seed, "seed of every random choice");
  sub->add_option("--shard", o->shard, "I/N: this process's share of the work");
  sub->add_option("--strategy", o->strategy, "evolutionary (default) or random");
  sub->add_option("--finalists", o->finalists, "best candidates re-measured interleaved");
  sub->add_option("--baselines", o->baselines,
                  "Halide autoschedulers run per identity and bucket as baselines: a comma list of "
                  "Adams2019, Mullapudi2016, Li2018, or none (default: all three)");
  sub->add_option("--baseline-gate", o->baseline_gate,
                  "bucket (default: the bucket's own shape only) or full (the candidates' gate "
                  "battery)");
  sub->add_option("--timeout", o->timeout, "seconds allowed per compile and gate");
  sub->add_flag("--quiet", o->quiet, "no progress output");
  sub->add_flag("--no-emit", o->no_emit,
                "do not write tuned/<target>.json, machine.json, report.html or the package");
  sub->add_flag("--no-package", o->no_package,
                "do not build the package of the tuned kernels (<out>/package)");
  sub->add_flag("--parallel-only", o->parallel_only, kParallelOnlyHelp);
  sub->add_option("--inject-fault", o->inject_fault)->group("");  // tests: drop_tail
  return [o] {
    tune::TuneOptions t;
    t.ops = o->ops;
    if (!o->ops_from.empty()) {
      for (const tune::DatabaseIdentity& d : tune::identities_of_database(o->ops_from)) {
        if (std::find(t.ops.begin(), t.ops.end(), d.spec) == t.ops.end()) t.ops.push_back(d.spec);
        t.incumbents[d.spec] = d.schedules;
      }
    }
    if (t.ops.empty()) t.ops = {"Gemm:float32:contract=fma", "QLinearMatMul:uint8,int8,uint8"};
    if (!o->shapes.empty()) t.shapes = read_shape_list(o->shapes);
    for (const std::string& s : o->shape) t.shapes.push_back(parse_mnk(s, "autotune"));
    if (t.shapes.empty()) t.shapes = tune::default_shapes();
    t.target = resolve_target(o->target);
    if (o->target == "host") {
      // The host's tuning hint (tune_znver3, ...) names this CPU model, not a feature: the tuned
      // database serves every CPU with the features.
      std::string plain;
      std::istringstream parts(t.target);
      for (std::string p; std::getline(parts, p, '-');) {
        if (p.rfind("tune_", 0) != 0) plain += (plain.empty() ? "" : "-") + p;
      }
      t.target = plain;
    }
    t.budget_s = o->budget.empty() ? 0 : parse_duration(o->budget);
    t.max_candidates = o->max_candidates > 0 ? o->max_candidates : (t.budget_s > 0 ? 1000 : 12);
    // By default the cores are shared so that a candidate timed on --threads threads has them:
    // workers compiling beside a 2-thread timing on 2 cores preempt its pool's threads, and a
    // task waited on then takes a scheduler slice (2-thread samples of 3 and of 97 us alternated).
    const int cores = std::max<int>(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
    const std::vector<int> threads = parse_thread_counts(o->threads);
    const int max_threads = *std::max_element(threads.begin(), threads.end());
    t.jobs = o->jobs > 0 ? o->jobs : std::max(1, cores / max_threads);
    t.measure.threads = max_threads;
    if (threads.size() > 1) t.thread_counts = threads;
    t.out = o->out.empty() ? "mmtune-out/" + t.target : o->out;
    t.db = o->db.empty() ? t.out + "/tuning.jsonl" : o->db;
    t.seed = o->seed;
    parse_shard(o->shard, t.shard_index, t.shard_count);
    t.strategy = o->strategy;
    t.finalists = o->finalists;
    t.baselines = parse_baselines(o->baselines);
    if (o->baseline_gate != "full" && o->baseline_gate != "bucket") {
      invalid("autotune", "--baseline-gate '", o->baseline_gate, "' is not full or bucket");
    }
    t.baseline_bucket_gate = o->baseline_gate == "bucket";
    t.timeout_s = o->timeout;
    t.quiet = o->quiet;
    t.emit = !o->no_emit;
    t.parallel_only = o->parallel_only;
    t.exe = self_exe();
    t.inject_fault = o->inject_fault;
    t.runner = o->runner;
    t.cost = o->cost;
    const bool remote = tune::tunes_remotely(t);
    // The package's libraries are built on and for this machine (emit_package); a cross target's
    // kernels are built by the CMake options of docs/targets.md from tuned/<target>.json.
    const bool package = t.emit && !o->no_package && !remote;
    if (package) check_package_prerequisites("autotune", t.out + "/package");
    const tune::TuneSummary s = tune::autotune(t);
    std::cout << "mmtune autotune: " << s.units << " identity x bucket units, " << s.new_records
              << " new records, " << s.resumed << " found in " << t.db << "\n";
    if (s.interrupted) {
      std::cout << "mmtune autotune: interrupted; the database is consistent: rerun the same "
                   "command to resume\n";
      return 130;
    }
    if (!s.tuned.empty()) std::cout << "mmtune autotune: wrote " << s.tuned << "\n";
    if (!s.report.empty()) std::cout << "mmtune autotune: wrote " << s.report << "\n";
    if (!s.tuned.empty() && remote && t.emit && !o->no_package) {
      std::cout << "mmtune autotune: no package for " << t.target
                << " (packages are built for this machine); its kernels build from " << s.tuned
                << " with the cross-target CMake options (docs/targets.md)\n";
    }
    if (!s.tuned.empty() && package) {
      try {
        emit_package({"autotune", {s.tuned}, t.out + "/package"});
      } catch (const InvalidArgument& e) {
        // The tuning itself succeeded: say where its results are and how to package them again.
        throw InvalidArgument(std::string(e.what()) + "\nThe tuning results are in " + t.db +
                              " and " + s.tuned + "; `mmtune emit --db " + t.db + " --out " +
                              t.out + "` builds the package again.");
      }
    }
    return kExitOk;
  };
}

std::function<int()> add_db_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("db", "Read and combine tuning databases");
  sub->require_subcommand(1);
  CLI::App* best = sub->add_subcommand("best", "The winners per identity and bucket");
  CLI::App* merge = sub->add_subcommand("merge", "Union of databases (e.g. of shards)");
  CLI::App* defaults = sub->add_subcommand(
      "defaults", "A tuned database of the target template's default schedules (untuned)");
  defaults->footer(R"(
Writes a tuned database (the format of tuned/<target>.json) holding, per identity, the default
schedule of the target's template, serving every shape, each kernel's provenance saying it was not
tuned (and --reason, why). For a target no tuning reaches (CUDA without a GPU here), so that the
build's MMTUNE_CROSS_TARGETS and `mmtune build-library` can build its kernels. An identity the
template cannot compute exactly is refused with the reason.

Example:
  mmtune db defaults --target x86-64-linux-cuda-cuda_capability_80 --op QLinearMatMul:uint8,int8,uint8 \
      --reason "no GPU and no emulator" -o tuned/x86-64-linux-cuda-cuda_capability_80.json
)");
  CLI::App* compare =
      sub->add_subcommand("compare", "Two tuned databases' kernels timed side by side");
  compare->footer(R"(
For each kernel identity both tuned databases (tuned/<target>.json) hold and each shape, the kernel
each one dispatches the call to (the runtime's rule: the bucket containing the shape, else the
nearest) is gated bit for bit and timed, interleaved with the other in one worker process. Prints
both rates and NEW / BASE.

Example: did a retune beat the shipped kernels?
  mmtune db compare tuned/x86-64-linux-sse41.json mmtune-out/x86-64-linux-sse41/tuned/x86-64-linux-sse41.json \
      --shapes benchmarks/shapes/llm.txt --op Gemm:float32
)");
  struct Opts {
    std::string best_db;
    bool json = false;
    std::vector<std::string> inputs;
    std::string output;
    std::string base, fresh, shapes;
    std::vector<std::string> shape, ops;
    int threads = 1, jobs = 1;
    std::string defaults_target, reason;
  };
  auto o = std::make_shared<Opts>();
  defaults->add_option("--target", o->defaults_target, "Halide target")->required();
  defaults->add_option("--op", o->ops, "kernel identity SPEC (repeatable)")->required();
  defaults->add_option("--reason", o->reason, "why it is not tuned (said in each provenance)");
  defaults->add_option("-o,--output", o->output, "the database to write")->required();
  compare->add_option("BASE", o->base, "tuned database (e.g. the shipped one)")->required();
  compare->add_option("NEW", o->fresh, "tuned database (e.g. a tuning run's)")->required();
  compare->add_option("--shapes", o->shapes, "shape list file: `name M N K` a line");
  compare->add_option("--shape", o->shape, "M,N,K (repeatable)");
  compare->add_option("--op", o->ops, "kernel identity SPEC (repeatable; default: all common)");
  compare->add_option("--threads", o->threads, "threads of each timed kernel")
      ->check(CLI::Range(1, 1024));
  compare->add_option("--jobs", o->jobs, "workers at once (timing is one at a time)")
      ->check(CLI::Range(1, 64));
  compare->add_flag("--json", o->json, "one JSON object a line");
  best->add_option("DB", o->best_db, "database")->required();
  best->add_flag("--json", o->json, "one JSON record a line");
  merge->add_option("DB", o->inputs, "databases")->required();
  merge->add_option("-o,--output", o->output, "merged database")->required();
  return [o, best, merge, compare, defaults] {
    if (defaults->parsed()) {
      const std::string target = resolve_target(o->defaults_target);
      const schedules::TargetInfo info = schedules::target_info(target);
      nlohmann::json kernels = nlohmann::json::array();
      for (const std::string& spec : o->ops) {
        const KernelIdentity id = tune::parse_identity_spec(spec);
        HalideVariant v;
        v.target = target;
        const KernelKey key = kernel_key(id, v);  // InvalidArgument when not computable exactly
        nlohmann::json params = nlohmann::json::object();
        for (const auto& [k, val] : id.params) params[k] = val;
        kernels.push_back(
            {{"name", kernel_name(id.op, id.params, key.schedule.generator_params(), target)},
             {"op", id.op},
             {"generator", id.generator},
             {"params", params},
             {"schedule", nlohmann::json(key.schedule)},
             {"bucket", "any"},
             {"provenance", "the " + schedules::default_template(info) +
                                " template's default schedule, not tuned" +
                                (o->reason.empty() ? "" : " (" + o->reason + ")") +
                                "; written by `mmtune db defaults`"}});
      }
      tune::write_json_atomically(
          {{"target", target},
           {"note", "The template's default schedules, untuned (`mmtune db defaults`)."},
           {"untuned", o->reason.empty() ? "yes" : o->reason},
           {"kernels", kernels}},
          o->output);
      std::cout << "mmtune db defaults: wrote " << kernels.size() << " kernels for " << target
                << " to " << o->output << "\n";
      return kExitOk;
    }
    if (compare->parsed()) {
      tune::CompareOptions c;
      c.base = o->base;
      c.fresh = o->fresh;
      c.ops = o->ops;
      if (!o->shapes.empty()) c.shapes = read_shape_list(o->shapes);
      for (const std::string& s : o->shape) c.shapes.push_back(parse_mnk(s, "db compare"));
      c.measure.threads = o->threads;
      c.jobs = o->jobs;
      c.exe = self_exe();
      c.scratch = (std::filesystem::temp_directory_path() /
                   ("mmtune-compare-" + std::to_string(::getpid())))
                      .string();
      c.json = o->json;
      const std::vector<tune::CompareRow> rows = tune::compare_tuned_databases(c);
      std::filesystem::remove_all(c.scratch);
      print_comparison(rows, o->json);
      return kExitOk;
    }
    if (best->parsed()) {
      const tune::Database db = tune::Database::open(o->best_db, false);
      for (const std::string& w : db.warnings()) std::cerr << "mmtune db: warning: " << w << "\n";
      for (const auto& [group, w] : tune::best_records(db.records())) {
        if (o->json) {
          std::cout << w.record->to_json().dump() << "\n";
          continue;
        }
        std::cout << w.record->identity << "  " << w.record->bucket << "  " << std::fixed
                  << std::setprecision(2) << w.record->rate / 1e9 << " G/s  " << w.passed << "/"
                  << w.candidates << " passed  " << w.record->schedule.dump() << "\n";
      }
      return kExitOk;
    }
    if (merge->parsed()) {
      std::vector<std::string> warnings;
      const std::size_t n = tune::merge_databases(o->inputs, o->output, &warnings);
      for (const std::string& w : warnings) std::cerr << "mmtune db: warning: " << w << "\n";
      std::cout << "mmtune db merge: " << n << " records from " << o->inputs.size()
                << " databases into " << o->output << "\n";
      return kExitOk;
    }
    return kExitUsage;
  };
}

std::function<int()> add_emit_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "emit", "Write tuned/<target>.json and the package of their kernels from a tuning database");
  sub->footer(kEmitHelp);
  struct Opts {
    std::string db, out;
    std::vector<std::string> targets;
    bool no_package = false, parallel_only = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--db", o->db, "tuning database")->required();
  sub->add_option("--out", o->out, "output folder")->required();
  sub->add_option("--target", o->targets,
                  "emit this target's records only (repeatable; default: every target)");
  sub->add_flag("--no-package", o->no_package,
                "write tuned/<target>.json only, not the package (DIR/package)");
  sub->add_flag("--parallel-only", o->parallel_only, kParallelOnlyHelp);
  return [o] {
    const tune::Database db = tune::Database::open(o->db, false);
    for (const std::string& w : db.warnings()) std::cerr << "mmtune emit: warning: " << w << "\n";
    std::set<std::string> present;
    for (const tune::Record& r : db.records()) present.insert(r.target);
    if (present.empty()) invalid("emit", "database '", o->db, "' has no records");
    std::set<std::string> targets(o->targets.begin(), o->targets.end());
    if (targets.empty()) targets = present;
    for (const std::string& t : targets) {
      if (present.count(t) == 0) {
        std::string have;
        for (const std::string& p : present) have += (have.empty() ? "" : ", ") + p;
        invalid("emit", "database '", o->db, "' has no records for --target ", t,
                " (its targets: ", have, ")");
      }
    }
    if (!o->no_package) check_package_prerequisites("emit", o->out + "/package");
    std::vector<std::string> databases;
    for (const std::string& t : best_level_first({targets.begin(), targets.end()})) {
      const std::string path = o->out + "/tuned/" + t + ".json";
      const nlohmann::json tuned = tune::tuned_database(db.records(), t, o->parallel_only);
      tune::write_json_atomically(tuned, path);
      std::cout << "mmtune emit: " << tuned["kernels"].size() << " kernels to " << path << "\n";
      databases.push_back(path);
    }
    if (!o->no_package) emit_package({"emit", databases, o->out + "/package"});
    return kExitOk;
  };
}

std::function<int()> add_worker_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("__tune-worker", "");
  sub->group("");  // hidden: the tuner's child processes
  auto file = std::make_shared<std::string>();
  sub->add_option("JOB", *file)->required();
  return [file] { return tune::worker_main(*file); };
}

}  // namespace mmtune::cli
