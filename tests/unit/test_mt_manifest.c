/* MobileTransformers: the version gate (check_compat_cases.json, all cases, plus the stricter
   malformed forms), download patterns, and typed reading of the manifest. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static void test_check_compat_oracle(void **state) {
  (void)state;
  json_t *root = tu_load_json(tu_shared("conformance/mobiletransformers/check_compat_cases.json")), *c;
  size_t i, ran = 0;
  json_array_foreach(json_object_get(root, "cases"), i, c) {
    mpk_error err;
    int rc = mpk_doc_version_check(json_string_value(json_object_get(c, "doc")),
                                   json_string_value(json_object_get(c, "minReader")),
                                   json_string_value(json_object_get(c, "reader")), &err);
    bool accept = strcmp(json_string_value(json_object_get(c, "expect")), "accept") == 0;
    if (accept != (rc == 0))
      fail_msg("case %zu (%s): got %d", i, json_string_value(json_object_get(c, "why")), rc);
    ran++;
  }
  assert_int_equal(ran, 10);
  json_decref(root);
}

/* Stricter than the Python reader (int() would strip spaces and signs): docs/mt.md. */
static void test_malformed_versions(void **state) {
  (void)state;
  const char *bad[] = {"1", "1.x", " 1.0", "1.0 ", "+1.0", "-1.0", "1.0.0", "1..0", ".1", "1.", "", "0x1.0", "1,0", "١.٠"};
  mpk_doc_version v;
  mpk_error err;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (mpk_doc_version_parse(bad[i], &v) != MPK_EMALFORMED) fail_msg("\"%s\" accepted", bad[i]);
    assert_int_equal(mpk_doc_version_check(bad[i], "1.0", "1.0", &err), MPK_EMALFORMED);
    assert_int_equal(mpk_doc_version_check("1.0", bad[i], "1.0", &err), MPK_EMALFORMED);
  }
  assert_int_equal(mpk_doc_version_check(NULL, "1.0", "1.0", &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/schemaVersion");
  assert_int_equal(mpk_doc_version_check("1.0", NULL, "1.0", &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/minReaderVersion");
  assert_int_equal(mpk_doc_version_parse("10.25", &v), 0);
  assert_int_equal(v.major, 10);
  assert_int_equal(v.minor, 25);
  assert_int_equal(mpk_doc_version_check("2.0", "1.0", "1.1", &err), MPK_EVERSION);
  assert_int_equal(mpk_doc_version_check("1.9", "1.2", "1.1", &err), MPK_EVERSION);
  assert_int_equal(mpk_doc_version_check("1.9", "1.1", "1.1", &err), 0);
}

static void test_patterns(void **state) {
  (void)state;
  assert_true(mpk_pattern_matches("variants/x/inference/**", "variants/x/inference/model.onnx"));
  assert_true(mpk_pattern_matches("variants/x/inference/**", "variants/x/inference/a/b.bin"));
  assert_false(mpk_pattern_matches("variants/x/inference/**", "variants/x/inference_extra/a.bin"));
  assert_false(mpk_pattern_matches("variants/x/inference/**", "variants/x/inference"));
  assert_true(mpk_pattern_matches("shared/config.json", "shared/config.json"));
  assert_false(mpk_pattern_matches("shared/config.json", "shared/config.json.bak"));
  const char *invalid[] = {"*.json", "shared/*.json", "shared/**/x", "/abs/**", "../x/**", "a/**/**", "**", "a//b",
                           "a\\b", "x/?", "x/[ab]"};
  for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++)
    if (mpk_pattern_valid(invalid[i])) fail_msg("pattern \"%s\" accepted", invalid[i]);
  assert_true(mpk_pattern_valid("variants/cpu-int4/embedding/**"));
}

static char *tiny_manifest(size_t *len) {
  return (char *)tu_read_file(tu_shared("conformance/mobiletransformers/tiny_package/mobiletransformers_manifest.json"), len);
}

static void test_tiny_package_reads_and_round_trips(void **state) {
  (void)state;
  size_t len;
  char *text = tiny_manifest(&len);
  mpk_mt_manifest *m;
  mpk_error err;
  if (mpk_mt_manifest_parse(text, len, NULL, &m, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(m->default_variant, "cpu-int4");
  assert_int_equal(m->n_variants, 2);
  const mpk_mt_variant *fp16 = mpk_mt_manifest_variant(m, "cpu-fp16");
  assert_non_null(fp16);
  assert_true(fp16->abi_any);
  assert_false(m->variants[0].abi_any);
  assert_int_equal(m->variants[0].n_abi, 1);
  assert_int_equal(fp16->recommended_device_memory_mb.value, 6144);
  assert_int_equal(m->n_files, 31);
  const mpk_mt_file *f = mpk_mt_manifest_file(m, "README.md");
  assert_non_null(f);
  assert_int_equal(f->size, 42);
  assert_string_equal(f->sha256, "51aba426dcfe1a3e908b8742381ba6cd976f7082ab60c31dc2f0e9c97055ae65");
  const mpk_mt_plan *plan = mpk_mt_manifest_plan(m, "cpu-int4");
  assert_int_equal(plan->n_groups, 6);
  assert_false(m->trainable_parameter_count.present); /* the fixture predates the key */
  assert_int_equal(m->trust_remote_code, 0);
  assert_int_equal(m->android_minimum_api.value, 28);
  assert_string_equal(m->license_notice_file, "licenses/BASE_MODEL_LICENSE");
  char *out;
  size_t out_len;
  assert_int_equal(mpk_mt_manifest_json(m, &out, &out_len, &err), 0);
  assert_int_equal(out_len, len);
  assert_memory_equal(out, text, len); /* byte for byte, as the exporter wrote it */
  mpk_free(out);
  mpk_mt_manifest_free(m);
  free(text);
}

/* Replace the first occurrence of `from` in the tiny manifest and expect a refusal. */
static void expect_refused(const char *from, const char *to, int code, const char *pointer, const char *msg) {
  size_t len;
  char *text = tiny_manifest(&len);
  char *at = strstr(text, from);
  if (!at) fail_msg("fixture has no \"%s\"", from);
  size_t fl = strlen(from), tl = strlen(to);
  char *edited = malloc(len - fl + tl + 1);
  memcpy(edited, text, (size_t)(at - text));
  memcpy(edited + (at - text), to, tl);
  memcpy(edited + (at - text) + tl, at + fl, len - (size_t)(at - text) - fl + 1);
  mpk_mt_manifest *m = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mt_manifest_parse(edited, strlen(edited), NULL, &m, &err);
  if (rc != code) fail_msg("%s -> %s: got %d (%s)", from, to, rc, tu_err(&err));
  if (strcmp(err.pointer, pointer) != 0) fail_msg("%s -> %s: pointer %s", from, to, err.pointer);
  if (!strstr(err.message, msg)) fail_msg("%s -> %s: %s", from, to, err.message);
  assert_null(m);
  free(edited);
  free(text);
}

static void test_refusals(void **state) {
  (void)state;
  expect_refused("\"schemaVersion\": \"1.0\"", "\"schemaVersion\": \"2.0\"", MPK_EVERSION, "/schemaVersion", "newer major");
  expect_refused("\"minReaderVersion\": \"1.0\"", "\"minReaderVersion\": \"1.1\"", MPK_EVERSION, "/minReaderVersion", "newer than this reader");
  expect_refused("\"schemaVersion\": \"1.0\"", "\"schemaVersion\": 1.0", MPK_EMALFORMED, "/schemaVersion", "MAJOR.MINOR");
  expect_refused("\"schemaVersion\": \"1.0\"", "\"schemaVersionX\": \"1.0\"", MPK_EMALFORMED, "/schemaVersion", "missing");
  expect_refused("\"id\": \"cpu-fp16\"", "\"id\": \"cpu-int4\"", MPK_EMALFORMED, "/variants/1", "appears twice");
  expect_refused("\"requiredFiles\": [\n    \"mobiletransformers_manifest.json\"",
                 "\"requiredFiles\": [\n    \"/etc/passwd\"", MPK_EMALFORMED, "/requiredFiles/0", "is absolute");
  expect_refused("\"README.md\": 42", "\"../README.md\": 42", MPK_EMALFORMED, "/fileSizes/..~1README.md", "leaves the package");
  expect_refused("\"README.md\": 42", "\"docs\\\\README.md\": 42", MPK_EMALFORMED, "/fileSizes/docs\\README.md", "backslash");
  expect_refused("\"README.md\": 42", "\"README.md\": -1", MPK_EMALFORMED, "/fileSizes/README.md", "non-negative integer");
  expect_refused("\"README.md\": \"51aba426", "\"README.md\": \"51ABA426", MPK_EMALFORMED, "/sha256/README.md", "64 lowercase hex");
  expect_refused("\"shared/tokenizer/**\"", "\"shared/tokenizer/*.json\"", MPK_EMALFORMED, "/downloadPlan/cpu-fp16/core/1", "no other glob form");
  expect_refused("\"weightHandoff\": \"variants/cpu-int4/inference/weight_handoff_map.json\"\n}",
                 "\"weightHandoff\": \"variants//weight_handoff_map.json\"\n}", MPK_EMALFORMED, "/weightHandoff", "empty segment");
  expect_refused("\"minimumAndroidApi\": 28,\n    \"recommendedDeviceMemoryMb\": 3072",
                 "\"minimumAndroidApi\": \"28\",\n    \"recommendedDeviceMemoryMb\": 3072", MPK_EMALFORMED,
                 "/androidRuntime/minimumAndroidApi", "non-negative integer or null");
  expect_refused("\"trustRemoteCode\": false", "\"trustRemoteCode\": \"no\"", MPK_EMALFORMED, "/trustRemoteCode", "true or false");
  expect_refused("\"defaultVariant\": \"cpu-int4\"", "\"defaultVariantX\": \"cpu-int4\"", MPK_EMALFORMED, "", "missing field \"defaultVariant\"");
}

/* Unknown fields are tolerated and written back. */
static void test_unknown_fields_kept(void **state) {
  (void)state;
  size_t len;
  char *text = tiny_manifest(&len);
  char *at = strstr(text, "\"androidRuntime\"");
  size_t pre = (size_t)(at - text);
  const char *extra = "\"aNewField\": {\"z\": [1, \"\\u00e9\"]},\n  ";
  char *edited = malloc(len + strlen(extra) + 1);
  memcpy(edited, text, pre);
  strcpy(edited + pre, extra);
  strcat(edited, text + pre);
  mpk_mt_manifest *m;
  mpk_error err;
  assert_int_equal(mpk_mt_manifest_parse(edited, strlen(edited), NULL, &m, &err), 0);
  char *out;
  size_t out_len;
  assert_int_equal(mpk_mt_manifest_json(m, &out, &out_len, &err), 0);
  assert_non_null(strstr(out, "  \"aNewField\": {\n    \"z\": [\n      1,\n      \"\\u00e9\"\n    ]\n  },\n  \"androidRuntime\""));
  mpk_free(out);
  mpk_mt_manifest_free(m);
  free(edited);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_check_compat_oracle),
      cmocka_unit_test(test_malformed_versions),
      cmocka_unit_test(test_patterns),
      cmocka_unit_test(test_tiny_package_reads_and_round_trips),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_unknown_fields_kept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
