/* The LoRA merge arithmetic (src/mt/merge_kernel.c, merge_tiles.c):
   - float16/bfloat16 conversions: nearest-even by an independent neighbour check, and bit-equal
     to the CPU's F16C instructions when it has them;
   - dense merges against an independent float64 computation (error bound), against a plain
     triple loop of the documented formula (bit for bit), every SIMD path against the portable one
     bit for bit on random and edge values, both orientations (one is the exact transpose of the
     other), blocks and threads and pwrite() giving the same bytes, progress and cancel, errors;
   - quantized merges: the layout rules, the round-trip bound |dequant(requant(w)) − w| <= scale/2
     (+ float rounding) against float64, exact zeros, all-zero groups, one and two passes,
     packed uint4, transposed layouts, refusals. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/endian.h"
#include "mt/merge/merge_kernel.h"
#include "testutil.h"

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static float rndf(float lo, float hi) { return lo + (hi - lo) * (float)((rnd() >> 40) * 0x1p-24); }

static const mpk_mk_dtype DTYPES[] = {MPK_MK_F32, MPK_MK_F16, MPK_MK_BF16};
static const char *DTN[] = {"f32", "f16", "bf16"};

/* The kernel's tensors are file bytes: little-endian on every host (merge_kernel.h). */
static float load_el(const void *p, size_t k, mpk_mk_dtype dt) {
  const uint8_t *b = p;
  if (dt == MPK_MK_F16) return mpk_mk_f16_to_f32(mpk_load_le16(b + 2 * k));
  if (dt == MPK_MK_BF16) return mpk_mk_bf16_to_f32(mpk_load_le16(b + 2 * k));
  return mpk_load_le_f32(b + 4 * k);
}
static void store_el(void *p, size_t k, mpk_mk_dtype dt, float v) {
  uint8_t *b = p;
  if (dt == MPK_MK_F16) mpk_store_le16(b + 2 * k, mpk_mk_f32_to_f16(v));
  else if (dt == MPK_MK_BF16) mpk_store_le16(b + 2 * k, mpk_mk_f32_to_bf16(v));
  else mpk_store_le_f32(b + 4 * k, v);
}
/* Same bits, or both NaN (which NaN an add returns when both operands are NaN is the compiler's
   choice of operand order: docs/merge-arithmetic.md). */
static int same_el(const void *x, const void *y, size_t k, mpk_mk_dtype dt) {
  float a = load_el(x, k, dt), b = load_el(y, k, dt);
  if (isnan(a) && isnan(b)) return 1;
  size_t es = mpk_mk_dtype_size(dt);
  return memcmp((const char *)x + k * es, (const char *)y + k * es, es) == 0;
}

static int n_impls(mpk_mk_impl *out) {
  int n = 0;
  const mpk_mk_impl all[] = {MPK_MK_PORTABLE, MPK_MK_AVX2, MPK_MK_AVX512};
  for (int i = 0; i < 3; i++)
    if (mpk_mk_impl_available(all[i])) out[n++] = all[i];
  return n;
}

/* ulp of a dtype at magnitude |x| (normal range; subnormal spacing below). */
static double ulp_of(double x, mpk_mk_dtype dt) {
  int mant = dt == MPK_MK_F32 ? 23 : dt == MPK_MK_F16 ? 10 : 7;
  int emin = dt == MPK_MK_F16 ? -14 : -126;
  int e;
  frexp(fabs(x), &e); /* |x| in [2^(e-1), 2^e) */
  e -= 1;
  if (e < emin) e = emin;
  return ldexp(1.0, e - mant);
}

typedef struct dense_case {
  int64_t rows, cols, rank;
  int transposed;
  mpk_mk_dtype dt;
  float *A, *B;
  void *base;
  float scale;
} dense_case;

static void dense_free(dense_case *c) {
  free(c->A);
  free(c->B);
  free(c->base);
}

/* out, in from the on-disk shape. */
static void dims(const dense_case *c, int64_t *out, int64_t *in) {
  *out = c->transposed ? c->cols : c->rows;
  *in = c->transposed ? c->rows : c->cols;
}

static void dense_make(dense_case *c, int64_t rows, int64_t cols, int64_t rank, int transposed, mpk_mk_dtype dt) {
  memset(c, 0, sizeof *c);
  c->rows = rows, c->cols = cols, c->rank = rank, c->transposed = transposed, c->dt = dt;
  int64_t out, in;
  dims(c, &out, &in);
  c->A = malloc((size_t)(rank * in) * sizeof(float));
  c->B = malloc((size_t)(out * rank) * sizeof(float));
  c->base = malloc((size_t)(rows * cols) * mpk_mk_dtype_size(dt));
  assert_true(c->A && c->B && c->base);
  for (int64_t k = 0; k < rank * in; k++) c->A[k] = rndf(-1, 1);
  for (int64_t k = 0; k < out * rank; k++) c->B[k] = rndf(-1, 1);
  for (int64_t k = 0; k < rows * cols; k++) store_el(c->base, (size_t)k, dt, rndf(-2, 2));
  c->scale = 16.0f / (float)rank * 0.37f;
}

static mpk_merge_dense dense_desc(const dense_case *c, mpk_mk_impl impl) {
  return (mpk_merge_dense){.name = "w.bin", .base = c->base,
                           .base_len = (size_t)(c->rows * c->cols) * mpk_mk_dtype_size(c->dt), .dtype = c->dt,
                           .rows = c->rows, .cols = c->cols, .transposed = c->transposed, .A = c->A, .B = c->B,
                           .rank = c->rank, .scale = c->scale, .impl = impl};
}

/* The documented formula as a plain loop: d = Σ_r fma((scale·B[o][r]), A[r][i]), r ascending;
   merged = round(W + d). */
static void *reference_formula(const dense_case *c) {
  size_t es = mpk_mk_dtype_size(c->dt);
  void *out = malloc((size_t)(c->rows * c->cols) * es);
  assert_non_null(out);
  for (int64_t i = 0; i < c->rows; i++)
    for (int64_t j = 0; j < c->cols; j++) {
      int64_t o = c->transposed ? j : i, in = c->transposed ? i : j;
      float d = 0.0f;
      for (int64_t r = 0; r < c->rank; r++) d = fmaf(c->scale * c->B[o * c->rank + r], c->A[r * (c->transposed ? c->rows : c->cols) + in], d);
      size_t k = (size_t)(i * c->cols + j);
      store_el(out, k, c->dt, load_el(c->base, k, c->dt) + d);
    }
  return out;
}

static void *merge_rows_all(const dense_case *c, mpk_mk_impl impl) {
  size_t es = mpk_mk_dtype_size(c->dt);
  void *out = malloc((size_t)(c->rows * c->cols) * es);
  assert_non_null(out);
  mpk_merge_dense m = dense_desc(c, impl);
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_merge_dense_rows(&m, 0, c->rows, out, &e);
  if (rc) fail_msg("%s", tu_err(&e));
  return out;
}

/* ---------------------------------------------------------------- conversions */

/* x is nearest to h's value among h's neighbours, ties to the even one: an independent check of
   round-to-nearest-even that does not reuse the conversion's own arithmetic. */
