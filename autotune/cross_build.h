// Kernels built for a target this CPU may not run, linked into the kernel runner
// (targets/runner/kernel_runner.c) with that target's toolchain: what `mmtune verify` runs the
// gate on, natively or through a runner command (qemu, ssh, adb).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autotune/kernel_key.h"
#include "schedules/target_info.h"

namespace mmtune::verify {

// How a target family's runner is built and started.
struct Platform {
  std::string family;             // "arm", "hexagon", "x86", "cuda"
  std::vector<std::string> cc;    // compiles one C file: cc... -c SRC -o OBJ
  std::vector<std::string> link;  // link... OBJECTS... -o EXE link_libs...
  std::vector<std::string> link_libs;
  std::vector<std::string> sources;          // the runner's platform layer, under the source tree
  std::string default_runner;                // the command template, {exe} {args}
  std::vector<std::string> kernel_features;  // appended to the kernels' target
  // Programs the build and the default runner need, each with the Debian package holding it.
  std::vector<std::pair<std::string, std::string>> tools;
  // The disassembler of the target's objects (objdump... OBJECT) and the instructions whose use
  // verify reports (the ones a kernel's speed on the target rests on: dot products, fused
  // multiply-adds).
  std::vector<std::string> disassemble;
  std::string archiver;  // makes static libraries of the target's objects (ar rcs LIB OBJECTS...)
  std::vector<std::string> instructions;
  // Why the kernels cannot run where verify runs with the default runner (CUDA without a GPU), or
  // nullopt: they are built and linked, and the runner lists them, but no case runs.
  std::optional<std::string> cannot_run;
  // The default runner with qemu's instruction counter loaded, {plugin} standing for the plugin's
  // argument (counting_plugin), one guest thread; "" when the target runs under no qemu.
  std::string counting_runner;
};

// The platform of `t`'s family; InvalidArgument naming the target when mmtune builds no runner for
// it.
Platform platform_of(const schedules::TargetInfo& t);

// Why a program of `tools` is missing (not on PATH, or not executable), or nullopt.
std::optional<std::string> missing_tool(const Platform& p, bool for_default_runner);

struct RunnerBuild {
  std::string exe;
  std::map<std::string, std::string> functions;  // KernelKey::to_string() -> function name
  int compiled = 0;                              // kernels compiled now
  int reused = 0;                                // kernels whose object an earlier build left
  // Kernels that did not build (left out of the runner): key -> the failure and its log's end.
  std::map<std::string, std::string> failed;
  // Per built kernel (key), how often each of the platform's `instructions` appears in its object
  // (those that appear); empty when the disassembler is not installed.
  std::map<std::string, std::map<std::string, int>> instructions;
  std::map<std::string, std::string> objects;  // per built kernel (key), its object
  std::string runtime;                         // the Halide runtime's object
};

// Compiles each of `kernels` for `target` (a child process `mmtune __gengen` each, `jobs` at once:
// libHalide may abort on a bad schedule), the Halide runtime for `target`, the runner and its
// platform layer, and links them into `dir`/kernel_runner. An object whose kernel and target are
// unchanged since an earlier build into `dir` is reused. `progress` receives one line per step. A
// kernel that does not build is left out and listed in `failed`; InvalidArgument naming the step,
// its log and the log's end when the runtime, the runner or the link fails.
RunnerBuild build_runner(const std::string& target, const std::vector<KernelKey>& kernels,
                         const std::string& dir, int jobs,
                         const std::function<void(const std::string&)>& progress);

// The qemu plugin that counts the guest instructions between the runner's marks
// (targets/qemu/insn_count.c), built for this machine with its C compiler into `dir` (reused when
// up to date): its path. InvalidArgument naming the log when it does not build.
std::string counting_plugin(const std::string& dir);

// build_runner's two halves: the kernels' objects (and headers) compiled into `dir`/objects, then
// the runner linked in `dir` from them, or from `archive` (a static library holding every kernel
// of `build` and the runtime: build_library's) instead.
RunnerBuild compile_kernels(const std::string& target, const std::vector<KernelKey>& kernels,
                            const std::string& dir, int jobs,
                            const std::function<void(const std::string&)>& progress);
void link_runner(const std::string& target, RunnerBuild& build, const std::string& dir,
                 const std::function<void(const std::string&)>& progress,
                 const std::string& archive = "");

// The program `name` on PATH (or `name` itself when it holds a slash), or "".
std::string find_program(const std::string& name);

// The folder of the mmtune source tree the runner's sources are read from: MMTUNE_SOURCE_DIR in
// the environment, else the tree this program was built from.
std::string runner_source_dir();

}  // namespace mmtune::verify

namespace mmtune::verify {

struct LibraryBuild {
  std::string target;
  std::string archive;   // DIR/lib/libmmtune_kernels.a
  std::string manifest;  // DIR/manifest.json
  int kernels = 0;
  int compiled = 0, reused = 0;
};

// The kernels of a tuned database (tuned/<target>.json) built for its target with the target's
// toolchain into DIR: lib/libmmtune_kernels.a (the kernels, C ABI, and one Halide runtime for the
// target), include/<kernel>.h (Halide's headers) and HalideRuntime.h, and manifest.json (target;
// per kernel its name, operator, identity, schedule, bucket, provenance and the instructions its
// object uses). The objects are kept in DIR/build and reused while unchanged. InvalidArgument
// naming the kernel, its log and the log's end when one does not build: a library is whole.
LibraryBuild build_library(const std::string& database, const std::string& dir, int jobs,
                           const std::function<void(const std::string&)>& progress);

}  // namespace mmtune::verify
