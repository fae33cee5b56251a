/* runner_io.h over a C library. */
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runner_io.h"

long mmtune_io_read(void* buf, size_t n) {
  ssize_t r;
  do {
    r = read(0, buf, n);
  } while (r < 0 && errno == EINTR);
  return (long)r;
}

static long write_fd(int fd, const void* buf, size_t n) {
  ssize_t r;
  do {
    r = write(fd, buf, n);
  } while (r < 0 && errno == EINTR);
  return (long)r;
}

long mmtune_io_write(const void* buf, size_t n) { return write_fd(1, buf, n); }
long mmtune_io_write_err(const void* buf, size_t n) { return write_fd(2, buf, n); }

void* mmtune_io_alloc(size_t bytes) {
  void* p = NULL;
  if (posix_memalign(&p, 128, bytes ? bytes : 1) != 0) return NULL;
  return p;
}

void mmtune_io_free(void* p) { free(p); }
void mmtune_io_exit(int code) { _exit(code); }

void mmtune_io_mark(int which) { (void)syscall(MMTUNE_MARK_SYSCALL, which); }

unsigned long long mmtune_io_clock_ns(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) return 0;
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}
