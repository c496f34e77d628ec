/* Sealing a MobileTransformers package: mobiletransformers_manifest.json and each variant's
   checksums.json, byte-identical to the reference exporter (hub/package_format.py build_manifest,
   write_variant_checksums, write_manifest; cli/package_model.py for re-sealing) for the same tree
   and the same descriptive inputs. Rules and decisions: docs/mt-build.md.

   The exporter builds the manifest twice: pass 1 hashes the tree without the variants'
   checksums.json, which are then written from it; pass 2 hashes again, now with them. Only the
   checksums files differ between the passes, so here the tree is hashed once and the checksums
   files are hashed from the bytes about to be written. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mt/mt.h"
#include "mt/numeric/numeric.h"

#define MANIFEST MPK_MT_MANIFEST_FILENAME
#define CHECKSUMS MPK_MT_CHECKSUMS_FILENAME
#define MAX_FILES ((size_t)1 << 20)
#define MAX_ID_BYTES 255 /* a variant id is a directory name */

struct mpk_mt_build_result_priv {
  mpk_arena *arena;
};

/* ================================================================ descriptive inputs */

typedef struct variant_in {
  const char *id;   /* borrowed from the source document */
  json_t *obj;      /* the manifest's variant object (paths added once the tree is known) */
  bool has[4];      /* features: inference, train, rag, genai */
} variant_in;

typedef struct desc {
  json_t *man;      /* the manifest being built */
  variant_in *variants;
  size_t n;
  const char *default_variant;
  const char *notice_file;
} desc;

static const char *const FEATURES[4] = {"inference", "train", "rag", "genai"};

static void desc_free(desc *d) {
  for (size_t i = 0; i < d->n; i++) json_decref(d->variants[i].obj);
  free(d->variants);
  json_decref(d->man);
  memset(d, 0, sizeof *d);
}

static int nomem(mpk_jv *v) { return mpk_jv_fail(v, MPK_ENOMEM, "out of memory"); }

/* Put `value` (a new reference, NULL on allocation failure) into `obj` under `key`. */
static int put(mpk_jv *v, json_t *obj, const char *key, json_t *value) {
  if (!value || json_object_set_new(obj, key, value)) return nomem(v);
  return 0;
}

static bool in_list(const char *const *list, const char *s) {
  for (; *list; list++)
    if (strcmp(*list, s) == 0) return true;
  return false;
}

/* BUILD.json: every key must be known; keys the manifest derives from the tree get their own word. */
static int known_keys(mpk_jv *v, const json_t *obj, const char *const *allowed, const char *const *derived) {
  const char **keys;
  size_t n;
  if (mpk_json_keys_insertion(obj, &keys, &n)) return nomem(v);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    if (in_list(allowed, keys[i])) continue;
    size_t prev = mpk_path_push_key(&v->path, keys[i]);
    rc = in_list(derived, keys[i])
             ? mpk_jv_fail(v, MPK_EMALFORMED, "\"%s\" is derived from the package tree: remove it", keys[i])
             : mpk_jv_fail(v, MPK_EMALFORMED, "unknown field \"%s\"", keys[i]);
    mpk_path_pop(&v->path, prev);
  }
  free(keys);
  return rc;
}

enum { STR_OR_NULL, STR_LIST, BOOL_FALSE, COUNT_OR_NULL };

/* Read member `key` of `obj` as `kind` into a new reference `*out`; `absent` (consumed) is the
   value when the member is missing. */
static int field(mpk_jv *v, const json_t *obj, const char *key, int kind, json_t *absent, json_t **out) {
  const json_t *x = json_object_get(obj, key);
  *out = NULL;
  if (!x) {
    *out = absent;
    return absent ? 0 : nomem(v);
  }
  json_decref(absent);
  size_t prev = mpk_path_push_key(&v->path, key);
  int rc = 0;
  int64_t n;
  switch (kind) {
    case STR_OR_NULL:
      if (!json_is_null(x) && !json_is_string(x)) rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected a string or null");
      break;
    case STR_LIST:
      if (!json_is_array(x)) {
        rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected an array of strings");
        break;
      }
      for (size_t i = 0; i < json_array_size(x) && !rc; i++) {
        if (json_is_string(json_array_get(x, i))) continue;
        size_t p = mpk_path_push_index(&v->path, i);
        rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected a string");
        mpk_path_pop(&v->path, p);
      }
      break;
    case BOOL_FALSE: /* the exporter writes bool(value): null is false */
      if (json_is_null(x)) {
        mpk_path_pop(&v->path, prev);
        *out = json_false();
        return 0;
      }
      if (!json_is_boolean(x)) rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected true or false");
      break;
    case COUNT_OR_NULL:
      if (!json_is_null(x) && (!json_is_integer(x) || !mpk_json_safe_integer(x, &n) || n < 0))
        rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected a non-negative integer or null");
      break;
  }
  mpk_path_pop(&v->path, prev);
  if (rc) return rc;
  *out = json_deep_copy(x);
  return *out ? 0 : nomem(v);
}

static int copy_field(mpk_jv *v, const json_t *src, json_t *dst, const char *key, int kind, json_t *absent) {
  json_t *x;
  int rc = field(v, src, key, kind, absent, &x);
  return rc ? rc : put(v, dst, key, x);
}

