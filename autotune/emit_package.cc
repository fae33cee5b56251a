// The package of tuned kernels: this project's own CMake build, driven from the mmtune binary. The
// kernels are built exactly as the runtime library builds them (cmake/MmtuneKernels.cmake), so an
// emitted package is mmtune_runtime over other databases, not a second way to make one.
#include "autotune/emit_package.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autotune/process.h"
#include "reference/error.h"

// The build records (autotune/CMakeLists.txt) the tree it was configured from, MMTUNE_SOURCE_DIR,
// and the tools it used, MMTUNE_CMAKE_COMMAND, MMTUNE_CMAKE_GENERATOR, MMTUNE_MAKE_PROGRAM,
// MMTUNE_C_COMPILER, MMTUNE_CXX_COMPILER, MMTUNE_C_COMPILER_LAUNCHER, MMTUNE_CXX_COMPILER_LAUNCHER
// and MMTUNE_VENV ("" when unset), so that the package is built the way mmtune was.

namespace mmtune::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The files a package must hold before it may replace anything (lib/ is fixed by the configure
// step: CMAKE_INSTALL_LIBDIR=lib).
const char* const kPackageFiles[] = {
    "include/mmtune/mmtune.h",
    "include/mmtune/reference/gemm.h",
    "lib/libmmtune_kernels.a",
    "lib/cmake/mmtune-kernels/mmtune-kernelsConfig.cmake",
    "lib/cmake/mmtune-kernels/mmtune-kernelsConfigVersion.cmake",
    "manifest.json",
};

int level_rank(const std::string& target) {
  if (target.find("avx512") != std::string::npos) return 0;
  if (target.find("avx2") != std::string::npos) return 1;
  return 2;
}

std::string source_dir(const std::string& command) {
  const char* env = std::getenv("MMTUNE_SOURCE_DIR");
  const bool from_env = env != nullptr && *env != '\0';
  const std::string dir = from_env ? env : MMTUNE_SOURCE_DIR;
  const std::string which = from_env ? "MMTUNE_SOURCE_DIR='" + dir + "'"
                                     : "the source tree '" + dir + "' it was built from";
  std::error_code ec;
  if (dir.empty() || !fs::is_regular_file(fs::path(dir) / "cmake/MmtuneKernels.cmake", ec) ||
      !fs::is_regular_file(fs::path(dir) / "CMakeLists.txt", ec)) {
    invalid(command, "the package is built from an mmtune source tree, and ", which,
            " is not one (no CMakeLists.txt and cmake/MmtuneKernels.cmake there): set "
            "MMTUNE_SOURCE_DIR to an mmtune checkout, or pass --no-package");
  }
  return fs::absolute(dir).lexically_normal().string();
}

// The folder of this build's generator package (mmtune-halide_generatorsConfig.cmake), for a
// package built from this build's own source tree whose generator executable is at least as new as
// every source it is compiled from (generators/, schedules/, reference/): the package's build then
// imports that executable (Halide's add_halide_generator finds the package) instead of compiling
// the generators again, about 40 s of an emit without a compiler cache. It is the executable the
// build's own kernels came from, compiled from the same objects as the JIT that tuned and gated
// the package's kernels. "" otherwise (another tree, a generator not built or older than a
// source): the package compiles its own.
std::string reusable_generators(const std::string& source) {
  std::error_code ec;
  if (fs::absolute(MMTUNE_SOURCE_DIR).lexically_normal() != fs::path(source)) return "";
  const fs::path exe = MMTUNE_GENERATOR_EXE, dir = MMTUNE_GENERATORS_PACKAGE_DIR;
  if (!fs::is_regular_file(exe, ec) ||
      !fs::is_regular_file(dir / "mmtune-halide_generatorsConfig.cmake", ec))
    return "";
  const auto built = fs::last_write_time(exe, ec);
  if (ec) return "";
  for (const char* sub : {"generators", "schedules", "reference"}) {
    for (fs::recursive_directory_iterator it(fs::path(source) / sub, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->is_regular_file(ec) && it->last_write_time(ec) > built) return "";
    }
    if (ec) return "";
  }
  return dir.string();
}

}  // namespace

