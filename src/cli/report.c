/* The check report, for people and as JSON (schema: docs/check-report.md). */
#include <jansson.h>
#include <string.h>

#include "cli.h"

static const char *gen_name(mpk_mlc_generation_inputs g) {
  return g == MPK_MLC_GENERATION_TOKENS ? "tokens" : "embeds";
}

static void text_binding(FILE *out, const mpk_mlc_binding *b) {
  fprintf(out, "  binding:   chat.completions -> program \"%s\" (%s pair: prefill=%s decode=%s)\n",
          b->executor, gen_name(b->generation_inputs), b->prefill, b->decode);
  fprintf(out, "             embed_tokens=%s create_kv_cache=%s%s%s kv_state_kind=%s\n", b->embed_tokens,
          b->create_kv_cache, b->create_rnn_state ? " create_rnn_state=" : "",
          b->create_rnn_state ? b->create_rnn_state : "", mpk_mlc_kv_state_kind_name(b->kv_state_kind_implied));
  if (b->has_audio) {
    const mpk_mlc_audio_decode *a = &b->audio.input->audio;
    fprintf(out, "             audio input \"%s\" -> %s (%s, %lld Hz mono, %lld..%lld samples)\n",
            b->audio.input->name, b->audio.adapter_function, b->audio.dtype, (long long)a->sample_rate_hz,
            (long long)a->min_samples, (long long)a->max_samples);
  }
  if (b->has_image) {
    const mpk_mlc_image_decode *im = &b->image.input->image;
    fprintf(out, "             image input \"%s\" -> %s (%s, %lldx%lld %s, %lld embeddings)\n",
            b->image.input->name, b->image.adapter_function, b->image.dtype, (long long)im->height,
            (long long)im->width, im->resize_mode == MPK_MLC_RESIZE_STRETCH ? "stretch" : "center_crop",
            (long long)im->num_embeddings);
  }
}

void mpk_cli_report_text(FILE *out, const mpk_mlc_report *r) {
  fprintf(out, "modelpkg check %s\n", r->dir);
  if (r->package)
    fprintf(out, "  contract:  %s (interface_id %s, verified)\n", MPK_MLC_MANIFEST_FILENAME,
            r->package->interface_id);
  else if (r->has_manifest)
    fprintf(out, "  contract:  %s present but not loadable\n", MPK_MLC_MANIFEST_FILENAME);
  else
    fprintf(out, "  contract:  none declared\n");
  if (r->metadata) {
    const mpk_mlc_metadata *md = r->metadata;
    if (md->artifact_only)
      fprintf(out, "  library:   %s (an artifact object alone: no parameters to compare)\n", r->lib_path);
    else
      fprintf(out, "  library:   %s (model_type %s, kv_state_kind %s, %s)\n", r->lib_path,
              md->model_type ? md->model_type : "?", md->kv_state_kind ? md->kv_state_kind : "kv_cache (default)",
              md->artifact ? "declares _metadata.artifact" : "no _metadata.artifact");
    if (md->artifact) {
      const mpk_mlc_artifact *a = md->artifact;
      fprintf(out, "  resources: required_features [");
      for (size_t i = 0; i < a->n_required_features; i++)
        fprintf(out, "%s%s", i ? ", " : "", a->required_features[i]);
      fprintf(out, "], max_storage_buffer_binding_size %lld, estimated_device_memory_bytes %lld\n",
              (long long)a->max_storage_buffer_binding_size, (long long)a->estimated_device_memory_bytes);
    }
  }
  if (r->tensor_cache) {
    const mpk_mlc_tensor_cache *tc = r->tensor_cache;
    fprintf(out, "  weights:   %s: %zu parameter%s in %zu shard%s", r->tensor_cache_path, tc->n_records,
            tc->n_records == 1 ? "" : "s", tc->n_shards, tc->n_shards == 1 ? "" : "s");
    if (r->has_weights_resources)
      fprintf(out, ", %lld bytes (largest %lld)", (long long)r->weights_resources.estimated_device_memory_bytes,
              (long long)r->weights_resources.max_storage_buffer_binding_size);
    fprintf(out, ", %s\n", r->weights_verified ? "shards verified" : "shards not verified");
    if (r->weights_parameter_schema_id[0])
      fprintf(out, "             parameter_schema_id %s\n", r->weights_parameter_schema_id);
  }
  if (r->resolved) text_binding(out, &r->binding);
  for (size_t i = 0; i < r->n_notes; i++) fprintf(out, "  note: %s\n", r->notes[i]);
  for (size_t i = 0; i < r->n_problems; i++) {
    char line[2048];
    mpk_error_format(&r->problems[i], line, sizeof line);
    fprintf(out, "error: %s [%s]\n", line, mpk_code_name(r->problems[i].code));
  }
  if (r->n_problems) fprintf(out, "FAILED: %zu problem%s\n", r->n_problems, r->n_problems == 1 ? "" : "s");
  else fprintf(out, "OK: all checks hold\n");
}

