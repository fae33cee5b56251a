// Input checks shared by every operator and entry point.
#include "reference/validate.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "reference/broadcast.h"

namespace mmtune {

std::string dtype_list(std::initializer_list<DType> types) {
  std::vector<DType> v(types);
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += i + 1 == v.size() ? " or " : ", ";
    s += dtype_name(v[i]);
  }
  return s;
}

const Tensor& require_present(const std::string& op, const std::string& name, const Tensor* t) {
  if (t == nullptr) invalid(op, "input ", name, " is required but missing");
  require_consistent(op, name, *t);
  return *t;
}

void require_consistent(const std::string& op, const std::string& name, const Tensor& t) {
  int64_t n = checked_numel(t.shape);
  if (n < 0) n = shape_numel(t.shape, op + ": " + name);  // throws, naming the input
  if (t.bytes.size() != static_cast<std::size_t>(n) * dtype_size(t.dtype)) {
    invalid(op, name, " (", describe(t), ") holds ", t.bytes.size(), " bytes but its shape needs ",
            n * static_cast<int64_t>(dtype_size(t.dtype)));
  }
}

void require_dtype(const std::string& op, const std::string& name, const Tensor& t,
                   std::initializer_list<DType> allowed) {
  for (DType d : allowed) {
    if (t.dtype == d) return;
  }
  invalid(op, name, " has dtype ", dtype_name(t.dtype), "; it must be ", dtype_list(allowed));
}

void require_same_dtype(const std::string& op, const std::string& name, const Tensor& t,
                        const std::string& ref_name, const Tensor& ref) {
  if (t.dtype != ref.dtype) {
    invalid(op, name, " has dtype ", dtype_name(t.dtype), " but ", ref_name, " has dtype ",
            dtype_name(ref.dtype), "; they must be the same");
  }
}

void require_rank(const std::string& op, const std::string& name, const Tensor& t, int64_t rank) {
  if (t.rank() != rank) {
    invalid(op, name, " has shape ", shape_str(t.shape), " (rank ", t.rank(),
            "); it must have rank ", rank);
  }
}

void require_single_value(const std::string& op, const std::string& name, const Tensor& t) {
  if (!(t.rank() == 0 || (t.rank() == 1 && t.shape[0] == 1))) {
    invalid(op, name, " has shape ", shape_str(t.shape), "; it must be a scalar or have shape [1]");
  }
}

void require_positive_finite(const std::string& op, const std::string& name, const Tensor& t) {
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double v = float_at(t, i);
    if (!std::isfinite(v) || !(v > 0)) {
      std::ostringstream os;
      os << name;
      if (t.rank() > 0) os << "[flat index " << i << "]";
      invalid(op, os.str(), " = ", v, " (", dtype_name(t.dtype),
              "); scales must be finite and > 0");
    }
  }
}

GemmDims gemm_dims(const std::string& op, const Tensor& a, const Tensor& b, bool trans_a,
                   bool trans_b) {
  require_rank(op, "A", a, 2);
  require_rank(op, "B", b, 2);
  const GemmDims d{trans_a ? a.shape[1] : a.shape[0], trans_a ? a.shape[0] : a.shape[1],
                   trans_b ? b.shape[0] : b.shape[1]};
  const int64_t kb = trans_b ? b.shape[1] : b.shape[0];
  if (d.k != kb) {
    invalid(op, "A has shape ", shape_str(a.shape), trans_a ? " (transA=1)" : "",
            " and B has shape ", shape_str(b.shape), trans_b ? " (transB=1)" : "",
            ": the inner dimensions differ (K=", d.k, " for A, ", kb, " for B)");
  }
  shape_numel({d.m, d.n}, op + ": output");
  return d;
}

void require_broadcast_to_output(const std::string& op, const Tensor& c, int64_t m, int64_t n) {
  if (!broadcasts_to(c.shape, {m, n})) {
    invalid(op, "C has shape ", shape_str(c.shape),
            "; it must broadcast unidirectionally to (M, N) = ", shape_str({m, n}),
            ": (), (1), (N), (1, N), (M, 1) or (M, N)");
  }
}

namespace {

int64_t default_max_output_bytes() {
  if (const char* env = std::getenv("MMTUNE_MAX_OUTPUT_BYTES")) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return v;
    invalid("MMTUNE_MAX_OUTPUT_BYTES", "'", env, "' is not a positive number of bytes");
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return int64_t{1} << 32;  // unknown memory: 4 GiB
  return static_cast<int64_t>(pages) * page / 2;
}

std::atomic<int64_t>& output_limit() {
  static std::atomic<int64_t> limit{0};  // 0: not set by set_max_output_bytes
  return limit;
}

}  // namespace

int64_t max_output_bytes() {
  const int64_t set = output_limit().load();
  if (set > 0) return set;
  static const int64_t from_environment = default_max_output_bytes();
  return from_environment;
}

int64_t set_max_output_bytes(int64_t bytes) {
  if (bytes < 0)
    invalid("set_max_output_bytes", "bytes = ", bytes, "; it must be 0 (default) or positive");
  const int64_t previous = max_output_bytes();
  output_limit().store(bytes);
  return previous;
}

void require_output_fits(const std::string& op, const std::string& name, DType dtype,
                         const Shape& shape) {
  const int64_t numel = shape_numel(shape, op);
  const int64_t size = static_cast<int64_t>(dtype_size(dtype));
  const int64_t limit = max_output_bytes();
  if (numel > limit / size) {
    invalid(op, name, " would be ", dtype_name(dtype), " ", shape_str(shape), " (", numel,
            " elements of ", size, " bytes), more than the output limit of ", limit,
            " bytes (MMTUNE_MAX_OUTPUT_BYTES, default half of physical memory)");
  }
}

}  // namespace mmtune
