/* The few libm functions the modules need, as exact inline code, so that libm is not linked
   (docs/startup.md: loading it is about a quarter of a millisecond of every command's start-up).
   Each returns exactly what the C library's function returns (tests/unit/test_core_mathx.c compares
   them on edge cases and random bits); sqrt needs nothing (an instruction under -fno-math-errno),
   and exp/log come from core/libm_dl.h. */
#ifndef MPK_CORE_MATHX_H
#define MPK_CORE_MATHX_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* floor(x). Below 2^52 in magnitude a double converts to int64 exactly after truncation. */
static inline double mpk_floor(double x) {
  if (!(fabs(x) < 4503599627370496.0) || x == 0) return x; /* already whole, ±0, ±inf, NaN */
  double t = (double)(int64_t)x;
  return t > x ? t - 1.0 : t;
}

/* Math.round: the nearest integer, ties toward +Infinity (not C's round(), which ties away from
   zero, nor floor(x + 0.5), off by one at 0.49999999999999994), -0 for [-0.5, 0) as in JS;
   x - floor(x) is exact. */
static inline double mpk_js_round(double x) {
  if (!isfinite(x)) return x;
  double f = mpk_floor(x);
  if (x - f < 0.5) return f;
  return f == -1 ? -0.0 : f + 1;
}

/* nextafterf(x, INFINITY): the next float above x. */
static inline float mpk_nextupf(float x) {
  if (x != x || x == INFINITY) return x;
  if (x == 0) return 0x1p-149f; /* from either zero: the smallest subnormal */
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u += x > 0 ? 1u : (uint32_t)-1; /* away from zero above it, toward zero below */
  memcpy(&x, &u, sizeof x);
  return x;
}

/* fmaf(a, b, c) without the instruction: a * b is exact in double (24 + 24 bits), the sum is
   rounded to odd in double (its rounding error from TwoSum) and then to float, which is exact
   because 53 >= 2 * 24 + 2 bits. */
static inline float mpk_fmaf_soft(float a, float b, float c) {
  double p = (double)a * (double)b, s = p + (double)c;
  double v = s - p, e = (p - (s - v)) + ((double)c - v);
  if (e != 0 && isfinite(s)) {
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    if (!(u & 1)) { /* even and inexact: step to the odd neighbour on the true sum's side */
      u += (e > 0) == (s > 0) ? 1u : (uint64_t)-1;
      memcpy(&s, &u, sizeof s);
    }
  }
  return (float)s;
}

/* fmaf(a, b, c): a * b + c rounded once; the instruction where the target has one. */
static inline float mpk_fmaf(float a, float b, float c) {
#ifdef __FP_FAST_FMAF
  return __builtin_fmaf(a, b, c);
#else
  return mpk_fmaf_soft(a, b, c);
#endif
}

#endif
