/* The streaming layer of the built-in hashes (hash_builtin.h): whole blocks go straight from the
   caller's buffer to the block function; only a partial block is copied. */
#include <string.h>

#include "core/hash_builtin.h"

static const uint32_t sha256_iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
static const uint32_t md5_iv[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};

void mpk_md_init(mpk_md_state *s, int md5, mpk_blocks_fn blocks) {
  memset(s->h, 0, sizeof s->h);
  if (md5) memcpy(s->h, md5_iv, sizeof md5_iv);
  else memcpy(s->h, sha256_iv, sizeof sha256_iv);
  s->bytes = 0;
  s->blocks = blocks;
  s->md5 = md5;
}

void mpk_md_update(mpk_md_state *s, const uint8_t *p, size_t n) {
  size_t have = (size_t)(s->bytes & 63);
  s->bytes += n;
  if (have) {
    size_t take = 64 - have < n ? 64 - have : n;
    memcpy(s->buf + have, p, take);
    p += take, n -= take;
    if (have + take < 64) return;
    s->blocks(s->h, s->buf, 1);
  }
  if (n >= 64) {
    s->blocks(s->h, p, n / 64);
    p += n & ~(size_t)63;
    n &= 63;
  }
  if (n) memcpy(s->buf, p, n);
}

size_t mpk_md_final(mpk_md_state *s, uint8_t *out) {
  /* 0x80, zeros to 56 mod 64, then the length in bits as 64 bits (FIPS 180-4 5.1.1, RFC 1321 3.1-3.2). */
  uint64_t bits = s->bytes * 8;
  size_t have = (size_t)(s->bytes & 63);
  s->buf[have++] = 0x80;
  if (have > 56) {
    memset(s->buf + have, 0, 64 - have);
    s->blocks(s->h, s->buf, 1);
    have = 0;
  }
  memset(s->buf + have, 0, 56 - have);
  for (int i = 0; i < 8; i++) s->buf[56 + i] = (uint8_t)(bits >> (s->md5 ? 8 * i : 56 - 8 * i));
  s->blocks(s->h, s->buf, 1);
  size_t words = s->md5 ? 4 : 8;
  for (size_t w = 0; w < words; w++)
    for (int i = 0; i < 4; i++) out[4 * w + i] = (uint8_t)(s->h[w] >> (s->md5 ? 8 * i : 24 - 8 * i));
  return 4 * words;
}