static void check_nearest(float x, uint16_t h, float (*val)(uint16_t), int mant_bits_even) {
  (void)mant_bits_even;
  double v = val(h), dx = fabs((double)x - v);
  uint16_t mag = h & 0x7fff;
  if (isinf(v)) {
    /* overflow: x must be at least the midpoint between the largest finite value and 2^(emax+1) */
    uint16_t big = (uint16_t)(mag - 1);
    double maxf = val(big), next = 2 * maxf - val((uint16_t)(big - 1));
    assert_true(fabs((double)x) >= (maxf + next) / 2);
    return;
  }
  for (int s = -1; s <= 1; s += 2) {
    int nm = (int)mag + s;
    if (nm < 0) continue; /* the other side of zero is the mirror; fine */
    uint16_t nb = (uint16_t)((h & 0x8000) | nm);
    double nv = val(nb);
    if (isinf(nv) || isnan(nv)) continue;
    double dn = fabs((double)x - nv);
    if (dn < dx) fail_msg("x=%a -> %04x (%a) but %04x (%a) is nearer", (double)x, h, v, nb, nv);
    if (dn == dx && (mag & 1)) fail_msg("x=%a tie -> odd %04x, even %04x", (double)x, h, nb);
  }
}

#ifdef MPK_MK_X86
#include <immintrin.h>
__attribute__((target("f16c"))) static uint16_t hw_f2h(float f) {
  return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 0);
}
__attribute__((target("f16c"))) static float hw_h2f(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}
#endif

static int hw_f16c(void) {
#ifdef MPK_MK_X86
  return mpk_mk_impl_available(MPK_MK_AVX2) || mpk_mk_impl_available(MPK_MK_AVX512);
#else
  return 0;
#endif
}

static float f16v(uint16_t h) { return mpk_mk_f16_to_f32(h); }
static float bf16v(uint16_t h) { return mpk_mk_bf16_to_f32(h); }

static void test_f16_conversions(void **state) {
  (void)state;
  int hw = hw_f16c();
  /* every half: exact widening, and back again to the same half (NaNs: quiet, same payload top) */
  for (uint32_t h = 0; h < 65536; h++) {
    float f = mpk_mk_f16_to_f32((uint16_t)h);
    uint16_t back = mpk_mk_f32_to_f16(f);
    int nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (nan) {
      assert_true(isnan(f));
      assert_int_equal(back, h | 0x200); /* quieted, payload kept */
    } else {
      assert_int_equal(back, h);
    }
#ifdef MPK_MK_X86
    if (hw) assert_int_equal(mpk_mk_bits(hw_h2f((uint16_t)h)), mpk_mk_bits(f));
#endif
  }
  /* float32 -> float16: around every midpoint between neighbouring halves, ties, overflow, tiny,
     plus random bit patterns */
  float xs[12];
  int n_checked = 0;
  for (uint32_t h = 0; h < 0x7c00; h++) {
    double a = mpk_mk_f16_to_f32((uint16_t)h), b = h + 1 < 0x7c00 ? mpk_mk_f16_to_f32((uint16_t)(h + 1)) : 65536.0;
    float mid = (float)((a + b) / 2); /* exact: halves have 11 bits */
    xs[0] = mid;
    xs[1] = nextafterf(mid, 0);
    xs[2] = nextafterf(mid, INFINITY);
    xs[3] = (float)a;
    for (int k = 0; k < 4; k++) {
      for (int s = 0; s < 2; s++) {
        float x = s ? -xs[k] : xs[k];
        uint16_t got = mpk_mk_f32_to_f16(x);
        check_nearest(x, got, f16v, 1);
#ifdef MPK_MK_X86
        if (hw) assert_int_equal(hw_f2h(x), got);
#endif
        n_checked++;
      }
    }
  }
  for (int k = 0; k < 400000; k++) {
    float x = mpk_mk_float((uint32_t)rnd());
    uint16_t got = mpk_mk_f32_to_f16(x);
    if (isnan(x)) assert_true((got & 0x7c00) == 0x7c00 && (got & 0x3ff));
    else check_nearest(x, got, f16v, 1);
#ifdef MPK_MK_X86
    if (hw) assert_int_equal(hw_f2h(x), got);
#endif
  }
  assert_int_equal(mpk_mk_f32_to_f16(65519.99f), 0x7bff);
  assert_int_equal(mpk_mk_f32_to_f16(65520.0f), 0x7c00); /* ties to even: the even one is infinity */
  assert_int_equal(mpk_mk_f32_to_f16(1e30f), 0x7c00);
  assert_int_equal(mpk_mk_f32_to_f16(-INFINITY), 0xfc00);
  assert_int_equal(mpk_mk_f32_to_f16(0x1p-25f), 0x0000);   /* half of the smallest subnormal: to even 0 */
  assert_int_equal(mpk_mk_f32_to_f16(0x1.000002p-25f), 0x0001);
  assert_int_equal(mpk_mk_f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(mpk_mk_f32_to_f16(mpk_mk_float(0x7f800001)), 0x7e00); /* signalling NaN: quiet */
  print_message("f16: %d edge values checked%s\n", n_checked, hw ? ", bit-equal to F16C" : "");
}

static void test_bf16_conversions(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = mpk_mk_bf16_to_f32((uint16_t)h);
    assert_int_equal(mpk_mk_bits(f), h << 16);
    uint16_t back = mpk_mk_f32_to_bf16(f);
    if (isnan(f)) assert_int_equal(back, h | 0x40);
    else assert_int_equal(back, h);
  }
  for (uint32_t h = 0; h < 0x7f80; h++) {
    uint32_t lo = h << 16;
    uint32_t pats[] = {lo | 0x8000u, lo | 0x7fffu, lo | 0x8001u, lo | 0x1234u};
    for (int k = 0; k < 4; k++) {
      float x = mpk_mk_float(pats[k]);
      uint16_t got = mpk_mk_f32_to_bf16(x);
      check_nearest(x, got, bf16v, 1);
      assert_int_equal(mpk_mk_f32_to_bf16(-x), got | 0x8000);
    }
  }
  for (int k = 0; k < 400000; k++) {
    float x = mpk_mk_float((uint32_t)rnd());
    uint16_t got = mpk_mk_f32_to_bf16(x);
    if (isnan(x)) assert_true(isnan(mpk_mk_bf16_to_f32(got)));
    else check_nearest(x, got, bf16v, 1);
  }
  assert_int_equal(mpk_mk_f32_to_bf16(mpk_mk_float(0x00000001)), 0x0000); /* subnormals round, never flush */
  assert_int_equal(mpk_mk_f32_to_bf16(mpk_mk_float(0x00008001)), 0x0001);
  assert_int_equal(mpk_mk_f32_to_bf16(mpk_mk_float(0x7f7fffff)), 0x7f80); /* overflow: infinity */
}

/* ---------------------------------------------------------------- dense */

static const int64_t SHAPES[][2] = {{1, 1}, {3, 5}, {4, 16}, {17, 33}, {64, 64}, {67, 129}, {130, 31}, {5, 300}, {9, 1000},
                                    {7, 4200} /* rank 64: R is over 1 MiB, so the SIMD paths chunk the columns */};
static const int64_t RANKS[] = {1, 2, 7, 16, 64};

/* Every shape × rank × orientation × dtype: bit-equal to the plain loop, within the error bound of
   the float64 result, and every implementation bit-equal to the portable one. */
