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
