/* _metadata.artifact (schema mlc.compiled-program), parsed with WebLLM 0.2.86's rules and check
   order (parseCompiledProgramArtifact). */
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

#define NOMEM(v) mpk_jv_fail((v), MPK_ENOMEM, "out of memory")
#define AT_KEY MPK_JV_AT

static int entry_member(mpk_jv *v, size_t i, const char *key, const json_t *value, void *ctx) {
  mpk_mlc_members *m = ctx;
  mpk_mlc_entry *e = (mpk_mlc_entry *)m->list + i;
  const char *val = NULL;
  int rc = mpk_jv_string(v, value, &val);
  if (!rc) rc = mpk_jv_strdup(v, m->arena, key, &e->key);
  if (!rc) rc = mpk_jv_strdup(v, m->arena, val, &e->value);
  return rc;
}

/* A string → non-empty string map (exports, adapters, adapter_dtypes). */
static int string_map(mpk_jv *v, const json_t *obj, bool allow_empty, mpk_arena *a,
                      const mpk_mlc_entry **out, size_t *n_out) {
  int rc = mpk_jv_object(v, obj);
  if (rc) return rc;
  size_t n = json_object_size(obj);
  if (!allow_empty && n == 0) return mpk_jv_fail(v, MPK_EMALFORMED, "expected at least one entrypoint");
  mpk_mlc_entry *list = mpk_arena_array(a, n, sizeof *list);
  if (!list) return NOMEM(v);
  mpk_mlc_members m = {a, list};
  rc = mpk_jv_each_member(v, obj, entry_member, &m);
  if (rc) return rc;
  *out = list;
  *n_out = n;
  return 0;
}

