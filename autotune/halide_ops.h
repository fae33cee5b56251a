// Running operator variants through Halide's JIT in this process: what the tests, the tuner and
// `mmtune run --impl halide` use. Each call validates exactly as the reference does (same
// InvalidArgument), refuses a schedule that does not fit the target or the sum (InvalidArgument,
// before compiling), then runs the generator compiled for the variant (cached by kernel key and
// target) through the same host side as the runtime (runtime/host/). Results are the reference's,
// bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "autotune/kernel_key.h"
#include "reference/registry.h"

namespace mmtune {

// What the gate (autotune/gate.h) sees of one call: where the kernel writes, whether it ran.
struct JitRun {
  uint8_t* output = nullptr;     // in: storage for Y's bytes (nullptr: Y's own); the result is
  std::size_t output_bytes = 0;  // copied back into the returned tensor
  int kernel_calls = 0;       // out: kernel invocations; 0 when the reference computed Y (an empty
                              // output, K = 0 where the host hands it to the reference)
  double kernel_seconds = 0;  // out: wall time inside those invocations (the JIT's compiled code
                              // alone, without the host side around it; for a kernel run by an
                              // executor, the executor's whole call)
};

// B's panels (and, for the integer operators, its column sums) packed for a layout, kept for the
// calls after the first (HalideVariant::panel_cache): keyed by B's storage, whether the call
// transposes it and the layout, so B must stay alive and unchanged while the cache is used.
struct PanelCache {
  struct Packed {
    Tensor panels, sums;
  };
  std::map<std::tuple<const void*, bool, std::string>, Packed> packed;
};

Tensor gemm_halide(const GemmArgs& args, const HalideVariant& v, JitRun* run = nullptr);
// int8/uint8 operands, or float8 operands (QLinearMatMul-21, mmtune's definition).
Tensor qlinear_matmul_halide(const QLinearMatMulArgs& args, const HalideVariant& v,
                             JitRun* run = nullptr);
Tensor qgemm_halide(const QGemmArgs& args, const HalideVariant& v, JitRun* run = nullptr);
Tensor quant_matmul_dequant_halide(const QuantMatmulDequantArgs& args, const HalideVariant& v,
                                   JitRun* run = nullptr);

// Named-tensor entry point, the Halide twin of run_reference (same names, attributes, checks).
Tensor run_halide(std::string_view op, const NamedTensors& inputs, const Attributes& attrs,
                  const HalideVariant& v, JitRun* run = nullptr);

// Number of distinct kernels compiled so far in this process (JIT cache size).
std::size_t jit_cache_size();

}  // namespace mmtune
