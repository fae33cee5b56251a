// The mmtune-binary test fixture.
#include "tests/support/cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace mmtune::testing {

namespace fs = std::filesystem;

std::string cli_path() {
  const char* v = std::getenv("MMTUNE_CLI");
  return v && *v ? v : MMTUNE_CLI_DEFAULT;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void CliFixture::SetUp() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "_" + info->name();
  for (char& ch : name) {
    if (ch == '/') ch = '_';
  }
  dir_ = fs::temp_directory_path() / ("mmtune_cli_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
}

void CliFixture::TearDown() { fs::remove_all(dir_); }

CliResult CliFixture::sh(const std::string& command) {
  const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
  const std::string cmd = command + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

}  // namespace mmtune::testing
