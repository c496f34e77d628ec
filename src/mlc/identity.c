/* interface_id: "sha256:" + hex SHA-256 of the canonical JSON of {"tasks": <normalized tasks>}.
   The tasks are rebuilt from the parsed structs, so defaults (min_samples 1, empty prefix and
   suffix) are filled and absent adapter/prompt are omitted, as the reference parsers do. */
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

static json_t *ids_json(const int64_t *ids, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_integer(ids[i]));
  return a;
}

static json_t *processor_json(const mpk_mlc_input *in) {
  switch (in->kind) {
    case MPK_MLC_PROCESSOR_NAMED:
      return json_string(in->processor_name);
    case MPK_MLC_PROCESSOR_AUDIO_DECODE:
      return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "kind", "audio_decode", "format", "pcm_f32",
                       "sample_rate_hz", (json_int_t)in->audio.sample_rate_hz, "channels",
                       (json_int_t)in->audio.channels, "min_samples", (json_int_t)in->audio.min_samples,
                       "max_samples", (json_int_t)in->audio.max_samples);
    case MPK_MLC_PROCESSOR_IMAGE_DECODE:
      return json_pack("{s:s, s:s, s:s, s:{s:s, s:I, s:I}, s:I}", "kind", "image_decode", "format",
                       "rgb_u8", "layout", "nhwc", "resize", "mode",
                       in->image.resize_mode == MPK_MLC_RESIZE_STRETCH ? "stretch" : "center_crop",
                       "height", (json_int_t)in->image.height, "width", (json_int_t)in->image.width,
                       "num_embeddings", (json_int_t)in->image.num_embeddings);
  }
  return NULL;
}

json_t *mpk_mlc_input_json(const mpk_mlc_input *in) {
  json_t *o = json_object();
  if (!o) return NULL;
  json_object_set_new(o, "processor", processor_json(in));
  if (in->adapter) json_object_set_new(o, "adapter", json_string(in->adapter));
  if (in->prompt) {
    const mpk_mlc_prompt *p = in->prompt;
    json_object_set_new(o, "prompt",
                        json_pack("{s:o, s:I, s:o}", "prefix_token_ids",
                                  ids_json(p->prefix_token_ids, p->n_prefix_token_ids),
                                  "placeholder_token_id", (json_int_t)p->placeholder_token_id,
                                  "suffix_token_ids", ids_json(p->suffix_token_ids, p->n_suffix_token_ids)));
  }
  return o;
}

static int cmp_task_name(const void *a, const void *b) {
  return strcmp((*(const mpk_mlc_task *const *)a)->name, (*(const mpk_mlc_task *const *)b)->name);
}

static int cmp_position(const void *a, const void *b) {
  size_t x = (*(const mpk_mlc_input *const *)a)->position, y = (*(const mpk_mlc_input *const *)b)->position;
  return x < y ? -1 : x > y;
}

/* Tasks sorted by name (code point order), inputs in declaration order, each object's fields in
   the spec's order: what MLC's producer writes. (Order does not matter to the identity, which
   hashes the canonical form.) */
json_t *mpk_mlc_tasks_json(const mpk_mlc_task *tasks, size_t n) {
  const mpk_mlc_task **order = malloc((n ? n : 1) * sizeof *order);
  json_t *all = order ? json_object() : NULL;
  for (size_t t = 0; all && t < n; t++) order[t] = &tasks[t];
  if (all) mpk_sort(order, n, sizeof *order, cmp_task_name);
  for (size_t t = 0; all && t < n; t++) {
    const mpk_mlc_task *task = order[t];
    const mpk_mlc_input **in = malloc((task->n_inputs ? task->n_inputs : 1) * sizeof *in);
    json_t *inputs = in ? json_object() : NULL;
    for (size_t i = 0; inputs && i < task->n_inputs; i++) in[i] = &task->inputs[i];
    if (inputs) mpk_sort(in, task->n_inputs, sizeof *in, cmp_position);
    for (size_t i = 0; inputs && i < task->n_inputs; i++)
      json_object_set_new(inputs, in[i]->name, mpk_mlc_input_json(in[i]));
    free(in);
    json_t *tj = inputs ? json_pack("{s:s, s:o, s:s}", "executor", task->executor, "inputs", inputs, "output",
                                    task->output)
                        : NULL;
    if (!tj || json_object_set_new(all, task->name, tj)) {
      json_decref(all);
      all = NULL;
    }
  }
  free(order);
  return all;
}

int mpk_mlc_tasks_interface_id(const mpk_mlc_task *tasks, size_t n, char out[MPK_SHA256_ID_SIZE],
                               mpk_error *err) {
  json_t *doc = json_pack("{s:o}", "tasks", mpk_mlc_tasks_json(tasks, n));
  if (!doc) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory building the task identity");
  char *text;
  size_t len;
  int rc = mpk_canonical_dump(doc, &text, &len, err);
  json_decref(doc);
  if (rc) return rc;
  rc = mpk_sha256_id(text, len, out);
  mpk_free(text);
  return rc ? mpk_fail(err, rc, NULL, NULL, "SHA-256 failed") : 0;
}

int mpk_mlc_package_interface_id(const mpk_mlc_package *pkg, char out[MPK_SHA256_ID_SIZE],
                                 mpk_error *err) {
  if (!pkg || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  return mpk_mlc_tasks_interface_id(pkg->tasks, pkg->n_tasks, out, err);
}

int mpk_mlc_package_tasks_json(const mpk_mlc_package *pkg, char **out, size_t *out_len, mpk_error *err) {
  if (out) *out = NULL;
  if (!pkg || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  json_t *tasks = mpk_mlc_tasks_json(pkg->tasks, pkg->n_tasks);
  /* jansson's dump is compact UTF-8 here; strings were checked free of U+0000 by the parse */
  char *text = tasks ? json_dumps(tasks, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(tasks);
  if (!text) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory writing the tasks");
  *out = text; /* jansson allocates with malloc: mpk_free releases it */
  if (out_len) *out_len = strlen(text);
  return 0;
}

int mpk_mlc_interface_id(const char *tasks_json_text, size_t len, char out[MPK_SHA256_ID_SIZE],
                         mpk_error *err) {
  if (!tasks_json_text || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  json_t *root;
  int rc = mpk_json_parse(tasks_json_text, len, NULL, "tasks", &root, err);
  if (rc) return rc;
  mpk_arena *a = mpk_arena_new();
  if (!a) {
    json_decref(root);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  mpk_jv v = {.file = "tasks", .err = err};
  mpk_path_init(&v.path);
  mpk_mlc_task *tasks = NULL;
  size_t n = 0;
  rc = mpk_mlc_parse_tasks(&v, root, a, &tasks, &n);
  json_decref(root);
  if (!rc) rc = mpk_mlc_tasks_interface_id(tasks, n, out, err);
  mpk_arena_free(a);
  return rc;
}
