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

// Whether this process may use AMX tiles: the CPU has AMX-TILE and AMX-INT8, the OS saves the tile
// state (XCR0), and Linux granted the process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM, asked
// once per process; without it the first tile instruction faults). Part of confirming
// avx512_sapphirerapids; the JIT asks before running host kernels.
bool request_amx();

}  // namespace mmtune