static void test_dense_against_float64(void **state) {
  (void)state;
  mpk_mk_impl impls[3];
  int ni = n_impls(impls);
  int cases = 0;
  double worst = 0; /* worst error / bound */
  for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++)
    for (size_t ri = 0; ri < sizeof RANKS / sizeof RANKS[0]; ri++)
      for (int t = 0; t < 2; t++)
        for (int d = 0; d < 3; d++) {
          dense_case c;
          dense_make(&c, SHAPES[s][0], SHAPES[s][1], RANKS[ri], t, DTYPES[d]);
          void *ref = reference_formula(&c);
          int64_t out_d, in_d;
          dims(&c, &out_d, &in_d);
          for (int k = 0; k < ni; k++) {
            void *got = merge_rows_all(&c, impls[k]);
            for (size_t e = 0; e < (size_t)(c.rows * c.cols); e++)
              if (!same_el(got, ref, e, c.dt))
                fail_msg("%s %s [%lld,%lld] rank %lld t=%d: element %zu = %a, formula %a", mpk_mk_impl_name(impls[k]),
                         DTN[d], (long long)c.rows, (long long)c.cols, (long long)c.rank, t, e,
                         (double)load_el(got, e, c.dt), (double)load_el(ref, e, c.dt));
            free(got);
          }
          /* float64: merged = W + scale·Σ B·A, exactly enough */
          for (int64_t i = 0; i < c.rows; i++)
            for (int64_t j = 0; j < c.cols; j++) {
              int64_t o = t ? j : i, in = t ? i : j;
              double acc = 0, mag = 0;
              for (int64_t r = 0; r < c.rank; r++) {
                double p = (double)c.scale * c.B[o * c.rank + r] * c.A[r * in_d + in];
                acc += p;
                mag += fabs(p);
              }
              size_t e = (size_t)(i * c.cols + j);
              double w = load_el(c.base, e, c.dt), exact = w + acc;
              /* float32 work: one rounding of scale·B, rank fma roundings, one add */
              double err32 = (c.rank + 3) * 0x1p-24 * (mag + fabs(w) + fabs(exact));
              double bound = err32 + 0.5 * ulp_of(fabs(exact) + err32, c.dt);
              double got = load_el(ref, e, c.dt), errv = fabs(got - exact);
              if (!(errv <= bound))
                fail_msg("%s [%lld,%lld] rank %lld: |%a - %a| = %g > bound %g", DTN[d], (long long)c.rows,
                         (long long)c.cols, (long long)c.rank, got, exact, errv, bound);
              if (bound > 0 && errv / bound > worst) worst = errv / bound;
            }
          free(ref);
          dense_free(&c);
          cases++;
        }
  print_message("%d cases × %d implementations; worst error %.6f of its bound\n", cases, ni, worst);
}

/* Values that stress the rounding: NaN, ±infinity, subnormals of every dtype, values beside the
   float16 overflow threshold and at rounding ties, huge factors that overflow in the sum. */
static float edge_value(void) {
  static const float fixed[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65519.0f, 65520.0f, -65520.0f,
                                0x1p-24f, 0x1p-25f, 0x1.8p-24f, 0x1p-14f, 0x1p-126f, 0x1p-149f, 0x1p-133f,
                                3.0e38f, -3.0e38f, 1.0f, 1.0009765625f, 1.00048828125f, 0x1.0080p0f};
  /* NaNs whose payload would carry into the sign or exponent if rounded like numbers */
  static const uint32_t nans[] = {0xffffffffu, 0x7fffffffu, 0x7f800001u, 0xff8000ffu, 0x7fbfffffu};
  unsigned k = (unsigned)(rnd() % 45);
  if (k < sizeof fixed / sizeof fixed[0]) return fixed[k];
  if (k >= 40) return mpk_mk_float(nans[k - 40]);
  if (k < 30) return mpk_mk_float((uint32_t)rnd()); /* any bit pattern */
  return rndf(-4, 4) * ldexpf(1.0f, (int)(rnd() % 60) - 40);
}

static void test_dense_simd_bit_identical_edges(void **state) {
  (void)state;
  mpk_mk_impl impls[3];
  int ni = n_impls(impls);
  if (ni < 2) print_message("only the portable implementation runs on this CPU: nothing to compare\n");
  size_t compared = 0;
  for (int round = 0; round < 60; round++) {
    int64_t rows = 1 + (int64_t)(rnd() % 37), cols = 1 + (int64_t)(rnd() % 150), rank = 1 + (int64_t)(rnd() % 20);
    if (round % 10 == 0) cols = 64 * (1 + (int64_t)(rnd() % 4)) + (int64_t)(rnd() % 17);
    for (int d = 0; d < 3; d++) {
      dense_case c;
      dense_make(&c, rows, cols, rank, (int)(rnd() & 1), DTYPES[d]);
      int64_t out_d, in_d;
      dims(&c, &out_d, &in_d);
      /* a third of everything is an edge value */
      for (int64_t k = 0; k < rows * cols; k++)
        if (rnd() % 3 == 0) store_el(c.base, (size_t)k, c.dt, edge_value());
      for (int64_t k = 0; k < rank * in_d; k++)
        if (rnd() % 8 == 0) c.A[k] = edge_value();
      for (int64_t k = 0; k < out_d * rank; k++)
        if (rnd() % 8 == 0) c.B[k] = edge_value();
      c.scale = round % 7 == 0 ? 0x1p-130f : rndf(0.01f, 4);
      void *ref = merge_rows_all(&c, MPK_MK_PORTABLE);
      void *plain = reference_formula(&c);
      for (int k = 0; k < ni; k++) {
        void *got = k ? merge_rows_all(&c, impls[k]) : plain;
        for (size_t e = 0; e < (size_t)(rows * cols); e++)
          if (!same_el(got, ref, e, c.dt))
            fail_msg("%s vs portable, %s [%lld,%lld] rank %lld: element %zu: %08x vs %08x",
                     k ? mpk_mk_impl_name(impls[k]) : "plain loop", DTN[d], (long long)rows, (long long)cols,
                     (long long)rank, e, mpk_mk_bits(load_el(got, e, c.dt)), mpk_mk_bits(load_el(ref, e, c.dt)));
        compared += (size_t)(rows * cols);
        if (k) free(got);
      }
      free(plain);
      free(ref);
      dense_free(&c);
    }
  }
  print_message("%zu elements compared across %d implementations\n", compared, ni);
}

/* A transposed weight merges to exactly the transpose of the untransposed merge. */
static void test_dense_orientations_transpose(void **state) {
  (void)state;
  for (int d = 0; d < 3; d++) {
    dense_case a;
    dense_make(&a, 37, 91, 8, 0, DTYPES[d]); /* [out=37, in=91] */
    dense_case b = a;
    b.transposed = 1;
    b.rows = a.cols, b.cols = a.rows; /* [in=91, out=37] */
    size_t es = mpk_mk_dtype_size(a.dt);
    b.base = malloc((size_t)(a.rows * a.cols) * es);
    for (int64_t i = 0; i < a.rows; i++)
      for (int64_t j = 0; j < a.cols; j++)
        memcpy((char *)b.base + (size_t)(j * a.rows + i) * es, (char *)a.base + (size_t)(i * a.cols + j) * es, es);
    void *ma = merge_rows_all(&a, MPK_MK_AUTO), *mb = merge_rows_all(&b, MPK_MK_AUTO);
    for (int64_t i = 0; i < a.rows; i++)
      for (int64_t j = 0; j < a.cols; j++)
        assert_memory_equal((char *)ma + (size_t)(i * a.cols + j) * es, (char *)mb + (size_t)(j * a.rows + i) * es, es);
    free(ma);
    free(mb);
    free(b.base);
    dense_free(&a);
  }
}

