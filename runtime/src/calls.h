// The parts of an operator call that do not depend on the data, shared by the plain calls
// (gemm.cc, qlinear_matmul.cc, qgemm.cc, quant_matmul_dequant.cc) and the prepared ones
// (prepared.cc): which kernel runs, and which prepacked panels it reads.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mmtune/mmtune.h"
#include "runtime/host/thread_pool.h"
#include "runtime/src/dispatch.h"
#include "runtime/src/kernel_call.h"
#include "runtime/src/prepack.h"

namespace mmtune::runtime {

// The kernel a valid call runs (nullptr: the reference computes it; `info` says why) and, with a
// PackedB, the panels it reads (nullptr: the plain kernel, packing B itself; info says so). `info`
// may be null: the choice is the same, and no reason text is built.
struct Chosen {
  const KernelEntry* kernel = nullptr;
  const PackedB::Impl::Packing* panels = nullptr;
};
// The choice every operator makes: the kernel of `plain` for (m, n, k) and `buffers` (the call's
// tensors), or with `packed` its prepacked twin and panels (B's dtype `b_type`, named `b_name` in
// the reason), falling back to the plain kernel when the twin has no panels here.
// `plain` makes the plain identity (called only where it is needed: a PackedB's twin has its own).
Chosen choose_for_call(const std::function<KernelIdentity()>& plain, const PackedB::Impl* packed,
                       int64_t m, int64_t n, int64_t k, const std::vector<BufferShape>& buffers,
                       DType b_type, const char* b_name, DispatchInfo* info);

// A plain call's last choices on this thread, for one operator. Without a PackedB the kernel
// depends on what of the call the operator's identity and buffers read (`OpKey`: its types and
// modes), M, N and K, the pool's thread count and the allowed level, nothing else: a call that
// repeats them takes the kernel chosen before, without building its identity or searching the
// levels (about 2 us of a 3 us float32 Gemm call at 64^3). A call with a DispatchInfo chooses
// afresh (its reason is built on the way); a choice is remembered only if the level and the
// thread count did not change while it was made (another thread's set_max_kernel_target or
// set_num_threads).
template <class OpKey>
class ChoiceMemo {
 public:
  struct Key {
    OpKey op;
    int64_t m, n, k;
    int threads;
    std::size_t level;
    bool operator==(const Key& o) const {
      return op == o.op && m == o.m && n == o.n && k == o.k && threads == o.threads &&
             level == o.level;
    }
  };
  const Chosen* find(const Key& key) const {
    for (const Entry& e : entries_)
      if (e.used && e.key == key) return &e.chosen;
    return nullptr;
  }
  void remember(const Key& key, const Chosen& chosen) {
    entries_[next_] = {true, key, chosen};
    next_ = (next_ + 1) % kEntries;
  }

 private:
  static constexpr std::size_t kEntries = 8;
  struct Entry {
    bool used = false;
    Key key{};
    Chosen chosen;
  };
  Entry entries_[kEntries];
  std::size_t next_ = 0;
};

// The plain choice (no PackedB) `choose()` makes, through this thread's memo for `OpKey`.
template <class OpKey, class Choose>
Chosen remembered_choice(const OpKey& op, int64_t m, int64_t n, int64_t k, DispatchInfo* info,
                         Choose&& choose) {
  const std::size_t level = allowed_level_or_invalid();
  if (info || level == kInvalidLevel) return choose();  // kInvalidLevel: choose() throws
  thread_local ChoiceMemo<OpKey> memo;
  const typename ChoiceMemo<OpKey>::Key key{op, m, n, k, host::pool_threads(), level};
  if (const Chosen* c = memo.find(key)) return *c;
  const Chosen chosen = choose();
  if (allowed_level_or_invalid() == level && host::pool_threads() == key.threads)
    memo.remember(key, chosen);
  return chosen;
}

// Gemm: plan = validate_gemm(args), M, N and K not 0.
Chosen choose_gemm(const GemmArgs& args, const GemmPlan& plan, const PackedB::Impl* packed,
                   DispatchInfo* info);
// QLinearMatMul: plan = validate_qlinear_matmul(args), qlinear_matmul_no_kernel(plan) empty.
Chosen choose_qlinear_matmul(const QLinearMatMulArgs& args, const QLinearMatMulPlan& plan,
                             const PackedB::Impl* packed, DispatchInfo* info);

// QGemm: plan = validate_qgemm(args), qgemm_no_kernel(plan) empty.
Chosen choose_qgemm(const QGemmArgs& args, const QGemmPlan& plan, const PackedB::Impl* packed,
                    DispatchInfo* info);

// QuantMatmulDequant: plan = validate_quant_matmul_dequant(args), quant_matmul_dequant_no_kernel
// (plan) empty.
Chosen choose_quant_matmul_dequant(const QuantMatmulDequantArgs& args,
                                   const QuantMatmulDequantPlan& plan, const PackedB::Impl* packed,
                                   DispatchInfo* info);

// The plain calls with a PackedB through its memo (prepared.cc): the output, or nullopt where the
// plain path must compute the call (a PackedB of another operator or another B, whose error it
// reports; a batched or vector QLinearMatMul; a call no kernel runs). A call of a new signature
// is checked as the plain call checks it (same errors, same order) and prepared once.
std::optional<Tensor> gemm_through_memo(const GemmArgs& args, const PackedB& packed_b,
                                        DispatchInfo* info);
std::optional<Tensor> qlinear_matmul_through_memo(const QLinearMatMulArgs& args,
                                                  const PackedB& packed_b, DispatchInfo* info);
std::optional<Tensor> qgemm_through_memo(const QGemmArgs& args, const PackedB& packed_b,
                                         DispatchInfo* info);
std::optional<Tensor> quant_matmul_dequant_through_memo(const QuantMatmulDequantArgs& args,
                                                        const PackedB& packed_b,
                                                        DispatchInfo* info);

// What fixes a PackedB of each operator besides B's dtype and shape (PackedB::Impl::what).
std::string gemm_packing_key(const GemmArgs& args);
std::string qlinear_matmul_packing_key(const QLinearMatMulArgs& args);
std::string qgemm_packing_key(const QGemmArgs& args);
std::string quant_matmul_dequant_packing_key(const QuantMatmulDequantArgs& args);

}  // namespace mmtune::runtime
