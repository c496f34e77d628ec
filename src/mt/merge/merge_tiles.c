/* The merge's inner loop: out = round_dtype(base + L·R) over a block of rows, in plain C and in
   AVX2/AVX-512 functions chosen at run time (merge_kernel.c). Every path computes an element the
   same way — d = 0; d = fma(L[i][r], R[r][j], d) for r = 0..rank-1; out = round(base + d) — so the
   bits agree whichever runs (tests/unit/test_mt_merge_kernel.c checks it). The SIMD paths keep a
   tile of up to 6 rows × 4 vectors of accumulators in registers across the whole rank (the FMA
   units are the limit: docs/PERFORMANCE.md, "LoRA merge"), prefetch the base rows ahead of the tiles, and walk
   strips of rows along whole rows while R fits in L2, else the columns in chunks whose slice of R
   stays in L1. Loop order and tile shape change the speed, never an element's arithmetic. */
#include <math.h>

#include "core/endian.h"
#include "core/mathx.h"
#include "mt/merge/merge_kernel.h"

/* Columns per chunk: the chunk's slice of R (rank × chunk floats) should stay in L1 (~16 KiB),
   and a chunk holds at least one 64-column tile. */
static int64_t chunk_cols(int64_t rank, int64_t cols) {
  int64_t c = (16384 / 4) / (rank > 0 ? rank : 1);
  c &= ~(int64_t)63;
  if (c < 64) c = 64;
  return c < cols ? c : cols;
}

/* Columns per pass of the SIMD paths: all of them (strips of rows run along whole rows, which the
   hardware prefetchers follow) while R fits in L2, else L1-sized chunks reused by every row. */
#ifdef MPK_MK_X86 /* elsewhere (AArch64, s390x) only the portable path is built */
#define R_IN_L2_BYTES ((size_t)1 << 20)
static int64_t pass_cols(int64_t rank, int64_t cols) {
  return (size_t)rank * (size_t)cols * sizeof(float) <= R_IN_L2_BYTES ? cols : chunk_cols(rank, cols);
}
#endif

/* How far ahead of a tile its rows' base values are prefetched: two 64-column tiles. On Zen 5
   (docs/PERFORMANCE.md, "LoRA merge") no prefetch was ~20 % slower for a 4096 × 4096 float16
   weight; 64 to 256 columns ahead were within the noise of each other, 512 and more slower. */
#define PREFETCH_COLS 128

/* ---------------------------------------------------------------- portable */

/* base and out are the tensor's bytes as they lie in its file: little-endian on every host
   (core/endian.h; on a little-endian host these are plain loads and stores). */
static inline float load_one(const void *p, int64_t k, mpk_mk_dtype dt) {
  const uint8_t *b = p;
  switch (dt) {
    case MPK_MK_F16: return mpk_mk_f16_to_f32(mpk_load_le16(b + 2 * k));
    case MPK_MK_BF16: return mpk_mk_bf16_to_f32(mpk_load_le16(b + 2 * k));
    default: return mpk_load_le_f32(b + 4 * k);
  }
}

static inline void store_one(void *p, int64_t k, mpk_mk_dtype dt, float v) {
  uint8_t *b = p;
  switch (dt) {
    case MPK_MK_F16: mpk_store_le16(b + 2 * k, mpk_mk_f32_to_f16(v)); break;
    case MPK_MK_BF16: mpk_store_le16(b + 2 * k, mpk_mk_f32_to_bf16(v)); break;
    default: mpk_store_le_f32(b + 4 * k, v); break;
  }
}

#ifdef MPK_MK_X86
/* One element the reference way; the SIMD paths use it for the columns left after their vectors. */
static inline void one_element(const mpk_mk_tile_args *a, int64_t i, int64_t j) {
  const float *l = a->L + i * a->rank;
  float d = 0.0f;
  for (int64_t r = 0; r < a->rank; r++) d = mpk_fmaf(l[r], a->R[r * a->cols + j], d);
  int64_t k = i * a->cols + j;
  store_one(a->out, k, a->dtype, load_one(a->base, k, a->dtype) + d);
}
#endif

#define PCHUNK 256

