// Kernel invocation plumbing shared by the operators' adapters.
#include "runtime/src/kernel_call.h"

#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "HalideRuntime.h"

namespace mmtune {

KernelError::KernelError(std::string kernel, int code, const std::string& what)
    : InternalError(what), kernel_(std::move(kernel)), code_(code) {}

namespace runtime {
namespace {

// The live invocations. Halide has one error handler per process; it receives the user context the
// kernel was called with, which is ours only if it is registered here (other Halide code in the
// process may pass anything, or nothing).
struct ErrorRouting {
  std::mutex mu;
  std::set<const KernelCall*> live;
  void (*previous)(void*, const char*) = nullptr;
};

ErrorRouting& routing() {
  static ErrorRouting r;
  return r;
}

void on_halide_error(void* user_context, const char* message) {
  ErrorRouting& r = routing();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.live.find(static_cast<const KernelCall*>(user_context));
    if (it != r.live.end()) {
      const_cast<KernelCall*>(*it)->append(message);
      return;
    }
  }
  if (r.previous) r.previous(user_context, message);
}

void install_error_handler() {
  static std::once_flag once;
  std::call_once(once, [] { routing().previous = halide_set_error_handler(on_halide_error); });
}

}  // namespace

KernelCall::KernelCall(const KernelEntry& kernel) : kernel_(kernel) {
  install_error_handler();
  std::lock_guard<std::mutex> lock(routing().mu);
  routing().live.insert(this);
}

KernelCall::~KernelCall() {
  std::lock_guard<std::mutex> lock(routing().mu);
  routing().live.erase(this);
}

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

namespace {

#if defined(__x86_64__) || defined(__i386__)
struct X86Features {
  bool sse41 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512ifma = false, avx512vbmi = false, avx512vnni = false, avx512bf16 = false,
       avxvnni = false;
};

X86Features detect_x86() {
  X86Features f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.sse41 = c & (1u << 19);
  const bool osxsave = c & (1u << 27);
  uint64_t xcr0 = 0;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
  const bool ymm = (xcr0 & 0x6) == 0x6;    // the OS saves SSE and AVX state
  const bool zmm = (xcr0 & 0xE6) == 0xE6;  // ... and the AVX-512 state
  f.avx = ymm && (c & (1u << 28));
  f.fma = f.avx && (c & (1u << 12));
  f.f16c = f.avx && (c & (1u << 29));
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = f.avx && (b & (1u << 5));
    f.avx512f = zmm && (b & (1u << 16));
    f.avx512dq = f.avx512f && (b & (1u << 17));
    f.avx512ifma = f.avx512f && (b & (1u << 21));
    f.avx512cd = f.avx512f && (b & (1u << 28));
    f.avx512bw = f.avx512f && (b & (1u << 30));
    f.avx512vl = f.avx512f && (b & (1u << 31));
    f.avx512vbmi = f.avx512f && (c & (1u << 1));
    f.avx512vnni = f.avx512f && (c & (1u << 11));
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avxvnni = f.avx2 && (a & (1u << 4));
    f.avx512bf16 = f.avx512f && (a & (1u << 5));
  }
  return f;
}
#endif

// Halide target features that do not name instructions.
bool is_code_generation_feature(const std::string& f) {
  static const std::set<std::string> kFeatures = {"user_context",
                                                  "no_asserts",
                                                  "no_bounds_query",
                                                  "no_runtime",
                                                  "large_buffers",
                                                  "strict_float",
                                                  "profile",
                                                  "debug",
                                                  "jit",
                                                  "trace_loads",
                                                  "trace_stores",
                                                  "trace_realizations",
                                                  "trace_pipeline",
                                                  "embed_bitcode",
                                                  "enable_llvm_loop_opt",
                                                  "disable_llvm_loop_opt",
                                                  "c_plus_plus_name_mangling",
                                                  "profile_by_timer",
                                                  "tsan",
                                                  "asan",
                                                  "msan",
                                                  "sanitizer_coverage",
                                                  "semihosting"};
  return kFeatures.count(f) > 0;
}

std::optional<std::string> compute_cannot_run(const std::string& target) {
  if (target == "none") return "this build has no kernels";
  std::vector<std::string> parts;
  std::stringstream ss(target);
  for (std::string p; std::getline(ss, p, '-');) parts.push_back(p);
  if (parts.size() < 3) return "target '" + target + "' is not arch-bits-os[-features]";
#if defined(__x86_64__)
  if (parts[0] != "x86" || parts[1] != "64")
    return "the kernels are for " + target + ", this is an x86-64 CPU";
  const X86Features f = detect_x86();
  const bool skylake = f.avx512f && f.avx512cd && f.avx512bw && f.avx512dq && f.avx512vl;
  const std::map<std::string, bool> known = {
      {"sse41", f.sse41},
      {"avx", f.avx},
      {"avx2", f.avx2},
      {"fma", f.fma},
      {"f16c", f.f16c},
      {"avx512", f.avx512f && f.avx512cd},
      {"avx512_skylake", skylake},
      {"avx512_cannonlake", skylake && f.avx512ifma && f.avx512vbmi},
      {"avx512_sapphirerapids",
       skylake && f.avx512ifma && f.avx512vbmi && f.avx512vnni && f.avx512bf16 && f.avxvnni},
      {"avxvnni", f.avxvnni},
  };
  for (std::size_t i = 3; i < parts.size(); ++i) {
    if (is_code_generation_feature(parts[i])) continue;
    auto it = known.find(parts[i]);
    if (it == known.end())
      return "mmtune cannot confirm that this CPU has " + parts[i] + " (target " + target + ")";
    if (!it->second) return "this CPU lacks " + parts[i] + " (target " + target + ")";
  }
  return std::nullopt;
#else
  return "the runtime checks CPU features on x86-64 only; target " + target + " is not confirmed";
#endif
}

}  // namespace

std::optional<std::string> cpu_cannot_run(const std::string& target) {
  static std::mutex mu;
  static std::map<std::string, std::optional<std::string>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(target);
  if (it == cache.end()) it = cache.emplace(target, compute_cannot_run(target)).first;
  return it->second;
}

bool fits_halide_buffer(const Shape& shape, DType t) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  int64_t bytes = static_cast<int64_t>(dtype_size(t));
  for (int64_t d : shape) {
    if (d > kMax) return false;
    if (d > 0 && bytes > kMax / d) return false;
    bytes *= d;
  }
  return true;
}

const KernelEntry* choose_kernel(const KernelIdentity& id, int64_t m, int64_t n, int64_t k,
                                 const std::vector<BufferShape>& buffers, DispatchInfo& info) {
  info.kernel = "reference";
  const KernelTable& table = linked_kernels();
  const Selection s = select_kernel(table, id.op, id.params, m, n, k);
  if (!s.kernel) {
    info.reason = s.reason;
    return nullptr;
  }
  if (auto why = cpu_cannot_run(table.target)) {
    info.reason = "kernel " + std::string(s.kernel->name) + " not run: " + *why;
    return nullptr;
  }
  for (const BufferShape& b : buffers) {
    if (!fits_halide_buffer(b.shape, b.dtype)) {
      info.reason = "kernel " + std::string(s.kernel->name) + " not run: a " +
                    std::string(dtype_name(b.dtype)) + " " + shape_str(b.shape) +
                    " tensor exceeds the kernels' 32-bit buffers (2^31 bytes)";
      return nullptr;
    }
  }
  info.kernel = s.kernel->name;
  info.reason = s.reason;
  return s.kernel;
}

}  // namespace runtime
}  // namespace mmtune
