// Kernel invocation plumbing shared by the operators' adapters.
#include "runtime/src/kernel_call.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <vector>

#include "HalideRuntime.h"
#include "runtime/host/kernel_memory.h"
#include "runtime/host/thread_pool.h"
#include "runtime/src/dispatch.h"

namespace mmtune {

KernelError::KernelError(std::string kernel, int code, const std::string& what)
    : InternalError(what), kernel_(std::move(kernel)), code_(code) {}

namespace runtime {
namespace {

// The live invocations. Halide has one error handler per process; it receives the user context the
// kernel was called with, which is ours only if it is registered here (other Halide code in the
// process may pass anything, or nothing). A call registers in a free slot of a fixed table without
// a lock (a call's hot path: two atomic operations); more concurrent calls than slots go to a
// vector under the mutex, which also serializes the messages' appends (the error path).
struct ErrorRouting {
  static constexpr std::size_t kSlots = 64;
  std::atomic<const KernelCall*> slots[kSlots] = {};
  std::mutex mu;
  std::vector<const KernelCall*> overflow;
  void (*previous)(void*, const char*) = nullptr;

  // The slot index, or kSlots for the overflow vector.
  std::size_t add(const KernelCall* call) {
    for (std::size_t i = 0; i < kSlots; ++i) {
      const KernelCall* expected = nullptr;
      if (slots[i].load(std::memory_order_relaxed) == nullptr &&
          slots[i].compare_exchange_strong(expected, call, std::memory_order_acq_rel))
        return i;
    }
    std::lock_guard<std::mutex> lock(mu);
    overflow.push_back(call);
    return kSlots;
  }
  void remove(const KernelCall* call, std::size_t slot) {
    if (slot < kSlots) {
      slots[slot].store(nullptr, std::memory_order_release);
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    auto it = std::find(overflow.begin(), overflow.end(), call);
    if (it != overflow.end()) {
      *it = overflow.back();
      overflow.pop_back();
    }
  }
  // Whether `p` is a live call (the caller holds mu).
  bool live(const void* p) const {
    for (const auto& s : slots)
      if (s.load(std::memory_order_acquire) == p) return true;
    return std::find(overflow.begin(), overflow.end(), p) != overflow.end();
  }
};

ErrorRouting& routing() {
  static ErrorRouting r;
  return r;
}

void on_halide_error(void* user_context, const char* message) {
  ErrorRouting& r = routing();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (user_context && r.live(user_context)) {
      static_cast<KernelCall*>(user_context)->append(message);
      return;
    }
  }
  if (r.previous) r.previous(user_context, message);
}

// Halide's error handler, its parallel loops on mmtune's pool (runtime/host/thread_pool.h) and its
// allocations on the kept blocks (runtime/host/kernel_memory.h).
void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    routing().previous = halide_set_error_handler(on_halide_error);
    halide_set_custom_do_par_for(host::pool_do_par_for);
    host::install_kernel_memory(halide_set_custom_malloc, halide_set_custom_free);
  });
}

}  // namespace

namespace {
thread_local const KernelEntry* last_called = nullptr;
}  // namespace

const KernelEntry* last_kernel_called() { return last_called; }
void forget_last_kernel_called() { last_called = nullptr; }

KernelCall::KernelCall(const KernelEntry& kernel) : kernel_(kernel) {
  last_called = &kernel;
  install_handlers();
  slot_ = routing().add(this);
}

KernelCall::~KernelCall() { routing().remove(this, slot_); }

void KernelCall::append(const char* message) {
  // Under the routing lock: pool threads may report concurrently.
  if (!message_.empty()) message_ += "; ";
  message_ += message;
  while (!message_.empty() && (message_.back() == '\n' || message_.back() == ' '))
    message_.pop_back();
}

void KernelCall::check(int rc) const {
  if (rc == 0) return;
  std::string message;
  {
    std::lock_guard<std::mutex> lock(routing().mu);
    message = message_;
  }
  std::ostringstream os;
  os << "mmtune runtime: kernel " << kernel_.name << " failed (Halide error " << rc
     << "): " << (message.empty() ? "no message" : message);
  throw KernelError(kernel_.name, rc, os.str());
}

const KernelEntry* choose_kernel(const KernelIdentity& id, int64_t m, int64_t n, int64_t k,
                                 const std::vector<BufferShape>& buffers, DispatchInfo* info,
                                 const std::vector<const IdentityGroup*>* groups) {
  if (info) info->kernel = "reference";
  Selection s = select_linked(id.op, id.params, m, n, k, info != nullptr, groups);
  if (!s.kernel) {
    if (info) info->reason = std::move(s.reason);
    return nullptr;
  }
  for (const BufferShape& b : buffers) {
    if (!fits_halide_buffer(b.shape, b.dtype)) {
      if (info)
        info->reason = "kernel " + std::string(s.kernel->name) + " not run: a " +
                       std::string(dtype_name(b.dtype)) + " " + shape_str(b.shape) +
                       " tensor exceeds the kernels' 32-bit buffers (2^31 bytes)";
      return nullptr;
    }
  }
  if (info) {
    info->kernel = s.kernel->name;
    info->reason = std::move(s.reason);
  }
  return s.kernel;
}

}  // namespace runtime
}  // namespace mmtune
