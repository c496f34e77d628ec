/* SHA-256 with the x86 SHA extensions (SHA-NI: sha256rnds2, sha256msg1, sha256msg2), chosen at run
   time when cpuid says the CPU has them (core/cpu.c, hash.c). Compiled for that target by attribute only, so the
   rest of the library keeps the baseline ISA. The instructions keep the state as two registers in
   the order they want (ABEF and CDGH); the message words are byte-swapped to big-endian on load. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "core/hash_builtin.h"

#define TARGET __attribute__((target("sha,sse4.1,ssse3")))


/* Four rounds on message words m (t..t+3): rnds2 does two rounds with the low two words of m+K. */
#define RNDS4(m, t)                                                                     \
  do {                                                                                  \
    __m128i wk = _mm_add_epi32((m), _mm_load_si128((const __m128i *)&mpk_sha256_k[t])); \
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);                                       \
    abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e));              \
  } while (0)
/* The next four schedule words from the previous sixteen (m0 oldest ... m3 newest), into m0:
   msg1 adds sigma0 of W[t-15..], alignr gives W[t-7..], msg2 adds sigma1 of W[t-2..]. */
#define SCHED(m0, m1, m2, m3)                           \
  do {                                                  \
    m0 = _mm_sha256msg1_epu32(m0, m1);                  \
    m0 = _mm_add_epi32(m0, _mm_alignr_epi8(m3, m2, 4)); \
    m0 = _mm_sha256msg2_epu32(m0, m3);                  \
  } while (0)

TARGET void mpk_sha256_blocks_shani(uint32_t st[8], const uint8_t *p, size_t n) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i dcba = _mm_loadu_si128((const __m128i *)&st[0]); /* lanes A B C D */
  __m128i hgfe = _mm_loadu_si128((const __m128i *)&st[4]); /* lanes E F G H */
  __m128i badc = _mm_shuffle_epi32(dcba, 0xb1);            /* B A D C */
  __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1b);            /* H G F E */
  __m128i abef = _mm_alignr_epi8(badc, efgh, 8);           /* F E B A */
  __m128i cdgh = _mm_blend_epi16(efgh, badc, 0xf0);        /* H G D C */
  for (; n--; p += 64) {
    __m128i save_abef = abef, save_cdgh = cdgh;
    __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 0)), bswap);
    __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), bswap);
    __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), bswap);
    __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), bswap);
    RNDS4(m0, 0);
    RNDS4(m1, 4);
    RNDS4(m2, 8);
    RNDS4(m3, 12);
    SCHED(m0, m1, m2, m3); RNDS4(m0, 16);
    SCHED(m1, m2, m3, m0); RNDS4(m1, 20);
    SCHED(m2, m3, m0, m1); RNDS4(m2, 24);
    SCHED(m3, m0, m1, m2); RNDS4(m3, 28);
    SCHED(m0, m1, m2, m3); RNDS4(m0, 32);
    SCHED(m1, m2, m3, m0); RNDS4(m1, 36);
    SCHED(m2, m3, m0, m1); RNDS4(m2, 40);
    SCHED(m3, m0, m1, m2); RNDS4(m3, 44);
    SCHED(m0, m1, m2, m3); RNDS4(m0, 48);
    SCHED(m1, m2, m3, m0); RNDS4(m1, 52);
    SCHED(m2, m3, m0, m1); RNDS4(m2, 56);
    SCHED(m3, m0, m1, m2); RNDS4(m3, 60);
    abef = _mm_add_epi32(abef, save_abef);
    cdgh = _mm_add_epi32(cdgh, save_cdgh);
  }
  /* Back to A B C D / E F G H. */
  __m128i feba = _mm_shuffle_epi32(abef, 0x1b); /* A B E F */
  __m128i dchg = _mm_shuffle_epi32(cdgh, 0xb1); /* G H C D */
  _mm_storeu_si128((__m128i *)&st[0], _mm_blend_epi16(feba, dchg, 0xf0)); /* A B C D */
  _mm_storeu_si128((__m128i *)&st[4], _mm_alignr_epi8(dchg, feba, 8));    /* E F G H */
}
#endif
