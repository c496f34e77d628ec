/* mobiletransformers_manifest.json: the version gate, then typed, fail-closed reading of every
   field of the spec and of the reference exporter. Unknown fields are tolerated (the contract
   says readers must) and kept, so the document can be written back unchanged. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_scan.h"
#include "mt/mt.h"

#define AT_KEY MPK_JV_AT
#define NOMEM(v) mpk_jv_fail((v), MPK_ENOMEM, "out of memory")

/* ---------------------------------------------------------------- typed getters */

/* A string, or NULL when the member is absent or null. */
static int opt_string(mpk_jv *v, const json_t *obj, const char *key, mpk_arena *a, const char **out) {
  const json_t *x = json_object_get(obj, key);
  *out = NULL;
  if (!x || json_is_null(x)) return 0;
  if (!json_is_string(x)) AT_KEY(v, key, mpk_jv_fail(v, MPK_EMALFORMED, "expected a string or null"));
  return mpk_jv_strdup(v, a, json_string_value(x), out);
}

static int opt_int(mpk_jv *v, const json_t *obj, const char *key, mpk_opt_int *out) {
  const json_t *x = json_object_get(obj, key);
  out->present = 0;
  if (!x || json_is_null(x)) return 0;
  if (!json_is_integer(x) || !mpk_json_safe_integer(x, &out->value) || out->value < 0)
    AT_KEY(v, key, mpk_jv_fail(v, MPK_EMALFORMED, "expected a non-negative integer or null"));
  out->present = 1;
  return 0;
}

/* A package-relative POSIX path that cannot leave the package. */
static int check_path(mpk_jv *v, const char *s, const char *what) {
  const char *why;
  if (!mpk_path_is_confined(s, &why))
    return mpk_jv_fail(v, MPK_EMALFORMED, "%s \"%s\" %s: it must be a package-relative path", what, s, why);
  return 0;
}

