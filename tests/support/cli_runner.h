// A test fixture that runs the `mmtune` binary in a fresh folder and captures exit code and output.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace mmtune::testing {

struct CliResult {
  int exit_code;
  std::string out, err;
};

// The mmtune binary under test ($MMTUNE_CLI, else the build's).
std::string cli_path();
std::string slurp(const std::filesystem::path& p);

class CliFixture : public ::testing::Test {
 protected:
  void SetUp() override;     // a fresh folder per test
  void TearDown() override;  // removed afterwards

  // Runs a shell command with stdout and stderr captured.
  CliResult sh(const std::string& command);
  // Runs `mmtune <args>`.
  CliResult run(const std::string& args) { return sh("'" + cli_path() + "' " + args); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

}  // namespace mmtune::testing
