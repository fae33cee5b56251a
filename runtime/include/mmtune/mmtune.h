// mmtune's runtime library: the operators with ONNX semantics over the ahead-of-time kernels linked
// into this build (a dispatch table generated from a tuning database, tuned/<target>.json), with
// the reference's validation and an exact fallback. Nothing is read at run time.
//
// Every call validates exactly as the reference does (same InvalidArgument messages), then runs the
// linked kernel whose identity (operator, dtypes, mode, ...) matches the call and whose bucket
// contains (M, N, K) and the pool's thread count (set_num_threads; or the nearest bucket of that
// identity), from the best level of kernels (x86-64 feature level) this CPU runs; when no kernel
// may run, the reference implementation computes the result: slower, never different.
// DispatchInfo says which ran and why.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reference/error.h"
#include "reference/gemm.h"
#include "reference/qgemm.h"
#include "reference/qlinear_matmul.h"
#include "reference/quant_matmul_dequant.h"
#include "reference/registry.h"
#include "reference/tensor.h"

namespace mmtune {

// Which implementation computed a call.
struct DispatchInfo {
  std::string kernel;  // the AOT kernel's name (docs/naming.md), or "reference"
  std::string reason;  // the bucket that matched, or why no kernel could run
  bool used_kernel() const { return !kernel.empty() && kernel != "reference"; }
};

// A linked kernel returned an error (a Halide runtime error: a failed allocation, a violated buffer
// constraint). Never a user mistake, which is rejected before any kernel runs.
class KernelError : public InternalError {
 public:
  KernelError(std::string kernel, int code, const std::string& what);
  const std::string& kernel() const { return kernel_; }
  int code() const { return code_; }  // halide_error_code_t

 private:
  std::string kernel_;
  int code_;
};

// Threads of the kernels' pool (mmtune's, shared by every call in the process, the caller's thread
// counted); 0 restores the default ($HL_NUM_THREADS, else the number of cores). Returns the
// previous count. A change starts or stops the pool's workers, so it must not be made while calls
// are running. Idle workers spin for $MMTUNE_SPIN_US microseconds (200 by default) before they
// sleep, so that back-to-back calls find them awake. A call made while another thread's call runs
// on the pool, or from inside a kernel, runs on its own thread.
int set_num_threads(int n);

namespace runtime {

// The operators (arguments as the reference takes them: reference/<op>.h). `info`, when given,
// receives the kernel that ran.
Tensor gemm(const GemmArgs& args, DispatchInfo* info = nullptr);
Tensor qlinear_matmul(const QLinearMatMulArgs& args, DispatchInfo* info = nullptr);
Tensor qgemm(const QGemmArgs& args, DispatchInfo* info = nullptr);
Tensor quant_matmul_dequant(const QuantMatmulDequantArgs& args, DispatchInfo* info = nullptr);

// Constant weights: B packed once into the panels the kernels read (and, for 8-bit integers, its
// column sums), so that calls with the same B do no packing, as ONNX Runtime's prepacking or
// oneDNN's reordered weights do. Bit for bit the same results as the unpacked calls.
//
//   mmtune::runtime::PackedB pb = mmtune::runtime::prepack_b(args);  // once, args.b = the weights
//   Tensor y = mmtune::runtime::gemm(args, pb, &info);                 // every call
//
// prepack_b packs B for every kernel of the call's identity at the level calls use now (one copy
// per distinct panel layout among them; PrepackOptions below packs fewer); it reads args.b and what
// fixes the kernel's identity (Gemm: B's dtype, transB and the float contract, A and C may be null;
// QLinearMatMul: b 2-D, the dtypes of a, a_scale and y_zero_point and the requantization mode;
// QGemm: B's and A's dtypes, transB, whether y_scale and y_zero_point are given and y_zero_point's
// dtype; not their values). A call with a PackedB takes the same args with args.b the very tensor
// that was packed, unchanged (it is the reference's operand wherever no kernel runs, so calls never
// lose exactness); a PackedB of another operator, dtype, shape, transB, contract or b tensor is
// refused with InvalidArgument before anything is computed. When the kernel a call selects has no
// prepacked twin (an identity the build prepacks none of, a level changed since packing), the call
// packs as the plain call does and DispatchInfo::reason says so. PackedB is immutable and may be
// shared across threads. A PackedB also remembers the last four distinct calls made with it (2-D
// operands; their shapes, types, attributes, quantization parameters' values, the level and the
// pool's thread count), each prepared as prepare_gemm / prepare_qlinear_matmul / prepare_qgemm /
// prepare_quant_matmul_dequant would: a call repeating one of them only allocates its output and
// runs the kernel (no validation, dispatch or widening again; any changed value or shape is a new
// call, checked in full).
class PackedB {
 public:
  PackedB() = default;  // holds nothing: every call refuses it
  bool empty() const { return impl_ == nullptr; }
  std::string op() const;           // the operator it was packed for
  std::size_t bytes() const;        // memory held: panels and column sums
  std::string description() const;  // its B, level, and the kernels and layouts it serves

