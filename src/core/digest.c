/* Digests of bytes and of one file, on the one hasher (hash.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "core/hash.h"

int mpk_sha256(const void *data, size_t len, uint8_t out[MPK_SHA256_LEN]) {
  mpk_hasher h;
  size_t n = 0;
  int rc = mpk_hasher_init(&h, MPK_DIGEST_SHA256);
  if (!rc) {
    mpk_hasher_update(&h, data, len);
    rc = mpk_hasher_final(&h, out, &n);
  }
  mpk_hasher_free(&h);
  return rc ? rc : n == MPK_SHA256_LEN ? 0 : MPK_EIO;
}

void mpk_hex(const uint8_t *bytes, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  out[2 * n] = '\0';
}

int mpk_sha256_id(const void *data, size_t len, char out[MPK_SHA256_ID_SIZE]) {
  if (!out || (!data && len)) return MPK_EINVAL;
  uint8_t d[MPK_SHA256_LEN];
  int rc = mpk_sha256(data, len, d);
  if (rc) return rc;
  memcpy(out, "sha256:", 7);
  mpk_hex(d, sizeof d, out + 7);
  return 0;
}

int mpk_sha256_fd(int fd, char hex[65]) {
  mpk_hasher h;
  int rc = mpk_hasher_init(&h, MPK_DIGEST_SHA256);
  if (!rc) rc = mpk_hasher_update_fd(&h, fd, 0, UINT64_MAX, NULL, 0, NULL, NULL, NULL);
  int e = errno;
  if (!rc) rc = mpk_hasher_final_hex(&h, hex);
  mpk_hasher_free(&h);
  errno = e;
  return rc;
}
