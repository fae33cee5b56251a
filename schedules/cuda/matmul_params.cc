// cuda_matmul: the knob table and the template's rules.
#include "schedules/cuda/matmul_params.h"

#include <sstream>

namespace mmtune::schedules {
namespace {

// The limits of one thread block on every CUDA GPU Halide targets (compute capability 3.0 and up):
// threads, shared memory without the opt-in Halide's runtime does not make, registers of an SM
// (one block must fit), registers of a thread.
constexpr int kMaxThreads = 1024;
constexpr int kMaxSharedBytes = 48 * 1024;
constexpr int kRegistersPerSm = 64 * 1024;
constexpr int kMaxRegistersPerThread = 255;
// Registers a thread needs besides its sums and one K step's operands (indices, addresses, loop
// counters): an estimate, from ptxas's counts for the defaults (52 to 104 registers).
constexpr int kOverheadRegisters = 40;

// A sum of exact 8-bit integer products: its operands are staged as bytes.
bool dot8(Accumulator acc) { return acc.exact && acc.operand_bits == 8; }

}  // namespace

const KnobTable<CudaMatmulParams>& CudaMatmulParams::knobs() {
#define MMTUNE_CUDA_KNOB(...) MMTUNE_KNOB_ENTRY_FOR(CudaMatmulParams, __VA_ARGS__)
  static const KnobTable<CudaMatmulParams> table({MMTUNE_CUDA_MATMUL_KNOBS(MMTUNE_CUDA_KNOB)});
#undef MMTUNE_CUDA_KNOB
  return table;
}

std::optional<std::string> cuda_inexact_sum(Accumulator acc) {
  if (acc.exact || acc.fusable) return std::nullopt;
  return "cuda_matmul cannot sum float" + std::to_string(acc.bits) +
         " exactly with separately rounded steps: Halide 21 compiles CUDA kernels with FMA "
         "contraction on whatever strict_float says (CodeGen_PTX_Dev: AllowFPOpFusion=Fast), so "
         "each step's multiply and add would become one fma; on the GPU only integer sums, fused "
         "steps (contract=fma) and exact products (float16 into float32, float8 into float64) "
         "keep the reference's bits";
}

int CudaMatmulParams::shared_bytes(Accumulator acc) const {
  if (k_tile == 0) return 0;
  // The block's accumulators, its int32 partial sums (the blocked sum of grouped 8-bit products),
  // and one K tile of A (tile_rows rows) and of B (tile_cols columns): bytes for 8-bit products,
  // the accumulator's width otherwise (the Gemm operands are widened, float8 ones decoded to
  // float64).
  const int outputs = tile_rows * tile_cols;
  const int operand_bytes = dot8(acc) ? 1 : acc.bits / 8;
  int bytes = outputs * acc.bits / 8;
  if (dot8(acc) && k_group > 1) bytes += outputs * 4;
  bytes += (tile_rows + tile_cols) * k_tile * operand_bytes;
  return bytes;
}

std::optional<std::string> CudaMatmulParams::validate(const TargetInfo&, Accumulator acc) const {
  if (auto why = cuda_inexact_sum(acc)) return why;
  if (auto why = knobs().check(*this, acc.exact)) return why;
  std::ostringstream why;
  // A thread holds its sums (twice for an exact sum staged in shared memory: a K tile's sums in
  // registers, and the block's it adds them to) and one K step's operands.
  const int words = acc.bits / 32;
  const int sums = thread_rows * thread_cols * (k_tile > 0 && acc.exact ? 2 : 1);
  const int registers = (sums + thread_rows + thread_cols) * words + kOverheadRegisters;
  if (acc.bits != 32 && acc.bits != 64) {
    why << "cuda_matmul sums in 32- or 64-bit accumulators, not " << acc.bits << "-bit ones";
  } else if (k_group != 1 && k_group != 4) {
    why << "k_group=" << k_group << " is not 1 or 4";
  } else if (k_group == 4 && !dot8(acc)) {
    why << "k_group=4 needs 8-bit operands (dp4a sums groups of four 8-bit products), not "
        << acc.operand_bits << "-bit ones";
  } else if (tile_rows % thread_rows != 0 || tile_cols % thread_cols != 0) {
    why << "a " << tile_rows << "x" << tile_cols << " block tile is not made of whole "
        << thread_rows << "x" << thread_cols << " thread tiles";
  } else if (threads() > kMaxThreads) {
    why << "a " << tile_rows << "x" << tile_cols << " block of " << thread_rows << "x"
        << thread_cols << " thread tiles has " << threads() << " threads; a CUDA block has at most "
        << kMaxThreads;
  } else if (k_tile % (k_unroll * k_group) != 0) {
    why << "k_tile=" << k_tile
        << " is not 0 or a multiple of k_unroll x k_group = " << k_unroll * k_group;
  } else if (shared_bytes(acc) > kMaxSharedBytes) {
    why << "a " << tile_rows << "x" << tile_cols << " block with k_tile=" << k_tile << " needs "
        << shared_bytes(acc) << " bytes of shared memory for " << acc.bits
        << "-bit sums; a block has " << kMaxSharedBytes << " (48 KiB)";
  } else if (registers > kMaxRegistersPerThread || registers * threads() > kRegistersPerSm) {
    why << "a " << thread_rows << "x" << thread_cols << " thread tile of " << acc.bits
        << "-bit sums needs about " << registers << " registers a thread, " << registers * threads()
        << " for the block's " << threads() << " threads; a thread has at most "
        << kMaxRegistersPerThread << ", an SM " << kRegistersPerSm;
  }
  const std::string s = why.str();
  if (s.empty()) return std::nullopt;
  return s;
}

MatmulLayout CudaMatmulParams::layout(const TargetInfo&, Accumulator acc) const {
  MatmulLayout l;
  l.lanes = 1;  // a thread computes scalars
  // A block's columns are one packed panel when K is grouped (the grouped form always packs B);
  // otherwise B is read in place.
  l.panel = tile_cols;
  l.pack_b = false;
  l.k_group = acc.exact ? k_group : 1;
  return l;
}

CudaMatmulParams CudaMatmulParams::defaults(const TargetInfo& t, Accumulator acc) {
  CudaMatmulParams p = knobs().defaults();
  if (dot8(acc)) p.k_group = 4;  // dp4a
  // A float sum in shared memory is stored at every K step (the sum of a tile cannot be kept apart
  // in registers without regrouping it): by default its sums stay in registers.
  if (!acc.exact) p.k_tile = 0;
  p.fit_draw(t, acc);
  if (!cuda_inexact_sum(acc)) {
    if (p.validate(t, acc)) p.tile_rows = 16;  // 64-bit sums: half the shared memory
    MMTUNE_CHECK(!p.validate(t, acc), "no default cuda_matmul parameters fit " << t.target);
  }
  return p;
}

std::vector<CudaMatmulParams> CudaMatmulParams::gemv_forms(const TargetInfo&, Accumulator) {
  return {};
}

void CudaMatmulParams::fit_draw(const TargetInfo&, Accumulator) {
  tile_rows = (tile_rows + thread_rows - 1) / thread_rows * thread_rows;
  tile_cols = (tile_cols + thread_cols - 1) / thread_cols * thread_cols;
  const int step = k_unroll * k_group;
  if (k_tile) k_tile = (k_tile + step - 1) / step * step;
}

}  // namespace mmtune::schedules
