// The kernel runner's protocol, host side (targets/runner/kernel_runner.c describes it).
#include "autotune/remote_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "autotune/process.h"
#include "reference/error.h"

namespace mmtune {
namespace {

constexpr uint32_t kMagic = 0x52544d4d;  // "MMTR"
constexpr uint32_t kList = 1, kCall = 2, kMeasure = 3, kQuit = 0;

// A word in single quotes for /bin/sh.
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

void append(std::vector<uint8_t>& out, const void* data, std::size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  out.insert(out.end(), p, p + n);
}
template <class T>
void append_value(std::vector<uint8_t>& out, T v) {
  append(out, &v, sizeof v);
}

// The lowest element of a buffer relative to its origin (<= 0) and the elements of its span.
struct Span {
  int64_t lo = 0;
  int64_t elements = 0;
};
Span span_of(const halide_buffer_t& b) {
  Span s;
  int64_t hi = 0;
  for (int d = 0; d < b.dimensions; ++d) {
    if (b.dim[d].extent <= 0) return {0, 0};
    const int64_t reach = int64_t{b.dim[d].extent - 1} * b.dim[d].stride;
    (reach < 0 ? s.lo : hi) += reach;
  }
  s.elements = hi - s.lo + 1;
  return s;
}

}  // namespace

std::string runner_command_line(const std::string& command, const std::string& exe) {
  const std::size_t at = command.find("{exe}");
  if (at == std::string::npos) {
    invalid("verify", "--runner '", command,
            "' has no {exe}, where the runner program's path goes (e.g. 'qemu-aarch64 -cpu max "
            "{exe} {args}')");
  }
  std::string line = command.substr(0, at) + shell_quote(exe) + command.substr(at + 5);
  const std::size_t args = line.find("{args}");
  if (args != std::string::npos) line.erase(args, 6);
  return line;
}

RemoteRunner::RemoteRunner(const std::string& command, const std::string& exe,
                           std::map<std::string, std::string> functions, std::string stderr_log)
    : command_line_(runner_command_line(command, exe)),
      stderr_log_(std::move(stderr_log)),
      functions_(std::move(functions)) {
  // A runner that dies mid-request makes writes fail with EPIPE instead of killing this process.
  ::signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  MMTUNE_CHECK(::pipe2(in, O_CLOEXEC) == 0 && ::pipe2(out, O_CLOEXEC) == 0,
               "cannot create the runner's pipes: " << std::strerror(errno));
  const int log = ::open(stderr_log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  MMTUNE_CHECK(log >= 0, "cannot write " << stderr_log_ << ": " << std::strerror(errno));
  const std::string first = "$ " + command_line_ + "\n";
  (void)!::write(log, first.data(), first.size());
  pid_ = ::fork();
  MMTUNE_CHECK(pid_ >= 0, "cannot start the runner: " << std::strerror(errno));
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(log, 2);
    ::execl("/bin/sh", "sh", "-c", command_line_.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(log);
  to_runner_ = in[1];
  from_runner_ = out[0];

  std::vector<uint8_t> req;
  append_value(req, kMagic);
  append_value(req, kList);
  write_all(req.data(), req.size());
  uint32_t magic = 0, count = 0;
  read_all(&magic, 4);
  if (magic != kMagic) died("answered the kernel list without the protocol's magic number");
  read_all(&count, 4);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t n = 0, nargs = 0;
    read_all(&n, 4);
    std::string name(n, '\0');
    read_all(name.data(), n);
    read_all(&nargs, 4);
    index_[name] = i;
    names_.push_back(name);
  }
}

RemoteRunner::~RemoteRunner() {
  if (to_runner_ >= 0) {
    const uint32_t quit[2] = {kMagic, kQuit};
    (void)!::write(to_runner_, quit, sizeof quit);
    ::close(to_runner_);
  }
  if (from_runner_ >= 0) ::close(from_runner_);
  if (pid_ > 0) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void RemoteRunner::died(const std::string& what) {
  // Collect the child's status: it has exited (end of stream) or is about to.
  ::close(to_runner_);
  to_runner_ = -1;
  int status = 0;
  std::string how = "it is still running";
  if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) {
    pid_ = -1;
    if (!WIFEXITED(status)) {
      how = "it was killed by signal " + std::to_string(WTERMSIG(status));
    } else {
      const int code = WEXITSTATUS(status);
      how = "it exited with status " + std::to_string(code);
      // A shell or an emulator reports a program's death by signal N as status 128 + N.
      if (code > 128 && code < 160) how += " (killed by signal " + std::to_string(code - 128) + ")";
    }
  }
  throw InternalError("mmtune: the kernel runner (" + command_line_ + ") " + what + "; " + how +
                      "; its stderr (" + stderr_log_ + ") ends:" + log_tail(stderr_log_, 10));
}

void RemoteRunner::write_all(const void* data, std::size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(to_runner_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) died("stopped reading its requests");
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void RemoteRunner::read_all(void* data, std::size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = ::read(from_runner_, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) died("ended its replies early");
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

void RemoteRunner::call(const KernelKey& key, const std::vector<KernelArg>& args) {
  const std::string text = key.to_string();
  auto f = functions_.find(text);
  if (f == functions_.end()) {
    throw InternalError("mmtune: the kernel runner was not built with " + text);
  }
  auto ix = index_.find(f->second);
  if (ix == index_.end()) {
    throw InternalError("mmtune: the kernel runner has no function " + f->second + " (" + text +
                        ")");
  }
  std::vector<uint8_t> req;
  append_value(req, kMagic);
  append_value(req, repetitions_ > 0 ? kMeasure : kCall);
  if (repetitions_ > 0) append_value(req, static_cast<uint32_t>(repetitions_));
  append_value(req, ix->second);
  append_value(req, static_cast<uint32_t>(args.size()));
  std::vector<Span> spans(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const KernelArg& a = args[i];
    if (a.buffer == nullptr) {
      append_value(req, uint32_t{0});
      append_value(req, static_cast<uint32_t>(a.type.code));
      append_value(req, static_cast<uint32_t>(a.type.bits));
      append_value(req, a.bits);
      continue;
    }
    const halide_buffer_t& b = *a.buffer;
    MMTUNE_CHECK(b.device == 0, "a device buffer cannot be sent to the kernel runner");
    append_value(req, uint32_t{1});
    append_value(req, static_cast<uint32_t>(b.type.code));
    append_value(req, static_cast<uint32_t>(b.type.bits));
    append_value(req, static_cast<uint32_t>(b.type.lanes));
    append_value(req, static_cast<uint32_t>(b.dimensions));
    for (int d = 0; d < b.dimensions; ++d) {
      append_value(req, b.dim[d].min);
      append_value(req, b.dim[d].extent);
      append_value(req, b.dim[d].stride);
    }
    spans[i] = span_of(b);
    const uint64_t bytes = spans[i].elements * b.type.bytes();
    append_value(req, spans[i].lo);
    append_value(req, bytes);
    if (bytes > 0) append(req, b.host + spans[i].lo * b.type.bytes(), bytes);
  }
  write_all(req.data(), req.size());

  uint32_t magic = 0, length = 0;
  int32_t rc = 0;
  read_all(&magic, 4);
  if (magic != kMagic) died("answered a call without the protocol's magic number");
  read_all(&rc, 4);
  read_all(&length, 4);
  std::string message(length, '\0');
  read_all(message.data(), length);
  uint32_t entries = 0;
  read_all(&entries, 4);
  uint64_t elapsed_ns = 0;
  if (entries == 0 && rc != 0 && repetitions_ > 0) read_all(&elapsed_ns, 8);
  if (entries == 0 && rc != 0) {
    throw InternalError("mmtune: the kernel runner refused the call of " + f->second + " (" + text +
                        "): " + message);
  }
  std::string violation;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].buffer == nullptr) continue;
    if (entries-- == 0) died("answered a call with fewer buffers than it was sent");
    uint32_t index = 0, flags = 0;
    uint64_t bytes = 0;
    read_all(&index, 4);
    read_all(&flags, 4);
    read_all(&bytes, 8);
    if (index != i) died("answered a call with its buffers out of order");
    const halide_buffer_t& b = *args[i].buffer;
    if (bytes > 0) {
      if (bytes != static_cast<uint64_t>(spans[i].elements) * b.type.bytes())
        died("returned a buffer of another size than it was sent");
      read_all(b.host + spans[i].lo * b.type.bytes(), bytes);
    }
    if (flags != 0 && violation.empty()) {
      violation = "argument " + std::to_string(i) + ": the kernel wrote " +
                  ((flags & 1) != 0 ? "before" : "past the end of") + " the buffer (guard region)";
    }
  }
  if (repetitions_ > 0) {
    read_all(&elapsed_ns, 8);
    measured_ns_ += elapsed_ns;
    ++measured_calls_;
  }
  ++calls_;
  if (rc != 0) {
    throw InternalError("mmtune: kernel " + f->second + " (" + text +
                        ") failed on the target (code " + std::to_string(rc) + "): " + message);
  }
  if (!violation.empty()) {
    throw InternalError("mmtune: kernel " + f->second + " (" + text + "): " + violation);
  }
}

}  // namespace mmtune
