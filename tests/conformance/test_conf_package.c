/* mlc-model-manifest.json: every case of model_package_parse.json and
   load_model_package_manifest.json, produced by WebLLM 0.2.86. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "webllm_json.h"

/* model_package_parse: parse the value alone (no interface_id check, as parseModelPackageManifest). */
static void test_model_package_parse(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("model_package_parse.json", &root);
  size_t i, ran = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    char *text = tu_dumps(json_object_get(c, "input"));
    mpk_mlc_package *pkg = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_mlc_package_parse(text, strlen(text), NULL, 1, &pkg, &err);
    json_t *expected_error = json_object_get(c, "expected_error");
    if (expected_error) {
      if (rc == 0) fail_msg("%s: accepted, WebLLM rejects", name);
      wj_assert_error(name, &err, json_string_value(json_object_get(expected_error, "message")));
    } else {
      if (rc != 0) fail_msg("%s: rejected (%s), WebLLM accepts", name, tu_err(&err));
      json_t *got = wj_package(pkg);
      wj_assert_equal(name, json_object_get(c, "expected"), got);
      json_decref(got);
    }
    mpk_mlc_package_free(pkg);
    free(text);
    ran++;
  }
  assert_int_equal(ran, 83);
  json_decref(root);
}

/* Where modelpkg deliberately differs from WebLLM (docs/conformance.md). */
static int divergent_load_case(const char *name, int rc, const mpk_error *err) {
  if (strcmp(name, "duplicate_key_last_wins") == 0) {
    /* WebLLM keeps the last duplicate; modelpkg refuses a document two parsers read differently. */
    assert_int_equal(rc, MPK_EMALFORMED);
    assert_non_null(strstr(err->message, "duplicate object key"));
    assert_int_equal(err->offset >= 0, 1);
    return 1;
  }
  if (strcmp(name, "invalid_utf8_byte_becomes_replacement_char") == 0) {
    /* Both reject; WebLLM only because U+FFFD changed the hashed tasks, modelpkg at the byte. */
    assert_int_equal(rc, MPK_EMALFORMED);
    assert_non_null(strstr(err->message, "invalid JSON"));
    assert_true(err->offset > 0);
    return 1;
  }
  return 0;
}

static void test_load_model_package_manifest(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("load_model_package_manifest.json", &root);
  size_t i, ran = 0, divergent = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    size_t len;
    uint8_t *bytes = tu_b64decode(json_string_value(json_object_get(c, "input_base64")), &len);
    mpk_mlc_package *pkg = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_mlc_package_parse(bytes, len, NULL, 0, &pkg, &err);
    json_t *expected_error = json_object_get(c, "expected_error");
    if (divergent_load_case(name, rc, &err)) {
      divergent++;
    } else if (expected_error) {
      if (rc == 0) fail_msg("%s: accepted, WebLLM rejects", name);
      wj_assert_error(name, &err, json_string_value(json_object_get(expected_error, "message")));
    } else {
      if (rc != 0) fail_msg("%s: rejected (%s), WebLLM accepts", name, tu_err(&err));
      json_t *got = wj_package(pkg);
      wj_assert_equal(name, json_object_get(c, "expected"), got);
      json_decref(got);
      assert_string_equal(pkg->interface_id, json_string_value(json_object_get(c, "expected_interface_id")));
      char id[MPK_SHA256_ID_SIZE];
      assert_int_equal(mpk_mlc_package_interface_id(pkg, id, &err), 0);
      assert_string_equal(id, pkg->interface_id);
    }
    mpk_mlc_package_free(pkg);
    free(bytes);
    ran++;
  }
  assert_int_equal(ran, 12);
  assert_int_equal(divergent, 2);
  json_decref(root);
}

/* U+0000 inside a manifest string is refused (C strings cannot carry it unambiguously). */
static void test_nul_in_string_refused(void **state) {
  (void)state;
  const char *doc = "{\"schema\":\"mlc.model-package\\u0000x\"}";
  mpk_mlc_package *pkg = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  assert_int_equal(mpk_mlc_package_parse(doc, strlen(doc), NULL, 0, &pkg, &err), MPK_EMALFORMED);
  assert_null(pkg);
  assert_non_null(strstr(err.message, "invalid JSON"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_package_parse),
      cmocka_unit_test(test_load_model_package_manifest),
      cmocka_unit_test(test_nul_in_string_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
