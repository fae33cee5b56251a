// The kernel runner's build for a target.
#include "autotune/cross_build.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "autotune/kernel_naming.h"
#include "autotune/process.h"
#include "autotune/tune_inputs.h"
#include "reference/error.h"

namespace mmtune::verify {
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  MMTUNE_CHECK(out.good(), "cannot write " << p.string());
}

// Commands, each with its log, run `jobs` at once; the message of each that failed (its exit and
// its log's end), by index.
struct Step {
  std::vector<std::string> argv;
  std::string log;
  std::string what;
};
std::map<std::size_t, std::string> run_steps(
    const std::vector<Step>& steps, int jobs,
    const std::function<void(const std::string&)>& progress) {
  std::map<pid_t, std::size_t> running;
  std::map<std::size_t, std::string> failed;
  std::size_t next = 0;
  while (next < steps.size() || !running.empty()) {
    while (next < steps.size() && static_cast<int>(running.size()) < jobs) {
      const Step& s = steps[next];
      const pid_t pid = ::fork();
      MMTUNE_CHECK(pid >= 0, "cannot fork");
      if (pid == 0) {
        const int rc = run_logged(s.argv, s.log);
        std::_Exit(rc < 0 ? 128 : rc);
      }
      running[pid] = next++;
    }
    int status = 0;
    const pid_t pid = ::wait(&status);
    if (pid < 0) continue;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t i = it->second;
    running.erase(it);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      progress("  built " + steps[i].what);
      continue;
    }
    failed[i] = "building " + steps[i].what + " failed (" +
                (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                   : std::string("killed by a signal")) +
                "; log " + steps[i].log + "); its last lines:" + log_tail(steps[i].log, 6);
  }
  return failed;
}

// InvalidArgument with the first failure of run_steps, if any.
void require_built(const std::map<std::size_t, std::string>& failed) {
  if (!failed.empty()) invalid("verify", failed.begin()->second);
}

std::string c_string(const std::string& s) { return "\"" + s + "\""; }

// How often each of `names` appears as a word in a disassembly listing (those that appear).
std::map<std::string, int> count_instructions(const std::string& listing,
                                              const std::vector<std::string>& names) {
  std::map<std::string, int> counts;
  std::ifstream in(listing);
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::string line; std::getline(in, line);) {
    for (const std::string& n : names) {
      for (std::size_t at = line.find(n); at != std::string::npos; at = line.find(n, at + 1)) {
        const bool starts = at == 0 || !word(line[at - 1]);
        const bool ends = at + n.size() >= line.size() || !word(line[at + n.size()]);
        if (starts && ends) ++counts[n];
      }
    }
  }
  return counts;
}

}  // namespace

namespace {

// The runner of a target this machine runs itself (x86-64 Linux; CUDA's host side): the host's C
// compiler over a C library, started as it is.
void native_runner(Platform& p) {
  p.cc = {"cc", "-O2", "-std=gnu11"};
  p.link = {"cc"};
  p.link_libs = {"-lpthread", "-lm", "-ldl"};
  p.sources = {"targets/runner/io_posix.c"};
  p.default_runner = "{exe} {args}";
  p.tools = {{"cc", "build-essential"}};
  p.archiver = "ar";
}

}  // namespace

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');) {
    std::string file = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(file.c_str(), X_OK) == 0) return file;
  }
  return "";
}

