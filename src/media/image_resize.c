/* The resampler: the upright view of a stored RGB8 raster drawn at the plan's size, of which only
   the target window is computed.

   The filter is Pillow's antialiased bicubic (ImagingResample, a = -0.5): per output pixel a window
   of source pixels centred on (i + 0.5) * scale, the kernel stretched by the downscale factor so it
   low-passes before it decimates, the weights normalised to sum 1. Weights and windows are computed
   in double exactly as Pillow's precompute_coeffs does, then held in fixed point (14 fraction bits,
   int16, so SIMD multiply-adds take pairs; 22 bits, Pillow's own, for reductions beyond 64x where
   14-bit weights would lose the taps). The quantised weights of each window are made to sum to
   exactly 1.0 so a flat image stays flat. Each pass accumulates in int32, adds one half and shifts
   (correct rounding), and clamps to 0..255; the result of the first pass is 8-bit, as in Pillow.

   Orientation: the EXIF transform only decides which stored axis feeds which upright axis and in
   which direction, so the windows are computed on the upright axes and then expressed in stored
   coordinates (reversed where the axis is mirrored). The first pass always runs along stored
   columns of consecutive stored rows (cache-friendly, and it lets rows stream in from a decoder),
   the second along the stored row direction; the result lands at its upright position. Nothing
   rotated is ever materialised. Pillow filters the upright rows first: the same order for
   orientations 5..8, the other for 1..4, where the 8-bit rounding and clamping between the passes
   then differ (0.2 level on average; more beside edges whose ringing reaches the clamp).

   Work: pass 1 combines, for each output line, the window's stored rows over only the columns the
   window reads (SIMD across bytes); pass 2 filters that one line (SIMD across taps). Rows outside
   the window's rows are never read. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && !defined(MPK_NO_SIMD)
#include <immintrin.h>
#define MPK_X86 1
#endif

#include "core/core.h"
#include "core/cpu.h"
#include "media/image.h"
#include "media/image_resize.h"

#define PREC_SIMD 14     /* int16 weights: |w| < 2 fits, and pairs feed pmaddwd */
#define PREC_WIDE 22     /* Pillow's PRECISION_BITS: 255 * 2^22 * sum|w| stays below 2^31 */
#define SIMD_MAX_TAPS 257 /* longer windows (reductions beyond 64x) use PREC_WIDE, portable C */
#define TMP_PAD 64       /* bytes past a pass-1 line that pass 2's 16-byte loads may touch */

/* ---------------------------------------------------------------- instruction set */

enum { SIMD_C = 0, SIMD_SSE2 = 1, SIMD_SSSE3 = 2, SIMD_AVX2 = 3 };
static int simd_cap = SIMD_AVX2;

int mpk_image_resample_simd_cap(int level) {
  int prev = simd_cap;
  simd_cap = level;
  return prev;
}

static int simd_level(void) {
  int have = SIMD_C;
#ifdef MPK_X86
  unsigned f = mpk_cpu_features();
  if (f & MPK_CPU_SSE2) have = SIMD_SSE2;
  if (have == SIMD_SSE2 && (f & MPK_CPU_SSSE3)) have = SIMD_SSSE3;
  if (have == SIMD_SSSE3 && (f & MPK_CPU_AVX2)) have = SIMD_AVX2;
#endif
  return have < simd_cap ? have : simd_cap;
}

/* ---------------------------------------------------------------- windows and weights */

