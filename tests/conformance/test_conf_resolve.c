/* Binding a package to a compiled program: every case of resolve_chat_completion.json
   (WebLLM 0.2.86 resolveChatCompletionArtifact, plus the kv_state_kind it implies). */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "webllm_json.h"

static void test_resolve_chat_completion(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("resolve_chat_completion.json", &root);
  size_t i, ran = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    char *ptext = tu_dumps(json_object_get(c, "model_package"));
    char *atext = tu_dumps(json_object_get(c, "compiled_program"));
    mpk_mlc_package *pkg = NULL;
    mpk_mlc_artifact *art = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    /* The vectors use placeholder ids, so the sidecar's self-check is not part of this step. */
    if (mpk_mlc_package_parse(ptext, strlen(ptext), NULL, 1, &pkg, &err))
      fail_msg("%s: package rejected: %s", name, tu_err(&err));
    if (mpk_mlc_artifact_parse(atext, strlen(atext), NULL, &art, &err))
      fail_msg("%s: artifact rejected: %s", name, tu_err(&err));
    mpk_mlc_binding b;
    int rc = mpk_mlc_resolve(pkg, art, &b, &err);
    json_t *expected_error = json_object_get(c, "expected_error");
    if (expected_error) {
      if (rc == 0) fail_msg("%s: bound, WebLLM refuses", name);
      assert_int_equal(rc, MPK_EMISMATCH);
      const char *msg = json_string_value(json_object_get(expected_error, "message"));
      if (strncmp(err.message, msg, strlen(msg)) != 0)
        fail_msg("%s: expected\n  %s\ngot\n  %s", name, msg, err.message);
    } else {
      if (rc != 0) fail_msg("%s: refused (%s), WebLLM binds", name, tu_err(&err));
      json_t *got = wj_binding(&b);
      wj_assert_equal(name, json_object_get(c, "expected"), got);
      json_decref(got);
    }
    mpk_mlc_package_free(pkg);
    mpk_mlc_artifact_free(art);
    free(ptext);
    free(atext);
    ran++;
  }
  assert_int_equal(ran, 35);
  json_decref(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_resolve_chat_completion)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
