/* libcrypto, opened on the first hash under MPK_DLOPEN_DEPS (core/dl_table.h, docs/startup.md,
   docs/hashing.md): the EVP functions core/hash.c calls (which holds the table), redirected to
   their slots; mpk_crypto_load() decides whether OpenSSL is available before the first. */
#ifndef MPK_CORE_CRYPTO_DL_H
#define MPK_CORE_CRYPTO_DL_H

#include <openssl/evp.h>

#include "core/dl_table.h"

#define MPK_CRYPTO_FUNCS(X)                                                                                           \
  X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) X(EVP_DigestInit_ex) X(EVP_DigestUpdate) X(EVP_DigestFinal_ex) X(EVP_sha256)    \
  X(EVP_md5)

MPK_DL_TABLE(crypto, MPK_CRYPTO_FUNCS)

#if MPK_DLOPEN_DEPS
#define EVP_MD_CTX_new (mpk_crypto_fn.f.EVP_MD_CTX_new)
#define EVP_MD_CTX_free (mpk_crypto_fn.f.EVP_MD_CTX_free)
#define EVP_DigestInit_ex (mpk_crypto_fn.f.EVP_DigestInit_ex)
#define EVP_DigestUpdate (mpk_crypto_fn.f.EVP_DigestUpdate)
#define EVP_DigestFinal_ex (mpk_crypto_fn.f.EVP_DigestFinal_ex)
#define EVP_sha256 (mpk_crypto_fn.f.EVP_sha256)
#define EVP_md5 (mpk_crypto_fn.f.EVP_md5)
#endif

#endif