std::string runner_source_dir() {
  const char* env = std::getenv("MMTUNE_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? env : MMTUNE_SOURCE_DIR;
}

Platform platform_of(const schedules::TargetInfo& t) {
  Platform p;
  p.family = t.family;
  if (t.family == "arm") {
    if (t.target.rfind("arm-64-linux", 0) != 0) {
      invalid("verify", "target ", t.target,
              ": mmtune builds runners for ARM64 Linux targets (arm-64-linux...), not this one");
    }
    p.cc = {"aarch64-linux-gnu-gcc", "-O2", "-std=gnu11"};
    p.link = {"aarch64-linux-gnu-gcc", "-static"};
    p.link_libs = {"-lpthread", "-lm", "-ldl"};
    p.sources = {"targets/runner/io_posix.c"};
    p.default_runner = "qemu-aarch64 -cpu max {exe} {args}";
    p.counting_runner = "HL_NUM_THREADS=1 qemu-aarch64 -cpu max -plugin {plugin} {exe} {args}";
    p.tools = {{"aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"}, {"qemu-aarch64", "qemu-user"}};
    p.disassemble = {"aarch64-linux-gnu-objdump", "-d"};
    p.archiver = "aarch64-linux-gnu-ar";
    p.instructions = {"sdot", "udot", "fmla", "fmul", "mla", "smlal", "umlal", "smull", "umull"};
    return p;
  }
  if (t.family == "hexagon") {
    // Freestanding: targets/hexagon/ is the whole C library (README there); qemu-hexagon's one
    // model (v67) runs objects of every level.
    std::string level = "hexagonv62";
    for (const char* v : {"v65", "v66", "v68", "v69", "v73"}) {
      if (t.target.find(std::string("hvx_") + v) != std::string::npos)
        level = std::string("hexagon") + v;
    }
    const std::string src = runner_source_dir();
    p.cc = {"clang",
            "--target=hexagon-unknown-none-elf",
            "-mcpu=" + level,
            "-O2",
            "-ffreestanding",
            "-G0",
            "-ffp-contract=off",
            "-ffunction-sections",
            "-I" + src + "/targets/hexagon",
            "-I" + src + "/targets/hexagon/include"};
    p.link = {"ld.lld", "-static", "--gc-sections", "-e", "_start"};
    p.sources = {"targets/hexagon/start.S", "targets/hexagon/platform.c",
                 "targets/hexagon/builtins.c"};
    p.default_runner = "qemu-hexagon {exe} {args}";
    p.counting_runner = "qemu-hexagon -plugin {plugin} {exe} {args}";  // no threads
    p.tools = {{"clang", "clang"}, {"ld.lld", "lld"}, {"qemu-hexagon", "qemu-user"}};
    p.disassemble = {"llvm-objdump", "-d", "--mcpu=" + level,
                     "--mattr=+hvx-length128b,+hvxv" + level.substr(8)};
    p.instructions = {"vrmpy", "vdmpy", "vmpy", "vmpa", "sfmpy", "sffma"};
    p.archiver = "llvm-ar";
    p.tools.emplace_back("llvm-ar", "llvm");
    return p;
  }
  if (t.family == "cuda") {
    // Host code for x86-64 with the kernels' PTX inside; the Halide runtime loads libcuda when a
    // kernel first runs. The PTX is found by its text in the object.
    if (t.target.rfind("x86-64-linux", 0) != 0) {
      invalid("verify", "target ", t.target,
              ": mmtune builds CUDA runners for x86-64-linux hosts (x86-64-linux-cuda-...)");
    }
    native_runner(p);
    p.disassemble = {"strings", "-a"};
    p.instructions = {"dp4a", "fma", "atom"};
    std::error_code ec;
    if (!fs::exists("/dev/nvidiactl", ec) && !fs::exists("/dev/nvidia0", ec)) {
      p.cannot_run = "no GPU (no /dev/nvidiactl or /dev/nvidia0 on this machine)";
    }
    return p;
  }
  if (t.family == "x86" && t.target.find("linux") != std::string::npos) {
    native_runner(p);
    p.disassemble = {"objdump", "-d"};
    p.instructions = {"vpdpbusd", "vpdpwssd",  "vpmaddwd",    "vpmaddubsw",
                      "pmaddwd",  "pmaddubsw", "vfmadd231ps", "vfmadd231pd"};
    return p;
  }
  invalid("verify", "target ", t.target, " (", t.family,
          "): mmtune builds kernel runners for arm-64-linux, hexagon-32-noos-hvx, x86-64-linux and "
          "x86-64-linux-cuda targets");
}

std::optional<std::string> missing_tool(const Platform& p, bool for_default_runner) {
  for (const auto& [tool, package] : p.tools) {
    const bool runner_only = p.default_runner.rfind(tool + " ", 0) == 0;
    if (runner_only && !for_default_runner) continue;
    if (find_program(tool).empty()) {
      return tool + " is not on PATH (Debian package " + package +
             "; scripts/bootstrap installs it)";
    }
  }
  return std::nullopt;
}

std::string counting_plugin(const std::string& dir_text) {
  const fs::path dir = fs::absolute(dir_text);
  fs::create_directories(dir);
  const fs::path source = fs::path(runner_source_dir()) / "targets" / "qemu" / "insn_count.c";
  const fs::path plugin = dir / "insn_count.so";
  std::error_code ec;
  if (fs::exists(plugin, ec) && fs::last_write_time(plugin, ec) >= fs::last_write_time(source, ec))
    return plugin.string();
  const std::string cc = find_program("cc");
  if (cc.empty()) invalid("autotune", "the qemu instruction counter needs cc (build-essential)");
  const fs::path partial = dir / "insn_count.so.partial";
  require_built(run_steps({{{cc, "-shared", "-fPIC", "-O2", "-fvisibility=hidden", source.string(),
                             "-o", partial.string()},
                            (dir / "insn_count.log").string(),
                            "the qemu instruction counter"}},
                          1, [](const std::string&) {}));
  fs::rename(partial, plugin);
  return plugin.string();
}

RunnerBuild compile_kernels(const std::string& target, const std::vector<KernelKey>& kernels,
                            const std::string& dir_text, int jobs,
                            const std::function<void(const std::string&)>& progress) {
  const schedules::TargetInfo info = schedules::target_info(target);
  const Platform p = platform_of(info);
  if (auto why = missing_tool(p, false)) invalid("verify", "building for ", target, ": ", *why);
  const fs::path dir = fs::absolute(dir_text);
  const fs::path objects = dir / "objects";
  fs::create_directories(objects);
  const std::string exe = self_exe();
  // An object is reused only while the program that compiled it (its generators) is the same.
  std::string build_identity;
  {
    std::error_code ec;
    const auto size = fs::file_size(exe, ec);
    const auto time = fs::last_write_time(exe, ec).time_since_epoch().count();
    build_identity = std::to_string(size) + ":" + std::to_string(time);
  }
  std::string kernel_target = target + "-no_runtime";
  for (const std::string& f : p.kernel_features) kernel_target += "-" + f;

  RunnerBuild build;
  std::vector<Step> steps;
  std::vector<std::string> step_kernel;  // the kernel key of each step ("" for the runtime)
  std::set<std::string> names;
  for (const KernelKey& key : kernels) {
    std::map<std::string, std::string> schedule = key.schedule.generator_params();
    std::string name = kernel_name(key.identity.op, key.identity.params, schedule, target);
    for (int n = 2; !names.insert(name).second; ++n) name = name + "_" + std::to_string(n);
    const std::string text = key.to_string();
    build.functions[text] = name;
    const fs::path obj = objects / (name + ".o");
    const fs::path stamp = objects / (name + ".key");
    const std::string want =
        text + " target=" + kernel_target + " emit=object,h mmtune=" + build_identity + "\n";
    if (fs::exists(obj) && fs::exists(stamp) && read_file(stamp) == want) {
      ++build.reused;
      continue;
    }
    fs::remove(stamp);
    std::vector<std::string> argv = {exe,
                                     "__gengen",
                                     "-g",
                                     key.identity.generator,
                                     "-f",
                                     name,
                                     "-o",
                                     objects.string(),
                                     "-e",
                                     "object,h",
                                     "target=" + kernel_target};
    for (const auto& [k, v] : key.generator_params()) argv.push_back(k + "=" + v);
    steps.push_back({argv, (objects / (name + ".log")).string(), "kernel " + name});
    step_kernel.push_back(text);
    write_file(objects / (name + ".want"), want);
    ++build.compiled;
  }
  // The Halide runtime for the target (once; its target is the kernels' own).
  const fs::path runtime = objects / "halide_runtime.o";
  const fs::path runtime_stamp = objects / "halide_runtime.key";
  if (!(fs::exists(runtime) && fs::exists(runtime_stamp) &&
        read_file(runtime_stamp) == target + " mmtune=" + build_identity)) {
    steps.push_back({{exe, "__gengen", "-r", "halide_runtime", "-o", objects.string(), "-e",
                      "object", "target=" + target},
                     (objects / "halide_runtime.log").string(),
                     "the Halide runtime"});
    step_kernel.emplace_back();
  }
  progress("verify: building " + std::to_string(kernels.size()) + " kernels for " + target + " (" +
           std::to_string(build.compiled) + " to compile, " + std::to_string(build.reused) +
           " from an earlier build)");
  // A kernel that does not build is left out of the runner and reported; the runtime must build.
  for (const auto& [i, why] : run_steps(steps, jobs, progress)) {
    if (step_kernel[i].empty()) invalid("verify", why);
    build.failed[step_kernel[i]] = why;
  }
  for (const std::string& name : names) {
    if (fs::exists(objects / (name + ".want")))
      fs::rename(objects / (name + ".want"), objects / (name + ".key"));
  }
  write_file(runtime_stamp, target + " mmtune=" + build_identity);

  // The instructions each kernel's object uses.
  const std::string disassembler = p.disassemble.empty() ? "" : find_program(p.disassemble[0]);
  if (!disassembler.empty()) {
    for (const KernelKey& key : kernels) {
      const std::string text = key.to_string();
      if (build.failed.count(text) != 0) continue;
      const std::string& name = build.functions.at(text);
      std::vector<std::string> argv = p.disassemble;
      argv[0] = disassembler;
      argv.push_back((objects / (name + ".o")).string());
      const std::string listing = (objects / (name + ".dis")).string();
      if (run_logged(argv, listing) == 0)
        build.instructions[text] = count_instructions(listing, p.instructions);
    }
  }

  for (const KernelKey& key : kernels) {
    const std::string text = key.to_string();
    if (build.failed.count(text) == 0)
      build.objects[text] = (objects / (build.functions.at(text) + ".o")).string();
  }
  build.runtime = runtime.string();
  return build;
}

void link_runner(const std::string& target, RunnerBuild& build, const std::string& dir_text,
                 const std::function<void(const std::string&)>& progress,
                 const std::string& archive) {
  const Platform p = platform_of(schedules::target_info(target));
  const fs::path dir = fs::absolute(dir_text);
  fs::create_directories(dir);
  // The table of the kernels that built and the runner's own sources, compiled with the target's
  // compiler.
  std::string declarations, entries;
  std::vector<std::string> object_files;
  int linked = 0;
  for (const auto& [text, name] : build.functions) {
    if (build.failed.count(text) != 0) continue;
    if (archive.empty()) object_files.push_back(build.objects.at(text));
    declarations += "extern int " + name + "_argv(void**);\nextern const struct " +
                    "halide_filter_metadata_t* " + name + "_metadata(void);\n";
    entries += "  {" + c_string(name) + ", " + name + "_argv, " + name + "_metadata},\n";
    ++linked;
  }
  const std::string src = runner_source_dir();
  write_file(dir / "kernel_table.c",
             "/* The kernels of this runner (generated by mmtune verify). */\n"
             "#include \"HalideRuntime.h\"\n\n" +
                 declarations +
                 "\nstruct mmtune_runner_kernel {\n  const char* name;\n  int (*argv_fn)(void**);\n"
                 "  const struct halide_filter_metadata_t* (*metadata)(void);\n};\n"
                 "const struct mmtune_runner_kernel mmtune_runner_kernels[] = {\n" +
                 entries + "  {0, 0, 0}};\nconst int mmtune_runner_kernel_count = " +
                 std::to_string(linked) + ";\n");
  std::vector<std::string> sources = {(dir / "kernel_table.c").string(),
                                      src + "/targets/runner/kernel_runner.c"};
  for (const std::string& s : p.sources) sources.push_back(src + "/" + s);
  std::vector<Step> compiles;
  std::vector<std::string> link = p.link;
  for (const std::string& s : sources) {
    const std::string obj = (dir / (fs::path(s).stem().string() + ".o")).string();
    std::vector<std::string> argv = p.cc;
    const std::string halide_include = std::string("-I") + MMTUNE_HALIDE_INCLUDE_DIR;
    argv.insert(argv.end(), {"-I" + src + "/targets/runner", halide_include, "-c", s, "-o", obj});
    argv[0] = find_program(argv[0]);
    compiles.push_back({argv, obj + ".log", fs::path(s).filename().string()});
    link.push_back(obj);
  }
  require_built(run_steps(compiles, 2, [](const std::string&) {}));
  link.insert(link.end(), object_files.begin(), object_files.end());
  if (!archive.empty()) {
    link.push_back(archive);
  } else {
    link.push_back(build.runtime);
  }
  const std::string runner = (dir / "kernel_runner").string();
  link.insert(link.end(), {"-o", runner});
  link.insert(link.end(), p.link_libs.begin(), p.link_libs.end());
  link[0] = find_program(link[0]);
  require_built(run_steps({{link, (dir / "link.log").string(), "the kernel runner"}}, 1, progress));
  build.exe = runner;
}

RunnerBuild build_runner(const std::string& target, const std::vector<KernelKey>& kernels,
                         const std::string& dir, int jobs,
                         const std::function<void(const std::string&)>& progress) {
  RunnerBuild build = compile_kernels(target, kernels, dir, jobs, progress);
  link_runner(target, build, dir, progress);
  return build;
}

}  // namespace mmtune::verify

