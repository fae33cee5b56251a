// Operator variants through Halide's JIT: argument mapping, kernel cache, error capture.
#include "autotune/halide_ops.h"

#include <mutex>
#include <sstream>

#include "Halide.h"
#include "reference/broadcast.h"
#include "schedules/target_info.h"

namespace mmtune {
namespace {

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

struct ErrorContext : Halide::JITUserContext {
  std::string message;
};

void capture_error(Halide::JITUserContext* ctx, const char* msg) {
  static_cast<ErrorContext*>(ctx)->message += msg;
}

Halide::Target resolve_target(const std::string& t) {
  return t == "host" ? Halide::get_host_target() : Halide::Target(t);
}

struct JitCache {
  std::mutex mu;
  std::map<std::string, Halide::Callable> kernels;
};
JitCache& cache() {
  static JitCache c;
  return c;
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

void add_schedule_params(KernelKey& key, const HalideVariant& v) {
  for (const auto& [k, val] : v.schedule.generator_params()) key.params[k] = val;
}

}  // namespace

std::string host_target() { return Halide::get_host_target().to_string(); }

std::string KernelKey::to_string() const {
  std::ostringstream os;
  os << generator;
  for (const auto& [k, v] : params) os << " " << k << "=" << v;
  return os.str();
}

std::size_t jit_cache_size() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().kernels.size();
}

KernelKey gemm_kernel_key(const GemmArgs& args, const HalideVariant& v) {
  KernelKey key{"mmtune_gemm", {}};
  const std::string t = gp_type(args.a->dtype);
  key.params = {{"A.type", t},
                {"B.type", t},
                {"C.type", t},
                {"Y.type", t},
                {"trans_a", args.trans_a ? "true" : "false"},
                {"trans_b", args.trans_b ? "true" : "false"},
                {"has_c", args.c ? "true" : "false"},
                {"contract", to_string(args.contract)}};
  add_schedule_params(key, v);
  return key;
}

Tensor gemm_halide(const GemmArgs& args, const HalideVariant& v) {
  const GemmPlan plan = validate_gemm(args);
  const schedules::TargetInfo ti = schedules::target_info(v.target == "host" ? host_target() : v.target);
  const int acc_bits = is_float(args.a->dtype) ? (args.a->dtype == DType::kFloat64 ? 64 : 32)
                                               : static_cast<int>(dtype_size(args.a->dtype) * 8);
  if (auto why = v.schedule.validate(ti, acc_bits)) invalid("Gemm", "schedule: ", *why);
  Tensor y(args.a->dtype, {plan.m, plan.n});
  if (y.numel() == 0) return y;
  const KernelKey key = gemm_kernel_key(args, v);
  Halide::Callable kernel = compile(key, v.target);
  const Tensor dummy(args.a->dtype, {});
  // K = 0 leaves A and B empty: give Halide a 1-element buffer it never reads.
  auto a = view(*args.a, args.a->shape);
  auto b = view(*args.b, args.b->shape);
  auto c = args.c ? view(*args.c, {plan.m, plan.n}) : view(dummy, {1, 1});
  auto out = view(y, y.shape);
  ErrorContext ctx;
  ctx.handlers.custom_error = capture_error;
  check(kernel(static_cast<Halide::JITUserContext*>(&ctx), a, b, c, args.alpha, args.beta, out), ctx, key);
  return y;
}

Tensor run_halide(std::string_view op_name, const NamedTensors& in, const Attributes& attrs,
                  const HalideVariant& v) {
  const std::string op = find_operator(op_name).name;
  if (op == "Gemm") return gemm_halide(gemm_args(in, attrs), v);
  invalid("mmtune", "operator ", op, " has no Halide implementation yet");
}

}  // namespace mmtune