static double bicubic(double x) {
  const double a = -0.5;
  if (x < 0) x = -x;
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

/* One axis of the window, in stored coordinates. */
typedef struct axis {
  size_t n;          /* outputs */
  uint32_t lo, hi;   /* stored indices any window reads: [lo, hi) */
  int bits;          /* fraction bits of the weights */
  size_t stride;     /* weights per output: the longest window rounded up to a multiple of 4 */
  uint32_t *start;   /* first stored index of each output's window */
  uint32_t *len;     /* taps of each window (zero weights at either end trimmed) */
  uint32_t *pos;     /* index of each entry along the upright window axis; NULL: entry e is index e */
  int32_t *w;        /* n * stride weights, 0 past len */
  int32_t *pair;     /* bits == PREC_SIMD: n * stride / 2 pairs, w[2k] | w[2k+1] << 16 */
} axis;

static size_t axis_pos(const axis *ax, size_t e) { return ax->pos ? ax->pos[e] : e; }

static void axis_free(axis *ax) {
  free(ax->start);
  free(ax->len);
  free(ax->pos);
  free(ax->w);
  free(ax->pair);
}

/* Windows for `n` outputs starting at `off` of an upright axis of `plan` pixels drawn from `size`
   stored pixels whose content spans `extent` of them (less than `size` when the last pixel of a
   reduced decode is partly padding); `flip`: the stored axis runs the other way. Entries are in
   upright order, or in stored order (reversed when flipped) with `stored_order`. */
static int axis_build(axis *ax, uint32_t size, double extent, int64_t plan, int64_t off, size_t n, int flip,
                      int stored_order, mpk_error *err) {
  memset(ax, 0, sizeof *ax);
  double scale = extent / (double)plan;
  double fs = scale < 1 ? 1 : scale, support = 2 * fs, ss = 1 / fs;
  size_t ksize = (size_t)ceil(support) * 2 + 1; /* at most 4 * 65535 + 3 */
  ax->n = n;
  ax->stride = (ksize + 3) & ~(size_t)3;
  ax->bits = ksize <= SIMD_MAX_TAPS ? PREC_SIMD : PREC_WIDE;
  ax->lo = UINT32_MAX;
  ax->start = malloc(n * sizeof *ax->start);
  ax->len = malloc(n * sizeof *ax->len);
  if (flip && stored_order) ax->pos = malloc(n * sizeof *ax->pos); /* only a reversed order needs the map */
  ax->w = n > SIZE_MAX / sizeof(int32_t) / ax->stride ? NULL : calloc(n * ax->stride, sizeof(int32_t));
  double *kd = malloc(ksize * sizeof *kd);
  if (!ax->start || !ax->len || (flip && stored_order && !ax->pos) || !ax->w || !kd) {
    free(kd);
    axis_free(ax);
    return mpk_fail(err, MPK_ENOMEM, "image", NULL, "out of memory (resampling weights)");
  }
  const double one = (double)(INT64_C(1) << ax->bits);
  for (size_t i = 0; i < n; i++) {
    /* Pillow's precompute_coeffs, output index off + i of the whole plan. */
    double center = ((double)(off + (int64_t)i) + 0.5) * scale;
    int64_t xmin = (int64_t)(center - support + 0.5), xmax = (int64_t)(center + support + 0.5);
    if (xmin < 0) xmin = 0;
    if (xmax > (int64_t)size) xmax = size;
    if (xmax <= xmin) xmax = xmin + 1; /* not reached: center lies inside [0, size) */
    size_t cnt = (size_t)(xmax - xmin);
    double ww = 0;
    for (size_t x = 0; x < cnt; x++) {
      kd[x] = bicubic(((double)((int64_t)x + xmin) - center + 0.5) * ss);
      ww += kd[x];
    }
    int32_t *q = ax->w + i * ax->stride;
    int64_t sum = 0;
    size_t big = 0;
    for (size_t x = 0; x < cnt; x++) {
      double k = ww != 0 ? kd[x] / ww : kd[x];
      q[x] = (int32_t)(k < 0 ? -0.5 + k * one : 0.5 + k * one);
      sum += q[x];
      if (kd[x] > kd[big]) big = x;
    }
    if (ww != 0) q[big] += (int32_t)((int64_t)one - sum); /* rounding residue to the largest tap */
    size_t a = 0, b = cnt;
    while (a + 1 < b && q[a] == 0) a++;
    while (b - 1 > a && q[b - 1] == 0) b--;
    memmove(q, q + a, (b - a) * sizeof *q);
    memset(q + (b - a), 0, (ax->stride - (b - a)) * sizeof *q);
    cnt = b - a;
    xmin += (int64_t)a;
    if (flip) { /* stored index = size - 1 - upright index: the window and its weights reverse */
      xmin = (int64_t)size - (xmin + (int64_t)cnt);
      for (size_t x = 0; x < cnt / 2; x++) {
        int32_t t = q[x];
        q[x] = q[cnt - 1 - x];
        q[cnt - 1 - x] = t;
      }
    }
    ax->start[i] = (uint32_t)xmin;
    ax->len[i] = (uint32_t)cnt;
    if (ax->pos) ax->pos[i] = (uint32_t)i;
    if ((uint32_t)xmin < ax->lo) ax->lo = (uint32_t)xmin;
    if ((uint32_t)xmin + (uint32_t)cnt > ax->hi) ax->hi = (uint32_t)xmin + (uint32_t)cnt;
    for (size_t x = 0; x < cnt; x++)
      if (ax->bits == PREC_SIMD && (q[x] > 32767 || q[x] < -32768)) {
        /* Not reached: normalised bicubic weights stay within about -0.1..1.1 (int16 holds -2..2). */
        free(kd);
        axis_free(ax);
        return mpk_fail(err, MPK_EUNSUPPORTED, "image", NULL, "resampling weight %d out of the int16 range", q[x]);
      }
  }
  free(kd);
  if (flip && stored_order) { /* reverse the entries so stored windows come in increasing order */
    for (size_t i = 0, j = n - 1; i < j; i++, j--) {
      uint32_t t = ax->start[i];
      ax->start[i] = ax->start[j];
      ax->start[j] = t;
      t = ax->len[i];
      ax->len[i] = ax->len[j];
      ax->len[j] = t;
      uint32_t p = ax->pos[i];
      ax->pos[i] = ax->pos[j];
      ax->pos[j] = p;
      for (size_t x = 0; x < ax->stride; x++) {
        int32_t v = ax->w[i * ax->stride + x];
        ax->w[i * ax->stride + x] = ax->w[j * ax->stride + x];
        ax->w[j * ax->stride + x] = v;
      }
    }
  }
  if (ax->bits == PREC_SIMD) {
    /* one more row of zeros: horiz_avx2 loads a lone last output's pairs beside a partner's */
    ax->pair = malloc((n + 1) * (ax->stride / 2) * sizeof *ax->pair);
    if (!ax->pair) {
      axis_free(ax);
      return mpk_fail(err, MPK_ENOMEM, "image", NULL, "out of memory (resampling weights)");
    }
    for (size_t i = 0; i < n * (ax->stride / 2); i++)
      ax->pair[i] = (int32_t)((uint32_t)(uint16_t)ax->w[2 * i] | (uint32_t)(uint16_t)ax->w[2 * i + 1] << 16);
    memset(ax->pair + n * (ax->stride / 2), 0, (ax->stride / 2) * sizeof *ax->pair);
  }
  return 0;
}

/* ---------------------------------------------------------------- pass 1: rows into one line */

static inline uint8_t clip8(int32_t acc, int bits) {
  if (acc <= 0) return 0;
  acc >>= bits;
  return acc > 255 ? 255 : (uint8_t)acc;
}

/* out[j] = sum_k w[k] * rows[k][j], rounded and clamped, for j < width. */
static void vert_c(const uint8_t *const *rows, const int32_t *w, size_t taps, int bits, size_t width,
                   uint8_t *out) {
  enum { BLOCK = 512 };
  int32_t acc[BLOCK];
  for (size_t j0 = 0; j0 < width; j0 += BLOCK) {
    size_t m = width - j0 < BLOCK ? width - j0 : BLOCK;
    for (size_t j = 0; j < m; j++) acc[j] = INT32_C(1) << (bits - 1);
    for (size_t k = 0; k < taps; k++) {
      const uint8_t *r = rows[k] + j0;
      int32_t c = w[k];
      for (size_t j = 0; j < m; j++) acc[j] += c * r[j];
    }
    for (size_t j = 0; j < m; j++) out[j0 + j] = clip8(acc[j], bits);
  }
}

#ifdef MPK_X86
/* Bytes [j, width) one by one: lines narrower than a vector. */
static void vert_tail(const uint8_t *const *rows, const int32_t *pair, size_t taps, size_t j, size_t width,
                      uint8_t *out) {
  for (; j < width; j++) {
    int32_t acc = INT32_C(1) << (PREC_SIMD - 1);
    for (size_t k = 0; k < taps; k++) acc += (int16_t)(uint16_t)((uint32_t)pair[k / 2] >> (k & 1 ? 16 : 0)) * rows[k][j];
    out[j] = clip8(acc, PREC_SIMD);
  }
}

/* 16 bytes of out from 16 of each row, two rows at a time: their bytes interleaved and widened to
   int16 meet a (w[k], w[k+1]) pair in pmaddwd, giving four int32 sums per 8 bytes. `taps` is even
   (a zero weight pads it). */
__attribute__((target("sse2"))) static inline void vert_sse2_16(const uint8_t *const *rows, const int32_t *pair,
                                                               size_t taps, size_t j, uint8_t *out) {
  const __m128i zero = _mm_setzero_si128(), half = _mm_set1_epi32(1 << (PREC_SIMD - 1));
  __m128i s0 = half, s1 = half, s2 = half, s3 = half;
  for (size_t k = 0; k < taps; k += 2) {
    __m128i c = _mm_set1_epi32(pair[k / 2]);
    __m128i a = _mm_loadu_si128((const __m128i *)(rows[k] + j));
    __m128i b = _mm_loadu_si128((const __m128i *)(rows[k + 1] + j));
    __m128i lo = _mm_unpacklo_epi8(a, b), hi = _mm_unpackhi_epi8(a, b);
    s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), c));
    s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), c));
    s2 = _mm_add_epi32(s2, _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), c));
    s3 = _mm_add_epi32(s3, _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), c));
  }
  s0 = _mm_srai_epi32(s0, PREC_SIMD);
  s1 = _mm_srai_epi32(s1, PREC_SIMD);
  s2 = _mm_srai_epi32(s2, PREC_SIMD);
  s3 = _mm_srai_epi32(s3, PREC_SIMD);
  /* Signed saturation to int16 keeps negatives negative; unsigned saturation clamps 0..255. */
  _mm_storeu_si128((__m128i *)(out + j), _mm_packus_epi16(_mm_packs_epi32(s0, s1), _mm_packs_epi32(s2, s3)));
}

