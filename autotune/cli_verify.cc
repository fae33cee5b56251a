// `mmtune verify --target T`: the kernels of a target built with its toolchain and checked bit for
// bit on it (natively, under qemu, or on a device through a runner command) with the gate's
// battery: the same adversarial and random cases, poisoned outputs and guard regions as the
// tuner's gate, the reference computed here.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "autotune/cli.h"
#include "autotune/cross_build.h"
#include "autotune/gate.h"
#include "autotune/remote_runner.h"
#include "autotune/shape_list.h"
#include "autotune/tune_inputs.h"
#include "reference/error.h"

namespace mmtune::cli {
namespace {

namespace fs = std::filesystem;

// The identities every verify run covers by default: one or more of every operator family, in the
// forms the shipped databases carry.
const char* const kDefaultSpecs[] = {
    "Gemm:float32",
    "Gemm:float32:contract=fma",
    "Gemm:float64",
    "Gemm:float16",
    "Gemm:bfloat16:contract=fma",
    "Gemm:int32",
    "Gemm:uint64",
    "QLinearMatMul:uint8,int8,uint8",
    "QLinearMatMul:int8,int8,int8",
    "QLinearMatMul:uint8,uint8,uint8:requant=float64",
    "QLinearMatMul:float8e4m3fn",
    "QGemm:uint8,int8",
    "QGemm:int8,int8:output=int8",
    "QuantMatmulDequant",
    "QuantMatmulDequant:fused_scale=true",
};

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

struct Kernel {
  std::string spec;
  KernelIdentity id;
  HalideVariant v;
  KernelKey key;
  std::string name;
};

struct Outcome {  // NOLINT(bugprone-exception-escape): one per kernel, outside noexcept code
  std::string name, spec;
  bool prepacked = false;
  GateSummary gate;
  std::string error;
  std::map<std::string, int> instructions;
};

}  // namespace

std::function<int()> add_verify_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "verify", "Build a target's kernels and check them bit for bit on that target");
  struct Opts {
    std::string target;
    std::vector<std::string> ops;
    std::string runner;
    std::string shape = "32,64,64";
    std::string work;
    std::string json;
    int schedules = 0;
    uint64_t seed = 1;
    int jobs = 2;
    bool full = false;
    bool no_prepacked = false;
    std::string inject_fault;
    std::vector<std::string> schedule_json;
    std::string library;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--target", o->target,
                  "Halide target of the kernels, e.g. arm-64-linux-arm_dot_prod")
      ->required();
  sub->add_option("--op", o->ops,
                  "kernel identity SPEC (repeatable; default: one or more of "
                  "every operator family)");
  sub->add_option("--runner", o->runner,
                  "command template that runs the runner program on the target: {exe} its path, "
                  "{args} its arguments (default: qemu for ARM64, the program itself for x86-64)");
  sub->add_option("--shape", o->shape,
                  "M,N,K of the bucket the gate's battery is drawn for (default 32,64,64)");
  sub->add_option("--schedules", o->schedules,
                  "random schedules of the target's template per identity besides its default "
                  "(default 0)")
      ->check(CLI::Range(0, 1000));
  sub->add_option("--schedule", o->schedule_json,
                  "a schedule to verify besides the default, JSON {\"template\": ..., knob: value} "
                  "(repeatable; knobs not given keep the template's table defaults)");
  sub->add_option("--library", o->library,
                  "check the kernels of a library `mmtune build-library` made (its folder): the "
                  "runner links its libmmtune_kernels.a, and every kernel of its manifest is gated "
                  "(instead of --op and the draws)");
  sub->add_option("--seed", o->seed, "seed of the schedules' and the inputs' draws");
  sub->add_flag("--full", o->full, "every data kind on every gate shape");
  sub->add_flag("--no-prepacked", o->no_prepacked,
                "leave out the kernels that read B prepacked (mmtune::runtime::prepack_b)");
  sub->add_option("--work", o->work,
                  "folder of the build (default mmtune-out/verify/<target>; objects of an "
                  "earlier run are reused)");
  sub->add_option("--jobs", o->jobs, "compiles at once (default 2)")->check(CLI::Range(1, 64));
  sub->add_option("--json", o->json, "also write the counts per kernel to this JSON file");
  // Tests only: drop_tail leaves every kernel's last output element unwritten (the gate must count
  // it).
  sub->add_option("--inject-fault", o->inject_fault)
      ->group("")
      ->check(CLI::IsMember({"drop_tail"}));
  sub->footer(R"(
Builds every kernel of the identities (--op; by default one or more of every operator family) for
the target with its toolchain (each kernel compiled in a child process; the runner linked with
the target's compiler: aarch64-linux-gnu-gcc -static for ARM64), starts the runner program on the
target through the runner command, and runs the gate's battery on each kernel there: the cases the
tuner's gate draws for the bucket (--shape), into poisoned outputs between guard regions, each
output compared bit for bit with the reference computed on this machine. Prints, per kernel and in
all, the cases, the outputs compared and the mismatches. An identity the target's template cannot
compute exactly is listed as not supported, with the reason.

Exit status: 0 when every kernel matched, 4 when an output differed or a kernel failed, 1 for bad
input (a target without a runner, a missing toolchain, a bad spec).

Examples:
  mmtune verify --target arm-64-linux-arm_dot_prod
  mmtune verify --target arm-64-linux-arm_dot_prod --op QLinearMatMul:uint8,int8,uint8 --schedules 5
  mmtune verify --target arm-64-linux --runner 'ssh pi@board {exe} {args}'
)");
  return [o]() {
    const std::string target = resolve_target(o->target);
    const schedules::TargetInfo info = schedules::target_info(target);
    const verify::Platform platform = verify::platform_of(info);
    if (o->runner.empty()) {
      if (auto why = verify::missing_tool(platform, true)) {
        invalid("verify", "the default runner of ", target, " (", platform.default_runner,
                ") cannot start: ", *why, "; or pass --runner");
      }
    }
    const std::string runner = o->runner.empty() ? platform.default_runner : o->runner;
    (void)runner_command_line(runner, "check");
    const NamedShape shape = parse_mnk(o->shape, "verify");
    std::vector<std::string> specs = o->ops;
    if (specs.empty()) specs.assign(std::begin(kDefaultSpecs), std::end(kDefaultSpecs));
    nlohmann::json manifest;
    if (!o->library.empty()) {
      // The library's kernels, as its manifest lists them; nothing else.
      const fs::path m = fs::path(o->library) / "manifest.json";
      std::ifstream in(m);
      if (!in) invalid("verify", "--library ", o->library, ": no ", m.string());
      try {
        manifest = nlohmann::json::parse(in);
      } catch (const nlohmann::json::exception& e) {
        invalid("verify", "--library ", o->library, ": ", m.string(), " is not JSON: ", e.what());
      }
      if (resolve_target(manifest.value("target", "")) != target) {
        invalid("verify", "--library ", o->library, " holds kernels for '",
                manifest.value("target", ""), "', not --target ", target);
      }
      if (!o->ops.empty() || o->schedules > 0 || !o->schedule_json.empty())
        invalid("verify", "--library checks the library's kernels: no --op, --schedule(s) with it");
      specs.clear();
    }

    // The kernels: each identity's default schedule for the target, the draws, and the prepacked
    // twins where the runtime builds them.
    std::vector<Kernel> kernels;
    std::set<std::string> seen;
    std::vector<std::pair<std::string, std::string>> unsupported;
    std::mt19937_64 rng(o->seed);
    for (const std::string& spec : specs) {
      bool only_prepacked = false;  // a spec with prepacked_b=true: that kernel alone
      const KernelIdentity id =
          tune::without_prepacked(tune::parse_identity_spec(spec), &only_prepacked);
      const schedules::Accumulator acc = accumulator_of(id);
      // The template's default first: an identity it cannot compute exactly is reported, with
      // no draws (its space has no valid point for it).
      std::vector<std::optional<schedules::Schedule>> draws{std::nullopt};
      try {
        HalideVariant v;
        v.target = target;
        (void)kernel_key(id, v);
      } catch (const InvalidArgument& e) {
        unsupported.emplace_back(spec, e.what());
        continue;
      }
      const std::string name = schedules::default_template(info);
      for (const std::string& text : o->schedule_json) {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::exception& e) {
          invalid("verify", "--schedule '", text, "' is not JSON: ", e.what());
        }
        if (!j.contains("template")) j["template"] = name;
        draws.emplace_back(j.get<schedules::Schedule>());
      }
      for (int i = 0; i < o->schedules; ++i)
        draws.emplace_back(schedules::sample(name, info, acc, rng));
      for (const auto& schedule : draws) {
        for (bool prepacked : {false, true}) {
          if (prepacked && (o->no_prepacked || !tune::has_prepacked_kernel(id, target))) continue;
          if (!prepacked && only_prepacked) continue;
          Kernel k;
          k.spec = tune::identity_spec(id);
          k.id = id;
          k.v.schedule = schedule;
          k.v.target = target;
          k.v.prepacked_b = prepacked;
          KernelIdentity keyed = id;
          if (prepacked) keyed.params["prepacked_b"] = "true";
          k.key = kernel_key(keyed, k.v);
          // A draw (or --schedule) equal to another kernel's schedule is that kernel.
          if (!seen.insert(k.key.to_string()).second) continue;
          kernels.push_back(std::move(k));
        }
      }
    }
    std::map<std::string, std::map<std::string, int>> library_instructions;  // by kernel key
    if (!manifest.is_null()) {
      for (const nlohmann::json& e : manifest.at("kernels")) {
        Kernel k;
        const KernelIdentity keyed = tune::parse_identity_spec(e.at("identity").get<std::string>());
        k.id = tune::without_prepacked(keyed, &k.v.prepacked_b);
        k.spec = tune::identity_spec(k.id);
        k.v.schedule = e.at("schedule").get<schedules::Schedule>();
        k.v.target = target;
        k.key = kernel_key(keyed, k.v);
        k.name = e.at("name").get<std::string>();
        if (e.contains("instructions"))
          library_instructions[k.key.to_string()] =
              e["instructions"].get<std::map<std::string, int>>();
        kernels.push_back(std::move(k));
      }
    }
    for (const auto& [spec, why] : unsupported)
      std::cout << "verify: not supported on " << target << ": " << spec << ": " << why << "\n";
    if (kernels.empty()) invalid("verify", "no kernel of the identities given runs on ", target);

    const std::string work =
        o->work.empty() ? (fs::path("mmtune-out") / "verify" / target).string() : o->work;
    std::vector<KernelKey> keys;
    for (const Kernel& k : kernels) keys.push_back(k.key);
    auto say = [](const std::string& line) { std::cout << line << "\n"; };
    verify::RunnerBuild build;
    if (manifest.is_null()) {
      build = verify::build_runner(target, keys, work, o->jobs, say);
    } else {
      // Linked from the library itself: what ships is what is checked.
      for (const Kernel& k : kernels) build.functions[k.key.to_string()] = k.name;
      build.instructions = library_instructions;
      const std::string archive =
          fs::absolute(fs::path(o->library) / "lib" / "libmmtune_kernels.a").string();
      verify::link_runner(target, build, work, say, archive);
      std::cout << "verify: runner " << build.exe << " linked with " << archive << " ("
                << kernels.size() << " kernels)\n";
    }
    if (manifest.is_null()) {
      std::cout << "verify: runner " << build.exe << " (" << build.compiled << " kernels compiled, "
                << build.reused << " reused, " << build.failed.size() << " failed to build)\n";
    }

    auto remote = std::make_shared<RemoteRunner>(runner, build.exe, build.functions,
                                                 (fs::path(work) / "runner.stderr").string());
    if (platform.cannot_run && o->runner.empty()) {
      // Built and linked; the runner answered with its kernels. Nothing can run them here.
      for (const Kernel& k : kernels) {
        const std::string key = k.key.to_string();
        const std::string& name = build.functions.at(key);
        auto failed = build.failed.find(key);
        std::cout << (failed == build.failed.end() ? "  built " : "  FAIL ") << name;
        if (failed != build.failed.end()) std::cout << ": " << failed->second;
        auto ins = build.instructions.find(key);
        if (ins != build.instructions.end()) {
          for (const auto& [n, c] : ins->second) std::cout << "; " << n << " " << c;
        }
        std::cout << "\n";
      }
      std::cout << "verify: " << target << ": not run: " << *platform.cannot_run << "; "
                << kernels.size() - build.failed.size() << " kernels built and linked into "
                << build.exe << ", which lists " << remote->kernels().size() << " kernels; "
                << build.failed.size() << " failed to build\n";
      if (!o->json.empty()) {
        nlohmann::json j = {{"target", target},
                            {"not_run", *platform.cannot_run},
                            {"built", kernels.size() - build.failed.size()},
                            {"listed", remote->kernels().size()},
                            {"failed", build.failed.size()}};
        std::ofstream(o->json) << j.dump(2) << "\n";
      }
      return build.failed.empty() ? kExitOk : kExitMismatch;
    }
    std::cout << "verify: running on " << target << " through: " << runner << "\n";
    std::vector<Outcome> outcomes;
    int64_t cases = 0, outputs = 0, mismatches = 0, failures = 0;
    for (Kernel& k : kernels) {
      Outcome out;
      out.name = build.functions.at(k.key.to_string());
      out.spec = k.spec;
      out.prepacked = k.v.prepacked_b;
      k.v.executor = remote;
      auto failed = build.failed.find(k.key.to_string());
      if (failed != build.failed.end()) {
        out.error = failed->second;
        ++failures;
        std::cout << "  FAIL " << out.name << ": " << out.error << "\n";
        outcomes.push_back(std::move(out));
        continue;
      }
      GateOptions g;
      g.shape = {shape.m, shape.n, shape.k};
      g.full = o->full;
      g.seed = o->seed;
      g.stop_at_first = false;
      g.drop_tail = o->inject_fault == "drop_tail";
      try {
        out.gate = gate_battery(k.id, k.v, k.key.schedule.tile(info, accumulator_of(k.id)), g);
      } catch (const std::exception& e) {
        out.error = e.what();
        ++failures;
      }
      cases += out.gate.kernel_cases;
      outputs += out.gate.outputs;
      mismatches += out.gate.mismatches;
      const bool ok = out.error.empty() && out.gate.passed() && out.gate.kernel_cases > 0;
      if (out.error.empty() && out.gate.kernel_cases == 0) {
        out.error = "no case ran the kernel (the host gave every case to the reference)";
        ++failures;
      }
      std::cout << (ok ? "  pass " : "  FAIL ") << out.name << ": " << out.gate.kernel_cases
                << " cases, " << out.gate.outputs << " outputs, " << out.gate.mismatches
                << " mismatches";
      if (!out.gate.first_mismatch.is_null())
        std::cout << "; first: " << out.gate.first_mismatch.dump();
      if (!out.error.empty()) std::cout << "; " << out.error;
      auto ins = build.instructions.find(k.key.to_string());
      if (ins != build.instructions.end()) {
        out.instructions = ins->second;
        std::string uses;
        for (const auto& [n, c] : ins->second)
          uses += (uses.empty() ? "" : ", ") + n + " " + std::to_string(c);
        std::cout << "; uses "
                  << (uses.empty() ? "none of " + join_names(platform.instructions) : uses);
      }
      std::cout << "\n";
      outcomes.push_back(std::move(out));
    }
    std::cout << "verify: " << target << ": " << kernels.size() << " kernels, " << cases
              << " cases, " << outputs << " outputs compared, " << mismatches << " mismatches, "
              << failures << " kernels failed, " << unsupported.size()
              << " identities not supported (" << remote->calls()
              << " kernel calls on the target)\n";
    if (!o->json.empty()) {
      nlohmann::json j = {
          {"target", target}, {"runner", runner}, {"kernels", nlohmann::json::array()}};
      for (const Outcome& out : outcomes) {
        j["kernels"].push_back({{"name", out.name},
                                {"identity", out.spec},
                                {"prepacked", out.prepacked},
                                {"cases", out.gate.kernel_cases},
                                {"outputs", out.gate.outputs},
                                {"mismatches", out.gate.mismatches},
                                {"first_mismatch", out.gate.first_mismatch},
                                {"error", out.error},
                                {"instructions", out.instructions}});
      }
      j["unsupported"] = nlohmann::json::array();
      for (const auto& [spec, why] : unsupported)
        j["unsupported"].push_back({{"identity", spec}, {"why", why}});
      std::ofstream(o->json) << j.dump(2) << "\n";
    }
    return mismatches == 0 && failures == 0 ? kExitOk : kExitMismatch;
  };
}

