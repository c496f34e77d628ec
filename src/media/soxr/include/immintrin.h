/* The AVX intrinsics libsoxr's double-precision SIMD engine uses (src/dev64s.h, src/pffft-avx.h),
   defined in GNU C vector extensions, lane for lane as Intel defines them. libsoxr is compiled
   against this header on every target (scripts/patches/libsoxr-portable-avx.patch), so x86-64
   (without -mavx), AArch64, s390x and WebAssembly all run the same engine: each lane is one IEEE
   double operation, in the same order everywhere, and the compiler may only lower a vector to
   narrower ones or to scalars, which does not change a result (no contraction: -ffp-contract=off).
   Only these names exist; a use of any other intrinsic fails to compile. */
#ifndef MPK_SOXR_IMMINTRIN_H
#define MPK_SOXR_IMMINTRIN_H

#include <string.h>

#if defined __AVX__
/* Compiled for AVX (x86-64 with -mavx): a 256-bit vector is one register, and each intrinsic is
   the same lane-wise operation, written as vector extensions. */
typedef double __m256d __attribute__((vector_size(32), aligned(32)));
typedef double __m128d __attribute__((vector_size(16), aligned(16)));
#define MPK_AVX_INLINE static inline __attribute__((always_inline))
MPK_AVX_INLINE __m256d _mm256_setzero_pd(void) { return (__m256d){0, 0, 0, 0}; }
MPK_AVX_INLINE __m256d _mm256_set_pd(double e3, double e2, double e1, double e0) { return (__m256d){e0, e1, e2, e3}; }
MPK_AVX_INLINE __m256d _mm256_set1_pd(double a) { return (__m256d){a, a, a, a}; }
MPK_AVX_INLINE __m256d _mm256_load_pd(double const *p) { return *(__m256d const *)p; }
MPK_AVX_INLINE __m256d _mm256_loadu_pd(double const *p) {
  __m256d v;
  memcpy(&v, p, sizeof v);
  return v;
}
MPK_AVX_INLINE __m256d _mm256_add_pd(__m256d a, __m256d b) { return a + b; }
MPK_AVX_INLINE __m256d _mm256_sub_pd(__m256d a, __m256d b) { return a - b; }
MPK_AVX_INLINE __m256d _mm256_mul_pd(__m256d a, __m256d b) { return a * b; }
MPK_AVX_INLINE __m256d _mm256_hadd_pd(__m256d a, __m256d b) {
  return __builtin_shufflevector(a, b, 0, 4, 2, 6) + __builtin_shufflevector(a, b, 1, 5, 3, 7);
}
MPK_AVX_INLINE __m256d _mm256_unpacklo_pd(__m256d a, __m256d b) { return __builtin_shufflevector(a, b, 0, 4, 2, 6); }
MPK_AVX_INLINE __m256d _mm256_unpackhi_pd(__m256d a, __m256d b) { return __builtin_shufflevector(a, b, 1, 5, 3, 7); }
MPK_AVX_INLINE __m128d _mm256_castpd256_pd128(__m256d a) { return __builtin_shufflevector(a, a, 0, 1); }
MPK_AVX_INLINE void _mm_store_sd(double *p, __m128d a) { *p = a[0]; }
#define _mm256_permute2f128_pd(a, b, imm)                                                                              \
  __builtin_shufflevector((__m256d)(a), (__m256d)(b), ((imm) & 3) * 2, ((imm) & 3) * 2 + 1, (((imm) >> 4) & 3) * 2,     \
                          (((imm) >> 4) & 3) * 2 + 1)
#define _mm256_shuffle_pd(a, b, imm)                                                                                   \
  __builtin_shufflevector((__m256d)(a), (__m256d)(b), (imm) & 1, 4 + (((imm) >> 1) & 1), 2 + (((imm) >> 2) & 1),      \
                          6 + (((imm) >> 3) & 1))
#else
/* A 256-bit vector is two 128-bit halves: every target has (or lowers well) 128-bit double
   vectors (SSE2, NEON, WebAssembly SIMD), and each intrinsic below works within halves or moves
   whole halves, so nothing goes through memory. */
typedef double __m128d __attribute__((vector_size(16), aligned(16)));
typedef struct {
  __m128d lo, hi; /* lanes 0-1, lanes 2-3 */
} __attribute__((aligned(32))) __m256d;

#define MPK_AVX_INLINE static inline __attribute__((always_inline))

