/* builtins.c: the compiler helper functions LLVM's Hexagon backend calls
 * (it has no integer divide and, before v66/v67, no float64 add/multiply
 * instructions), written here because there is no compiler-rt for Hexagon
 * on this machine. Integer arithmetic only (no '/' or '%', no double
 * arithmetic), so nothing here calls back into itself, and the same file
 * compiles on a host for testing (builtins_test.c).
 *
 * Float64 add, subtract, multiply and divide are correctly rounded IEEE 754
 * binary64, round to nearest even, with subnormals, infinities and NaNs
 * (a NaN operand comes back quieted; invalid operations give the default
 * NaN 0x7ff8000000000000). Float32 divide goes through float64: rounding
 * the exact quotient to 53 bits and then to 24 equals rounding it once;
 * likewise float32 square root. */
#include <stddef.h>
#include <stdint.h>

typedef uint64_t u64;
typedef int64_t i64;
typedef uint32_t u32;
typedef int32_t i32;

/* ---- integer division --------------------------------------------------- */
/* Division by zero is undefined in C; here it gives quotient 0 and
 * remainder n (Halide guards its own divisions). */
static u64 udivmod64(u64 n, u64 d, u64* rem) {
    if (d == 0 || n < d) {
        *rem = n;
        return 0;
    }
    int shift = __builtin_clzll(d) - __builtin_clzll(n);
    u64 q = 0;
    d <<= shift;
    for (int i = 0; i <= shift; ++i, d >>= 1) {
        q <<= 1;
        if (n >= d) {
            n -= d;
            q |= 1;
        }
    }
    *rem = n;
    return q;
}

static u64 uabs64(i64 v) { return v < 0 ? 0 - (u64)v : (u64)v; }

u64 __hexagon_udivdi3(u64 a, u64 b) { u64 r; return udivmod64(a, b, &r); }
u64 __hexagon_umoddi3(u64 a, u64 b) { u64 r; udivmod64(a, b, &r); return r; }
i64 __hexagon_divdi3(i64 a, i64 b) {
    u64 r, q = udivmod64(uabs64(a), uabs64(b), &r);
    return (i64)(((a < 0) != (b < 0)) ? 0 - q : q);
}
i64 __hexagon_moddi3(i64 a, i64 b) {
    u64 r;
    udivmod64(uabs64(a), uabs64(b), &r);
    return (i64)(a < 0 ? 0 - r : r);
}
u32 __hexagon_udivsi3(u32 a, u32 b) { return (u32)__hexagon_udivdi3(a, b); }
u32 __hexagon_umodsi3(u32 a, u32 b) { return (u32)__hexagon_umoddi3(a, b); }
i32 __hexagon_divsi3(i32 a, i32 b) { return (i32)__hexagon_divdi3(a, b); }
i32 __hexagon_modsi3(i32 a, i32 b) { return (i32)__hexagon_moddi3(a, b); }

/* ---- memcpy variant the Halide runtime calls ---------------------------- */
void* memcpy(void* restrict dst, const void* restrict src, size_t n);
void* __hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void* dst, const void* src, size_t n) {
    return memcpy(dst, src, n);
}

/* ---- float64 ------------------------------------------------------------ */
/* Unpacked finite nonzero values are m * 2^(e - 62) with bit 62 of m set:
 * 53 significant bits at 62..10 and 10 more bits below for rounding; an
 * inexact low part is "jammed" into bit 0 (sticky). */

#define SIGN (1ull << 63)
#define FRAC ((1ull << 52) - 1)
#define QNAN 0x7ff8000000000000ull
#define INF 0x7ff0000000000000ull

static u64 bits_of(double d) {
    union { double d; u64 u; } x;
    x.d = d;
    return x.u;
}
static double double_of(u64 u) {
    union { double d; u64 u; } x;
    x.u = u;
    return x.d;
}

static int is_nan(u64 a) { return (a & ~SIGN) > INF; }

/* Right shift keeping a sticky bit for everything shifted out. */
static u64 shr_jam(u64 m, int s) {
    if (s <= 0) return m;
    if (s >= 64) return m != 0;
    return (m >> s) | ((m << (64 - s)) != 0);
}

/* Splits a finite nonzero value into (e, m) as described above. */
static void unpack(u64 a, int* e, u64* m) {
    int be = (int)((a >> 52) & 0x7ff);
    u64 f = a & FRAC;
    if (be == 0) { /* subnormal: normalize */
        int s = __builtin_clzll(f) - 1;
        *m = f << s;
        *e = -1022 - (s - 10);
    } else {
        *m = (f | (1ull << 52)) << 10;
        *e = be - 1023;
    }
}

