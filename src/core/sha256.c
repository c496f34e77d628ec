/* SHA-256's compression function in portable C (FIPS 180-4 6.2.2): the fallback on every CPU and
   the reference the hardware paths are tested against. Words are loaded big-endian byte by byte,
   so the host's byte order does not matter. */
#include "core/hash_builtin.h"

/* FIPS 180-4 4.2.2; shared with the hardware paths (16-byte aligned for their vector loads). */
_Alignas(16) const uint32_t mpk_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define S0(x) (ROR(x, 2) ^ ROR(x, 13) ^ ROR(x, 22))
#define S1(x) (ROR(x, 6) ^ ROR(x, 11) ^ ROR(x, 25))
#define s0(x) (ROR(x, 7) ^ ROR(x, 18) ^ ((x) >> 3))
#define s1(x) (ROR(x, 17) ^ ROR(x, 19) ^ ((x) >> 10))
#define CH(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))

static inline uint32_t load_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One round; the eight working variables rotate by renaming instead of moving. The schedule keeps
   16 words (W[t mod 16]). */
#define ROUND(a, b, c, d, e, f, g, h, t)                                         \
  do {                                                                           \
    if ((t) >= 16)                                                               \
      W[(t)&15] += s1(W[((t)-2) & 15]) + W[((t)-7) & 15] + s0(W[((t)-15) & 15]); \
    uint32_t T1 = h + S1(e) + CH(e, f, g) + mpk_sha256_k[t] + W[(t)&15];         \
    d += T1;                                                                     \
    h = T1 + S0(a) + MAJ(a, b, c);                                               \
  } while (0)
#define ROUND8(t)                         \
  ROUND(a, b, c, d, e, f, g, h, (t) + 0); \
  ROUND(h, a, b, c, d, e, f, g, (t) + 1); \
  ROUND(g, h, a, b, c, d, e, f, (t) + 2); \
  ROUND(f, g, h, a, b, c, d, e, (t) + 3); \
  ROUND(e, f, g, h, a, b, c, d, (t) + 4); \
  ROUND(d, e, f, g, h, a, b, c, (t) + 5); \
  ROUND(c, d, e, f, g, h, a, b, (t) + 6); \
  ROUND(b, c, d, e, f, g, h, a, (t) + 7)

void mpk_sha256_blocks_c(uint32_t st[8], const uint8_t *p, size_t n) {
  for (; n--; p += 64) {
    uint32_t W[16];
    for (int i = 0; i < 16; i++) W[i] = load_be32(p + 4 * i);
    uint32_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
    ROUND8(0);
    ROUND8(8);
    ROUND8(16);
    ROUND8(24);
    ROUND8(32);
    ROUND8(40);
    ROUND8(48);
    ROUND8(56);
    st[0] += a, st[1] += b, st[2] += c, st[3] += d, st[4] += e, st[5] += f, st[6] += g, st[7] += h;
  }
}
