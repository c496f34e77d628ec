/* The producer: byte-identical sidecars (producer_python_reference.json), the artifact it
   prints, and the refusals. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char programs[] =
    "{\"generation\":{\"kind\":\"token_generation\",\"exports\":{\"embed_tokens\":\"embed\","
    "\"prefill_embeds\":\"prefill\",\"decode_embeds\":\"decode\",\"create_kv_cache\":\"kv\"},"
    "\"adapters\":{\"audio\":\"audio_embed\",\"image\":\"image_embed\"},\"adapter_dtypes\":{\"image\":\"uint32\"}}}";

static mpk_mlc_params *params_of(const json_t *list) {
  char *text = tu_dumps(list);
  mpk_mlc_params *p = NULL;
  mpk_error err;
  if (mpk_mlc_params_parse(text, strlen(text), "params", &p, &err)) fail_msg("%s", tu_err(&err));
  free(text);
  return p;
}

static int build(const char *tasks, const char *progs, const mpk_mlc_params *p, const char *const *feat,
                 size_t n_feat, mpk_mlc_build_result *out, mpk_error *err) {
  mpk_mlc_build_input in = {.tasks_json = tasks, .tasks_len = strlen(tasks), .programs_json = progs,
                            .programs_len = progs ? strlen(progs) : 0, .params = p,
                            .required_features = feat, .n_required_features = n_feat};
  mpk_error_clear(err);
  return mpk_mlc_build(&in, out, err);
}

static void test_reference_sidecars_byte_exact(void **state) {
  (void)state;
  json_t *root = tu_load_json(tu_shared("conformance/mlc-webllm/producer_python_reference.json")), *c;
  json_t *cases = json_object_get(json_object_get(root, "cases"), "sidecar");
  size_t i, ran = 0;
  json_array_foreach(cases, i, c) {
    char *tasks = tu_dumps(json_object_get(c, "tasks"));
    mpk_mlc_params *p = params_of(json_object_get(c, "params"));
    const char *feat[] = {"shader-f16", "shader-f16"};
    mpk_mlc_build_result out;
    mpk_error err;
    if (build(tasks, programs, p, feat, 2, &out, &err)) fail_msg("case %zu: %s", i, tu_err(&err));
    const char *want = json_string_value(json_object_get(c, "expected_text"));
    assert_int_equal(out.manifest_len, strlen(want));
    assert_memory_equal(out.manifest, want, out.manifest_len);
    /* The artifact binds to the manifest it came with. */
    mpk_mlc_package *pkg;
    mpk_mlc_artifact *art;
    assert_int_equal(mpk_mlc_package_parse(out.manifest, out.manifest_len, NULL, 0, &pkg, &err), 0);
    assert_int_equal(mpk_mlc_artifact_parse(out.artifact, out.artifact_len, NULL, &art, &err), 0);
    mpk_mlc_binding b;
    assert_int_equal(mpk_mlc_resolve(pkg, art, &b, &err), 0);
    assert_int_equal(art->n_required_features, 1); /* de-duplicated */
    assert_int_equal(art->max_storage_buffer_binding_size, 20);
    assert_int_equal(art->estimated_device_memory_bytes, 32);
    mpk_mlc_artifact_free(art);
    mpk_mlc_package_free(pkg);
    mpk_mlc_build_result_free(&out);
    mpk_mlc_params_free(p);
    free(tasks);
    ran++;
  }
  assert_int_equal(ran, 2);
  json_decref(root);
}

static const char audio_tasks[] =
    "{\"chat.completions\":{\"executor\":\"generation\",\"inputs\":{\"text\":{\"processor\":\"tokenizer\"},"
    "\"audio\":{\"processor\":{\"kind\":\"audio_decode\",\"format\":\"pcm_f32\",\"sample_rate_hz\":16000,"
    "\"channels\":1,\"max_samples\":480000},\"adapter\":\"%s\",\"prompt\":{\"placeholder_token_id\":7}}},"
    "\"output\":\"text\"},\"%s\":{\"executor\":\"%s\",\"inputs\":{\"text\":{\"processor\":\"tokenizer\"}},"
    "\"output\":\"text\"}}";

