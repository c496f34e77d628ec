/* Device fit: totals of five real libraries against WebLLM's own figures, and the rules around
   them (missing fields, named dimensions, context, dtypes, devices too small). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---------------------------------------------------------------- helpers */

static const char *lib_rel(const char *lib) {
  static char rel[512];
  snprintf(rel, sizeof rel, "realdata/mlc-lib-metadata/%s.metadata.json", lib);
  return rel;
}

static mpk_mlc_metadata *load_md(const char *lib) {
  mpk_mlc_metadata *md = NULL;
  mpk_error err;
  if (mpk_mlc_metadata_load(tu_shared(lib_rel(lib)), &md, &err)) fail_msg("%s: %s", lib, tu_err(&err));
  return md;
}

static json_t *load_md_json(const char *lib) { return tu_load_json(tu_shared(lib_rel(lib))); }

static mpk_mlc_metadata *md_from_json(const json_t *root) {
  char *text = tu_dumps(root);
  mpk_mlc_metadata *md = NULL;
  mpk_error err;
  if (mpk_mlc_metadata_from_bytes(text, strlen(text), "test.json", &md, &err)) fail_msg("%s", tu_err(&err));
  free(text);
  return md;
}

#define GEMMA "gemma-2-2b-it-q4f16_1-ctx4k_cs1k-webgpu"
static const mpk_mlc_named_dim gemma_dims[] = {{"vocab_size", 256000}};

/* Compute on a modified copy of the gemma-2 metadata; returns the code, error in *err. */
static int compute_modified(json_t *root, int64_t context, mpk_mlc_fit *fit, mpk_error *err) {
  mpk_mlc_metadata *md = md_from_json(root);
  mpk_error_clear(err);
  int rc = mpk_mlc_fit_compute(md, NULL, gemma_dims, 1, context, fit, err);
  mpk_mlc_metadata_free(md);
  json_decref(root);
  return rc;
}

