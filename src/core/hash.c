/* The one incremental hasher (hash.h): the choice of implementation, OpenSSL's EVP interface, the
   built-in code, and the read loop that feeds a hasher a file. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "core/cpu.h"
#include "core/hash.h"

#ifndef MPK_HASH_OPENSSL
#define MPK_HASH_OPENSSL 1
#endif

enum { IMPL_OPENSSL, IMPL_SHANI, IMPL_ARMV8, IMPL_C, IMPL_COUNT };
static const char *const impl_names[IMPL_COUNT] = {"openssl", "builtin-shani", "builtin-armv8", "builtin-c"};

/* ---- OpenSSL: linked, or opened on the first hash through the one loader (core/crypto_dl.h), so
   that a process that never hashes never maps libcrypto. Only the EVP functions used here. */
#if MPK_HASH_OPENSSL
#include "core/crypto_dl.h"
#ifndef MPK_SONAME_CRYPTO
#define MPK_SONAME_CRYPTO "libcrypto.so.3"
#endif
MPK_DL_DEFINE(crypto, "libcrypto", MPK_SONAME_CRYPTO, MPK_CRYPTO_FUNCS)
/* The loader remembers the answer, a failure included, for the process. */
static int crypto_load(void) { return mpk_crypto_load(NULL) == 0; }
#endif

/* ---- what this CPU and build can run, and the process's choice (made once) */
/* What the CPU has (core/cpu.c asks once). SHA-NI's kernel also uses SSSE3 and SSE4.1. */
static int cpu_has(int impl) {
  const unsigned shani = MPK_CPU_SHA | MPK_CPU_SSSE3 | MPK_CPU_SSE41;
  unsigned f = mpk_cpu_features();
#ifdef MPK_HAVE_SHA256_SHANI
  if (impl == IMPL_SHANI) return (f & shani) == shani;
#endif
#ifdef MPK_HAVE_SHA256_ARMV8
  if (impl == IMPL_ARMV8) return (f & MPK_CPU_ARM_SHA2) != 0;
#endif
  (void)f;
  (void)shani;
  (void)impl;
  return 0;
}

static int available(int impl) {
  switch (impl) {
#if MPK_HASH_OPENSSL
  case IMPL_OPENSSL: return crypto_load();
#endif
  case IMPL_SHANI:
  case IMPL_ARMV8: return cpu_has(impl);
  case IMPL_C: return 1;
  default: return 0;
  }
}

static int best_builtin(void) {
  if (available(IMPL_SHANI)) return IMPL_SHANI;
  if (available(IMPL_ARMV8)) return IMPL_ARMV8;
  return IMPL_C;
}

/* The process's choice. OpenSSL is chosen without loading libcrypto (mpk_hash_implementation(),
   e.g. under `modelpkg --version`, must not cost a library load: 15-30 ms measured here with
   OpenSSL 3's initialisation); the first hasher loads it, and if it cannot, the choice becomes the
   best built-in code, which later answers report. */
static atomic_int chosen = IMPL_C;
static pthread_once_t choose_once = PTHREAD_ONCE_INIT;

static void choose(void) {
  const char *want = getenv("MPK_HASH_IMPL");
  int c = -1;
  if (want && strcmp(want, "builtin") == 0) c = best_builtin();
  for (int i = 0; want && c < 0 && i < IMPL_COUNT; i++)
    if (strcmp(want, impl_names[i]) == 0 && (i == IMPL_OPENSSL ? MPK_HASH_OPENSSL : available(i))) c = i;
  /* OpenSSL stays the default where built in. */
  if (c < 0) c = MPK_HASH_OPENSSL ? IMPL_OPENSSL : best_builtin();
  atomic_store(&chosen, c);
}

/* The implementation a new hasher uses: the choice, with libcrypto loaded now if that is OpenSSL; a
   libcrypto that cannot be loaded falls back to the built-in code (the digests are the same). */
static int current(void) {
  pthread_once(&choose_once, choose);
  int c = atomic_load(&chosen);
  if (c == IMPL_OPENSSL && !available(IMPL_OPENSSL)) {
    c = best_builtin();
    atomic_store(&chosen, c);
  }
  return c;
}

const char *mpk_hasher_implementation(void) {
  pthread_once(&choose_once, choose);
  return impl_names[atomic_load(&chosen)];
}

/* ---- the hasher */
static mpk_blocks_fn sha256_blocks(int impl) {
#ifdef MPK_HAVE_SHA256_SHANI
  if (impl == IMPL_SHANI) return mpk_sha256_blocks_shani;
#endif
#ifdef MPK_HAVE_SHA256_ARMV8
  if (impl == IMPL_ARMV8) return mpk_sha256_blocks_armv8;
#endif
  (void)impl;
  return mpk_sha256_blocks_c;
}

static int start(mpk_hasher *h) {
#if MPK_HASH_OPENSSL
  if (h->impl_ == IMPL_OPENSSL)
    return h->md_ && EVP_DigestInit_ex(h->md_, h->algo == MPK_DIGEST_MD5 ? EVP_md5() : EVP_sha256(), NULL) ? 0 : MPK_ENOMEM;
#endif
  if (h->algo == MPK_DIGEST_MD5) mpk_md_init(&h->st_, 1, mpk_md5_blocks_c);
  else mpk_md_init(&h->st_, 0, sha256_blocks(h->impl_));
  return 0;
}

static int init_as(mpk_hasher *h, mpk_digest_algo algo, int impl) {
  h->algo = algo;
  h->impl_ = impl;
  h->md_ = NULL;
#if MPK_HASH_OPENSSL
  if (impl == IMPL_OPENSSL && !(h->md_ = EVP_MD_CTX_new())) return MPK_ENOMEM;
#endif
  return start(h);
}

int mpk_hasher_init(mpk_hasher *h, mpk_digest_algo algo) { return init_as(h, algo, current()); }

int mpk_hasher_init_impl(mpk_hasher *h, mpk_digest_algo algo, const char *impl) {
  h->md_ = NULL;
  for (int i = 0; impl && i < IMPL_COUNT; i++)
    if (strcmp(impl, impl_names[i]) == 0) return available(i) ? init_as(h, algo, i) : MPK_EUNSUPPORTED;
  return MPK_EUNSUPPORTED;
}

int mpk_hasher_restart(mpk_hasher *h) { return start(h); }

void mpk_hasher_update(mpk_hasher *h, const void *data, size_t n) {
  if (!n) return;
#if MPK_HASH_OPENSSL
  if (h->md_) {
    EVP_DigestUpdate(h->md_, data, n);
    return;
  }
#endif
  mpk_md_update(&h->st_, data, n);
}

int mpk_hasher_final(mpk_hasher *h, uint8_t *out, size_t *len) {
#if MPK_HASH_OPENSSL
  if (h->impl_ == IMPL_OPENSSL) {
    unsigned int n = 0;
    if (!h->md_ || !EVP_DigestFinal_ex(h->md_, out, &n)) return MPK_EIO;
    *len = n;
    return 0;
  }
#endif
  *len = mpk_md_final(&h->st_, out);
  return 0;
}

int mpk_hasher_final_hex(mpk_hasher *h, char hex[MPK_HASH_HEX_SIZE]) {
  uint8_t d[64];
  size_t n = 0;
  int rc = mpk_hasher_final(h, d, &n);
  if (!rc) mpk_hex(d, n, hex);
  return rc;
}

void mpk_hasher_free(mpk_hasher *h) {
  if (!h) return;
#if MPK_HASH_OPENSSL
  if (h->md_) EVP_MD_CTX_free(h->md_);
#endif
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