  struct Impl;  // runtime/src/prepack.h
  explicit PackedB(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl* impl() const { return impl_.get(); }

 private:
  std::shared_ptr<const Impl> impl_;
};

// What prepack_b packs now. The level's kernels of an identity may read B in several layouts (a
// kernel per shape bucket: decode, small batch, prefill, ...), one copy of B each; a process that
// knows the rows (M) its calls will have can pack only the layouts of the kernels those select.
struct PrepackOptions {
  // The rows of A of the calls to come (per batch entry for a batched QLinearMatMul), each 1 or
  // more. Empty: every layout is packed now. Given: only the layouts of the kernels those rows
  // select on the pool's thread count now are packed now; a call whose kernel reads another layout
  // packs it then, once (thread-safe; the PackedB keeps it), so a call never falls back for it.
  // bytes() counts what is packed so far.
  std::vector<int64_t> rows;
};

PackedB prepack_b(const GemmArgs& args, const PrepackOptions& options = {});
PackedB prepack_b(const QLinearMatMulArgs& args, const PrepackOptions& options = {});
PackedB prepack_b(const QGemmArgs& args, const PrepackOptions& options = {});
// QuantMatmulDequant: args.weight packed (from (N, K) under transpose_weight, else (K, N)); read
// besides it: weight_scale's dtype, whether x_scale is given and its dtype, x_quant_mode and
// whether smooth_scale is given (not their values; bias is the call's). The panels and the
// weight's column sums are kept; a call folds the sums into its bias (N values) and copies no
// weight; a call repeating one the PackedB remembers (x's shape, the parameters' values) folds
// nothing again.
PackedB prepack_b(const QuantMatmulDequantArgs& args, const PrepackOptions& options = {});
Tensor gemm(const GemmArgs& args, const PackedB& packed_b, DispatchInfo* info = nullptr);
Tensor qlinear_matmul(const QLinearMatMulArgs& args, const PackedB& packed_b,
                      DispatchInfo* info = nullptr);
Tensor qgemm(const QGemmArgs& args, const PackedB& packed_b, DispatchInfo* info = nullptr);
Tensor quant_matmul_dequant(const QuantMatmulDequantArgs& args, const PackedB& packed_b,
                            DispatchInfo* info = nullptr);

// Prepared calls: the work of a call that does not depend on the data done once — validation,
// the kernel's choice (for the pool's thread count when prepared: prepare again after
// set_num_threads to follow a kernel tuned for the new count), the buffers' description, the
// quantization parameters' widening — so that each run() only calls the kernel on the caller's
// memory: no validation, no dispatch, no strings, no allocation, no output zero-fill (what a
// framework does per inference step; a oneDNN primitive or an XNNPACK operator after its setup work
// the same way). `args` give the shapes, types and attributes (their tensors' values are not kept:
// the prepared QLinearMatMul keeps its scales and zero points, read at preparation); with a PackedB
// the prepacked kernel runs. run() takes dense row-major arrays of the prepared shapes and types
// and is bit for bit what the plain call computes; it may run concurrently on distinct outputs.
// Where no kernel may run (info() says why) run() computes with the reference, still exactly. A
// transposed operand without a PackedB is copied transposed on each run (info() says so), into
// memory the calling thread keeps for its next run.
class PreparedGemm {
 public:
  PreparedGemm() = default;
  // a (M, K) or (K, M) with transA; b (K, N) or (N, K) with transB, the tensor packed when
  // prepared with a PackedB (not read then); c of the prepared C's shape, nullptr when prepared
  // without C; y (M, N). InvalidArgument for a null pointer, or another b than the packed one.
  void run(const void* a, const void* b, const void* c, void* y) const;
  const DispatchInfo& info() const;

  struct Impl;  // runtime/src/prepared.cc
  explicit PreparedGemm(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Impl> impl_;
};
PreparedGemm prepare_gemm(const GemmArgs& args, const PackedB* packed_b = nullptr);

// QLinearMatMul with 2-D a (M, K) and b (K, N); the scales and zero points (per tensor, per row of
// a, per column of b) are those of `args` at preparation.
class PreparedQLinearMatMul {
 public:
  PreparedQLinearMatMul() = default;
  // a (M, K), b (K, N) (the packed tensor with a PackedB: not read then), y (M, N) of the
  // output type. InvalidArgument for a null pointer, or another b than the packed one.
  void run(const void* a, const void* b, void* y) const;
  const DispatchInfo& info() const;

