/* The resampler (src/media/image_resize.c) on small hand-made rasters: flat stays flat, scale 1 is
   the identity, a window equals the same crop of the whole plan, each EXIF orientation puts every
   pixel where Pillow's exif_transpose does, rounding and clamping, the kernel widening on
   downscale, agreement with a double-precision re-statement of Pillow's filter, every SIMD level
   giving the same bytes, and the streaming (threaded) path giving them too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "media/image.h"
#include "media/image_resize.h"

/* ---------------------------------------------------------------- helpers */

static uint32_t rng = 12345;
static uint8_t rnd8(void) {
  rng = rng * 1103515245u + 12345u;
  return (uint8_t)(rng >> 16);
}

static mpk_raster raster(uint32_t w, uint32_t h) {
  mpk_raster r = {malloc((size_t)w * h * 3 + 1), w, h, (size_t)w * 3};
  assert_non_null(r.px);
  return r;
}

static mpk_raster random_raster(uint32_t w, uint32_t h) {
  mpk_raster r = raster(w, h);
  for (size_t i = 0; i < (size_t)w * h * 3; i++) r.px[i] = rnd8();
  return r;
}

/* Upright size of a stored raster. */
static void upright(const mpk_raster *r, int o, uint32_t *w, uint32_t *h) {
  *w = o >= 5 ? r->height : r->width;
  *h = o >= 5 ? r->width : r->height;
}

/* Pillow's ImageOps.exif_transpose, written out per orientation: upright (x, y) from stored. */
static const uint8_t *stored_at(const mpk_raster *r, int o, uint32_t x, uint32_t y) {
  uint32_t W = r->width, H = r->height, sx, sy;
  switch (o) {
    case 1: sx = x; sy = y; break;
    case 2: sx = W - 1 - x; sy = y; break;          /* FLIP_LEFT_RIGHT */
    case 3: sx = W - 1 - x; sy = H - 1 - y; break;  /* ROTATE_180 */
    case 4: sx = x; sy = H - 1 - y; break;          /* FLIP_TOP_BOTTOM */
    case 5: sx = y; sy = x; break;                  /* TRANSPOSE */
    case 6: sx = y; sy = H - 1 - x; break;          /* ROTATE_270 (90 clockwise) */
    case 7: sx = W - 1 - y; sy = H - 1 - x; break;  /* TRANSVERSE */
    default: sx = W - 1 - y; sy = x; break;         /* 8: ROTATE_90 (counter-clockwise) */
  }
  return r->px + (size_t)sy * r->stride + (size_t)sx * 3;
}

static mpk_raster rotated(const mpk_raster *r, int o) {
  uint32_t w, h;
  upright(r, o, &w, &h);
  mpk_raster u = raster(w, h);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++) memcpy(u.px + (size_t)y * u.stride + x * 3, stored_at(r, o, x, y), 3);
  return u;
}

static uint8_t *resample(const mpk_raster *r, int o, mpk_image_plan p, int64_t ow, int64_t oh) {
  uint8_t *out = malloc((size_t)(ow * oh * 3));
  assert_non_null(out);
  mpk_error err;
  if (mpk_image_resample(r, o, &p, ow, oh, out, &err) != 0) fail_msg("resample: %s", tu_err(&err));
  return out;
}

/* A double-precision re-statement of Pillow's antialiased bicubic (precompute_coeffs) on one axis:
   weights[i * ksize + k] for window starting at bounds[i]. */
static double cubic(double x) {
  x = fabs(x);
  if (x < 1) return (1.5 * x - 2.5) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * -0.5;
  return 0;
}

static void ref_axis(uint32_t in, int64_t plan, int64_t off, int64_t n, int *start, int *cnt, double *w, int ksize) {
  double scale = (double)in / (double)plan, fs = scale < 1 ? 1 : scale, support = 2 * fs;
  for (int64_t i = 0; i < n; i++) {
    double c = ((double)(off + i) + 0.5) * scale;
    int lo = (int)(c - support + 0.5), hi = (int)(c + support + 0.5);
    if (lo < 0) lo = 0;
    if (hi > (int)in) hi = (int)in;
    assert_true(hi - lo <= ksize);
    double s = 0;
    for (int k = 0; k < hi - lo; k++) s += (w[i * ksize + k] = cubic((k + lo - c + 0.5) / fs));
    for (int k = 0; k < hi - lo; k++) w[i * ksize + k] /= s;
    start[i] = lo;
    cnt[i] = hi - lo;
  }
}

