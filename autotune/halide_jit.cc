// JIT plumbing shared by the operators' Halide paths.
#include "autotune/halide_jit.h"

#include <mutex>
#include <sstream>

#include "reference/broadcast.h"

namespace mmtune {
namespace jit {

halide_type_t halide_type(DType t) {
  switch (t) {
    case DType::kInt8: return halide_type_t(halide_type_int, 8);
    case DType::kUInt8: return halide_type_t(halide_type_uint, 8);
    case DType::kInt16: return halide_type_t(halide_type_int, 16);
    case DType::kUInt16: return halide_type_t(halide_type_uint, 16);
    case DType::kInt32: return halide_type_t(halide_type_int, 32);
    case DType::kUInt32: return halide_type_t(halide_type_uint, 32);
    case DType::kInt64: return halide_type_t(halide_type_int, 64);
    case DType::kUInt64: return halide_type_t(halide_type_uint, 64);
    case DType::kFloat16: return halide_type_t(halide_type_float, 16);
    case DType::kBFloat16: return halide_type_t(halide_type_bfloat, 16);
    case DType::kFloat32: return halide_type_t(halide_type_float, 32);
    case DType::kFloat64: return halide_type_t(halide_type_float, 64);
    default: return halide_type_t(halide_type_uint, 8);  // float8: bit patterns, decoded in the pipeline
  }
}

// The generator-parameter spelling of a dtype ("float32", "uint8", ...); float8 travels as uint8.
std::string gp_type(DType t) { return is_float8(t) ? "uint8" : dtype_name(t); }

// A Halide view of `t` read as the row-major `view` shape; `t.shape` broadcasts to it (missing or
// size-1 dims get stride 0). Halide's dims are in reverse order (innermost first).
Halide::Runtime::Buffer<void> view(const Tensor& t, const Shape& shape) {
  // Dense strides for a tensor read as its own shape (size-1 dims keep a real stride, which the
  // kernels' stride-1 constraint on the innermost dim needs); zero strides where it broadcasts.
  std::vector<int64_t> strides = broadcast_strides(t.shape, shape);
  if (t.shape == shape) {
    int64_t s = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
      strides[d] = s;
      s *= shape[d];
    }
  }
  std::vector<halide_dimension_t> dims(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::size_t hd = shape.size() - 1 - d;
    dims[hd] = halide_dimension_t(0, static_cast<int32_t>(shape[d]), static_cast<int32_t>(strides[d]));
  }
  return Halide::Runtime::Buffer<void>(halide_type(t.dtype), const_cast<uint8_t*>(t.bytes.data()),
                                       static_cast<int>(dims.size()), dims.data());
}

namespace {
void capture_error(Halide::JITUserContext* ctx, const char* msg) {
  static_cast<ErrorContext*>(ctx)->message += msg;
}
}  // namespace

ErrorContext::ErrorContext() { handlers.custom_error = capture_error; }

Halide::Target resolve_target(const std::string& t) {
  return t == "host" ? Halide::get_host_target() : Halide::Target(t);
}

namespace {
struct JitCache {
  std::mutex mu;
  std::map<std::string, Halide::Callable> kernels;
};
JitCache& cache() {
  static JitCache c;
  return c;
}
}  // namespace

std::size_t cache_size() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().kernels.size();
}

Halide::Callable compile(const KernelKey& key, const std::string& target) {
  const std::string id = key.to_string() + " target=" + target;
  JitCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.kernels.find(id);
    if (it != c.kernels.end()) return it->second;
  }
  // Compiling may take a while: do it outside the lock (two threads may compile the same kernel;
  // the first one stored wins).
  auto gen = Halide::Internal::GeneratorRegistry::create(key.generator,
                                                         Halide::GeneratorContext(resolve_target(target)));
  MMTUNE_CHECK(gen != nullptr, "generator " << key.generator << " is not linked in");
  Halide::Callable callable;
  try {
    gen->set_generatorparam_values(key.params);
    callable = gen->compile_to_callable();
  } catch (const Halide::Error& e) {
    throw InternalError("mmtune: compiling " + key.to_string() + " for " + target + " failed: " + e.what());
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

}  // namespace jit


std::string KernelKey::to_string() const {
  std::ostringstream os;
  os << generator;
  for (const auto& [k, v] : params) os << " " << k << "=" << v;
  return os.str();
}

}  // namespace mmtune
