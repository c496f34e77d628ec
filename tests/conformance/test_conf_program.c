/* _metadata.artifact: every case of compiled_program_parse.json (WebLLM 0.2.86). */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "webllm_json.h"

static void test_compiled_program_parse(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("compiled_program_parse.json", &root);
  size_t i, ran = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    char *text = tu_dumps(json_object_get(c, "input"));
    mpk_mlc_artifact *art = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_mlc_artifact_parse(text, strlen(text), NULL, &art, &err);
    json_t *expected_error = json_object_get(c, "expected_error");
    if (expected_error) {
      if (rc == 0) fail_msg("%s: accepted, WebLLM rejects", name);
      wj_assert_error(name, &err, json_string_value(json_object_get(expected_error, "message")));
    } else {
      if (rc != 0) fail_msg("%s: rejected (%s), WebLLM accepts", name, tu_err(&err));
      json_t *got = wj_artifact(art);
      wj_assert_equal(name, json_object_get(c, "expected"), got);
      json_decref(got);
    }
    mpk_mlc_artifact_free(art);
    free(text);
    ran++;
  }
  assert_int_equal(ran, 41);
  json_decref(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_compiled_program_parse)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
