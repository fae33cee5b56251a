/* platform.c: a freestanding platform layer for static Hexagon ELFs run
 * under qemu-hexagon (Linux user-mode emulation). There is no libc for
 * Hexagon here, so this file provides everything a kernel runner, a Halide
 * hexagon-32-noos-hvx-hvx_128 object and the Halide runtime need:
 *   - Linux system calls (trap0(#1): number in r6, arguments in r0-r5,
 *     result in r0, -errno on failure; asm-generic numbering),
 *   - the process start (mmtune_start_c, entered from start.S),
 *   - the runner_io.h interface,
 *   - malloc/free/calloc/realloc over mmap,
 *   - the few C library functions the Halide runtime references,
 *   - halide_print/halide_error (the Hexagon runtime leaves both to the
 *     host side), halide_set_error_handler and halide_set_custom_print,
 *   - QuRT/HAP stubs (qurt_hvx_lock/unlock, HAP_request/release_VTCM).
 * Compiler helpers (__hexagon_*) are in builtins.c.
 * Build with -ffreestanding (which implies -fno-builtin, so the loops
 * below are not turned back into calls to themselves) and -G0 (no small
 * data: start.S does not set up GP). Single-threaded throughout. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h> /* include/ here: what this file defines */
#include <string.h>

#include "runner_io.h"

/* ---- system calls ------------------------------------------------------- */

enum {
    SYS_read = 63, SYS_write = 64, SYS_exit_group = 94,
    SYS_munmap = 215, SYS_mmap = 222, /* mmap2 on 32-bit: offset in pages */
    SYS_clock_gettime = 113 /* 32-bit time_t */
};

static long syscall6(long nr, long a, long b, long c, long d, long e, long f) {
    register long r0 __asm__("r0") = a;
    register long r1 __asm__("r1") = b;
    register long r2 __asm__("r2") = c;
    register long r3 __asm__("r3") = d;
    register long r4 __asm__("r4") = e;
    register long r5 __asm__("r5") = f;
    register long r6 __asm__("r6") = nr;
    __asm__ volatile("trap0(#1)"
                     : "+r"(r0)
                     : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6)
                     : "memory");
    return r0;
}

static void* sys_mmap(size_t len) {
    /* PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, fd -1, offset 0 */
    long r = syscall6(SYS_mmap, 0, (long)len, 3, 0x22, -1, 0);
    return (r < 0 && r > -4096) ? NULL : (void*)r;
}

static void sys_munmap(void* p, size_t len) {
    syscall6(SYS_munmap, (long)p, (long)len, 0, 0, 0, 0);
}

/* ---- runner_io.h -------------------------------------------------------- */

long mmtune_io_read(void* buf, size_t n) {
    return syscall6(SYS_read, 0, (long)buf, (long)n, 0, 0, 0);
}
long mmtune_io_write(const void* buf, size_t n) {
    return syscall6(SYS_write, 1, (long)buf, (long)n, 0, 0, 0);
}
long mmtune_io_write_err(const void* buf, size_t n) {
    return syscall6(SYS_write, 2, (long)buf, (long)n, 0, 0, 0);
}
void mmtune_io_exit(int code) {
    for (;;) syscall6(SYS_exit_group, code, 0, 0, 0, 0, 0);
}

void* mmtune_io_alloc(size_t bytes) { return malloc(bytes); }
void mmtune_io_free(void* p) { free(p); }

void mmtune_io_mark(int which) { (void)syscall6(MMTUNE_MARK_SYSCALL, which, 0, 0, 0, 0, 0); }

unsigned long long mmtune_io_clock_ns(void) {
    long t[2]; /* CLOCK_MONOTONIC */
    if (syscall6(SYS_clock_gettime, 1, (long)t, 0, 0, 0, 0) != 0) return 0;
    return (unsigned long long)t[0] * 1000000000ull + (unsigned long long)(unsigned long)t[1];
}

