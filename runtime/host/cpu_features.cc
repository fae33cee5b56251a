// CPU feature checks against Halide target strings.
#include "runtime/host/cpu_features.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace mmtune {

namespace {

#if defined(__x86_64__) || defined(__i386__)
struct X86Features {
  bool sse41 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512ifma = false, avx512vbmi = false, avx512vnni = false, avx512bf16 = false,
       avxvnni = false;
  // The rest of what LLVM's -mcpu=znver4 (Halide's avx512_zen4) may emit in vector code.
  bool avx512vbmi2 = false, avx512bitalg = false, avx512vpopcntdq = false, gfni = false,
       vaes = false, vpclmulqdq = false;
  // ... and of -mcpu=sapphirerapids (Halide's avx512_sapphirerapids) beyond those.
  bool avx512fp16 = false, amx = false;
  // ... and of -mcpu=znver5 (avx512_zen5): the vector extensions Zen 5 adds to Zen 4's.
  bool avx512vp2intersect = false;
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
    f.avx512vbmi2 = f.avx512f && (c & (1u << 6));
    f.gfni = c & (1u << 8);
    f.vaes = f.avx && (c & (1u << 9));
    f.vpclmulqdq = f.avx && (c & (1u << 10));
    f.avx512bitalg = f.avx512f && (c & (1u << 12));
    f.avx512vpopcntdq = f.avx512f && (c & (1u << 14));
    f.avx512fp16 = f.avx512f && (d & (1u << 23));
    f.avx512vp2intersect = f.avx512f && (d & (1u << 8));
    // bf16, tile, int8; the OS saving the tile configuration and data (XCR0 bits 17, 18); and
    // the process granted the tile data.
    f.amx = (d & (1u << 22)) && (d & (1u << 24)) && (d & (1u << 25)) &&
            (xcr0 & (3ull << 17)) == (3ull << 17) && request_amx();
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
  // tune_<cpu> (e.g. tune_znver3) only tunes instruction selection for a CPU; it needs nothing.
  return kFeatures.count(f) > 0 || f.rfind("tune_", 0) == 0;
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
  const bool cannonlake = skylake && f.avx512ifma && f.avx512vbmi;
  // Halide compiles avx512_zen4 with -mcpu=znver4: every AVX-512 extension Zen 4 has (Sapphire
  // Rapids and Zen 5 have them all too).
  const bool zen4 = cannonlake && f.avx512vnni && f.avx512bf16 && f.avx512vbmi2 && f.avx512bitalg &&
                    f.avx512vpopcntdq && f.gfni && f.vaes && f.vpclmulqdq;
  const std::map<std::string, bool> known = {
      {"sse41", f.sse41},
      {"avx", f.avx},
      {"avx2", f.avx2},
      {"fma", f.fma},
      {"f16c", f.f16c},
      {"avx512", f.avx512f && f.avx512cd},
      {"avx512_skylake", skylake},
      {"avx512_cannonlake", cannonlake},
      {"avx512_zen4", zen4},
      {"avx512_zen5", zen4 && f.avxvnni && f.avx512vp2intersect},
      {"avx512_sapphirerapids", zen4 && f.avxvnni && f.avx512fp16 && f.amx},
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

bool request_amx() {
#if defined(__linux__) && defined(__x86_64__)
  // ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18): fails where the CPU or kernel has no
  // AMX; once granted, every thread of the process may use the tiles.
  static const bool granted = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  return granted;
#else
  return false;
#endif
}

std::optional<std::string> cpu_cannot_run(const std::string& target) {
  static std::mutex mu;
  static std::map<std::string, std::optional<std::string>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(target);
  if (it == cache.end()) it = cache.emplace(target, compute_cannot_run(target)).first;
  return it->second;
}

}  // namespace mmtune