static void write_text(const char *dir, const char *name, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void rm_rf(const char *dir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* ---------------------------------------------------------------- WebLLM's own figures */

/* vram_required_MB of these models in WebLLM 0.2.86's prebuiltAppConfig (npm @mlc-ai/web-llm@0.2.86,
   lib/index.js; each model there is run with context_window_size 4096). "MB" is MiB (2^20 bytes):
   that is the unit MLC's model_metadata tool prints and the one these figures agree with. Named
   dimension values: shared/realdata/mlc-lib-metadata/named-dimensions.json. `total` is our figure in
   bytes, pinned (docs/fit.md). */
static const struct {
  const char *lib;
  int64_t vocab_size; /* 0: the library names no dimension */
  double webllm_mib;
  int64_t total, params, kv, workspace;
} webllm[] = {
    {"Llama-3.2-1B-Instruct-q0f16-ctx4k_cs1k-webgpu", 128256, 2573.13, 2698121216, 2471628800, 134217728, 92274688},
    {"Mistral-7B-Instruct-v0.3-q4f16_1-ctx4k_cs1k-webgpu", 32768, 4573.39, 4769464320, 4077395968, 536870912, 155197440},
    {"Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu", 32064, 3672.07, 3850440704, 2149644288, 1610612736, 90183680},
    {"Qwen2-1.5B-Instruct-q4f16_1-ctx4k_cs1k-webgpu", 0, 1629.75, 1703214080, 868547584, 117440512, 717225984},
    {GEMMA, 256000, 1895.3, 1987707392, 1470915072, 436207616, 80584704},
};

static void test_webllm_figures(void **state) {
  (void)state;
  json_t *named = tu_load_json(tu_shared("realdata/mlc-lib-metadata/named-dimensions.json"));
  for (size_t i = 0; i < sizeof webllm / sizeof webllm[0]; i++) {
    /* The named dimension values from the shared file, checked against the table above. */
    json_t *v = json_object_get(json_object_get(named, webllm[i].lib), "vocab_size");
    assert_int_equal(v ? json_integer_value(v) : 0, webllm[i].vocab_size);
    mpk_mlc_named_dim dims[] = {{"vocab_size", webllm[i].vocab_size}};
    mpk_mlc_metadata *md = load_md(webllm[i].lib);
    mpk_mlc_fit f;
    mpk_error err;
    if (mpk_mlc_fit_compute(md, NULL, dims, webllm[i].vocab_size ? 1 : 0, 4096, &f, &err))
      fail_msg("%s: %s", webllm[i].lib, tu_err(&err));
    assert_true(f.complete);
    assert_int_equal(f.parameter_bytes, webllm[i].params);
    assert_int_equal(f.kv_cache_bytes, webllm[i].kv);
    assert_int_equal(f.workspace_bytes, webllm[i].workspace);
    assert_int_equal(f.total_bytes, webllm[i].total);
    assert_int_equal(f.total_bytes, f.parameter_bytes + f.kv_cache_bytes + f.workspace_bytes);
    assert_int_equal(f.kv_cache_bytes, f.kv_layers * 2 * f.kv_heads * f.kv_head_dim * 4096 * 2);
    assert_string_equal(f.kv_dtype, "float16");
    assert_int_equal(f.context_source, MPK_MLC_FIT_CONTEXT_GIVEN);
    double ratio = ((double)f.total_bytes / (1024.0 * 1024.0)) / webllm[i].webllm_mib;
    if (ratio < 0.99 || ratio > 1.01)
      fail_msg("%s: %.2f MiB vs WebLLM %.2f: ratio %.4f", webllm[i].lib, (double)f.total_bytes / 1048576.0,
               webllm[i].webllm_mib, ratio);
    mpk_mlc_metadata_free(md);
  }
  json_decref(named);
}

/* The parts that make the totals, on one model: gemma-2 2B. */
static void test_gemma_parts(void **state) {
  (void)state;
  mpk_mlc_metadata *md = load_md(GEMMA);
  mpk_mlc_fit f;
  mpk_error err;
  assert_int_equal(mpk_mlc_fit_compute(md, NULL, gemma_dims, 1, 0, &f, &err), 0);
  assert_int_equal(f.kv_layers, 26);
  assert_int_equal(f.kv_heads, 4);
  assert_int_equal(f.kv_head_dim, 256);
  assert_int_equal(f.kv_bytes_per_token, 26 * 2 * 4 * 256 * 2);
  assert_int_equal(f.context, 4096); /* the library's */
  assert_int_equal(f.context_source, MPK_MLC_FIT_CONTEXT_LIBRARY);
  assert_string_equal(f.context_field, "context_window_size");
  assert_string_equal(f.quantization, "q4f16_1");
  assert_string_equal(f.workspace_function, "batch_prefill");
  assert_int_equal(f.max_binding_bytes, INT64_C(256000) * 288 * 4);
  assert_string_equal(f.max_binding_parameter, "model.embed_tokens.q_weight");
  assert_true(f.uses_float16);
  /* A shorter context: only the KV cache changes. */
  mpk_mlc_fit g;
  assert_int_equal(mpk_mlc_fit_compute(md, NULL, gemma_dims, 1, 1024, &g, &err), 0);
  assert_int_equal(g.kv_cache_bytes, f.kv_cache_bytes / 4);
  assert_int_equal(g.total_bytes, f.total_bytes - 3 * f.kv_cache_bytes / 4);
  mpk_mlc_metadata_free(md);
}

/* q4f32_1 keeps its KV cache in float32; ties in memory_usage go to the smallest name. */
static void test_float32_and_ties(void **state) {
  (void)state;
  mpk_mlc_metadata *md = load_md("Qwen2-0.5B-Instruct-q4f32_1-ctx4k_cs1k-webgpu");
  mpk_mlc_fit f;
  mpk_error err;
  assert_int_equal(mpk_mlc_fit_compute(md, NULL, NULL, 0, 4096, &f, &err), 0);
  assert_string_equal(f.kv_dtype, "float32");
  assert_int_equal(f.kv_cache_bytes, INT64_C(24) * 2 * 2 * 64 * 4096 * 4);
  assert_false(f.uses_float16);
  mpk_mlc_metadata_free(md);

  md = load_md("Llama-3.2-1B-Instruct-q0f16-ctx4k_cs1k-webgpu");
  mpk_mlc_named_dim d[] = {{"vocab_size", 128256}};
  assert_int_equal(mpk_mlc_fit_compute(md, NULL, d, 1, 0, &f, &err), 0);
  /* three functions need 92274688 bytes */
  assert_string_equal(f.workspace_function, "batch_prefill_to_last_hidden_states");
  mpk_mlc_metadata_free(md);

  static const struct {
    const char *q, *dtype;
  } q[] = {{"q0f32", "float32"}, {"q0f16", "float16"}, {"q4bf16_0", "bfloat16"}, {"e4m3_e4m3_f16", "float16"},
           {"q3f16_1", "float16"}};
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    json_t *root = load_md_json(GEMMA);
    json_object_set_new(root, "quantization", json_string(q[i].q));
    assert_int_equal(compute_modified(root, 0, &f, &err), 0);
    assert_string_equal(f.kv_dtype, q[i].dtype);
  }
}

/* ---------------------------------------------------------------- fail closed */

static void test_missing_fields(void **state) {
  (void)state;
  mpk_mlc_fit f;
  mpk_error err;
  json_t *root = load_md_json(GEMMA);
  json_object_del(root, "kv_cache");
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_ENOTFOUND);
  assert_string_equal(err.file, "_metadata");
  assert_string_equal(err.pointer, "/kv_cache");
  assert_non_null(strstr(err.message, "_metadata.kv_cache"));
  assert_int_equal(f.total_bytes, -1); /* nothing half-filled */

  root = load_md_json(GEMMA);
  json_object_del(json_object_get(root, "kv_cache"), "head_dim");
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_ENOTFOUND);
  assert_string_equal(err.pointer, "/kv_cache/head_dim");

  root = load_md_json(GEMMA);
  json_object_set_new(json_object_get(root, "kv_cache"), "num_key_value_heads", json_integer(0));
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/kv_cache/num_key_value_heads");

  root = load_md_json(GEMMA);
  json_object_set_new(json_object_get(root, "kv_cache"), "kv_lora_rank", json_integer(512));
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_EUNSUPPORTED);
  assert_string_equal(err.pointer, "/kv_cache/kv_lora_rank");

  root = load_md_json(GEMMA);
  json_object_del(root, "memory_usage");
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_ENOTFOUND);
  assert_string_equal(err.pointer, "/memory_usage");

  root = load_md_json(GEMMA);
  json_object_set_new(json_object_get(root, "memory_usage"), "prefill", json_integer(-1));
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/memory_usage/prefill");

  root = load_md_json(GEMMA);
  json_object_del(root, "quantization");
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_ENOTFOUND);
  assert_string_equal(err.pointer, "/quantization");

  root = load_md_json(GEMMA);
  json_object_set_new(root, "quantization", json_string("awq"));
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "\"awq\""));

  root = load_md_json(GEMMA);
  json_object_set_new(root, "context_window_size", json_integer(-1));
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_ENOTFOUND);
  assert_string_equal(err.pointer, "/context_window_size");

  root = load_md_json(GEMMA);
  json_object_set_new(root, "tensor_parallel_shards", json_integer(2));
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_EUNSUPPORTED);
  assert_string_equal(err.pointer, "/tensor_parallel_shards");

  root = load_md_json(GEMMA);
  json_object_set_new(root, "kv_state_kind", json_string("rnn_state"));
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_EUNSUPPORTED);
  assert_string_equal(err.pointer, "/kv_state_kind");

  root = load_md_json(GEMMA);
  json_object_set_new(json_object_get(root, "kv_cache"), "head_dim", json_integer(INT64_C(1) << 40));
  assert_int_equal(compute_modified(root, 0, &f, &err), MPK_ELIMIT);
}

