/* core/json.c and core/jsonv.c: strict reading and the typed checks. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "testutil.h"

static int parse(const char *text, json_t **out, mpk_error *err) {
  mpk_error_clear(err);
  return mpk_json_parse(text, strlen(text), NULL, "doc.json", out, err);
}

static void test_bom_tolerated(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  assert_int_equal(parse("\xEF\xBB\xBF{\"a\":1}", &v, &err), 0);
  assert_int_equal(json_integer_value(json_object_get(v, "a")), 1);
  json_decref(v);
  /* A BOM anywhere else is not whitespace. */
  assert_int_equal(parse("{\"a\":1}\xEF\xBB\xBF", &v, &err), MPK_EMALFORMED);
}

static void test_duplicate_keys_rejected(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  assert_int_equal(parse("{\"a\":1,\"b\":{\"x\":1,\"x\":2}}", &v, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "duplicate object key"));
  assert_string_equal(err.file, "doc.json");
  assert_true(err.offset > 0);
}

static void test_invalid_utf8_rejected(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  assert_int_equal(parse("{\"a\":\"\xC3\x28\"}", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("{\"a\":\"\xED\xA0\x80\"}", &v, &err), MPK_EMALFORMED); /* encoded surrogate */
  assert_int_equal(parse("{\"a\":\"\\ud800\"}", &v, &err), MPK_EMALFORMED);      /* lone surrogate escape */
  assert_int_equal(parse("{\"a\":\"\\u0000\"}", &v, &err), MPK_EMALFORMED);      /* NUL unless allowed */
}

static void test_limits(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  char deep[200];
  memset(deep, '[', 100);
  memset(deep + 100, ']', 100);
  mpk_json_opts o = {.max_depth = 64};
  assert_int_equal(mpk_json_parse(deep, sizeof deep, &o, "d", &v, &err), MPK_ELIMIT);
  o.max_depth = 100;
  assert_int_equal(mpk_json_parse(deep, sizeof deep, &o, "d", &v, &err), 0);
  json_decref(v);
  mpk_json_opts small = {.max_bytes = 4};
  assert_int_equal(mpk_json_parse("[1, 2]", 6, &small, "d", &v, &err), MPK_ELIMIT);
  assert_int_equal(parse("", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("{} {}", &v, &err), MPK_EMALFORMED);
}

static void test_js_key_order(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  assert_int_equal(parse("{\"b\":0,\"10\":0,\"a\":0,\"2\":0,\"01\":0,\"4294967295\":0}", &v, &err), 0);
  const char **keys;
  size_t n;
  assert_int_equal(mpk_json_keys_js_order(v, &keys, &n), 0);
  assert_int_equal(n, 6);
  const char *want[] = {"2", "10", "b", "a", "01", "4294967295"};
  for (size_t i = 0; i < n; i++) assert_string_equal(keys[i], want[i]);
  free(keys);
  json_decref(v);
}

static void test_utf16_vs_codepoint_sort(void **state) {
  (void)state;
  /* U+FF5A vs U+1F600: code point order puts U+FF5A first, UTF-16 order the surrogate pair. */
  assert_true(mpk_utf16_cmp("\xf0\x9f\x98\x80", "\xef\xbd\x9a") < 0);
  assert_true(strcmp("\xf0\x9f\x98\x80", "\xef\xbd\x9a") > 0);
  assert_true(mpk_utf16_cmp("a", "ab") < 0);
  assert_int_equal(mpk_utf16_cmp("é", "é"), 0);
}

static void test_integer_getter(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  assert_int_equal(parse("[16000.0, 9007199254740991, 9007199254740992, 0.5, -0.0, true, 1e3]", &v, &err), 0);
  mpk_jv jv = {.file = "doc.json", .err = &err};
  mpk_path_init(&jv.path);
  int64_t x;
  assert_int_equal(mpk_jv_integer(&jv, json_array_get(v, 0), 1, &x), 0);
  assert_int_equal(x, 16000);
  assert_int_equal(mpk_jv_integer(&jv, json_array_get(v, 1), 0, &x), 0);
  assert_int_equal(mpk_jv_integer(&jv, json_array_get(v, 2), 0, &x), MPK_EMALFORMED);
  assert_string_equal(err.message, "expected an integer greater than or equal to 0");
  assert_int_equal(mpk_jv_integer(&jv, json_array_get(v, 3), 0, &x), MPK_EMALFORMED);
  assert_int_equal(mpk_jv_integer(&jv, json_array_get(v, 4), 0, &x), 0);
  assert_int_equal(x, 0);
  assert_int_equal(mpk_jv_integer(&jv, json_array_get(v, 5), 0, &x), MPK_EMALFORMED);
  assert_int_equal(mpk_jv_integer(&jv, json_array_get(v, 6), 1000, &x), 0);
  json_decref(v);
}

static void test_exact_keys_and_paths(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  assert_int_equal(parse("{\"x\":{\"a/b~c\":{\"keep\":1,\"zzz\":2,\"0\":3}}}", &v, &err), 0);
  mpk_jv jv = {.file = "doc.json", .err = &err};
  mpk_path_init(&jv.path);
  mpk_path_push_key(&jv.path, "x");
  mpk_path_push_key(&jv.path, "a/b~c");
  static const char *const allowed[] = {"keep", "zzz", NULL};
  static const char *const required[] = {"keep", "must", NULL};
  const json_t *obj = json_object_get(json_object_get(v, "x"), "a/b~c");
  /* "0" is an array index, so Object.keys() lists it first: it is the unknown field reported. */
  assert_int_equal(mpk_jv_exact_keys(&jv, obj, allowed, required), MPK_EMALFORMED);
  assert_string_equal(err.message, "unknown field \"0\"");
  assert_string_equal(err.pointer, "/x/a~1b~0c");
  static const char *const allowed2[] = {"keep", "zzz", "0", NULL};
  assert_int_equal(mpk_jv_exact_keys(&jv, obj, allowed2, required), MPK_EMALFORMED);
  assert_string_equal(err.message, "missing field \"must\"");
  /* Tolerant mode: unknown fields pass, required ones are still required. */
  static const char *const required2[] = {"keep", NULL};
  assert_int_equal(mpk_jv_required_keys(&jv, obj, required2), 0);
  assert_int_equal(mpk_jv_required_keys(&jv, obj, required), MPK_EMALFORMED);
  json_decref(v);
}

static void test_error_format(void **state) {
  (void)state;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_fail(&err, MPK_EMALFORMED, "m.json", "/tasks/a", "channels must be %d", 1);
  char line[256];
  mpk_error_format(&err, line, sizeof line);
  assert_string_equal(line, "m.json: /tasks/a: channels must be 1");
  mpk_fail_at(&err, MPK_EMALFORMED, "lib.so", 42, "bad\nthing");
  mpk_error_format(&err, line, sizeof line);
  assert_string_equal(line, "lib.so@42: bad thing");
  assert_string_equal(mpk_code_name(MPK_EMISMATCH), "mismatch");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bom_tolerated),
      cmocka_unit_test(test_duplicate_keys_rejected),
      cmocka_unit_test(test_invalid_utf8_rejected),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_js_key_order),
      cmocka_unit_test(test_utf16_vs_codepoint_sort),
      cmocka_unit_test(test_integer_getter),
      cmocka_unit_test(test_exact_keys_and_paths),
      cmocka_unit_test(test_error_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
