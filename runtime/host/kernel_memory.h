// The kernels' memory: Halide's allocations inside a kernel call (a strip's packed B, a block's
// staged rows, the per-call sums) and the runtime's per-call scratch (B packed for one call).
//
// Why: a call's large blocks (hundreds of KiB and up) freed at its end leave the top of the heap
// free, glibc gives the pages back to the system (brk), and the next call faults them in again,
// zeroed by the kernel. float32 Gemm at 256^3 without a PackedB spent about a third of its time
// so (3 brk calls and 0.11 ms of system time in a 0.36 ms call, against 0.26 ms with the same
// kernel work done on a PackedB); u8.s8 QLinearMatMul calls that pack B for themselves on AMX CPUs
// lost about a quarter at 512^3. Each thread keeps its last large blocks for its next call instead.
#pragma once

#include <cstddef>

#include "HalideRuntime.h"
#include "reference/tensor.h"

namespace mmtune::host {

// Blocks of at least kCachedBlockBytes are kept per thread, up to kCachedBlocks of them and
// kCachedBytes in all (the rest freed at once); a request takes the smallest kept block that
// holds it and is at most twice its size. A thread's blocks are freed when it exits.
constexpr std::size_t kCachedBlockBytes = std::size_t{64} << 10;
constexpr std::size_t kCachedBlocks = 4;
constexpr std::size_t kCachedBytes = std::size_t{64} << 20;

// Installs halide_malloc / halide_free handlers over this thread's kept blocks, chained to the
// handlers installed before them (Halide's defaults, or another library's). Blocks carry their
// size in the 8 bytes before them (which Halide's contract makes readable); a block the previous
// handler allocated before these were installed is handed back to it. Once per process
// (idempotent), through the Halide runtime's setters
// (halide_set_custom_malloc / halide_set_custom_free: passed in, so that this library needs no
// Halide runtime of its own).
void install_kernel_memory(halide_malloc_t (*set_malloc)(halide_malloc_t),
                           halide_free_t (*set_free)(halide_free_t));
// The same blocks for the JIT's kernels (the tuner times candidates as they run when shipped),
// over aligned operator new and delete.
void* jit_kernel_malloc(std::size_t size);
void jit_kernel_free(void* ptr);

// This thread's scratch: empty Bytes holding the smallest capacity kept that holds `size` bytes,
// else the largest kept (a vector's storage moves, nothing is copied); give it back with
// return_scratch when done, so that the thread's next call reuses it. A thread keeps its
// kScratchBuffers largest, each at most kCachedBytes.
constexpr std::size_t kScratchBuffers = 2;
Bytes take_scratch(std::size_t size);
void return_scratch(Bytes&& bytes);

// A tensor on this thread's scratch, given back when it goes: a per-call operand copy.
class ScratchTensor {
 public:
  ScratchTensor() = default;
  ScratchTensor(const ScratchTensor&) = delete;
  ScratchTensor& operator=(const ScratchTensor&) = delete;
  ~ScratchTensor() { return_scratch(std::move(tensor_.bytes)); }
  // The (rows, cols) matrix of `t` at `data`, transposed (cols, rows) into it.
  const Tensor& transpose_of(const void* data, DType t, int64_t rows, int64_t cols);
  const Tensor& transpose_of(const Tensor& x) {
    return transpose_of(x.bytes.data(), x.dtype, x.shape.at(0), x.shape.at(1));
  }

 private:
  Tensor tensor_;
};

// Kept blocks and bytes of the calling thread (tests).
std::size_t kept_blocks();
std::size_t kept_bytes();

}  // namespace mmtune::host