static void test_unknown_named_dimension(void **state) {
  (void)state;
  mpk_mlc_metadata *md = load_md(GEMMA);
  mpk_mlc_fit f;
  mpk_error err;
  mpk_mlc_named_dim other[] = {{"hidden_size", 2304}};
  assert_int_equal(mpk_mlc_fit_compute(md, NULL, other, 1, 0, &f, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "named dimension \"vocab_size\""));
  assert_non_null(strstr(err.message, "parameter model.embed_tokens.q_weight"));
  assert_string_equal(err.file, "_metadata");
  assert_string_equal(err.pointer, "/params/0/shape/0");
  mpk_mlc_metadata_free(md);
}

/* An embedding model (snowflake-arctic-embed: no kv_cache, only prefill in memory_usage): parameters
   and workspace, no KV cache; a decoder that lost its kv_cache is still refused. */
static void test_embedding_model(void **state) {
  (void)state;
  mpk_mlc_metadata *md = load_md("snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu");
  mpk_mlc_fit f;
  mpk_error err;
  int rc = mpk_mlc_fit_compute(md, NULL, NULL, 0, 0, &f, &err);
  if (rc) fail_msg("%s", tu_err(&err));
  assert_int_equal(f.complete, 1);
  assert_int_equal(f.kv_cache_bytes, 0);
  assert_string_equal(f.kv_none_reason, "embedding model");
  assert_null(f.kv_dtype);
  assert_int_equal(f.workspace_bytes, 117456896);
  assert_true(f.parameter_bytes > 0);
  assert_int_equal(f.total_bytes, f.parameter_bytes + f.workspace_bytes);
  mpk_mlc_metadata_free(md);
  /* a decode function without kv_cache: the cache would be left out, so refused */
  json_t *root = load_md_json("snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu");
  json_object_set_new(json_object_get(root, "memory_usage"), "decode", json_integer(1));
  md = md_from_json(root);
  json_decref(root);
  assert_int_equal(mpk_mlc_fit_compute(md, NULL, NULL, 0, 0, &f, &err), MPK_ENOTFOUND);
  assert_string_equal(err.pointer, "/kv_cache");
  mpk_mlc_metadata_free(md);
}