/* A variant id names one directory under variants/. */
static int check_id(mpk_jv *v, const json_t *x, const char **out) {
  const char *why = NULL;
  if (!json_is_string(x)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected a string");
  const char *s = json_string_value(x);
  if (!*s) why = "is empty";
  else if (strlen(s) > MAX_ID_BYTES) why = "is longer than 255 bytes";
  else if (strchr(s, '/')) why = "contains a slash";
  else mpk_path_is_confined(s, &why);
  if (why)
    return mpk_jv_fail(v, MPK_EMALFORMED, "variant id \"%s\" %s: it must name one directory under variants/", s, why);
  *out = s;
  return 0;
}

static int read_variant(mpk_jv *v, const json_t *src, bool strict, variant_in *out) {
  static const char *const allowed[] = {"id", "executionProvider", "quantization", "supportedEngines", "abi",
                                        "features", "minimumAndroidApi", "recommendedDeviceMemoryMb", NULL};
  static const char *const derived[] = {"paths", "weightHandoff", NULL};
  static const char *const required[] = {"id", "executionProvider", "quantization", NULL};
  int rc = mpk_jv_object(v, src);
  if (!rc && strict) rc = known_keys(v, src, allowed, derived);
  if (!rc) rc = mpk_jv_required_keys(v, src, required);
  if (rc) return rc;
  MPK_JV_AT(v, "id", check_id(v, json_object_get(src, "id"), &out->id));
  const char *ep;
  MPK_JV_AT(v, "executionProvider", mpk_jv_string(v, json_object_get(src, "executionProvider"), &ep));
  json_t *o = out->obj = json_object();
  if (!o) return nomem(v);
  if ((rc = put(v, o, "id", json_string(out->id))) || (rc = put(v, o, "executionProvider", json_string(ep))) ||
      (rc = copy_field(v, src, o, "quantization", STR_OR_NULL, json_null())) ||
      (rc = copy_field(v, src, o, "supportedEngines", STR_LIST, json_pack("[s]", "native"))) ||
      (rc = copy_field(v, src, o, "features", STR_LIST, json_array())) ||
      (rc = copy_field(v, src, o, "minimumAndroidApi", COUNT_OR_NULL, json_null())) ||
      (rc = copy_field(v, src, o, "recommendedDeviceMemoryMb", COUNT_OR_NULL, json_null())))
    return rc;
  /* abi: null (runs on any ABI) or a list of ABIs. */
  const json_t *abi = json_object_get(src, "abi");
  if (!abi || json_is_null(abi)) rc = put(v, o, "abi", json_null());
  else rc = copy_field(v, src, o, "abi", STR_LIST, NULL);
  if (rc) return rc;
  const json_t *features = json_object_get(o, "features");
  for (size_t i = 0; i < json_array_size(features); i++)
    for (int f = 0; f < 4; f++) out->has[f] |= strcmp(json_string_value(json_array_get(features, i)), FEATURES[f]) == 0;
  char handoff[600];
  snprintf(handoff, sizeof handoff, "variants/%s/inference/weight_handoff_map.json", out->id);
  return put(v, o, "weightHandoff", json_string(handoff));
}

static int read_variants(mpk_jv *v, const json_t *list, bool strict, desc *d) {
  if (!json_is_array(list) || json_array_size(list) == 0)
    return mpk_jv_fail(v, MPK_EMALFORMED, "expected a non-empty array of variant descriptors");
  size_t n = json_array_size(list);
  if (!(d->variants = calloc(n, sizeof *d->variants))) return nomem(v);
  for (size_t i = 0; i < n; i++) {
    size_t prev = mpk_path_push_index(&v->path, i);
    int rc = read_variant(v, json_array_get(list, i), strict, &d->variants[i]);
    d->n = i + 1;
    for (size_t j = 0; !rc && j < i; j++)
      if (strcmp(d->variants[j].id, d->variants[i].id) == 0) {
        size_t p = mpk_path_push_key(&v->path, "id");
        rc = mpk_jv_fail(v, MPK_EMALFORMED, "variant id \"%s\" appears twice (variants %zu and %zu)",
                         d->variants[i].id, j, i);
        mpk_path_pop(&v->path, p);
      }
    mpk_path_pop(&v->path, prev);
    if (rc) return rc;
  }
  return 0;
}

/* BUILD.json's androidRuntime / license: exactly the keys the exporter writes. */
static int read_fixed_object(mpk_jv *v, const json_t *src, const char *key, const char *const *keys,
                             const int *kinds, json_t *dst) {
  const json_t *x = json_object_get(src, key);
  size_t prev = mpk_path_push_key(&v->path, key);
  int rc = mpk_jv_object(v, x);
  if (!rc) rc = known_keys(v, x, keys, (const char *const[]){NULL});
  if (!rc) rc = mpk_jv_required_keys(v, x, keys);
  json_t *o = rc ? NULL : json_object();
  if (!rc && !o) rc = nomem(v);
  for (size_t i = 0; !rc && keys[i]; i++) rc = copy_field(v, x, o, keys[i], kinds[i], NULL);
  mpk_path_pop(&v->path, prev);
  if (rc) {
    json_decref(o);
    return rc;
  }
  return put(v, dst, key, o);
}

/* The descriptive inputs, from BUILD.json (`strict`: unknown fields refused, androidRuntime and
   license complete) or from an existing manifest (its other fields ignored, as the exporter's
   re-emit does; androidRuntime and license carried over as they are). */
static int read_desc(mpk_jv *v, const json_t *src, bool strict, desc *d) {
  static const char *const allowed[] = {
      "baseModelId", "exportedAt", "defaultVariant", "mobiletransformersVersion", "architectures",
      "supportedTasks", "selectedTask", "trustRemoteCode", "optimumOnnxVersion", "transformersVersion",
      "onnxRuntimeTrainingVersion", "onnxRuntimeGenAIVersion", "peftMethods", "quantization",
      "trainableParameterCount", "trainingParameterCount", "androidRuntime", "license", "variants", NULL};
  static const char *const derived[] = {"schemaVersion", "minReaderVersion", "artifactFormatVersion", "downloadPlan",
                                        "requiredFiles", "fileSizes", "sha256", "weightHandoff", NULL};
  static const char *const required[] = {"baseModelId", "variants", NULL};
  int rc = mpk_jv_object(v, src);
  if (!rc && strict) rc = known_keys(v, src, allowed, derived);
  if (!rc) rc = mpk_jv_required_keys(v, src, required);
  if (rc) return rc;
  json_t *m = d->man = json_object();
  if (!m) return nomem(v);

  const char *base;
  MPK_JV_AT(v, "baseModelId", mpk_jv_string(v, json_object_get(src, "baseModelId"), &base));
  const json_t *at = json_object_get(src, "exportedAt");
  if (at && !json_is_null(at) && !json_is_string(at))
    MPK_JV_AT(v, "exportedAt", mpk_jv_fail(v, MPK_EMALFORMED, "expected a string or null"));
  /* Fixed by the format, then the exporter's `report.get(key, default)` fields. */
  if ((rc = put(v, m, "schemaVersion", json_string("1.0"))) ||
      (rc = put(v, m, "minReaderVersion", json_string("1.0"))) ||
      (rc = put(v, m, "artifactFormatVersion", json_integer(1))) ||
      (rc = put(v, m, "baseModelId", json_string(base))) ||
      (rc = put(v, m, "exportedAt", json_string(json_is_string(at) ? json_string_value(at) : ""))) ||
      (rc = copy_field(v, src, m, "mobiletransformersVersion", STR_OR_NULL, json_string(""))))
    return rc;
  static const char *const lists[] = {"architectures", "supportedTasks", "peftMethods", "quantization"};
  for (size_t i = 0; i < 4; i++)
    if ((rc = copy_field(v, src, m, lists[i], STR_LIST, json_array()))) return rc;
  static const char *const nullable[] = {"selectedTask", "optimumOnnxVersion", "transformersVersion",
                                         "onnxRuntimeTrainingVersion", "onnxRuntimeGenAIVersion"};
  for (size_t i = 0; i < 5; i++)
    if ((rc = copy_field(v, src, m, nullable[i], STR_OR_NULL, json_null()))) return rc;
  if ((rc = copy_field(v, src, m, "trustRemoteCode", BOOL_FALSE, json_false())) ||
      (rc = copy_field(v, src, m, "trainableParameterCount", COUNT_OR_NULL, json_null())) ||
      (rc = copy_field(v, src, m, "trainingParameterCount", COUNT_OR_NULL, json_null())))
    return rc;

  static const char *const ar_keys[] = {"minimumAndroidApi", "recommendedDeviceMemoryMb", "requiredAbis", NULL};
  static const int ar_kinds[] = {COUNT_OR_NULL, COUNT_OR_NULL, STR_LIST};
  static const char *const lic_keys[] = {"framework", "baseModelWeights", "noticeFile", NULL};
  static const int lic_kinds[] = {STR_OR_NULL, STR_OR_NULL, STR_OR_NULL};
  const json_t *ar = json_object_get(src, "androidRuntime"), *lic = json_object_get(src, "license");
  if (!ar) rc = put(v, m, "androidRuntime",
                    json_pack("{s:n, s:n, s:[]}", "minimumAndroidApi", "recommendedDeviceMemoryMb", "requiredAbis"));
  else if (strict) rc = read_fixed_object(v, src, "androidRuntime", ar_keys, ar_kinds, m);
  else rc = put(v, m, "androidRuntime", json_deep_copy(ar));
  if (rc) return rc;
  if (!lic)
    rc = put(v, m, "license",
             json_pack("{s:s, s:n, s:n}", "framework", "Apache-2.0", "baseModelWeights", "noticeFile"));
  else if (strict) rc = read_fixed_object(v, src, "license", lic_keys, lic_kinds, m);
  else rc = put(v, m, "license", json_deep_copy(lic));
  if (rc) return rc;
  const json_t *notice = json_object_get(json_object_get(m, "license"), "noticeFile");
  if (json_is_string(notice)) {
    const char *why;
    d->notice_file = json_string_value(notice);
    if (!mpk_path_is_confined(d->notice_file, &why)) {
      mpk_path_push_key(&v->path, "license");
      mpk_path_push_key(&v->path, "noticeFile");
      return mpk_jv_fail(v, MPK_EMALFORMED, "noticeFile \"%s\" %s: it must be a package-relative path",
                         d->notice_file, why);
    }
  }

  MPK_JV_AT(v, "variants", read_variants(v, json_object_get(src, "variants"), strict, d));
  json_t *list = json_array();
  if (!list || json_object_set_new(m, "variants", list)) return nomem(v);
  for (size_t i = 0; i < d->n; i++)
    if (json_array_append(list, d->variants[i].obj)) return nomem(v);

  /* defaultVariant: the exporter takes `default or variants[0].id` and refuses one not among them. */
  const json_t *dv = json_object_get(src, "defaultVariant");
  if (dv && !json_is_null(dv) && !json_is_string(dv))
    MPK_JV_AT(v, "defaultVariant", mpk_jv_fail(v, MPK_EMALFORMED, "expected a string or null"));
  d->default_variant = json_is_string(dv) && json_string_length(dv) ? json_string_value(dv) : d->variants[0].id;
  bool found = false;
  for (size_t i = 0; i < d->n; i++) found |= strcmp(d->variants[i].id, d->default_variant) == 0;
  if (!found) {
    char ids[400] = "";
    for (size_t i = 0, o = 0; i < d->n && o < sizeof ids - 1; i++)
      o += (size_t)snprintf(ids + o, sizeof ids - o, "%s\"%s\"", i ? ", " : "", d->variants[i].id);
    MPK_JV_AT(v, "defaultVariant",
              mpk_jv_fail(v, MPK_EMALFORMED, "defaultVariant \"%s\" is not among the variants (%s)", d->default_variant,
                          ids));
  }
  return put(v, m, "defaultVariant", json_string(d->default_variant));
}

/* ================================================================ the tree */

typedef struct entry {
  char *path;
  uint64_t size;
  char hex[65];
} entry;

typedef struct tree {
  const char *dir;
  const desc *d;
  entry *e;
  size_t n, cap;
  mpk_error *err;
} tree;

static void tree_free(tree *t) {
  for (size_t i = 0; i < t->n; i++) free(t->e[i].path);
  free(t->e);
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const entry *)a)->path, ((const entry *)b)->path);
}