std::vector<std::string> best_level_first(std::vector<std::string> targets) {
  std::sort(targets.begin(), targets.end());
  std::stable_sort(targets.begin(), targets.end(), [](const std::string& a, const std::string& b) {
    return level_rank(a) < level_rank(b);
  });
  return targets;
}

void check_package_prerequisites(const std::string& command, const std::string& dir) {
  (void)source_dir(command);
  std::error_code ec;
  if (!fs::exists(MMTUNE_CMAKE_COMMAND, ec)) {
    invalid(command, "the cmake this mmtune was built with, '", MMTUNE_CMAKE_COMMAND,
            "', no longer exists: rebuild mmtune, or pass --no-package");
  }
  const fs::path path = fs::absolute(dir).lexically_normal();
  if (fs::exists(path, ec) && !fs::is_directory(path, ec)) {
    invalid(command, "the package folder '", path.string(), "' exists and is not a folder");
  }
  // The tuned databases beside it go to CMake as a list, whose items ';' would split.
  if (path.string().find(';') != std::string::npos) {
    invalid(command, "the package folder '", path.string(),
            "' has a ';' in its path, which CMake reads as a list separator: write into a folder "
            "without one");
  }
}

void emit_package(const PackageRequest& request) {
  const std::string& cmd = request.command;
  const std::string prefix = "mmtune " + cmd + ": package: ";
  const auto start = Clock::now();
  check_package_prerequisites(cmd, request.dir);
  const std::string source = source_dir(cmd);
  const std::string cmake = MMTUNE_CMAKE_COMMAND;
  std::error_code ec;
  const fs::path dir = fs::absolute(request.dir).lexically_normal();
  std::string databases;  // a CMake list
  for (const std::string& db : request.databases) {
    const std::string path = fs::absolute(db).lexically_normal().string();
    // CMake splits list items at ';', so such a path would name two files.
    if (path.find(';') != std::string::npos) {
      invalid(cmd, "the tuned database '", path, "' has a ';' in its path, which CMake reads as ",
              "a list separator: emit into a folder without one");
    }
    databases += (databases.empty() ? "" : ";") + path;
  }

  // Everything happens in one temporary folder beside the package (the same file system, so the
  // finished install is renamed into place, not copied).
  const fs::path work = dir.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  if (ec) invalid(cmd, "cannot create the folder '", work.string(), "': ", ec.message());
  const fs::path build = work / "build", staged = work / "install";
  auto step = [&](const std::string& what, const std::string& name,
                  const std::vector<std::string>& argv) {
    const std::string log = (work / (name + ".log")).string();
    std::cout << prefix << what << " (log: " << log << ")" << std::endl;
    const int rc = run_logged(argv, log);
    if (rc != 0) {
      fs::remove_all(staged, ec);  // never a partial package, even under another name
      invalid(cmd, "the package's ", name, " step failed (",
              rc < 0 ? std::string("killed or not started") : "exit code " + std::to_string(rc),
              "); nothing was written to '", dir.string(), "'; the log is ", log,
              " (the build folder ", build.string(),
              " is kept); its last lines:", log_tail(log, 25));
    }
  };

  std::vector<std::string> configure = {cmake,
                                        "-S",
                                        source,
                                        "-B",
                                        build.string(),
                                        "-G",
                                        MMTUNE_CMAKE_GENERATOR,
                                        "-DCMAKE_BUILD_TYPE=Release",
                                        "-DCMAKE_INSTALL_LIBDIR=lib",
                                        "-DMMTUNE_PACKAGE_ONLY=ON",
                                        "-DMMTUNE_PACKAGE_NAME=mmtune-kernels",
                                        "-DMMTUNE_DATABASE=" + databases};
  const std::pair<const char*, const char*> recorded[] = {
      {"CMAKE_MAKE_PROGRAM", MMTUNE_MAKE_PROGRAM},
      {"CMAKE_C_COMPILER", MMTUNE_C_COMPILER},
      {"CMAKE_CXX_COMPILER", MMTUNE_CXX_COMPILER},
      {"CMAKE_C_COMPILER_LAUNCHER", MMTUNE_C_COMPILER_LAUNCHER},
      {"CMAKE_CXX_COMPILER_LAUNCHER", MMTUNE_CXX_COMPILER_LAUNCHER},
      {"MMTUNE_VENV", MMTUNE_VENV}};
  for (const auto& [key, value] : recorded) {
    if (*value != '\0') configure.push_back(std::string("-D") + key + "=" + value);
  }
  const std::string generators = reusable_generators(source);
  if (!generators.empty()) configure.push_back("-Dmmtune-halide_generators_DIR=" + generators);
  std::ostringstream what;
  what << "configuring " << source << " with " << request.databases.size() << " tuned database"
       << (request.databases.size() == 1 ? "" : "s") << " (MMTUNE_DATABASE, best level first)";
  step(what.str(), "configure", configure);
  const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  step(std::string("building the kernels") +
           (generators.empty() ? " (the generators compiled first)"
                               : " (with this build's generator executable)") +
           ", the Halide runtime and libmmtune_kernels.a",
       "build", {cmake, "--build", build.string(), "--parallel", std::to_string(cores)});
  step("installing into " + staged.string(), "install",
       {cmake, "--install", build.string(), "--prefix", staged.string()});

  for (const char* f : kPackageFiles) {
    if (!fs::is_regular_file(staged / f, ec)) {
      fs::remove_all(staged, ec);
      invalid(cmd, "the package's install lacks ", f, "; nothing was written to '", dir.string(),
              "'; the log is ", (work / "install.log").string());
    }
  }
  std::size_t kernels = 0, twins = 0, levels = 0;
  {
    std::ifstream in(staged / "manifest.json");
    const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    MMTUNE_CHECK(manifest.is_object() && manifest.contains("kernels"),
                 "the package's manifest " << (staged / "manifest.json") << " is not its JSON");
    for (const nlohmann::json& k : manifest["kernels"])
      ++(k.contains("prepacked_twin_of") ? twins : kernels);
    levels = manifest.value("levels", nlohmann::json::array()).size();
  }

  // Into place: the previous package moves aside first (a folder cannot be renamed over a
  // non-empty one), and back if the new one cannot take its place.
  const fs::path previous = work / "previous";
  const bool replacing = fs::exists(dir, ec);
  if (replacing) {
    fs::rename(dir, previous, ec);
    if (ec)
      invalid(cmd, "cannot move the previous package '", dir.string(), "' aside: ", ec.message());
  }
  fs::rename(staged, dir, ec);
  if (ec) {
    const std::string why = ec.message();
    if (replacing) fs::rename(previous, dir, ec);
    invalid(cmd, "cannot rename the package into '", dir.string(), "': ", why);
  }
  fs::remove_all(work, ec);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << prefix << (replacing ? "replaced " : "wrote ") << dir.string() << " (" << kernels
            << " kernel" << (kernels == 1 ? "" : "s") << " and " << twins << " prepacked twin"
            << (twins == 1 ? "" : "s") << " of " << levels << " level" << (levels == 1 ? "" : "s")
            << ", listed in manifest.json; " << std::lround(seconds) << " s)\n";
  if (kernels == 0) {
    std::cout << prefix << "warning: no kernels (no candidate passed the gate): every call of "
              << "this package runs the reference\n";
  }
  std::cout << "mmtune " << cmd << ": use it: with " << dir.string()
            << " on CMAKE_PREFIX_PATH, find_package(mmtune-kernels REQUIRED) and "
               "target_link_libraries(app PRIVATE mmtune::kernels)\n";
}

}  // namespace mmtune::cli
