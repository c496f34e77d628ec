/* core/hash.c and the built-in hashes (docs/hashing.md), for every implementation this build and
   CPU have (portable C always; SHA-NI, ARMv8 SHA-2, OpenSSL when present): the NIST FIPS 180-4
   example messages and RFC 1321's seven MD5 vectors; every length 0..1024 fed whole, in fixed
   splits (0, 1, 63, 64, 65 ...) and in random splits, equal to OpenSSL's libcrypto linked directly
   as an independent reference; restart; the process's choice and MPK_HASH_IMPL.
     test_core_hash                 the unit cases
     test_core_hash --gib           1 GiB of seeded pseudo-random data, SHA-256 and MD5, every
                                    implementation against OpenSSL (ctest: slow)
     test_core_hash --impl-is NAME  mpk_hash_implementation() is NAME (ctest sets MPK_HASH_IMPL) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "core/core.h"
#include "core/hash.h"

#ifdef MPK_TEST_OPENSSL
#include <openssl/evp.h>
#endif
#if defined(__x86_64__)
#include <cpuid.h>
#endif

static const char *const impls[] = {"builtin-c", "builtin-shani", "builtin-armv8", "openssl"};
enum { NIMPL = sizeof impls / sizeof impls[0] };

static int have(const char *impl) {
  mpk_hasher h;
  int rc = mpk_hasher_init_impl(&h, MPK_DIGEST_SHA256, impl);
  mpk_hasher_free(&h);
  return rc == 0;
}

/* The digest of data[0..n) as hex, fed in pieces of the sizes in split[] (cycled; 0 is an empty
   update), with implementation impl. */
static void digest_split(const char *impl, mpk_digest_algo algo, const uint8_t *data, size_t n,
                         const size_t *split, size_t nsplit, char hex[MPK_HASH_HEX_SIZE]) {
  mpk_hasher h;
  assert_int_equal(mpk_hasher_init_impl(&h, algo, impl), 0);
  size_t at = 0;
  for (size_t i = 0; at < n || (nsplit && i < nsplit); i++) {
    size_t take = nsplit ? split[i % nsplit] : n - at;
    if (take > n - at) take = n - at;
    mpk_hasher_update(&h, data + at, take);
    at += take;
    if (!nsplit) break;
  }
  assert_int_equal(at, n);
  assert_int_equal(mpk_hasher_final_hex(&h, hex), 0);
  mpk_hasher_free(&h);
}

static void digest(const char *impl, mpk_digest_algo algo, const void *data, size_t n, char hex[MPK_HASH_HEX_SIZE]) {
  digest_split(impl, algo, data, n, NULL, 0, hex);
}

static void test_nist_sha256(void **state) {
  (void)state;
  static const struct {
    const char *msg;
    const char *hex;
  } v[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", /* 448 bits */
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"}, /* 896 bits */
  };
  size_t million = 1000000;
  char *a = malloc(million);
  assert_non_null(a);
  memset(a, 'a', million);
  for (int i = 0; i < NIMPL; i++) {
    if (!have(impls[i])) continue;
    char hex[MPK_HASH_HEX_SIZE];
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
      digest(impls[i], MPK_DIGEST_SHA256, v[k].msg, strlen(v[k].msg), hex);
      if (strcmp(hex, v[k].hex)) fail_msg("%s: SHA-256 of \"%s\" is %s, not %s", impls[i], v[k].msg, hex, v[k].hex);
    }
    digest(impls[i], MPK_DIGEST_SHA256, a, million, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* and the million 'a' fed one byte at a time (the partial-block path throughout) */
    static const size_t one[] = {1};
    digest_split(impls[i], MPK_DIGEST_SHA256, (const uint8_t *)a, million, one, 1, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
  free(a);
}

static void test_rfc1321_md5(void **state) {
  (void)state;
  static const struct {
    const char *msg;
    const char *hex;
  } v[] = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"a", "0cc175b9c0f1b6a831c399e269772661"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
      {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
       "57edf4a22be3c955ac49da2e2107b67a"},
  };
  for (int i = 0; i < NIMPL; i++) {
    if (!have(impls[i])) continue;
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
      char hex[MPK_HASH_HEX_SIZE];
      digest(impls[i], MPK_DIGEST_MD5, v[k].msg, strlen(v[k].msg), hex);
      if (strcmp(hex, v[k].hex)) fail_msg("%s: MD5 of \"%s\" is %s, not %s", impls[i], v[k].msg, hex, v[k].hex);
    }
  }
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void fill(uint8_t *p, size_t n, uint64_t *seed) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = splitmix64(seed);
    for (size_t k = 0; k < 8 && i + k < n; k++) p[i + k] = (uint8_t)(r >> (8 * k));
  }
}