static json_t *bound_json(const mpk_mlc_bound_input *b) {
  return json_pack("{s:s, s:s, s:s, s:s}", "input", b->input->name, "adapter", b->adapter,
                   "adapter_function", b->adapter_function, "dtype", b->dtype);
}

static json_t *binding_json(const mpk_mlc_binding *b) {
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:s}", "task", "chat.completions",
                        "executor", b->executor, "generation_inputs", gen_name(b->generation_inputs),
                        "embed_tokens", b->embed_tokens, "create_kv_cache", b->create_kv_cache,
                        "prefill", b->prefill, "decode", b->decode, "create_rnn_state",
                        mpk_cli_json_str(b->create_rnn_state), "kv_state_kind_implied",
                        mpk_mlc_kv_state_kind_name(b->kv_state_kind_implied));
  json_object_set_new(o, "audio", b->has_audio ? bound_json(&b->audio) : json_null());
  json_object_set_new(o, "image", b->has_image ? bound_json(&b->image) : json_null());
  return o;
}

int mpk_cli_report_json(FILE *out, const mpk_mlc_report *r) {
  json_t *root = mpk_cli_json_begin("check", r->n_problems == 0);
  json_object_set_new(root, "dir", json_string(r->dir));
  json_object_set_new(root, "contract", json_string(r->package ? "declared" : r->has_manifest ? "unloadable" : "none"));
  json_object_set_new(root, "interface_id",
                      json_pack("{s:o, s:o}", "declared", mpk_cli_json_str(r->package ? r->package->interface_id : NULL),
                                "computed", mpk_cli_json_str(r->computed_interface_id[0] ? r->computed_interface_id : NULL)));
  json_t *lib = json_null();
  if (r->lib_path) {
    const mpk_mlc_metadata *md = r->metadata;
    lib = json_pack("{s:s, s:b, s:o, s:o, s:b}", "path", r->lib_path, "loaded", md != NULL, "model_type",
                    mpk_cli_json_str(md ? md->model_type : NULL), "kv_state_kind",
                    mpk_cli_json_str(md ? md->kv_state_kind : NULL), "has_artifact", md && md->artifact);
    if (md && md->artifact) {
      const mpk_mlc_artifact *a = md->artifact;
      json_t *feats = json_array();
      for (size_t i = 0; i < a->n_required_features; i++) json_array_append_new(feats, json_string(a->required_features[i]));
      json_object_set_new(lib, "resources",
                          json_pack("{s:o, s:I, s:I}", "required_features", feats, "max_storage_buffer_binding_size",
                                    (json_int_t)a->max_storage_buffer_binding_size,
                                    "estimated_device_memory_bytes", (json_int_t)a->estimated_device_memory_bytes));
    }
  }
  json_object_set_new(root, "library", lib);
  json_t *weights = json_null();
  if (r->tensor_cache) {
    weights = json_pack("{s:s, s:I, s:I, s:o, s:b}", "tensor_cache", r->tensor_cache_path, "parameters",
                        (json_int_t)r->tensor_cache->n_records, "shards", (json_int_t)r->tensor_cache->n_shards,
                        "parameter_schema_id",
                        mpk_cli_json_str(r->weights_parameter_schema_id[0] ? r->weights_parameter_schema_id : NULL),
                        "verified", r->weights_verified);
    json_object_set_new(weights, "resources",
                        r->has_weights_resources
                            ? json_pack("{s:I, s:I}", "max_storage_buffer_binding_size",
                                        (json_int_t)r->weights_resources.max_storage_buffer_binding_size,
                                        "estimated_device_memory_bytes",
                                        (json_int_t)r->weights_resources.estimated_device_memory_bytes)
                            : json_null());
  }
  json_object_set_new(root, "weights", weights);
  json_object_set_new(root, "binding", r->resolved ? binding_json(&r->binding) : json_null());
  json_object_set_new(root, "problems", mpk_cli_json_problems(r->problems, r->n_problems));
  json_object_set_new(root, "notes", mpk_cli_json_strings(r->notes, r->n_notes));
  return mpk_cli_json_print(out, root);
}