void mpk_mk_rows_portable(const mpk_mk_tile_args *a) {
  const int64_t cols = a->cols, rank = a->rank;
  const int64_t cw = chunk_cols(rank, cols) < PCHUNK ? chunk_cols(rank, cols) : PCHUNK;
  float d[PCHUNK];
  for (int64_t c0 = 0; c0 < cols; c0 += cw) {
    int64_t n = cols - c0 < cw ? cols - c0 : cw;
    for (int64_t i = 0; i < a->nrows; i++) {
      const float *l = a->L + i * rank;
      for (int64_t j = 0; j < n; j++) d[j] = 0.0f;
      for (int64_t r = 0; r < rank; r++) {
        const float lr = l[r], *rr = a->R + r * cols + c0;
        for (int64_t j = 0; j < n; j++) d[j] = mpk_fmaf(lr, rr[j], d[j]);
      }
      int64_t k0 = i * cols + c0;
      for (int64_t j = 0; j < n; j++)
        store_one(a->out, k0 + j, a->dtype, load_one(a->base, k0 + j, a->dtype) + d[j]);
    }
  }
}

#ifdef MPK_MK_X86
#include <immintrin.h>

#define AI inline __attribute__((always_inline))
/* The tile loops must be unrolled whole so the accumulators live in registers: -O3 does it by
   itself, -O2 (RelWithDebInfo) does not and runs 3× slower without this. */
#ifdef __clang__
#define UNROLL _Pragma("unroll")
#else
#define UNROLL _Pragma("GCC unroll 8")
#endif

/* ---------------------------------------------------------------- AVX2 + FMA + F16C */

#define T2 __attribute__((target("avx2,fma,f16c")))

static AI T2 __m256 ld8(const void *p, mpk_mk_dtype dt) {
  switch (dt) {
    case MPK_MK_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    case MPK_MK_BF16:
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
    default: return _mm256_loadu_ps((const float *)p);
  }
}

/* 8 × 16 bits; non-temporal when `nt` and the address allows it. */
static AI T2 void st8_u16(void *p, __m128i h, int nt) {
  if (nt && !((uintptr_t)p & 15)) _mm_stream_si128((__m128i *)p, h);
  else _mm_storeu_si128((__m128i *)p, h);
}

static AI T2 void st8(void *p, mpk_mk_dtype dt, __m256 v, int nt) {
  switch (dt) {
    case MPK_MK_F16:
      st8_u16(p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), nt);
      break;
    case MPK_MK_BF16: {
      __m256i x = _mm256_castps_si256(v);
      __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
      __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
      __m256i qn = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
      __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      r = _mm256_blendv_epi8(r, qn, nan);
      /* 8 × 32-bit (each < 2^16) to 8 × 16-bit: pack within lanes, then gather the two halves */
      __m256i pk = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
      st8_u16(p, _mm256_castsi256_si128(pk), nt);
      break;
    }
    default:
      if (nt && !((uintptr_t)p & 31)) _mm256_stream_ps((float *)p, v);
      else _mm256_storeu_ps((float *)p, v);
      break;
  }
}

/* M rows × N vectors of 8 columns, starting at row i, column j. */
static AI T2 void tile8(const mpk_mk_tile_args *a, int64_t i, int64_t j, const int M, const int N,
                        const mpk_mk_dtype dt) {
  const int64_t rank = a->rank, cols = a->cols;
  const size_t es = dt == MPK_MK_F32 ? 4 : 2;
  __m256 acc[6][2];
  UNROLL for (int m = 0; m < M; m++)
    UNROLL for (int n = 0; n < N; n++) acc[m][n] = _mm256_setzero_ps();
  const float *l = a->L + i * rank, *rp = a->R + j;
  for (int64_t r = 0; r < rank; r++, rp += cols) {
    __m256 rv[2];
    UNROLL for (int n = 0; n < N; n++) rv[n] = _mm256_loadu_ps(rp + 8 * n);
    UNROLL for (int m = 0; m < M; m++) {
      __m256 lv = _mm256_broadcast_ss(l + m * rank + r);
      UNROLL for (int n = 0; n < N; n++) acc[m][n] = _mm256_fmadd_ps(lv, rv[n], acc[m][n]);
    }
  }
  UNROLL for (int m = 0; m < M; m++) /* the base rows a few tiles on (past a row's end is harmless) */
    __builtin_prefetch((const char *)a->base + ((size_t)(i + m) * (size_t)cols + (size_t)j + PREFETCH_COLS) * es);
  UNROLL for (int m = 0; m < M; m++)
    UNROLL for (int n = 0; n < N; n++) {
      size_t off = ((size_t)(i + m) * (size_t)cols + (size_t)j + 8u * (size_t)n) * es;
      __m256 b = ld8((const char *)a->base + off, dt);
      st8((char *)a->out + off, dt, _mm256_add_ps(b, acc[m][n]), a->stream);
    }
}