/* The window of the plan drawn from the upright raster with double weights. With `line8` the first
   pass's result is rounded and clamped to 8 bits, as in the resampler and in Pillow: the first pass
   runs down the columns when `vertical_first` (what the resampler does along the stored axes: the
   upright columns for orientations 1..4, the upright rows for 5..8). Without it, the ideal filter. */
static double *reference2(const mpk_raster *u, mpk_image_plan p, int64_t ow, int64_t oh, int line8, int vertical_first) {
  int kx = (int)ceil(2 * fmax(1, (double)u->width / (double)p.width)) * 2 + 2;
  int ky = (int)ceil(2 * fmax(1, (double)u->height / (double)p.height)) * 2 + 2;
  int *sx = malloc(ow * sizeof *sx), *cx = malloc(ow * sizeof *cx);
  int *sy = malloc(oh * sizeof *sy), *cy = malloc(oh * sizeof *cy);
  double *wx = calloc((size_t)(ow * kx), sizeof *wx), *wy = calloc((size_t)(oh * ky), sizeof *wy);
  double *out = calloc((size_t)(ow * oh * 3), sizeof *out);
  /* the intermediate: vertical first, oh rows x full width; else full height x ow columns */
  size_t iw = vertical_first ? u->width : (size_t)ow, ih = vertical_first ? (size_t)oh : u->height;
  double *mid = calloc(iw * ih * 3, sizeof *mid);
  assert_true(sx && cx && sy && cy && wx && wy && out && mid);
  ref_axis(u->width, p.width, p.left, ow, sx, cx, wx, kx);
  ref_axis(u->height, p.height, p.top, oh, sy, cy, wy, ky);
  for (size_t y = 0; y < ih; y++)
    for (size_t x = 0; x < iw; x++)
      for (int c = 0; c < 3; c++) {
        double s = 0;
        if (vertical_first)
          for (int j = 0; j < cy[y]; j++) s += wy[y * ky + j] * u->px[(size_t)(sy[y] + j) * u->stride + x * 3 + c];
        else
          for (int i = 0; i < cx[x]; i++) s += wx[x * kx + i] * u->px[y * u->stride + (size_t)(sx[x] + i) * 3 + c];
        if (line8) s = s < 0 ? 0 : s > 255 ? 255 : floor(s + 0.5);
        mid[(y * iw + x) * 3 + c] = s;
      }
  for (int64_t y = 0; y < oh; y++)
    for (int64_t x = 0; x < ow; x++)
      for (int c = 0; c < 3; c++) {
        double s = 0;
        if (vertical_first)
          for (int i = 0; i < cx[x]; i++) s += wx[x * kx + i] * mid[((size_t)y * iw + (size_t)(sx[x] + i)) * 3 + c];
        else
          for (int j = 0; j < cy[y]; j++) s += wy[y * ky + j] * mid[((size_t)(sy[y] + j) * iw + (size_t)x) * 3 + c];
        out[(y * ow + x) * 3 + c] = s;
      }
  free(sx); free(cx); free(sy); free(cy); free(wx); free(wy); free(mid);
  return out;
}

static double *reference(const mpk_raster *u, mpk_image_plan p, int64_t ow, int64_t oh) {
  return reference2(u, p, ow, oh, 0, 1);
}

/* Smooth content well inside 0..255 (no overshoot reaches the clamp), with a little noise. */
static mpk_raster smooth_raster(uint32_t w, uint32_t h) {
  mpk_raster r = raster(w, h);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++)
      for (int c = 0; c < 3; c++)
        r.px[(size_t)y * r.stride + x * 3 + c] =
            (uint8_t)(128 + 60 * sin(x / (5.0 + c) + y / 11.0) * cos(y / (7.0 - c)) + (rnd8() % 21) - 10);
  return r;
}