/* Bytes [0, width). A width that is not a multiple of 16 ends with one more vector over the last 16
   bytes, overlapping the one before: those bytes are computed twice, to the same values, instead of
   one by one. */
__attribute__((target("sse2"))) static void vert_sse2(const uint8_t *const *rows, const int32_t *pair, size_t taps,
                                                      size_t width, uint8_t *out) {
  if (width < 16) {
    vert_tail(rows, pair, taps, 0, width, out);
    return;
  }
  size_t j = 0;
  for (; j + 16 <= width; j += 16) vert_sse2_16(rows, pair, taps, j, out);
  if (j < width) vert_sse2_16(rows, pair, taps, width - 16, out);
}

/* The same on 32 bytes. unpack/pack work within 128-bit lanes, so the lanes' orders cancel.
   vert_avx2_madd adds two rows' 32 bytes times their weight pair c to the four sums (8 bytes each);
   vert_avx2_store rounds (the sums start at one half), shifts, clamps and stores them. */
__attribute__((target("avx2"), always_inline)) static inline void vert_avx2_madd(__m256i a, __m256i b, __m256i c,
                                                                               __m256i s[4]) {
  const __m256i zero = _mm256_setzero_si256();
  __m256i lo = _mm256_unpacklo_epi8(a, b), hi = _mm256_unpackhi_epi8(a, b);
  s[0] = _mm256_add_epi32(s[0], _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), c));
  s[1] = _mm256_add_epi32(s[1], _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), c));
  s[2] = _mm256_add_epi32(s[2], _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), c));
  s[3] = _mm256_add_epi32(s[3], _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), c));
}

__attribute__((target("avx2"), always_inline)) static inline void vert_avx2_store(const __m256i s[4], uint8_t *out) {
  __m256i a = _mm256_packs_epi32(_mm256_srai_epi32(s[0], PREC_SIMD), _mm256_srai_epi32(s[1], PREC_SIMD));
  __m256i b = _mm256_packs_epi32(_mm256_srai_epi32(s[2], PREC_SIMD), _mm256_srai_epi32(s[3], PREC_SIMD));
  _mm256_storeu_si256((__m256i *)out, _mm256_packus_epi16(a, b));
}

__attribute__((target("avx2"))) static inline void vert_avx2_32(const uint8_t *const *rows, const int32_t *pair,
                                                               size_t taps, size_t j, uint8_t *out) {
  const __m256i half = _mm256_set1_epi32(1 << (PREC_SIMD - 1));
  __m256i s[4] = {half, half, half, half};
  for (size_t k = 0; k < taps; k += 2)
    vert_avx2_madd(_mm256_loadu_si256((const __m256i *)(rows[k] + j)), _mm256_loadu_si256((const __m256i *)(rows[k + 1] + j)),
                   _mm256_set1_epi32(pair[k / 2]), s);
  vert_avx2_store(s, out + j);
}

/* Windows of 2..8 taps (reductions up to 2x, the common case): the row pointers and the weights'
   broadcasts held in registers for the whole line (through `out`, which may alias anything, the
   compiler would reload them every 32 bytes) and the taps unrolled: `np`, the pairs, is a constant
   at each call. The last vector overlaps the one before, as in vert_avx2. width >= 32. */
__attribute__((target("avx2"), always_inline)) static inline void vert_avx2_short(const uint8_t *const *rows,
                                                                                const int32_t *pair, int np,
                                                                                size_t width, uint8_t *out) {
  const __m256i half = _mm256_set1_epi32(1 << (PREC_SIMD - 1));
  const uint8_t *ra[4], *rb[4];
  __m256i c[4];
  for (int k = 0; k < np; k++) {
    ra[k] = rows[2 * k];
    rb[k] = rows[2 * k + 1];
    c[k] = _mm256_set1_epi32(pair[k]);
  }
  for (size_t j = 0;; j += 32) {
    if (j + 32 > width) {
      if (j >= width) return;
      j = width - 32;
    }
    __m256i s[4] = {half, half, half, half};
    for (int k = 0; k < np; k++)
      vert_avx2_madd(_mm256_loadu_si256((const __m256i *)(ra[k] + j)), _mm256_loadu_si256((const __m256i *)(rb[k] + j)),
                     c[k], s);
    vert_avx2_store(s, out + j);
  }
}

