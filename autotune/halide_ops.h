// Running operator variants through Halide's JIT in this process: what the tests, the tuner and
// `mmtune run --impl halide` use. Each call validates exactly as the reference does, then runs the
// generator compiled for the variant (cached by generator name, generator params and target).
#pragma once

#include <map>
#include <string>

#include "autotune/halide_jit.h"
#include "reference/gemm.h"
#include "reference/registry.h"
#include "schedules/cpu/matmul_params.h"

namespace mmtune {

// The Halide target string of this machine ("x86-64-linux-avx2-...").
std::string host_target();

Tensor gemm_halide(const GemmArgs& args, const HalideVariant& v);

// Named-tensor entry point, the Halide twin of run_reference (same names, attributes, checks).
Tensor run_halide(std::string_view op, const NamedTensors& inputs, const Attributes& attrs,
                  const HalideVariant& v);

// Number of distinct kernels compiled so far in this process (JIT cache size).
std::size_t jit_cache_size();

}  // namespace mmtune