  struct Impl;
  explicit PreparedQLinearMatMul(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Impl> impl_;
};
PreparedQLinearMatMul prepare_qlinear_matmul(const QLinearMatMulArgs& args,
                                             const PackedB* packed_b = nullptr);

// QGemm (com.microsoft); the scales and zero points (per tensor, or per column of b) and alpha are
// those of `args` at preparation, C's shape too (its values are read on each run).
class PreparedQGemm {
 public:
  PreparedQGemm() = default;
  // a (M, K) or (K, M) with transA; b (K, N) or (N, K) with transB, the tensor packed when
  // prepared with a PackedB (not read then); c (int32) of the prepared C's shape, nullptr when
  // prepared without C; y (M, N) of the output type. InvalidArgument for a null pointer, or
  // another b than the packed one.
  void run(const void* a, const void* b, const void* c, void* y) const;
  const DispatchInfo& info() const;

  struct Impl;
  explicit PreparedQGemm(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Impl> impl_;
};
PreparedQGemm prepare_qgemm(const QGemmArgs& args, const PackedB* packed_b = nullptr);

// QuantMatmulDequant; weight_scale, bias, x_scale and smooth_scale (and x_quant_mode,
// transpose_weight) are those of `args` at preparation: their values are kept, and with a PackedB
// the bias the prepacked kernel reads (bias - 128 * the weight's column sums) is folded once.
class PreparedQuantMatmulDequant {
 public:
  PreparedQuantMatmulDequant() = default;
  // x (M, K) float16; weight (N, K) under transpose_weight, else (K, N), int8: the tensor packed
  // when prepared with a PackedB (not read then; without one an (N, K) weight is copied transposed
  // on each run, into memory the calling thread keeps); y (M, N) float16. InvalidArgument for a
  // null pointer, or another weight than the packed one.
  void run(const void* x, const void* weight, void* y) const;
  const DispatchInfo& info() const;

  struct Impl;
  explicit PreparedQuantMatmulDequant(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Impl> impl_;
};
PreparedQuantMatmulDequant prepare_quant_matmul_dequant(const QuantMatmulDequantArgs& args,
                                                        const PackedB* packed_b = nullptr);

// Named-tensor entry point, the runtime's twin of run_reference (same names, attributes, checks).
Tensor run(std::string_view op, const NamedTensors& inputs, const Attributes& attrs,
           DispatchInfo* info = nullptr);

// The levels of kernels linked into this build, best first: one per tuning database (e.g.
// x86-64-linux-avx2-fma-f16c, then x86-64-linux-sse41). Once per process every level's target is
// checked against the CPU; a call runs a kernel of the highest level allowed that this CPU runs
// and that has one for the call's identity (else the next level, else the reference).
struct KernelLevel {
  std::string target;      // Halide target of its kernels, or "none"
  std::string database;    // the tuning database it came from
  std::size_t entries;     // dispatch entries (a kernel serving several buckets has one each)
  bool used;               // calls may run its kernels
  std::string why_unused;  // why not: this CPU lacks a feature, or a lower maximum was chosen
};
std::vector<KernelLevel> kernel_levels();

// The highest level calls may use: a target of kernel_levels(), "none" (every call runs the
// reference) or "" (the default: the best this CPU runs). The environment variable
// MMTUNE_MAX_KERNEL_TARGET sets it for a process (a value naming no level makes calls throw
// InvalidArgument, saying so, until this is called). A level this CPU cannot run is accepted: calls
// take the next one. Returns the previous setting; throws InvalidArgument for a target not linked.
std::string set_max_kernel_target(const std::string& target);

// The kernels calls can run now (the used levels; an identity only at the highest level that has
// it), with the level each belongs to.
struct KernelInfo {
  std::string name;                             // docs/naming.md
  std::string op;                               // ONNX operator name
  std::string generator;                        // Halide generator
  std::map<std::string, std::string> identity;  // generator params defining what it computes
  std::map<std::string, std::string> schedule;  // generator params of its schedule
  std::string bucket;                           // "any", "m 1..3", "m 4.."
  std::string target;                           // Halide target of its level
};
std::vector<KernelInfo> linked_kernel_infos();
// The best level calls use ("none" when they use none).
std::string kernel_target();

}  // namespace runtime
}  // namespace mmtune
