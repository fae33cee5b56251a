// The package `mmtune emit` (and `mmtune autotune` at its end) writes from tuned databases: the
// runtime library built from them, installed as the CMake package mmtune-kernels (target
// mmtune::kernels) that other projects consume with find_package.
#pragma once

#include <string>
#include <vector>

namespace mmtune::cli {

// Targets in the order the runtime tries its levels, best first: AVX-512 targets, then AVX2, then
// the others, each group in name order (the order cmake/MmtuneKernels.cmake's
// mmtune_shipped_kernel_targets gives the shipped databases).
std::vector<std::string> best_level_first(std::vector<std::string> targets);

struct PackageRequest {
  std::string command;                 // "emit" or "autotune": the prefix of lines and errors
  std::vector<std::string> databases;  // tuned/<target>.json files, best level first
  std::string dir;                     // the package folder (created, or replaced when complete)
};

// What emit_package needs before it builds anything, checked alone so that a command fails before
// it tunes or writes anything when it could not package the result: an mmtune source tree, the
// cmake the build used, and a package folder that is a folder (or absent) without ';' in its
// path. InvalidArgument naming what is missing and how to proceed (--no-package among the ways).
void check_package_prerequisites(const std::string& command, const std::string& dir);

// Configures this mmtune source tree (the MMTUNE_SOURCE_DIR environment variable, else the tree
// this binary was built from) into a temporary folder next to `dir` with the build's own cmake,
// generator and compilers, MMTUNE_DATABASE = the databases, MMTUNE_PACKAGE_ONLY and
// MMTUNE_PACKAGE_NAME=mmtune-kernels; builds it; installs it beside `dir`; and only when all of it
// succeeded and the install holds every file of the package, renames it to `dir` (an existing
// package is replaced then, never before). Prints one line per step and how to use the package.
// Throws InvalidArgument naming the step, its log and the log's last lines when a step fails;
// `dir` is untouched then, and the temporary folder keeps the logs and the build.
void emit_package(const PackageRequest& request);

}  // namespace mmtune::cli