static int parse_program(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mlc_program *p) {
  static const char *const allowed[] = {"kind", "exports", "adapters", "adapter_dtypes", NULL};
  static const char *const required[] = {"kind", "exports", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_exact_keys(v, obj, allowed, required);
  if (rc) return rc;
  const json_t *adapters = json_object_get(obj, "adapters");
  if (adapters) AT_KEY(v, "adapters", string_map(v, adapters, true, a, &p->adapters, &p->n_adapters));
  const json_t *dtypes = json_object_get(obj, "adapter_dtypes");
  if (dtypes)
    AT_KEY(v, "adapter_dtypes", string_map(v, dtypes, true, a, &p->adapter_dtypes, &p->n_adapter_dtypes));
  for (size_t i = 0; i < p->n_adapter_dtypes; i++) {
    if (!mpk_mlc_entry_get(p->adapters, p->n_adapters, p->adapter_dtypes[i].key))
      AT_KEY(v, "adapter_dtypes", mpk_jv_fail(v, MPK_EMALFORMED, "\"%s\" is not an adapter",
                                              p->adapter_dtypes[i].key));
  }
  const char *kind = NULL;
  AT_KEY(v, "kind", mpk_jv_string(v, json_object_get(obj, "kind"), &kind));
  if (mpk_jv_strdup(v, a, kind, &p->kind)) return MPK_ENOMEM;
  AT_KEY(v, "exports", string_map(v, json_object_get(obj, "exports"), false, a, &p->exports, &p->n_exports));
  return 0;
}

static int program_member(mpk_jv *v, size_t i, const char *name, const json_t *value, void *ctx) {
  mpk_mlc_members *m = ctx;
  mpk_mlc_program *p = (mpk_mlc_program *)m->list + i;
  int rc = mpk_jv_strdup(v, m->arena, name, &p->name);
  return rc ? rc : parse_program(v, value, m->arena, p);
}

static int parse_programs(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mlc_artifact *art) {
  int rc = mpk_jv_object(v, obj);
  if (rc) return rc;
  size_t n = json_object_size(obj);
  if (n == 0) return mpk_jv_fail(v, MPK_EMALFORMED, "expected at least one program");
  mpk_mlc_program *list = mpk_arena_array(a, n, sizeof *list);
  if (!list) return NOMEM(v);
  mpk_mlc_members m = {a, list};
  rc = mpk_jv_each_member(v, obj, program_member, &m);
  if (rc) return rc;
  art->programs = list;
  art->n_programs = n;
  return 0;
}

static int features(mpk_jv *v, const json_t *value, mpk_arena *a, mpk_mlc_artifact *art) {
  if (!json_is_array(value)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected an array");
  size_t n = json_array_size(value);
  const char **list = mpk_arena_array(a, n ? n : 1, sizeof *list);
  if (!list) return NOMEM(v);
  for (size_t i = 0; i < n; i++) {
    const char *s = NULL;
    size_t prev = mpk_path_push_index(&v->path, i);
    int rc = mpk_jv_string(v, json_array_get(value, i), &s);
    mpk_path_pop(&v->path, prev);
    if (rc) return rc;
    if (mpk_jv_strdup(v, a, s, &list[i])) return MPK_ENOMEM;
  }
  art->required_features = list;
  art->n_required_features = n;
  return 0;
}

static int parse_artifact(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mlc_artifact *art) {
  static const char *const top[] = {"schema", "schema_version", "interface_id", "parameter_schema_id",
                                    "programs", "resources", NULL};
  static const char *const res_keys[] = {"required_features", "max_storage_buffer_binding_size",
                                         "estimated_device_memory_bytes", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_exact_keys(v, obj, top, top);
  if (rc) return rc;
  AT_KEY(v, "schema_version", mpk_jv_integer(v, json_object_get(obj, "schema_version"), 1, &art->schema_version));
  if (art->schema_version != 1)
    AT_KEY(v, "schema_version", mpk_jv_fail(v, MPK_EVERSION, "unsupported version %lld",
                                            (long long)art->schema_version));
  const json_t *res = json_object_get(obj, "resources");
  AT_KEY(v, "resources", mpk_jv_object(v, res));
  AT_KEY(v, "resources", mpk_jv_exact_keys(v, res, res_keys, res_keys));
  AT_KEY(v, "schema", mpk_jv_literal(v, json_object_get(obj, "schema"), "mlc.compiled-program"));
  const char *s = NULL;
  AT_KEY(v, "interface_id", mpk_jv_sha256_id(v, json_object_get(obj, "interface_id"), &s));
  if (mpk_jv_strdup(v, a, s, &art->interface_id)) return MPK_ENOMEM;
  AT_KEY(v, "parameter_schema_id", mpk_jv_sha256_id(v, json_object_get(obj, "parameter_schema_id"), &s));
  if (mpk_jv_strdup(v, a, s, &art->parameter_schema_id)) return MPK_ENOMEM;
  AT_KEY(v, "programs", parse_programs(v, json_object_get(obj, "programs"), a, art));
  size_t prev = mpk_path_push_key(&v->path, "resources");
  AT_KEY(v, "required_features", features(v, json_object_get(res, "required_features"), a, art));
  AT_KEY(v, "max_storage_buffer_binding_size",
         mpk_jv_integer(v, json_object_get(res, "max_storage_buffer_binding_size"), 0,
                        &art->max_storage_buffer_binding_size));
  AT_KEY(v, "estimated_device_memory_bytes",
         mpk_jv_integer(v, json_object_get(res, "estimated_device_memory_bytes"), 0,
                        &art->estimated_device_memory_bytes));
  mpk_path_pop(&v->path, prev);
  return 0;
}

int mpk_mlc_artifact_from_json(const json_t *value, const char *file, mpk_mlc_artifact **out,
                               mpk_error *err) {
  *out = NULL;
  mpk_arena *a = mpk_arena_new();
  mpk_mlc_artifact *art = a ? mpk_arena_alloc(a, sizeof *art) : NULL;
  struct mpk_mlc_artifact_priv *priv = art ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  if (!priv) {
    mpk_arena_free(a);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  priv->arena = a;
  art->priv_ = priv;
  mpk_jv v = {.file = file, .err = err};
  mpk_path_init(&v.path);
  int rc = parse_artifact(&v, value, a, art);
  if (rc) {
    mpk_arena_free(a);
    return rc;
  }
  *out = art;
  return 0;
}

int mpk_mlc_artifact_parse(const void *data, size_t len, const char *file, mpk_mlc_artifact **out,
                           mpk_error *err) {
  if (!out || (!data && len)) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  if (!file) file = "_metadata.artifact";
  json_t *root;
  int rc = mpk_json_parse(data, len, NULL, file, &root, err);
  if (rc) return rc;
  rc = mpk_mlc_artifact_from_json(root, file, out, err);
  json_decref(root);
  return rc;
}

void mpk_mlc_artifact_free(mpk_mlc_artifact *art) {
  if (art) mpk_arena_free(art->priv_->arena);
}

const mpk_mlc_program *mpk_mlc_artifact_program(const mpk_mlc_artifact *art, const char *name) {
  if (!art || !name) return NULL;
  for (size_t i = 0; i < art->n_programs; i++)
    if (strcmp(art->programs[i].name, name) == 0) return &art->programs[i];
  return NULL;
}

const char *mpk_mlc_entry_get(const mpk_mlc_entry *entries, size_t n, const char *key) {
  if (!key) return NULL;
  for (size_t i = 0; i < n; i++)
    if (strcmp(entries[i].key, key) == 0) return entries[i].value;
  return NULL;
}