/* Rounds (sign, e, m), m's top bit at 62, to nearest even and encodes it. */
static u64 round_pack(u64 sign, int e, u64 m) {
    int be = e + 1023;
    if (be >= 2047) return sign | INF;
    if (be <= 0) { /* subnormal result: denormalize to the scale of be = 1 */
        m = shr_jam(m, 1 - be);
        be = 0;
    }
    u64 low = m & 0x3ff;
    m >>= 10;
    if (low > 0x200 || (low == 0x200 && (m & 1))) ++m;
    if (be == 0) return sign | m; /* carry into bit 52 makes it the least normal */
    if (m >> 53) { /* rounding carried out: 1.111..1 -> 10.000 */
        m >>= 1;
        if (++be >= 2047) return sign | INF;
    }
    return sign | ((u64)be << 52) | (m & FRAC);
}

double __hexagon_adddf3(double x, double y) {
    u64 a = bits_of(x), b = bits_of(y);
    if (is_nan(a)) return double_of(a | (1ull << 51));
    if (is_nan(b)) return double_of(b | (1ull << 51));
    if ((a & ~SIGN) == INF) return double_of(((b & ~SIGN) == INF && (a ^ b) == SIGN) ? QNAN : a);
    if ((b & ~SIGN) == INF) return y;
    if ((b & ~SIGN) == 0) return double_of((a & ~SIGN) == 0 ? (a & b) : a); /* -0 + -0 = -0 */
    if ((a & ~SIGN) == 0) return y;
    if ((a & ~SIGN) < (b & ~SIGN)) { /* make |a| >= |b| */
        u64 t = a;
        a = b;
        b = t;
    }
    int ea, eb;
    u64 ma, mb;
    unpack(a, &ea, &ma);
    unpack(b, &eb, &mb);
    mb = shr_jam(mb, ea - eb);
    u64 sign = a & SIGN;
    if ((a ^ b) & SIGN) {
        u64 m = ma - mb;
        if (m == 0) return double_of(0); /* x - x = +0 */
        int s = __builtin_clzll(m) - 1;
        return double_of(round_pack(sign, ea - s, m << s));
    }
    u64 m = ma + mb; /* < 2^64 since both < 2^63 */
    if (m >> 63) return double_of(round_pack(sign, ea + 1, shr_jam(m, 1)));
    return double_of(round_pack(sign, ea, m));
}

double __hexagon_subdf3(double x, double y) {
    return __hexagon_adddf3(x, double_of(bits_of(y) ^ SIGN));
}

double __hexagon_muldf3(double x, double y) {
    u64 a = bits_of(x), b = bits_of(y);
    u64 sign = (a ^ b) & SIGN;
    if (is_nan(a)) return double_of(a | (1ull << 51));
    if (is_nan(b)) return double_of(b | (1ull << 51));
    int a_inf = (a & ~SIGN) == INF, b_inf = (b & ~SIGN) == INF;
    int a_zero = (a & ~SIGN) == 0, b_zero = (b & ~SIGN) == 0;
    if (a_inf || b_inf) return double_of((a_zero || b_zero) ? QNAN : (sign | INF));
    if (a_zero || b_zero) return double_of(sign);
    int ea, eb;
    u64 ma, mb;
    unpack(a, &ea, &ma);
    unpack(b, &eb, &mb);
    ma >>= 10; /* 53-bit significands, top bit 52 */
    mb >>= 10;
    /* 106-bit product hi:lo from 32-bit halves */
    u64 al = ma & 0xffffffffu, ah = ma >> 32, bl = mb & 0xffffffffu, bh = mb >> 32;
    u64 ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    u64 mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    u64 lo = (ll & 0xffffffffu) | (mid << 32);
    u64 hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    /* product's top bit is 104 or 105, i.e. bit 40 or 41 of hi */
    int e = ea + eb;
    int top = (hi >> 41) ? 105 : 104;
    if (top == 105) ++e;
    int s = top - 62; /* 42 or 43: bring the top bit to 62 */
    u64 m = (hi << (64 - s)) | (lo >> s) | ((lo << (64 - s)) != 0);
    return double_of(round_pack(sign, e, m));
}

double __hexagon_divdf3(double x, double y) {
    u64 a = bits_of(x), b = bits_of(y);
    u64 sign = (a ^ b) & SIGN;
    if (is_nan(a)) return double_of(a | (1ull << 51));
    if (is_nan(b)) return double_of(b | (1ull << 51));
    int a_inf = (a & ~SIGN) == INF, b_inf = (b & ~SIGN) == INF;
    int a_zero = (a & ~SIGN) == 0, b_zero = (b & ~SIGN) == 0;
    if ((a_inf && b_inf) || (a_zero && b_zero)) return double_of(QNAN);
    if (a_inf || b_zero) return double_of(sign | INF);
    if (b_inf || a_zero) return double_of(sign);
    int ea, eb;
    u64 ma, mb;
    unpack(a, &ea, &ma);
    unpack(b, &eb, &mb);
    ma >>= 10;
    mb >>= 10;
    int e = ea - eb;
    if (ma < mb) {
        ma <<= 1;
        --e;
    }
    /* ma / mb in [1, 2): 63 quotient bits by restoring division */
    u64 q = 0, r = ma;
    for (int i = 62; i >= 0; --i, r <<= 1) {
        if (r >= mb) {
            r -= mb;
            q |= 1ull << i;
        }
    }
    return double_of(round_pack(sign, e, q | (r != 0)));
}

