/* test_main.c: exercises the Hexagon platform layer end to end.
 * Reads lines "M N K" from stdin (K a multiple of 4); for each, runs the
 * example kernels of gen_kernels.py through their _argv entry points with
 * halide_buffer_t arguments and compares them bit for bit with scalar
 * loops. Also: prints each kernel's _metadata(), stresses the allocator,
 * and checks that halide_set_error_handler captures a kernel's error and
 * halide_set_custom_print redirects halide_print.
 * With the argument "error-to-stderr" it instead lets one error reach the
 * default handler (stderr) and exits 1. Ends with "N passed, N failed". */
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#include "HalideRuntime.h"
#include "runner_io.h"

int mm_u8s8_argv(void** args);
const struct halide_filter_metadata_t* mm_u8s8_metadata(void);
int mm_f32_argv(void** args);
const struct halide_filter_metadata_t* mm_f32_metadata(void);
int mm_f64_argv(void** args);
const struct halide_filter_metadata_t* mm_f64_metadata(void);

static long passed, failed;

/* ---- output ------------------------------------------------------------- */
static void put(const char* s) {
    size_t n = strlen(s);
    while (n > 0) {
        long w = mmtune_io_write(s, n);
        if (w <= 0) mmtune_io_exit(3);
        s += w;
        n -= (size_t)w;
    }
}
static void put_int(long v) {
    char b[24];
    int i = 23;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    b[i] = 0;
    do b[--i] = (char)('0' + u % 10); while ((u /= 10) > 0);
    if (v < 0) b[--i] = '-';
    put(b + i);
}
static void check(int ok, const char* what) {
    if (ok) ++passed;
    else ++failed;
    put(ok ? "ok   " : "FAIL ");
    put(what);
    put("\n");
}

/* ---- buffers ------------------------------------------------------------ */
/* A dense buffer, dimension 0 fastest; extents e[0..dims-1]. */
static void make_buffer(halide_buffer_t* b, halide_dimension_t* d, void* host, uint8_t code, uint8_t bits,
                        int dims, const int* e) {
    memset(b, 0, sizeof *b);
    b->host = (uint8_t*)host;
    b->type.code = code;
    b->type.bits = bits;
    b->type.lanes = 1;
    b->dimensions = dims;
    b->dim = d;
    int32_t stride = 1;
    for (int i = 0; i < dims; ++i) {
        d[i].min = 0;
        d[i].extent = e[i];
        d[i].stride = stride;
        d[i].flags = 0;
        stride *= e[i];
    }
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void) { return rng_state = rng_state * 1664525u + 1013904223u; }

static void* alloc_checked(size_t n) {
    void* p = mmtune_io_alloc(n);
    if (!p || ((uintptr_t)p & 127u)) {
        put("FAIL mmtune_io_alloc: NULL or not 128-byte aligned\n");
        mmtune_io_exit(2);
    }
    return p;
}

/* ---- metadata ----------------------------------------------------------- */
static void print_metadata(const struct halide_filter_metadata_t* md) {
    static const char* kinds[] = {"input_scalar", "input_buffer", "output_buffer"};
    static const char* codes[] = {"int", "uint", "float", "handle", "bfloat"};
    put("metadata ");
    put(md->name);
    put(": version ");
    put_int(md->version);
    put(", target ");
    put(md->target);
    put(", ");
    put_int(md->num_arguments);
    put(" arguments\n");
    for (int i = 0; i < md->num_arguments; ++i) {
        const struct halide_filter_argument_t* a = &md->arguments[i];
        put("  ");
        put(a->name);
        put(": ");
        put(a->kind >= 0 && a->kind <= 2 ? kinds[a->kind] : "?");
        put(" ");
        put(a->type.code <= 4 ? codes[a->type.code] : "?");
        put_int(a->type.bits);
        put(" dims ");
        put_int(a->dimensions);
        put("\n");
    }
}

/* ---- kernels vs scalar loops -------------------------------------------- */
static void test_u8s8(int M, int N, int K) {
    uint8_t* a = alloc_checked((size_t)M * K);
    int8_t* bp = alloc_checked((size_t)K * N);
    int32_t* c = alloc_checked((size_t)M * N * 4);
    int8_t* b = alloc_checked((size_t)K * N); /* B[k][n], row-major */
    for (int i = 0; i < M * K; ++i) a[i] = (uint8_t)(rnd() >> 24);
    for (int i = 0; i < K * N; ++i) b[i] = (int8_t)(rnd() >> 24);
    for (int k = 0; k < K; ++k) /* pack: Bp(k % 4, n, k / 4) */
        for (int n = 0; n < N; ++n) bp[(k / 4) * N * 4 + n * 4 + k % 4] = b[k * N + n];
    halide_buffer_t ba, bb, bc;
    halide_dimension_t da[2], db[3], dc[2];
    int ea[2] = {K, M}, eb[3] = {4, N, K / 4}, ec[2] = {N, M};
    make_buffer(&ba, da, a, halide_type_uint, 8, 2, ea);
    make_buffer(&bb, db, bp, halide_type_int, 8, 3, eb);
    make_buffer(&bc, dc, c, halide_type_int, 32, 2, ec);
    void* args[3] = {&ba, &bb, &bc};
    int rc = mm_u8s8_argv(args);
    long bad = 0;
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            int32_t s = 0;
            for (int k = 0; k < K; ++k) s += (int32_t)a[m * K + k] * (int32_t)b[k * N + n];
            bad += (c[m * N + n] != s);
        }
    check(rc == 0 && bad == 0, "mm_u8s8 matches the scalar loop");
    mmtune_io_free(a);
    mmtune_io_free(bp);
    mmtune_io_free(c);
    mmtune_io_free(b);
}

