/* The producer: mlc-model-manifest.json (byte-identical to MLC's Python writer) and the
   `artifact` object for the compiled library, from a task description, the programs and the
   parameters. Both are re-read with the consumer's rules before they are handed out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The required features, sorted and de-duplicated. */
static json_t *features_json(const mpk_mlc_build_input *in, mpk_error *err) {
  const char **f = malloc((in->n_required_features ? in->n_required_features : 1) * sizeof *f);
  json_t *list = f ? json_array() : NULL;
  if (!list) {
    free(f);
    mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < in->n_required_features; i++) {
    if (!in->required_features[i] || !in->required_features[i][0]) {
      free(f);
      json_decref(list);
      mpk_fail(err, MPK_EINVAL, NULL, NULL, "required feature %zu is empty", i);
      return NULL;
    }
    f[i] = in->required_features[i];
  }
  mpk_sort(f, in->n_required_features, sizeof *f, cmp_str);
  for (size_t i = 0; i < in->n_required_features; i++)
    if (i == 0 || strcmp(f[i], f[i - 1]) != 0) json_array_append_new(list, json_string(f[i]));
  free(f);
  return list;
}

static json_t *entries_json(const mpk_mlc_entry *e, size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < n; i++) json_object_set_new(o, e[i].key, json_string(e[i].value));
  return o;
}

