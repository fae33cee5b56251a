/* builtins_test.c: checks builtins.c against the compiler's own arithmetic.
 * On a host (x86-64, SSE2 float64), or under qemu-hexagon built with
 * -mcpu=hexagonv67 or later, where float64 add/multiply are hardware
 * instructions (divide stays a call: there it checks divdf3 only against
 * itself, so run it on the host). Exit status 0 when everything matches.
 * Host:   cc -O2 -ffp-contract=off builtins_test.c builtins.c -o t && ./t
 * Hexagon: see build.sh (links platform.c; main gets its output through
 *          mmtune_io_write). */
#include <stdint.h>

typedef uint64_t u64;
double __hexagon_adddf3(double, double);
double __hexagon_subdf3(double, double);
double __hexagon_muldf3(double, double);
double __hexagon_divdf3(double, double);
float __hexagon_divsf3(float, float);
double __hexagon_sqrtdf2(double);
float __hexagon_sqrtf(float);
int64_t __hexagon_divdi3(int64_t, int64_t);
int64_t __hexagon_moddi3(int64_t, int64_t);
uint32_t __hexagon_udivsi3(uint32_t, uint32_t);
int32_t __hexagon_modsi3(int32_t, int32_t);

#ifdef __hexagon__
#include "runner_io.h"
static void out(const char* s) {
    long n = 0;
    while (s[n]) ++n;
    mmtune_io_write(s, (size_t)n);
}
#else
#include <stdio.h>
static void out(const char* s) { fputs(s, stdout); }
#endif

static u64 bits(double d) {
    union { double d; u64 u; } x;
    x.d = d;
    return x.u;
}
static double dbl(u64 u) {
    union { double d; u64 u; } x;
    x.u = u;
    return x.d;
}
static uint32_t fbits(float f) {
    union { float f; uint32_t u; } x;
    x.f = f;
    return x.u;
}
static float flt(uint32_t u) {
    union { float f; uint32_t u; } x;
    x.u = u;
    return x.f;
}

static u64 rng = 0x9e3779b97f4a7c15ull;
static u64 next(void) { /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

/* Random doubles weighted toward the hard cases: nearby exponents
 * (cancellation), subnormals, extremes, zeros, infinities, NaNs. */
static u64 pick(u64 other) {
    u64 r = next(), s = r & (1ull << 63);
    switch (next() & 7) {
    case 0: return s | (r & ((1ull << 52) - 1));                        /* subnormal */
    case 1: return s | ((other & 0x7ff0000000000000ull) ^ ((r >> 20) & 0x0030000000000000ull)) | (next() & ((1ull << 52) - 1)); /* near */
    case 2: return s | (0x7fe0000000000000ull - ((r >> 40) & 0x00f0000000000000ull)) | (r & 0xfffff); /* huge */
    case 3: { static const u64 sp[] = {0, 0x7ff0000000000000ull, 0x7ff8000000000001ull, 0x3ff0000000000000ull,
                                       0x0010000000000000ull, 0x000fffffffffffffull, 0x7fefffffffffffffull, 1};
              return s | sp[r & 7]; }
    default: return r;
    }
}

static int same(u64 got, u64 want) {
    if ((want & ~(1ull << 63)) > 0x7ff0000000000000ull) /* NaN: any NaN will do */
        return (got & ~(1ull << 63)) > 0x7ff0000000000000ull;
    return got == want;
}

static void hex(char* p, u64 v) {
    for (int i = 15; i >= 0; --i, v >>= 4) p[i] = "0123456789abcdef"[v & 15];
    p[16] = 0;
}

int main(void) {
    long passed = 0, failed = 0;
    for (long i = 0; i < 400000; ++i) {
        u64 a = pick(0), b = pick(a);
        double x = dbl(a), y = dbl(b);
        u64 got[4] = {bits(__hexagon_adddf3(x, y)), bits(__hexagon_subdf3(x, y)),
                      bits(__hexagon_muldf3(x, y)), bits(__hexagon_divdf3(x, y))};
        u64 want[4] = {bits(x + y), bits(x - y), bits(x * y), bits(x / y)};
        for (int k = 0; k < 4; ++k) {
            if (same(got[k], want[k])) {
                ++passed;
            } else if (++failed <= 10) {
                char line[100] = "FAIL op ?  a=";
                line[8] = "+-*/"[k];
                hex(line + 13, a);
                char* p = line + 29;
                const char* t = " b=";
                while (*t) *p++ = *t++;
                hex(p, b);
                p += 16;
                t = " got ";
                while (*t) *p++ = *t++;
                hex(p, got[k]);
                p += 16;
                *p++ = '\n';
                *p = 0;
                out(line);
            }
        }
        uint32_t fa = (uint32_t)next(), fb = (uint32_t)(next() >> 32);
        uint32_t fg = fbits(__hexagon_divsf3(flt(fa), flt(fb))), fw = fbits(flt(fa) / flt(fb));
        if (((fw & 0x7fffffffu) > 0x7f800000u) ? ((fg & 0x7fffffffu) > 0x7f800000u) : fg == fw) ++passed;
        else if (++failed <= 10) out("FAIL divsf3\n");
        u64 sa = a & ~(1ull << 63); /* sqrt of |a| and of a (negative: NaN) */
        double sw = __builtin_sqrt(dbl(sa));
        if (same(bits(__hexagon_sqrtdf2(dbl(sa))), bits(sw)) && same(bits(__hexagon_sqrtdf2(x)), bits(__builtin_sqrt(x))))
            ++passed;
        else if (++failed <= 10) out("FAIL sqrtdf2\n");
        float fs = flt(fa & 0x7fffffffu);
        if (fbits(__hexagon_sqrtf(fs)) == fbits(__builtin_sqrtf(fs)) || (fa & 0x7fffffffu) > 0x7f800000u) ++passed;
        else if (++failed <= 10) out("FAIL sqrtf\n");
        int64_t n = (int64_t)next(), d = (int64_t)(next() >> (next() & 63));
        if (d == 0) d = 7;
        if (__hexagon_divdi3(n, d) == n / d && __hexagon_moddi3(n, d) == n % d) ++passed;
        else if (++failed <= 10) out("FAIL divdi3/moddi3\n");
        uint32_t un = (uint32_t)next(), ud = (uint32_t)(next() >> (32 + (next() & 31)));
        int32_t sn = (int32_t)un, sd = (int32_t)ud;
        if (ud == 0) ud = sd = 3;
        if (__hexagon_udivsi3(un, ud) == un / ud && __hexagon_modsi3(sn, sd) == sn % sd) ++passed;
        else if (++failed <= 10) out("FAIL udivsi3/modsi3\n");
    }
    char line[64], *p = line;
    long v[2] = {passed, failed};
    const char* w[2] = {" passed, ", " failed\n"};
    for (int k = 0; k < 2; ++k) {
        char tmp[24];
        int t = 0;
        long x = v[k];
        do tmp[t++] = (char)('0' + x % 10); while ((x /= 10) > 0);
        while (t) *p++ = tmp[--t];
        for (const char* q = w[k]; *q; ++q) *p++ = *q;
    }
    *p = 0;
    out(line);
    return failed != 0;
}
