/* runner_io.h: the platform interface a kernel runner uses on Hexagon
 * (implemented by targets/hexagon/platform.c). Portable C99. */
#ifndef MMTUNE_RUNNER_IO_H
#define MMTUNE_RUNNER_IO_H
#include <stddef.h>
long mmtune_io_read(void* buf, size_t n);        /* from stdin (fd 0): bytes read, 0 at end, <0 error; may return fewer than n */
long mmtune_io_write(const void* buf, size_t n); /* to stdout (fd 1): bytes written, <0 error; may write fewer */
long mmtune_io_write_err(const void* buf, size_t n); /* to stderr (fd 2) */
void* mmtune_io_alloc(size_t bytes);             /* 128-byte aligned, zero-filled not required, NULL when out of memory */
void mmtune_io_free(void* p);
void mmtune_io_exit(int code);                   /* exit_group */
#endif
