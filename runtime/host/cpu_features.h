// What this CPU can run: the features a Halide target string names, checked against cpuid once per
// target. The runtime uses it before calling a kernel (a kernel built for features this CPU lacks
// would fault), the JIT before compiling for a target other than the host's.
#pragma once

#include <optional>
#include <string>

namespace mmtune {

// Why this CPU cannot run code for the Halide target `target` (a feature it lacks, or one mmtune
// cannot confirm), or nullopt. Computed once per target string.
std::optional<std::string> cpu_cannot_run(const std::string& target);

}  // namespace mmtune
