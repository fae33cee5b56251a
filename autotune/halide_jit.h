// The JIT plumbing every operator's Halide path shares: the kernel cache and error capture.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "Halide.h"
#include "autotune/kernel_key.h"

namespace mmtune::jit {

// The compiled kernel for (key, target), compiled on first use and cached for the process. A
// Halide compile error becomes InternalError naming the kernel. Under key.autoschedule, the
// generator is built without its template (its estimates from the key) and scheduled by that
// autoscheduler, whose plugin is loaded on first use (autoscheduler_plugin).
Halide::Callable compile(const KernelKey& key, const std::string& target);

// Halide's CPU autoschedulers, whose plugins the Halide wheel ships next to libHalide:
// "Adams2019" (its cost model's default weights are built into the plugin), "Mullapudi2016",
// "Li2018".
const std::vector<std::string>& autoschedulers();
// The canonical spelling of an autoscheduler's name (any case), or nullopt.
std::optional<std::string> autoscheduler_name(const std::string& name);
// The plugin file of an autoscheduler: libautoschedule_<name>.so in the folder of the libHalide
// this process loaded. InvalidArgument naming the folder when it is not there.
std::string autoscheduler_plugin(const std::string& name);

// Number of kernels compiled so far in this process.
std::size_t cache_size();

// A JITUserContext that collects the pipeline's error messages.
struct ErrorContext : Halide::JITUserContext {
  std::string message;
  ErrorContext();
  Halide::JITUserContext* get() { return this; }
};

// Throws InternalError naming the kernel when a call returned non-zero.
void check(int rc, const ErrorContext& ctx, const KernelKey& key);

}  // namespace mmtune::jit