__attribute__((target("avx2"))) static void vert_avx2(const uint8_t *const *rows, const int32_t *pair, size_t taps,
                                                      size_t width, uint8_t *out) {
  if (width < 32) {
    vert_sse2(rows, pair, taps, width, out);
    return;
  }
  switch (taps) {
    case 2: vert_avx2_short(rows, pair, 1, width, out); return;
    case 4: vert_avx2_short(rows, pair, 2, width, out); return;
    case 6: vert_avx2_short(rows, pair, 3, width, out); return;
    case 8: vert_avx2_short(rows, pair, 4, width, out); return;
    default: break;
  }
  size_t j = 0;
  for (; j + 32 <= width; j += 32) vert_avx2_32(rows, pair, taps, j, out);
  if (j < width) vert_avx2_32(rows, pair, taps, width - 32, out);
}
#endif

/* ---------------------------------------------------------------- pass 2: one line to pixels */

/* Output pixel e (RGB) at out + e * step, from the line `line` whose pixel 0 is stored index ax->lo. */
static void horiz_c(const uint8_t *line, const axis *ax, uint8_t *out, size_t step) {
  const int32_t half = INT32_C(1) << (ax->bits - 1);
  for (size_t e = 0; e < ax->n; e++) {
    const uint8_t *p = line + 3 * (size_t)(ax->start[e] - ax->lo);
    const int32_t *w = ax->w + e * ax->stride;
    int32_t r = half, g = half, b = half;
    for (size_t k = 0; k < ax->len[e]; k++, p += 3) {
      r += w[k] * p[0];
      g += w[k] * p[1];
      b += w[k] * p[2];
    }
    uint8_t *o = out + e * step;
    o[0] = clip8(r, ax->bits);
    o[1] = clip8(g, ax->bits);
    o[2] = clip8(b, ax->bits);
  }
}

#ifdef MPK_X86
/* Four taps per 16-byte load: pshufb gathers R0 R1 G0 G1 B0 B1 (and R2 R3 ...) widened to int16,
   pmaddwd with the (w[k], w[k+1]) pair sums the two taps per channel. Windows are zero-padded to a
   multiple of 4 and the line has TMP_PAD bytes after it, so the loads stay inside the buffer. */
__attribute__((target("ssse3"))) static void horiz_ssse3(const uint8_t *line, const axis *ax, const __m128i *wv,
                                                         uint8_t *out, size_t step) {
  const __m128i m0 = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  const __m128i m1 = _mm_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  const __m128i half = _mm_set1_epi32(1 << (PREC_SIMD - 1));
  const size_t pairs = ax->stride / 2;
  for (size_t e = 0; e < ax->n; e++) {
    const uint8_t *p = line + 3 * (size_t)(ax->start[e] - ax->lo);
    const __m128i *w = wv + e * pairs;
    size_t taps = (ax->len[e] + 3) & ~(size_t)3;
    __m128i s = half, t = _mm_setzero_si128();
    for (size_t k = 0; k < taps; k += 4) {
      __m128i v = _mm_loadu_si128((const __m128i *)(p + 3 * k));
      s = _mm_add_epi32(s, _mm_madd_epi16(_mm_shuffle_epi8(v, m0), w[k / 2]));
      t = _mm_add_epi32(t, _mm_madd_epi16(_mm_shuffle_epi8(v, m1), w[k / 2 + 1]));
    }
    s = _mm_srai_epi32(_mm_add_epi32(s, t), PREC_SIMD);
    s = _mm_packus_epi16(_mm_packs_epi32(s, s), s);
    uint32_t px = (uint32_t)_mm_cvtsi128_si32(s);
    uint8_t *o = out + e * step;
    if (step == 3 && e + 1 < ax->n) { /* one store; its 4th byte is the next pixel's, written next */
      memcpy(o, &px, 4);
      continue;
    }
    o[0] = (uint8_t)px;
    o[1] = (uint8_t)(px >> 8);
    o[2] = (uint8_t)(px >> 16);
  }
}

/* Two output pixels at once, one per 128-bit lane: the same sums as horiz_ssse3 (integer, in a
   different order), over the longer of the two windows (the other's weights are 0 there; the line's
   padding covers the reads). Each lane's weight pairs come from ax->pair, broadcast in the register
   (pshufd) rather than from a table of broadcast copies: that table was four times the pairs' size,
   and its fresh pages cost more than the shuffles. off[e] is e's window's first byte in the line. */
__attribute__((target("avx2"))) static inline __m256i horiz_avx2_load(const uint8_t *p0, const uint8_t *p1) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p0)),
                                 _mm_loadu_si128((const __m128i *)p1), 1);
}

/* Taps k..k+3 of a pixel pair: v holds their 12 bytes in each lane, wp the two weight pairs of each
   pixel in dwords i, i + 1 of its lane; sums go to s (taps k, k+1) and t. */
#define HORIZ_AVX2_TAPS(v, wp, i, s, t)                                                                       \
  do {                                                                                                        \
    s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_shuffle_epi8(v, m0), _mm256_shuffle_epi32(wp, (i) * 0x55))); \
    t = _mm256_add_epi32(t, _mm256_madd_epi16(_mm256_shuffle_epi8(v, m1), _mm256_shuffle_epi32(wp, ((i) + 1) * 0x55))); \
  } while (0)