static void test_other_state_kinds(void **state) {
  (void)state;
  mpk_mlc_fit f;
  mpk_error err;
  /* no KV state: nothing to count, kv_cache not needed */
  json_t *root = load_md_json(GEMMA);
  json_object_set_new(root, "kv_state_kind", json_string("none"));
  json_object_del(root, "kv_cache");
  assert_int_equal(compute_modified(root, 0, &f, &err), 0);
  assert_int_equal(f.kv_cache_bytes, 0);
  assert_null(f.kv_dtype);
  assert_int_equal(f.total_bytes, f.parameter_bytes + f.workspace_bytes);
  /* a sliding window sizes the cache when there is no context window (as WebLLM does) */
  root = load_md_json(GEMMA);
  json_object_set_new(root, "context_window_size", json_integer(-1));
  json_object_set_new(root, "sliding_window_size", json_integer(1024));
  assert_int_equal(compute_modified(root, 0, &f, &err), 0);
  assert_int_equal(f.context, 1024);
  assert_string_equal(f.context_field, "sliding_window_size");
}

/* Only the artifact object: no params, no kv_cache. */
static void test_artifact_only(void **state) {
  (void)state;
  /* The artifact object of the bundled example library, alone in a JSON file. */
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/gemma4-audio/lib/gemma4-audio-webgpu.wasm", MPK_SOURCE_DIR);
  mpk_mlc_metadata *md = NULL;
  mpk_error err;
  if (mpk_mlc_metadata_load(path, &md, &err)) fail_msg("%s", tu_err(&err));
  json_error_t je;
  json_t *whole = json_loadb(md->json, md->json_len, 0, &je);
  assert_non_null(whole);
  mpk_mlc_metadata_free(md);
  md = md_from_json(json_object_get(whole, "artifact"));
  json_decref(whole);
  assert_true(md->artifact_only);
  mpk_mlc_fit f;
  assert_int_equal(mpk_mlc_fit_compute(md, NULL, NULL, 0, 0, &f, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "only the artifact"));
  mpk_mlc_metadata_free(md);
}