static AI T2 void cols8(const mpk_mk_tile_args *a, int64_t i, int64_t c0, int64_t c1, const int M,
                        const mpk_mk_dtype dt) {
  int64_t j = c0;
  for (; j + 16 <= c1; j += 16) tile8(a, i, j, M, 2, dt);
  for (; j + 8 <= c1; j += 8) tile8(a, i, j, M, 1, dt);
  for (; j < c1; j++)
    UNROLL for (int m = 0; m < M; m++) one_element(a, i + m, j);
}

static AI T2 void rows8(const mpk_mk_tile_args *a, const mpk_mk_dtype dt) {
  const int64_t cw = pass_cols(a->rank, a->cols);
  const int six = a->rank >= 8; /* 12 accumulators: as for AVX-512 */
  for (int64_t c0 = 0; c0 < a->cols; c0 += cw) {
    int64_t c1 = a->cols - c0 < cw ? a->cols : c0 + cw;
    int64_t i = 0;
    if (six)
      for (; i + 6 <= a->nrows; i += 6) cols8(a, i, c0, c1, 6, dt);
    for (; i + 4 <= a->nrows; i += 4) cols8(a, i, c0, c1, 4, dt);
    for (; i + 2 <= a->nrows; i += 2) cols8(a, i, c0, c1, 2, dt);
    for (; i < a->nrows; i++) cols8(a, i, c0, c1, 1, dt);
  }
}

T2 void mpk_mk_rows_avx2(const mpk_mk_tile_args *a) {
  switch (a->dtype) {
    case MPK_MK_F16: rows8(a, MPK_MK_F16); break;
    case MPK_MK_BF16: rows8(a, MPK_MK_BF16); break;
    default: rows8(a, MPK_MK_F32); break;
  }
  if (a->stream) _mm_sfence(); /* order the non-temporal stores before whatever follows */
}

/* ---------------------------------------------------------------- AVX-512 */

#define T5 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

/* k: the lanes to touch (all 16 except in the last, partial vector of a row). */
static AI T5 __m512 ld16(const void *p, mpk_mk_dtype dt, const int partial, __mmask16 k) {
  switch (dt) {
    case MPK_MK_F16: {
      __m256i h = partial ? _mm256_maskz_loadu_epi16(k, p) : _mm256_loadu_si256((const __m256i *)p);
      return _mm512_cvtph_ps(h);
    }
    case MPK_MK_BF16: {
      __m256i h = partial ? _mm256_maskz_loadu_epi16(k, p) : _mm256_loadu_si256((const __m256i *)p);
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    default: return partial ? _mm512_maskz_loadu_ps(k, p) : _mm512_loadu_ps(p);
  }
}

/* 16 × 16 bits: masked, or non-temporal when `nt` and the address allows it. */
static AI T5 void st16_u16(void *p, __m256i h, const int partial, __mmask16 k, int nt) {
  if (partial) _mm256_mask_storeu_epi16(p, k, h);
  else if (nt && !((uintptr_t)p & 31)) _mm256_stream_si256((__m256i *)p, h);
  else _mm256_storeu_si256((__m256i *)p, h);
}

static AI T5 void st16(void *p, mpk_mk_dtype dt, __m512 v, const int partial, __mmask16 k, int nt) {
  switch (dt) {
    case MPK_MK_F16: {
      st16_u16(p, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), partial, k, nt);
      break;
    }
    case MPK_MK_BF16: {
      /* vcvtneps2bf16 would flush subnormals; the integer rounding keeps them, as IEEE says */
      __m512i x = _mm512_castps_si512(v);
      __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
      __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb), 16);
      __m512i qn = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
      r = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, qn);
      st16_u16(p, _mm512_cvtepi32_epi16(r), partial, k, nt);
      break;
    }
    default:
      if (partial) _mm512_mask_storeu_ps(p, k, v);
      else if (nt && !((uintptr_t)p & 63)) _mm512_stream_ps(p, v);
      else _mm512_storeu_ps(p, v);
      break;
  }
}

