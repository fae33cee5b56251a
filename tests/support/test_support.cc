// Shared helpers of the test suites.
#include "tests/support/test_support.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace mmtune::testing {
namespace {

// The environment (set by ctest) wins; running a test binary by hand falls back to the build's
// paths.
std::string env(const char* name) {
  const char* v = std::getenv(name);
  if ((v == nullptr || *v == '\0') && std::string(name) == "MMTUNE_SOURCE_DIR")
    v = MMTUNE_SOURCE_DIR_DEFAULT;
  if ((v == nullptr || *v == '\0') && std::string(name) == "MMTUNE_VECTORS_DIR")
    v = MMTUNE_VECTORS_DIR_DEFAULT;
  if (v == nullptr || *v == '\0') {
    throw std::runtime_error(std::string("environment variable ") + name +
                             " is not set: run the tests through ctest");
  }
  return v;
}

}  // namespace

std::string vectors_dir(const std::string& name) {
  std::string dir = env("MMTUNE_VECTORS_DIR") + "/" + name;
  if (!std::filesystem::is_directory(dir)) {
    throw std::runtime_error("vector folder " + dir +
                             " is missing: its generator fixture (ctest -R vectors_" + name +
                             ") did not run or failed");
  }
  return dir;
}

std::string source_dir() { return env("MMTUNE_SOURCE_DIR"); }

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace mmtune::testing

#include <cmath>
#include <cstring>
#include <sstream>

#include "reference/error.h"

namespace mmtune::testing {
namespace {

std::string multi_index(const Shape& shape, int64_t flat) {
  Shape idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return shape_str(idx);
}

std::string value_str(const Tensor& t, int64_t i) {
  std::ostringstream os;
  os.precision(17);
  if (is_integer(t.dtype)) {
    if (t.dtype == DType::kUInt64) {
      os << t.data<uint64_t>()[i];
    } else {
      os << int_at(t, i);
    }
  } else {
    os << float_at(t, i);
    const std::size_t sz = dtype_size(t.dtype);
    uint64_t bits = 0;
    std::memcpy(&bits, t.bytes.data() + i * sz, sz);
    os << " (0x" << std::hex << bits << ")";
  }
  return os.str();
}

::testing::AssertionResult same_layout(const Tensor& e, const Tensor& a,
                                       const std::string& context) {
  if (e.dtype != a.dtype || e.shape != a.shape) {
    return ::testing::AssertionFailure() << "expected " << describe(e) << ", got " << describe(a)
                                         << (context.empty() ? "" : "; ") << context;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

::testing::AssertionResult bit_equal(const Tensor& expected, const Tensor& actual,
                                     const std::string& context) {
  if (auto r = same_layout(expected, actual, context); !r) return r;
  const std::size_t sz = dtype_size(expected.dtype);
  const int64_t n = expected.numel();
  int64_t mismatches = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(expected.bytes.data() + i * sz, actual.bytes.data() + i * sz, sz) != 0) {
      if (first < 0) first = i;
      ++mismatches;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << n << " elements differ; first at flat index " << first << " = "
         << multi_index(expected.shape, first) << " of " << describe(expected) << ": expected "
         << value_str(expected, first) << ", actual " << value_str(actual, first)
         << (context.empty() ? "" : "; ") << context;
}

::testing::AssertionResult all_close(const Tensor& expected, const Tensor& actual, double rtol,
                                     double atol, const std::string& context) {
  if (auto r = same_layout(expected, actual, context); !r) return r;
  const int64_t n = expected.numel();
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = is_integer(expected.dtype) ? static_cast<double>(int_at(expected, i))
                                                : float_at(expected, i);
    const double a =
        is_integer(actual.dtype) ? static_cast<double>(int_at(actual, i)) : float_at(actual, i);
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) != std::isnan(a)) {
        ++bad;
        if (worst < 0) worst = i;
      }
      continue;
    }
    const double excess = std::fabs(a - e) - (atol + rtol * std::fabs(e));
    if (excess > 0 || (std::isinf(e) && a != e)) {
      ++bad;
      if (worst < 0 || excess > worst_excess) {
        worst = i;
        worst_excess = excess;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << n << " elements outside atol " << atol << " + rtol " << rtol
         << "; worst at " << multi_index(expected.shape, worst) << ": expected "
         << value_str(expected, worst) << ", actual " << value_str(actual, worst)
         << (context.empty() ? "" : "; ") << context;
}

int process_threads() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.exists();
  return n;
}

std::string invalid_argument_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

}  // namespace mmtune::testing