typedef struct prog {
  uint64_t last, total, calls;
  uint64_t cancel_after; /* 0: never */
} prog;
static int on_progress(void *ctx, uint64_t done, uint64_t total) {
  prog *p = ctx;
  assert_true(done >= p->last); /* never concurrently, never backwards */
  p->last = done, p->total = total, p->calls++;
  return p->cancel_after && p->calls >= p->cancel_after;
}

/* Whole-tensor paths: to_buf and to_fd with 1..3 threads and odd block sizes give the rows()
   bytes; progress adds up; cancel stops. */
static void test_dense_blocks_threads_fd(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char path[512];
  snprintf(path, sizeof path, "%s/out.bin", dir);
  for (int d = 0; d < 3; d++)
    for (int t = 0; t < 2; t++) {
      dense_case c;
      dense_make(&c, 203, 77, 5, t, DTYPES[d]);
      void *ref = merge_rows_all(&c, MPK_MK_AUTO);
      size_t bytes = (size_t)(c.rows * c.cols) * mpk_mk_dtype_size(c.dt);
      const int64_t blocks[] = {0, 1, 3, 4, 50, 1000};
      for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++)
        for (int th = 1; th <= 3; th++) {
          mpk_merge_dense m = dense_desc(&c, MPK_MK_AUTO);
          m.block_rows = blocks[bi];
          prog pg = {0};
          m.progress = on_progress, m.progress_ctx = &pg;
          mpk_error e;
          mpk_error_clear(&e);
          void *buf = calloc(1, bytes);
          if (mpk_merge_dense_to_buf(&m, th, buf, &e)) fail_msg("%s", tu_err(&e));
          assert_memory_equal(buf, ref, bytes);
          assert_int_equal(pg.last, bytes);
          assert_int_equal(pg.total, bytes);
          int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
          assert_true(fd >= 0);
          pg = (prog){0};
          if (mpk_merge_dense_to_fd(&m, th, fd, &e)) fail_msg("%s", tu_err(&e));
          close(fd);
          size_t len;
          uint8_t *file = tu_read_file(path, &len);
          assert_int_equal(len, bytes);
          assert_memory_equal(file, ref, bytes);
          assert_int_equal(pg.last, bytes);
          free(file);
          free(buf);
        }
      /* cancel after the second block */
      mpk_merge_dense m = dense_desc(&c, MPK_MK_AUTO);
      m.block_rows = 8;
      prog pg = {.cancel_after = 2};
      m.progress = on_progress, m.progress_ctx = &pg;
      void *buf = calloc(1, bytes);
      mpk_error e;
      assert_int_equal(mpk_merge_dense_to_buf(&m, 2, buf, &e), MPK_ECANCELLED);
      assert_int_equal(e.code, MPK_ECANCELLED);
      assert_true(pg.last < bytes);
      free(buf);
      free(ref);
      dense_free(&c);
    }
  /* a write error is reported with the file and offset */
  dense_case c;
  dense_make(&c, 16, 16, 2, 0, MPK_MK_F32);
  mpk_merge_dense m = dense_desc(&c, MPK_MK_AUTO);
  int fd = open(path, O_RDONLY);
  mpk_error e;
  assert_int_equal(mpk_merge_dense_to_fd(&m, 1, fd, &e), MPK_EIO);
  assert_non_null(strstr(e.message, "write failed"));
  assert_string_equal(e.file, "w.bin");
  close(fd);
  dense_free(&c);
  tu_sh("rm -rf '%s'", dir);
}

/* A tensor of 4 MiB or more merged into a buffer is written with non-temporal stores where the
   address allows: same bytes, aligned or not, for every implementation. */
static void test_dense_streaming_large(void **state) {
  (void)state;
  mpk_mk_impl impls[3];
  int ni = n_impls(impls);
  for (int d = 0; d < 3; d++) {
    dense_case c;
    dense_make(&c, 1500, 1501, 3, d == 1, DTYPES[d]); /* >= 4.5 MB; odd columns: rows start unaligned too */
    size_t es = mpk_mk_dtype_size(c.dt), bytes = (size_t)(c.rows * c.cols) * es;
    void *ref = reference_formula(&c);
    uint8_t *raw = malloc(bytes + 64 + es);
    for (int k = 0; k < ni; k++)
      for (size_t shift = 0; shift <= es; shift += es) {
        uint8_t *out = (uint8_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63) + shift;
        mpk_merge_dense m = dense_desc(&c, impls[k]);
        mpk_error e;
        memset(out, 0xee, bytes);
        if (mpk_merge_dense_to_buf(&m, 2, out, &e)) fail_msg("%s", tu_err(&e));
        for (size_t i = 0; i < (size_t)(c.rows * c.cols); i++)
          if (!same_el(out, ref, i, c.dt))
            fail_msg("%s %s shift %zu: element %zu differs", mpk_mk_impl_name(impls[k]), DTN[d], shift, i);
      }
    free(raw);
    free(ref);
    dense_free(&c);
  }
}

static void expect_dense_error(mpk_merge_dense m, int code, const char *needle) {
  mpk_error e;
  mpk_error_clear(&e);
  float out[64];
  int rc = mpk_merge_dense_rows(&m, 0, m.rows < 2 ? m.rows : 2, out, &e);
  if (rc != code || !strstr(e.message, needle))
    fail_msg("expected %d '%s', got %d '%s'", code, needle, rc, e.message);
}

static void test_dense_errors(void **state) {
  (void)state;
  dense_case c;
  dense_make(&c, 4, 8, 2, 0, MPK_MK_F16);
  mpk_merge_dense ok = dense_desc(&c, MPK_MK_AUTO), m;
  assert_int_equal(mpk_merge_dense_check(&ok, NULL), 0);
  m = ok, m.base_len -= 2;
  expect_dense_error(m, MPK_EMISMATCH, "base weight has 62 bytes, shape [4, 8] of float16 needs 64");
  m = ok, m.rank = 0;
  expect_dense_error(m, MPK_EINVAL, "rank 0 must be between 1");
  m = ok, m.scale = NAN;
  expect_dense_error(m, MPK_EINVAL, "scale must be a finite number");
  m = ok, m.dtype = (mpk_mk_dtype)7;
  expect_dense_error(m, MPK_EUNSUPPORTED, "float32, float16 or bfloat16");
  m = ok, m.rows = 0;
  expect_dense_error(m, MPK_EINVAL, "both dimensions must be >= 1");
  m = ok, m.rows = INT64_C(1) << 40, m.cols = INT64_C(1) << 40;
  expect_dense_error(m, MPK_ELIMIT, "too large");
  m = ok, m.A = NULL;
  expect_dense_error(m, MPK_EINVAL, "factor A or B is NULL");
  m = ok, m.impl = (mpk_mk_impl)9;
  expect_dense_error(m, MPK_EUNSUPPORTED, "is not available");
  m = ok;
  mpk_error e;
  float out[8];
  assert_int_equal(mpk_merge_dense_rows(&m, 3, 5, out, &e), MPK_EINVAL);
  assert_non_null(strstr(e.message, "rows [3, 5) are not within [0, 4)"));
  mpk_mk_dtype dt;
  assert_int_equal(mpk_mk_dtype_from_name("bfloat16", &dt), 0);
  assert_int_equal(dt, MPK_MK_BF16);
  assert_int_equal(mpk_mk_dtype_from_name("float64", &dt), MPK_EUNSUPPORTED);
  mpk_mk_qtype qt;
  assert_int_equal(mpk_mk_qtype_from_name("uint4", &qt), 0);
  assert_int_equal(qt, MPK_MK_U4);
  assert_int_equal(mpk_mk_qtype_from_name("int4", &qt), MPK_EUNSUPPORTED);
  dense_free(&c);
}

