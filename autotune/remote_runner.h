// A kernel runner on a target (targets/runner/kernel_runner.c, built by autotune/cross_build.h),
// started through a command template and driven over its standard streams: the executor of the
// kernels `mmtune verify` checks on targets this CPU cannot run (ARM64 and Hexagon under qemu, a
// board over ssh or adb).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autotune/kernel_executor.h"

namespace mmtune {

// The command that starts `exe` on its target: `command` with {exe} replaced by the program's path
// and {args} by its arguments (none today), run by /bin/sh; e.g. "qemu-aarch64 -cpu max {exe}
// {args}", "ssh board {exe} {args}". InvalidArgument when it has no {exe}.
std::string runner_command_line(const std::string& command, const std::string& exe);

class RemoteRunner : public KernelExecutor {
 public:
  // Starts the runner and lists its kernels. `functions` maps a kernel key (KernelKey::to_string)
  // to the function name the runner has it under; the runner's stderr goes to `stderr_log`.
  // InternalError naming the command and the log's end when it does not start or answer.
  RemoteRunner(const std::string& command, const std::string& exe,
               std::map<std::string, std::string> functions, std::string stderr_log);
  ~RemoteRunner() override;
  RemoteRunner(const RemoteRunner&) = delete;
  RemoteRunner& operator=(const RemoteRunner&) = delete;

  void call(const KernelKey& key, const std::vector<KernelArg>& args) override;

  // The functions the runner holds, in its table's order.
  const std::vector<std::string>& kernels() const { return names_; }
  int64_t calls() const { return calls_; }

  // Measuring (repetitions > 0): each call then runs its kernel that many times in a row on the
  // target, between the runner's marks (an instruction counter's start and end, see
  // targets/qemu/insn_count.c) and the target's clock, and adds the runs' nanoseconds to
  // measured_ns() (0 when the target has no clock). 0: plain calls (the default).
  void set_repetitions(int repetitions) { repetitions_ = repetitions; }
  // Nanoseconds and calls measured since the last reset.
  uint64_t measured_ns() const { return measured_ns_; }
  int64_t measured_calls() const { return measured_calls_; }
  void reset_measured() { measured_ns_ = 0, measured_calls_ = 0; }

 private:
  void write_all(const void* data, std::size_t n);
  void read_all(void* data, std::size_t n);
  [[noreturn]] void died(const std::string& what);

  std::string command_line_;
  std::string stderr_log_;
  std::map<std::string, std::string> functions_;
  std::vector<std::string> names_;
  std::map<std::string, uint32_t> index_;
  pid_t pid_ = -1;
  int to_runner_ = -1;
  int from_runner_ = -1;
  int64_t calls_ = 0;
  int repetitions_ = 0;
  uint64_t measured_ns_ = 0;
  int64_t measured_calls_ = 0;
};

}  // namespace mmtune