#ifdef MPK_TEST_OPENSSL
static void reference(mpk_digest_algo algo, const uint8_t *data, size_t n, char hex[MPK_HASH_HEX_SIZE]) {
  uint8_t d[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  assert_true(EVP_Digest(data, n, d, &len, algo == MPK_DIGEST_MD5 ? EVP_md5() : EVP_sha256(), NULL));
  mpk_hex(d, len, hex);
}
#endif

/* Every length 0..1024, whole, in fixed splits and in random ones, equal to OpenSSL. */
static void test_lengths_and_splits(void **state) {
  (void)state;
#ifndef MPK_TEST_OPENSSL
  print_message("SKIP: test_core_hash: libcrypto (OpenSSL, the reference) not found\n");
  skip();
#else
  enum { MAX = 1024 };
  uint8_t data[MAX + 1];
  uint64_t seed = 22;
  fill(data, sizeof data, &seed);
  static const size_t fixed[][4] = {{0, 1, 63, 64}, {65, 0, 127, 1}, {64, 64, 64, 64}, {63, 63, 63, 63},
                                    {1, 1, 1, 1},   {65, 65, 65, 65}, {200, 0, 3, 129}};
  for (int a = 0; a < 2; a++) {
    mpk_digest_algo algo = a ? MPK_DIGEST_MD5 : MPK_DIGEST_SHA256;
    for (size_t n = 0; n <= MAX; n++) {
      char want[MPK_HASH_HEX_SIZE], got[MPK_HASH_HEX_SIZE];
      reference(algo, data, n, want);
      for (int i = 0; i < NIMPL; i++) {
        if (!have(impls[i])) continue;
        digest(impls[i], algo, data, n, got);
        if (strcmp(got, want)) fail_msg("%s %s, %zu bytes: %s, OpenSSL %s", impls[i], a ? "MD5" : "SHA-256", n, got, want);
        for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; f++) {
          digest_split(impls[i], algo, data, n, fixed[f], 4, got);
          if (strcmp(got, want)) fail_msg("%s %s, %zu bytes in fixed split %zu: differs", impls[i], a ? "MD5" : "SHA-256", n, f);
        }
        size_t rnd[8];
        for (int k = 0; k < 8; k++) rnd[k] = (size_t)(splitmix64(&seed) % 150);
        digest_split(impls[i], algo, data, n, rnd, 8, got);
        if (strcmp(got, want)) fail_msg("%s %s, %zu bytes in random splits: differs", impls[i], a ? "MD5" : "SHA-256", n);
      }
    }
  }
#endif
}

/* A restarted hasher forgets what it was fed (a download restarted from byte 0). */
static void test_restart(void **state) {
  (void)state;
  for (int i = 0; i < NIMPL; i++) {
    if (!have(impls[i])) continue;
    for (int a = 0; a < 2; a++) {
      mpk_hasher h;
      char hex[MPK_HASH_HEX_SIZE], want[MPK_HASH_HEX_SIZE];
      mpk_digest_algo algo = a ? MPK_DIGEST_MD5 : MPK_DIGEST_SHA256;
      digest(impls[i], algo, "abc", 3, want);
      assert_int_equal(mpk_hasher_init_impl(&h, algo, impls[i]), 0);
      mpk_hasher_update(&h, "something else entirely, more than one block long ........................", 75);
      assert_int_equal(mpk_hasher_restart(&h), 0);
      mpk_hasher_update(&h, "abc", 3);
      assert_int_equal(mpk_hasher_final_hex(&h, hex), 0);
      assert_string_equal(hex, want);
      assert_int_equal(mpk_hasher_restart(&h), 0); /* and again after a final */
      mpk_hasher_update(&h, "abc", 3);
      assert_int_equal(mpk_hasher_final_hex(&h, hex), 0);
      assert_string_equal(hex, want);
      mpk_hasher_free(&h);
    }
  }
}

/* The process's choice is one of the names, available, and what mpk_hasher_init uses; unknown names
   are refused by mpk_hasher_init_impl. */
