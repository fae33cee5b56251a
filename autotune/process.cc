// Child processes of the command line.
#include "autotune/process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>

#include "reference/error.h"

namespace mmtune {

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  MMTUNE_CHECK(n > 0, "cannot read /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

// The last `n` lines of a log, indented, for an error message.
std::string log_tail(const std::string& log, std::size_t n) {
  std::ifstream in(log);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > n) lines.pop_front();
  }
  std::string text;
  for (const std::string& line : lines) text += "\n  " + line;
  return text;
}

// Runs argv (argv[0] a path) with stdin from /dev/null and stdout and stderr into `log`; the exit
// status, or -1 when it did not exit (a signal).
int run_logged(const std::vector<std::string>& argv, const std::string& log) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  std::string line = "$";
  for (const std::string& a : argv) line += " " + a;
  line += "\n";
  (void)!::write(fd, line.data(), line.size());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return -1;
  }
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    // An inherited DESTDIR would send the install somewhere under it instead of the prefix.
    ::unsetenv("DESTDIR");
    ::execv(args[0], args.data());
    const std::string why = std::string("cannot run ") + args[0] + ": " + std::strerror(errno);
    (void)!::write(2, why.data(), why.size());
    std::_Exit(127);
  }
  ::close(fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace mmtune