/* ---------------------------------------------------------------- quantized */

typedef struct qcase {
  int64_t rows, cols, rank, group; /* group 0: per-tensor */
  int transposed;
  mpk_mk_qtype qt, zt;
  mpk_mk_dtype st;
  uint8_t *q, *zero;
  void *scale;
  size_t q_len, z_len, s_len;
  int64_t n_groups, sdim[2];
  float *A, *B;
  float lscale;
} qcase;

static size_t packed(mpk_mk_qtype t, size_t n) { return t == MPK_MK_U4 ? (n + 1) / 2 : n; }
static int qget(const uint8_t *p, mpk_mk_qtype t, size_t k) {
  return t == MPK_MK_U4 ? (p[k / 2] >> (4 * (k & 1))) & 15 : p[k];
}
static void qset(uint8_t *p, mpk_mk_qtype t, size_t k, int v) {
  if (t == MPK_MK_U4) p[k / 2] = (uint8_t)((p[k / 2] & ~(15 << (4 * (k & 1)))) | (v << (4 * (k & 1))));
  else p[k] = (uint8_t)v;
}
static float sget(const qcase *c, const void *s, int64_t g) {
  const uint8_t *b = s;
  return c->st == MPK_MK_F16 ? mpk_mk_f16_to_f32(mpk_load_le16(b + 2 * g)) : mpk_load_le_f32(b + 4 * g);
}
static int64_t qgroup(const qcase *c, int64_t i, int64_t j) {
  if (!c->group) return 0;
  return c->transposed ? (i / c->group) * c->cols + j : i * (c->cols / c->group) + j / c->group;
}

static void qcase_make(qcase *c, int64_t rows, int64_t cols, int64_t rank, int64_t group, int transposed,
                       mpk_mk_qtype qt, mpk_mk_qtype zt, mpk_mk_dtype st) {
  memset(c, 0, sizeof *c);
  c->rows = rows, c->cols = cols, c->rank = rank, c->group = group, c->transposed = transposed;
  c->qt = qt, c->zt = zt, c->st = st;
  int64_t out = transposed ? cols : rows, in = transposed ? rows : cols;
  int qmax = qt == MPK_MK_U4 ? 15 : 255;
  if (!group) {
    c->n_groups = 1, c->sdim[0] = 1, c->sdim[1] = 1;
  } else {
    c->n_groups = out * (in / group);
    c->sdim[0] = transposed ? in / group : out;
    c->sdim[1] = transposed ? out : in / group;
  }
  c->q_len = packed(qt, (size_t)(rows * cols));
  c->z_len = packed(zt, (size_t)c->n_groups);
  c->s_len = (size_t)c->n_groups * mpk_mk_dtype_size(st);
  c->q = calloc(1, c->q_len);
  c->zero = calloc(1, c->z_len);
  c->scale = calloc(1, c->s_len);
  c->A = malloc((size_t)(rank * in) * sizeof(float));
  c->B = malloc((size_t)(out * rank) * sizeof(float));
  for (size_t k = 0; k < (size_t)(rows * cols); k++) qset(c->q, qt, k, (int)(rnd() % (unsigned)(qmax + 1)));
  for (int64_t g = 0; g < c->n_groups; g++) {
    qset(c->zero, zt, (size_t)g, (int)(rnd() % (unsigned)(qmax + 1)));
    float s = rndf(0.001f, 0.05f);
    if (st == MPK_MK_F16) mpk_store_le16((uint8_t *)c->scale + 2 * g, mpk_mk_f32_to_f16(s));
    else mpk_store_le_f32((uint8_t *)c->scale + 4 * g, s);
  }
  for (int64_t k = 0; k < rank * in; k++) c->A[k] = rndf(-1, 1);
  for (int64_t k = 0; k < out * rank; k++) c->B[k] = rndf(-1, 1);
  c->lscale = 0.05f;
}

static void qcase_free(qcase *c) {
  free(c->q);
  free(c->zero);
  free(c->scale);
  free(c->A);
  free(c->B);
}

static mpk_merge_quant qdesc(const qcase *c) {
  return (mpk_merge_quant){.name = "q.bin", .q = c->q, .q_len = c->q_len, .q_type = c->qt, .rows = c->rows,
                           .cols = c->cols, .q_scale = c->scale, .q_scale_len = c->s_len, .q_scale_dtype = c->st,
                           .q_scale_ndim = 2, .q_scale_shape = {c->sdim[0], c->sdim[1]}, .q_zero = c->zero,
                           .q_zero_len = c->z_len, .q_zero_type = c->zt, .q_zero_ndim = 2,
                           .q_zero_shape = {c->sdim[0], c->sdim[1]}, .transposed = c->transposed, .A = c->A,
                           .B = c->B, .rank = c->rank, .scale = c->lscale};
}

typedef struct qout {
  uint8_t *q, *zero;
  void *scale;
} qout;

static qout qrun(const qcase *c, mpk_merge_quant m, int threads) {
  qout o = {calloc(1, c->q_len), calloc(1, c->z_len), calloc(1, c->s_len)};
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_merge_quant_to_bufs(&m, threads, o.q, o.scale, o.zero, &e)) fail_msg("%s", tu_err(&e));
  return o;
}
static void qout_free(qout *o) {
  free(o->q);
  free(o->zero);
  free(o->scale);
}
static void qout_equal(const qcase *c, const qout *a, const qout *b) {
  assert_memory_equal(a->q, b->q, c->q_len);
  assert_memory_equal(a->scale, b->scale, c->s_len);
  assert_memory_equal(a->zero, b->zero, c->z_len);
}

/* The float64 merge of the dequantized input: (q − zp)·s + scale·Σ B·A. */
static double qexact(const qcase *c, int64_t i, int64_t j, double *mag) {
  int64_t g = qgroup(c, i, j), o = c->transposed ? j : i, in = c->transposed ? i : j;
  int64_t in_d = c->transposed ? c->rows : c->cols;
  double w = (double)(float)((qget(c->q, c->qt, (size_t)(i * c->cols + j)) - qget(c->zero, c->zt, (size_t)g)) *
                             sget(c, c->scale, g));
  double acc = 0, m = fabs(w);
  for (int64_t r = 0; r < c->rank; r++) {
    double p = (double)c->lscale * c->B[o * c->rank + r] * c->A[r * in_d + in];
    acc += p;
    m += fabs(p);
  }
  *mag = m;
  return w + acc;
}

/* Dequantize the output and compare with float64: |deq − exact| <= s/2 + float rounding; the
   scale is the smallest step of its dtype that covers the group's range (0 included). */