/* ---------------------------------------------------------------- tests */

static void test_flat_stays_flat(void **state) {
  (void)state;
  static const uint8_t values[] = {0, 1, 77, 128, 254, 255};
  static const struct { uint32_t w, h; mpk_image_plan p; int64_t ow, oh; } cases[] = {
      {256, 192, {32, 24, 0, 0}, 32, 24},       /* 8x down */
      {100, 60, {448, 336, 56, 0}, 336, 336},  /* up, cropped */
      {37, 91, {20, 49, 3, 7}, 11, 30},        /* odd factors */
      {640, 3, {5, 300, 1, 100}, 3, 100},      /* down one way, up the other */
      {20000, 2, {4, 2, 0, 0}, 4, 2},          /* 5000x: the wide-precision path */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t v = 0; v < sizeof values; v++)
      for (int o = 1; o <= 8; o += 1) {
        mpk_raster r = raster(cases[c].w, cases[c].h);
        memset(r.px, values[v], (size_t)r.stride * r.height);
        mpk_image_plan p = cases[c].p;
        int64_t ow = cases[c].ow, oh = cases[c].oh;
        if (o >= 5) { /* the plan is on the upright size: swap it so it stays valid */
          p = (mpk_image_plan){p.height, p.width, p.top, p.left};
          ow = cases[c].oh;
          oh = cases[c].ow;
        }
        uint8_t *out = resample(&r, o, p, ow, oh);
        for (int64_t i = 0; i < ow * oh * 3; i++)
          if (out[i] != values[v]) fail_msg("case %zu, value %u, orientation %d: byte %lld is %u", c, values[v], o, (long long)i, out[i]);
        free(out);
        free(r.px);
      }
}

static void test_identity_at_scale_1(void **state) {
  (void)state;
  mpk_raster r = random_raster(53, 41);
  uint8_t *out = resample(&r, 1, (mpk_image_plan){53, 41, 0, 0}, 53, 41);
  assert_memory_equal(out, r.px, 53 * 41 * 3);
  free(out);
  /* A crop without scaling is a copy of the block. */
  out = resample(&r, 1, (mpk_image_plan){53, 41, 7, 5}, 20, 30);
  for (int y = 0; y < 30; y++) assert_memory_equal(out + y * 20 * 3, r.px + (size_t)(y + 5) * r.stride + 7 * 3, 20 * 3);
  free(out);
  free(r.px);
}

/* The window of a plan is the same crop of the whole plan drawn, for down and up scaling. */
static void test_window_offsets(void **state) {
  (void)state;
  mpk_raster r = random_raster(97, 61);
  static const struct { int64_t pw, ph; } plans[] = {{31, 23}, {200, 150}, {97, 30}};
  for (size_t i = 0; i < 3; i++)
    for (int o = 1; o <= 8; o++) {
      int64_t pw = plans[i].pw, ph = plans[i].ph;
      uint8_t *full = resample(&r, o, (mpk_image_plan){pw, ph, 0, 0}, pw, ph);
      int64_t ow = pw / 2, oh = ph / 3, left = pw - ow - 1, top = ph / 3;
      uint8_t *win = resample(&r, o, (mpk_image_plan){pw, ph, left, top}, ow, oh);
      for (int64_t y = 0; y < oh; y++)
        if (memcmp(win + y * ow * 3, full + ((y + top) * pw + left) * 3, (size_t)ow * 3) != 0)
          fail_msg("plan %lldx%lld orientation %d: window row %lld differs from the crop", (long long)pw, (long long)ph, o, (long long)y);
      free(full);
      free(win);
    }
  free(r.px);
}

/* A 3 x 2 stored raster, pixel value = 10 * (index + 1) in all three channels; at scale 1 each
   orientation must give exactly Pillow's exif_transpose of it (written out by hand). */
