/* Canonical JSON and interface_id: every case of canonical_json.json and interface_id.json.
   modelpkg follows the Python producer (MLC) where it and WebLLM differ (docs/conformance.md). */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int all_safe_integers(const json_t *v) {
  size_t i;
  const char *k;
  json_t *x;
  switch (json_typeof(v)) {
    case JSON_OBJECT:
      json_object_foreach((json_t *)v, k, x) if (!all_safe_integers(x)) return 0;
      return 1;
    case JSON_ARRAY:
      json_array_foreach(v, i, x) if (!all_safe_integers(x)) return 0;
      return 1;
    case JSON_REAL: {
      double d = json_real_value(v);
      return d == (double)(long long)d && d < 9007199254740992.0 && d > -9007199254740992.0;
    }
    default:
      return 1;
  }
}

static void sha_of(const char *text, size_t len, char out[MPK_SHA256_ID_SIZE]) {
  assert_int_equal(mpk_sha256_id(text, len, out), 0);
}

static void test_canonical_json_vectors(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("canonical_json.json", &root);
  size_t i, accepted = 0, refused = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    char *text = tu_dumps(json_object_get(c, "value"));
    char *out = NULL;
    size_t out_len = 0;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_canonical_json(text, strlen(text), &out, &out_len, &err);
    if (all_safe_integers(json_object_get(c, "value"))) {
      if (rc) fail_msg("case %zu: %s", i, tu_err(&err));
      const char *py = json_string_value(json_object_get(c, "python_canonical_json"));
      /* Length first: the text may hold an escaped U+0000, so compare bytes, not C strings. */
      assert_int_equal(out_len, json_string_length(json_object_get(c, "python_canonical_json")));
      assert_memory_equal(out, py, out_len);
      char id[MPK_SHA256_ID_SIZE];
      sha_of(out, out_len, id);
      assert_string_equal(id, json_string_value(json_object_get(c, "python_sha256")));
      accepted++;
    } else {
      /* Identities are integers only: a fraction or a number beyond 2^53 is refused, with its path. */
      assert_int_equal(rc, MPK_EMALFORMED);
      assert_string_equal(err.pointer, "/n/2");
      refused++;
    }
    mpk_free(out);
    free(text);
  }
  assert_int_equal(accepted, 6);
  assert_int_equal(refused, 1);
  json_decref(root);
}

static void test_interface_id_vectors(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("interface_id.json", &root);
  size_t i, ran = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    char *text = json_object_get(c, "tasks") ? tu_dumps(json_object_get(c, "tasks"))
                                             : strdup(json_string_value(json_object_get(c, "tasks_json_text")));
    char id[MPK_SHA256_ID_SIZE];
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_mlc_interface_id(text, strlen(text), id, &err);
    if (strcmp(name, "lone_surrogate_in_name") == 0) {
      /* WebLLM hashes "\ud800" escaped; the Python producer cannot emit it; modelpkg refuses it. */
      assert_int_equal(rc, MPK_EMALFORMED);
      assert_non_null(strstr(err.message, "invalid JSON"));
    } else {
      if (rc) fail_msg("%s: %s", name, tu_err(&err));
      const char *want = json_string_value(json_object_get(c, "python_interface_id"));
      if (strcmp(id, want) != 0) fail_msg("%s: got %s, Python producer %s", name, id, want);
      int same = json_is_true(json_object_get(c, "webllm_equals_python"));
      const char *webllm = json_string_value(json_object_get(c, "interface_id"));
      assert_int_equal(strcmp(id, webllm) == 0, same);
      /* The canonical text of the normalized tasks is the Python producer's, byte for byte. */
      json_t *doc = json_pack("{s:O}", "tasks", json_object_get(c, "normalized_tasks"));
      char *dtext = tu_dumps(doc), *canon = NULL;
      size_t clen;
      assert_int_equal(mpk_canonical_json(dtext, strlen(dtext), &canon, &clen, &err), 0);
      assert_string_equal(canon, json_string_value(json_object_get(c, "python_canonical_json")));
      mpk_free(canon);
      free(dtext);
      json_decref(doc);
    }
    free(text);
    ran++;
  }
  assert_int_equal(ran, 15);
  json_decref(root);
}

/* The documented sort-order divergence, pinned by itself: WebLLM sorts UTF-16 code units,
   modelpkg (like Python's sort_keys) code points. U+FF5A sorts before U+1F600 by code point. */
static void test_sort_order_follows_python(void **state) {
  (void)state;
  const char *doc = "{\"\\ud83d\\ude00\":2,\"\\uff5a\":1,\"a\":3}";
  char *out = NULL;
  size_t len;
  mpk_error err;
  assert_int_equal(mpk_canonical_json(doc, strlen(doc), &out, &len, &err), 0);
  assert_string_equal(out, "{\"a\":3,\"\xef\xbd\x9a\":1,\"\xf0\x9f\x98\x80\":2}");
  mpk_free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_canonical_json_vectors),
      cmocka_unit_test(test_interface_id_vectors),
      cmocka_unit_test(test_sort_order_follows_python),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