static void test_refusals(void **state) {
  (void)state;
  json_t *plist = json_loads("[[\"w\", [2, 3], \"float16\"]]", 0, NULL);
  mpk_mlc_params *p = params_of(plist);
  char tasks[2048];
  mpk_mlc_build_result out;
  mpk_error err;
  snprintf(tasks, sizeof tasks, audio_tasks, "audio", "embeddings", "encoder");
  assert_int_equal(build(tasks, programs, p, NULL, 0, &out, &err), MPK_EMISMATCH);
  assert_string_equal(err.pointer, "/embeddings/executor");
  assert_non_null(strstr(err.message, "names executor \"encoder\", which the programs do not declare"));
  assert_null(out.manifest);
  snprintf(tasks, sizeof tasks, audio_tasks, "speech", "other", "generation");
  assert_int_equal(build(tasks, programs, p, NULL, 0, &out, &err), MPK_EMISMATCH);
  assert_string_equal(err.pointer, "/chat.completions/inputs/audio/adapter");
  assert_non_null(strstr(err.message, "adapter \"speech\", which program \"generation\" does not declare"));
  /* No programs anywhere. */
  snprintf(tasks, sizeof tasks, audio_tasks, "audio", "other", "generation");
  assert_int_equal(build(tasks, NULL, p, NULL, 0, &out, &err), MPK_EINVAL);
  /* Malformed tasks are refused with the consumer's rules and path. */
  assert_int_equal(build("{\"t\":{\"executor\":\"\",\"inputs\":{},\"output\":\"text\"}}", programs, p, NULL, 0, &out, &err),
                   MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/t/inputs");
  /* Programs the consumer would refuse are refused too. */
  assert_int_equal(build(tasks, "{\"generation\":{\"kind\":\"token_generation\",\"exports\":{}}}", p, NULL, 0, &out, &err),
                   MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/programs/generation/exports");
  mpk_mlc_params_free(p);
  json_decref(plist);
}

/* {"tasks", "programs"} in one file, and programs taken from an existing artifact. */
static void test_program_sources(void **state) {
  (void)state;
  json_t *plist = json_loads("[[\"w\", [\"vocab_size\", 3], \"float32\"]]", 0, NULL);
  mpk_mlc_params *p = params_of(plist);
  char tasks[2048], wrapped[4096];
  snprintf(tasks, sizeof tasks, audio_tasks, "audio", "other", "generation");
  snprintf(wrapped, sizeof wrapped, "{\"programs\":%s,\"tasks\":%s}", programs, tasks);
  mpk_mlc_named_dim dims[] = {{"vocab_size", 10}};
  mpk_mlc_build_input in = {.tasks_json = wrapped, .tasks_len = strlen(wrapped), .params = p, .dims = dims, .n_dims = 1};
  mpk_mlc_build_result out, out2;
  mpk_error err;
  if (mpk_mlc_build(&in, &out, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(out.resources.estimated_device_memory_bytes, 120);
  mpk_mlc_artifact *art;
  assert_int_equal(mpk_mlc_artifact_parse(out.artifact, out.artifact_len, NULL, &art, &err), 0);
  mpk_mlc_build_input again = {.tasks_json = tasks, .tasks_len = strlen(tasks), .programs_from = art, .params = p,
                               .dims = dims, .n_dims = 1};
  if (mpk_mlc_build(&again, &out2, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(out.manifest_len, out2.manifest_len);
  assert_memory_equal(out.manifest, out2.manifest, out.manifest_len);
  assert_int_equal(out.artifact_len, out2.artifact_len);
  /* A named dimension without a value cannot be sized. */
  mpk_mlc_build_result_free(&out2);
  in.n_dims = 0;
  assert_int_equal(mpk_mlc_build(&in, &out2, &err) != 0, 1);
  assert_non_null(strstr(err.message, "vocab_size"));
  mpk_mlc_artifact_free(art);
  mpk_mlc_build_result_free(&out);
  mpk_mlc_build_result_free(&out2);
  mpk_mlc_params_free(p);
  json_decref(plist);
}

/* Non-ASCII names are written with ASCII escapes (as MLC's writer), and still hash the same. */
static void test_ascii_escaping(void **state) {
  (void)state;
  json_t *plist = json_loads("[[\"w\", [2], \"float16\"]]", 0, NULL);
  mpk_mlc_params *p = params_of(plist);
  const char *tasks = "{\"\xe5\xaf\xb9\xe8\xaf\x9d\":{\"executor\":\"generation\",\"inputs\":{\"\xf0\x9f\x98\x80\":{\"processor\":\"tokenizer\"}},\"output\":\"text\"}}";
  mpk_mlc_build_result out;
  mpk_error err;
  if (build(tasks, programs, p, NULL, 0, &out, &err)) fail_msg("%s", tu_err(&err));
  assert_non_null(strstr(out.manifest, "\"\\u5bf9\\u8bdd\": {"));
  assert_non_null(strstr(out.manifest, "\"\\ud83d\\ude00\": {"));
  char id[MPK_SHA256_ID_SIZE];
  assert_int_equal(mpk_mlc_interface_id(tasks, strlen(tasks), id, &err), 0);
  assert_string_equal(id, out.interface_id);
  mpk_mlc_build_result_free(&out);
  mpk_mlc_params_free(p);
  json_decref(plist);
}

static void test_atomic_write(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char path[512];
  snprintf(path, sizeof path, "%s/f.json", dir);
  mpk_error err;
  assert_int_equal(mpk_write_file_atomic(path, "old", 3, &err), 0);
  assert_int_equal(mpk_write_file_atomic(path, "new!", 4, &err), 0);
  size_t len;
  uint8_t *got = tu_read_file(path, &len);
  assert_int_equal(len, 4);
  assert_memory_equal(got, "new!", 4);
  free(got);
  /* Nothing left beside it. */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", dir);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof path, "%s/no/such/dir/f.json", dir);
  assert_int_equal(mpk_write_file_atomic(path, "x", 1, &err), MPK_EIO);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* float16 parameters without "shader-f16" among the required features: flagged, not refused. */
static void test_f16_feature_warning(void **state) {
  (void)state;
  const char *tasks = "{\"chat.completions\":{\"executor\":\"generation\",\"inputs\":{\"text\":"
                      "{\"processor\":\"tokenizer\"}},\"output\":\"text\"}}";
  const char *f16 = "[[\"w\", [2, 3], \"float16\"]]", *f32 = "[[\"w\", [2, 3], \"float32\"]]";
  const char *with[] = {"shader-f16"}, *other[] = {"subgroups"};
  struct {
    const char *params;
    const char *const *feat;
    size_t n;
    int want;
  } cases[] = {{f16, NULL, 0, 1}, {f16, other, 1, 1}, {f16, with, 1, 0}, {f32, NULL, 0, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    json_t *plist = json_loads(cases[k].params, 0, NULL);
    mpk_mlc_params *p = params_of(plist);
    mpk_mlc_build_result out;
    mpk_error err;
    if (build(tasks, programs, p, cases[k].feat, cases[k].n, &out, &err)) fail_msg("case %zu: %s", k, tu_err(&err));
    assert_int_equal(out.f16_without_shader_f16, cases[k].want);
    mpk_mlc_build_result_free(&out);
    mpk_mlc_params_free(p);
    json_decref(plist);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_sidecars_byte_exact),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_f16_feature_warning),
      cmocka_unit_test(test_program_sources),
      cmocka_unit_test(test_ascii_escaping),
      cmocka_unit_test(test_atomic_write),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
