// JIT plumbing shared by the operators' Halide paths.
#include "autotune/halide_jit.h"

#include <map>
#include <mutex>

namespace mmtune::jit {
namespace {

void capture_error(Halide::JITUserContext* ctx, const char* msg) {
  static_cast<ErrorContext*>(ctx)->message += msg;
}

struct JitCache {
  std::mutex mu;
  std::map<std::string, Halide::Callable> kernels;
};

JitCache& cache() {
  static JitCache c;
  return c;
}

}  // namespace

ErrorContext::ErrorContext() { handlers.custom_error = capture_error; }

std::size_t cache_size() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().kernels.size();
}

Halide::Callable compile(const KernelKey& key, const std::string& target) {
  const std::string resolved = resolve_target(target);
  const std::string id = key.to_string() + " target=" + resolved;
  JitCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.kernels.find(id);
    if (it != c.kernels.end()) return it->second;
  }
  // One compile at a time, outside the cache's lock (calls of kernels already compiled go on).
  // Halide's generator machinery reads process-wide tables it builds lazily (the type-name map of
  // GeneratorParam<Type>, the generator registry); ThreadSanitizer reports those first uses racing
  // when two threads compile at once, so compiles are serialized. The tuner compiles in parallel
  // in separate processes instead.
  static std::mutex compile_mu;
  std::lock_guard<std::mutex> compiling(compile_mu);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.kernels.find(id);
    if (it != c.kernels.end()) return it->second;  // another thread compiled it meanwhile
  }
  auto gen = Halide::Internal::GeneratorRegistry::create(
      key.identity.generator, Halide::GeneratorContext(Halide::Target(resolved)));
  MMTUNE_CHECK(gen != nullptr, "generator " << key.identity.generator << " is not linked in");
  Halide::Callable callable;
  try {
    gen->set_generatorparam_values(key.generator_params());
    callable = gen->compile_to_callable();
  } catch (const Halide::Error& e) {
    throw InternalError("mmtune: compiling " + key.to_string() + " for " + resolved +
                        " failed: " + e.what());
  }
  std::lock_guard<std::mutex> lock(c.mu);
  return c.kernels.emplace(id, callable).first->second;
}

void check(int rc, const ErrorContext& ctx, const KernelKey& key) {
  if (rc != 0) {
    throw InternalError("mmtune: Halide kernel " + key.to_string() + " failed (code " +
                        std::to_string(rc) + "): " + ctx.message);
  }
}

}  // namespace mmtune::jit