/* ---------------------------------------------------------------- against a device */

typedef struct {
  int n;
  mpk_error e[8];
} collected;

static void collect(void *ctx, const mpk_error *e) {
  collected *c = ctx;
  if (c->n < 8) c->e[c->n++] = *e;
}

static void test_device_too_small(void **state) {
  (void)state;
  mpk_mlc_metadata *md = load_md(GEMMA);
  mpk_mlc_fit f;
  mpk_error err;
  assert_int_equal(mpk_mlc_fit_compute(md, NULL, gemma_dims, 1, 4096, &f, &err), 0);
  const char *none[1] = {NULL};
  mpk_mlc_device dev = {.features = none, .has_features = 1, .max_storage_buffer_binding_size = 134217728};
  collected c = {0};
  int64_t one_gib = INT64_C(1) << 30;
  assert_int_equal(mpk_mlc_fit_check(&f, NULL, &dev, one_gib, collect, &c, &err), MPK_EMISMATCH);
  assert_int_equal(c.n, 3);
  assert_non_null(strstr(c.e[0].message, "the model needs 1987707392 bytes"));
  assert_non_null(strstr(c.e[0].message, "but the device has 1073741824"));
  assert_string_equal(err.message, c.e[0].message); /* err gets the first reason */
  assert_non_null(strstr(c.e[1].message, "parameter model.embed_tokens.q_weight is 294912000 bytes"));
  assert_non_null(strstr(c.e[2].message, "\"shader-f16\""));

  /* A device with enough of everything. */
  const char *f16[] = {"shader-f16"};
  mpk_mlc_device big = {.features = f16, .n_features = 1, .has_features = 1,
                        .max_storage_buffer_binding_size = INT64_C(1) << 30};
  c.n = 0;
  assert_int_equal(mpk_mlc_fit_check(&f, NULL, &big, 2 * one_gib, collect, &c, &err), 0);
  assert_int_equal(c.n, 0);
  /* Exactly enough memory fits; one byte less does not. */
  assert_int_equal(mpk_mlc_fit_check(&f, NULL, NULL, f.total_bytes, NULL, NULL, &err), 0);
  assert_int_equal(mpk_mlc_fit_check(&f, NULL, NULL, f.total_bytes - 1, NULL, NULL, &err), MPK_EMISMATCH);
  /* Nothing given: nothing to fail. */
  assert_int_equal(mpk_mlc_fit_check(&f, NULL, NULL, -1, NULL, NULL, &err), 0);
  mpk_mlc_metadata_free(md);
}

/* The bundled example library declares an artifact: its required_features and binding size are
   WebLLM's checks. Its whole fit is computed; from the weights alone it is incomplete. */
