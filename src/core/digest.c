/* Digests through OpenSSL's EVP interface. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "core/core.h"

int mpk_sha256(const void *data, size_t len, uint8_t out[MPK_SHA256_LEN]) {
  unsigned int n = 0;
  if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) || n != MPK_SHA256_LEN) return MPK_EIO;
  return 0;
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
  enum { CHUNK = 1 << 20 };
  uint8_t *buf = malloc(CHUNK);
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  int rc = buf && ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ? 0 : MPK_ENOMEM;
  for (off_t at = 0; !rc;) {
    ssize_t got = pread(fd, buf, CHUNK, at);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) rc = MPK_EIO;
    if (got <= 0) break;
    EVP_DigestUpdate(ctx, buf, (size_t)got);
    at += got;
  }
  uint8_t d[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!rc && EVP_DigestFinal_ex(ctx, d, &len) && len == MPK_SHA256_LEN) mpk_hex(d, len, hex);
  else if (!rc) rc = MPK_EIO;
  EVP_MD_CTX_free(ctx);
  free(buf);
  return rc;
}
