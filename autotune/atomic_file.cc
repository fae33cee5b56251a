// Whole-or-nothing files: a unique temporary file beside the target, synced, renamed over it.
#include "autotune/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "reference/error.h"

namespace mmtune {
namespace {

std::string parent_dir(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }
std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

bool write_all(int fd, const uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<std::size_t>(n, std::size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

void write_file_atomically(const std::string& path, const std::string& what,
                           const std::vector<std::pair<const uint8_t*, std::size_t>>& parts) {
  const std::string dir = parent_dir(path);
  {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      invalid(path, "cannot write ", what, ": the path is a directory");
    }
    if (::stat(dir.c_str(), &st) != 0) {
      invalid(path, "cannot write ", what, ": folder ", quoted(dir), " does not exist (",
              errno_text(errno), ")");
    }
    if (!S_ISDIR(st.st_mode)) {
      invalid(path, "cannot write ", what, ": ", quoted(dir), " is not a folder");
    }
  }

  // A unique temporary name in the same folder (so that rename() is atomic).
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    const std::string prefix = dir == "/" ? "/" : dir + "/";
    tmp = prefix + "." + base_name(path) + ".tmp-" + std::to_string(::getpid()) + "-" +
          std::to_string(counter.fetch_add(1)) + "-" + std::to_string(rd());
    do {
      fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno != EEXIST) {
      invalid(path, "cannot write ", what, ": cannot create a file in folder ", quoted(dir), " (",
              errno_text(errno), ")");
    }
  }
  if (fd < 0) invalid(path, "cannot write ", what, ": no unique temporary name in ", quoted(dir));

  auto fail = [&](const std::string& step, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    invalid(path, "cannot write ", what, ": ", step, " (", errno_text(err), ")");
  };
  for (const auto& [data, size] : parts) {
    if (!write_all(fd, data, size)) {
      const int err = errno;
      fail("write to " + quoted(tmp) + " failed", err);
    }
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    fail("syncing " + quoted(tmp) + " failed", err);
  }
  const int closed = ::close(fd);
  const int close_err = errno;
  fd = -1;
  if (closed != 0) fail("closing " + quoted(tmp) + " failed", close_err);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    fail("renaming " + quoted(tmp) + " onto it failed", err);
  }
}

}  // namespace mmtune
