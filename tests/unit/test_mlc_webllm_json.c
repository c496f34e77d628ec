/* The library's JSON for the bindings: WebLLM's objects (mpk_mlc_package_json, mpk_mlc_artifact_json,
   mpk_mlc_binding_json) written byte for byte, a planner read from its configuration as JSON
   (mpk_mlc_planner_parse: fields, defaults, refusals by pointer), a legacy plan as JSON
   (mpk_mlc_legacy_plan_json). The conformance vectors run them all through tests/conformance and the
   JS and Python suites. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define ID1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define ID2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static const char PACKAGE[] =
    "{\"schema\": \"mlc.model-package\", \"schema_version\": 1, \"interface_id\": \"" ID1 "\", "
    "\"weights\": {\"parameter_schema_id\": \"" ID2 "\", \"manifest\": \"tensor-cache.json\"}, "
    "\"tasks\": {\"chat.completions\": {\"executor\": \"generation\", \"inputs\": {\"text\": {\"processor\": "
    "\"tokenizer\"}, \"image\": {\"processor\": {\"kind\": \"image_decode\", \"format\": \"rgb_u8\", \"layout\": "
    "\"nhwc\", \"resize\": {\"mode\": \"center_crop\", \"height\": 336, \"width\": 336}, \"num_embeddings\": 576}, "
    "\"adapter\": \"image\", \"prompt\": {\"placeholder_token_id\": 32000}}}, \"output\": \"text\"}}}";

static const char ARTIFACT[] =
    "{\"schema\": \"mlc.compiled-program\", \"schema_version\": 1, \"interface_id\": \"" ID1 "\", "
    "\"parameter_schema_id\": \"" ID2 "\", \"programs\": {\"generation\": {\"kind\": \"token_generation\", "
    "\"exports\": {\"prefill_embeds\": \"prefill\", \"embed_tokens\": \"embed\", \"decode_embeds\": \"decode\", "
    "\"create_kv_cache\": \"create_tir_paged_kv_cache\"}, \"adapters\": {\"image\": \"image_embed\"}}}, "
    "\"resources\": {\"required_features\": [\"shader-f16\"], \"max_storage_buffer_binding_size\": 201326592, "
    "\"estimated_device_memory_bytes\": 2797972550}}";

static mpk_mlc_package *package(void) {
  mpk_mlc_package *pkg = NULL;
  mpk_error err;
  if (mpk_mlc_package_parse(PACKAGE, strlen(PACKAGE), NULL, 1, &pkg, &err)) fail_msg("%s", tu_err(&err));
  return pkg;
}

static mpk_mlc_artifact *artifact(void) {
  mpk_mlc_artifact *art = NULL;
  mpk_error err;
  if (mpk_mlc_artifact_parse(ARTIFACT, strlen(ARTIFACT), NULL, &art, &err)) fail_msg("%s", tu_err(&err));
  return art;
}

/* Text written by a *_json function (called first: rc): its length, then the text itself. */
static void expect_text(int rc, char *text, size_t n, const mpk_error *err, const char *want) {
  if (rc) fail_msg("%s", tu_err(err));
  assert_non_null(text);
  assert_int_equal(n, strlen(text));
  assert_string_equal(text, want);
  mpk_free(text);
}

static void test_package_json(void **state) {
  (void)state;
  mpk_mlc_package *pkg = package();
  char *text = NULL;
  size_t n = 0;
  mpk_error err;
  int rc;
  /* WebLLM's fields in its order, the normalized tasks (defaults filled: prefix/suffix) */
  rc = mpk_mlc_package_json(pkg, &text, &n, &err);
  expect_text(rc, text, n, &err,
              "{\"schema\":\"mlc.model-package\",\"schema_version\":1,\"chat_config\":\"mlc-chat-config.json\","
              "\"interface_id\":\"" ID1 "\",\"weights\":{\"manifest\":\"tensor-cache.json\",\"parameter_schema_id\":\"" ID2
              "\"},\"tasks\":{\"chat.completions\":{\"executor\":\"generation\",\"inputs\":{\"text\":{\"processor\":"
              "\"tokenizer\"},\"image\":{\"processor\":{\"kind\":\"image_decode\",\"format\":\"rgb_u8\",\"layout\":"
              "\"nhwc\",\"resize\":{\"mode\":\"center_crop\",\"height\":336,\"width\":336},\"num_embeddings\":576},"
              "\"adapter\":\"image\",\"prompt\":{\"prefix_token_ids\":[],\"placeholder_token_id\":32000,"
              "\"suffix_token_ids\":[]}}},\"output\":\"text\"}}}");
  text = (char *)1;
  assert_int_equal(mpk_mlc_package_json(NULL, &text, NULL, &err), MPK_EINVAL);
  assert_null(text); /* cleared on failure */
  assert_int_equal(mpk_mlc_package_json(pkg, NULL, NULL, &err), MPK_EINVAL);
  /* out_len may be NULL */
  assert_int_equal(mpk_mlc_package_json(pkg, &text, NULL, &err), 0);
  mpk_free(text);
  mpk_mlc_package_free(pkg);
}