__attribute__((target("avx2"))) static void horiz_avx2(const uint8_t *line, const axis *ax, const uint32_t *off,
                                                      uint8_t *out, size_t step) {
  const __m256i m0 = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,
                                      0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  const __m256i m1 = _mm256_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1,
                                      6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  const __m256i half = _mm256_set1_epi32(1 << (PREC_SIMD - 1));
  const size_t pairs = ax->stride / 2, n = ax->n;
  const int32_t *pr = ax->pair; /* n + 1 rows of `pairs`: the last zero, for a lone last pixel's partner */
  size_t e = 0;
  if (pairs == 4 && step == 3) {
    /* Windows of up to 8 taps (reductions up to 2x, the common case) into a packed row: four pixels
       per step, two vectors of two, packed together and stored as one 16-byte write whose last 4
       bytes belong to pixels e + 4 and e + 5, written by the next step (so it stops 6 before n). */
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m128i pick = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    for (; e + 6 <= n; e += 4) {
      const uint8_t *p0 = line + off[e], *p1 = line + off[e + 1], *p2 = line + off[e + 2], *p3 = line + off[e + 3];
      __m256i wa = _mm256_loadu_si256((const __m256i *)(pr + 4 * e)); /* e's 4 pairs | e + 1's */
      __m256i wc = _mm256_loadu_si256((const __m256i *)(pr + 4 * e + 8));
      __m256i s = half, t = _mm256_setzero_si256(), u = half, v = _mm256_setzero_si256();
      __m256i a = horiz_avx2_load(p0, p1), b = horiz_avx2_load(p0 + 12, p1 + 12);
      __m256i c = horiz_avx2_load(p2, p3), d = horiz_avx2_load(p2 + 12, p3 + 12);
      HORIZ_AVX2_TAPS(a, wa, 0, s, t);
      HORIZ_AVX2_TAPS(b, wa, 2, s, t);
      HORIZ_AVX2_TAPS(c, wc, 0, u, v);
      HORIZ_AVX2_TAPS(d, wc, 2, u, v);
      s = _mm256_srai_epi32(_mm256_add_epi32(s, t), PREC_SIMD); /* lanes: pixel e, pixel e + 1 */
      u = _mm256_srai_epi32(_mm256_add_epi32(u, v), PREC_SIMD); /* lanes: pixel e + 2, pixel e + 3 */
      /* 32-bit groups (RGB and a zero byte) after the packs: e, e+2, 0, 0 | e+1, e+3, 0, 0 */
      __m256i px = _mm256_packus_epi16(_mm256_packs_epi32(s, u), _mm256_setzero_si256());
      __m128i rgb = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(px, order));
      _mm_storeu_si128((__m128i *)(out + 3 * e), _mm_shuffle_epi8(rgb, pick));
    }
  }
  for (; e < n; e += 2) {
    int two = e + 1 < n;
    const uint8_t *p0 = line + off[e];
    const uint8_t *p1 = two ? line + off[e + 1] : p0;
    const int32_t *w0 = pr + e * pairs, *w1 = w0 + pairs; /* w1: the zero row when e is the last */
    __m256i s = half, t = _mm256_setzero_si256();
    if (pairs == 4) { /* windows of up to 8 taps: unrolled */
      __m256i wp = _mm256_loadu_si256((const __m256i *)w0);
      __m256i a = horiz_avx2_load(p0, p1), b = horiz_avx2_load(p0 + 12, p1 + 12);
      HORIZ_AVX2_TAPS(a, wp, 0, s, t);
      HORIZ_AVX2_TAPS(b, wp, 2, s, t);
    } else {
      size_t len = ax->len[e];
      if (two && ax->len[e + 1] > len) len = ax->len[e + 1];
      for (size_t k = 0; k < len; k += 4) {
        __m256i wp = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(w0 + k / 2))),
                                             _mm_loadl_epi64((const __m128i *)(w1 + k / 2)), 1);
        __m256i a = horiz_avx2_load(p0 + 3 * k, p1 + 3 * k);
        HORIZ_AVX2_TAPS(a, wp, 0, s, t);
      }
    }
    s = _mm256_srai_epi32(_mm256_add_epi32(s, t), PREC_SIMD);
    s = _mm256_packus_epi16(_mm256_packs_epi32(s, s), s);
    uint32_t px[2] = {(uint32_t)_mm_cvtsi128_si32(_mm256_castsi256_si128(s)),
                      (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(s, 1))};
    if (step == 3 && e + 2 < n) { /* both in one store; its last 2 bytes are the next pixel's, written next */
      uint64_t both = (uint64_t)(px[0] & 0xFFFFFF) | (uint64_t)px[1] << 24;
      memcpy(out + e * 3, &both, 8);
      continue;
    }
    for (int i = 0; i <= two; i++) {
      uint8_t *o = out + (e + (size_t)i) * step;
      if (step == 3 && e + (size_t)i + 1 < n) { /* one store; its 4th byte is the next pixel's, written next */
        memcpy(o, &px[i], 4);
        continue;
      }
      o[0] = (uint8_t)px[i];
      o[1] = (uint8_t)(px[i] >> 8);
      o[2] = (uint8_t)(px[i] >> 16);
    }
  }
}
#undef HORIZ_AVX2_TAPS

/* Axis a's weight pairs, each broadcast to a whole vector once, so that pass 2 multiplies by a
   loaded operand instead of broadcasting per pixel per tap pair (about a third of its instructions). */
static __m128i *horiz_weights(const axis *ax) {
  size_t n = ax->n * (ax->stride / 2);
  __m128i *wv = aligned_alloc(16, n * sizeof *wv);
  if (wv)
    for (size_t i = 0; i < n; i++) wv[i] = _mm_set1_epi32(ax->pair[i]);
  return wv;
}
#endif

/* ---------------------------------------------------------------- the resampler */

struct mpk_resampler {
  axis a, b;            /* a: stored columns (pass 2), b: stored rows (pass 1), in stored order */
  int swap;             /* a runs along the upright y axis (orientations 5..8) */
  int64_t out_w, out_h;
  uint8_t *out;
  /* rows mode (mpk_resampler_set_rows): each output row goes to rows() when done */
  mpk_image_rows_fn rows;
  void *rows_ctx;
  int row_mode;         /* 1: rows come in order, `out` is one row reused; 0: `out` is owned, whole */
  uint8_t *owned;       /* what rows mode allocated for `out` */
  int rows_rc;          /* the first non-zero return of rows(), with rows_err */
  mpk_error rows_err;
  uint32_t src_w, src_h;
  int level;            /* SIMD_* chosen at creation */
  int copy;
  size_t cap;           /* ring slots */
  const uint8_t **ring; /* row y at ring[y % cap], pointing at stored column a.lo */
  uint8_t *slots;       /* copy: cap rows of row_bytes */
  size_t row_bytes;     /* (a.hi - a.lo) * 3 */
  uint8_t *line;        /* pass-1 result (+ TMP_PAD) */
  const uint8_t **win;  /* one window's row pointers (+ 1 for an even count) */
  size_t *order;        /* b entries by window end */
  uint32_t *minstart;   /* minstart[i]: smallest window start among order[i..] */
  uint32_t first, end;  /* stored rows read */
  uint32_t pushed;      /* rows pushed so far */
  size_t done;          /* entries of order[] finished */
#ifdef MPK_X86
  __m128i *hw;          /* pass 2's weights broadcast (horiz_weights), when it runs horiz_ssse3 */
  uint32_t *hoff;       /* when pass 2 runs horiz_avx2: each output's window's first byte in the line */
#endif
  /* worker (MPK_RESAMPLER_THREAD) */
  int threaded, started, stop;
  size_t worker_needs;  /* > 0: the worker sleeps until `pushed` reaches it */
  int producer_waits;   /* the caller sleeps until a slot is free */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t more_rows, slot_free;
};

