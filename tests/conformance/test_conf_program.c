/* _metadata.artifact: every case of compiled_program_parse.json (WebLLM 0.2.86). */
#include "testutil.h"
#include "webllm_json.h"

static json_t *parse_artifact(const char *text, size_t len, mpk_error *err) {
  mpk_mlc_artifact *art = NULL;
  if (mpk_mlc_artifact_parse(text, len, NULL, &art, err)) return NULL;
  json_t *j = wj_artifact(art);
  mpk_mlc_artifact_free(art);
  return j;
}

static void test_compiled_program_parse(void **state) {
  (void)state;
  assert_int_equal(wj_run_parse_cases("compiled_program_parse.json", "input", parse_artifact, NULL), 41);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_compiled_program_parse)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
