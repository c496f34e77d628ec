/* The one incremental hasher (hash.h): OpenSSL EVP for SHA-256 and MD5, and the read loop that
   feeds it a file. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "core/core.h"
#include "core/hash.h"

static const EVP_MD *md_of(mpk_digest_algo a) { return a == MPK_DIGEST_MD5 ? EVP_md5() : EVP_sha256(); }

int mpk_hasher_init(mpk_hasher *h, mpk_digest_algo algo) {
  h->algo = algo;
  h->md_ = EVP_MD_CTX_new();
  return h->md_ && EVP_DigestInit_ex(h->md_, md_of(algo), NULL) ? 0 : MPK_ENOMEM;
}

int mpk_hasher_restart(mpk_hasher *h) {
  return h->md_ && EVP_DigestInit_ex(h->md_, md_of(h->algo), NULL) ? 0 : MPK_ENOMEM;
}

void mpk_hasher_update(mpk_hasher *h, const void *data, size_t n) {
  if (n) EVP_DigestUpdate(h->md_, data, n);
}

int mpk_hasher_final(mpk_hasher *h, uint8_t *out, size_t *len) {
  unsigned int n = 0;
  if (!h->md_ || !EVP_DigestFinal_ex(h->md_, out, &n)) return MPK_EIO;
  *len = n;
  return 0;
}

int mpk_hasher_final_hex(mpk_hasher *h, char hex[MPK_HASH_HEX_SIZE]) {
  uint8_t d[EVP_MAX_MD_SIZE];
  size_t n = 0;
  int rc = mpk_hasher_final(h, d, &n);
  if (!rc) mpk_hex(d, n, hex);
  return rc;
}

const char *mpk_hasher_implementation(void) { return "openssl"; }

void mpk_hasher_free(mpk_hasher *h) {
  if (!h) return;
  EVP_MD_CTX_free(h->md_);
  h->md_ = NULL;
}

int mpk_hasher_update_fd(mpk_hasher *h, int fd, uint64_t from, uint64_t len, uint8_t *buf, size_t cap,
                         uint64_t *got, mpk_hash_bytes_fn on_bytes, void *ctx) {
  enum { OWN = 1 << 20 };
  uint8_t *own = NULL;
  if (!buf || !cap) {
    if (!(buf = own = malloc(OWN))) return MPK_ENOMEM;
    cap = OWN;
  }
  uint64_t done = 0;
  int rc = 0;
  while (done < len) {
    size_t want = len - done < cap ? (size_t)(len - done) : cap;
    ssize_t r = pread(fd, buf, want, (off_t)(from + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      rc = MPK_EIO;
      break;
    }
    if (r == 0) {
      if (len != UINT64_MAX) rc = MPK_EIO, errno = 0; /* shorter than the caller said */
      break;
    }
    mpk_hasher_update(h, buf, (size_t)r);
    done += (uint64_t)r;
    if (on_bytes && on_bytes(ctx, done)) {
      rc = MPK_ECANCELLED;
      break;
    }
  }
  int e = errno;
  free(own);
  errno = e;
  if (got) *got = done;
  return rc;
}
