#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "webllm_json.h"

/* WebLLM's objects as the library writes them (mpk_mlc_package_json, mpk_mlc_artifact_json,
   mpk_mlc_binding_json): what the JS and Python bindings hand out. */
static json_t *loaded(int rc, char *text, size_t n, const mpk_error *err, const char *what) {
  if (rc) fail_msg("%s json: %s", what, tu_err(err));
  json_t *v = json_loadb(text, n, 0, NULL);
  mpk_free(text);
  if (!v) fail_msg("mpk_mlc_%s_json wrote text jansson cannot read", what);
  return v;
}

json_t *wj_package(const mpk_mlc_package *pkg) {
  char *text = NULL;
  size_t n = 0;
  mpk_error err;
  int rc = mpk_mlc_package_json(pkg, &text, &n, &err);
  return loaded(rc, text, n, &err, "package");
}

json_t *wj_artifact(const mpk_mlc_artifact *art) {
  char *text = NULL;
  size_t n = 0;
  mpk_error err;
  int rc = mpk_mlc_artifact_json(art, &text, &n, &err);
  return loaded(rc, text, n, &err, "artifact");
}

json_t *wj_binding(const mpk_mlc_binding *b) {
  char *text = NULL;
  size_t n = 0;
  mpk_error err;
  int rc = mpk_mlc_binding_json(b, &text, &n, &err);
  return loaded(rc, text, n, &err, "binding");
}

void wj_assert_error(const char *case_name, const mpk_error *err, const char *expected_message) {
  char loc[2048], full[4096];
  tu_webllm_location(err, loc, sizeof loc);
  if (loc[0]) snprintf(full, sizeof full, "%s: %s", loc, err->message);
  else snprintf(full, sizeof full, "%s", err->message);
  if (strncmp(full, expected_message, strlen(expected_message)) != 0)
    fail_msg("%s: expected error\n  %s\ngot\n  %s", case_name, expected_message, full);
}

void wj_assert_equal(const char *case_name, const json_t *expected, const json_t *actual) {
  if (!actual || !json_equal(expected, actual)) {
    char *e = tu_dumps(expected), *a = actual ? tu_dumps(actual) : strdup("(null)");
    print_error("%s: result differs\nexpected %s\nactual   %s\n", case_name, e, a);
    free(e);
    free(a);
    fail_msg("%s: result differs", case_name);
  }
}

size_t wj_run_parse_cases(const char *file, const char *input_field, wj_parse_fn parse,
                          int (*divergent)(const char *name, const char *text, size_t len)) {
  json_t *root, *cases = tu_webllm_cases(file, &root);
  bool base64 = strstr(input_field, "_base64") != NULL;
  size_t i, ran = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    size_t len;
    char *text = base64 ? (char *)tu_b64decode(json_string_value(json_object_get(c, input_field)), &len)
                        : tu_dumps(json_object_get(c, input_field));
    if (!base64) len = strlen(text);
    ran++;
    if (divergent && divergent(name, text, len)) {
      free(text);
      continue;
    }
    mpk_error err;
    mpk_error_clear(&err);
    json_t *got = parse(text, len, &err);
    json_t *expected_error = json_object_get(c, "expected_error");
    if (expected_error) {
      if (got) fail_msg("%s: accepted, WebLLM rejects", name);
      wj_assert_error(name, &err, json_string_value(json_object_get(expected_error, "message")));
    } else {
      if (!got) fail_msg("%s: rejected (%s), WebLLM accepts", name, tu_err(&err));
      wj_assert_equal(name, json_object_get(c, "expected"), got);
    }
    json_decref(got);
    free(text);
  }
  json_decref(root);
  return ran;
}
