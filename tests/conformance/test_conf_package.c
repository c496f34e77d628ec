/* mlc-model-manifest.json: every case of model_package_parse.json and
   load_model_package_manifest.json, produced by WebLLM 0.2.86. */
#include <string.h>

#include "testutil.h"
#include "webllm_json.h"

/* parseModelPackageManifest: the structure alone, no interface_id check. */
static json_t *parse_structure(const char *text, size_t len, mpk_error *err) {
  mpk_mlc_package *pkg = NULL;
  if (mpk_mlc_package_parse(text, len, NULL, 1, &pkg, err)) return NULL;
  json_t *j = wj_package(pkg);
  mpk_mlc_package_free(pkg);
  return j;
}

/* loadModelPackageManifest: bytes, then the interface_id self-check. */
static json_t *load_bytes(const char *text, size_t len, mpk_error *err) {
  mpk_mlc_package *pkg = NULL;
  if (mpk_mlc_package_parse(text, len, NULL, 0, &pkg, err)) return NULL;
  json_t *j = wj_package(pkg);
  char id[MPK_SHA256_ID_SIZE];
  assert_int_equal(mpk_mlc_package_interface_id(pkg, id, err), 0);
  assert_string_equal(id, pkg->interface_id);
  mpk_mlc_package_free(pkg);
  return j;
}

static int divergent_cases_seen;

/* Where modelpkg deliberately differs from WebLLM (docs/conformance.md). */
static int divergent_load_case(const char *name, const char *text, size_t len) {
  mpk_mlc_package *pkg = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  if (strcmp(name, "duplicate_key_last_wins") == 0) {
    /* WebLLM keeps the last duplicate; modelpkg refuses a document two parsers read differently. */
    assert_int_equal(mpk_mlc_package_parse(text, len, NULL, 0, &pkg, &err), MPK_EMALFORMED);
    assert_non_null(strstr(err.message, "duplicate object key"));
    assert_true(err.offset > 0);
  } else if (strcmp(name, "invalid_utf8_byte_becomes_replacement_char") == 0) {
    /* Both reject; WebLLM only because U+FFFD changed the hashed tasks, modelpkg at the byte. */
    assert_int_equal(mpk_mlc_package_parse(text, len, NULL, 0, &pkg, &err), MPK_EMALFORMED);
    assert_non_null(strstr(err.message, "invalid JSON"));
    assert_true(err.offset > 0);
  } else {
    return 0;
  }
  assert_null(pkg);
  divergent_cases_seen++;
  return 1;
}

static void test_model_package_parse(void **state) {
  (void)state;
  assert_int_equal(wj_run_parse_cases("model_package_parse.json", "input", parse_structure, NULL), 83);
}

static void test_load_model_package_manifest(void **state) {
  (void)state;
  divergent_cases_seen = 0;
  assert_int_equal(wj_run_parse_cases("load_model_package_manifest.json", "input_base64", load_bytes,
                                      divergent_load_case),
                   12);
  assert_int_equal(divergent_cases_seen, 2);
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
