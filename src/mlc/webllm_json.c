/* WebLLM 0.2.86's shapes: a parsed package, compiled program and binding written as the objects its
   parseModelPackageManifest, parseCompiledProgramArtifact and resolveChatCompletionArtifact return
   (what the conformance vectors record). One place for the JS package (js/wasm/api.c), the Python
   binding and the C conformance tests (tests/util/webllm_json.c). */
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

/* Dump `root` (consumed) as compact UTF-8 into *out (freed with mpk_free). */
static int dump(json_t *root, const char *what, char **out, size_t *out_len, mpk_error *err) {
  char *text = root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(root);
  if (!text) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory writing the %s", what);
  *out = text; /* jansson allocates with malloc: mpk_free releases it */
  if (out_len) *out_len = strlen(text);
  return 0;
}

int mpk_mlc_package_json(const mpk_mlc_package *pkg, char **out, size_t *out_len, mpk_error *err) {
  if (out) *out = NULL;
  if (!pkg || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  json_t *tasks = mpk_mlc_tasks_json(pkg->tasks, pkg->n_tasks);
  json_t *root = tasks ? json_pack("{s:s, s:I, s:s, s:s, s:{s:s, s:s}, s:o}", "schema", "mlc.model-package",
                                   "schema_version", (json_int_t)pkg->schema_version, "chat_config", pkg->chat_config,
                                   "interface_id", pkg->interface_id, "weights", "manifest", pkg->weights_manifest,
                                   "parameter_schema_id", pkg->parameter_schema_id, "tasks", tasks)
                       : NULL;
  return dump(root, "package", out, out_len, err);
}

static json_t *entries(const mpk_mlc_entry *e, size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < n; i++) json_object_set_new(o, e[i].key, json_string(e[i].value));
  return o;
}

/* The artifact object (also _metadata.artifact in the JS package's readMetadata). New reference. */
static json_t *artifact_tree(const mpk_mlc_artifact *art) {
  json_t *programs = json_object();
  for (size_t i = 0; programs && i < art->n_programs; i++) {
    const mpk_mlc_program *p = &art->programs[i];
    json_object_set_new(programs, p->name,
                        json_pack("{s:s, s:o, s:o, s:o}", "kind", p->kind, "exports", entries(p->exports, p->n_exports),
                                  "adapters", entries(p->adapters, p->n_adapters), "adapter_dtypes",
                                  entries(p->adapter_dtypes, p->n_adapter_dtypes)));
  }
  json_t *features = json_array();
  for (size_t i = 0; features && i < art->n_required_features; i++)
    json_array_append_new(features, json_string(art->required_features[i]));
  return json_pack("{s:s, s:I, s:s, s:s, s:o, s:{s:o, s:I, s:I}}", "schema", "mlc.compiled-program",
                   "schema_version", (json_int_t)art->schema_version, "interface_id", art->interface_id,
                   "parameter_schema_id", art->parameter_schema_id, "programs", programs, "resources",
                   "required_features", features, "max_storage_buffer_binding_size",
                   (json_int_t)art->max_storage_buffer_binding_size, "estimated_device_memory_bytes",
                   (json_int_t)art->estimated_device_memory_bytes);
}

int mpk_mlc_artifact_json(const mpk_mlc_artifact *art, char **out, size_t *out_len, mpk_error *err) {
  if (out) *out = NULL;
  if (!art || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  return dump(artifact_tree(art), "compiled program", out, out_len, err);
}

/* A bound input: its adapter, and its processor and prompt as the package's normalized tasks write
   them (mpk_mlc_input_json). */
static json_t *bound_json(const mpk_mlc_bound_input *b, bool with_dtype) {
  json_t *in = b->input ? mpk_mlc_input_json(b->input) : NULL;
  if (!in) return NULL;
  json_t *prompt = json_object_get(in, "prompt");
  json_t *o = json_pack("{s:s, s:s, s:O, s:O}", "adapter", b->adapter, "adapter_function", b->adapter_function,
                        "processor", json_object_get(in, "processor"), "prompt", prompt ? prompt : json_null());
  if (o && with_dtype) json_object_set_new(o, "dtype", json_string(b->dtype));
  json_decref(in);
  return o;
}

int mpk_mlc_binding_json(const mpk_mlc_binding *b, char **out, size_t *out_len, mpk_error *err) {
  if (out) *out = NULL;
  if (!b || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  json_t *kinds = json_array();
  if (kinds && b->has_audio) json_array_append_new(kinds, json_string("audio"));
  if (kinds && b->has_image) json_array_append_new(kinds, json_string("image"));
  json_t *root = json_pack(
      "{s:s, s:{s:s, s:s, s:s}, s:o, s:o, s:o, s:s}", "executor", b->executor, "generation", "inputs",
      b->generation_inputs == MPK_MLC_GENERATION_TOKENS ? "tokens" : "embeds", "prefill", b->prefill, "decode",
      b->decode, "audio_input", b->has_audio ? bound_json(&b->audio, false) : json_null(), "image_input",
      b->has_image ? bound_json(&b->image, true) : json_null(), "supported_input_kinds", kinds,
      "kv_state_kind_implied", mpk_mlc_kv_state_kind_name(b->kv_state_kind_implied));
  return dump(root, "binding", out, out_len, err);
}
