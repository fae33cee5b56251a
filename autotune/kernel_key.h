// A kernel's identity: generator name + generator parameters (dtypes, layout, contract, mode,
// schedule). The JIT cache, the AOT build, the tuned databases and the runtime's dispatch all use
// it. No Halide dependency: the runtime library computes keys too.
#pragma once

#include <map>
#include <string>

#include "reference/gemm.h"
#include "reference/qgemm.h"
#include "reference/qlinear_matmul.h"
#include "schedules/cpu/matmul_params.h"

namespace mmtune {

struct KernelKey {
  std::string generator;
  std::map<std::string, std::string> params;
  std::string to_string() const;  // "mmtune_gemm A.type=float32 ... tile_rows=6 ..."
};

// A schedule for a target: what the tuner searches and the databases store.
struct HalideVariant {
  schedules::CpuMatmulParams schedule;
  std::string target = "host";  // "host" or a Halide target string
};

// The generator-parameter spelling of a dtype ("float32", "uint8", ...); float8 travels as uint8.
std::string gp_type(DType t);

// Adds the schedule's generator parameters to a kernel key.
void add_schedule_params(KernelKey& key, const HalideVariant& v);

// Bits of the accumulator a Gemm of this type uses (float16/bfloat16 sum in float32).
int gemm_acc_bits(DType t);

// The Gemm kernel that evaluates `args`; the runtime always uses has_c=true kernels (an absent C is
// beta = 0 over a zero-stride dummy, which computes the same bits).
KernelKey gemm_kernel_key(const GemmArgs& args, const HalideVariant& v);

// The QLinearMatMul kernel (int8/uint8 operands) for `args`: operand and output types, scale type,
// requantization mode. Per-row/per-column parameters and batching are the host's, so they are not
// part of the identity.
KernelKey qlinear_matmul_kernel_key(const QLinearMatMulArgs& args, const HalideVariant& v);

// The QGemm kernel for `args`: operand types, output (float32 or quantized), whether y_scale is
// given. Transposes are materialized by the host; C is always passed (zero-stride dummy if absent).
KernelKey qgemm_kernel_key(const QGemmArgs& args, const HalideVariant& v);

}  // namespace mmtune