static void test_orientations(void **state) {
  (void)state;
  mpk_raster r = raster(3, 2);
  for (int i = 0; i < 6; i++) memset(r.px + i * 3, 10 * (i + 1), 3);
  /* stored:  10 20 30
              40 50 60 */
  static const uint8_t want[9][6] = {
      {0},
      {10, 20, 30, 40, 50, 60}, /* 1 */
      {30, 20, 10, 60, 50, 40}, /* 2 mirrored */
      {60, 50, 40, 30, 20, 10}, /* 3 upside down */
      {40, 50, 60, 10, 20, 30}, /* 4 flipped */
      {10, 40, 20, 50, 30, 60}, /* 5 transposed: 2 x 3 */
      {40, 10, 50, 20, 60, 30}, /* 6 turned clockwise */
      {60, 30, 50, 20, 40, 10}, /* 7 transverse */
      {30, 60, 20, 50, 10, 40}, /* 8 turned counter-clockwise */
  };
  for (int o = 1; o <= 8; o++) {
    int64_t w = o >= 5 ? 2 : 3, h = o >= 5 ? 3 : 2;
    uint8_t *out = resample(&r, o, (mpk_image_plan){w, h, 0, 0}, w, h);
    for (int i = 0; i < 6; i++)
      if (out[i * 3] != want[o][i] || out[i * 3 + 1] != want[o][i] || out[i * 3 + 2] != want[o][i])
        fail_msg("orientation %d: pixel %d is %u, Pillow's exif_transpose gives %u", o, i, out[i * 3], want[o][i]);
    /* And the transform written as code agrees with the hand-made table. */
    mpk_raster u = rotated(&r, o);
    for (int i = 0; i < 6; i++) assert_int_equal(u.px[i * 3], want[o][i]);
    free(u.px);
    free(out);
  }
  free(r.px);
}

/* Scaled, each orientation equals resampling the pre-rotated raster with orientation 1: byte for
   byte for 1..4 (the windows only reverse), within 1 level for 5..8 (the two passes run in the
   other order, so the 8-bit rounding between them differs; on content whose overshoot reaches the
   clamp between the passes the order matters more, as it does in Pillow). */
static void test_orientation_scaled(void **state) {
  (void)state;
  mpk_raster r = smooth_raster(120, 70);
  for (int o = 1; o <= 8; o++) {
    mpk_raster u = rotated(&r, o);
    mpk_image_target t = {MPK_IMAGE_RESIZE_CENTER_CROP, 24, 40};
    mpk_image_plan p;
    assert_int_equal(mpk_image_plan_resize(u.width, u.height, &t, &p, NULL), 0);
    uint8_t *a = resample(&r, o, p, 40, 24), *b = resample(&u, 1, p, 40, 24);
    int worst = 0;
    for (int i = 0; i < 40 * 24 * 3; i++) worst = abs(a[i] - b[i]) > worst ? abs(a[i] - b[i]) : worst;
    if (o <= 4) assert_memory_equal(a, b, 40 * 24 * 3);
    else if (worst > 1) fail_msg("orientation %d: %d levels from the pre-rotated result", o, worst);
    free(a);
    free(b);
    free(u.px);
  }
  free(r.px);
}

/* Against double-precision weights with the same 8-bit line between the passes: within 1.6 levels
   (the 14-bit weights can tip a rounding of the line by one level, which the second pass carries
   with a weight of up to ~1.1, plus the last half), and within 0.5 + 0.02 when one pass is the
   identity (only the last rounding). Full-range noise, so the clamps are exercised. On
   smooth content the ideal filter (no line rounding at all) is within 1.25 levels: the line's
   rounding (0.5) through the second pass's weights (sum of |w| up to ~1.1), plus the last half. */