static entry *tree_find(const tree *t, const char *path) {
  entry probe = {.path = (char *)path};
  return t->n ? bsearch(&probe, t->e, t->n, sizeof *t->e, cmp_entry) : NULL;
}

static int tree_add(tree *t, const char *path, uint64_t size) {
  if (t->n == MAX_FILES)
    return mpk_fail(t->err, MPK_ELIMIT, t->dir, NULL, "the package holds more than %zu files", MAX_FILES);
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    entry *e = realloc(t->e, cap * sizeof *e);
    if (!e) return mpk_fail(t->err, MPK_ENOMEM, t->dir, NULL, "out of memory");
    t->e = e;
    t->cap = cap;
  }
  entry *e = &t->e[t->n];
  memset(e, 0, sizeof *e);
  if (!(e->path = strdup(path))) return mpk_fail(t->err, MPK_ENOMEM, t->dir, NULL, "out of memory");
  e->size = size;
  t->n++;
  return 0;
}

/* Strict UTF-8: what Python can hold as a str without surrogate escapes. */
static bool valid_utf8(const unsigned char *s) {
  while (*s) {
    unsigned c = *s, min;
    int extra;
    if (c < 0x80) {
      s++;
      continue;
    }
    if ((c & 0xE0) == 0xC0) extra = 1, min = 0x80, c &= 0x1F;
    else if ((c & 0xF0) == 0xE0) extra = 2, min = 0x800, c &= 0x0F;
    else if ((c & 0xF8) == 0xF0) extra = 3, min = 0x10000, c &= 0x07;
    else return false;
    for (int k = 1; k <= extra; k++) {
      if ((s[k] & 0xC0) != 0x80) return false;
      c = (c << 6) | (s[k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
    s += extra + 1;
  }
  return true;
}

/* "variants/<declared id>/checksums.json": regenerated, so left out of the first pass. */
static bool is_own_checksums(const desc *d, const char *rel) {
  static const char pre[] = "variants/", suf[] = "/" CHECKSUMS;
  if (strncmp(rel, pre, sizeof pre - 1) != 0) return false;
  const char *id = rel + sizeof pre - 1, *slash = strchr(id, '/');
  if (!slash || strcmp(slash, suf) != 0) return false;
  for (size_t i = 0; i < d->n; i++)
    if (strlen(d->variants[i].id) == (size_t)(slash - id) && strncmp(d->variants[i].id, id, (size_t)(slash - id)) == 0)
      return true;
  return false;
}

static int fail_file(tree *t, int code, const char *rel, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_file(tree *t, int code, const char *rel, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char *full = mpk_path_join(t->dir, rel);
  mpk_fail(t->err, code, full ? full : rel, NULL, "%s", msg);
  free(full);
  return code;
}

static int on_file(void *ctx, const char *rel, int type, uint64_t size) {
  tree *t = ctx;
  const char *why;
  if (!valid_utf8((const unsigned char *)rel))
    return fail_file(t, MPK_EUNSUPPORTED, rel, "the name is not valid UTF-8: a manifest lists Unicode paths only");
  if (type == MPK_WALK_LINK)
    return fail_file(t, MPK_EUNSUPPORTED, rel,
                     "\"%s\" is a symbolic link: a package holds regular files and directories only", rel);
  if (type != MPK_WALK_FILE)
    return fail_file(t, MPK_EUNSUPPORTED, rel,
                     "\"%s\" is a special file: a package holds regular files and directories only", rel);
  const char *base = strrchr(rel, '/');
  base = base ? base + 1 : rel;
  if (strcmp(base, MANIFEST) == 0 || is_own_checksums(t->d, rel)) return 0;
  /* A device merge's record is device state, not package content: a package sealed from a merged
     tree ships the merged bytes as its own, under their own digests. A pending transaction (its
     journal or temporaries) must be finished first, or the manifest would seal half of it. */
  if (strcmp(base, MPK_MT_MERGE_RECORD) == 0) return 0;
  /* The load gate's stamp is device state too: a sealed package never vouches for its own bytes. */
  if (mpk_mt_is_device_file(base) && strncmp(base, MPK_MT_STAMP_FILE, sizeof MPK_MT_STAMP_FILE - 1) == 0) return 0;
  /* So are the adapter membership, the adapter copies and kept bases written beside it. */
  if (strcmp(base, MPK_MT_MEMBERS) == 0 || strncmp(base, MPK_MT_ADAPTER_PREFIX, sizeof MPK_MT_ADAPTER_PREFIX - 1) == 0 ||
      (strlen(base) > sizeof MPK_MT_KEPT_SUFFIX - 1 &&
       strcmp(base + strlen(base) - (sizeof MPK_MT_KEPT_SUFFIX - 1), MPK_MT_KEPT_SUFFIX) == 0))
    return 0;
  if (mpk_mt_is_device_file(base))
    return fail_file(t, MPK_EUNSUPPORTED, rel,
                     "\"%s\" belongs to an interrupted merge transaction: finish it with the load gate "
                     "(`modelpkg mt tensors DIR --variant ID`) before sealing",
                     rel);
  if (!mpk_path_is_confined(rel, &why))
    return fail_file(t, MPK_EUNSUPPORTED, rel, "\"%s\" cannot be listed in a manifest: the path %s", rel, why);
  return tree_add(t, rel, size);
}

/* What lives at DIR/rel: -1 nothing, else the st_mode. */
static int mode_of(const char *dir, const char *rel) {
  char *full = mpk_path_join(dir, rel);
  struct stat st;
  int mode = full && lstat(full, &st) == 0 ? (int)st.st_mode : -1;
  free(full);
  return mode;
}

/* Pass 1: every listed file, hashed once on the worker pool. */
static int hash_tree(tree *t, const mpk_mt_build_input *in) {
  mpk_digest_job *jobs = calloc(t->n ? t->n : 1, sizeof *jobs);
  if (!jobs) return mpk_fail(t->err, MPK_ENOMEM, t->dir, NULL, "out of memory");
  int rc = 0;
  for (size_t i = 0; i < t->n && !rc; i++) {
    char *full = mpk_path_join(t->dir, t->e[i].path);
    if (!full) rc = mpk_fail(t->err, MPK_ENOMEM, t->dir, NULL, "out of memory");
    jobs[i].path = full;
    jobs[i].algo = MPK_DIGEST_SHA256;
    jobs[i].expected_size = t->e[i].size;
  }
  if (!rc) rc = mpk_digest_files(jobs, t->n, in->workers, in->progress, in->progress_ctx, t->err);
  for (size_t i = 0; i < t->n && !rc; i++) {
    if (jobs[i].code) rc = jobs[i].code; /* t->err holds the first failed job's error */
    else if (jobs[i].size != t->e[i].size)
      rc = fail_file(t, MPK_EIO, t->e[i].path,
                     "the file changed while the package was being sealed (%llu bytes when listed, %llu when hashed)",
                     (unsigned long long)t->e[i].size, (unsigned long long)jobs[i].size);
    else memcpy(t->e[i].hex, jobs[i].hex, sizeof t->e[i].hex);
  }
  for (size_t i = 0; i < t->n; i++) free((char *)jobs[i].path);
  free(jobs);
  return rc;
}

/* ================================================================ documents */

typedef struct doc {
  char rel[600];
  char *bytes;
  size_t len;
} doc;

/* Each variant's checksums.json: the first pass's digests under variants/<id>/. */
static int checksums_doc(const tree *t, const char *id, doc *out, mpk_error *err) {
  char prefix[600];
  snprintf(prefix, sizeof prefix, "variants/%s/", id);
  snprintf(out->rel, sizeof out->rel, "variants/%s/%s", id, CHECKSUMS);
  size_t plen = strlen(prefix);
  json_t *o = json_object();
  for (size_t i = 0; o && i < t->n; i++)
    if (strncmp(t->e[i].path, prefix, plen) == 0 && json_object_set_new(o, t->e[i].path, json_string(t->e[i].hex))) {
      json_decref(o);
      o = NULL;
    }
  if (!o) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  int rc = mpk_json_write_document(o, true, &out->bytes, &out->len, err);
  json_decref(o);
  return rc;
}

static json_t *download_plan(const variant_in *var) {
  char p[5][640];
  snprintf(p[0], sizeof p[0], "variants/%s/inference/**", var->id);
  snprintf(p[1], sizeof p[1], "variants/%s/train/**", var->id);
  snprintf(p[2], sizeof p[2], "variants/%s/embedding/**", var->id);
  snprintf(p[3], sizeof p[3], "variants/%s/inference/genai_config.json", var->id);
  snprintf(p[4], sizeof p[4], "variants/%s/%s", var->id, CHECKSUMS);
  json_t *plan = json_pack("{s:[s,s,s,s,s], s:[s]}", "core", MANIFEST, "shared/tokenizer/**",
                           "shared/chat_template.jinja", "shared/config.json", "shared/generation_config.json",
                           "checksums", p[4]);
  static const char *const groups[4] = {"inference", "train", "rag", "genai"};
  for (int f = 0; plan && f < 4; f++) {
    json_t *list = var->has[f] ? json_pack("[s]", p[f]) : json_array();
    if (!list || json_object_set_new(plan, groups[f], list)) {
      json_decref(plan);
      plan = NULL;
    }
  }
  return plan;
}

/* The `paths` of a variant: the tokenizer, and each of its subtrees that exists as a directory. */
static json_t *variant_paths(const char *dir, const char *id) {
  static const char *const subs[] = {"train", "inference", "embedding"};
  json_t *paths = json_pack("{s:s}", "tokenizer", "shared/tokenizer");
  for (int i = 0; paths && i < 3; i++) {
    char rel[640];
    snprintf(rel, sizeof rel, "variants/%s/%s", id, subs[i]);
    int mode = mode_of(dir, rel);
    if (mode != -1 && S_ISDIR((mode_t)mode) && json_object_set_new(paths, subs[i], json_string(rel))) {
      json_decref(paths);
      paths = NULL;
    }
  }
  return paths;
}

/* ================================================================ result */

typedef struct results {
  mpk_arena *a;
  mpk_mt_change *changes;
  size_t n_changes, cap_changes;
  const char **written;
  size_t n_written;
} results;

static int add_change(results *r, const char *path, mpk_mt_change_kind kind) {
  if (r->n_changes == r->cap_changes) {
    size_t cap = r->cap_changes ? r->cap_changes * 2 : 16;
    mpk_mt_change *c = mpk_arena_array(r->a, cap, sizeof *c);
    if (!c) return MPK_ENOMEM;
    if (r->n_changes) memcpy(c, r->changes, r->n_changes * sizeof *c);
    r->changes = c;
    r->cap_changes = cap;
  }
  const char *copy = mpk_arena_strdup(r->a, path);
  if (!copy) return MPK_ENOMEM;
  r->changes[r->n_changes].path = copy;
  r->changes[r->n_changes++].kind = kind;
  return 0;
}

/* fileSizes/sha256 now against the previous manifest's (both sorted by path). */
static int diff_files(results *r, const mpk_mt_manifest *prev, const tree *t) {
  size_t i = 0, j = 0;
  while (i < t->n || j < prev->n_files) {
    int c = i == t->n ? 1 : j == prev->n_files ? -1 : strcmp(t->e[i].path, prev->files[j].path);
    int rc = 0;
    if (c < 0) {
      rc = add_change(r, t->e[i++].path, MPK_MT_FILE_ADDED);
    } else if (c > 0) {
      rc = add_change(r, prev->files[j++].path, MPK_MT_FILE_REMOVED);
    } else {
      const mpk_mt_file *f = &prev->files[j++];
      const entry *e = &t->e[i++];
      if (!f->has_size || f->size != e->size || !f->sha256 || strcmp(f->sha256, e->hex) != 0)
        rc = add_change(r, e->path, MPK_MT_FILE_CHANGED);
    }
    if (rc) return rc;
  }
  return 0;
}

/* Replace DIR/rel with `bytes` unless it already holds exactly them; record it when it changes. */
static int write_doc(const char *dir, const doc *d, bool dry_run, results *r, mpk_error *err) {
  char *full = mpk_path_join(dir, d->rel);
  if (!full) return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  bool same = false;
  struct stat st;
  if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == d->len) {
    mpk_mapped m;
    mpk_error ignored;
    if (mpk_map_file(full, 0, &m, &ignored) == 0) {
      same = m.size == d->len && memcmp(m.data, d->bytes, d->len) == 0;
      mpk_unmap_file(&m);
    }
  }
  int rc = same || dry_run ? 0 : mpk_write_file_atomic(full, d->bytes, d->len, err);
  free(full);
  if (rc || same) return rc;
  if (!(r->written[r->n_written++] = mpk_arena_strdup(r->a, d->rel)))
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  return 0;
}

/* ================================================================ mpk_mt_build */

int mpk_mt_build(const char *dir, const mpk_mt_build_input *in, mpk_mt_build_result *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out); /* releasable whatever happens next */
  if (!dir || !in || !out || (in->describe == NULL && in->describe_len))
    return mpk_fail(err, MPK_EINVAL, dir, NULL, "NULL argument");
  if (!mpk_is_dir(dir)) return mpk_fail(err, MPK_ENOTFOUND, dir, NULL, "not a directory");

  char *manifest_path = mpk_path_join(dir, MANIFEST);
  mpk_mt_manifest *prev = NULL, *readback = NULL;
  json_t *src = NULL;
  desc d = {0};
  tree t = {.dir = dir, .d = &d, .err = err};
  doc *docs = NULL;
  size_t n_docs = 0;
  results r = {.a = mpk_arena_new()};
  struct mpk_mt_build_result_priv *priv = r.a ? mpk_arena_alloc(r.a, sizeof *priv) : NULL;
  int rc = 0;
  if (!manifest_path || !priv) {
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    goto done;
  }
  priv->arena = r.a;

  /* The previous manifest: the descriptive inputs when re-sealing, and what changes are told against. */
  int mmode = mode_of(dir, MANIFEST);
  if (mmode != -1 && !S_ISREG((mode_t)mmode)) {
    rc = mpk_fail(err, MPK_EUNSUPPORTED, manifest_path, NULL, "not a regular file: the manifest is written there");
    goto done;
  }
  if (!in->describe) {
    if (mmode == -1) {
      rc = mpk_fail(err, MPK_ENOTFOUND, manifest_path, NULL,
                    "no manifest to re-seal: seal a new package from a BUILD.json (modelpkg mt build --describe)");
      goto done;
    }
    if ((rc = mpk_mt_manifest_load(manifest_path, &prev, err))) goto done;
  } else if (mmode != -1) {
    mpk_error ignored;
    if (mpk_mt_manifest_load(manifest_path, &prev, &ignored)) prev = NULL; /* replaced, not read */
  }

  mpk_jv v = {.file = in->describe ? (in->describe_file ? in->describe_file : "BUILD.json") : manifest_path,
              .err = err};
  mpk_path_init(&v.path);
  if (in->describe && (rc = mpk_json_parse(in->describe, in->describe_len, NULL, v.file, &src, err))) goto done;
  if ((rc = read_desc(&v, in->describe ? src : mpk_mt_manifest_root(prev), in->describe != NULL, &d))) goto done;

  /* Every declared variant has its directory (the exporter would create an empty one). */
  for (size_t i = 0; i < d.n; i++) {
    char rel[600], ptr[64];
    snprintf(rel, sizeof rel, "variants/%s", d.variants[i].id);
    int mode = mode_of(dir, rel);
    snprintf(ptr, sizeof ptr, "/variants/%zu/id", i);
    if (mode != -1 && S_ISLNK((mode_t)mode)) {
      rc = mpk_fail(err, MPK_EUNSUPPORTED, v.file, ptr,
                    "variant \"%s\": %s/ is a symbolic link: a package holds regular files and directories only",
                    d.variants[i].id, rel);
      goto done;
    }
    if (mode == -1 || !S_ISDIR((mode_t)mode)) {
      rc = mpk_fail(err, MPK_ENOTFOUND, v.file, ptr, "variant \"%s\" has no directory %s/ in the package",
                    d.variants[i].id, rel);
      goto done;
    }
    snprintf(rel, sizeof rel, "variants/%s/%s", d.variants[i].id, CHECKSUMS);
    mode = mode_of(dir, rel);
    if (mode != -1 && !S_ISREG((mode_t)mode)) {
      char *full = mpk_path_join(dir, rel);
      rc = mpk_fail(err, MPK_EUNSUPPORTED, full ? full : rel, NULL,
                    "not a regular file: the variant's checksums are written there");
      free(full);
      goto done;
    }
  }

  /* What an interrupted earlier run left beside the documents it writes is not package content. */
  if (!in->dry_run) {
    char *mp = mpk_path_join(dir, MPK_MT_MANIFEST_FILENAME);
    rc = mp ? mpk_atomic_cleanup(mp, NULL, err) : mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    free(mp);
    for (size_t i = 0; !rc && i < d.n; i++) {
      char rel[600];
      snprintf(rel, sizeof rel, "variants/%s/%s", d.variants[i].id, CHECKSUMS);
      char *cp = mpk_path_join(dir, rel);
      rc = cp ? mpk_atomic_cleanup(cp, NULL, err) : mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
      free(cp);
    }
    if (rc) goto done;
  }

  /* Pass 1: list and hash the tree (without the manifest and the declared variants' checksums). */
  if ((rc = mpk_walk_files(dir, on_file, &t, err))) goto done;
  if (t.n) mpk_sort(t.e, t.n, sizeof *t.e, cmp_entry);
  if ((rc = hash_tree(&t, in))) goto done;

  /* Required files must be there: the exporter would list them regardless. */
  char model[600];
  snprintf(model, sizeof model, "variants/%s/inference/model.onnx", d.default_variant);
  const char *required[] = {"shared/tokenizer/tokenizer.json", model};
  for (int i = 0; i < 2; i++)
    if (!tree_find(&t, required[i])) {
      char *full = mpk_path_join(dir, required[i]);
      rc = mpk_fail(err, MPK_ENOTFOUND, full ? full : required[i], NULL,
                    "required file is missing: requiredFiles lists it%s", i ? " for the defaultVariant" : "");
      free(full);
      goto done;
    }

  /* The checksums files from pass 1, then pass 2: they join the listing, hashed from memory. */
  docs = calloc(d.n + 1, sizeof *docs);
  if (!docs) {
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < d.n; i++) {
    if ((rc = checksums_doc(&t, d.variants[i].id, &docs[n_docs], err))) goto done;
    n_docs++;
  }
  for (size_t i = 0; i < n_docs; i++) {
    if ((rc = tree_add(&t, docs[i].rel, docs[i].len))) goto done;
    uint8_t h[MPK_SHA256_LEN];
    if (mpk_sha256(docs[i].bytes, docs[i].len, h)) {
      rc = mpk_fail(err, MPK_EIO, dir, NULL, "SHA-256 failed");
      goto done;
    }
    mpk_hex(h, sizeof h, t.e[t.n - 1].hex);
  }
  if (t.n) mpk_sort(t.e, t.n, sizeof *t.e, cmp_entry);
  if (d.notice_file && !tree_find(&t, d.notice_file)) {
    char *full = mpk_path_join(dir, d.notice_file);
    rc = mpk_fail(err, MPK_ENOTFOUND, full ? full : d.notice_file, NULL,
                  "license noticeFile is missing: the manifest names it");
    free(full);
    goto done;
  }

  /* The derived half of the manifest. */
  json_t *m = d.man, *sizes = json_object(), *sums = json_object(), *plan = json_object();
  char handoff[600];
  snprintf(handoff, sizeof handoff, "variants/%s/inference/weight_handoff_map.json", d.default_variant);
  bool ok = sizes && sums && plan;
  if (ok) { /* json_object_set_new takes the reference even when it fails */
    int bad = json_object_set_new(m, "fileSizes", sizes); /* all three run: each takes its reference */
    bad |= json_object_set_new(m, "sha256", sums);
    bad |= json_object_set_new(m, "downloadPlan", plan);
    ok = !bad;
  } else {
    json_decref(sizes), json_decref(sums), json_decref(plan);
  }
  ok = ok && !json_object_set_new(m, "requiredFiles", json_pack("[s,s,s]", MANIFEST, required[0], required[1])) &&
       !json_object_set_new(m, "weightHandoff", json_string(handoff));
  for (size_t i = 0; ok && i < t.n; i++) {
    out->total_bytes += t.e[i].size;
    ok = !json_object_set_new(sizes, t.e[i].path, json_integer((json_int_t)t.e[i].size)) &&
         !json_object_set_new(sums, t.e[i].path, json_string(t.e[i].hex));
  }
  for (size_t i = 0; ok && i < d.n; i++)
    ok = !json_object_set_new(d.variants[i].obj, "paths", variant_paths(dir, d.variants[i].id)) &&
         !json_object_set_new(plan, d.variants[i].id, download_plan(&d.variants[i]));
  if (!ok) {
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    goto done;
  }
  doc *man = &docs[n_docs];
  snprintf(man->rel, sizeof man->rel, "%s", MANIFEST);
  if ((rc = mpk_json_write_document(m, true, &man->bytes, &man->len, err))) goto done;
  n_docs++;

  /* Read back what is about to be written, as a reader will. */
  mpk_error why; /* the caller's err may be NULL */
  mpk_error_clear(&why);
  if ((rc = mpk_mt_manifest_parse(man->bytes, man->len, manifest_path, &readback, &why))) {
    mpk_fail(err, rc, why.file, why.pointer, "the manifest built would not read back: %s", why.message);
    goto done;
  }

  /* The parity gate: on the manifest about to be written and the tree as it is, before anything
     is written (a failing gate leaves the package unchanged). */
  if (in->parity) {
    mpk_mt_manifest *given = readback;
    readback = NULL;
    if ((rc = mpk_mtn_parity_with(dir, given, in->parity, &out->parity, err))) goto done;
    if (!out->parity->pass) {
      rc = mpk_fail(err, MPK_EMISMATCH, dir, NULL, "the parity gate failed (variant \"%s\"), nothing written: %s",
                    out->parity->variant, out->parity->verdict);
      goto done;
    }
  }

  out->had_manifest = prev != NULL;
  out->n_files = t.n;
  if (prev && (rc = diff_files(&r, prev, &t))) {
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    goto done;
  }
  if (!(r.written = mpk_arena_array(r.a, n_docs, sizeof *r.written))) {
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    goto done;
  }
  /* Checksums first, the manifest last: it never lists digests of files not yet on disk. */
  for (size_t i = 0; i < n_docs; i++)
    if ((rc = write_doc(dir, &docs[i], in->dry_run != 0, &r, err))) goto done;

  out->changes = r.changes;
  out->n_changes = r.n_changes;
  out->written = r.written;
  out->n_written = r.n_written;
  out->manifest = man->bytes;
  out->manifest_len = man->len;
  man->bytes = NULL;
  out->priv_ = priv;
  r.a = NULL;
done:
  for (size_t i = 0; docs && i <= d.n; i++) mpk_free(docs[i].bytes);
  free(docs);
  tree_free(&t);
  desc_free(&d);
  json_decref(src);
  mpk_mt_manifest_free(readback);
  mpk_mt_manifest_free(prev);
  free(manifest_path);
  mpk_arena_free(r.a);
  return rc;
}

void mpk_mt_build_result_free(mpk_mt_build_result *r) {
  if (!r) return;
  mpk_free(r->manifest);
  mpk_mt_parity_report_free(r->parity);
  if (r->priv_) mpk_arena_free(r->priv_->arena);
  memset(r, 0, sizeof *r);
}