/* Programs as JSON: given text, the task file's "programs", or an existing artifact's. */
static int programs_json(const mpk_mlc_build_input *in, const json_t *wrapper, json_t **out, mpk_error *err) {
  *out = NULL;
  if (in->programs_json) {
    return mpk_json_parse(in->programs_json, in->programs_len, NULL, "programs", out, err);
  }
  const json_t *p = wrapper ? json_object_get(wrapper, "programs") : NULL;
  if (p) {
    *out = json_deep_copy(p);
    return *out ? 0 : mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  const mpk_mlc_artifact *a = in->programs_from;
  if (!a)
    return mpk_fail(err, MPK_EINVAL, "tasks", NULL,
                    "no programs: give them (\"programs\" beside \"tasks\", or a programs file), "
                    "or a library whose artifact declares them");
  json_t *all = json_object();
  for (size_t i = 0; all && i < a->n_programs; i++) {
    const mpk_mlc_program *pr = &a->programs[i];
    json_t *o = json_pack("{s:s, s:o}", "kind", pr->kind, "exports", entries_json(pr->exports, pr->n_exports));
    if (o && pr->n_adapters) json_object_set_new(o, "adapters", entries_json(pr->adapters, pr->n_adapters));
    if (o && pr->n_adapter_dtypes)
      json_object_set_new(o, "adapter_dtypes", entries_json(pr->adapter_dtypes, pr->n_adapter_dtypes));
    if (!o || json_object_set_new(all, pr->name, o)) {
      json_decref(all);
      all = NULL;
    }
  }
  *out = all;
  return all ? 0 : mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
}

/* Every task's executor and every adapter it names must be declared by the programs. */
static int check_references(const mpk_mlc_task *tasks, size_t n, const mpk_mlc_artifact *art, bool wrapped,
                            mpk_error *err) {
  for (size_t t = 0; t < n; t++) {
    mpk_path path;
    mpk_path_init(&path);
    if (wrapped) mpk_path_push_key(&path, "tasks");
    mpk_path_push_key(&path, tasks[t].name);
    const mpk_mlc_program *p = mpk_mlc_artifact_program(art, tasks[t].executor);
    if (!p) {
      mpk_path_push_key(&path, "executor");
      return mpk_fail(err, MPK_EMISMATCH, "tasks", path.buf,
                      "task \"%s\" names executor \"%s\", which the programs do not declare", tasks[t].name,
                      tasks[t].executor);
    }
    for (size_t i = 0; i < tasks[t].n_inputs; i++) {
      const mpk_mlc_input *in = &tasks[t].inputs[i];
      if (in->adapter && !mpk_mlc_entry_get(p->adapters, p->n_adapters, in->adapter)) {
        mpk_path_push_key(&path, "inputs");
        mpk_path_push_key(&path, in->name);
        mpk_path_push_key(&path, "adapter");
        return mpk_fail(err, MPK_EMISMATCH, "tasks", path.buf,
                        "input \"%s\" of task \"%s\" names adapter \"%s\", which program \"%s\" does not declare",
                        in->name, tasks[t].name, in->adapter, p->name);
      }
    }
  }
  return 0;
}

int mpk_mlc_build(const mpk_mlc_build_input *in, mpk_mlc_build_result *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out); /* releasable whatever happens next */
  if (!in || !out || !in->tasks_json || !in->params) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  json_t *root = NULL, *programs = NULL, *art_json = NULL, *sidecar = NULL, *features = NULL;
  mpk_arena *a = mpk_arena_new();
  mpk_mlc_artifact *art = NULL;
  mpk_mlc_package *pkg = NULL;
  int rc = a ? mpk_json_parse(in->tasks_json, in->tasks_len, NULL, "tasks", &root, err)
             : mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (rc) goto out;

  /* {"tasks": ..., "programs": ...} or the tasks object itself. */
  const json_t *wrapper = NULL, *tasks_value = root;
  if (json_is_object(root) && json_object_get(root, "tasks")) {
    bool only = true;
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) only &= strcmp(k, "tasks") == 0 || strcmp(k, "programs") == 0;
    if (only) {
      wrapper = root;
      tasks_value = json_object_get(root, "tasks");
    }
  }
  mpk_jv v = {.file = "tasks", .err = err};
  mpk_path_init(&v.path);
  if (wrapper) mpk_path_push_key(&v.path, "tasks");
  mpk_mlc_task *tasks = NULL;
  size_t n_tasks = 0;
  if ((rc = mpk_mlc_parse_tasks(&v, tasks_value, a, &tasks, &n_tasks))) goto out;
  if ((rc = mpk_mlc_tasks_interface_id(tasks, n_tasks, out->interface_id, err))) goto out;
  if ((rc = mpk_mlc_parameter_schema_id(in->params, out->parameter_schema_id, err))) goto out;
  if ((rc = mpk_mlc_params_resources(in->params, in->dims, in->n_dims, &out->resources, err))) goto out;
  {
    bool f16 = false, f16_required = false;
    for (size_t i = 0; i < in->params->n; i++) f16 |= mpk_dtype_is(in->params->items[i].dtype, MPK_DT_FLOAT16);
    for (size_t i = 0; i < in->n_required_features; i++)
      f16_required |= in->required_features[i] && strcmp(in->required_features[i], "shader-f16") == 0;
    out->f16_without_shader_f16 = f16 && !f16_required;
  }
  if (!(features = features_json(in, err))) {
    rc = err ? err->code : MPK_ENOMEM;
    goto out;
  }
  if ((rc = programs_json(in, wrapper, &programs, err))) goto out;

  art_json = json_pack("{s:s, s:i, s:s, s:s, s:O, s:{s:O, s:I, s:I}}", "schema", "mlc.compiled-program",
                       "schema_version", 1, "interface_id", out->interface_id, "parameter_schema_id",
                       out->parameter_schema_id, "programs", programs, "resources", "required_features", features,
                       "max_storage_buffer_binding_size", (json_int_t)out->resources.max_storage_buffer_binding_size,
                       "estimated_device_memory_bytes", (json_int_t)out->resources.estimated_device_memory_bytes);
  if (!art_json) {
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    goto out;
  }
  /* The programs must be what a consumer accepts, and must declare what the tasks name. */
  if ((rc = mpk_mlc_artifact_from_json(art_json, "artifact", &art, err))) goto out;
  if ((rc = check_references(tasks, n_tasks, art, wrapper != NULL, err))) goto out;

  sidecar = json_pack("{s:s, s:i, s:s, s:s, s:{s:s, s:s}, s:o}", "schema", "mlc.model-package", "schema_version", 1,
                      "chat_config", MPK_MLC_CHAT_CONFIG_FILENAME, "interface_id", out->interface_id, "weights",
                      "manifest", MPK_MLC_TENSOR_CACHE_FILENAME, "parameter_schema_id", out->parameter_schema_id,
                      "tasks", mpk_mlc_tasks_json(tasks, n_tasks));
  if (!sidecar) {
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    goto out;
  }
  if ((rc = mpk_json_write_document(sidecar, false, &out->manifest, &out->manifest_len, err))) goto out;
  if ((rc = mpk_json_write_document(art_json, false, &out->artifact, &out->artifact_len, err))) goto out;

  /* Read back what was written, as a consumer will. */
  if ((rc = mpk_mlc_package_parse(out->manifest, out->manifest_len, MPK_MLC_MANIFEST_FILENAME, 0, &pkg, err))) goto out;
  if (mpk_mlc_package_task(pkg, "chat.completions")) {
    mpk_mlc_binding b;
    if ((rc = mpk_mlc_resolve(pkg, art, &b, err))) goto out;
  }
out:
  mpk_mlc_package_free(pkg);
  mpk_mlc_artifact_free(art);
  json_decref(sidecar);
  json_decref(art_json);
  json_decref(programs);
  json_decref(features);
  json_decref(root);
  mpk_arena_free(a);
  if (rc) mpk_mlc_build_result_free(out);
  return rc;
}

void mpk_mlc_build_result_free(mpk_mlc_build_result *out) {
  if (!out) return;
  mpk_free(out->manifest);
  mpk_free(out->artifact);
  memset(out, 0, sizeof *out);
}