namespace mmtune::verify {

LibraryBuild build_library(const std::string& database, const std::string& dir_text, int jobs,
                           const std::function<void(const std::string&)>& progress) {
  const std::string where = "build-library: '" + database + "'";
  const nlohmann::json db = tune::read_tuned_database(database, where);
  if (!db.contains("target") || !db["target"].is_string())
    invalid(where, "has no \"target\" (a Halide target string)");
  LibraryBuild out;
  out.target = resolve_target(db["target"].get<std::string>());
  const schedules::TargetInfo info = schedules::target_info(out.target);
  const Platform p = platform_of(info);
  if (auto why = missing_tool(p, false)) invalid(where, "building for ", out.target, ": ", *why);
  const fs::path dir = fs::absolute(dir_text);
  std::vector<KernelKey> keys;
  std::vector<nlohmann::json> entries;
  for (const tune::DatabaseIdentity& d : tune::identities_of_database(database)) {
    const KernelIdentity id = tune::parse_identity_spec(d.spec);
    for (const nlohmann::json& schedule : d.schedules) {
      HalideVariant v;
      v.target = out.target;
      v.schedule = schedule.get<schedules::Schedule>();
      keys.push_back(kernel_key(id, v));
      entries.push_back({{"identity", d.spec}, {"schedule", schedule}});
    }
  }
  RunnerBuild build = compile_kernels(out.target, keys, (dir / "build").string(), jobs, progress);
  if (!build.failed.empty()) invalid(where, build.failed.begin()->second);
  // The kernels' provenance and buckets as the database has them, by name.
  std::map<std::string, nlohmann::json> listed;
  for (const nlohmann::json& k : db["kernels"]) {
    if (k.is_object() && k.contains("name") && k["name"].is_string())
      listed[k["name"].get<std::string>()] = k;
  }
  fs::create_directories(dir / "lib");
  fs::create_directories(dir / "include");
  const fs::path partial = dir / "lib" / "libmmtune_kernels.a.partial";
  fs::remove(partial);
  std::vector<std::string> ar = {find_program(p.archiver), "rcs", partial.string()};
  if (ar[0].empty()) invalid(where, "the archiver ", p.archiver, " is not on PATH");
  nlohmann::json manifest = {{"target", out.target},
                             {"database", fs::absolute(database).string()},
                             {"note",
                              "The kernels of the database built for the target by "
                              "`mmtune build-library`: C functions (Halide's ABI, "
                              "include/<name>.h) and one Halide runtime for the target."},
                             {"kernels", nlohmann::json::array()}};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string text = keys[i].to_string();
    const std::string& name = build.functions.at(text);
    ar.push_back(build.objects.at(text));
    fs::copy_file(fs::path(build.objects.at(text)).replace_extension(".h"),
                  dir / "include" / (name + ".h"), fs::copy_options::overwrite_existing);
    nlohmann::json k = entries[i];
    k["name"] = name;
    k["op"] = keys[i].identity.op;
    if (auto it = listed.find(name); it != listed.end()) {
      k["bucket"] = it->second.value("bucket", nlohmann::json("any"));
      k["provenance"] = it->second.value("provenance", "");
    }
    if (auto ins = build.instructions.find(text); ins != build.instructions.end())
      k["instructions"] = ins->second;
    manifest["kernels"].push_back(k);
  }
  ar.push_back(build.runtime);
  require_built(
      run_steps({{ar, (dir / "build" / "ar.log").string(), "the kernels' library"}}, 1, progress));
  fs::copy_file(fs::path(MMTUNE_HALIDE_INCLUDE_DIR) / "HalideRuntime.h",
                dir / "include" / "HalideRuntime.h", fs::copy_options::overwrite_existing);
  write_file(dir / "manifest.json.partial", manifest.dump(2) + "\n");
  out.archive = (dir / "lib" / "libmmtune_kernels.a").string();
  out.manifest = (dir / "manifest.json").string();
  fs::rename(partial, out.archive);
  fs::rename(dir / "manifest.json.partial", out.manifest);
  out.kernels = static_cast<int>(keys.size());
  out.compiled = build.compiled;
  out.reused = build.reused;
  return out;
}

}  // namespace mmtune::verify