/* A scalar reference in two flavours: separate multiply and add (build
 * with -ffp-contract=off), or fused; reports which one the kernel matches. */
#define FLOAT_TEST(NAME, T, CODE, BITS, FMA, HAS_FMA)                                                     \
    static void test_##NAME(int M, int N, int K) {                                                 \
        T* a = alloc_checked((size_t)M * K * sizeof(T));                                           \
        T* b = alloc_checked((size_t)K * N * sizeof(T));                                           \
        T* c = alloc_checked((size_t)M * N * sizeof(T));                                           \
        for (int i = 0; i < M * K; ++i) a[i] = (T)((int)(rnd() >> 20) - 2048) / (T)256;           \
        for (int i = 0; i < K * N; ++i) b[i] = (T)((int)(rnd() >> 20) - 2048) / (T)1000;          \
        halide_buffer_t ba, bb, bc;                                                                \
        halide_dimension_t da[2], db[2], dc[2];                                                    \
        int ea[2] = {K, M}, eb[2] = {N, K}, ec[2] = {N, M};                                        \
        make_buffer(&ba, da, a, halide_type_float, BITS, 2, ea);                                   \
        make_buffer(&bb, db, b, halide_type_float, BITS, 2, eb);                                   \
        make_buffer(&bc, dc, c, halide_type_float, BITS, 2, ec);                                   \
        void* args[3] = {&ba, &bb, &bc};                                                           \
        int rc = NAME##_argv(args);                                                                \
        long bad_sep = 0, bad_fma = 0;                                                             \
        for (int m = 0; m < M; ++m)                                                                \
            for (int n = 0; n < N; ++n) {                                                          \
                T s = 0, f = 0;                                                                    \
                for (int k = 0; k < K; ++k) {                                                      \
                    T p = a[m * K + k] * b[k * N + n];                                             \
                    s = s + p;                                                                     \
                    f = FMA(a[m * K + k], b[k * N + n], f);                                        \
                }                                                                                  \
                bad_sep += memcmp(&c[m * N + n], &s, sizeof(T)) != 0;                              \
                bad_fma += memcmp(&c[m * N + n], &f, sizeof(T)) != 0;                              \
            }                                                                                      \
        put(#NAME ": bit-exact vs separate mul+add: ");                                           \
        put(bad_sep ? "no" : "yes");                                                               \
        put(", vs fused: ");                                                                       \
        put(!HAS_FMA ? "not checked" : bad_fma ? "no" : "yes");                                    \
        put("\n");                                                                                 \
        check(rc == 0 && (bad_sep == 0 || (HAS_FMA && bad_fma == 0)), #NAME " matches a scalar loop");         \
        mmtune_io_free(a);                                                                         \
        mmtune_io_free(b);                                                                         \
        mmtune_io_free(c);                                                                         \
    }

/* f64 has no fused reference here (fma() would need a soft-float fma). */
#define NO_FMA(x, y, acc) ((acc) + (x) * (y))
FLOAT_TEST(mm_f32, float, halide_type_float, 32, __builtin_fmaf, 1)
FLOAT_TEST(mm_f64, double, halide_type_float, 64, NO_FMA, 0)

/* ---- allocator ---------------------------------------------------------- */
/* About 600 MB allocated in total, at most ~40 MB live at once: only works
 * if free really returns memory. Also checks calloc and realloc. */
static void test_allocator(void) {
    enum { SLOTS = 64 };
    void* slot[SLOTS] = {0};
    size_t size[SLOTS] = {0};
    int ok = 1;
    size_t total = 0;
    for (int i = 0; i < 4000; ++i) {
        int s = (int)(rnd() % SLOTS);
        mmtune_io_free(slot[s]);
        size[s] = (rnd() & 1) ? (rnd() % 4096) + 1 : (rnd() % (1u << 20)) + 1;
        slot[s] = mmtune_io_alloc(size[s]);
        if (!slot[s] || ((uintptr_t)slot[s] & 127u)) ok = 0;
        else memset(slot[s], s, size[s] < 256 ? size[s] : 256);
        total += size[s];
    }
    for (int s = 0; s < SLOTS; ++s) {
        if (slot[s] && ((unsigned char*)slot[s])[0] != (unsigned char)s) ok = 0;
        mmtune_io_free(slot[s]);
    }
    check(ok && total > (size_t)500 << 20, "allocator: 4000 mixed alloc/free, >500 MB total, 128-aligned");
    unsigned char* z = calloc(1000, 3);
    for (int i = 0; z && i < 3000; ++i) ok &= (z[i] == 0);
    unsigned char* p = malloc(100);
    for (int i = 0; p && i < 100; ++i) p[i] = (unsigned char)i;
    p = realloc(p, 300000); /* small -> big block: contents kept */
    for (int i = 0; p && i < 100; ++i) ok &= (p[i] == (unsigned char)i);
    check(z && p && ok, "calloc zero-fills, realloc keeps contents");
    free(z);
    free(p);
    check(mmtune_io_alloc((size_t)3 << 30) == NULL, "3 GiB request returns NULL");
    /* How much can be live at once: 64 MiB blocks until NULL (untouched,
     * so no page is ever committed), then all freed. */
    enum { MAXB = 64 };
    void* big[MAXB];
    int nb = 0;
    while (nb < MAXB && (big[nb] = mmtune_io_alloc((size_t)64 << 20)) != NULL) ++nb;
    put("live at once: ");
    put_int(nb * 64L);
    put(" MiB in 64 MiB blocks\n");
    while (nb > 0) mmtune_io_free(big[--nb]);
    check(mmtune_io_alloc((size_t)64 << 20) != NULL, "64 MiB again after freeing them");
}

/* ---- error handler ------------------------------------------------------ */
static char last_error[512];
static void capture_error(void* user_context, const char* msg) {
    (void)user_context;
    strncpy(last_error, msg, sizeof last_error - 1);
}

/* Calls mm_u8s8 with an output of the wrong element type. */
static int call_with_bad_type(void) {
    static uint8_t a[16 * 32], bp[16 * 32];
    static float c[32];
    halide_buffer_t ba, bb, bc;
    halide_dimension_t da[2], db[3], dc[2];
    int ea[2] = {16, 1}, eb[3] = {4, 32, 4}, ec[2] = {32, 1};
    make_buffer(&ba, da, a, halide_type_uint, 8, 2, ea);
    make_buffer(&bb, db, bp, halide_type_int, 8, 3, eb);
    make_buffer(&bc, dc, c, halide_type_float, 32, 2, ec);
    void* args[3] = {&ba, &bb, &bc};
    return mm_u8s8_argv(args);
}

static char last_print[64];
static void capture_print(void* user_context, const char* msg) {
    (void)user_context;
    strncpy(last_print, msg, sizeof last_print - 1);
}

static void test_error_handler(void) {
    halide_print_t old_print = halide_set_custom_print(capture_print);
    halide_print(NULL, "to the custom print");
    halide_set_custom_print(old_print);
    check(strcmp(last_print, "to the custom print") == 0, "halide_set_custom_print redirects halide_print");

    halide_error_handler_t old = halide_set_error_handler(capture_error);
    int rc = call_with_bad_type();
    halide_set_error_handler(old);
    put("captured error (rc ");
    put_int(rc);
    put("): ");
    put(last_error);
    put("\n");
    check(rc != 0 && strlen(last_error) > 0, "halide_set_error_handler captures the kernel's message");
}

/* ---- stdin -------------------------------------------------------------- */
/* Reads one unsigned number, skipping separators; -1 at end of input. */
static long read_number(void) {
    static char buf[256];
    static long len, pos;
    long v = -1;
    for (;;) {
        if (pos == len) {
            len = mmtune_io_read(buf, sizeof buf);
            pos = 0;
            if (len <= 0) return v;
        }
        char ch = buf[pos];
        if (ch >= '0' && ch <= '9') {
            v = (v < 0 ? 0 : v * 10) + (ch - '0');
        } else if (v >= 0) {
            return v;
        }
        ++pos;
    }
}

int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "error-to-stderr") == 0) {
        put("calling mm_u8s8 with a bad output type, default error handler\n");
        return call_with_bad_type() != 0;
    }
    print_metadata(mm_u8s8_metadata());
    print_metadata(mm_f32_metadata());
    print_metadata(mm_f64_metadata());
    const struct halide_filter_metadata_t* md = mm_u8s8_metadata();
    check(md->num_arguments == 3 && md->arguments[1].dimensions == 3 && md->arguments[1].type.code == halide_type_int &&
              md->arguments[2].kind == halide_argument_kind_output_buffer,
          "mm_u8s8 metadata: 3 arguments, Bp int8 3-D, C output");
    test_allocator();
    test_error_handler();
    for (;;) {
        long M = read_number(), N = read_number(), K = read_number();
        if (M < 0 || N < 0 || K < 0) break;
        put("size M=");
        put_int(M);
        put(" N=");
        put_int(N);
        put(" K=");
        put_int(K);
        put("\n");
        test_u8s8((int)M, (int)N, (int)K);
        test_mm_f32((int)M, (int)N, (int)K);
        test_mm_f64((int)M, (int)N, (int)K);
    }
    put_int(passed);
    put(" passed, ");
    put_int(failed);
    put(" failed\n");
    return failed != 0;
}
