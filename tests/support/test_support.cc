// Shared helpers of the test suites.
#include "tests/support/test_support.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace mmtune::testing {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
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
    throw std::runtime_error("vector folder " + dir + " is missing: its generator fixture (ctest -R vectors_" +
                             name + ") did not run or failed");
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
