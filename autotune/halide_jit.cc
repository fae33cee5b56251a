// JIT plumbing shared by the operators' Halide paths.
#include "autotune/halide_jit.h"

#include <link.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "runtime/host/kernel_memory.h"
#include "runtime/host/thread_pool.h"

namespace mmtune::jit {
namespace {

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The file of the libHalide shared library this process loaded, or "".
std::string loaded_libhalide() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        const std::string file = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (std::filesystem::path(file).filename().string().rfind("libHalide.so", 0) != 0) return 0;
        *static_cast<std::string*>(data) = file;
        return 1;
      },
      &found);
  return found;
}

// Loads an autoscheduler's plugin once per process (it registers itself with Halide).
void load_autoscheduler(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded.count(name) != 0) return;
  Halide::load_plugin(autoscheduler_plugin(name));
  loaded.insert(name);
}

// The generator built without a template, scheduled by key.autoschedule, with the arguments the
// generator's own compile_to_callable would give it (its inputs in declaration order).
Halide::Callable compile_autoscheduled(const KernelKey& key, const Halide::Target& target) {
  const Autoschedule& a = *key.autoschedule;
  load_autoscheduler(a.name);
  const Halide::AutoschedulerParams params(a.name,
                                           {{"parallelism", std::to_string(a.parallelism)}});
  auto gen = Halide::Internal::GeneratorRegistry::create(key.identity.generator,
                                                         Halide::GeneratorContext(target, params));
  MMTUNE_CHECK(gen != nullptr, "generator " << key.identity.generator << " is not linked in");
  gen->set_generatorparam_values(key.generator_params());
  Halide::Pipeline pipeline = gen->build_pipeline();
  (void)pipeline.apply_autoscheduler(target, params);
  std::vector<Halide::Argument> arguments;
  for (const auto& info : gen->arginfos()) {
    if (info.dir != Halide::Internal::ArgInfoDirection::Input) continue;
    for (const Halide::Parameter& p : gen->input_parameter(info.name)) {
      arguments.emplace_back(
          p.name(), p.is_buffer() ? Halide::Argument::InputBuffer : Halide::Argument::InputScalar,
          p.type(), p.dimensions(), p.get_argument_estimates());
    }
  }
  return pipeline.compile_to_callable(arguments, target);
}

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

// The JIT's parallel loops run on the runtime's pool (runtime/host/thread_pool.h), so the tuner
// times candidates as they will run when shipped.
struct JitLoop {
  int (*task)(Halide::JITUserContext*, int, uint8_t*);
  Halide::JITUserContext* ctx;
};

int run_jit_task(void* loop, int i, uint8_t* closure) {
  const JitLoop* l = static_cast<const JitLoop*>(loop);
  return l->task(l->ctx, i, closure);
}

int jit_par_for(Halide::JITUserContext* ctx, int (*task)(Halide::JITUserContext*, int, uint8_t*),
                int min, int extent, uint8_t* closure) {
  JitLoop loop{task, ctx};
  return host::pool_do_par_for(&loop, run_jit_task, min, extent, closure);
}

ErrorContext::ErrorContext() {
  handlers.custom_error = capture_error;
  handlers.custom_do_par_for = jit_par_for;
  // Its allocations on kept blocks too (runtime/host/kernel_memory.h).
  handlers.custom_malloc = [](Halide::JITUserContext*, size_t n) {
    return host::jit_kernel_malloc(n);
  };
  handlers.custom_free = [](Halide::JITUserContext*, void* p) { host::jit_kernel_free(p); };
}

const std::vector<std::string>& autoschedulers() {
  static const std::vector<std::string> names = {"Adams2019", "Mullapudi2016", "Li2018"};
  return names;
}

std::optional<std::string> autoscheduler_name(const std::string& name) {
  for (const std::string& n : autoschedulers()) {
    if (lowercase(n) == lowercase(name)) return n;
  }
  return std::nullopt;
}

std::string autoscheduler_plugin(const std::string& name) {
  const std::optional<std::string> canonical = autoscheduler_name(name);
  if (!canonical) {
    invalid("autoscheduler", "'", name, "' is not one of Adams2019, Mullapudi2016, Li2018");
  }
  const std::string lib = loaded_libhalide();
  if (lib.empty()) {
    invalid("autoscheduler", *canonical,
            ": this process has no libHalide shared library loaded, next to which Halide's "
            "autoscheduler plugins are found");
  }
  // The folder of libHalide as loaded, and of the file it links to.
  std::vector<std::filesystem::path> folders{std::filesystem::path(lib).parent_path()};
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(lib, ec);
  if (!ec) folders.push_back(real.parent_path());
  const std::string file = "libautoschedule_" + lowercase(*canonical) + ".so";
  for (const std::filesystem::path& folder : folders) {
    if (std::filesystem::exists(folder / file, ec)) return (folder / file).string();
  }
  invalid("autoscheduler", *canonical, ": its plugin ", file, " is not next to ", lib);
}

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
  Halide::Callable callable;
  try {
    if (key.autoschedule) {
      callable = compile_autoscheduled(key, Halide::Target(resolved));
    } else {
      auto gen = Halide::Internal::GeneratorRegistry::create(
          key.identity.generator, Halide::GeneratorContext(Halide::Target(resolved)));
      MMTUNE_CHECK(gen != nullptr, "generator " << key.identity.generator << " is not linked in");
      gen->set_generatorparam_values(key.generator_params());
      callable = gen->compile_to_callable();
    }
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