static double check_round_trip(const qcase *c, const qout *o) {
  int qmax = c->qt == MPK_MK_U4 ? 15 : 255;
  double worst = 0;
  double *mn = calloc((size_t)c->n_groups, sizeof(double)), *mx = calloc((size_t)c->n_groups, sizeof(double));
  for (int64_t i = 0; i < c->rows; i++)
    for (int64_t j = 0; j < c->cols; j++) {
      int64_t g = qgroup(c, i, j);
      double mag, exact = qexact(c, i, j, &mag);
      double s = sget(c, o->scale, g);
      int z = qget(o->zero, c->zt, (size_t)g), q = qget(o->q, c->qt, (size_t)(i * c->cols + j));
      assert_true(z <= qmax);
      double deq = (double)(float)((float)(q - z) * (float)s);
      double fl = (c->rank + 4) * 0x1p-24 * (mag + fabs(exact)) + 0x1p-24 * fabs(deq) + 1e-30;
      double err = fabs(deq - exact), bound = s / 2 * (1 + 0x1p-20) + fl;
      if (!(err <= bound))
        fail_msg("[%lld,%lld] group %lld: dequantized %a, exact %a: error %g > s/2 + rounding = %g (s=%g zp=%d q=%d)",
                 (long long)i, (long long)j, (long long)g, deq, exact, err, bound, s, z, q);
      if (s > 0 && err / (s / 2) > worst) worst = err / (s / 2);
      if (exact < mn[g]) mn[g] = exact;
      if (exact > mx[g]) mx[g] = exact;
    }
  /* the scale is not wastefully large: within one storage step (plus rounding) of (max − min)/qmax */
  for (int64_t g = 0; g < c->n_groups; g++) {
    double need = (mx[g] - mn[g]) / qmax, s = sget(c, o->scale, g);
    double step = c->st == MPK_MK_F16 ? 0x1p-10 : 0x1p-22;
    assert_true(s <= need * (1 + 2 * step) + 1e-6 * need + 1e-7);
  }
  free(mn);
  free(mx);
  return worst;
}

static void test_quant_round_trip(void **state) {
  (void)state;
  struct {
    int64_t rows, cols, group;
    int t;
    mpk_mk_qtype qt, zt;
    mpk_mk_dtype st;
  } cases[] = {
      {32, 64, 16, 0, MPK_MK_U8, MPK_MK_U8, MPK_MK_F32},  {32, 64, 16, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F16},
      {64, 32, 16, 1, MPK_MK_U8, MPK_MK_U8, MPK_MK_F16},  {64, 32, 16, 1, MPK_MK_U4, MPK_MK_U8, MPK_MK_F32},
      {33, 45, 15, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F32},  {45, 33, 15, 1, MPK_MK_U4, MPK_MK_U4, MPK_MK_F16},
      {17, 31, 0, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F16},   {31, 17, 0, 1, MPK_MK_U8, MPK_MK_U8, MPK_MK_F32},
      {40, 96, 96, 0, MPK_MK_U8, MPK_MK_U8, MPK_MK_F32},  {96, 40, 96, 1, MPK_MK_U4, MPK_MK_U4, MPK_MK_F16},
      {7, 9, 1, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F32},     {130, 67, 0, 0, MPK_MK_U8, MPK_MK_U8, MPK_MK_F16},
  };
  mpk_mk_impl impls[3];
  int ni = n_impls(impls);
  double worst = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (int64_t rank = 1; rank <= 64; rank *= 8) {
      qcase c;
      qcase_make(&c, cases[k].rows, cases[k].cols, rank, cases[k].group, cases[k].t, cases[k].qt, cases[k].zt,
                 cases[k].st);
      mpk_merge_quant m = qdesc(&c);
      mpk_mk_qlayout L;
      mpk_error e;
      if (mpk_merge_quant_check(&m, &L, &e)) fail_msg("%s", tu_err(&e));
      assert_int_equal(L.per_tensor, cases[k].group == 0);
      assert_int_equal(L.n_groups, c.n_groups);
      if (cases[k].group) assert_int_equal(L.group, cases[k].group);
      qout ref = qrun(&c, m, 1);
      double w = check_round_trip(&c, &ref);
      if (w > worst) worst = w;
      /* same bytes: every implementation, 2 threads, small blocks */
      for (int i = 0; i < ni; i++)
        for (int64_t br = 0; br <= 3; br += 3) {
          mpk_merge_quant m2 = m;
          m2.impl = impls[i];
          m2.block_rows = br;
          qout o = qrun(&c, m2, 2);
          qout_equal(&c, &ref, &o);
          qout_free(&o);
        }
      qout_free(&ref);
      qcase_free(&c);
    }
  print_message("worst round-trip error %.6f × scale/2\n", worst);
}

/* Shapes [] and [1] are per-tensor too; an [in, out] weight quantizes to the transpose of the
   [out, in] one, scales and zero points included. */
static void test_quant_transpose_and_scalar_shapes(void **state) {
  (void)state;
  qcase a;
  qcase_make(&a, 24, 40, 4, 8, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F16); /* [out 24, in 40], scale [24, 5] */
  qcase b;
  qcase_make(&b, 40, 24, 4, 8, 1, MPK_MK_U4, MPK_MK_U4, MPK_MK_F16); /* [in 40, out 24], scale [5, 24] */
  memcpy(b.A, a.A, (size_t)(4 * 40) * sizeof(float));
  memcpy(b.B, a.B, (size_t)(24 * 4) * sizeof(float));
  for (int64_t o = 0; o < 24; o++)
    for (int64_t i = 0; i < 40; i++) qset(b.q, MPK_MK_U4, (size_t)(i * 24 + o), qget(a.q, MPK_MK_U4, (size_t)(o * 40 + i)));
  for (int64_t o = 0; o < 24; o++)
    for (int64_t g = 0; g < 5; g++) {
      qset(b.zero, MPK_MK_U4, (size_t)(g * 24 + o), qget(a.zero, MPK_MK_U4, (size_t)(o * 5 + g)));
      ((uint16_t *)b.scale)[g * 24 + o] = ((uint16_t *)a.scale)[o * 5 + g];
    }
  qout oa = qrun(&a, qdesc(&a), 1), ob = qrun(&b, qdesc(&b), 2);
  for (int64_t o = 0; o < 24; o++) {
    for (int64_t i = 0; i < 40; i++)
      assert_int_equal(qget(ob.q, MPK_MK_U4, (size_t)(i * 24 + o)), qget(oa.q, MPK_MK_U4, (size_t)(o * 40 + i)));
    for (int64_t g = 0; g < 5; g++) {
      assert_int_equal(qget(ob.zero, MPK_MK_U4, (size_t)(g * 24 + o)), qget(oa.zero, MPK_MK_U4, (size_t)(o * 5 + g)));
      assert_int_equal(((uint16_t *)ob.scale)[g * 24 + o], ((uint16_t *)oa.scale)[o * 5 + g]);
    }
  }
  qout_free(&oa);
  qout_free(&ob);
  qcase_free(&b);

  /* per-tensor: [1, 1], [1] and [] are the same scheme and give the same bytes */
  qcase p;
  qcase_make(&p, 9, 14, 3, 0, 0, MPK_MK_U8, MPK_MK_U8, MPK_MK_F32);
  qout ref = qrun(&p, qdesc(&p), 1);
  for (int nd = 0; nd <= 1; nd++) {
    mpk_merge_quant m = qdesc(&p);
    m.q_scale_ndim = m.q_zero_ndim = nd;
    qout o = qrun(&p, m, 2);
    qout_equal(&p, &ref, &o);
    qout_free(&o);
  }
  check_round_trip(&p, &ref);
  qout_free(&ref);
  qcase_free(&p);
  qcase_free(&a);
}