static void test_artifact_device_checks(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/gemma4-audio/lib/gemma4-audio-webgpu.wasm", MPK_SOURCE_DIR);
  mpk_mlc_metadata *md = NULL;
  mpk_error err;
  if (mpk_mlc_metadata_load(path, &md, &err)) fail_msg("%s", tu_err(&err));
  assert_non_null(md->artifact);
  mpk_mlc_fit f;
  assert_int_equal(mpk_mlc_fit_compute(md, NULL, NULL, 0, 0, &f, &err), 0);
  assert_true(f.complete);
  assert_int_equal(f.total_bytes, 704 + 65536 + 2048);
  mpk_mlc_params *p = NULL;
  assert_int_equal(mpk_mlc_params_from_metadata(md, &p, &err), 0);
  assert_int_equal(mpk_mlc_fit_compute(NULL, p, NULL, 0, 0, &f, &err), 0);
  assert_false(f.complete);
  assert_int_equal(f.parameter_bytes, 704);
  assert_int_equal(f.total_bytes, -1);
  const char *none[1] = {NULL};
  mpk_mlc_device dev = {.features = none, .has_features = 1, .max_storage_buffer_binding_size = 100};
  collected c = {0};
  assert_int_equal(mpk_mlc_fit_check(&f, md->artifact, &dev, 10000, collect, &c, &err), MPK_ENOTFOUND);
  assert_int_equal(c.n, 3);
  assert_non_null(strstr(c.e[0].message, "cannot tell"));
  assert_string_equal(c.e[1].message, "Compiled artifact requires maxStorageBufferBindingSize 512, but this device exposes 100");
  assert_string_equal(c.e[2].message, "Compiled artifact requires unsupported WebGPU feature \"shader-f16\"");
  assert_string_equal(c.e[2].pointer, "/resources/required_features/0");
  c.n = 0;
  assert_int_equal(mpk_mlc_fit_check(&f, md->artifact, NULL, 100, collect, &c, &err), MPK_EMISMATCH);
  assert_non_null(strstr(c.e[0].message, "the parameters alone need 704 bytes"));
  mpk_mlc_params_free(p);
  mpk_mlc_metadata_free(md);
}

/* ---------------------------------------------------------------- a package directory */

static void test_package_set_override(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  /* model_config gives a wrong vocab_size on purpose: the caller's value must win. */
  write_text(dir, "mlc-chat-config.json",
             "{\"model_type\":\"gemma2\",\"context_window_size\":2048,\"model_config\":{\"vocab_size\":1000,"
             "\"hidden_size\":2304}}");
  char lib[1024];
  snprintf(lib, sizeof lib, "%s", tu_shared(lib_rel(GEMMA)));
  mpk_mlc_fit_options o = {.lib_path = lib};
  mpk_mlc_fit_report *r = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), 0);
  int64_t small = r->fit.parameter_bytes;
  assert_non_null(r->chat_config_path);
  assert_null(r->weights_path);
  assert_int_equal(r->device_checked, 0);
  assert_int_equal(r->n_problems, 0);
  /* the library's context wins over the chat config's, with a note saying so */
  assert_int_equal(r->fit.context, 4096);
  assert_int_equal(r->n_notes, 1);
  assert_non_null(strstr(r->notes[0], "context_window_size is 2048"));
  mpk_mlc_fit_report_free(r);

  mpk_mlc_named_dim set[] = {{"vocab_size", 256000}};
  o.dims = set;
  o.n_dims = 1;
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), 0);
  assert_int_equal(r->fit.parameter_bytes, 1470915072);
  assert_true(r->fit.parameter_bytes > small);
  mpk_mlc_fit_report_free(r);

  /* A name no parameter uses is the caller's mistake, named. */
  mpk_mlc_named_dim typo[] = {{"vocab_sise", 256000}};
  o.dims = typo;
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), MPK_EINVAL);
  assert_null(r);
  assert_non_null(strstr(err.message, "\"vocab_sise\""));

  /* Too small a device, through the package call: every reason, and the library's path. */
  o.dims = set;
  const char *none[1] = {NULL};
  mpk_mlc_device dev = {.features = none, .has_features = 1, .max_storage_buffer_binding_size = -1};
  o.device = &dev;
  o.has_device_memory = 1;
  o.device_memory_bytes = INT64_C(1) << 30;
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), 0);
  assert_int_equal(r->device_checked, 1);
  assert_int_equal(r->n_problems, 2);
  assert_non_null(strstr(r->problems[0].message, "device memory"));
  assert_non_null(strstr(r->problems[1].message, "shader-f16"));
  mpk_mlc_fit_report_free(r);

  /* Errors about _metadata name the library file. */
  o = (mpk_mlc_fit_options){.lib_path = lib};
  write_text(dir, "mlc-chat-config.json", "{\"model_config\":{\"hidden_size\":2304}}");
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), MPK_ENOTFOUND);
  assert_string_equal(err.file, lib);
  assert_non_null(strstr(err.message, "\"vocab_size\""));
  rm_rf(dir);
}

