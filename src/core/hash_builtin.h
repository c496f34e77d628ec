/* The built-in SHA-256 (FIPS 180-4) and MD5 (RFC 1321) behind core/hash.c (docs/hashing.md): block
   functions per implementation and the one streaming layer (buffering, padding) they share. Byte
   order is explicit everywhere (big-endian words for SHA-256, little-endian for MD5), so the same
   code is right on s390x. Nothing here allocates. */
#ifndef MPK_CORE_HASH_BUILTIN_H
#define MPK_CORE_HASH_BUILTIN_H

#include <stddef.h>
#include <stdint.h>

/* Compress n 64-byte blocks into the chaining state. */
typedef void (*mpk_blocks_fn)(uint32_t *state, const uint8_t *p, size_t n);

extern const uint32_t mpk_sha256_k[64]; /* the round constants, sha256.c */
void mpk_sha256_blocks_c(uint32_t state[8], const uint8_t *p, size_t n);   /* sha256.c, always */
void mpk_md5_blocks_c(uint32_t state[4], const uint8_t *p, size_t n);      /* md5.c, always */
#if defined(__x86_64__) || defined(__i386__)
#define MPK_HAVE_SHA256_SHANI 1
void mpk_sha256_blocks_shani(uint32_t state[8], const uint8_t *p, size_t n); /* sha256_x86.c */
#endif
#if defined(__aarch64__)
#define MPK_HAVE_SHA256_ARMV8 1
void mpk_sha256_blocks_armv8(uint32_t state[8], const uint8_t *p, size_t n); /* sha256_arm.c */
#endif

/* A digest in progress: the chaining state (8 words for SHA-256, the first 4 for MD5), the bytes
   fed so far and the partial block. */
typedef struct mpk_md_state {
  uint32_t h[8];
  uint64_t bytes;
  uint8_t buf[64];
  mpk_blocks_fn blocks;
  int md5; /* little-endian length and output (MD5) instead of big-endian (SHA-256) */
} mpk_md_state;

void mpk_md_init(mpk_md_state *s, int md5, mpk_blocks_fn blocks);
void mpk_md_update(mpk_md_state *s, const uint8_t *p, size_t n);
/* Pads, compresses the last block(s) and writes 32 (SHA-256) or 16 (MD5) bytes; returns that length. */
size_t mpk_md_final(mpk_md_state *s, uint8_t *out);

#endif