/* Zero stays exactly zero; a group whose merged values are all zero gets scale 0, zp 0, q 0;
   an unchanged tensor (zero adapter) comes back within s/2 of itself. */
static void test_quant_zero_exact(void **state) {
  (void)state;
  qcase c;
  qcase_make(&c, 8, 32, 2, 8, 0, MPK_MK_U8, MPK_MK_U8, MPK_MK_F16);
  memset(c.B, 0, (size_t)(8 * 2) * sizeof(float)); /* delta = 0 */
  for (int64_t j = 0; j < 32; j++) /* row 0: every element equals its zero point: all 0 */
    qset(c.q, c.qt, (size_t)j, qget(c.zero, c.zt, (size_t)qgroup(&c, 0, j)));
  for (int64_t i = 1; i < 8; i++) /* elsewhere every third element is 0 */
    for (int64_t j = 0; j < 32; j += 3)
      qset(c.q, c.qt, (size_t)(i * 32 + j), qget(c.zero, c.zt, (size_t)qgroup(&c, i, j)));
  qout o = qrun(&c, qdesc(&c), 1);
  for (int64_t g = 0; g < 4; g++) { /* row 0's groups */
    assert_int_equal(((uint16_t *)o.scale)[g], 0);
    assert_int_equal(o.zero[g], 0);
  }
  for (int64_t j = 0; j < 32; j++) assert_int_equal(o.q[j], 0);
  for (int64_t i = 1; i < 8; i++)
    for (int64_t j = 0; j < 32; j += 3) {
      int64_t g = qgroup(&c, i, j);
      assert_int_equal(o.q[i * 32 + j], o.zero[g]); /* dequantizes to exactly 0 */
    }
  check_round_trip(&c, &o);
  qout_free(&o);
  qcase_free(&c);
}

/* Two passes: per-tensor, and an [in, out] weight whose groups are too tall for one block. Both
   through to_fds as well. */
static void test_quant_two_pass_and_fds(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  qcase c;
  /* G = 2048 rows × 1024 columns: 2·G rows of float32 are 16 MiB > the one-pass limit */
  qcase_make(&c, 2048, 1024, 2, 2048, 1, MPK_MK_U4, MPK_MK_U4, MPK_MK_F16);
  qout ref = qrun(&c, qdesc(&c), 2);
  check_round_trip(&c, &ref);
  mpk_merge_quant m = qdesc(&c);
  m.block_rows = 100; /* odd split of the groups across blocks and threads */
  qout o = qrun(&c, m, 3);
  qout_equal(&c, &ref, &o);
  qout_free(&o);

  char pq[512], ps[512], pz[512];
  snprintf(pq, sizeof pq, "%s/q.bin", dir);
  snprintf(ps, sizeof ps, "%s/s.bin", dir);
  snprintf(pz, sizeof pz, "%s/z.bin", dir);
  int fq = open(pq, O_RDWR | O_CREAT | O_TRUNC, 0644), fs = open(ps, O_RDWR | O_CREAT | O_TRUNC, 0644),
      fz = open(pz, O_RDWR | O_CREAT | O_TRUNC, 0644);
  assert_true(fq >= 0 && fs >= 0 && fz >= 0);
  prog pg = {0};
  m.progress = on_progress, m.progress_ctx = &pg;
  mpk_error e;
  if (mpk_merge_quant_to_fds(&m, 2, fq, fs, fz, &e)) fail_msg("%s", tu_err(&e));
  assert_int_equal(pg.last, 2 * c.q_len); /* two passes */
  close(fq), close(fs), close(fz);
  size_t n;
  uint8_t *b = tu_read_file(pq, &n);
  assert_int_equal(n, c.q_len);
  assert_memory_equal(b, ref.q, n);
  free(b);
  b = tu_read_file(ps, &n);
  assert_int_equal(n, c.s_len);
  assert_memory_equal(b, ref.scale, n);
  free(b);
  b = tu_read_file(pz, &n);
  assert_int_equal(n, c.z_len);
  assert_memory_equal(b, ref.zero, n);
  free(b);
  qout_free(&ref);
  qcase_free(&c);

  /* per-tensor, odd element count, packed */
  qcase_make(&c, 77, 33, 5, 0, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F32);
  ref = qrun(&c, qdesc(&c), 1);
  check_round_trip(&c, &ref);
  assert_int_equal(ref.q[c.q_len - 1] >> 4, 0); /* the padding nibble stays 0 */
  assert_int_equal(ref.zero[0] >> 4, 0);
  m = qdesc(&c);
  m.block_rows = 5;
  o = qrun(&c, m, 2);
  qout_equal(&c, &ref, &o);
  qout_free(&o);
  qout_free(&ref);
  qcase_free(&c);
  tu_sh("rm -rf '%s'", dir);
}

static void expect_quant_error(mpk_merge_quant m, int code, const char *needle) {
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_merge_quant_check(&m, NULL, &e);
  if (rc != code || !strstr(e.message, needle))
    fail_msg("expected %d '%s', got %d '%s'", code, needle, rc, e.message);
}

static void test_quant_refusals(void **state) {
  (void)state;
  qcase c;
  qcase_make(&c, 8, 32, 2, 8, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F16); /* scale [8, 4] */
  mpk_merge_quant ok = qdesc(&c), m;
  assert_int_equal(mpk_merge_quant_check(&ok, NULL, NULL), 0);
  m = ok, m.q_scale_ndim = m.q_zero_ndim = 1, m.q_scale_shape[0] = m.q_zero_shape[0] = 32;
  expect_quant_error(m, MPK_EUNSUPPORTED, "scale shape [32] declares no supported scheme");
  m = ok, m.q_scale_shape[1] = m.q_zero_shape[1] = 3;
  expect_quant_error(m, MPK_EUNSUPPORTED, "scale shape [8, 3] declares no supported scheme for a weight of shape [8, 32] ([out, in])");
  m = ok, m.q_scale_shape[0] = m.q_zero_shape[0] = 4, m.q_scale_shape[1] = m.q_zero_shape[1] = 8;
  expect_quant_error(m, MPK_EUNSUPPORTED, "expected one element (per-tensor) or [out, in/G]");
  m = ok, m.transposed = 1; /* [in 8, out 32] wants [8/G, 32] */
  expect_quant_error(m, MPK_EUNSUPPORTED, "[in/G, out] per group of G input elements, G dividing 8");
  m = ok, m.q_zero_shape[1] = 2;
  expect_quant_error(m, MPK_EMISMATCH, "zero_point shape [8, 2] must equal the scale's shape [8, 4]");
  m = ok, m.q_len++;
  expect_quant_error(m, MPK_EMISMATCH, "weight_quantized has 129 bytes, shape [8, 32] of uint4 needs 128");
  m = ok, m.q_scale_len = 32 * 4;
  expect_quant_error(m, MPK_EMISMATCH, "scale has 128 bytes, shape [8, 4] of float16 needs 64");
  m = ok, m.q_zero_len = 32;
  expect_quant_error(m, MPK_EMISMATCH, "zero_point has 32 bytes, shape [8, 4] of uint4 needs 16");
  m = ok, m.q_scale_dtype = MPK_MK_BF16;
  expect_quant_error(m, MPK_EUNSUPPORTED, "scale dtype must be float32 or float16");
  m = ok, m.q_type = MPK_MK_U8, m.q_len = 256;
  expect_quant_error(m, MPK_EUNSUPPORTED, "zero points up to 255 need uint8");
  m = ok, m.q_scale_ndim = m.q_zero_ndim = 3;
  expect_quant_error(m, MPK_EUNSUPPORTED, "0, 1 or 2 dimensions");
  qcase_free(&c);

  /* zero point above qmax; nonzero padding nibbles */
  qcase_make(&c, 3, 5, 1, 0, 0, MPK_MK_U4, MPK_MK_U8, MPK_MK_F32); /* 15 elements: 8 bytes */
  m = qdesc(&c);
  c.zero[0] = 16;
  expect_quant_error(m, MPK_EMALFORMED, "zero_point element 0 is 16, above the weight's maximum 15");
  c.zero[0] = 15;
  c.q[7] |= 0x10;
  expect_quant_error(m, MPK_EMALFORMED, "unused high nibble of the last byte must be 0");
  qcase_free(&c);

  /* merged values that cannot be quantized: non-finite, or too wide for a float16 scale */
  qcase_make(&c, 4, 8, 1, 0, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F32);
  c.lscale = 3e38f;
  for (int k = 0; k < 8; k++) c.A[k] = 1e10f;
  m = qdesc(&c);
  qout o = {calloc(1, c.q_len), calloc(1, c.z_len), calloc(1, c.s_len)};
  mpk_error e;
  assert_int_equal(mpk_merge_quant_to_bufs(&m, 1, o.q, o.scale, o.zero, &e), MPK_EUNSUPPORTED);
  assert_non_null(strstr(e.message, "is not finite; it cannot be quantized"));
  assert_string_equal(e.file, "q.bin");
  qout_free(&o);
  qcase_free(&c);
  qcase_make(&c, 4, 8, 1, 0, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F16);
  mpk_store_le16(c.scale, mpk_mk_f32_to_f16(60000.0f));
  c.lscale = 1e6f;
  m = qdesc(&c);
  o = (qout){calloc(1, c.q_len), calloc(1, c.z_len), calloc(1, c.s_len)};
  assert_int_equal(mpk_merge_quant_to_bufs(&m, 1, o.q, o.scale, o.zero, &e), MPK_EUNSUPPORTED);
  assert_non_null(strstr(e.message, "too wide for a float16 scale"));
  qout_free(&o);
  qcase_free(&c);
}

