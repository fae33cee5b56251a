// Calling a linked kernel: the per-call error capture behind Halide's error handler, the check that
// this CPU runs the kernels' target, and the identity a call needs.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "mmtune/mmtune.h"
#include "reference/tensor.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/cpu_features.h"
#include "runtime/host/kernel_identity.h"
#include "runtime/src/kernel_table.h"

namespace mmtune::runtime {

// One kernel invocation. Its user_context() goes to the kernel; Halide's error handler (installed
// once, chained to the previous one for other Halide code in the process) appends the messages of
// that invocation here, from whichever thread of the pool raised them. check() throws KernelError
// naming the kernel when the kernel returned non-zero.
class KernelCall {
 public:
  explicit KernelCall(const KernelEntry& kernel);
  ~KernelCall();
  KernelCall(const KernelCall&) = delete;
  KernelCall& operator=(const KernelCall&) = delete;

  void* user_context() { return this; }
  void check(int rc) const;

  // Called by the error handler.
  void append(const char* message);

 private:
  const KernelEntry& kernel_;
  std::size_t slot_;  // where it is registered for the error handler
  std::string message_;
};

// The kernel of this thread's latest KernelCall (nullptr before any, or after forget_last_kernel_
// called()): which kernel a call made without a DispatchInfo ran, for the tests.
const KernelEntry* last_kernel_called();
void forget_last_kernel_called();

// A buffer a kernel call would take: a dense tensor of `shape` and `dtype`.
struct BufferShape {
  Shape shape;
  DType dtype;
};

// The kernel that computes `id` for an (m, n, k) product, after the checks every operator shares
// (the target runs on this CPU, the tensors fit 32-bit buffers); nullptr when none may run. Fills
// `info`, where given, with the kernel's name or "reference" and the reason (a call without one
// builds no text). `groups`, where given, is groups_by_level(id.op, id.params).
const KernelEntry* choose_kernel(const KernelIdentity& id, int64_t m, int64_t n, int64_t k,
                                 const std::vector<BufferShape>& buffers, DispatchInfo* info,
                                 const std::vector<const IdentityGroup*>* groups = nullptr);

}  // namespace mmtune::runtime
