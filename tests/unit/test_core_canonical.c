/* core/canonical_json.c and core/digest.c. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static void expect(const char *in, const char *want) {
  char *out = NULL;
  size_t len;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_canonical_json(in, strlen(in), &out, &len, &err)) fail_msg("%s: %s", in, tu_err(&err));
  assert_string_equal(out, want);
  assert_int_equal(len, strlen(want));
  mpk_free(out);
}

static void test_sorting_and_whitespace(void **state) {
  (void)state;
  expect(" { \"b\" : [ 3 , 2 ] , \"a\" : { \"d\" : null , \"c\" : true } } ", "{\"a\":{\"c\":true,\"d\":null},\"b\":[3,2]}");
  expect("[]", "[]");
  expect("\"x\"", "\"x\"");
}

static void test_integers(void **state) {
  (void)state;
  expect("[16000.0, 4.8e5, -0, -0.0, 9007199254740991]", "[16000,480000,0,0,9007199254740991]");
  char *out = NULL;
  size_t len;
  mpk_error err;
  assert_int_equal(mpk_canonical_json("{\"a\":[1,{\"b\":0.5}]}", 19, &out, &len, &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/a/1/b");
  assert_null(out);
  assert_int_equal(mpk_canonical_json("[9007199254740992]", 18, &out, &len, &err), MPK_EMALFORMED);
}

static void test_escapes(void **state) {
  (void)state;
  expect("\"\\u0001\\b\\f\\n\\r\\t\\\"\\\\/\\u007f\\u2028\\u00e9\"",
         "\"\\u0001\\b\\f\\n\\r\\t\\\"\\\\/\x7f\xe2\x80\xa8\xc3\xa9\"");
  expect("\"\\u001f\"", "\"\\u001f\"");
}

static void test_sha256_id(void **state) {
  (void)state;
  char id[MPK_SHA256_ID_SIZE];
  assert_int_equal(mpk_sha256_id("", 0, id), 0);
  assert_string_equal(id, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert_int_equal(mpk_sha256_id("abc", 3, id), 0);
  assert_string_equal(id, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_version(void **state) {
  (void)state;
  assert_string_equal(mpk_version(), MPK_VERSION_STRING);
  assert_int_equal(mpk_version_number(), MPK_VERSION_NUMBER);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sorting_and_whitespace),
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_escapes),
      cmocka_unit_test(test_sha256_id),
      cmocka_unit_test(test_version),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
