// Shared helpers of the test suites: where generated vectors and sources live, raw file reading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mmtune::testing {

// $MMTUNE_VECTORS_DIR/<name>: the folder a tests/vectors/gen_<name>.py fixture wrote.
// Fails the test (fatal) if the variable or the folder is missing.
std::string vectors_dir(const std::string& name);
// $MMTUNE_SOURCE_DIR: the project's source tree.
std::string source_dir();
// Whole file as bytes; throws std::runtime_error naming the path when it cannot be read.
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace mmtune::testing

#include <gtest/gtest.h>

#include <functional>

#include "reference/tensor.h"

namespace mmtune {
// GoogleTest prints DType parameters by name (found by argument-dependent lookup).
inline void PrintTo(DType t, std::ostream* os) { *os << dtype_name(t); }
}  // namespace mmtune

namespace mmtune::testing {

// Threads of this process (Linux: /proc/self/task).
int process_threads();

// The message of the InvalidArgument `f` throws, or "(no InvalidArgument)" when it throws none.
std::string invalid_argument_message(const std::function<void()>& f);

// Bit-for-bit equality of dtype, shape and every element (float NaNs must match bit patterns too).
// On failure: the first differing flat and multi-index, both values, the number of mismatches,
// and `context` (case name, seed, params...).
::testing::AssertionResult bit_equal(const Tensor& expected, const Tensor& actual,
                                     const std::string& context = "");
// Same dtype and shape; |actual - expected| <= atol + rtol * |expected| element-wise (decoded to
// double; NaN must match NaN). Reports the worst element.
::testing::AssertionResult all_close(const Tensor& expected, const Tensor& actual, double rtol,
                                     double atol, const std::string& context = "");

}  // namespace mmtune::testing
