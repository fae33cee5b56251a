// `mmtune`: entry point; dispatches to the subcommands and maps errors to exit codes.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "Halide.h"
#include "autotune/cli.h"
#include "reference/error.h"

namespace {

int run_cli(int argc, char** argv) {
  CLI::App app{"mmtune: generates, tunes and verifies matrix-multiplication kernels"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mmtune 0.1.0");
  const std::pair<const char*, std::function<int()>> actions[] = {
      {"run", mmtune::cli::add_run_command(app)},
      {"ops", mmtune::cli::add_ops_command(app)},
      {"autotune", mmtune::cli::add_autotune_command(app)},
      {"db", mmtune::cli::add_db_command(app)},
      {"emit", mmtune::cli::add_emit_command(app)},
      {"bench", mmtune::cli::add_bench_command(app)},
      {"verify", mmtune::cli::add_verify_command(app)},
      {"build-library", mmtune::cli::add_build_library_command(app)},
      {"__tune-worker", mmtune::cli::add_worker_command(app)}};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : mmtune::cli::kExitUsage;
  }
  try {
    for (CLI::App* sub : app.get_subcommands()) {
      for (const auto& [name, action] : actions) {
        if (sub->get_name() == name) return action();
      }
    }
  } catch (const mmtune::InvalidArgument& e) {
    std::cerr << "mmtune: error: " << e.what() << "\n";
    return mmtune::cli::kExitInvalidInput;
  } catch (const std::exception& e) {
    std::cerr << "mmtune: " << e.what() << "\n";
    return mmtune::cli::kExitInternal;
  }
  return mmtune::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // The generator command line of Halide's GenGen over the generators linked in (the child
  // processes of `mmtune verify` compile kernels and runtimes for other targets with it).
  if (argc > 1 && std::string(argv[1]) == "__gengen") {
    try {
      return Halide::Internal::generate_filter_main(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      std::cerr << "mmtune __gengen: " << e.what() << "\n";
      return mmtune::cli::kExitInternal;
    }
  }
  try {
    return run_cli(argc, argv);
  } catch (...) {
    // Building the command line itself failed (e.g. out of memory): nothing is computed or written.
    std::cerr << "mmtune: internal error while reading the command line\n";
    return mmtune::cli::kExitInternal;
  }
}