/* Writes all of s to fd 2, retrying short writes; used for diagnostics. */
static void write_err_all(const char* s) {
    size_t n = strlen(s);
    while (n > 0) {
        long w = mmtune_io_write_err(s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

/* ---- process start ------------------------------------------------------ */

int main(int argc, char** argv);
static char** environ_ptr;

/* Defined by the linker (ld.lld) for a static executable. */
typedef void (*init_fn)(void);
extern init_fn __preinit_array_start[] __attribute__((weak, visibility("hidden")));
extern init_fn __preinit_array_end[] __attribute__((weak, visibility("hidden")));
extern init_fn __init_array_start[] __attribute__((weak, visibility("hidden")));
extern init_fn __init_array_end[] __attribute__((weak, visibility("hidden")));

/* Entered from start.S with the initial stack pointer. Runs the
 * constructors, main, then exit_group with main's result.
 * Destructors (.fini_array) are deliberately not run: the Halide runtime's
 * only one, halide_allocator_cleanup (qurt_allocator), passes each of its
 * ten 64 KiB buffer-cache slots to aligned_free, which reads ptr[-1] even
 * for a slot never filled (NULL): address 0xfffffffc, a SIGSEGV at exit.
 * Exiting frees everything anyway. */
void mmtune_start_c(long* sp) __attribute__((noreturn));
void mmtune_start_c(long* sp) {
    int argc = (int)sp[0];
    char** argv = (char**)(sp + 1);
    environ_ptr = argv + argc + 1;
    for (init_fn* f = __preinit_array_start; f < __preinit_array_end; ++f) (*f)();
    for (init_fn* f = __init_array_start; f < __init_array_end; ++f) (*f)();
    mmtune_io_exit(main(argc, argv));
    for (;;) {}
}

/* ---- allocator ---------------------------------------------------------- */
/* Every block starts with a 128-byte header, so payloads stay 128-aligned.
 * Small blocks (payload 128 B << k, up to 256 KiB) come from size-class
 * free lists refilled from 4 MiB mmap'd chunks; freed blocks go back on
 * their list. Larger blocks are mmap'd one by one and munmap'd on free. */

#define HDR 128u
#define NCLASS 12u /* payloads 128 B .. 256 KiB */
#define CHUNK (4u << 20)
#define MAGIC_USED 0x6d6d7475u /* "mmtu" */
#define MAGIC_FREE 0x66726565u /* "free" */
#define BIG_CLASS 0xffu

struct block {
    uint32_t magic;
    uint32_t cls;    /* size class, or BIG_CLASS */
    size_t map_size; /* BIG_CLASS: bytes mapped, header included */
    struct block* next_free;
};

static struct block* free_list[NCLASS];
static char* chunk_cur;
static char* chunk_end;

static void heap_corrupt(void) {
    write_err_all("mmtune platform: free/realloc of a pointer malloc did not return (or freed twice)\n");
    mmtune_io_exit(134);
}

static struct block* block_of(void* p) {
    struct block* b = (struct block*)((char*)p - HDR);
    if (b->magic != MAGIC_USED) heap_corrupt();
    return b;
}

static size_t usable_size(struct block* b) {
    return b->cls == BIG_CLASS ? b->map_size - HDR : (size_t)128u << b->cls;
}

void* malloc(size_t n) {
    if (n == 0) n = 1;
    struct block* b;
    if (n > ((size_t)128u << (NCLASS - 1))) {
        if (n > (size_t)0x7fffffff - HDR - 4096) return NULL;
        size_t total = (n + HDR + 4095) & ~(size_t)4095;
        b = (struct block*)sys_mmap(total);
        if (!b) return NULL;
        b->cls = BIG_CLASS;
        b->map_size = total;
    } else {
        uint32_t cls = 0;
        while (((size_t)128u << cls) < n) ++cls;
        b = free_list[cls];
        if (b) {
            if (b->magic != MAGIC_FREE) heap_corrupt();
            free_list[cls] = b->next_free;
        } else {
            size_t need = HDR + ((size_t)128u << cls);
            if ((size_t)(chunk_end - chunk_cur) < need) {
                char* c = (char*)sys_mmap(CHUNK);
                if (!c) return NULL;
                chunk_cur = c;
                chunk_end = c + CHUNK;
            }
            b = (struct block*)chunk_cur;
            chunk_cur += need;
            b->map_size = 0;
        }
        b->cls = cls;
    }
    b->magic = MAGIC_USED;
    b->next_free = NULL;
    return (char*)b + HDR;
}

void free(void* p) {
    if (!p) return;
    struct block* b = block_of(p);
    if (b->cls == BIG_CLASS) {
        b->magic = 0;
        sys_munmap(b, b->map_size);
        return;
    }
    b->magic = MAGIC_FREE;
    b->next_free = free_list[b->cls];
    free_list[b->cls] = b;
}

void* calloc(size_t count, size_t size) {
    if (size != 0 && count > (size_t)-1 / size) return NULL;
    void* p = malloc(count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

void* realloc(void* p, size_t n) {
    if (!p) return malloc(n);
    if (n == 0) {
        free(p);
        return NULL;
    }
    size_t have = usable_size(block_of(p));
    if (n <= have) return p;
    void* q = malloc(n);
    if (!q) return NULL;
    memcpy(q, p, have);
    free(p);
    return q;
}

/* ---- C library ---------------------------------------------------------- */

void* memcpy(void* restrict dst, const void* restrict src, size_t n) {
    unsigned char* d = (unsigned char*)dst;
    const unsigned char* s = (const unsigned char*)src;
    if ((((uintptr_t)d | (uintptr_t)s) & 7u) == 0) {
        for (; n >= 8; n -= 8, d += 8, s += 8) *(uint64_t*)d = *(const uint64_t*)s;
    }
    while (n--) *d++ = *s++;
    return dst;
}

void* memmove(void* dst, const void* src, size_t n) {
    unsigned char* d = (unsigned char*)dst;
    const unsigned char* s = (const unsigned char*)src;
    if (d == s || n == 0) return dst;
    if (d < s || d >= s + n) return memcpy(dst, src, n);
    while (n--) d[n] = s[n]; /* overlapping, destination above: copy backwards */
    return dst;
}

void* memset(void* dst, int c, size_t n) {
    unsigned char* d = (unsigned char*)dst;
    if (((uintptr_t)d & 7u) == 0) {
        uint64_t v = (unsigned char)c * 0x0101010101010101ull;
        for (; n >= 8; n -= 8, d += 8) *(uint64_t*)d = v;
    }
    while (n--) *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
    const unsigned char* x = (const unsigned char*)a;
    const unsigned char* y = (const unsigned char*)b;
    for (size_t i = 0; i < n; ++i)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

size_t strlen(const char* s) {
    size_t n = 0;
    while (s[n]) ++n;
    return n;
}

int strcmp(const char* a, const char* b) {
    while (*a && *a == *b) ++a, ++b;
    return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char* a, const char* b, size_t n) {
    for (; n > 0; --n, ++a, ++b) {
        if (*a != *b) return (unsigned char)*a - (unsigned char)*b;
        if (!*a) break;
    }
    return 0;
}

char* strncpy(char* dst, const char* src, size_t n) {
    size_t i = 0;
    for (; i < n && src[i]; ++i) dst[i] = src[i];
    for (; i < n; ++i) dst[i] = 0;
    return dst;
}

int atoi(const char* s) {
    while (*s == ' ' || (*s >= '\t' && *s <= '\r')) ++s;
    int neg = (*s == '-');
    if (*s == '-' || *s == '+') ++s;
    unsigned v = 0;
    while (*s >= '0' && *s <= '9') v = v * 10u + (unsigned)(*s++ - '0');
    return neg ? -(int)v : (int)v;
}

/* The real environment: qemu-hexagon passes the host's by default, so
 * HL_* variables the Halide runtime reads (e.g. HL_NUM_THREADS) work. */
char* getenv(const char* name) {
    size_t n = strlen(name);
    for (char** e = environ_ptr; e && *e; ++e)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* No files: halide_fopen (debug_to_file) fails cleanly. */
void* fopen(const char* path, const char* mode) {
    (void)path;
    (void)mode;
    return NULL;
}

void abort(void) {
    write_err_all("mmtune platform: abort()\n");
    mmtune_io_exit(134); /* 128 + SIGABRT, as a shell reports an abort */
    for (;;) {}
}

/* ---- Halide runtime hooks ----------------------------------------------- */
/* The Hexagon runtime (hexagon-32-noos-hvx-*) references halide_print and
 * halide_error but does not define them, nor halide_set_error_handler:
 * they live here. Both are routed to stderr unless replaced. */

typedef void (*halide_print_t)(void*, const char*);
typedef void (*halide_error_handler_t)(void*, const char*);
static halide_print_t custom_print;
static halide_error_handler_t custom_error;

halide_print_t halide_set_custom_print(halide_print_t print) {
    halide_print_t old = custom_print;
    custom_print = print;
    return old;
}

halide_error_handler_t halide_set_error_handler(halide_error_handler_t handler) {
    halide_error_handler_t old = custom_error;
    custom_error = handler;
    return old;
}

void halide_print(void* user_context, const char* msg) {
    if (custom_print) {
        custom_print(user_context, msg);
        return;
    }
    write_err_all(msg);
}

/* The pipeline returns an error code after this; it does not abort. */
void halide_error(void* user_context, const char* msg) {
    if (custom_error) {
        custom_error(user_context, msg);
        return;
    }
    halide_print(user_context, "Error: ");
    halide_print(user_context, msg);
    size_t n = strlen(msg);
    if (n == 0 || msg[n - 1] != '\n') halide_print(user_context, "\n");
}

/* ---- QuRT / HAP stubs --------------------------------------------------- */
/* qemu-hexagon runs HVX instructions without a context to reserve. */
int qurt_hvx_lock(int mode) {
    (void)mode;
    return 0; /* QURT_EOK */
}
int qurt_hvx_unlock(void) { return 0; }

/* No VTCM under qemu: every request fails (halide_vtcm_malloc sees NULL). */
void* HAP_request_VTCM(unsigned size, unsigned single_page) {
    (void)size;
    (void)single_page;
    return NULL;
}
int HAP_release_VTCM(void* p) {
    (void)p;
    return 0;
}