static void test_against_double_reference(void **state) {
  (void)state;
  static const struct { uint32_t w, h; int64_t pw, ph, l, t, ow, oh; int o; } cases[] = {
      {200, 150, 27, 20, 0, 0, 27, 20, 1},   {504, 378, 448, 336, 56, 0, 336, 336, 1},
      {60, 40, 173, 97, 11, 3, 150, 90, 6},  {300, 17, 40, 17, 0, 0, 40, 17, 1},
      {301, 1, 50, 1, 0, 0, 50, 1, 1},        {5000, 3, 7, 3, 0, 0, 7, 3, 1}, /* 714x: wide path */
      {90, 130, 64, 64, 0, 0, 64, 64, 8},     {403, 302, 45, 34, 0, 0, 45, 34, 3},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int smooth = 0; smooth <= 1; smooth++) {
      mpk_raster r = smooth ? smooth_raster(cases[c].w, cases[c].h) : random_raster(cases[c].w, cases[c].h);
      mpk_raster u = rotated(&r, cases[c].o);
      mpk_image_plan p = {cases[c].pw, cases[c].ph, cases[c].l, cases[c].t};
      uint8_t *got = resample(&r, cases[c].o, p, cases[c].ow, cases[c].oh);
      double *ref = reference2(&u, p, cases[c].ow, cases[c].oh, !smooth, cases[c].o <= 4), worst = 0;
      for (int64_t i = 0; i < cases[c].ow * cases[c].oh * 3; i++) {
        double want = ref[i] < 0 ? 0 : ref[i] > 255 ? 255 : ref[i];
        worst = fmax(worst, fabs(got[i] - want));
      }
      int one_pass = u.height == (uint32_t)p.height || u.width == (uint32_t)p.width;
      printf("  %ux%u -> %lldx%lld (orientation %d, %s): worst %.3f levels from the double filter\n", cases[c].w,
             cases[c].h, (long long)p.width, (long long)p.height, cases[c].o, smooth ? "smooth, ideal" : "noise, 8-bit line",
             worst);
      if (worst > (one_pass ? 0.52 : smooth ? 1.25 : 1.6)) fail_msg("case %zu: %.3f levels from the double-precision filter", c, worst);
      free(ref);
      free(got);
      free(u.px);
      free(r.px);
    }
}

/* A hard edge upscaled: bicubic overshoots below 0 and above 255 next to it; the result clamps
   (no wrap-around to the far end) and the flats stay exact. */
static void test_clamping(void **state) {
  (void)state;
  mpk_raster r = raster(8, 1);
  static const uint8_t edge[8] = {0, 0, 0, 0, 255, 255, 255, 255};
  for (int i = 0; i < 8; i++) memset(r.px + i * 3, edge[i], 3);
  uint8_t *out = resample(&r, 1, (mpk_image_plan){64, 1, 0, 0}, 64, 1);
  for (int x = 0; x < 64; x++) {
    if (x < 24) assert_int_equal(out[x * 3], 0);       /* the undershoot side reads 0, not 250-something */
    if (x >= 40) assert_int_equal(out[x * 3], 255);    /* the overshoot side reads 255, not 0-something */
    if (x > 0) assert_true(out[x * 3] >= out[(x - 1) * 3]); /* clamped ringing keeps it monotone */
  }
  /* Without the clamp the undershoot would exist: the double filter goes below 0 somewhere. */
  double *ref = reference(&r, (mpk_image_plan){64, 1, 0, 0}, 64, 1), lowest = 0;
  for (int i = 0; i < 64 * 3; i++) lowest = fmin(lowest, ref[i]);
  assert_true(lowest < -1);
  free(ref);
  free(out);
  free(r.px);
}

/* Rounding is floor(x + 0.5), exactly: a 2x upscale has the weights 111, 29, -9, -3 / 128 (dyadic,
   so 14-bit fixed point holds them exactly), every output away from the edges is a multiple of
   1/128, and about one in 128 is an exact half, which must round up. 1 pixel tall, so the other
   pass is the identity. */
