/* What the kernel runner (kernel_runner.c) needs of the platform it runs on: its standard streams,
 * memory and exit. io_posix.c implements it over a C library (Linux, Android, a board with a
 * libc); targets/hexagon/platform.c over bare Linux system calls for freestanding Hexagon. */
#ifndef MMTUNE_RUNNER_IO_H
#define MMTUNE_RUNNER_IO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

long mmtune_io_read(void* buf, size_t n);        /* stdin: bytes read, 0 at end, < 0 on error */
long mmtune_io_write(const void* buf, size_t n); /* stdout: bytes written, < 0 on error */
long mmtune_io_write_err(const void* buf, size_t n); /* stderr */
void* mmtune_io_alloc(size_t bytes); /* 128-byte aligned (HVX vectors); NULL when out of memory */
void mmtune_io_free(void* p);
void mmtune_io_exit(int code);
/* Marks the start (1) and end (2) of a measured run for an instruction counter watching the
 * program (targets/qemu/insn_count.c): a system call of MMTUNE_MARK_SYSCALL, which no kernel
 * defines (it returns -ENOSYS, harmless on a device). */
#define MMTUNE_MARK_SYSCALL 0x6d6d
void mmtune_io_mark(int which);
/* A monotonic clock in nanoseconds, or 0 when the platform has none. */
unsigned long long mmtune_io_clock_ns(void);

#ifdef __cplusplus
}
#endif

#endif
