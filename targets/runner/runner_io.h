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

#ifdef __cplusplus
}
#endif

#endif
