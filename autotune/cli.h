// The `mmtune` command line: subcommands register on a CLI11 app and run after parsing.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace mmtune::cli {

// Each returns the action to run once the command line has been parsed; the action returns the
// process exit code.
std::function<int()> add_run_command(CLI::App& app);
std::function<int()> add_ops_command(CLI::App& app);
// autotune/cli_autotune.cc: `autotune`, `db best|merge`, `emit`, and the tuner's hidden worker.
std::function<int()> add_autotune_command(CLI::App& app);
std::function<int()> add_db_command(CLI::App& app);
std::function<int()> add_emit_command(CLI::App& app);
std::function<int()> add_worker_command(CLI::App& app);
// autotune/cli_bench.cc: `bench`.
std::function<int()> add_bench_command(CLI::App& app);
// autotune/cli_verify.cc: `verify`.
std::function<int()> add_verify_command(CLI::App& app);
std::function<int()> add_build_library_command(CLI::App& app);

// Exit codes shared by every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitInvalidInput = 1;  // a user mistake: bad file, dtype, shape, attribute...
constexpr int kExitUsage = 2;         // malformed command line
constexpr int kExitInternal = 3;      // a bug in mmtune
constexpr int kExitMismatch = 4;      // `mmtune verify`: a kernel's output differed or it failed

}  // namespace mmtune::cli