static int path_string(mpk_jv *v, const json_t *x, mpk_arena *a, const char *what, const char **out) {
  if (!json_is_string(x)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected a string");
  int rc = check_path(v, json_string_value(x), what);
  return rc ? rc : mpk_jv_strdup(v, a, json_string_value(x), out);
}

/* A list of strings (optionally each a confined path or a download pattern). */
enum { ANY_STRING, PATH_STRING, PATTERN_STRING };

static int string_list(mpk_jv *v, const json_t *x, mpk_arena *a, int kind, const char *const **out, size_t *n) {
  if (!json_is_array(x)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected an array of strings");
  size_t count = json_array_size(x);
  const char **list = mpk_arena_array(a, count ? count : 1, sizeof *list);
  if (!list) return NOMEM(v);
  for (size_t i = 0; i < count; i++) {
    const json_t *s = json_array_get(x, i);
    size_t prev = mpk_path_push_index(&v->path, i);
    int rc = 0;
    if (!json_is_string(s)) rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected a string");
    else if (kind == PATH_STRING) rc = check_path(v, json_string_value(s), "path");
    else if (kind == PATTERN_STRING && !mpk_pattern_valid(json_string_value(s)))
      rc = mpk_jv_fail(v, MPK_EMALFORMED,
                       "download pattern \"%s\" is neither a package-relative path nor a directory "
                       "followed by /** (no other glob form is allowed)",
                       json_string_value(s));
    if (!rc) rc = mpk_jv_strdup(v, a, json_string_value(s), &list[i]);
    mpk_path_pop(&v->path, prev);
    if (rc) return rc;
  }
  *out = list;
  *n = count;
  return 0;
}

static int opt_string_list(mpk_jv *v, const json_t *obj, const char *key, mpk_arena *a, const char *const **out,
                           size_t *n) {
  const json_t *x = json_object_get(obj, key);
  *out = NULL;
  *n = 0;
  if (!x) return 0;
  AT_KEY(v, key, string_list(v, x, a, ANY_STRING, out, n));
  return 0;
}

static int require(mpk_jv *v, const json_t *obj, const char *key) {
  if (json_object_get(obj, key)) return 0;
  return mpk_jv_fail(v, MPK_EMALFORMED, "missing field \"%s\"", key);
}

/* ---------------------------------------------------------------- variants */

static int pair_member(mpk_jv *v, size_t i, const char *key, const json_t *value, void *ctx) {
  mpk_mt_pair *pairs = ((void **)ctx)[0];
  mpk_arena *a = ((void **)ctx)[1];
  int rc = path_string(v, value, a, "path", &pairs[i].value);
  return rc ? rc : mpk_jv_strdup(v, a, key, &pairs[i].key);
}

static int parse_variant(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mt_variant *var) {
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = require(v, obj, "id");
  if (!rc) rc = require(v, obj, "executionProvider");
  if (rc) return rc;
  AT_KEY(v, "id", path_string(v, json_object_get(obj, "id"), a, "variant id", &var->id));
  const char *s = NULL;
  AT_KEY(v, "executionProvider", mpk_jv_string(v, json_object_get(obj, "executionProvider"), &s));
  if ((rc = mpk_jv_strdup(v, a, s, &var->execution_provider))) return rc;
  if ((rc = opt_string(v, obj, "quantization", a, &var->quantization))) return rc;
  if ((rc = opt_string_list(v, obj, "supportedEngines", a, &var->supported_engines, &var->n_supported_engines)))
    return rc;
  const json_t *abi = json_object_get(obj, "abi");
  var->abi_any = !abi || json_is_null(abi);
  if (!var->abi_any) AT_KEY(v, "abi", string_list(v, abi, a, ANY_STRING, &var->abi, &var->n_abi));
  if ((rc = opt_string_list(v, obj, "features", a, &var->features, &var->n_features))) return rc;
  if ((rc = opt_int(v, obj, "minimumAndroidApi", &var->minimum_android_api))) return rc;
  if ((rc = opt_int(v, obj, "recommendedDeviceMemoryMb", &var->recommended_device_memory_mb))) return rc;
  const json_t *wh = json_object_get(obj, "weightHandoff");
  if (wh && !json_is_null(wh))
    AT_KEY(v, "weightHandoff", path_string(v, wh, a, "weightHandoff", &var->weight_handoff));
  const json_t *paths = json_object_get(obj, "paths");
  if (paths) {
    size_t prev = mpk_path_push_key(&v->path, "paths");
    if ((rc = mpk_jv_object(v, paths))) return rc;
    size_t n = json_object_size(paths);
    mpk_mt_pair *pairs = mpk_arena_array(a, n ? n : 1, sizeof *pairs);
    if (!pairs) return NOMEM(v);
    void *ctx[2] = {pairs, a};
    if ((rc = mpk_jv_each_member(v, paths, pair_member, ctx))) return rc;
    mpk_path_pop(&v->path, prev);
    var->paths = pairs;
    var->n_paths = n;
  }
  return 0;
}

static int parse_variants(mpk_jv *v, const json_t *list, mpk_arena *a, mpk_mt_manifest *m) {
  if (!json_is_array(list)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected an array");
  size_t n = json_array_size(list);
  mpk_mt_variant *vars = mpk_arena_array(a, n ? n : 1, sizeof *vars);
  if (!vars) return NOMEM(v);
  for (size_t i = 0; i < n; i++) {
    size_t prev = mpk_path_push_index(&v->path, i);
    int rc = parse_variant(v, json_array_get(list, i), a, &vars[i]);
    for (size_t j = 0; !rc && j < i; j++)
      if (strcmp(vars[j].id, vars[i].id) == 0)
        rc = mpk_jv_fail(v, MPK_EMALFORMED, "variant id \"%s\" appears twice (variants %zu and %zu)", vars[i].id, j, i);
    mpk_path_pop(&v->path, prev);
    if (rc) return rc;
  }
  m->variants = vars;
  m->n_variants = n;
  return 0;
}

/* ---------------------------------------------------------------- download plan */

static int group_member(mpk_jv *v, size_t i, const char *key, const json_t *value, void *ctx) {
  mpk_mt_group *groups = ((void **)ctx)[0];
  mpk_arena *a = ((void **)ctx)[1];
  int rc = string_list(v, value, a, PATTERN_STRING, &groups[i].patterns, &groups[i].n_patterns);
  return rc ? rc : mpk_jv_strdup(v, a, key, &groups[i].name);
}

static int plan_member(mpk_jv *v, size_t i, const char *key, const json_t *value, void *ctx) {
  mpk_mt_plan *plans = ((void **)ctx)[0];
  mpk_arena *a = ((void **)ctx)[1];
  int rc = mpk_jv_object(v, value);
  if (!rc) rc = check_path(v, key, "variant id");
  if (!rc) rc = mpk_jv_strdup(v, a, key, &plans[i].variant);
  if (rc) return rc;
  size_t n = json_object_size(value);
  mpk_mt_group *groups = mpk_arena_array(a, n ? n : 1, sizeof *groups);
  if (!groups) return NOMEM(v);
  void *inner[2] = {groups, a};
  if ((rc = mpk_jv_each_member(v, value, group_member, inner))) return rc;
  plans[i].groups = groups;
  plans[i].n_groups = n;
  return 0;
}

/* ---------------------------------------------------------------- integrity maps */

static int cmp_file(const void *x, const void *y) {
  return strcmp(((const mpk_mt_file *)x)->path, ((const mpk_mt_file *)y)->path);
}

typedef struct files_ctx {
  mpk_mt_file *files;
  size_t n, n_sized; /* files[0, n_sized) come from fileSizes, sorted by path */
  mpk_arena *a;
} files_ctx;

static int size_member(mpk_jv *v, size_t i, const char *key, const json_t *value, void *ctx) {
  (void)i;
  files_ctx *c = ctx;
  int64_t size;
  int rc = check_path(v, key, "file");
  if (rc) return rc;
  if (!json_is_integer(value) || !mpk_json_safe_integer(value, &size) || size < 0)
    return mpk_jv_fail(v, MPK_EMALFORMED, "expected a non-negative integer size");
  mpk_mt_file *f = &c->files[c->n++];
  f->has_size = 1;
  f->size = (uint64_t)size;
  return mpk_jv_strdup(v, c->a, key, &f->path);
}

static int sha_member(mpk_jv *v, size_t i, const char *key, const json_t *value, void *ctx) {
  (void)i;
  files_ctx *c = ctx;
  int rc = check_path(v, key, "file");
  if (rc) return rc;
  const char *hex = json_is_string(value) ? json_string_value(value) : "";
  bool ok = strlen(hex) == 64;
  for (size_t k = 0; ok && k < 64; k++) ok = (hex[k] >= '0' && hex[k] <= '9') || (hex[k] >= 'a' && hex[k] <= 'f');
  if (!ok) return mpk_jv_fail(v, MPK_EMALFORMED, "expected 64 lowercase hex digits");
  mpk_mt_file probe = {.path = key};
  mpk_mt_file *f = bsearch(&probe, c->files, c->n_sized, sizeof *c->files, cmp_file);
  if (!f) {
    f = &c->files[c->n++];
    if ((rc = mpk_jv_strdup(v, c->a, key, &f->path))) return rc;
  }
  return mpk_jv_strdup(v, c->a, hex, &f->sha256);
}

/* fileSizes and sha256 merged into one list of files, sorted by path. */
static int parse_files(mpk_jv *v, const json_t *root, mpk_arena *a, size_t max_files, mpk_mt_manifest *m) {
  const json_t *sizes = json_object_get(root, "fileSizes"), *sums = json_object_get(root, "sha256");
  AT_KEY(v, "fileSizes", mpk_jv_object(v, sizes));
  AT_KEY(v, "sha256", mpk_jv_object(v, sums));
  files_ctx c = {.files = mpk_arena_array(a, json_object_size(sizes) + json_object_size(sums) + 1, sizeof(mpk_mt_file)),
                 .a = a};
  if (!c.files) return NOMEM(v);
  AT_KEY(v, "fileSizes", mpk_jv_each_member(v, sizes, size_member, &c));
  mpk_sort(c.files, c.n, sizeof *c.files, cmp_file);
  c.n_sized = c.n;
  AT_KEY(v, "sha256", mpk_jv_each_member(v, sums, sha_member, &c));
  if (c.n > max_files)
    AT_KEY(v, "sha256",
           mpk_jv_fail(v, MPK_ELIMIT,
                       "fileSizes and sha256 list %zu files together: past the manifest reader's budget of %zu files "
                       "(raise it with " MPK_MT_MANIFEST_MAX_FILES_ENV "=N)",
                       c.n, max_files));
  mpk_sort(c.files, c.n, sizeof *c.files, cmp_file);
  m->files = c.files;
  m->n_files = c.n;
  return 0;
}

/* ---------------------------------------------------------------- the document */

static int parse_manifest(mpk_jv *v, const json_t *root, mpk_arena *a, size_t max_files, mpk_mt_manifest *m) {
  int rc = mpk_jv_version_gate(v, root, MPK_MT_MANIFEST_READER_VERSION, a, &m->schema_version, &m->min_reader_version);
  if (rc) return rc;

  static const char *const required[] = {"defaultVariant", "variants", "downloadPlan", "requiredFiles",
                                         "fileSizes", "sha256", NULL};
  if ((rc = mpk_jv_required_keys(v, root, required))) return rc;
  struct {
    const char *key;
    const char **out;
  } strings[] = {{"baseModelId", &m->base_model_id},
                 {"exportedAt", &m->exported_at},
                 {"mobiletransformersVersion", &m->mobiletransformers_version},
                 {"selectedTask", &m->selected_task},
                 {"optimumOnnxVersion", &m->optimum_onnx_version},
                 {"transformersVersion", &m->transformers_version},
                 {"onnxRuntimeTrainingVersion", &m->onnx_runtime_training_version},
                 {"onnxRuntimeGenAIVersion", &m->onnx_runtime_genai_version}};
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
    if ((rc = opt_string(v, root, strings[i].key, a, strings[i].out))) return rc;
  if ((rc = opt_int(v, root, "artifactFormatVersion", &m->artifact_format_version)) ||
      (rc = opt_int(v, root, "trainableParameterCount", &m->trainable_parameter_count)) ||
      (rc = opt_int(v, root, "trainingParameterCount", &m->training_parameter_count)))
    return rc;
  const json_t *trc = json_object_get(root, "trustRemoteCode");
  m->trust_remote_code = -1;
  if (trc && !json_is_null(trc)) {
    if (!json_is_boolean(trc)) AT_KEY(v, "trustRemoteCode", mpk_jv_fail(v, MPK_EMALFORMED, "expected true or false"));
    m->trust_remote_code = json_is_true(trc);
  }
  static const char *const lists[] = {"architectures", "supportedTasks", "peftMethods", "quantization"};
  for (size_t i = 0; i < 4; i++) {
    const char *const *ignored;
    size_t n;
    if ((rc = opt_string_list(v, root, lists[i], a, &ignored, &n))) return rc; /* typed; kept in the JSON */
  }
  AT_KEY(v, "defaultVariant", path_string(v, json_object_get(root, "defaultVariant"), a, "defaultVariant", &m->default_variant));
  AT_KEY(v, "variants", parse_variants(v, json_object_get(root, "variants"), a, m));

  const json_t *plan = json_object_get(root, "downloadPlan");
  size_t prev = mpk_path_push_key(&v->path, "downloadPlan");
  if ((rc = mpk_jv_object(v, plan))) return rc;
  size_t np = json_object_size(plan);
  mpk_mt_plan *plans = mpk_arena_array(a, np ? np : 1, sizeof *plans);
  if (!plans) return NOMEM(v);
  void *ctx[2] = {plans, a};
  if ((rc = mpk_jv_each_member(v, plan, plan_member, ctx))) return rc;
  mpk_path_pop(&v->path, prev);
  m->plans = plans;
  m->n_plans = np;

  AT_KEY(v, "requiredFiles",
         string_list(v, json_object_get(root, "requiredFiles"), a, PATH_STRING, &m->required_files, &m->n_required_files));
  if ((rc = parse_files(v, root, a, max_files, m))) return rc;
  const json_t *wh = json_object_get(root, "weightHandoff");
  if (wh && !json_is_null(wh)) AT_KEY(v, "weightHandoff", path_string(v, wh, a, "weightHandoff", &m->weight_handoff));

  const json_t *ar = json_object_get(root, "androidRuntime");
  if (ar && !json_is_null(ar)) {
    prev = mpk_path_push_key(&v->path, "androidRuntime");
    if ((rc = mpk_jv_object(v, ar)) || (rc = opt_int(v, ar, "minimumAndroidApi", &m->android_minimum_api)) ||
        (rc = opt_int(v, ar, "recommendedDeviceMemoryMb", &m->android_recommended_memory_mb)) ||
        (rc = opt_string_list(v, ar, "requiredAbis", a, &m->android_required_abis, &m->n_android_required_abis)))
      return rc;
    mpk_path_pop(&v->path, prev);
  }
  const json_t *lic = json_object_get(root, "license");
  if (lic && !json_is_null(lic)) {
    prev = mpk_path_push_key(&v->path, "license");
    if ((rc = mpk_jv_object(v, lic)) || (rc = opt_string(v, lic, "framework", a, &m->license_framework)) ||
        (rc = opt_string(v, lic, "baseModelWeights", a, &m->license_base_model_weights)) ||
        (rc = opt_string(v, lic, "noticeFile", a, &m->license_notice_file)))
      return rc;
    if (m->license_notice_file) AT_KEY(v, "noticeFile", check_path(v, m->license_notice_file, "noticeFile"));
    mpk_path_pop(&v->path, prev);
  }
  return 0;
}

/* ---------------------------------------------------------------- the budget */

/* The file budget: the caller's, else $MODELPKG_MT_MAX_FILES, else the default. */
static int file_budget(const mpk_mt_manifest_options *given, const char *file, size_t *out, mpk_error *err) {
  *out = MPK_MT_MANIFEST_DEFAULT_MAX_FILES;
  mpk_mt_manifest_options opt;
  int rc = MPK_OPTIONS_READ(mpk_mt_manifest_options, &opt, given, err);
  if (rc) return rc;
  const mpk_mt_manifest_options *opts = &opt;
  if (opts->max_files) {
    *out = opts->max_files;
    return 0;
  }
  const char *env = getenv(MPK_MT_MANIFEST_MAX_FILES_ENV);
  if (!env || !*env) return 0;
  char *end;
  errno = 0;
  unsigned long long n = strtoull(env, &end, 10);
  if (*env < '0' || *env > '9' || *end || errno || n == 0 || n > SIZE_MAX / 4)
    return mpk_fail(err, MPK_EINVAL, file, NULL, "%s=\"%s\" is not a positive integer (the manifest's file budget)",
                    MPK_MT_MANIFEST_MAX_FILES_ENV, env);
  *out = (size_t)n;
  return 0;
}

enum { SEC_OTHER, SEC_SIZES, SEC_SUMS, SEC_REQUIRED, SEC_PLAN, SEC_VARIANTS };

typedef struct budget_scan {
  size_t max_files;
  int section;       /* the root member being read */
  size_t count;      /* its entries so far */
  size_t patterns;   /* download groups and patterns, all plans */
  bool refused;      /* the budget stopped the scan (err is set) */
  const char *file;
  mpk_error *err;
} budget_scan;

static int over(budget_scan *b, const char *pointer, const char *what, size_t limit, const char *unit, bool env) {
  b->refused = true;
  return mpk_fail(b->err, MPK_ELIMIT, b->file, pointer,
                  "%s more than %zu %s: past the manifest reader's budget of %zu %s%s", what, limit, unit, limit, unit,
                  env ? " (raise it with " MPK_MT_MANIFEST_MAX_FILES_ENV "=N)" : "");
}

/* Count, in the text, what the reader would build one structure for. */
static int budget_event(void *ctx, const mpk_json_event *e) {
  budget_scan *b = ctx;
  if (e->kind == MPK_JSON_OBJECT_END || e->kind == MPK_JSON_ARRAY_END) return 0;
  if (e->depth == 1 && e->kind == MPK_JSON_KEY) {
    static const struct {
      const char *key;
      int section;
    } secs[] = {{"fileSizes", SEC_SIZES},       {"sha256", SEC_SUMS},          {"requiredFiles", SEC_REQUIRED},
                {"downloadPlan", SEC_PLAN},     {"variants", SEC_VARIANTS}};
    b->section = SEC_OTHER;
    b->count = 0;
    for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++)
      if (strlen(secs[i].key) == e->len && memcmp(secs[i].key, e->str, e->len) == 0) b->section = secs[i].section;
    return 0;
  }
  switch (b->section) {
    case SEC_SIZES:
    case SEC_SUMS:
      if (e->depth == 2 && e->kind == MPK_JSON_KEY && ++b->count > b->max_files)
        return over(b, b->section == SEC_SIZES ? "/fileSizes" : "/sha256",
                    b->section == SEC_SIZES ? "fileSizes lists" : "sha256 lists", b->max_files, "files", true);
      return 0;
    case SEC_REQUIRED:
      if (e->depth == 2 && ++b->count > b->max_files)
        return over(b, "/requiredFiles", "requiredFiles lists", b->max_files, "files", true);
      return 0;
    case SEC_VARIANTS:
      if (e->depth == 2 && ++b->count > MPK_MT_MANIFEST_MAX_VARIANTS)
        return over(b, "/variants", "variants lists", MPK_MT_MANIFEST_MAX_VARIANTS, "variants", false);
      return 0;
    case SEC_PLAN:
      if (((e->depth == 3 && e->kind == MPK_JSON_KEY) || (e->depth == 4 && e->kind != MPK_JSON_KEY)) &&
          ++b->patterns > MPK_MT_MANIFEST_MAX_PATTERNS)
        return over(b, "/downloadPlan", "downloadPlan holds", MPK_MT_MANIFEST_MAX_PATTERNS, "groups and patterns", false);
      return 0;
    default:
      return 0;
  }
}

int mpk_mt_manifest_parse(const void *data, size_t len, const char *file, mpk_mt_manifest **out, mpk_error *err) {
  return mpk_mt_manifest_parse_opts(data, len, file, NULL, out, err);
}

/* The manifest as a core document (document.c): the budget on the text, then the tree; the result
   keeps its root. */
typedef struct manifest_doc {
  const mpk_mt_manifest_options *opts;
  mpk_mt_manifest **out;
  size_t max_files;
} manifest_doc;

static int prescan_manifest(void *ctx, const void *data, size_t len, const char *file, mpk_error *err) {
  manifest_doc *d = ctx;
  budget_scan b = {.file = file, .err = err};
  int rc = file_budget(d->opts, file, &b.max_files, err);
  if (rc) return rc;
  d->max_files = b.max_files;
  /* The budget first, on the text: a document past it costs one pass of the lexer, not a tree. A
     scan error (invalid JSON) is left for the parse to report. */
  mpk_error ignored;
  rc = mpk_json_scan(data, len, NULL, file, budget_event, &b, &ignored);
  return b.refused ? rc : 0; /* refused: err is set */
}

static int validate_manifest(void *ctx, mpk_jv *v, json_t *root, mpk_arena *a) {
  manifest_doc *d = ctx;
  mpk_mt_manifest *m = mpk_arena_alloc(a, sizeof *m);
  struct mpk_mt_manifest_priv *priv = m ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  if (!priv) return mpk_fail(v->err, MPK_ENOMEM, v->file, NULL, "out of memory");
  priv->arena = a;
  priv->root = root;
  m->priv_ = priv;
  int rc = parse_manifest(v, root, a, d->max_files, m);
  if (!rc) *d->out = m;
  return rc;
}

#define MANIFEST_DOCUMENT(d)                                                                           \
  {.name = MPK_MT_MANIFEST_FILENAME, .prescan = prescan_manifest, .validate = validate_manifest,        \
   .keep_root = true, .ctx = (d)}

int mpk_mt_manifest_parse_opts(const void *data, size_t len, const char *file, const mpk_mt_manifest_options *opts,
                               mpk_mt_manifest **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  manifest_doc d = {.opts = opts, .out = out};
  return mpk_document_parse(&(mpk_document)MANIFEST_DOCUMENT(&d), data, len, file, err);
}

int mpk_mt_manifest_load(const char *path, mpk_mt_manifest **out, mpk_error *err) {
  return mpk_mt_manifest_load_opts(path, NULL, out, err);
}

int mpk_mt_manifest_load_opts(const char *path, const mpk_mt_manifest_options *opts, mpk_mt_manifest **out,
                              mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  manifest_doc d = {.opts = opts, .out = out};
  return mpk_document_load(&(mpk_document)MANIFEST_DOCUMENT(&d), path, err);
}

void mpk_mt_manifest_free(mpk_mt_manifest *m) {
  if (!m) return;
  json_decref(m->priv_->root);
  mpk_arena_free(m->priv_->arena);
}

const json_t *mpk_mt_manifest_root(const mpk_mt_manifest *m) { return m->priv_->root; }

const mpk_mt_variant *mpk_mt_manifest_variant(const mpk_mt_manifest *m, const char *id) {
  for (size_t i = 0; m && id && i < m->n_variants; i++)
    if (strcmp(m->variants[i].id, id) == 0) return &m->variants[i];
  return NULL;
}

const mpk_mt_plan *mpk_mt_manifest_plan(const mpk_mt_manifest *m, const char *variant) {
  for (size_t i = 0; m && variant && i < m->n_plans; i++)
    if (strcmp(m->plans[i].variant, variant) == 0) return &m->plans[i];
  return NULL;
}

const mpk_mt_file *mpk_mt_manifest_file(const mpk_mt_manifest *m, const char *path) {
  if (!m || !path) return NULL;
  size_t lo = 0, hi = m->n_files;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(m->files[mid].path, path);
    if (c == 0) return &m->files[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

int mpk_mt_manifest_json(const mpk_mt_manifest *m, char **out, size_t *len, mpk_error *err) {
  if (!m || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  return mpk_json_write_document(m->priv_->root, true, out, len, err);
}