static size_t b_end(const mpk_resampler *r, size_t e) { return (size_t)r->b.start[e] + r->b.len[e]; }

/* qsort_r is not C11: a plain insertion sort by (end, start) on entries that are almost sorted
   already (windows are monotone before zero trimming). */
static void sort_by_end(mpk_resampler *r) {
  size_t n = r->b.n;
  for (size_t i = 0; i < n; i++) r->order[i] = i;
  for (size_t i = 1; i < n; i++) {
    size_t v = r->order[i], j = i;
    while (j > 0) {
      size_t u = r->order[j - 1];
      if (b_end(r, u) < b_end(r, v) || (b_end(r, u) == b_end(r, v) && r->b.start[u] <= r->b.start[v])) break;
      r->order[j] = u;
      j--;
    }
    r->order[j] = v;
  }
  uint32_t m = UINT32_MAX;
  for (size_t i = n; i-- > 0;) {
    if (r->b.start[r->order[i]] < m) m = r->b.start[r->order[i]];
    r->minstart[i] = m;
  }
}

/* Compute output line e of axis b: pass 1 over its rows, pass 2 into the output. */
static void horiz(mpk_resampler *r, uint8_t *o, size_t step);
static void run_entry(mpk_resampler *r, size_t e) {
  const axis *b = &r->b;
  if (r->rows_rc) return; /* the receiver stopped: nothing more is made */
  size_t taps = b->len[e];
  for (size_t k = 0; k < taps; k++) r->win[k] = r->ring[(b->start[e] + k) % r->cap];
#ifdef MPK_X86
  if (b->bits == PREC_SIMD && r->level >= SIMD_SSE2) { /* the vector kernels read the pairs only */
    const int32_t *pair = b->pair + e * (b->stride / 2);
    if (taps & 1) r->win[taps] = r->win[0]; /* weight 0 (the stride is a multiple of 4) */
    size_t even = (taps + 1) & ~(size_t)1;
    if (r->level >= SIMD_AVX2) vert_avx2(r->win, pair, even, r->row_bytes, r->line);
    else vert_sse2(r->win, pair, even, r->row_bytes, r->line);
  } else
#endif
    vert_c(r->win, b->w + e * b->stride, taps, b->bits, r->row_bytes, r->line);

  size_t ub = axis_pos(b, e);
  if (r->row_mode) { /* the lines are the output rows, in order: one row, reused */
    horiz(r, r->out, 3);
    r->rows_rc = r->rows(r->rows_ctx, (int64_t)ub, r->out, (size_t)r->out_w * 3, &r->rows_err);
  } else if (!r->swap) {
    horiz(r, r->out + ub * (size_t)r->out_w * 3, 3);
  } else {
    horiz(r, r->out + ub * 3, (size_t)r->out_w * 3);
  }
}

/* Pass 2 of the line in r->line into pixels at o, o + step, ... */
static void horiz(mpk_resampler *r, uint8_t *o, size_t step) {
#ifdef MPK_X86
  if (r->hoff) {
    horiz_avx2(r->line, &r->a, r->hoff, o, step);
    return;
  }
  if (r->hw) {
    horiz_ssse3(r->line, &r->a, r->hw, o, step);
    return;
  }
#endif
  horiz_c(r->line, &r->a, o, step);
}

/* Which stored axis feeds which upright axis, per EXIF orientation: upright (x, y) reads stored
   (sx, sy) with, for `swap`, sx from y and sy from x; `flip_a` / `flip_b`: sx / sy run backwards.
   (2 mirrors, 3 turns 180°, 4 flips, 5 transposes, 6 turns 90° clockwise, 7 transverses, 8 turns
   90° counter-clockwise — what Pillow's ImageOps.exif_transpose does.) */
static const struct { unsigned char swap, flip_a, flip_b; } orient[9] = {
    {0, 0, 0}, {0, 0, 0}, {0, 1, 0}, {0, 1, 1}, {0, 0, 1}, {1, 0, 0}, {1, 0, 1}, {1, 1, 1}, {1, 1, 0},
};

static void *worker(void *arg);

int mpk_resampler_new(uint32_t src_width, uint32_t src_height, double extent_w, double extent_h, int orientation,
                      const mpk_image_plan *plan, int64_t out_width, int64_t out_height, uint8_t *out, int flags,
                      mpk_resampler **rp, mpk_error *err) {
  if (!rp) return mpk_fail(err, MPK_EINVAL, "image", NULL, "no resampler to return");
  *rp = NULL;
  if (!plan) return mpk_fail(err, MPK_EINVAL, "image", NULL, "no plan");
  if (src_width < 1 || src_height < 1)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "the source raster is empty (%ux%u)", src_width, src_height);
  if (orientation < 1 || orientation > 8)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "orientation must be 1..8 (got %d)", orientation);
  if (extent_w == 0) extent_w = src_width;
  if (extent_h == 0) extent_h = src_height;
  /* The content may end inside the last pixel, not before it or past the raster. */
  if (!(extent_w > src_width - 1.0 && extent_w <= src_width && extent_h > src_height - 1.0 && extent_h <= src_height))
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "a %ux%u raster cannot hold %.17gx%.17g pixels of content",
                    src_width, src_height, extent_w, extent_h);
  if (plan->width < 1 || plan->height < 1 || plan->width > MPK_SAFE_INT_MAX || plan->height > MPK_SAFE_INT_MAX)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "the plan's size must be positive (got %lldx%lld)",
                    (long long)plan->width, (long long)plan->height);
  if (out_width < 1 || out_height < 1 || out_width > INT32_MAX || out_height > INT32_MAX ||
      (uint64_t)out_width * (uint64_t)out_height > SIZE_MAX / 3)
    return mpk_fail(err, MPK_ELIMIT, "image", NULL, "the output window %lldx%lld is not a drawable size",
                    (long long)out_width, (long long)out_height);
  if (plan->left < 0 || plan->top < 0 || plan->left > plan->width - out_width ||
      plan->top > plan->height - out_height)
    return mpk_fail(err, MPK_EINVAL, "image", NULL,
                    "the %lldx%lld window at (%lld, %lld) is not inside the %lldx%lld plan", (long long)out_width,
                    (long long)out_height, (long long)plan->left, (long long)plan->top, (long long)plan->width,
                    (long long)plan->height);
  mpk_resampler *r = calloc(1, sizeof *r);
  if (!r) return mpk_fail(err, MPK_ENOMEM, "image", NULL, "out of memory");
  r->swap = orient[orientation].swap;
  r->out_w = out_width;
  r->out_h = out_height;
  r->out = out;
  r->src_w = src_width;
  r->src_h = src_height;
  r->level = simd_level();
  r->threaded = (flags & MPK_RESAMPLER_THREAD) != 0;
  r->copy = r->threaded || (flags & MPK_RESAMPLER_COPY);
  /* Axis a: stored columns; its upright axis is x, or y when swapped. Axis b likewise for rows. */
  int rc = axis_build(&r->a, src_width, extent_w, r->swap ? plan->height : plan->width, r->swap ? plan->top : plan->left,
                      (size_t)(r->swap ? out_height : out_width), orient[orientation].flip_a, 0, err);
  if (rc) {
    free(r);
    return rc;
  }
