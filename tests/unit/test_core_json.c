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

/* The rules yajl (the lexer under mpk_json_parse) does not enforce by itself. */
static void test_lexer_gaps_closed(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  /* yajl takes '\v' and '\f' for whitespace; JSON does not. */
  assert_int_equal(parse("[1,\v2]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(err.offset, 3);
  assert_int_equal(parse("\f{}", &v, &err), MPK_EMALFORMED);
  /* yajl accepts an unfinished token after the value. */
  assert_int_equal(parse("{} \"abc", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("1 \"", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("[1] x", &v, &err), MPK_EMALFORMED);
  /* jansson accepted a NUL byte after a number; it is not whitespace. */
  assert_int_equal(mpk_json_parse("[1\0]", 4, NULL, "doc.json", &v, &err), MPK_EMALFORMED);
  /* yajl decodes a high surrogate followed by any \u escape as a pair, and drops a character after
     a lone one; escapes are decoded strictly instead. */
  assert_int_equal(parse("[\"\\ud800\\u0041\"]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(err.offset, 2);
  assert_int_equal(parse("[\"\\ud800x\"]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("[\"\\udc00\\ud800\"]", &v, &err), MPK_EMALFORMED);
  /* yajl checks only the shape of UTF-8 sequences: overlong forms and code points past U+10FFFF. */
  assert_int_equal(parse("[\"\xC0\x80\"]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("[\"\xE0\x80\x80\"]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("[\"\xF4\x90\x80\x80\"]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("{\"\xED\xBF\xBF\":1}", &v, &err), MPK_EMALFORMED); /* in a key too */
  assert_int_equal(parse("{\"a\\u0000\":1}", &v, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "NUL byte in object key"));
  /* Leading zeros, a bare sign, a lone decimal point. */
  assert_int_equal(parse("[01]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("[-]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("[1.]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("[.5]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("[1,]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(parse("[1]/* c */", &v, &err), MPK_EMALFORMED);
}

static void test_values_as_jansson_reads_them(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  assert_int_equal(parse("{\"s\":\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20AC\\ud83d\\ude00\",\"\\u00e9\":\"\xC3\xA9\","
                   "\"i\":[-0,9223372036854775807,-9223372036854775808],\"r\":[1.5e3,-0.0,1E-400,2.5],"
                   "\"k\":[true,false,null]}", &v, &err), 0);
  size_t n;
  const char *s = json_string_value(json_object_get(v, "s"));
  n = json_string_length(json_object_get(v, "s"));
  assert_int_equal(n, 18);
  assert_memory_equal(s, "a\"\\/\b\f\n\r\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 18);
  assert_string_equal(json_string_value(json_object_get(v, "\xC3\xA9")), "\xC3\xA9"); /* escaped key */
  const json_t *i = json_object_get(v, "i"), *r = json_object_get(v, "r");
  assert_true(json_is_integer(json_array_get(i, 0)));
  assert_int_equal(json_integer_value(json_array_get(i, 0)), 0);
  assert_true(json_integer_value(json_array_get(i, 1)) == INT64_MAX);
  assert_true(json_integer_value(json_array_get(i, 2)) == INT64_MIN);
  assert_true(json_is_real(json_array_get(r, 0)));
  assert_true(json_real_value(json_array_get(r, 0)) == 1500.0);
  assert_true(json_is_real(json_array_get(r, 1)));
  assert_true(json_real_value(json_array_get(r, 2)) == 0.0); /* underflow is not an error */
  const char *keys[] = {"s", "\xC3\xA9", "i", "r", "k"};
  const char **got;
  assert_int_equal(mpk_json_keys_insertion(v, &got, &n), 0);
  assert_int_equal(n, 5);
  for (size_t k = 0; k < n; k++) assert_string_equal(got[k], keys[k]);
  free(got);
  json_decref(v);
  /* A top-level scalar, ended by the end of the text. */
  assert_int_equal(parse(" 42 ", &v, &err), 0);
  assert_int_equal(json_integer_value(v), 42);
  json_decref(v);
  assert_int_equal(parse("-7", &v, &err), 0);
  assert_int_equal(json_integer_value(v), -7);
  json_decref(v);
  assert_int_equal(parse("9223372036854775808", &v, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "too big integer"));
  assert_int_equal(parse("[-1e999]", &v, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "real number overflow"));
  /* \u0000 where the caller allows it. */
  mpk_json_opts nul = {.allow_nul = true};
  assert_int_equal(mpk_json_parse("[\"a\\u0000b\"]", 12, &nul, "d", &v, &err), 0);
  assert_int_equal(json_string_length(json_array_get(v, 0)), 3);
  assert_memory_equal(json_string_value(json_array_get(v, 0)), "a\0b", 3);
  json_decref(v);
}

static void test_error_location(void **state) {
  (void)state;
  json_t *v;
  mpk_error err;
  assert_int_equal(parse("{\"a\": 1,\n \"b\": [1, 2,]}", &v, &err), MPK_EMALFORMED);
  assert_string_equal(err.file, "doc.json");
  assert_true(err.offset == 21 || err.offset == 22); /* at the ']' or just past it */
  assert_non_null(strstr(err.message, "(line 2, column 1"));
  assert_int_equal(strncmp(err.message, "invalid JSON: ", 14), 0);
  /* Offsets count the BOM: they are offsets in the file. */
  assert_int_equal(parse("\xEF\xBB\xBF[\"\xFF\"]", &v, &err), MPK_EMALFORMED);
  assert_int_equal(err.offset, 5);
  assert_int_equal(parse("[[[1]]]", &v, &err), 0);
  json_decref(v);
  mpk_json_opts o = {.max_depth = 3};
  assert_int_equal(mpk_json_parse("[[[1]]]", 7, &o, "d", &v, &err), MPK_ELIMIT);
  assert_int_equal(err.offset, 4);
  assert_int_equal(mpk_json_parse("[[[]]]", 6, &o, "d", &v, &err), 0);
  json_decref(v);
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

/* A path cut at its capacity stays cut inside, and after a pop back to the cut length a sibling's
   push cuts it again within the buffer. (The pop used to clear the mark, and the next "..." was
   written 2 bytes past buf into len: a wrong length on x86-64, a crash on s390x.) */
static void test_path_truncation(void **state) {
  (void)state;
  mpk_path p;
  mpk_path_init(&p);
  char key[1019];
  memset(key, 'k', sizeof key - 1);
  key[sizeof key - 1] = '\0';
  size_t a = mpk_path_push_key(&p, key); /* "/kkk...": 1019 bytes, the most that is not cut */
  assert_int_equal(p.len, 1019);
  assert_false(p.truncated);
  size_t b = mpk_path_push_key(&p, "b"); /* cut: "..." */
  assert_true(p.truncated);
  assert_int_equal(p.len, 1022);
  for (int sibling = 0; sibling < 3; sibling++) {
    size_t c = mpk_path_push_key(&p, sibling ? "d" : "c");
    mpk_path_pop(&p, c);
    assert_true(p.truncated);
    assert_int_equal(p.len, 1022);
    assert_int_equal(strlen(p.buf), 1022);
    assert_memory_equal(p.buf + 1019, "...", 4);
  }
  mpk_path_pop(&p, b);
  assert_false(p.truncated);
  assert_int_equal(p.len, 1019);
  assert_int_equal(strlen(p.buf), 1019);
  mpk_path_pop(&p, a);
  assert_int_equal(p.len, 0);
  assert_string_equal(p.buf, "");
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
      cmocka_unit_test(test_lexer_gaps_closed),
      cmocka_unit_test(test_values_as_jansson_reads_them),
      cmocka_unit_test(test_error_location),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_js_key_order),
      cmocka_unit_test(test_utf16_vs_codepoint_sort),
      cmocka_unit_test(test_integer_getter),
      cmocka_unit_test(test_path_truncation),
      cmocka_unit_test(test_exact_keys_and_paths),
      cmocka_unit_test(test_error_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