/* The same bytes on every host (docs/cross.md): fixed dense and quantized merges, from this
   test's own seed, hash to what x86-64 gives with its best implementation (AUTO; the SIMD paths
   equal the portable one, above). On AArch64 and s390x the portable C runs, under qemu. Merged
   tensors are file bytes (little-endian), hashed as they are. */
static void test_same_bytes_on_every_host(void **state) {
  (void)state;
  rng_state = 0x5eed5eed5eed5eedull;
  static const char *dense_sha256[3][2] = {
      {"sha256:bd9ef3f1f4d6d7a258bc6cb26c955e1de3ffb612288850ae451b5e278681ac54",
       "sha256:5afc93f1c23c2487b557c117ae4e3c34a61e88de88675991016fd672ff2c6f8f"},
      {"sha256:2405b30fdb8c6275e59ba4e8e927e28bf3f1fe0543e193232b826350bd1b63b4",
       "sha256:ccaf5e4487e3407a443c286bcedc61de4998e1bf7706d5d375e4cd194094d81b"},
      {"sha256:f1c6e48713c81ef5f19fc8674139f041a268dea9f0ae2e6a32fc9fc220978a83",
       "sha256:18220afdda1d1fa92e07486d2e79243d1ee72b5bba9d0079e65953e4a5d0619a"},
  };
  for (int d = 0; d < 3; d++)
    for (int t = 0; t < 2; t++) {
      dense_case c;
      dense_make(&c, 67, 129, 16, t, DTYPES[d]);
      size_t len = (size_t)(c.rows * c.cols) * mpk_mk_dtype_size(c.dt);
      void *out = malloc(len);
      assert_non_null(out);
      mpk_merge_dense m = dense_desc(&c, MPK_MK_AUTO);
      mpk_error e;
      if (mpk_merge_dense_to_buf(&m, 2, out, &e)) fail_msg("%s", tu_err(&e));
      char what[64];
      snprintf(what, sizeof what, "dense %s [67,129] rank 16%s", DTN[d], t ? " transposed" : "");
      tu_expect_sha256(what, out, len, dense_sha256[d][t]);
      free(out);
      dense_free(&c);
    }
  static const struct {
    int64_t rows, cols, group;
    int t;
    mpk_mk_qtype qt, zt;
    mpk_mk_dtype st;
    const char *sha256; /* of q, then scale, then zero point */
  } quant[] = {
      {33, 45, 15, 0, MPK_MK_U4, MPK_MK_U4, MPK_MK_F32, "sha256:3c6d24983908e360b3c4715f88bf5ca57e1718a123cc16eb8870b5d9f41ecfa0"},
      {64, 32, 16, 1, MPK_MK_U8, MPK_MK_U8, MPK_MK_F16, "sha256:3c85aa3681e5b0e22ffd946445e98cb6e7d0030b9eaf3017c86752c8bff8f6de"},
      {130, 67, 0, 0, MPK_MK_U8, MPK_MK_U8, MPK_MK_F16, "sha256:eabf3a80cbd6bfe9165867aa5b322785051c6f35668a4da031c89a7ea652aafc"},
  };
  for (size_t k = 0; k < sizeof quant / sizeof quant[0]; k++) {
    qcase c;
    qcase_make(&c, quant[k].rows, quant[k].cols, 8, quant[k].group, quant[k].t, quant[k].qt, quant[k].zt, quant[k].st);
    qout o = qrun(&c, qdesc(&c), 2);
    uint8_t *all = malloc(c.q_len + c.s_len + c.z_len);
    assert_non_null(all);
    memcpy(all, o.q, c.q_len);
    memcpy(all + c.q_len, o.scale, c.s_len);
    memcpy(all + c.q_len + c.s_len, o.zero, c.z_len);
    char what[64];
    snprintf(what, sizeof what, "quantized case %zu", k);
    tu_expect_sha256(what, all, c.q_len + c.s_len + c.z_len, quant[k].sha256);
    free(all);
    qout_free(&o);
    qcase_free(&c);
  }
}

int main(void) {
  print_message("merge kernels available:%s%s%s (auto: %s)\n", " portable",
                mpk_mk_impl_available(MPK_MK_AVX2) ? " avx2" : "", mpk_mk_impl_available(MPK_MK_AVX512) ? " avx512" : "",
                mpk_mk_impl_name(MPK_MK_AUTO));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_conversions),
      cmocka_unit_test(test_bf16_conversions),
      cmocka_unit_test(test_dense_against_float64),
      cmocka_unit_test(test_dense_simd_bit_identical_edges),
      cmocka_unit_test(test_dense_orientations_transpose),
      cmocka_unit_test(test_dense_blocks_threads_fd),
      cmocka_unit_test(test_dense_streaming_large),
      cmocka_unit_test(test_dense_errors),
      cmocka_unit_test(test_quant_round_trip),
      cmocka_unit_test(test_quant_transpose_and_scalar_shapes),
      cmocka_unit_test(test_quant_zero_exact),
      cmocka_unit_test(test_quant_two_pass_and_fds),
      cmocka_unit_test(test_quant_refusals),
      cmocka_unit_test(test_same_bytes_on_every_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