/* M rows × N vectors of 16 columns at (i, j); with `partial`, N is 1 and only the lanes in k. */
static AI T5 void tile16(const mpk_mk_tile_args *a, int64_t i, int64_t j, const int M, const int N,
                         const mpk_mk_dtype dt, const int partial, __mmask16 k) {
  const int64_t rank = a->rank, cols = a->cols;
  const size_t es = dt == MPK_MK_F32 ? 4 : 2;
  __m512 acc[6][4];
  UNROLL for (int m = 0; m < M; m++)
    UNROLL for (int n = 0; n < N; n++) acc[m][n] = _mm512_setzero_ps();
  const float *l = a->L + i * rank, *rp = a->R + j;
  for (int64_t r = 0; r < rank; r++, rp += cols) {
    __m512 rv[4];
    UNROLL for (int n = 0; n < N; n++) rv[n] = partial ? _mm512_maskz_loadu_ps(k, rp) : _mm512_loadu_ps(rp + 16 * n);
    UNROLL for (int m = 0; m < M; m++) {
      __m512 lv = _mm512_set1_ps(l[m * rank + r]);
      UNROLL for (int n = 0; n < N; n++) acc[m][n] = _mm512_fmadd_ps(lv, rv[n], acc[m][n]);
    }
  }
  UNROLL for (int m = 0; m < M; m++) {
    const char *pb = (const char *)a->base + ((size_t)(i + m) * (size_t)cols + (size_t)j + PREFETCH_COLS) * es;
    for (size_t q = 0; q < (size_t)N * 16u * es; q += 64) __builtin_prefetch(pb + q);
  }
  UNROLL for (int m = 0; m < M; m++)
    UNROLL for (int n = 0; n < N; n++) {
      size_t off = ((size_t)(i + m) * (size_t)cols + (size_t)j + 16u * (size_t)n) * es;
      __m512 b = ld16((const char *)a->base + off, dt, partial, k);
      st16((char *)a->out + off, dt, _mm512_add_ps(b, acc[m][n]), partial, k, a->stream);
    }
}

static AI T5 void cols16(const mpk_mk_tile_args *a, int64_t i, int64_t c0, int64_t c1, const int M,
                         const mpk_mk_dtype dt) {
  int64_t j = c0;
  for (; j + 64 <= c1; j += 64) tile16(a, i, j, M, 4, dt, 0, 0xffff);
  for (; j + 16 <= c1; j += 16) tile16(a, i, j, M, 1, dt, 0, 0xffff);
  if (j < c1) tile16(a, i, j, M, 1, dt, 1, (__mmask16)((1u << (c1 - j)) - 1u));
}

static AI T5 void rows16(const mpk_mk_tile_args *a, const mpk_mk_dtype dt) {
  const int64_t cw = pass_cols(a->rank, a->cols);
  /* 6-row tiles (24 accumulators) pay off for longer ranks and cost for the shortest */
  const int six = a->rank >= 8;
  for (int64_t c0 = 0; c0 < a->cols; c0 += cw) {
    int64_t c1 = a->cols - c0 < cw ? a->cols : c0 + cw;
    int64_t i = 0;
    if (six)
      for (; i + 6 <= a->nrows; i += 6) cols16(a, i, c0, c1, 6, dt);
    for (; i + 4 <= a->nrows; i += 4) cols16(a, i, c0, c1, 4, dt);
    for (; i + 2 <= a->nrows; i += 2) cols16(a, i, c0, c1, 2, dt);
    for (; i < a->nrows; i++) cols16(a, i, c0, c1, 1, dt);
  }
}

T5 void mpk_mk_rows_avx512(const mpk_mk_tile_args *a) {
  switch (a->dtype) {
    case MPK_MK_F16: rows16(a, MPK_MK_F16); break;
    case MPK_MK_BF16: rows16(a, MPK_MK_BF16); break;
    default: rows16(a, MPK_MK_F32); break;
  }
  if (a->stream) _mm_sfence();
}
#endif