static void test_choice(void **state) {
  (void)state;
  const char *impl = mpk_hash_implementation();
  assert_string_equal(impl, mpk_hasher_implementation());
  assert_true(have(impl));
  assert_true(have("builtin-c"));
  mpk_hasher h;
  assert_int_equal(mpk_hasher_init_impl(&h, MPK_DIGEST_SHA256, "sha-3"), MPK_EUNSUPPORTED);
  mpk_hasher_free(&h);
  assert_int_equal(mpk_hasher_init_impl(&h, MPK_DIGEST_SHA256, NULL), MPK_EUNSUPPORTED);
  mpk_hasher_free(&h);
#if defined(__x86_64__)
  /* this CPU's SHA-NI is used when it has it, and only then */
  unsigned a, b, c, d;
  int shani = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1);
  assert_int_equal(have("builtin-shani"), shani);
  print_message("SHA-NI: %s\n", shani ? "present, tested" : "absent");
#endif
#if MPK_TEST_HASH_OPENSSL
  if (!getenv("MPK_HASH_IMPL")) assert_string_equal(impl, "openssl"); /* OpenSSL stays the default */
#else
  assert_false(have("openssl")); /* MPK_HASH=builtin: no OpenSSL at all */
  if (!getenv("MPK_HASH_IMPL")) assert_true(strncmp(impl, "builtin-", 8) == 0);
#endif
}

/* 1 GiB of seeded pseudo-random data, generated in chunks of varying size (nothing stored). */
static int gib(void) {
#ifndef MPK_TEST_OPENSSL
  mpk_test_skip("libcrypto (OpenSSL, the reference)");
#else
  enum { CHUNK = 1 << 20 };
  const uint64_t total = 1ULL << 30;
  uint8_t *buf = malloc(CHUNK);
  if (!buf) return 1;
  int failed = 0;
  for (int a = 0; a < 2; a++) {
    mpk_digest_algo algo = a ? MPK_DIGEST_MD5 : MPK_DIGEST_SHA256;
    EVP_MD_CTX *ref = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ref, a ? EVP_md5() : EVP_sha256(), NULL);
    mpk_hasher hs[NIMPL];
    int on[NIMPL];
    for (int i = 0; i < NIMPL; i++) on[i] = mpk_hasher_init_impl(&hs[i], algo, impls[i]) == 0;
    uint64_t seed = 2026, done = 0;
    while (done < total) {
      /* chunk sizes that are not multiples of 64, so blocks straddle updates */
      size_t n = CHUNK - (size_t)(splitmix64(&seed) % 4096);
      if (n > total - done) n = (size_t)(total - done);
      fill(buf, n, &seed);
      EVP_DigestUpdate(ref, buf, n);
      for (int i = 0; i < NIMPL; i++)
        if (on[i]) mpk_hasher_update(&hs[i], buf, n);
      done += n;
    }
    uint8_t d[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    char want[MPK_HASH_HEX_SIZE], got[MPK_HASH_HEX_SIZE];
    EVP_DigestFinal_ex(ref, d, &len);
    EVP_MD_CTX_free(ref);
    mpk_hex(d, len, want);
    for (int i = 0; i < NIMPL; i++) {
      if (!on[i]) {
        printf("%s: %s not available here\n", a ? "MD5" : "SHA-256", impls[i]);
        continue;
      }
      mpk_hasher_final_hex(&hs[i], got);
      mpk_hasher_free(&hs[i]);
      int same = strcmp(got, want) == 0;
      printf("%s of 1 GiB: %s %s %s OpenSSL %s\n", a ? "MD5" : "SHA-256", impls[i], got, same ? "==" : "!=", want);
      failed |= !same;
    }
  }
  free(buf);
  return failed;
#endif
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--gib") == 0) return gib();
  if (argc == 3 && strcmp(argv[1], "--impl-is") == 0) {
    const char *impl = mpk_hash_implementation();
    /* builtin-best: the best built-in code this CPU has (what MPK_HASH_IMPL=builtin chooses) */
    if (strcmp(argv[2], "builtin-best") == 0)
      argv[2] = have("builtin-shani") ? "builtin-shani" : have("builtin-armv8") ? "builtin-armv8" : "builtin-c";
    printf("MPK_HASH_IMPL=%s: %s\n", getenv("MPK_HASH_IMPL") ? getenv("MPK_HASH_IMPL") : "(unset)", impl);
    return strcmp(impl, argv[2]) != 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nist_sha256), cmocka_unit_test(test_rfc1321_md5),
      cmocka_unit_test(test_lengths_and_splits), cmocka_unit_test(test_restart),
      cmocka_unit_test(test_choice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
