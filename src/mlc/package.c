/* mlc-model-manifest.json, parsed with exactly WebLLM 0.2.86's rules and check order
   (parseModelPackageManifest / loadModelPackageManifest). */
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

#define NOMEM(v) mpk_jv_fail((v), MPK_ENOMEM, "out of memory")
#define AT_KEY MPK_JV_AT

static int token_ids(mpk_jv *v, const json_t *value, mpk_arena *a, const int64_t **out, size_t *n) {
  if (!json_is_array(value)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected an array");
  size_t count = json_array_size(value);
  int64_t *ids = mpk_arena_array(a, count ? count : 1, sizeof *ids);
  if (!ids) return NOMEM(v);
  for (size_t i = 0; i < count; i++) {
    size_t prev = mpk_path_push_index(&v->path, i);
    int rc = mpk_jv_integer(v, json_array_get(value, i), 0, &ids[i]);
    mpk_path_pop(&v->path, prev);
    if (rc) return rc;
  }
  *out = ids;
  *n = count;
  return 0;
}

static int parse_prompt(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mlc_prompt *p) {
  static const char *const allowed[] = {"prefix_token_ids", "placeholder_token_id",
                                        "suffix_token_ids", NULL};
  static const char *const required[] = {"placeholder_token_id", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_exact_keys(v, obj, allowed, required);
  if (rc) return rc;
  static const int64_t none[1];
  p->prefix_token_ids = p->suffix_token_ids = none;
  const json_t *prefix = json_object_get(obj, "prefix_token_ids");
  if (prefix) AT_KEY(v, "prefix_token_ids", token_ids(v, prefix, a, &p->prefix_token_ids, &p->n_prefix_token_ids));
  AT_KEY(v, "placeholder_token_id",
         mpk_jv_integer(v, json_object_get(obj, "placeholder_token_id"), 0, &p->placeholder_token_id));
  const json_t *suffix = json_object_get(obj, "suffix_token_ids");
  if (suffix) AT_KEY(v, "suffix_token_ids", token_ids(v, suffix, a, &p->suffix_token_ids, &p->n_suffix_token_ids));
  return 0;
}

static int parse_audio(mpk_jv *v, const json_t *obj, mpk_mlc_audio_decode *au) {
  static const char *const allowed[] = {"kind", "format", "sample_rate_hz", "channels",
                                        "min_samples", "max_samples", NULL};
  static const char *const required[] = {"kind", "format", "sample_rate_hz", "channels",
                                         "max_samples", NULL};
  int rc = mpk_jv_exact_keys(v, obj, allowed, required);
  if (rc) return rc;
  au->min_samples = 1;
  const json_t *min = json_object_get(obj, "min_samples");
  if (min) AT_KEY(v, "min_samples", mpk_jv_integer(v, min, 1, &au->min_samples));
  AT_KEY(v, "max_samples", mpk_jv_integer(v, json_object_get(obj, "max_samples"), 1, &au->max_samples));
  if (au->min_samples > au->max_samples)
    return mpk_jv_fail(v, MPK_EMALFORMED, "min_samples must not exceed max_samples");
  AT_KEY(v, "kind", mpk_jv_literal(v, json_object_get(obj, "kind"), "audio_decode"));
  AT_KEY(v, "format", mpk_jv_literal(v, json_object_get(obj, "format"), "pcm_f32"));
  AT_KEY(v, "sample_rate_hz", mpk_jv_integer(v, json_object_get(obj, "sample_rate_hz"), 1, &au->sample_rate_hz));
  AT_KEY(v, "channels", mpk_jv_integer(v, json_object_get(obj, "channels"), 1, &au->channels));
  if (au->channels != 1) return mpk_jv_fail(v, MPK_EMALFORMED, "channels must be 1");
  return 0;
}

static int parse_resize(mpk_jv *v, const json_t *obj, mpk_mlc_image_decode *im) {
  static const char *const keys[] = {"mode", "height", "width", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_exact_keys(v, obj, keys, keys);
  if (rc) return rc;
  const json_t *mode = json_object_get(obj, "mode");
  const char *m = json_is_string(mode) ? json_string_value(mode) : "";
  if (strcmp(m, "stretch") == 0) im->resize_mode = MPK_MLC_RESIZE_STRETCH;
  else if (strcmp(m, "center_crop") == 0) im->resize_mode = MPK_MLC_RESIZE_CENTER_CROP;
  else AT_KEY(v, "mode", mpk_jv_fail(v, MPK_EMALFORMED, "expected \"stretch\" or \"center_crop\""));
  AT_KEY(v, "height", mpk_jv_integer(v, json_object_get(obj, "height"), 1, &im->height));
  AT_KEY(v, "width", mpk_jv_integer(v, json_object_get(obj, "width"), 1, &im->width));
  return 0;
}

static int parse_image(mpk_jv *v, const json_t *obj, mpk_mlc_image_decode *im) {
  static const char *const keys[] = {"kind", "format", "layout", "resize", "num_embeddings", NULL};
  int rc = mpk_jv_exact_keys(v, obj, keys, keys);
  if (rc) return rc;
  AT_KEY(v, "kind", mpk_jv_literal(v, json_object_get(obj, "kind"), "image_decode"));
  AT_KEY(v, "format", mpk_jv_literal(v, json_object_get(obj, "format"), "rgb_u8"));
  AT_KEY(v, "layout", mpk_jv_literal(v, json_object_get(obj, "layout"), "nhwc"));
  AT_KEY(v, "resize", parse_resize(v, json_object_get(obj, "resize"), im));
  AT_KEY(v, "num_embeddings", mpk_jv_integer(v, json_object_get(obj, "num_embeddings"), 1, &im->num_embeddings));
  return 0;
}

static int parse_processor(mpk_jv *v, const json_t *value, mpk_arena *a, mpk_mlc_input *in) {
  if (json_is_string(value)) {
    const char *s;
    int rc = mpk_jv_string(v, value, &s);
    if (rc) return rc;
    in->kind = MPK_MLC_PROCESSOR_NAMED;
    return mpk_jv_strdup(v, a, s, &in->processor_name);
  }
  int rc = mpk_jv_object(v, value);
  if (rc) return rc;
  const json_t *kind = json_object_get(value, "kind");
  const char *k = json_is_string(kind) ? json_string_value(kind) : "";
  if (strcmp(k, "image_decode") == 0) {
    in->kind = MPK_MLC_PROCESSOR_IMAGE_DECODE;
    return parse_image(v, value, &in->image);
  }
  if (strcmp(k, "audio_decode") == 0) {
    in->kind = MPK_MLC_PROCESSOR_AUDIO_DECODE;
    return parse_audio(v, value, &in->audio);
  }
  AT_KEY(v, "kind", mpk_jv_fail(v, MPK_EMALFORMED, "expected \"audio_decode\" or \"image_decode\""));
  return 0;
}

static int parse_input(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mlc_input *in) {
  static const char *const allowed[] = {"processor", "adapter", "prompt", NULL};
  static const char *const required[] = {"processor", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_exact_keys(v, obj, allowed, required);
  if (rc) return rc;
  AT_KEY(v, "processor", parse_processor(v, json_object_get(obj, "processor"), a, in));
  const json_t *adapter = json_object_get(obj, "adapter");
  if (adapter) {
    const char *s = NULL;
    AT_KEY(v, "adapter", mpk_jv_string(v, adapter, &s));
    if (mpk_jv_strdup(v, a, s, &in->adapter)) return MPK_ENOMEM;
  }
  const json_t *prompt = json_object_get(obj, "prompt");
  if (prompt) {
    mpk_mlc_prompt *p = mpk_arena_alloc(a, sizeof *p);
    if (!p) return NOMEM(v);
    AT_KEY(v, "prompt", parse_prompt(v, prompt, a, p));
    in->prompt = p;
  }
  if ((in->adapter == NULL) != (in->prompt == NULL))
    return mpk_jv_fail(v, MPK_EMALFORMED, "adapter and prompt must be declared together");
  return 0;
}

static int input_member(mpk_jv *v, size_t i, const char *name, const json_t *value, void *ctx) {
  mpk_mlc_members *m = ctx;
  mpk_mlc_input *in = (mpk_mlc_input *)m->list + i;
  int rc = mpk_jv_strdup(v, m->arena, name, &in->name);
  return rc ? rc : parse_input(v, value, m->arena, in);
}

static int parse_task(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mlc_task *t) {
  static const char *const keys[] = {"executor", "inputs", "output", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_exact_keys(v, obj, keys, keys);
  if (rc) return rc;
  const json_t *inputs = json_object_get(obj, "inputs");
  size_t prev = mpk_path_push_key(&v->path, "inputs");
  rc = mpk_jv_object(v, inputs);
  if (!rc && json_object_size(inputs) == 0)
    rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected at least one input");
  size_t n = json_object_size(inputs);
  mpk_mlc_input *list = NULL;
  if (!rc && !(list = mpk_arena_array(a, n, sizeof *list))) rc = NOMEM(v);
  mpk_mlc_members m = {a, list};
  if (!rc) rc = mpk_jv_each_member(v, inputs, input_member, &m);
  mpk_path_pop(&v->path, prev);
  if (rc) return rc;
  /* Remember the declaration order (jansson iterates in it): the producer writes inputs so. */
  json_t *order = json_object();
  size_t pos = 0;
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)inputs, key, val) json_object_set_new(order, key, json_integer((json_int_t)pos++));
  for (size_t i = 0; i < n; i++) list[i].position = (size_t)json_integer_value(json_object_get(order, list[i].name));
  json_decref(order);
  t->inputs = list;
  t->n_inputs = n;
  const char *s = NULL;
  AT_KEY(v, "executor", mpk_jv_string(v, json_object_get(obj, "executor"), &s));
  if (mpk_jv_strdup(v, a, s, &t->executor)) return MPK_ENOMEM;
  AT_KEY(v, "output", mpk_jv_string(v, json_object_get(obj, "output"), &s));
  return mpk_jv_strdup(v, a, s, &t->output);
}

static int task_member(mpk_jv *v, size_t i, const char *name, const json_t *value, void *ctx) {
  mpk_mlc_members *m = ctx;
  mpk_mlc_task *t = (mpk_mlc_task *)m->list + i;
  int rc = mpk_jv_strdup(v, m->arena, name, &t->name);
  return rc ? rc : parse_task(v, value, m->arena, t);
}

int mpk_mlc_parse_tasks(mpk_jv *v, const json_t *value, mpk_arena *a, mpk_mlc_task **tasks,
                        size_t *n_tasks) {
  int rc = mpk_jv_object(v, value);
  if (rc) return rc;
  if (json_object_size(value) == 0) return mpk_jv_fail(v, MPK_EMALFORMED, "expected at least one task");
  size_t n = json_object_size(value);
  mpk_mlc_task *list = mpk_arena_array(a, n, sizeof *list);
  if (!list) return NOMEM(v);
  mpk_mlc_members m = {a, list};
  rc = mpk_jv_each_member(v, value, task_member, &m);
  if (rc) return rc;
  *tasks = list;
  *n_tasks = n;
  return 0;
}

static int parse_package(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mlc_package *pkg) {
  static const char *const allowed[] = {"schema", "schema_version", "chat_config", "interface_id",
                                        "weights", "tasks", NULL};
  static const char *const required[] = {"schema", "schema_version", "interface_id", "weights",
                                         "tasks", NULL};
  static const char *const weight_keys[] = {"manifest", "parameter_schema_id", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_exact_keys(v, obj, allowed, required);
  if (rc) return rc;
  const json_t *weights = json_object_get(obj, "weights");
  AT_KEY(v, "weights", mpk_jv_object(v, weights));
  AT_KEY(v, "weights", mpk_jv_exact_keys(v, weights, weight_keys, weight_keys));
  AT_KEY(v, "schema_version", mpk_jv_integer(v, json_object_get(obj, "schema_version"), 1, &pkg->schema_version));
  if (pkg->schema_version != 1)
    AT_KEY(v, "schema_version", mpk_jv_fail(v, MPK_EVERSION, "unsupported version %lld",
                                            (long long)pkg->schema_version));
  AT_KEY(v, "schema", mpk_jv_literal(v, json_object_get(obj, "schema"), "mlc.model-package"));
  pkg->chat_config = MPK_MLC_CHAT_CONFIG_FILENAME;
  const json_t *chat = json_object_get(obj, "chat_config");
  if (chat) AT_KEY(v, "chat_config", mpk_jv_literal(v, chat, MPK_MLC_CHAT_CONFIG_FILENAME));
  AT_KEY(v, "interface_id", mpk_jv_sha256_id(v, json_object_get(obj, "interface_id"), &pkg->interface_id));
  if (mpk_jv_strdup(v, a, pkg->interface_id, &pkg->interface_id)) return MPK_ENOMEM;
  size_t prev = mpk_path_push_key(&v->path, "weights");
  AT_KEY(v, "manifest", mpk_jv_literal(v, json_object_get(weights, "manifest"), MPK_MLC_TENSOR_CACHE_FILENAME));
  pkg->weights_manifest = MPK_MLC_TENSOR_CACHE_FILENAME;
  AT_KEY(v, "parameter_schema_id",
         mpk_jv_sha256_id(v, json_object_get(weights, "parameter_schema_id"), &pkg->parameter_schema_id));
  mpk_path_pop(&v->path, prev);
  if (mpk_jv_strdup(v, a, pkg->parameter_schema_id, &pkg->parameter_schema_id)) return MPK_ENOMEM;
  mpk_mlc_task *tasks = NULL;
  AT_KEY(v, "tasks", mpk_mlc_parse_tasks(v, json_object_get(obj, "tasks"), a, &tasks, &pkg->n_tasks));
  pkg->tasks = tasks;
  return 0;
}

/* The sidecar as a core document (document.c). */
typedef struct package_doc {
  int skip_interface_check;
  mpk_mlc_package **out;
} package_doc;

static int validate_package(void *ctx, mpk_jv *v, json_t *root, mpk_arena *a) {
  package_doc *d = ctx;
  mpk_mlc_package *pkg = mpk_arena_alloc(a, sizeof *pkg);
  struct mpk_mlc_package_priv *priv = pkg ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  if (!priv) return mpk_fail(v->err, MPK_ENOMEM, v->file, NULL, "out of memory");
  priv->arena = a;
  pkg->priv_ = priv;
  int rc = parse_package(v, root, a, pkg);
  if (!rc && !d->skip_interface_check) {
    char id[MPK_SHA256_ID_SIZE];
    rc = mpk_mlc_package_verify_interface_id(pkg, v->file, id, v->err);
  }
  if (!rc) *d->out = pkg;
  return rc;
}

#define PACKAGE_DOCUMENT(d) {.name = MPK_MLC_MANIFEST_FILENAME, .validate = validate_package, .ctx = (d)}

int mpk_mlc_package_parse(const void *data, size_t len, const char *file, int skip_interface_check,
                          mpk_mlc_package **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  package_doc d = {skip_interface_check, out};
  return mpk_document_parse(&(mpk_document)PACKAGE_DOCUMENT(&d), data, len, file, err);
}

int mpk_mlc_package_verify_interface_id(const mpk_mlc_package *pkg, const char *file,
                                        char computed[MPK_SHA256_ID_SIZE], mpk_error *err) {
  int rc = mpk_mlc_tasks_interface_id(pkg->tasks, pkg->n_tasks, computed, err);
  if (!rc && strcmp(computed, pkg->interface_id) != 0)
    rc = mpk_fail(err, MPK_EMISMATCH, file, "", "interface_id does not match its tasks (declared %s, computed %s)",
                  pkg->interface_id, computed);
  return rc;
}

int mpk_mlc_package_load(const char *path, mpk_mlc_package **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  package_doc d = {0, out};
  return mpk_document_load(&(mpk_document)PACKAGE_DOCUMENT(&d), path, err);
}

void mpk_mlc_package_free(mpk_mlc_package *pkg) {
  if (pkg) mpk_arena_free(pkg->priv_->arena);
}

const mpk_mlc_task *mpk_mlc_package_task(const mpk_mlc_package *pkg, const char *name) {
  if (!pkg || !name) return NULL;
  for (size_t i = 0; i < pkg->n_tasks; i++)
    if (strcmp(pkg->tasks[i].name, name) == 0) return &pkg->tasks[i];
  return NULL;
}
