/* MD5's compression function in portable C (RFC 1321 3.4). Kept tight on purpose: the 64 steps
   are written out with their constants inline so that gcc -O2 keeps everything in registers (MD5
   is one long dependency chain; OpenSSL's is hand-written assembly). Words are loaded
   little-endian byte by byte, so the host's byte order does not matter. */
#include "core/hash_builtin.h"

#define ROL(x, s) (((x) << (s)) | ((x) >> (32 - (s))))
/* F in the form with one fewer dependent operation than the RFC's (same values). */
#define F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define H(x, y, z) ((x) ^ (y) ^ (z))
#define I(x, y, z) ((y) ^ ((x) | ~(z)))
#define STEP(f, a, b, c, d, k, s, t)          \
  do {                                        \
    a += X[k] + (uint32_t)(t) + f(b, c, d);   \
    a = ROL(a, s) + b;                        \
  } while (0)
/* G's two terms never overlap, so they may be added apart: (c & ~d) does not wait for b, the value
   the previous step has just produced. */
#define STEPG(a, b, c, d, k, s, t)                            \
  do {                                                        \
    a += X[k] + (uint32_t)(t) + (c & ~d);                     \
    a += b & d;                                               \
    a = ROL(a, s) + b;                                        \
  } while (0)

static inline uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void mpk_md5_blocks_c(uint32_t st[4], const uint8_t *p, size_t n) {
  uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
  for (; n--; p += 64) {
    uint32_t X[16];
    for (int i = 0; i < 16; i++) X[i] = load_le32(p + 4 * i);
    uint32_t aa = a, bb = b, cc = c, dd = d;
    /* Round 1 */
    STEP(F, a, b, c, d, 0, 7, 0xd76aa478);
    STEP(F, d, a, b, c, 1, 12, 0xe8c7b756);
    STEP(F, c, d, a, b, 2, 17, 0x242070db);
    STEP(F, b, c, d, a, 3, 22, 0xc1bdceee);
    STEP(F, a, b, c, d, 4, 7, 0xf57c0faf);
    STEP(F, d, a, b, c, 5, 12, 0x4787c62a);
    STEP(F, c, d, a, b, 6, 17, 0xa8304613);
    STEP(F, b, c, d, a, 7, 22, 0xfd469501);
    STEP(F, a, b, c, d, 8, 7, 0x698098d8);
    STEP(F, d, a, b, c, 9, 12, 0x8b44f7af);
    STEP(F, c, d, a, b, 10, 17, 0xffff5bb1);
    STEP(F, b, c, d, a, 11, 22, 0x895cd7be);
    STEP(F, a, b, c, d, 12, 7, 0x6b901122);
    STEP(F, d, a, b, c, 13, 12, 0xfd987193);
    STEP(F, c, d, a, b, 14, 17, 0xa679438e);
    STEP(F, b, c, d, a, 15, 22, 0x49b40821);
    /* Round 2 */
    STEPG(a, b, c, d, 1, 5, 0xf61e2562);
    STEPG(d, a, b, c, 6, 9, 0xc040b340);
    STEPG(c, d, a, b, 11, 14, 0x265e5a51);
    STEPG(b, c, d, a, 0, 20, 0xe9b6c7aa);
    STEPG(a, b, c, d, 5, 5, 0xd62f105d);
    STEPG(d, a, b, c, 10, 9, 0x02441453);
    STEPG(c, d, a, b, 15, 14, 0xd8a1e681);
    STEPG(b, c, d, a, 4, 20, 0xe7d3fbc8);
    STEPG(a, b, c, d, 9, 5, 0x21e1cde6);
    STEPG(d, a, b, c, 14, 9, 0xc33707d6);
    STEPG(c, d, a, b, 3, 14, 0xf4d50d87);
    STEPG(b, c, d, a, 8, 20, 0x455a14ed);
    STEPG(a, b, c, d, 13, 5, 0xa9e3e905);
    STEPG(d, a, b, c, 2, 9, 0xfcefa3f8);
    STEPG(c, d, a, b, 7, 14, 0x676f02d9);
    STEPG(b, c, d, a, 12, 20, 0x8d2a4c8a);
    /* Round 3 */
    STEP(H, a, b, c, d, 5, 4, 0xfffa3942);
    STEP(H, d, a, b, c, 8, 11, 0x8771f681);
    STEP(H, c, d, a, b, 11, 16, 0x6d9d6122);
    STEP(H, b, c, d, a, 14, 23, 0xfde5380c);
    STEP(H, a, b, c, d, 1, 4, 0xa4beea44);
    STEP(H, d, a, b, c, 4, 11, 0x4bdecfa9);
    STEP(H, c, d, a, b, 7, 16, 0xf6bb4b60);
    STEP(H, b, c, d, a, 10, 23, 0xbebfbc70);
    STEP(H, a, b, c, d, 13, 4, 0x289b7ec6);
    STEP(H, d, a, b, c, 0, 11, 0xeaa127fa);
    STEP(H, c, d, a, b, 3, 16, 0xd4ef3085);
    STEP(H, b, c, d, a, 6, 23, 0x04881d05);
    STEP(H, a, b, c, d, 9, 4, 0xd9d4d039);
    STEP(H, d, a, b, c, 12, 11, 0xe6db99e5);
    STEP(H, c, d, a, b, 15, 16, 0x1fa27cf8);
    STEP(H, b, c, d, a, 2, 23, 0xc4ac5665);
    /* Round 4 */
    STEP(I, a, b, c, d, 0, 6, 0xf4292244);
    STEP(I, d, a, b, c, 7, 10, 0x432aff97);
    STEP(I, c, d, a, b, 14, 15, 0xab9423a7);
    STEP(I, b, c, d, a, 5, 21, 0xfc93a039);
    STEP(I, a, b, c, d, 12, 6, 0x655b59c3);
    STEP(I, d, a, b, c, 3, 10, 0x8f0ccc92);
    STEP(I, c, d, a, b, 10, 15, 0xffeff47d);
    STEP(I, b, c, d, a, 1, 21, 0x85845dd1);
    STEP(I, a, b, c, d, 8, 6, 0x6fa87e4f);
    STEP(I, d, a, b, c, 15, 10, 0xfe2ce6e0);
    STEP(I, c, d, a, b, 6, 15, 0xa3014314);
    STEP(I, b, c, d, a, 13, 21, 0x4e0811a1);
    STEP(I, a, b, c, d, 4, 6, 0xf7537e82);
    STEP(I, d, a, b, c, 11, 10, 0xbd3af235);
    STEP(I, c, d, a, b, 2, 15, 0x2ad7d2bb);
    STEP(I, b, c, d, a, 9, 21, 0xeb86d391);
    a += aa, b += bb, c += cc, d += dd;
  }
  st[0] = a, st[1] = b, st[2] = c, st[3] = d;
}
