/* Internal: byte order. Every integer and float that modelpkg reads from or writes to a file has a
   stated byte order (little-endian in every format it handles, except what a format declares
   otherwise: ELF/Mach-O data encodings, JPEG/PNG fields, which their own readers decode). Code
   reads and writes such values only through these helpers, never by casting a byte pointer to a
   wider type: that would be wrong on a big-endian host (s390x) and undefined when unaligned.
   docs/cross.md, "Byte order".

   The loads and stores go through memcpy and a swap only where the host's order differs, so on a
   little-endian host the compiler emits one plain (unaligned) load or store. */
#ifndef MPK_CORE_ENDIAN_H
#define MPK_CORE_ENDIAN_H

#include <stdint.h>
#include <string.h>

/* The host's byte order, known at compile time (GCC and Clang define __BYTE_ORDER__). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define MPK_HOST_BIG_ENDIAN 1
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MPK_HOST_BIG_ENDIAN 0
#else
#error "modelpkg: the host's byte order is unknown (__BYTE_ORDER__ is not defined)"
#endif

static inline uint16_t mpk_bswap16(uint16_t v) { return (uint16_t)(v >> 8 | v << 8); }
static inline uint32_t mpk_bswap32(uint32_t v) { return __builtin_bswap32(v); }
static inline uint64_t mpk_bswap64(uint64_t v) { return __builtin_bswap64(v); }

/* Host order <-> little-endian (each is its own inverse). */
#if MPK_HOST_BIG_ENDIAN
static inline uint16_t mpk_le16(uint16_t v) { return mpk_bswap16(v); }
static inline uint32_t mpk_le32(uint32_t v) { return mpk_bswap32(v); }
static inline uint64_t mpk_le64(uint64_t v) { return mpk_bswap64(v); }
static inline uint16_t mpk_be16(uint16_t v) { return v; }
static inline uint32_t mpk_be32(uint32_t v) { return v; }
static inline uint64_t mpk_be64(uint64_t v) { return v; }
#else
static inline uint16_t mpk_le16(uint16_t v) { return v; }
static inline uint32_t mpk_le32(uint32_t v) { return v; }
static inline uint64_t mpk_le64(uint64_t v) { return v; }
static inline uint16_t mpk_be16(uint16_t v) { return mpk_bswap16(v); }
static inline uint32_t mpk_be32(uint32_t v) { return mpk_bswap32(v); }
static inline uint64_t mpk_be64(uint64_t v) { return mpk_bswap64(v); }
#endif

/* Loads from bytes at any alignment. */
static inline uint16_t mpk_load_le16(const void *p) { uint16_t v; memcpy(&v, p, 2); return mpk_le16(v); }
static inline uint32_t mpk_load_le32(const void *p) { uint32_t v; memcpy(&v, p, 4); return mpk_le32(v); }
static inline uint64_t mpk_load_le64(const void *p) { uint64_t v; memcpy(&v, p, 8); return mpk_le64(v); }
static inline uint16_t mpk_load_be16(const void *p) { uint16_t v; memcpy(&v, p, 2); return mpk_be16(v); }
static inline uint32_t mpk_load_be32(const void *p) { uint32_t v; memcpy(&v, p, 4); return mpk_be32(v); }
static inline uint64_t mpk_load_be64(const void *p) { uint64_t v; memcpy(&v, p, 8); return mpk_be64(v); }

/* Stores to bytes at any alignment. */
static inline void mpk_store_le16(void *p, uint16_t v) { v = mpk_le16(v); memcpy(p, &v, 2); }
static inline void mpk_store_le32(void *p, uint32_t v) { v = mpk_le32(v); memcpy(p, &v, 4); }
static inline void mpk_store_le64(void *p, uint64_t v) { v = mpk_le64(v); memcpy(p, &v, 8); }
static inline void mpk_store_be16(void *p, uint16_t v) { v = mpk_be16(v); memcpy(p, &v, 2); }
static inline void mpk_store_be32(void *p, uint32_t v) { v = mpk_be32(v); memcpy(p, &v, 4); }
static inline void mpk_store_be64(void *p, uint64_t v) { v = mpk_be64(v); memcpy(p, &v, 8); }

/* IEEE binary32/binary64 as little-endian bytes (the bits, not a conversion). */
static inline float mpk_load_le_f32(const void *p) {
  uint32_t u = mpk_load_le32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline double mpk_load_le_f64(const void *p) {
  uint64_t u = mpk_load_le64(p);
  double d;
  memcpy(&d, &u, 8);
  return d;
}
static inline void mpk_store_le_f32(void *p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  mpk_store_le32(p, u);
}
static inline void mpk_store_le_f64(void *p, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  mpk_store_le64(p, u);
}

/* Swap `n` elements of `size` bytes (2, 4 or 8) in place: little-endian file data <-> host order
   on a big-endian host (a no-op on a little-endian one). */
static inline void mpk_le_to_host_inplace(void *p, size_t n, size_t size) {
#if MPK_HOST_BIG_ENDIAN
  uint8_t *b = p;
  for (size_t i = 0; i < n; i++, b += size)
    for (size_t j = 0; j < size / 2; j++) {
      uint8_t t = b[j];
      b[j] = b[size - 1 - j];
      b[size - 1 - j] = t;
    }
#else
  (void)p, (void)n, (void)size;
#endif
}

#endif
