/* SHA-256 with the ARMv8 SHA-2 instructions (sha256h, sha256h2, sha256su0, sha256su1), chosen at
   run time when the kernel reports HWCAP_SHA2 (core/cpu.c, hash.c). Compiled for that extension by attribute
   only, so the rest of the library keeps the baseline ISA. */
#if defined(__aarch64__)
#include <arm_neon.h>

#include "core/hash_builtin.h"

#if defined(__clang__)
#define TARGET __attribute__((target("crypto")))
#else
#define TARGET __attribute__((target("+crypto")))
#endif

/* Four rounds with message words m (t..t+3). */
#define RNDS4(m, t)                                              \
  do {                                                           \
    uint32x4_t wk = vaddq_u32((m), vld1q_u32(&mpk_sha256_k[t])); \
    uint32x4_t abcd0 = abcd;                                     \
    abcd = vsha256hq_u32(abcd, efgh, wk);                        \
    efgh = vsha256h2q_u32(efgh, abcd0, wk);                      \
  } while (0)
/* The next four schedule words into m0 from m0..m3 (oldest first). */
#define SCHED(m0, m1, m2, m3) m0 = vsha256su1q_u32(vsha256su0q_u32(m0, m1), m2, m3)

TARGET void mpk_sha256_blocks_armv8(uint32_t st[8], const uint8_t *p, size_t n) {
  uint32x4_t abcd = vld1q_u32(&st[0]), efgh = vld1q_u32(&st[4]);
  for (; n--; p += 64) {
    uint32x4_t save_abcd = abcd, save_efgh = efgh;
    /* The message is big-endian words: reverse the bytes of each 32-bit lane. */
    uint32x4_t m0 = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 0)));
    uint32x4_t m1 = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16)));
    uint32x4_t m2 = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 32)));
    uint32x4_t m3 = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 48)));
    RNDS4(m0, 0);
    RNDS4(m1, 4);
    RNDS4(m2, 8);
    RNDS4(m3, 12);
    for (int t = 16; t < 64; t += 16) {
      SCHED(m0, m1, m2, m3); RNDS4(m0, t);
      SCHED(m1, m2, m3, m0); RNDS4(m1, t + 4);
      SCHED(m2, m3, m0, m1); RNDS4(m2, t + 8);
      SCHED(m3, m0, m1, m2); RNDS4(m3, t + 12);
    }
    abcd = vaddq_u32(abcd, save_abcd);
    efgh = vaddq_u32(efgh, save_efgh);
  }
  vst1q_u32(&st[0], abcd);
  vst1q_u32(&st[4], efgh);
}
#endif
