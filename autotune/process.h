// Child processes of the command line: this program's own path, a command run with its output
// into a log, and the end of such a log for an error message.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mmtune {

// The path of this executable (/proc/self/exe).
std::string self_exe();

// Runs argv (argv[0] a path) with stdin from /dev/null and stdout and stderr into `log` (its first
// line the command); the exit status, or -1 when it did not exit (a signal) or could not start.
int run_logged(const std::vector<std::string>& argv, const std::string& log);

// The last `n` lines of a log, each on a new line indented by two spaces, for an error message.
std::string log_tail(const std::string& log, std::size_t n);

}  // namespace mmtune