static void test_rounding_exact(void **state) {
  (void)state;
  mpk_raster r = random_raster(2000, 1);
  mpk_image_plan p = {4000, 1, 0, 0};
  uint8_t *out = resample(&r, 1, p, 4000, 1);
  double *ref = reference(&r, p, 4000, 1);
  int halves = 0;
  for (int i = 3 * 4; i < 3 * (4000 - 4); i++) {
    double x = ref[i], want = x < 0 ? 0 : x > 255 ? 255 : floor(x + 0.5);
    assert_true(x * 128 == floor(x * 128)); /* the reference itself is exact */
    if (x - floor(x) == 0.5) halves++;
    if (out[i] != want) fail_msg("byte %d: %u, exact value %.6f rounds to %.0f", i, out[i], x, want);
  }
  printf("  %d exact halves among %d values, all rounded up\n", halves, 3 * (4000 - 8));
  assert_true(halves > 20);
  free(ref);
  free(out);
  free(r.px);
}

/* Antialiasing: a 1-pixel checkerboard reduced 8x is flat mid-grey (127.5 -> 127 or 128). Point
   sampling, or a filter that does not widen with the factor, would keep black and white. */
static void test_checkerboard_goes_grey(void **state) {
  (void)state;
  mpk_raster r = raster(256, 256);
  for (int y = 0; y < 256; y++)
    for (int x = 0; x < 256; x++) memset(r.px + (size_t)y * r.stride + x * 3, ((x ^ y) & 1) ? 255 : 0, 3);
  uint8_t *out = resample(&r, 1, (mpk_image_plan){32, 32, 0, 0}, 32, 32);
  for (int i = 0; i < 32 * 32 * 3; i++)
    if (out[i] < 127 || out[i] > 128) fail_msg("byte %d is %u, not grey", i, out[i]);
  free(out);
  free(r.px);
}

/* Resampling r at every instruction-set level gives the portable C's bytes; `what` names the case. */
static void levels_agree(const mpk_raster *r, int o, mpk_image_plan p, int64_t ow, int64_t oh, const char *what) {
  uint8_t *base = NULL;
  for (int level = 0; level <= 3; level++) {
    int prev = mpk_image_resample_simd_cap(level);
    uint8_t *out = resample(r, o, p, ow, oh);
    mpk_image_resample_simd_cap(prev);
    if (!base) base = out;
    else {
      if (memcmp(base, out, (size_t)(ow * oh * 3)) != 0)
        fail_msg("%s orientation %d: level %d differs from portable C", what, o, level);
      free(out);
    }
  }
  free(base);
}

/* Every instruction-set level computes the same integers. */
static void test_simd_levels_agree(void **state) {
  (void)state;
  mpk_raster r = random_raster(333, 250);
  static const mpk_image_plan plans[] = {{37, 28, 0, 0}, {448, 336, 56, 0}, {300, 225, 10, 20}, {333, 250, 0, 0}};
  static const int64_t sizes[][2] = {{37, 28}, {336, 336}, {250, 190}, {333, 250}};
  for (size_t i = 0; i < 4; i++)
    for (int o = 1; o <= 8; o += 3) {
      mpk_image_plan p = plans[i];
      int64_t ow = sizes[i][0], oh = sizes[i][1];
      if (o >= 5) {
        p = (mpk_image_plan){p.height, p.width, p.top, p.left};
        ow = sizes[i][1];
        oh = sizes[i][0];
      }
      char what[32];
      snprintf(what, sizeof what, "plan %zu", i);
      levels_agree(&r, o, p, ow, oh, what);
    }
  free(r.px);
}

/* Every output width from 1 to 20 along pass 2, reduced (windows of up to 8 taps: pass 2's
   four-pixel path and the pixels after it) and enlarged, upright and transposed: the vector
   kernels' ends (the last group, the overlapping stores, a pass-1 line narrower than a vector or
   not a multiple of one) give the portable C's bytes and write nothing past the window (the output
   is allocated to size, which the sanitizer build checks). */
