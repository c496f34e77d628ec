/* SHA-256 with the ARMv8 SHA-2 instructions (sha256h, sha256h2, sha256su0, sha256su1), chosen at
   run time when the kernel reports HWCAP_SHA2 (hash.c). Compiled for that extension by attribute
   only, so the rest of the library keeps the baseline ISA. */
#if defined(__aarch64__)
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_SHA2
#define HWCAP_SHA2 (1 << 6)
#endif
#endif

#include "core/hash_builtin.h"

int mpk_cpu_has_sha2(void) {
#if defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;
#elif defined(__APPLE__)
  return 1; /* every Apple arm64 CPU has the SHA-2 instructions */
#else
  return 0;
#endif
}

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#if defined(__clang__)
#define TARGET __attribute__((target("crypto")))
#else
#define TARGET __attribute__((target("+crypto")))
#endif

/* Four rounds with message words m (t..t+3). */
#define RNDS4(m, t)                                    \
  do {                                                 \
    uint32x4_t wk = vaddq_u32((m), vld1q_u32(&K[t]));  \
    uint32x4_t abcd0 = abcd;                           \
    abcd = vsha256hq_u32(abcd, efgh, wk);              \
    efgh = vsha256h2q_u32(efgh, abcd0, wk);            \
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