MPK_AVX_INLINE __m256d mpk_m256d(__m128d lo, __m128d hi) {
  __m256d r = {lo, hi};
  return r;
}
MPK_AVX_INLINE __m256d _mm256_setzero_pd(void) { return mpk_m256d((__m128d){0, 0}, (__m128d){0, 0}); }
/* set_pd names the lanes from the highest: e0 is lane 0. */
MPK_AVX_INLINE __m256d _mm256_set_pd(double e3, double e2, double e1, double e0) {
  return mpk_m256d((__m128d){e0, e1}, (__m128d){e2, e3});
}
MPK_AVX_INLINE __m256d _mm256_set1_pd(double a) { return mpk_m256d((__m128d){a, a}, (__m128d){a, a}); }
MPK_AVX_INLINE __m256d _mm256_load_pd(double const *p) { return *(__m256d const *)p; }
MPK_AVX_INLINE __m256d _mm256_loadu_pd(double const *p) {
  __m256d v;
  memcpy(&v, p, sizeof v);
  return v;
}
MPK_AVX_INLINE __m256d _mm256_add_pd(__m256d a, __m256d b) { return mpk_m256d(a.lo + b.lo, a.hi + b.hi); }
MPK_AVX_INLINE __m256d _mm256_sub_pd(__m256d a, __m256d b) { return mpk_m256d(a.lo - b.lo, a.hi - b.hi); }
MPK_AVX_INLINE __m256d _mm256_mul_pd(__m256d a, __m256d b) { return mpk_m256d(a.lo * b.lo, a.hi * b.hi); }
/* {a0+a1, b0+b1, a2+a3, b2+b3}: pairs within each half. */
MPK_AVX_INLINE __m256d _mm256_hadd_pd(__m256d a, __m256d b) {
  return mpk_m256d(__builtin_shufflevector(a.lo, b.lo, 0, 2) + __builtin_shufflevector(a.lo, b.lo, 1, 3),
                   __builtin_shufflevector(a.hi, b.hi, 0, 2) + __builtin_shufflevector(a.hi, b.hi, 1, 3));
}
/* {a0, b0, a2, b2} and {a1, b1, a3, b3}. */
MPK_AVX_INLINE __m256d _mm256_unpacklo_pd(__m256d a, __m256d b) {
  return mpk_m256d(__builtin_shufflevector(a.lo, b.lo, 0, 2), __builtin_shufflevector(a.hi, b.hi, 0, 2));
}
MPK_AVX_INLINE __m256d _mm256_unpackhi_pd(__m256d a, __m256d b) {
  return mpk_m256d(__builtin_shufflevector(a.lo, b.lo, 1, 3), __builtin_shufflevector(a.hi, b.hi, 1, 3));
}
MPK_AVX_INLINE __m128d _mm256_castpd256_pd128(__m256d a) { return a.lo; }
MPK_AVX_INLINE void _mm_store_sd(double *p, __m128d a) { *p = a[0]; }

/* Each half of the result is one half of a or b: selector 0 a's low, 1 a's high, 2 b's low,
   3 b's high (imm bits 0-1 for the low half, 4-5 for the high one). The zeroing bits (3 and 7) are
   not implemented: soxr passes 0x01, 0x20, 0x30 and 0x31. The immediate is a constant at every
   call site, so the choice folds away. */
MPK_AVX_INLINE __m128d mpk_m256d_half(__m256d a, __m256d b, int sel) {
  return sel == 0 ? a.lo : sel == 1 ? a.hi : sel == 2 ? b.lo : b.hi;
}
MPK_AVX_INLINE __m256d _mm256_permute2f128_pd(__m256d a, __m256d b, int imm) {
  return mpk_m256d(mpk_m256d_half(a, b, imm & 3), mpk_m256d_half(a, b, (imm >> 4) & 3));
}
/* Lane 0 from a's low half (imm bit 0 picks a0 or a1), lane 1 from b's low half (bit 1), lane 2
   from a's high half (bit 2), lane 3 from b's high half (bit 3). */
#define _mm256_shuffle_pd(a, b, imm)                                                                                   \
  ({                                                                                                                   \
    __m256d a_ = (a), b_ = (b);                                                                                        \
    mpk_m256d(__builtin_shufflevector(a_.lo, b_.lo, (imm) & 1, 2 + (((imm) >> 1) & 1)),                               \
              __builtin_shufflevector(a_.hi, b_.hi, ((imm) >> 2) & 1, 2 + (((imm) >> 3) & 1)));                        \
  })

#endif

#endif
