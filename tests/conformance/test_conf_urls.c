/* Where WebLLM finds a model's documents: every case of resource_urls.json (WebLLM 0.2.86
   resolveModelPackageResourceURLs), through mpk_mlc_resource_urls_resolve; and cleanModelUrl on
   the hub forms the installer meets (the random differential test is tests/url/url_diff.mjs). */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "webllm_json.h"

static void test_resource_urls(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("resource_urls.json", &root);
  size_t i, ran = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *model_url = json_string_value(json_object_get(c, "model_url"));
    json_t *pj = json_object_get(c, "model_package");
    mpk_mlc_package *pkg = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    if (pj && !json_is_null(pj)) {
      char *text = tu_dumps(pj);
      if (mpk_mlc_package_parse(text, strlen(text), NULL, 1, &pkg, &err))
        fail_msg("%s: package rejected: %s", name, tu_err(&err));
      free(text);
    }
    mpk_mlc_resource_urls u;
    if (mpk_mlc_resource_urls_resolve(model_url, pkg, &u, &err)) fail_msg("%s: %s", name, tu_err(&err));
    json_t *got = json_pack("{s:s,s:s,s:s}", "chatConfigUrl", u.chat_config_url, "tensorCacheBaseUrl",
                            u.tensor_cache_base_url, "tensorCacheManifestUrl", u.tensor_cache_manifest_url);
    wj_assert_equal(name, json_object_get(c, "expected"), got);
    json_decref(got);
    mpk_mlc_resource_urls_free(&u);
    assert_null(u.chat_config_url);
    mpk_mlc_package_free(pkg);
    ran++;
  }
  assert_true(ran >= 4);
  json_decref(root);
}

/* cleanModelUrl as WebLLM 0.2.86 computes it (values from running its bundle in Node 20). */
static void test_clean_model_url(void **state) {
  (void)state;
  static const char *cases[][2] = {
      {"https://huggingface.co/mlc-ai/M", "https://huggingface.co/mlc-ai/M/resolve/main/"},
      {"https://huggingface.co/mlc-ai/M/", "https://huggingface.co/mlc-ai/M/resolve/main/"},
      {"https://huggingface.co/mlc-ai/M/resolve/main", "https://huggingface.co/mlc-ai/M/resolve/main/"},
      {"https://huggingface.co/mlc-ai/M/resolve/v1.0/", "https://huggingface.co/mlc-ai/M/resolve/v1.0/"},
      {"HTTPS://HF.co:443/a/../M", "https://hf.co/M/resolve/main/"},
      {"https://h/resolve/x", "https://h/resolve/x/"},          /* ".+" before "/resolve/": the host */
      {"https://h/resolve/", "https://h/resolve/resolve/main/"}, /* nothing between resolve/ and a '/' */
      {"https://h/m\n/resolve/main/", "https://h/m/resolve/main/resolve/main/"}, /* '.' stops at LF */
      {"https://h/m/resolve/a\xe2\x80\xa8/", "https://h/m/resolve/a%E2%80%A8/resolve/main/"},
      {"https://h/m /", "https://h/m%20/resolve/main/"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    if (mpk_mlc_clean_model_url(cases[i][0], &out, &err)) fail_msg("%s: %s", cases[i][0], tu_err(&err));
    if (strcmp(out, cases[i][1]) != 0) fail_msg("%s: got %s, want %s", cases[i][0], out, cases[i][1]);
    mpk_free(out);
  }
  char *out = (char *)1;
  mpk_error err;
  assert_int_equal(mpk_mlc_clean_model_url("ftp://h/m", &out, &err), MPK_EUNSUPPORTED);
  assert_null(out);
  assert_non_null(strstr(err.message, "ftp"));
  assert_int_equal(mpk_mlc_clean_model_url("https://h:99999/m", &out, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "port"));
  assert_int_equal(mpk_mlc_clean_model_url("models/m", &out, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_resource_urls_resolve("not a url", NULL, &(mpk_mlc_resource_urls){0}, &err), MPK_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_resource_urls), cmocka_unit_test(test_clean_model_url)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