static void test_artifact_json(void **state) {
  (void)state;
  mpk_mlc_artifact *art = artifact();
  char *text = NULL;
  size_t n = 0;
  mpk_error err;
  /* exports sorted by role, the empty adapter_dtypes present */
  int rc = mpk_mlc_artifact_json(art, &text, &n, &err);
  expect_text(rc, text, n, &err,
              "{\"schema\":\"mlc.compiled-program\",\"schema_version\":1,\"interface_id\":\"" ID1
              "\",\"parameter_schema_id\":\"" ID2 "\",\"programs\":{\"generation\":{\"kind\":\"token_generation\","
              "\"exports\":{\"create_kv_cache\":\"create_tir_paged_kv_cache\",\"decode_embeds\":\"decode\","
              "\"embed_tokens\":\"embed\",\"prefill_embeds\":\"prefill\"},\"adapters\":{\"image\":\"image_embed\"},"
              "\"adapter_dtypes\":{}}},\"resources\":{\"required_features\":[\"shader-f16\"],"
              "\"max_storage_buffer_binding_size\":201326592,\"estimated_device_memory_bytes\":2797972550}}");
  assert_int_equal(mpk_mlc_artifact_json(NULL, &text, &n, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_artifact_json(art, NULL, &n, &err), MPK_EINVAL);
  mpk_mlc_artifact_free(art);
}

static void test_binding_json(void **state) {
  (void)state;
  mpk_mlc_package *pkg = package();
  mpk_mlc_artifact *art = artifact();
  mpk_mlc_binding b;
  char *text = NULL;
  size_t n = 0;
  mpk_error err;
  if (mpk_mlc_resolve(pkg, art, &b, &err)) fail_msg("%s", tu_err(&err));
  /* the image input's processor and prompt as the normalized tasks write them, its default dtype */
  int rc = mpk_mlc_binding_json(&b, &text, &n, &err);
  expect_text(rc, text, n, &err,
              "{\"executor\":\"generation\",\"generation\":{\"inputs\":\"embeds\",\"prefill\":\"prefill\",\"decode\":"
              "\"decode\"},\"audio_input\":null,\"image_input\":{\"adapter\":\"image\",\"adapter_function\":"
              "\"image_embed\",\"processor\":{\"kind\":\"image_decode\",\"format\":\"rgb_u8\",\"layout\":\"nhwc\","
              "\"resize\":{\"mode\":\"center_crop\",\"height\":336,\"width\":336},\"num_embeddings\":576},\"prompt\":"
              "{\"prefix_token_ids\":[],\"placeholder_token_id\":32000,\"suffix_token_ids\":[]},\"dtype\":\"uint8\"},"
              "\"supported_input_kinds\":[\"image\"],\"kv_state_kind_implied\":\"kv_cache\"}");
  assert_int_equal(mpk_mlc_binding_json(NULL, &text, &n, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_binding_json(&b, NULL, &n, &err), MPK_EINVAL);
  mpk_mlc_artifact_free(art);
  mpk_mlc_package_free(pkg);
}

static mpk_mlc_planner *parse_ok(const char *json) {
  mpk_mlc_planner *p = NULL;
  mpk_error err;
  if (mpk_mlc_planner_parse(json, strlen(json), NULL, &p, &err)) fail_msg("%s: %s", json, tu_err(&err));
  return p;
}

static void expect_refused(const char *json, const char *file, int code, const char *want_file,
                           const char *pointer, const char *rule) {
  mpk_mlc_planner *p = (mpk_mlc_planner *)1;
  mpk_error err;
  int rc = mpk_mlc_planner_parse(json, strlen(json), file, &p, &err);
  if (rc != code) fail_msg("%s: returned %d (%s), not %d", json, rc, tu_err(&err), code);
  assert_null(p);
  assert_string_equal(err.file, want_file);
  if (pointer) assert_string_equal(err.pointer, pointer);
  if (rule && !strstr(err.message, rule)) fail_msg("%s: \"%s\" lacks \"%s\"", json, err.message, rule);
}

static void test_planner_parse(void **state) {
  (void)state;
  /* every field */
  mpk_mlc_planner *p = parse_ok(
      "{\"generation_inputs\": \"embeds\", \"embed_tokens\": \"embed\", \"prefill\": \"prefill_embeds\", "
      "\"decode\": \"decode_embeds\", \"audio\": {\"prompt\": {\"prefix_token_ids\": [256000], "
      "\"placeholder_token_id\": 258881, \"suffix_token_ids\": [258883, 1]}, \"adapter_function\": \"audio_embed\"}, "
      "\"image\": {\"prompt\": {\"placeholder_token_id\": 32000}, \"num_embeddings\": 576}, "
      "\"prefill_chunk_size\": 64, \"context_window_size\": 4096, \"sliding_window_size\": -1, "
      "\"system_prefix_token_ids\": [2, 3, 4]}");
  const mpk_mlc_prefill_config *c = &p->config;
  assert_int_equal(c->generation_inputs, MPK_MLC_GENERATION_EMBEDS);
  assert_string_equal(c->embed_tokens, "embed");
  assert_string_equal(c->prefill, "prefill_embeds");
  assert_string_equal(c->decode, "decode_embeds");
  assert_int_equal(c->prefill_chunk_size, 64);
  assert_int_equal(c->context_window_size, 4096);
  assert_int_equal(c->sliding_window_size, -1);
  assert_int_equal(c->n_system_prefix_token_ids, 3);
  assert_int_equal(c->system_prefix_token_ids[2], 4);
  assert_non_null(c->audio.prompt);
  assert_string_equal(c->audio.adapter_function, "audio_embed");
  assert_int_equal(c->audio.num_embeddings, 0);
  assert_int_equal(c->audio.prompt->n_prefix_token_ids, 1);
  assert_int_equal(c->audio.prompt->prefix_token_ids[0], 256000);
  assert_int_equal(c->audio.prompt->placeholder_token_id, 258881);
  assert_int_equal(c->audio.prompt->n_suffix_token_ids, 2);
  assert_int_equal(c->audio.prompt->suffix_token_ids[1], 1);
  assert_non_null(c->image.prompt);
  assert_null(c->image.adapter_function);
  assert_int_equal(c->image.num_embeddings, 576);
  assert_int_equal(c->image.prompt->n_prefix_token_ids, 0);
  assert_int_equal(c->image.prompt->placeholder_token_id, 32000);
  assert_null(p->prefill_chunk_size_from);
  mpk_mlc_planner_free(p);

  /* the defaults: tokens, no names, no media, context_window_size and sliding_window_size -1 (so a
     window must be given: both -1 is the planner's refusal) */
  p = parse_ok("{\"prefill_chunk_size\": 4, \"context_window_size\": 16, \"audio\": null, \"image\": {}}");
  c = &p->config;
  assert_int_equal(c->generation_inputs, MPK_MLC_GENERATION_TOKENS);
  assert_null(c->embed_tokens);
  assert_null(c->audio.prompt);
  assert_null(c->image.prompt);
  assert_int_equal(c->sliding_window_size, -1);
  assert_int_equal(c->n_system_prefix_token_ids, 0);
  mpk_mlc_planner_free(p);

  /* refusals: the field's pointer, the file ("prefill config" unless named) */
  const char *cfg = "prefill config";
  expect_refused("{\"prefill_chunk_size\": 4, \"context_window_size\": 16, \"prefil_chunk_size\": 4}", NULL,
                 MPK_EINVAL, cfg, "/prefil_chunk_size", "unknown field \"prefil_chunk_size\"");
  expect_refused("{\"prefill_chunk_size\": 4, \"context_window_size\": 16, \"audio\": {\"prompt\": "
                 "{\"placeholder_token_id\": \"x\"}}}",
                 "CONFIG.json", MPK_EINVAL, "CONFIG.json", "/audio/prompt", "placeholder_token_id");
  expect_refused("{\"image\": {\"prompt\": {\"placeholder_token_id\": 1, \"suffix\": []}}}", NULL, MPK_EINVAL, cfg,
                 "/image/prompt/suffix", "unknown field");
  expect_refused("{\"image\": {\"num_embeddings\": 1.5}}", NULL, MPK_EINVAL, cfg, "/image/num_embeddings",
                 "must be an integer");
  expect_refused("{\"image\": [1]}", NULL, MPK_EINVAL, cfg, "/image", "must be an object or null");
  expect_refused("{\"system_prefix_token_ids\": [1, \"2\"]}", NULL, MPK_EINVAL, cfg, "/system_prefix_token_ids/1",
                 "must be an integer");
  expect_refused("{\"system_prefix_token_ids\": 5}", NULL, MPK_EINVAL, cfg, "/system_prefix_token_ids",
                 "array of integers");
  expect_refused("{\"generation_inputs\": \"both\"}", NULL, MPK_EINVAL, cfg, "/generation_inputs", "\"tokens\"");
  expect_refused("{\"decode\": 3}", NULL, MPK_EINVAL, cfg, "/decode", "must be a string or null");
  expect_refused("[]", NULL, MPK_EINVAL, cfg, "", "must be an object");
  /* the planner's own checks after the reading (WebLLM's messages) */
  expect_refused("{\"prefill_chunk_size\": 0, \"context_window_size\": 16}", NULL, MPK_EINVAL, "", NULL,
                 "prefill_chunk_size");
  expect_refused("{\"prefill_chunk_size\": 4}", NULL, MPK_EINVAL, "", NULL, NULL);
  /* not JSON, or strict JSON's refusals: at their byte */
  expect_refused("{\"prefill_chunk_size\": 4,", NULL, MPK_EMALFORMED, cfg, NULL, "invalid JSON");
  expect_refused("{\"decode\": \"a\", \"decode\": \"b\"}", NULL, MPK_EMALFORMED, cfg, NULL, "duplicate");
  /* arguments */
  mpk_mlc_planner *out = (mpk_mlc_planner *)1;
  mpk_error err;
  assert_int_equal(mpk_mlc_planner_parse(NULL, 0, NULL, &out, &err), MPK_EINVAL);
  assert_null(out);
  assert_int_equal(mpk_mlc_planner_parse("{}", 2, NULL, NULL, &err), MPK_EINVAL);
}

/* A configuration read from JSON plans as the same configuration given as a struct. */
static void test_planner_parse_plans(void **state) {
  (void)state;
  mpk_mlc_planner *p = parse_ok("{\"prefill_chunk_size\": 4, \"context_window_size\": 16, "
                                "\"audio\": {\"prompt\": {\"placeholder_token_id\": 7}}}");
  const int32_t text[] = {1, 2, 3}, more[] = {4};
  const mpk_mlc_segment segs[] = {{.kind = MPK_MLC_SEGMENT_TEXT, .token_ids = text, .n_token_ids = 3},
                                  {.kind = MPK_MLC_SEGMENT_AUDIO, .rows = 3},
                                  {.kind = MPK_MLC_SEGMENT_TEXT, .token_ids = more, .n_token_ids = 1}};
  mpk_mlc_prefill_plan *plan = NULL;
  mpk_error err;
  if (mpk_mlc_prefill_plan_segments(p, 0, segs, 3, &plan, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(plan->prompt_length, 7);
  assert_int_equal(plan->n_items, 1);
  assert_int_equal(plan->items[0].offset, 3);
  assert_int_equal(plan->token_ids[4], 7);
  mpk_mlc_prefill_plan_free(plan);
  mpk_mlc_planner_free(p);
}

static void test_legacy_plan_json(void **state) {
  (void)state;
  const mpk_mlc_legacy_item items[] = {{0, 5}, {1, 3}, {0, 0}};
  mpk_mlc_legacy_plan *plan = NULL;
  char *text = NULL;
  size_t n = 0;
  mpk_error err;
  if (mpk_mlc_legacy_chunks(items, 3, 4, &plan, &err)) fail_msg("%s", tu_err(&err));
  int rc = mpk_mlc_legacy_plan_json(plan, &text, &n, &err);
  expect_text(rc, text, n, &err,
              "[{\"length\":4,\"pieces\":[{\"item\":0,\"start\":0,\"count\":4}]},"
              "{\"length\":4,\"pieces\":[{\"item\":0,\"start\":4,\"count\":1},{\"item\":1,\"start\":0,\"count\":3}]}]");
  assert_int_equal(mpk_mlc_legacy_plan_json(NULL, &text, &n, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_legacy_plan_json(plan, NULL, &n, &err), MPK_EINVAL);
  mpk_mlc_legacy_plan_free(plan);
  /* no items: no chunks */
  if (mpk_mlc_legacy_chunks(NULL, 0, 4, &plan, &err)) fail_msg("%s", tu_err(&err));
  rc = mpk_mlc_legacy_plan_json(plan, &text, NULL, &err);
  expect_text(rc, text, 2, &err, "[]");
  mpk_mlc_legacy_plan_free(plan);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_package_json),  cmocka_unit_test(test_artifact_json),
      cmocka_unit_test(test_binding_json),  cmocka_unit_test(test_planner_parse),
      cmocka_unit_test(test_planner_parse_plans), cmocka_unit_test(test_legacy_plan_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
