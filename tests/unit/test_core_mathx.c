/* core/mathx.h, the libm functions the library computes itself (libm is not linked: docs/startup.md):
   each equal to the C library's bit for bit, on the edge cases and on random bit patterns. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "core/mathx.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
static float bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint32_t f_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static uint64_t d_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
/* The same float, NaNs equal whatever their payload. */
static int same_f(float a, float b) { return (isnan(a) && isnan(b)) || f_bits(a) == f_bits(b); }

static void test_floor(void **state) {
  (void)state;
  const double edge[] = {0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 0.49999999999999994, -0.49999999999999994, 2.5, -2.5,
                         4503599627370495.5, -4503599627370495.5, 4503599627370496.0, -4503599627370497.0,
                         1e300, -1e300, DBL_MIN, -DBL_MIN, 4.9e-324, -4.9e-324, INFINITY, -INFINITY};
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) assert_int_equal(d_bits(mpk_floor(edge[i])), d_bits(floor(edge[i])));
  assert_true(isnan(mpk_floor(NAN)));
  for (int i = 0; i < 2000000; i++) {
    uint64_t u = next();
    if (i & 1) u = (u & 0x800fffffffffffffu) | ((uint64_t)(1023 - 8 + (u >> 52) % 70) << 52); /* around 2^-8..2^61 */
    double x;
    memcpy(&x, &u, sizeof x);
    if (isnan(x)) continue;
    if (d_bits(mpk_floor(x)) != d_bits(floor(x))) fail_msg("floor(%a): %a, libm %a", x, mpk_floor(x), floor(x));
  }
}

/* Math.round's ties go up: 2.5 -> 3, -2.5 -> -2; 0.49999999999999994 -> 0 (floor(x + 0.5) gives 1). */
static void test_js_round(void **state) {
  (void)state;
  const double in[] = {2.5, -2.5, 0.5, -0.5, 0.49999999999999994, 1.4999999999999998, 4503599627370495.5, 1e300, -0.0};
  const double want[] = {3, -2, 1, -0.0, 0, 1, 4503599627370496.0, 1e300, -0.0};
  for (size_t i = 0; i < sizeof in / sizeof *in; i++) assert_int_equal(d_bits(mpk_js_round(in[i])), d_bits(want[i]));
  assert_true(isinf(mpk_js_round(INFINITY)) && isnan(mpk_js_round(NAN)));
}

static void test_nextupf(void **state) {
  (void)state;
  const float edge[] = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, FLT_MIN, -FLT_MIN, 1.0f, -1.0f, FLT_MAX, -FLT_MAX,
                        INFINITY, -INFINITY, 0x1.fffffep-127f, -0x1p-126f};
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++)
    assert_int_equal(f_bits(mpk_nextupf(edge[i])), f_bits(nextafterf(edge[i], INFINITY)));
  assert_true(isnan(mpk_nextupf(NAN)));
  for (int i = 0; i < 2000000; i++) {
    float x = bits_f((uint32_t)next());
    if (!same_f(mpk_nextupf(x), nextafterf(x, INFINITY))) fail_msg("nextafterf(%a, inf): %a", (double)x, (double)mpk_nextupf(x));
  }
}

/* Three floats of nearby exponents (so the product and the addend overlap and round in earnest), or
   of any bits. */
static float draw(int wide, int base) {
  uint32_t u = (uint32_t)next();
  if (wide) return bits_f(u);
  return bits_f((u & 0x807fffffu) | (uint32_t)(base + (int)((u >> 23) % 24) - 12) << 23);
}

static void test_fmaf(void **state) {
  (void)state;
  const float v[] = {0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY,
                     0x1.000002p0f, 0x1.fffffep-1f, 3.0f, 1.0f / 3.0f, 0x1p-75f, 0x1p64f, 0x1.8p-63f};
  size_t n = sizeof v / sizeof *v;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      for (size_t k = 0; k < n; k++) {
        float want = fmaf(v[i], v[j], v[k]);
        if (!same_f(mpk_fmaf_soft(v[i], v[j], v[k]), want) || !same_f(mpk_fmaf(v[i], v[j], v[k]), want))
          fail_msg("fmaf(%a, %a, %a): %a, libm %a", (double)v[i], (double)v[j], (double)v[k],
                   (double)mpk_fmaf_soft(v[i], v[j], v[k]), (double)want);
      }
  /* the product's low half decides a tie of the plain sum: a * b = 1 + 2^-24 + 2^-48, c = -1 */
  assert_int_equal(f_bits(mpk_fmaf_soft(0x1.000002p0f, 0x1.fffffcp-1f, -1.0f)),
                   f_bits(fmaf(0x1.000002p0f, 0x1.fffffcp-1f, -1.0f)));
  long differ = 0;
  for (int i = 0; i < 4000000; i++) {
    int wide = i % 4 == 0, base = 127 + (int)(next() % 200) - 100;
    float a = draw(wide, base), b = draw(wide, 127), c = draw(wide, base + (int)(next() % 5) - 2);
    if (i % 8 == 1) c = -(float)((double)a * b); /* cancellation: the sum is the product's rounding error */
    float want = fmaf(a, b, c);
    if (!same_f(mpk_fmaf_soft(a, b, c), want) || !same_f(mpk_fmaf(a, b, c), want)) {
      if (differ++ < 5)
        print_error("fmaf(%a, %a, %a): %a, libm %a\n", (double)a, (double)b, (double)c, (double)mpk_fmaf_soft(a, b, c),
                    (double)want);
    }
  }
  assert_int_equal(differ, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_floor), cmocka_unit_test(test_js_round), cmocka_unit_test(test_nextupf),
                                     cmocka_unit_test(test_fmaf)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