float __hexagon_divsf3(float x, float y) {
    return (float)__hexagon_divdf3((double)x, (double)y);
}

/* Square root, digit by digit: 55 result bits (53 + half + one more), the
 * remainder's nonzero-ness jammed into the last; then round_pack. */
double __hexagon_sqrtdf2(double x) {
    u64 a = bits_of(x);
    if (is_nan(a)) return double_of(a | (1ull << 51));
    if ((a & ~SIGN) == 0) return x; /* +-0 */
    if (a & SIGN) return double_of(QNAN);
    if (a == INF) return x;
    int e;
    u64 m;
    unpack(a, &e, &m);
    m >>= 10; /* x = m * 2^(e - 52), m in [2^52, 2^53) */
    if (e & 1) {
        m <<= 1;
        --e;
    }
    /* q = floor(sqrt(m * 2^56)), in [2^54, 2^55); x^(1/2) = q * 2^(e/2 - 54) */
    u64 q = 0, r = 0;
    for (int p = 108; p >= 0; p -= 2) {
        u64 pair = p >= 56 ? (m >> (p - 56)) & 3 : 0;
        u64 t = (q << 2) | 1;
        r = (r << 2) | pair;
        q <<= 1;
        if (r >= t) {
            r -= t;
            q |= 1;
        }
    }
    return double_of(round_pack(0, e / 2, (q | (r != 0)) << 8));
}

/* Exact in float64, then rounded once more: equals rounding once. */
float __hexagon_sqrtf(float x) { return (float)__hexagon_sqrtdf2((double)x); }

/* LLVM calls these instead when fast math is on (Halide's code does, unless
 * built with strict_float); correctly rounded results are fine there too. */
double __hexagon_fast_adddf3(double x, double y) { return __hexagon_adddf3(x, y); }
double __hexagon_fast_subdf3(double x, double y) { return __hexagon_subdf3(x, y); }
double __hexagon_fast_muldf3(double x, double y) { return __hexagon_muldf3(x, y); }
double __hexagon_fast_divdf3(double x, double y) { return __hexagon_divdf3(x, y); }
float __hexagon_fast_divsf3(float x, float y) { return __hexagon_divsf3(x, y); }
double __hexagon_fast2_sqrtdf2(double x) { return __hexagon_sqrtdf2(x); }
float __hexagon_fast2_sqrtf(float x) { return __hexagon_sqrtf(x); }

#ifdef __hexagon__ /* C library names: only where there is no libm */
double sqrt(double x) { return __hexagon_sqrtdf2(x); }
float sqrtf(float x) { return __hexagon_sqrtf(x); }

/* fmaf: LLVM makes llvm.fma.f32 a call; the core's sffma instruction
 * ("Rx += sfmpy(Rs, Rt)") rounds once, as fmaf must. */
float fmaf(float x, float y, float z) {
    __asm__("%0 += sfmpy(%1, %2)" : "+r"(z) : "r"(x), "r"(y));
    return z;
}
#endif

/* ---- rounding to integral values (libm) ---------------------------------
 * Exact by construction: the fraction bits below the binary point are cleared (trunc), and floor /
 * ceil step one unit away from zero when a cleared fraction was non-zero on their side; NaN, Inf
 * and values already integral (exponent >= 52, resp. 23) are returned as they are, -0 stays -0. */
double trunc(double x) {
  const u64 a = bits_of(x);
  const int e = (int)((a >> 52) & 0x7ff) - 1023;
  if (e >= 52) return x;                      /* integral, Inf or NaN */
  if (e < 0) return double_of(a & SIGN);      /* |x| < 1: +-0 */
  return double_of(a & ~(((u64)1 << (52 - e)) - 1));
}
double floor(double x) {
  const double t = trunc(x);
  return (x < 0 && t != x) ? t - 1.0 : t;
}
double ceil(double x) {
  const double t = trunc(x);
  return (x > 0 && t != x) ? t + 1.0 : t;
}
float truncf(float x) {
  u32 a;
  int e;
  __builtin_memcpy(&a, &x, 4);
  e = (int)((a >> 23) & 0xff) - 127;
  if (e >= 23) return x;
  a = e < 0 ? (a & 0x80000000u) : (a & ~((1u << (23 - e)) - 1));
  __builtin_memcpy(&x, &a, 4);
  return x;
}
float floorf(float x) {
  const float t = truncf(x);
  return (x < 0 && t != x) ? t - 1.0f : t;
}
float ceilf(float x) {
  const float t = truncf(x);
  return (x > 0 && t != x) ? t + 1.0f : t;
}