#ifdef MPK_X86
  /* Pass 2's kernel: AVX2 with byte offsets (while a line's bytes fit in 32 bits: any real image),
     SSSE3 with broadcast weights, or portable C. */
  int h_avx2 = r->a.bits == PREC_SIMD && r->level >= SIMD_AVX2 && (uint64_t)(r->a.hi - r->a.lo) * 3 < UINT32_MAX;
  if (h_avx2 ? !(r->hoff = malloc(r->a.n * sizeof *r->hoff))
      : r->a.bits == PREC_SIMD && r->level >= SIMD_SSSE3 ? !(r->hw = horiz_weights(&r->a))
                                                          : 0) {
    mpk_resampler_free(r);
    return mpk_fail(err, MPK_ENOMEM, "image", NULL, "out of memory (resampler buffers)");
  }
  for (size_t e = 0; r->hoff && e < r->a.n; e++) r->hoff[e] = 3 * (r->a.start[e] - r->a.lo);
  if (r->hoff || r->hw) { /* pass 2 reads the pairs, or only the broadcasts: the rest's pages go to axis b */
    free(r->a.w), r->a.w = NULL;
    if (r->hw) free(r->a.pair), r->a.pair = NULL;
  }
#endif
  rc = axis_build(&r->b, src_height, extent_h, r->swap ? plan->width : plan->height, r->swap ? plan->left : plan->top,
                  (size_t)(r->swap ? out_width : out_height), orient[orientation].flip_b, 1, err);
  if (rc) {
    mpk_resampler_free(r);
    return rc;
  }
#ifdef MPK_X86
  if (r->b.bits == PREC_SIMD && r->level >= SIMD_SSE2) free(r->b.w), r->b.w = NULL; /* pass 1 reads the pairs */
#endif
  size_t maxlen = 0;
  for (size_t e = 0; e < r->b.n; e++)
    if (r->b.len[e] > maxlen) maxlen = r->b.len[e];
  r->cap = maxlen + (r->threaded ? 32 : 0); /* slack lets the decoder run ahead of the worker */
  r->row_bytes = (size_t)(r->a.hi - r->a.lo) * 3;
  r->first = r->b.lo;
  r->end = r->b.hi;
  r->ring = calloc(r->cap, sizeof *r->ring);
  r->win = calloc(maxlen + 2, sizeof *r->win);
  r->line = calloc(r->row_bytes + 3 * r->a.stride + TMP_PAD, 1); /* horiz_avx2 may read a window's stride */
  r->order = malloc(r->b.n * sizeof *r->order);
  r->minstart = malloc(r->b.n * sizeof *r->minstart);
  if (r->copy && r->cap <= SIZE_MAX / r->row_bytes) r->slots = malloc(r->cap * r->row_bytes);
  if (!r->ring || !r->win || !r->line || !r->order || !r->minstart || (r->copy && !r->slots)) {
    mpk_resampler_free(r);
    return mpk_fail(err, MPK_ENOMEM, "image", NULL, "out of memory (resampler buffers)");
  }
  sort_by_end(r);
  if (r->threaded) {
    if (pthread_mutex_init(&r->mu, NULL) == 0 && pthread_cond_init(&r->more_rows, NULL) == 0 &&
        pthread_cond_init(&r->slot_free, NULL) == 0 && pthread_create(&r->thread, NULL, worker, r) == 0)
      r->started = 1;
    else
      r->threaded = 0; /* no thread: resample inline, still correct (the ring has slack to spare) */
  }
  *rp = r;
  return 0;
}

void mpk_resampler_rows(const mpk_resampler *r, uint32_t *first, uint32_t *end) {
  *first = r->first;
  *end = r->end;
}

