/* core/hash.c built with MPK_HASH=openssl but a libcrypto soname that does not exist
   (tests/core.cmake compiles a copy of hash.c into this program): OpenSSL is the choice until the
   first hash, which cannot load it and falls back to the built-in code — same digests, and
   mpk_hash_implementation() reports the fallback from then on. */
#include <string.h>

#include "testutil.h"
#include "core/core.h"
#include "core/hash.h"

static void test_falls_back(void **state) {
  (void)state;
  assert_string_equal(mpk_hash_implementation(), "openssl"); /* asking loads nothing */
  mpk_hasher h;
  assert_int_equal(mpk_hasher_init(&h, MPK_DIGEST_SHA256), 0);
  mpk_hasher_update(&h, "abc", 3);
  char hex[MPK_HASH_HEX_SIZE];
  assert_int_equal(mpk_hasher_final_hex(&h, hex), 0);
  mpk_hasher_free(&h);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *now = mpk_hash_implementation();
  print_message("after the first hash: %s\n", now);
  assert_true(strncmp(now, "builtin-", 8) == 0);
  assert_int_equal(mpk_hasher_init_impl(&h, MPK_DIGEST_MD5, "openssl"), MPK_EUNSUPPORTED);
  mpk_hasher_free(&h);
  assert_int_equal(mpk_hasher_init(&h, MPK_DIGEST_MD5), 0);
  mpk_hasher_update(&h, "abc", 3);
  assert_int_equal(mpk_hasher_final_hex(&h, hex), 0);
  mpk_hasher_free(&h);
  assert_string_equal(hex, "900150983cd24fb0d6963f7d28e17f72");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_falls_back)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