static void test_package_context_and_weights(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  write_text(dir, "mlc-chat-config.json", "{\"context_window_size\":2048,\"model_config\":{\"vocab_size\":256000}}");
  /* A library that states no context: the chat config's is used. */
  json_t *root = load_md_json(GEMMA);
  json_object_del(root, "context_window_size");
  char *text = tu_dumps(root);
  write_text(dir, "lib.json", text);
  free(text);
  json_decref(root);
  char lib[1024];
  snprintf(lib, sizeof lib, "%s/lib.json", dir);
  mpk_mlc_fit_options o = {.lib_path = lib};
  mpk_mlc_fit_report *r = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), 0);
  assert_int_equal(r->fit.context, 2048);
  assert_int_equal(r->fit.context_source, MPK_MLC_FIT_CONTEXT_CHAT_CONFIG);
  assert_string_equal(r->fit.context_field, "context_window_size");
  mpk_mlc_fit_report_free(r);
  o.context = 512; /* given wins */
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), 0);
  assert_int_equal(r->fit.context, 512);
  assert_int_equal(r->fit.context_source, MPK_MLC_FIT_CONTEXT_GIVEN);
  mpk_mlc_fit_report_free(r);

  /* Without a library: the real ReaderLM-v2 tensor cache, parameters only. */
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s/'", tu_shared("realdata/mlc-packages/ReaderLM-v2-q4f16_1-MLC/tensor-cache.json"), dir);
  assert_int_equal(system(cmd), 0);
  o = (mpk_mlc_fit_options){0};
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), 0);
  assert_non_null(r->weights_path);
  assert_false(r->fit.complete);
  assert_int_equal(r->fit.parameter_bytes, 868547584); /* the same 311 parameters as Qwen2-1.5B */
  assert_int_equal(r->n_notes, 1);
  mpk_mlc_fit_report_free(r);
  o.has_device_memory = 1;
  o.device_memory_bytes = INT64_C(1) << 32;
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), 0);
  assert_int_equal(r->n_problems, 1); /* cannot tell: fail closed */
  assert_int_equal(r->problems[0].code, MPK_ENOTFOUND);
  mpk_mlc_fit_report_free(r);
  mpk_mlc_named_dim set[] = {{"vocab_size", 1}};
  o.dims = set;
  o.n_dims = 1;
  assert_int_equal(mpk_mlc_fit_package(dir, &o, &r, &err), MPK_EINVAL);
  rm_rf(dir);

  assert_int_equal(mpk_mlc_fit_package("/nonexistent/dir", NULL, &r, &err), MPK_ENOTFOUND);
  const char *empty = tu_tmpdir();
  assert_int_equal(mpk_mlc_fit_package(empty, NULL, &r, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "nothing to count"));
  rm_rf(empty);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_webllm_figures),
      cmocka_unit_test(test_gemma_parts),
      cmocka_unit_test(test_float32_and_ties),
      cmocka_unit_test(test_missing_fields),
      cmocka_unit_test(test_unknown_named_dimension),
      cmocka_unit_test(test_other_state_kinds),
      cmocka_unit_test(test_artifact_only),
      cmocka_unit_test(test_device_too_small),
      cmocka_unit_test(test_artifact_device_checks),
      cmocka_unit_test(test_package_set_override),
      cmocka_unit_test(test_package_context_and_weights),
      cmocka_unit_test(test_embedding_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
