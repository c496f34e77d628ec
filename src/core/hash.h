/* The one incremental hasher (docs/ARCHITECTURE.md, "Digests"; docs/hashing.md): SHA-256 and MD5
   behind one context, computed by OpenSSL's EVP interface (libcrypto opened on the first hash) or by
   the built-in code (hash_builtin.h: portable C, SHA-NI, ARMv8 SHA-2), chosen once per process.
   Every path that hashes — bytes, files, files in parallel, HTTP downloads while they arrive — goes
   through it; hash.c is the only file that calls OpenSSL. */
#ifndef MPK_CORE_HASH_H
#define MPK_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "core/hash_builtin.h"
#include "modelpkg/core.h"

/* Lowercase hex of the longest digest (SHA-256) and its NUL. */
#define MPK_HASH_HEX_SIZE 65

/* The built-in state is held inline: a built-in hasher never allocates. */
typedef struct mpk_hasher {
  void *md_; /* EVP_MD_CTX when OpenSSL computes, else NULL */
  mpk_digest_algo algo;
  int impl_; /* which implementation this hasher uses (hash.c) */
  mpk_md_state st_;
} mpk_hasher;

/* Start a digest (MPK_ENOMEM when OpenSSL cannot). Free with mpk_hasher_free, also after a failure. */
int mpk_hasher_init(mpk_hasher *h, mpk_digest_algo algo);
/* The same with a named implementation instead of the process's choice (tests, benchmarks): one of
   mpk_hasher_implementation()'s names. MPK_EUNSUPPORTED when this build or CPU does not have it. */
int mpk_hasher_init_impl(mpk_hasher *h, mpk_digest_algo algo, const char *impl);
/* Start over with the same algorithm (a download restarted from byte 0). */
int mpk_hasher_restart(mpk_hasher *h);
void mpk_hasher_update(mpk_hasher *h, const void *data, size_t n);
/* The digest as lowercase hex (64 digits for SHA-256, 32 for MD5) and NUL; MPK_EIO when OpenSSL
   fails. The hasher must be restarted before it is fed again. */
int mpk_hasher_final_hex(mpk_hasher *h, char hex[MPK_HASH_HEX_SIZE]);
/* The raw digest into out (at least 32 bytes); *len its length. */
int mpk_hasher_final(mpk_hasher *h, uint8_t *out, size_t *len);
void mpk_hasher_free(mpk_hasher *h); /* accepts a zeroed or failed hasher */

/* What computes the digests in this process (mpk_hash_implementation(): "openssl", "builtin-shani",
   "builtin-armv8", "builtin-c"; MD5 is portable C in every "builtin-*"). Static string. The choice
   is made once, on the first call or hash: OpenSSL when built with it (MPK_HASH=openssl), else the
   best built-in code for this CPU; the environment variable MPK_HASH_IMPL (openssl, builtin,
   builtin-c, builtin-shani, builtin-armv8) overrides it when what it names is available (unknown
   or unavailable values are ignored). Asking does not load libcrypto; the first hash does, and if
   it cannot be loaded the built-in code takes over and is what this reports from then on. */
const char *mpk_hasher_implementation(void);

/* Called as bytes are read (total so far); non-zero stops the read with MPK_ECANCELLED. */
typedef int (*mpk_hash_bytes_fn)(void *ctx, uint64_t bytes);

/* Feed h `len` bytes of fd from offset `from` (len UINT64_MAX: to the end of the file), read with
   pread through buf[cap] (buf NULL: a 1 MiB buffer of its own). *got (may be NULL): bytes read.
   Returns 0; MPK_EIO with errno set on a read error, or errno 0 when the file ended before `len`
   bytes (a bounded read); MPK_ECANCELLED when on_bytes said stop; MPK_ENOMEM. */
int mpk_hasher_update_fd(mpk_hasher *h, int fd, uint64_t from, uint64_t len, uint8_t *buf, size_t cap,
                         uint64_t *got, mpk_hash_bytes_fn on_bytes, void *ctx);

#endif