static void test_simd_levels_agree_narrow(void **state) {
  (void)state;
  mpk_raster r = random_raster(61, 47);
  for (int64_t n = 1; n <= 20; n++)
    for (int o = 1; o <= 5; o += 4)
      for (int up = 0; up <= 1; up++) {
        int64_t pw = up ? 90 : 40, ph = up ? 70 : 31; /* 61 -> 40: 1.5x down; 61 -> 90: up */
        mpk_image_plan p = {pw, ph, (pw - n) / 2, 1};
        int64_t ow = n, oh = 9;
        if (o >= 5) { /* transposed: pass 2 runs along the upright y axis */
          p = (mpk_image_plan){ph, pw, 1, (pw - n) / 2};
          ow = 9;
          oh = n;
        }
        char what[48];
        snprintf(what, sizeof what, "width %lld %s", (long long)n, up ? "enlarged" : "reduced");
        levels_agree(&r, o, p, ow, oh, what);
      }
  free(r.px);
}

/* Streaming rows (copied, on a worker thread) gives the same bytes; only the window's rows are
   needed; missing rows are an error. */
static void test_streaming(void **state) {
  (void)state;
  mpk_raster r = random_raster(400, 300);
  mpk_image_plan p = {200, 150, 30, 40};
  uint8_t *want = resample(&r, 1, p, 100, 60);
  for (int flags = MPK_RESAMPLER_COPY; flags <= MPK_RESAMPLER_THREAD; flags++) {
    uint8_t *out = malloc(100 * 60 * 3), *row = malloc(r.stride);
    mpk_resampler *rs;
    mpk_error err;
    assert_int_equal(mpk_resampler_new(400, 300, 0, 0, 1, &p, 100, 60, out, flags, &rs, &err), 0);
    uint32_t first, end;
    mpk_resampler_rows(rs, &first, &end);
    assert_true(first > 70 && first <= 78);  /* rows 80..199 at scale 2, less the kernel's reach */
    assert_true(end >= 201 && end < 210);
    for (uint32_t y = 0; y < end; y++) {
      memcpy(row, r.px + (size_t)y * r.stride, r.stride);
      assert_int_equal(mpk_resampler_push(rs, row), 0);
      memset(row, 0xAA, r.stride); /* the caller reuses its buffer at once */
    }
    assert_int_equal(mpk_resampler_finish(rs, &err), 0);
    mpk_resampler_free(rs);
    assert_memory_equal(out, want, 100 * 60 * 3);
    /* Too few rows. */
    assert_int_equal(mpk_resampler_new(400, 300, 0, 0, 1, &p, 100, 60, out, flags, &rs, &err), 0);
    for (uint32_t y = 0; y < end - 1; y++) assert_int_equal(mpk_resampler_push(rs, r.px + (size_t)y * r.stride), 0);
    assert_int_equal(mpk_resampler_finish(rs, &err), MPK_EINVAL);
    assert_non_null(strstr(err.message, "rows"));
    mpk_resampler_free(rs);
    /* Freed in the middle, without finish: the worker stops. */
    assert_int_equal(mpk_resampler_new(400, 300, 0, 0, 1, &p, 100, 60, out, flags, &rs, &err), 0);
    for (uint32_t y = 0; y < 120; y++) assert_int_equal(mpk_resampler_push(rs, r.px + (size_t)y * r.stride), 0);
    mpk_resampler_free(rs);
    free(out);
    free(row);
  }
  free(want);
  free(r.px);
}

/* A window far down a tall plan reads only the few rows under it: 1 x 1000 cropped to 896 x 896
   (the image_resize.json case) draws rows 447552.. of 896000, which come from stored rows ~499. */
static void test_tall_plan_reads_a_band(void **state) {
  (void)state;
  mpk_image_target t = {MPK_IMAGE_RESIZE_CENTER_CROP, 896, 896};
  mpk_image_plan p;
  assert_int_equal(mpk_image_plan_resize(1, 1000, &t, &p, NULL), 0);
  uint8_t *out = malloc(896 * 896 * 3);
  mpk_resampler *rs;
  assert_int_equal(mpk_resampler_new(1, 1000, 0, 0, 1, &p, 896, 896, out, 0, &rs, NULL), 0);
  uint32_t first, end;
  mpk_resampler_rows(rs, &first, &end);
  assert_true(first >= 497 && end <= 503);
  mpk_resampler_free(rs);
  free(out);
}