static void *worker(void *arg) {
  mpk_resampler *r = arg;
  pthread_mutex_lock(&r->mu);
  while (r->done < r->b.n && !r->stop) {
    size_t e = r->order[r->done];
    if (r->pushed < b_end(r, e)) { /* woken only when this line's last row is in, not per row */
      r->worker_needs = b_end(r, e);
      pthread_cond_wait(&r->more_rows, &r->mu);
      r->worker_needs = 0;
      continue;
    }
    pthread_mutex_unlock(&r->mu);
    run_entry(r, e);
    pthread_mutex_lock(&r->mu);
    r->done++;
    if (r->producer_waits) pthread_cond_signal(&r->slot_free);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

void mpk_resampler_cols(const mpk_resampler *r, uint32_t *first, uint32_t *end) {
  *first = r->a.lo;
  *end = r->a.hi;
}

int mpk_resampler_push(mpk_resampler *r, const uint8_t *row) { return mpk_resampler_push_cols(r, row, 0); }

int mpk_resampler_push_cols(mpk_resampler *r, const uint8_t *row, uint32_t x0) {
  if (!r || !row || x0 > r->a.lo) return MPK_EINVAL;
  uint32_t y = r->pushed; /* written only by this thread (under the lock when threaded) */
  if (y >= r->src_h) return MPK_EINVAL;
  if (y >= r->first && y < r->end) {
    size_t slot = y % r->cap;
    if (r->threaded && y >= r->first + r->cap) { /* the slot's row y - cap must be finished with */
      pthread_mutex_lock(&r->mu);
      while (r->done < r->b.n && y - r->cap >= r->minstart[r->done]) {
        r->producer_waits = 1;
        pthread_cond_wait(&r->slot_free, &r->mu);
        r->producer_waits = 0;
      }
      pthread_mutex_unlock(&r->mu);
    }
    const uint8_t *p = row + (size_t)(r->a.lo - x0) * 3;
    if (r->copy) {
      uint8_t *s = r->slots + slot * r->row_bytes;
      memcpy(s, p, r->row_bytes);
      p = s;
    }
    r->ring[slot] = p;
  }
  if (r->threaded) {
    pthread_mutex_lock(&r->mu);
    r->pushed = y + 1;
    if (r->worker_needs && r->pushed >= r->worker_needs) pthread_cond_signal(&r->more_rows);
    pthread_mutex_unlock(&r->mu);
    return 0;
  }
  r->pushed = y + 1;
  while (r->done < r->b.n && b_end(r, r->order[r->done]) <= r->pushed) run_entry(r, r->order[r->done++]);
  return 0;
}

static void stop_worker(mpk_resampler *r) {
  if (!r->started) return;
  pthread_mutex_lock(&r->mu);
  if (r->pushed < r->end) r->stop = 1; /* what is missing will not come */
  pthread_cond_signal(&r->more_rows);
  pthread_mutex_unlock(&r->mu);
  pthread_join(r->thread, NULL);
  r->started = 0;
}

int mpk_resampler_set_rows(mpk_resampler *r, mpk_image_rows_fn rows, void *ctx, mpk_error *err) {
  if (!r || !rows || r->out || r->pushed)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "rows mode is set once, first, on a resampler made without an output");
  /* In order when the lines are upright rows (no transposition) and each comes after the one above
     (no vertical flip): the windows' ends grow with the row, so order[] is the rows' order. */
  int in_order = !r->swap;
  for (size_t i = 0; in_order && i < r->b.n; i++) in_order = axis_pos(&r->b, r->order[i]) == i;
  size_t n = (size_t)r->out_w * 3 * (in_order ? 1 : (size_t)r->out_h);
  if (!(r->owned = malloc(n))) return mpk_fail(err, MPK_ENOMEM, "image", NULL, "out of memory (output rows)");
  r->out = r->owned;
  r->row_mode = in_order;
  r->rows = rows;
  r->rows_ctx = ctx;
  return 0;
}

int mpk_resampler_finish(mpk_resampler *r, mpk_error *err) {
  if (!r) return mpk_fail(err, MPK_EINVAL, "image", NULL, "no resampler");
  if (!r->out) return mpk_fail(err, MPK_EINVAL, "image", NULL, "the resampler has no output");
  stop_worker(r);
  if (!r->rows_rc && r->done < r->b.n)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "the raster gave %u rows; the window needs rows %u..%u",
                    r->pushed, r->first, r->end - 1);
  /* rows mode out of order (a transposing or flipping orientation): the whole window, row by row */
  size_t row = (size_t)r->out_w * 3;
  for (int64_t y = 0; r->rows && !r->row_mode && !r->rows_rc && y < r->out_h; y++)
    r->rows_rc = r->rows(r->rows_ctx, y, r->out + (size_t)y * row, row, &r->rows_err);
  if (r->rows_rc) {
    if (!r->rows_err.message[0])
      return mpk_fail(err, r->rows_rc, "image", NULL, "the receiver of the output rows failed");
    if (err) *err = r->rows_err;
    return r->rows_rc;
  }
  return 0;
}

void mpk_resampler_free(mpk_resampler *r) {
  if (!r) return;
  if (r->started) {
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->more_rows);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
  }
  if (r->threaded) {
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->more_rows);
    pthread_cond_destroy(&r->slot_free);
  }
  axis_free(&r->a);
  axis_free(&r->b);
  free(r->ring);
  free(r->slots);
  free(r->line);
  free(r->win);
  free(r->order);
  free(r->minstart);
  free(r->owned);
#ifdef MPK_X86
  free(r->hw);
  free(r->hoff);
#endif
  free(r);
}

int mpk_image_resample_scaled(const mpk_raster *src, uint32_t full_width, uint32_t full_height, int scale_num,
                              int orientation, const mpk_image_plan *plan, int64_t out_width, int64_t out_height,
                              uint8_t *out, mpk_error *err) {
  if (!src || !src->px || src->stride / 3 < src->width)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "no source raster, or its stride is shorter than a row");
  if (scale_num < 1 || scale_num > 8)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "the decode scale must be M/8 with M in 1..8 (got %d)", scale_num);
  /* libjpeg's scaled size: ceil(full * M / 8); the content spans full * M / 8 exactly. */
  uint64_t cw = ((uint64_t)full_width * (uint64_t)scale_num + 7) / 8, ch = ((uint64_t)full_height * (uint64_t)scale_num + 7) / 8;
  if (cw != src->width || ch != src->height)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "a %ux%u image decoded at %d/8 is %llux%llu, not %ux%u", full_width,
                    full_height, scale_num, (unsigned long long)cw, (unsigned long long)ch, src->width, src->height);
  mpk_resampler *r;
  int rc = mpk_resampler_new(src->width, src->height, full_width * (double)scale_num / 8, full_height * (double)scale_num / 8,
                             orientation, plan, out_width, out_height, out, 0, &r, err);
  if (rc) return rc;
  for (uint32_t y = 0; y < r->end; y++) mpk_resampler_push(r, src->px + (size_t)y * src->stride);
  rc = mpk_resampler_finish(r, err);
  mpk_resampler_free(r);
  return rc;
}

int mpk_image_resample(const mpk_raster *src, int orientation, const mpk_image_plan *plan, int64_t out_width,
                       int64_t out_height, uint8_t *out, mpk_error *err) {
  if (!src) return mpk_fail(err, MPK_EINVAL, "image", NULL, "no source raster");
  return mpk_image_resample_scaled(src, src->width, src->height, 8, orientation, plan, out_width, out_height, out, err);
}
