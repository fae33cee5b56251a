// The tuner's worker for targets reached through a kernel runner (autotune/tune_remote.h).
#include "autotune/tune_remote.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>

#include "autotune/cross_build.h"
#include "autotune/halide_ops.h"
#include "autotune/remote_runner.h"
#include "autotune/tune_inputs.h"
#include "autotune/tune_timing.h"
#include "reference/error.h"

namespace mmtune::tune {
namespace {

namespace fs = std::filesystem;

// The counts the plugin appended to `path`, from line `skip` on.
std::vector<uint64_t> counts_from(const std::string& path, std::size_t skip) {
  std::ifstream in(path);
  std::vector<uint64_t> counts;
  std::size_t line_no = 0;
  for (std::string line; std::getline(in, line); ++line_no) {
    if (line_no >= skip && !line.empty()) counts.push_back(std::stoull(line));
  }
  return counts;
}

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (std::size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

// The folder of a job's runner: one per set of kernels, so that a finalists' job or a resumed run
// reuses the objects an earlier job built.
std::string runner_dir(const Job& job, const std::vector<KernelKey>& keys) {
  std::string all;
  for (const KernelKey& k : keys) all += k.to_string() + "\n";
  return (fs::path(job.work) / "runners" /
          (std::to_string(std::hash<std::string>{}(all + job.target)) + "_" +
           std::to_string(keys.size())))
      .string();
}

}  // namespace

std::string cost_kind(const Record& r) {
  const auto c = r.extra.find("cost");
  return c != r.extra.end() && c->is_object() ? c->value("kind", "") : "";
}

std::string cost_description(const std::string& kind) {
  if (kind == kCostQemuInstructions) {
    return "proxy cost, not time: guest instructions one call executes on the bucket's shape "
           "under qemu (1 thread), counted by mmtune's qemu plugin; the rate is operations per "
           "instruction";
  }
  if (kind == kCostDeviceTime) return "the device's own clock around repeated calls";
  return "wall time on this machine";
}

std::vector<Record> evaluate_remote(const Job& job,
                                    const std::function<void(const std::string&)>& phase) {
  // A prepacked identity: its kernels read B packed on the host, the calls are the plain ones.
  bool prepacked = false;
  const KernelIdentity keyed = parse_identity_spec(job.identity);
  const KernelIdentity id = without_prepacked(keyed, &prepacked);
  const std::string target = resolve_target(job.target);
  const schedules::TargetInfo info = schedules::target_info(target);
  const verify::Platform platform = verify::platform_of(info);
  if (job.cost != kCostQemuInstructions && job.cost != kCostDeviceTime) {
    invalid("autotune", "cost '", job.cost, "' is not ", kCostQemuInstructions, " or ",
            kCostDeviceTime);
  }
  std::vector<Record> records;
  std::vector<HalideVariant> variants;
  std::vector<schedules::Tile> tiles;
  std::vector<KernelKey> keys;
  std::vector<std::size_t> valid;  // record index of each key
  for (const nlohmann::json& schedule : job.schedules) {
    Record r;
    r.identity = job.identity;
    r.bucket = job.bucket;
    r.target = job.target;
    r.schedule = schedule;
    r.shape = job.shape;
    try {
      HalideVariant v;
      v.target = target;
      v.schedule = schedule.get<schedules::Schedule>();
      v.prepacked_b = prepacked;
      KernelKey key = kernel_key(prepacked ? keyed : id, v);
      tiles.push_back(key.schedule.tile(info, accumulator_of(id)));
      keys.push_back(std::move(key));
      variants.push_back(std::move(v));
      valid.push_back(records.size());
    } catch (const InvalidArgument& e) {
      r.outcome = Outcome::kInvalid;
      r.detail = e.what();
    }
    records.push_back(std::move(r));
  }
  if (keys.empty()) return records;

  phase("compile 0");
  const std::string dir = runner_dir(job, keys);
  verify::RunnerBuild build;
  try {
    build = verify::build_runner(target, keys, dir, 1, [](const std::string&) {});
  } catch (const std::exception& e) {
    for (std::size_t i : valid) {
      records[i].outcome = Outcome::kBuildFailed;
      records[i].detail = e.what();
    }
    return records;
  }

  // The sessions: the gate's through the job's runner (the default: the target's qemu), and for
  // the proxy cost a counting qemu.
  std::string counts_file;
  std::string counting_command;
  if (job.cost == kCostQemuInstructions) {
    if (platform.counting_runner.empty()) {
      invalid("autotune", "target ", target, " runs under no qemu: no ", kCostQemuInstructions,
              " cost for it (tune with --runner on a device and --cost ", kCostDeviceTime, ")");
    }
    counts_file = (fs::path(dir) / "instruction_counts.txt").string();
    fs::remove(counts_file);
    counting_command = replace_all(platform.counting_runner, "{plugin}",
                                   verify::counting_plugin(job.work) + ",out=" + counts_file);
  }
  const std::string gate_command = !job.runner.empty() ? job.runner : platform.default_runner;
  const std::string log = (fs::path(dir) / "runner.stderr").string();
  auto gate_runner = std::make_shared<RemoteRunner>(gate_command, build.exe, build.functions, log);

  std::vector<std::size_t> passed;  // indices into keys
  for (std::size_t i = 0; i < keys.size(); ++i) {
    Record& r = records[valid[i]];
    auto failed = build.failed.find(keys[i].to_string());
    if (failed != build.failed.end()) {
      r.outcome = Outcome::kBuildFailed;
      r.detail = failed->second;
      continue;
    }
    auto ins = build.instructions.find(keys[i].to_string());
    if (ins != build.instructions.end()) r.extra["instructions_used"] = ins->second;
    phase("gate " + std::to_string(i));
    variants[i].executor = gate_runner;
    try {
      const bool ok = gate_schedule(id, job, variants[i], tiles[i], r.gate);
      r.outcome = ok ? Outcome::kPassed : Outcome::kIncorrect;
      if (!ok) r.detail = "the gate found an output that differs on the target from the reference";
    } catch (const std::exception& e) {
      r.outcome = Outcome::kRunFailed;
      r.detail = e.what();
    }
    variants[i].executor.reset();
    if (r.outcome == Outcome::kPassed) passed.push_back(i);
  }
  if (passed.empty()) return records;

  const OpCall call = timing_call(id, job.shape.at(0), job.shape.at(1), job.shape.at(2), job.seed);
  const double ops = 2.0 * static_cast<double>(job.shape.at(0)) *
                     static_cast<double>(job.shape.at(1)) * static_cast<double>(job.shape.at(2));
  // The count is taken in a session of its own, the counted calls its first, so that it does not
  // depend on what the gate left in the runner's heap: the same kernel, shape and data give the
  // same count.
  std::shared_ptr<RemoteRunner> cost_runner = gate_runner;
  if (job.cost == kCostQemuInstructions) gate_runner.reset();
  std::unique_ptr<FileLock> turn;  // the device is timed by one job at a time
  if (job.cost == kCostDeviceTime) {
    phase("wait");
    turn = std::make_unique<FileLock>(job.measure_lock);
  }
  phase("measure");
  for (std::size_t i : passed) {
    Record& r = records[valid[i]];
    HalideVariant v = variants[i];
    if (job.cost == kCostQemuInstructions)
      cost_runner =
          std::make_shared<RemoteRunner>(counting_command, build.exe, build.functions, log);
    v.executor = cost_runner;
    try {
      if (job.cost == kCostQemuInstructions) {
        const std::size_t before = counts_from(counts_file, 0).size();
        cost_runner->set_repetitions(1);
        cost_runner->reset_measured();
        (void)run_halide(call.op, call.inputs, call.attrs, v);
        const std::vector<uint64_t> counts = counts_from(counts_file, before);
        MMTUNE_CHECK(
            static_cast<int64_t>(counts.size()) == cost_runner->measured_calls() && !counts.empty(),
            "the instruction counter reported " << counts.size() << " counts for "
                                                << cost_runner->measured_calls()
                                                << " measured kernel calls");
        uint64_t total = 0;
        for (uint64_t c : counts) total += c;
        r.rate = total > 0 ? ops / static_cast<double>(total) : 0;
        r.extra["cost"] = {{"kind", kCostQemuInstructions},
                           {"instructions", total},
                           {"kernel_calls", counts.size()},
                           {"runner", platform.counting_runner}};
      } else {
        // Repetitions per sample from one call, then samples until the median is stable.
        cost_runner->set_repetitions(1);
        cost_runner->reset_measured();
        (void)run_halide(call.op, call.inputs, call.attrs, v);
        const double once = static_cast<double>(cost_runner->measured_ns()) * 1e-9;
        MMTUNE_CHECK(once > 0, "the target's runner has no clock (it reported 0 ns)");
        const int reps =
            static_cast<int>(std::clamp(std::ceil(job.measure.min_sample_s / once), 1.0, 100000.0));
        cost_runner->set_repetitions(reps);
        std::vector<double> samples;
        while (static_cast<int>(samples.size()) < job.measure.max_samples) {
          cost_runner->reset_measured();
          (void)run_halide(call.op, call.inputs, call.attrs, v);
          samples.push_back(static_cast<double>(cost_runner->measured_ns()) * 1e-9 / reps);
          if (static_cast<int>(samples.size()) < job.measure.min_samples) continue;
          std::vector<double> s = samples;
          std::sort(s.begin(), s.end());
          const double q1 = s[s.size() / 4], q3 = s[(3 * s.size()) / 4];
          if (q3 - q1 < job.measure.spread * median_of(s)) break;
        }
        r.samples_s = samples;
        const double med = median_of(samples);
        r.rate = med > 0 ? ops / med : 0;
        r.extra["cost"] = {
            {"kind", kCostDeviceTime}, {"repetitions", reps}, {"runner", gate_command}};
      }
    } catch (const std::exception& e) {
      r.outcome = Outcome::kRunFailed;
      r.detail = std::string("measuring on the target failed: ") + e.what();
    }
  }
  return records;
}

}  // namespace mmtune::tune