static void test_refusals(void **state) {
  (void)state;
  mpk_raster r = random_raster(10, 10);
  uint8_t out[300];
  mpk_error err;
  mpk_image_plan p = {10, 10, 0, 0};
  assert_int_equal(mpk_image_resample(&r, 0, &p, 10, 10, out, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "orientation"));
  assert_int_equal(mpk_image_resample(&r, 9, &p, 10, 10, out, &err), MPK_EINVAL);
  p = (mpk_image_plan){10, 10, 1, 0};
  assert_int_equal(mpk_image_resample(&r, 1, &p, 10, 10, out, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "not inside"));
  p = (mpk_image_plan){10, 10, -1, 0};
  assert_int_equal(mpk_image_resample(&r, 1, &p, 5, 5, out, &err), MPK_EINVAL);
  p = (mpk_image_plan){10, 10, 0, 0};
  assert_int_equal(mpk_image_resample(&r, 1, &p, 0, 5, out, &err), MPK_ELIMIT);
  mpk_raster bad = r;
  bad.stride = 29;
  assert_int_equal(mpk_image_resample(&bad, 1, &p, 5, 5, out, &err), MPK_EINVAL);
  assert_int_equal(mpk_image_resample(&r, 1, NULL, 5, 5, out, &err), MPK_EINVAL);
  free(r.px);
}

/* The same bytes on every host (docs/cross.md): a fixed raster from its own integer generator,
   resampled through four plans and two orientations, hashes to what x86-64 gives. The SIMD levels
   equal the portable C (above); this ties the portable C that AArch64 and s390x run to the same
   bytes, under qemu. */
static void test_same_bytes_on_every_host(void **state) {
  (void)state;
  static const struct {
    mpk_image_plan plan;
    int64_t w, h;
    int orientation;
    const char *sha256;
  } cases[] = {
      {{37, 28, 0, 0}, 37, 28, 1, "sha256:2dacb46ea6cf138c7f62fe6c7e00acf3f734aba6235fd4717417ba8fdf661d87"},
      {{448, 336, 56, 0}, 336, 336, 1, "sha256:e32f8121a2b68edaa4f944018c307270100023bf876932315d5a4518e4ccd708"},
      {{225, 300, 20, 10}, 190, 250, 6, "sha256:06f8f99a6ba85dc3e77e5706dca268c914ae577115c857c36bef5282fe5ae72f"},
      {{333, 250, 0, 0}, 333, 250, 1, "sha256:4b2991c821e71aade98676c5e48181ed3e31dd591eea0e39751f2c2b2612dd3e"},
      {{700, 525, 100, 50}, 400, 300, 3, "sha256:15a3c12ad96968ff39aa44af1983d92743e7abebfa3d752c924a955b6993f64b"},
  };
  mpk_raster r = raster(333, 250);
  uint32_t x = 2463534242u; /* xorshift32: this test's own sequence, whatever ran before */
  for (size_t i = 0; i < (size_t)r.width * r.height * 3; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    r.px[i] = (uint8_t)(x >> 24);
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t *out = resample(&r, cases[i].orientation, cases[i].plan, cases[i].w, cases[i].h);
    char what[64];
    snprintf(what, sizeof what, "case %zu", i);
    tu_expect_sha256(what, out, (size_t)(cases[i].w * cases[i].h * 3), cases[i].sha256);
    free(out);
  }
  free(r.px);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flat_stays_flat),
      cmocka_unit_test(test_identity_at_scale_1),
      cmocka_unit_test(test_window_offsets),
      cmocka_unit_test(test_orientations),
      cmocka_unit_test(test_orientation_scaled),
      cmocka_unit_test(test_against_double_reference),
      cmocka_unit_test(test_clamping),
      cmocka_unit_test(test_rounding_exact),
      cmocka_unit_test(test_checkerboard_goes_grey),
      cmocka_unit_test(test_simd_levels_agree),
      cmocka_unit_test(test_simd_levels_agree_narrow),
      cmocka_unit_test(test_streaming),
      cmocka_unit_test(test_tall_plan_reads_a_band),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_same_bytes_on_every_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
