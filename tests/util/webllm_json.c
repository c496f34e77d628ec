#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "webllm_json.h"
#include "mlc/mlc.h"

/* The tasks through the public mpk_mlc_package_tasks_json: what the JS and Python bindings hand out. */
json_t *wj_package(const mpk_mlc_package *pkg) {
  char *text = NULL;
  mpk_error err;
  if (mpk_mlc_package_tasks_json(pkg, &text, NULL, &err)) fail_msg("tasks json: %s", tu_err(&err));
  json_t *tasks = json_loads(text, 0, NULL);
  mpk_free(text);
  if (!tasks) fail_msg("mpk_mlc_package_tasks_json wrote text jansson cannot read");
  return json_pack("{s:s, s:I, s:s, s:s, s:{s:s, s:s}, s:o}", "schema", "mlc.model-package",
                   "schema_version", (json_int_t)pkg->schema_version, "chat_config", pkg->chat_config,
                   "interface_id", pkg->interface_id, "weights", "manifest", pkg->weights_manifest,
                   "parameter_schema_id", pkg->parameter_schema_id, "tasks", tasks);
}

static json_t *entries(const mpk_mlc_entry *e, size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; i < n; i++) json_object_set_new(o, e[i].key, json_string(e[i].value));
  return o;
}

json_t *wj_artifact(const mpk_mlc_artifact *art) {
  json_t *programs = json_object();
  for (size_t i = 0; i < art->n_programs; i++) {
    const mpk_mlc_program *p = &art->programs[i];
    json_object_set_new(programs, p->name,
                        json_pack("{s:s, s:o, s:o, s:o}", "kind", p->kind, "exports",
                                  entries(p->exports, p->n_exports), "adapters",
                                  entries(p->adapters, p->n_adapters), "adapter_dtypes",
                                  entries(p->adapter_dtypes, p->n_adapter_dtypes)));
  }
  json_t *features = json_array();
  for (size_t i = 0; i < art->n_required_features; i++)
    json_array_append_new(features, json_string(art->required_features[i]));
  return json_pack("{s:s, s:I, s:s, s:s, s:o, s:{s:o, s:I, s:I}}", "schema", "mlc.compiled-program",
                   "schema_version", (json_int_t)art->schema_version, "interface_id", art->interface_id,
                   "parameter_schema_id", art->parameter_schema_id, "programs", programs, "resources",
                   "required_features", features, "max_storage_buffer_binding_size",
                   (json_int_t)art->max_storage_buffer_binding_size, "estimated_device_memory_bytes",
                   (json_int_t)art->estimated_device_memory_bytes);
}

static json_t *bound(const mpk_mlc_bound_input *b, int with_dtype) {
  /* Reuse the normalized task JSON for the processor and prompt of this one input. */
  mpk_mlc_input copy = *b->input;
  mpk_mlc_task t = {.name = "t", .executor = "e", .output = "o", .inputs = &copy, .n_inputs = 1};
  json_t *tasks = mpk_mlc_tasks_json(&t, 1);
  json_t *in = json_object_get(json_object_get(json_object_get(tasks, "t"), "inputs"), copy.name);
  json_t *o = json_pack("{s:s, s:s, s:O, s:O}", "adapter", b->adapter, "adapter_function",
                        b->adapter_function, "processor", json_object_get(in, "processor"), "prompt",
                        json_object_get(in, "prompt"));
  if (with_dtype) json_object_set_new(o, "dtype", json_string(b->dtype));
  json_decref(tasks);
  return o;
}

json_t *wj_binding(const mpk_mlc_binding *b) {
  json_t *kinds = json_array();
  if (b->has_audio) json_array_append_new(kinds, json_string("audio"));
  if (b->has_image) json_array_append_new(kinds, json_string("image"));
  return json_pack("{s:s, s:{s:s, s:s, s:s}, s:o, s:o, s:o, s:s}", "executor", b->executor, "generation",
                   "inputs", b->generation_inputs == MPK_MLC_GENERATION_TOKENS ? "tokens" : "embeds",
                   "prefill", b->prefill, "decode", b->decode, "audio_input",
                   b->has_audio ? bound(&b->audio, 0) : json_null(), "image_input",
                   b->has_image ? bound(&b->image, 1) : json_null(), "supported_input_kinds", kinds,
                   "kv_state_kind_implied", mpk_mlc_kv_state_kind_name(b->kv_state_kind_implied));
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
