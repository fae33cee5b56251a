// What a PackedB holds (mmtune.h), and how a call with one finds its kernel's panels.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mmtune/mmtune.h"
#include "runtime/host/kernel_identity.h"
#include "runtime/host/packed_b.h"
#include "runtime/src/kernel_table.h"

namespace mmtune::runtime {

struct PackedB::Impl {
  std::string op;
  KernelIdentity identity;                   // the prepacked kernels' (prepacked_b=true)
  std::vector<const IdentityGroup*> groups;  // groups_by_level(identity): found once
  // The B it was packed from: a call must pass this very tensor, unchanged in shape and type.
  const uint8_t* source = nullptr;
  Shape shape;
  DType dtype = DType::kFloat32;
  bool trans_b = false;  // Gemm
  std::string key;       // what fixes it besides B's dtype and shape: "transB=0 contract=strict"
  std::string what;      // "float32 [K,N] transB=0 contract=strict"
  int64_t k = 0, n = 0;  // the canonical B (K, N)
  std::string target;    // the level packed for ("" when none has a prepacked kernel)
  struct Packing {
    PanelLayout layout;
    // Packed at prepack_b (every layout, or those of PrepackOptions::rows' kernels), else by the
    // first call whose kernel reads it (ready_packing_for); empty until then (a packing of a
    // non-empty B is never empty), never changed after.
    mutable Tensor panels;
    bool ready() const { return !panels.bytes.empty(); }
  };
  std::vector<Packing> packings;  // fixed at prepack_b: a Packing's address is stable
  mutable std::mutex pack_mutex;  // guards the packing of a Packing not ready yet
  std::vector<std::pair<const KernelEntry*, std::size_t>> kernels;  // kernel -> its packing
  Tensor column_sums;    // 8-bit integer B: column_sums_mod32
  std::string why_none;  // why no kernel has panels here (packings empty)
  // Packed for one plain call (pack_b_per_call): its panels are packed into this thread's scratch
  // and given back to it when the Impl goes (runtime/host/kernel_memory.h), so that the thread's
  // next such call packs into the same memory.
  bool one_call = false;
  Impl() = default;
  ~Impl();
  // The plain calls made with it, prepared (runtime/src/prepared.cc): a later call of the same
  // signature (shapes, types, attributes, quantization parameters, level) runs the prepared
  // kernel call without validating, dispatching or widening again. At most kMemoEntries, the
  // oldest replaced; they point at this Impl without owning it.
  static constexpr std::size_t kMemoEntries = 4;
  mutable std::mutex memo_mutex;
  mutable std::vector<std::shared_ptr<const void>> memo;
  mutable std::size_t memo_replaced = 0;

  const Packing* packing_for(const KernelEntry* kernel) const;
  // packing_for, packed first if it is not yet, from the caller's B (`source`, which every call
  // with this PackedB passes: packed_for_call checks it first); nullptr where packing_for is.
  const Packing* ready_packing_for(const KernelEntry* kernel) const;
  // Records the tensor `b` it was packed from (the caller's B, as passed) and `key`.
  void set_source(const Tensor& b, std::string packing_key);
};

// Packs `b` (K, N, canonical) for the kernels of `identity` (prepacked_b=true) at the highest
// level calls may use that runs here and has it: every kernel's layout, or with options.rows only
// the layouts of the kernels calls with those rows select (the others packed by the first call that
// needs them). Refuses a row count below 1 (InvalidArgument, naming `op`).
// `one_call`: for one plain call (PackedB::Impl::one_call).
std::shared_ptr<PackedB::Impl> pack_for_kernels(const char* op, KernelIdentity identity,
                                                const Tensor& b, bool dot8, bool with_column_sums,
                                                const PrepackOptions& options,
                                                bool one_call = false);

// Whether a plain call of `plain` (an 8-bit integer product's identity) of m x n x k packs B for
// itself first and runs the prepacked twin: where the best level this CPU runs has prepacked
// kernels of it but no plain ones (the AMX level: its tiles read B in panels), with at least
// kPackPerCallRows rows and kPackPerCallProducts products. Packing costs about 0.4-0.6 ns per
// value of B and 15 us a call; the plain kernels of the level below run 4-13x slower on the
// product (u8.s8 QLinearMatMul on a Xeon with AMX, 1 thread: at 32 x 512 x 512 the packed call
// took 103 us against 151, at 16 x 4096 x 4096 10.3 ms against 10.6, at 128^3 27 against 19).
constexpr int64_t kPackPerCallRows = 32;
constexpr int64_t kPackPerCallProducts = int64_t{1} << 23;
bool pack_b_per_call(const KernelIdentity& plain, int64_t m, int64_t n, int64_t k);
// prepack_b, for one plain call when `one_call` (PackedB::Impl::one_call).
PackedB pack_qlinear_matmul_b(const QLinearMatMulArgs& args, const PrepackOptions& options,
                              bool one_call);
PackedB pack_qgemm_b(const QGemmArgs& args, const PrepackOptions& options, bool one_call);
// What such a call adds to its DispatchInfo's reason.
constexpr const char* kPackedForCallNote = " for this call (plain kernels only at a level below)";

// Why a call with `packed` finds no panels for `kernel` (nullptr: no kernel may run; `reason` is
// the dispatch's).
std::string no_panels_reason(const PackedB::Impl& packed, const KernelEntry* kernel,
                             const std::string& reason);

// The PackedB a call of `op` may use with `b` (the tensor it passes as B), or InvalidArgument
// saying what differs: another operator, B tensor, shape, dtype, or what `what` names.
const PackedB::Impl& packed_for_call(const PackedB& packed, const std::string& op, const Tensor* b,
                                     const std::string& what);

}  // namespace mmtune::runtime