std::function<int()> add_build_library_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "build-library", "Build a tuned database's kernels for its target into a static library");
  struct Opts {
    std::string db, out;
    int jobs = 2;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--db", o->db, "tuned database (tuned/<target>.json)")->required();
  sub->add_option("--out", o->out, "folder of the library (default mmtune-out/library/<target>)");
  sub->add_option("--jobs", o->jobs, "compiles at once (default 2)")->check(CLI::Range(1, 64));
  sub->footer(R"(
Builds every kernel of the database for the database's target, each in a child process, with the
target's toolchain (aarch64-linux-gnu-ar for ARM64, llvm-ar for Hexagon), into:
  lib/libmmtune_kernels.a   the kernels (C functions, Halide's ABI) and one Halide runtime
  include/<kernel>.h        each kernel's header, and HalideRuntime.h
  manifest.json             target; per kernel its name, identity, schedule, bucket, provenance and
                            the instructions its object uses
`mmtune verify --target T --library DIR` links the library into the kernel runner and gates every
kernel of it on the target. The build's MMTUNE_CROSS_TARGETS does this for the shipped databases.

Example:
  mmtune build-library --db tuned/arm-64-linux-arm_dot_prod.json --out lib-arm64
)");
  return [o]() {
    std::string target;
    {
      const nlohmann::json db = tune::read_tuned_database(o->db, "build-library: '" + o->db + "'");
      target = db.value("target", "");
    }
    const std::string out = o->out.empty() ? "mmtune-out/library/" + target : o->out;
    const verify::LibraryBuild b = verify::build_library(
        o->db, out, o->jobs, [](const std::string& line) { std::cout << line << "\n"; });
    std::cout << "build-library: " << b.kernels << " kernels for " << b.target << " (" << b.compiled
              << " compiled, " << b.reused << " reused) in " << b.archive << "; manifest "
              << b.manifest << "\n";
    return kExitOk;
  };
}

}  // namespace mmtune::cli
