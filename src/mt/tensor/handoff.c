/* weight_handoff_map.json: the version gate, typed fail-closed reading of every field of the spec and
   the reference (artifacts/handoff_map.py), the invariants of HandoffMap.validate() and a few more,
   and the byte-deterministic writer (HandoffMap.to_json()). Unknown fields are tolerated and kept in
   the JSON root, so writing back loses nothing. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mt/mt.h"

#define AT_KEY MPK_JV_AT
#define NOMEM(v) mpk_jv_fail((v), MPK_ENOMEM, "out of memory")

struct mpk_mt_handoff_priv {
  mpk_arena *arena;
  json_t *root;
};

static const char *const role_names[MPK_MT_ROLE_COUNT] = {"weight", "weight_quantized", "scale", "zero_point"};

const char *mpk_mt_role_name(mpk_mt_role role) {
  return (unsigned)role < MPK_MT_ROLE_COUNT ? role_names[role] : NULL;
}

static int role_index(const char *key) {
  for (int r = 0; r < MPK_MT_ROLE_COUNT; r++)
    if (strcmp(key, role_names[r]) == 0) return r;
  return -1;
}

/* The dtypes a map may declare: core's registry, MPK_DTYPE_HANDOFF. */
static bool known_dtype(const char *s) {
  const mpk_dtype *d = mpk_dtype_by_name(s);
  return d && (d->flags & MPK_DTYPE_HANDOFF);
}

/* A failure naming the entry (by its trainingBaseLayerName) and the rule, at the current path. */
static int efail(mpk_jv *v, const mpk_mt_handoff_entry *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int efail(mpk_jv *v, const mpk_mt_handoff_entry *e, int code, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (e && e->training_base_layer_name) return mpk_jv_fail(v, code, "entry \"%.150s\": %s", e->training_base_layer_name, msg);
  if (e) return mpk_jv_fail(v, code, "entry %zu: %s", e->index, msg);
  return mpk_jv_fail(v, code, "%s", msg);
}

/* externalDataLocation names one flat file in inference/ (externalDataLayout one_file_per_tensor). */
static const char *bad_file_name(const char *s) {
  if (!*s) return "is empty";
  if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0) return "is a \".\" or \"..\" segment";
  if (strchr(s, '/')) return s[0] == '/' ? "is absolute" : "names a subdirectory";
  if (strchr(s, '\\')) return "contains a backslash";
  return NULL;
}

static bool is_lower_hex64(const char *s) {
  if (strlen(s) != 64) return false;
  for (size_t k = 0; k < 64; k++)
    if (!((s[k] >= '0' && s[k] <= '9') || (s[k] >= 'a' && s[k] <= 'f'))) return false;
  return true;
}

/* ---------------------------------------------------------------- typed values */

typedef struct rctx {
  mpk_arena *a;
  mpk_mt_handoff_entry *e;
} rctx;

static int dims(mpk_jv *v, const mpk_mt_handoff_entry *e, const json_t *x, mpk_arena *a, mpk_mt_dims *out) {
  if (!json_is_array(x)) return efail(v, e, MPK_EMALFORMED, "expected a shape (an array of positive integers)");
  size_t n = json_array_size(x);
  int64_t *d = mpk_arena_array(a, n ? n : 1, sizeof *d);
  if (!d) return NOMEM(v);
  for (size_t i = 0; i < n; i++) {
    const json_t *y = json_array_get(x, i);
    if (!json_is_integer(y) || !mpk_json_safe_integer(y, &d[i]) || d[i] < 1) {
      size_t prev = mpk_path_push_index(&v->path, i);
      int rc = efail(v, e, MPK_EMALFORMED, "every dimension must be a positive integer");
      mpk_path_pop(&v->path, prev);
      return rc;
    }
  }
  out->dims = d;
  out->ndim = n;
  out->present = 1;
  return 0;
}

static int dtype_string(mpk_jv *v, const mpk_mt_handoff_entry *e, const json_t *x, mpk_arena *a, const char **out) {
  if (!json_is_string(x)) return efail(v, e, MPK_EMALFORMED, "expected a dtype string");
  const char *s = json_string_value(x);
  if (!known_dtype(s))
    return efail(v, e, MPK_EMALFORMED,
                 "dtype \"%.60s\" is not one of float32, float16, bfloat16, int8, uint8, int4, uint4, int32, int64", s);
  return mpk_jv_strdup(v, a, s, out);
}

static int name_string(mpk_jv *v, const mpk_mt_handoff_entry *e, const json_t *x, mpk_arena *a, const char **out) {
  if (!json_is_string(x) || !json_string_value(x)[0]) return efail(v, e, MPK_EMALFORMED, "expected a non-empty string");
  return mpk_jv_strdup(v, a, json_string_value(x), out);
}

/* Role maps: which of an entry's per-role arrays a member fills. */
enum { M_DTYPES, M_SHAPES, M_MERGER, M_MERGED, M_INFERENCE, M_LOCATION, M_SHA256, M_GENAI };

typedef struct role_map_ctx {
  rctx r;
  int kind;
} role_map_ctx;

static int role_member(mpk_jv *v, size_t i, const char *key, const json_t *value, void *ctx) {
  (void)i;
  role_map_ctx *c = ctx;
  mpk_mt_handoff_entry *e = c->r.e;
  mpk_arena *a = c->r.a;
  int role = role_index(key);
  if (role < 0)
    return efail(v, e, MPK_EMALFORMED, "role \"%.60s\" is not one of weight, weight_quantized, scale, zero_point", key);
  switch (c->kind) {
    case M_DTYPES: return dtype_string(v, e, value, a, &e->tensor_dtypes[role]);
    case M_SHAPES: return dims(v, e, value, a, &e->tensor_shapes[role]);
    case M_MERGER: return name_string(v, e, value, a, &e->merger_output_names[role]);
    case M_MERGED: return name_string(v, e, value, a, &e->merged_tensor_names[role]);
    case M_INFERENCE: return name_string(v, e, value, a, &e->inference_initializer_names[role]);
    case M_GENAI: return name_string(v, e, value, a, &e->genai_input_names[role]);
    case M_LOCATION: {
      const char *why = json_is_string(value) ? bad_file_name(json_string_value(value)) : "is not a string";
      if (why)
        return efail(v, e, MPK_EMALFORMED,
                     "externalDataLocation %s: it must be the name of a file in the variant's inference/ directory "
                     "(one_file_per_tensor: no directories, no \"..\")",
                     why);
      return mpk_jv_strdup(v, a, json_string_value(value), &e->external_data_location[role]);
    }
    case M_SHA256:
      if (!json_is_string(value) || !is_lower_hex64(json_string_value(value)))
        return efail(v, e, MPK_EMALFORMED, "sha256 must be 64 lowercase hex digits");
      return mpk_jv_strdup(v, a, json_string_value(value), &e->sha256[role]);
  }
  return 0;
}

/* An optional object member (absent: nothing; null or another type: refused). */
static int role_map(mpk_jv *v, mpk_mt_handoff_entry *e, const json_t *obj, const char *key, int kind, mpk_arena *a) {
  const json_t *x = json_object_get(obj, key);
  if (!x) return 0;
  size_t prev = mpk_path_push_key(&v->path, key);
  int rc = json_is_object(x) ? 0 : efail(v, e, MPK_EMALFORMED, "expected an object (role -> value)");
  role_map_ctx c = {{a, e}, kind};
  if (!rc) rc = mpk_jv_each_member(v, x, role_member, &c);
  mpk_path_pop(&v->path, prev);
  return rc;
}

/* Adapter-keyed maps (checkpointNames, adapterDtypes, adapterShapes, mergerModels): sorted by key. */
enum { A_NAMES, A_DTYPES, A_SHAPES, A_FILES };

typedef struct adapter_ctx {
  rctx r;
  int kind;
  mpk_mt_pair *pairs;
  mpk_mt_named_dims *named;
} adapter_ctx;

static int adapter_member(mpk_jv *v, size_t i, const char *key, const json_t *value, void *ctx) {
  adapter_ctx *c = ctx;
  mpk_arena *a = c->r.a;
  const mpk_mt_handoff_entry *e = c->r.e;
  int rc;
  if (c->kind == A_SHAPES) {
    if ((rc = dims(v, e, value, a, &c->named[i].shape))) return rc;
    return mpk_jv_strdup(v, a, key, &c->named[i].key);
  }
  if (c->kind == A_DTYPES) rc = dtype_string(v, e, value, a, &c->pairs[i].value);
  else rc = name_string(v, e, value, a, &c->pairs[i].value);
  if (!rc && c->kind == A_FILES) {
    const char *why;
    if (!mpk_path_is_confined(c->pairs[i].value, &why))
      rc = efail(v, e, MPK_EMALFORMED, "merger model \"%.100s\" %s: it must be a package-relative path", c->pairs[i].value, why);
  }
  return rc ? rc : mpk_jv_strdup(v, a, key, &c->pairs[i].key);
}

static int adapter_map(mpk_jv *v, const mpk_mt_handoff_entry *e, const json_t *obj, const char *key, int kind,
                       mpk_arena *a, const void **out, size_t *n) {
  const json_t *x = json_object_get(obj, key);
  *out = NULL;
  *n = 0;
  if (!x) return 0;
  size_t prev = mpk_path_push_key(&v->path, key);
  int rc = json_is_object(x) ? 0 : efail(v, e, MPK_EMALFORMED, "expected an object");
  size_t count = json_is_object(x) ? json_object_size(x) : 0;
  adapter_ctx c = {{a, (mpk_mt_handoff_entry *)e}, kind, NULL, NULL};
  if (!rc) {
    if (kind == A_SHAPES) c.named = mpk_arena_array(a, count ? count : 1, sizeof *c.named);
    else c.pairs = mpk_arena_array(a, count ? count : 1, sizeof *c.pairs);
    if (!c.named && !c.pairs) rc = NOMEM(v);
  }
  if (!rc) rc = mpk_jv_each_member(v, x, adapter_member, &c);
  mpk_path_pop(&v->path, prev);
  if (rc) return rc;
  *out = kind == A_SHAPES ? (const void *)c.named : (const void *)c.pairs;
  *n = count;
  return 0;
}

/* ---------------------------------------------------------------- one entry, typed */

static int parse_entry(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mt_handoff_entry *e) {
  int rc;
  if (!json_is_object(obj)) return efail(v, e, MPK_EMALFORMED, "expected an object");
  const json_t *tbl = json_object_get(obj, "trainingBaseLayerName");
  if (!tbl) return efail(v, e, MPK_EMALFORMED, "missing field \"trainingBaseLayerName\"");
  AT_KEY(v, "trainingBaseLayerName", name_string(v, e, tbl, a, &e->training_base_layer_name));
  const json_t *dt = json_object_get(obj, "dtype");
  if (!dt) return efail(v, e, MPK_EMALFORMED, "missing field \"dtype\"");
  AT_KEY(v, "dtype", dtype_string(v, e, dt, a, &e->dtype));
  const json_t *sh = json_object_get(obj, "shape");
  if (sh) AT_KEY(v, "shape", dims(v, e, sh, a, &e->shape));
  else e->shape = (mpk_mt_dims){.dims = NULL, .ndim = 0, .present = 1};

  static const struct {
    const char *key;
    int kind;
  } maps[] = {{"tensorDtypes", M_DTYPES},
              {"tensorShapes", M_SHAPES},
              {"mergerOutputNames", M_MERGER},
              {"mergedTensorNames", M_MERGED},
              {"inferenceInitializerNames", M_INFERENCE},
              {"externalDataLocation", M_LOCATION},
              {"sha256", M_SHA256},
              {"genaiInputNames", M_GENAI}};
  for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
    if ((rc = role_map(v, e, obj, maps[i].key, maps[i].kind, a))) return rc;
  const void *p;
  if ((rc = adapter_map(v, e, obj, "checkpointNames", A_NAMES, a, &p, &e->n_checkpoint_names))) return rc;
  e->checkpoint_names = p;
  if ((rc = adapter_map(v, e, obj, "adapterDtypes", A_DTYPES, a, &p, &e->n_adapter_dtypes))) return rc;
  e->adapter_dtypes = p;
  if ((rc = adapter_map(v, e, obj, "adapterShapes", A_SHAPES, a, &p, &e->n_adapter_shapes))) return rc;
  e->adapter_shapes = p;

  const json_t *tp = json_object_get(obj, "transposePolicy");
  if (tp) {
    const char *s = json_is_string(tp) ? json_string_value(tp) : "";
    if (strcmp(s, "no_transpose") == 0) e->transpose_policy = MPK_MT_NO_TRANSPOSE;
    else if (strcmp(s, "already_transposed_for_inference") == 0) e->transpose_policy = MPK_MT_ALREADY_TRANSPOSED_FOR_INFERENCE;
    else
      AT_KEY(v, "transposePolicy",
             efail(v, e, MPK_EMALFORMED, "transposePolicy must be \"no_transpose\" or \"already_transposed_for_inference\""));
  }

  const json_t *q = json_object_get(obj, "quantization");
  if (q && !json_is_null(q)) {
    size_t prev = mpk_path_push_key(&v->path, "quantization");
    if (!json_is_object(q)) return efail(v, e, MPK_EMALFORMED, "expected an object or null");
    e->quantized = 1;
    static const char *const qkeys[] = {"weightQuantizedName", "scaleName", "zeroPointName"};
    const char **qout[] = {&e->weight_quantized_name, &e->scale_name, &e->zero_point_name};
    for (int k = 0; k < 3; k++) {
      const json_t *x = json_object_get(q, qkeys[k]);
      if (!x)
        return efail(v, e, MPK_EMALFORMED, "quantized entry missing \"%s\" (the observed %s initializer name)", qkeys[k],
                     role_names[k + 1]);
      AT_KEY(v, qkeys[k], name_string(v, e, x, a, qout[k]));
    }
    mpk_path_pop(&v->path, prev);
  }
  return 0;
}

/* ---------------------------------------------------------------- invariants */

static const char *entry_ptr(mpk_jv *v, size_t i, const char *k1, const char *k2) {
  mpk_path_init(&v->path);
  mpk_path_push_key(&v->path, "entries");
  mpk_path_push_index(&v->path, i);
  if (k1) mpk_path_push_key(&v->path, k1);
  if (k2) mpk_path_push_key(&v->path, k2);
  return v->path.buf;
}

static bool entry_is_quantized(const mpk_mt_handoff_entry *e) {
  return e->quantized || e->inference_initializer_names[MPK_MT_ROLE_WEIGHT_QUANTIZED] ||
         e->inference_initializer_names[MPK_MT_ROLE_SCALE] || e->inference_initializer_names[MPK_MT_ROLE_ZERO_POINT];
}

static int check_entry(mpk_jv *v, const mpk_mt_handoff_entry *e) {
  /* external_initializer: the merged name the writer stamps is the name the inference graph reads. */
  for (int r = 0; r < MPK_MT_ROLE_COUNT; r++) {
    const char *inf = e->inference_initializer_names[r], *merged = e->merged_tensor_names[r];
    if (!inf) continue;
    if (!merged) {
      entry_ptr(v, e->index, "mergedTensorNames", NULL);
      return efail(v, e, MPK_EMALFORMED, "role \"%s\" has no mergedTensorNames entry (external_initializer: the merged "
                   "name must equal the inference initializer name)", role_names[r]);
    }
    if (strcmp(inf, merged) != 0) {
      entry_ptr(v, e->index, "mergedTensorNames", role_names[r]);
      return efail(v, e, MPK_EMALFORMED,
                   "mergedTensorNames[\"%s\"] \"%.80s\" != inferenceInitializerNames[\"%s\"] \"%.80s\" "
                   "(external_initializer: the merged name must equal the inference initializer name)",
                   role_names[r], merged, role_names[r], inf);
    }
  }
  /* Quantized names are the observed inference initializer names, never derived. */
  if (e->quantized) {
    static const char *const qkeys[] = {"weightQuantizedName", "scaleName", "zeroPointName"};
    const char *qn[] = {e->weight_quantized_name, e->scale_name, e->zero_point_name};
    for (int k = 0; k < 3; k++) {
      const char *obs = e->inference_initializer_names[k + 1];
      if (!obs) {
        entry_ptr(v, e->index, "inferenceInitializerNames", NULL);
        return efail(v, e, MPK_EMALFORMED, "quantized entry has no inferenceInitializerNames[\"%s\"] for %s",
                     role_names[k + 1], qkeys[k]);
      }
      if (strcmp(obs, qn[k]) != 0) {
        entry_ptr(v, e->index, "quantization", qkeys[k]);
        return efail(v, e, MPK_EMALFORMED,
                     "quantization.%s \"%.80s\" must equal the observed inference initializer name \"%.80s\" "
                     "(inferenceInitializerNames[\"%s\"])",
                     qkeys[k], qn[k], obs, role_names[k + 1]);
      }
    }
  }
  /* Every role with a .bin declares its own dtype/shape once either map is given; a quantized
     entry must give them (the entry-level pair describes the weight-like role only). */
  bool any_dtypes = false, any_shapes = false;
  for (int r = 0; r < MPK_MT_ROLE_COUNT; r++) {
    any_dtypes |= e->tensor_dtypes[r] != NULL;
    any_shapes |= e->tensor_shapes[r].present != 0;
  }
  if (any_dtypes || any_shapes) {
    for (int r = 0; r < MPK_MT_ROLE_COUNT; r++) {
      if (!e->external_data_location[r]) continue;
      if (!e->tensor_dtypes[r] || !e->tensor_shapes[r].present) {
        const char *which = !e->tensor_dtypes[r] ? "tensorDtypes" : "tensorShapes";
        entry_ptr(v, e->index, which, NULL);
        return efail(v, e, MPK_EMALFORMED, "role \"%s\" has an externalDataLocation but no %s entry", role_names[r], which);
      }
    }
  } else if (e->quantized) {
    entry_ptr(v, e->index, "tensorDtypes", NULL);
    return efail(v, e, MPK_EMALFORMED,
                 "quantized entry must declare per-role tensorDtypes/tensorShapes (the entry-level dtype/shape "
                 "describes only the weight-like role)");
  }
  return 0;
}

typedef struct claim {
  const char *name;
  size_t entry;
  int role; /* -1: the entry itself (trainingBaseLayerName) */
} claim;

static int cmp_claim(const void *x, const void *y) {
  const claim *a = x, *b = y;
  int d = strcmp(a->name, b->name);
  if (d) return d;
  if (a->entry != b->entry) return a->entry < b->entry ? -1 : 1;
  return (a->role > b->role) - (a->role < b->role);
}

/* No name claimed twice: kind 0 externalDataLocation, 1 inferenceInitializerNames, 2 trainingBaseLayerName. */
static int check_unique(mpk_jv *v, const mpk_mt_handoff *m, int kind) {
  size_t n = 0;
  claim *cl = malloc((m->n_entries * MPK_MT_ROLE_COUNT + 1) * sizeof *cl);
  if (!cl) return NOMEM(v);
  for (size_t i = 0; i < m->n_entries; i++) {
    const mpk_mt_handoff_entry *e = &m->entries[i];
    if (kind == 2) {
      cl[n++] = (claim){e->training_base_layer_name, i, -1};
      continue;
    }
    for (int r = 0; r < MPK_MT_ROLE_COUNT; r++) {
      const char *s = kind == 0 ? e->external_data_location[r] : e->inference_initializer_names[r];
      if (s) cl[n++] = (claim){s, i, r};
    }
  }
  mpk_sort(cl, n, sizeof *cl, cmp_claim);
  int rc = 0;
  for (size_t k = 1; !rc && k < n; k++) {
    if (strcmp(cl[k].name, cl[k - 1].name) != 0) continue;
    const mpk_mt_handoff_entry *first = &m->entries[cl[k - 1].entry], *second = &m->entries[cl[k].entry];
    if (kind == 2) {
      entry_ptr(v, second->index, "trainingBaseLayerName", NULL);
      rc = efail(v, second, MPK_EMALFORMED, "trainingBaseLayerName is claimed twice (entries %zu and %zu)", first->index,
                 second->index);
    } else {
      const char *field = kind == 0 ? "externalDataLocation" : "inferenceInitializerNames";
      entry_ptr(v, second->index, field, role_names[cl[k].role]);
      rc = efail(v, second, MPK_EMALFORMED, "%s \"%.100s\" is claimed twice (entry %zu \"%.80s\" role \"%s\" and entry %zu role \"%s\")",
                 field, cl[k].name, first->index, first->training_base_layer_name, role_names[cl[k - 1].role],
                 second->index, role_names[cl[k].role]);
    }
  }
  free(cl);
  return rc;
}

/* ---------------------------------------------------------------- the document */

static int opt_doc_string(mpk_jv *v, const json_t *root, const char *key, const char *dflt, mpk_arena *a,
                          const char **out) {
  const json_t *x = json_object_get(root, key);
  if (!x) return mpk_jv_strdup(v, a, dflt, out);
  size_t prev = mpk_path_push_key(&v->path, key);
  int rc = json_is_string(x) && json_string_value(x)[0] ? mpk_jv_strdup(v, a, json_string_value(x), out)
                                                         : mpk_jv_fail(v, MPK_EMALFORMED, "expected a non-empty string");
  mpk_path_pop(&v->path, prev);
  return rc;
}

static int parse_map(mpk_jv *v, const json_t *root, mpk_arena *a, mpk_mt_handoff *m) {
  int rc = mpk_jv_version_gate(v, root, MPK_MT_HANDOFF_READER_VERSION, a, &m->schema_version, &m->min_reader_version);
  if (rc) return rc;

  /* v1 supports only external_initializer; the other modes are fail-closed stubs. */
  if ((rc = opt_doc_string(v, root, "handoffMode", "external_initializer", a, &m->handoff_mode))) return rc;
  if (strcmp(m->handoff_mode, "external_initializer") != 0) {
    bool stub = strcmp(m->handoff_mode, "model_input") == 0 || strcmp(m->handoff_mode, "adapter") == 0;
    AT_KEY(v, "handoffMode",
           mpk_jv_fail(v, stub ? MPK_EUNSUPPORTED : MPK_EMALFORMED,
                       stub ? "handoffMode \"%s\" is not supported in v1 (only \"external_initializer\" is)"
                            : "handoffMode \"%.60s\" is unknown (v1 supports only \"external_initializer\")",
                       m->handoff_mode));
  }
  if ((rc = opt_doc_string(v, root, "externalDataLayout", "one_file_per_tensor", a, &m->external_data_layout))) return rc;
  if (strcmp(m->external_data_layout, "one_file_per_tensor") != 0)
    AT_KEY(v, "externalDataLayout",
           mpk_jv_fail(v, MPK_EUNSUPPORTED, "externalDataLayout \"%.60s\" is not supported (only \"one_file_per_tensor\")",
                       m->external_data_layout));
  if ((rc = opt_doc_string(v, root, "frozenBaseBlob", "frozen_base.onnx.data", a, &m->frozen_base_blob))) return rc;
  const char *why = bad_file_name(m->frozen_base_blob);
  if (why)
    AT_KEY(v, "frozenBaseBlob",
           mpk_jv_fail(v, MPK_EMALFORMED, "frozenBaseBlob %s: it must be the name of a file in inference/", why));

  const json_t *eng = json_object_get(root, "engines");
  if (eng) {
    size_t prev = mpk_path_push_key(&v->path, "engines");
    if (!json_is_array(eng)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected an array of strings");
    size_t n = json_array_size(eng);
    const char **list = mpk_arena_array(a, n ? n : 1, sizeof *list);
    if (!list) return NOMEM(v);
    for (size_t i = 0; i < n; i++) {
      size_t p2 = mpk_path_push_index(&v->path, i);
      if ((rc = name_string(v, NULL, json_array_get(eng, i), a, &list[i]))) return rc;
      mpk_path_pop(&v->path, p2);
    }
    mpk_path_pop(&v->path, prev);
    m->engines = list;
    m->n_engines = n;
  } else {
    static const char *const dflt[] = {"native", "genai"};
    m->engines = dflt;
    m->n_engines = 2;
  }
  const void *p;
  if ((rc = adapter_map(v, NULL, root, "mergerModels", A_FILES, a, &p, &m->n_merger_models))) return rc;
  m->merger_models = p;

  const json_t *entries = json_object_get(root, "entries");
  if (!entries) AT_KEY(v, "entries", mpk_jv_fail(v, MPK_EMALFORMED, "missing field \"entries\""));
  if (!json_is_array(entries)) AT_KEY(v, "entries", mpk_jv_fail(v, MPK_EMALFORMED, "expected an array"));
  size_t n = json_array_size(entries);
  mpk_mt_handoff_entry *es = mpk_arena_array(a, n ? n : 1, sizeof *es);
  if (!es) return NOMEM(v);
  size_t prev = mpk_path_push_key(&v->path, "entries");
  for (size_t i = 0; i < n; i++) {
    size_t p2 = mpk_path_push_index(&v->path, i);
    es[i].index = i;
    if ((rc = parse_entry(v, json_array_get(entries, i), a, &es[i]))) return rc;
    mpk_path_pop(&v->path, p2);
  }
  mpk_path_pop(&v->path, prev);
  m->entries = es;
  m->n_entries = n;

  for (size_t i = 0; i < n; i++)
    if ((rc = check_entry(v, &es[i]))) return rc;
  for (int kind = 0; kind < 3; kind++)
    if ((rc = check_unique(v, m, kind))) return rc;
  return 0;
}

/* The map as a core document (document.c): the result keeps its root. */
static int validate_map(void *ctx, mpk_jv *v, json_t *root, mpk_arena *a) {
  mpk_mt_handoff *m = mpk_arena_alloc(a, sizeof *m);
  struct mpk_mt_handoff_priv *priv = m ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  if (!priv) return mpk_fail(v->err, MPK_ENOMEM, v->file, NULL, "out of memory");
  priv->arena = a;
  priv->root = root;
  m->priv_ = priv;
  int rc = parse_map(v, root, a, m);
  if (!rc) *(mpk_mt_handoff **)ctx = m;
  return rc;
}

#define HANDOFF_DOCUMENT(out) {.name = MPK_MT_HANDOFF_FILENAME, .validate = validate_map, .keep_root = true, .ctx = (out)}

int mpk_mt_handoff_parse(const void *data, size_t len, const char *file, mpk_mt_handoff **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  return mpk_document_parse(&(mpk_document)HANDOFF_DOCUMENT(out), data, len, file, err);
}

int mpk_mt_handoff_load(const char *path, mpk_mt_handoff **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  return mpk_document_load(&(mpk_document)HANDOFF_DOCUMENT(out), path, err);
}

void mpk_mt_handoff_free(mpk_mt_handoff *m) {
  if (!m) return;
  json_decref(m->priv_->root);
  mpk_arena_free(m->priv_->arena);
}

/* ---------------------------------------------------------------- role layout */

int mpk_mt_handoff_role_layout(const mpk_mt_handoff_entry *e, mpk_mt_role role, const char **dtype,
                               const int64_t **shape, size_t *ndim, mpk_error *err) {
  if (!e || !dtype || !shape || !ndim || (unsigned)role >= MPK_MT_ROLE_COUNT)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "invalid argument");
  if (e->tensor_dtypes[role] && e->tensor_shapes[role].present) {
    *dtype = e->tensor_dtypes[role];
    *shape = e->tensor_shapes[role].dims;
    *ndim = e->tensor_shapes[role].ndim;
    return 0;
  }
  /* The entry-level pair describes the weight-like role: sound only for a single non-quantized role. */
  size_t n_roles = 0;
  for (int r = 0; r < MPK_MT_ROLE_COUNT; r++)
    n_roles += e->inference_initializer_names[r] || e->external_data_location[r];
  bool has_role = e->inference_initializer_names[role] || e->external_data_location[role];
  if (role == MPK_MT_ROLE_WEIGHT && has_role && n_roles == 1 && !entry_is_quantized(e)) {
    *dtype = e->dtype;
    *shape = e->shape.dims;
    *ndim = e->shape.ndim;
    return 0;
  }
  return mpk_fail(err, MPK_ENOTFOUND, NULL, NULL,
                  "entry \"%.150s\": role \"%s\" has no tensorDtypes/tensorShapes entry, and the entry-level "
                  "dtype/shape describes only a single non-quantized weight role",
                  e->training_base_layer_name, role_names[role]);
}

/* ---------------------------------------------------------------- the canonical writer */

static int set_default(json_t *obj, const char *key, json_t *value) {
  if (!value) return -1;
  if (json_object_get(obj, key)) {
    json_decref(value);
    return 0;
  }
  return json_object_set_new(obj, key, value);
}

typedef struct sorted_entry {
  const char *key;
  char *tiebreak;
  json_t *entry;
} sorted_entry;

static int cmp_sorted(const void *x, const void *y) {
  const sorted_entry *a = x, *b = y;
  int d = strcmp(a->key, b->key);
  return d ? d : strcmp(a->tiebreak, b->tiebreak);
}

int mpk_mt_handoff_json(const mpk_mt_handoff *m, char **out, size_t *len, mpk_error *err) {
  if (!m || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  json_t *doc = json_deep_copy(m->priv_->root);
  json_t *entries = doc ? json_object_get(doc, "entries") : NULL;
  size_t n = json_array_size(entries);
  sorted_entry *se = calloc(n ? n : 1, sizeof *se);
  int bad = !doc || !entries || !se;
  /* The fields HandoffMap.to_dict() always writes, with HandoffMap.from_dict()'s defaults. */
  if (!bad)
    bad = set_default(doc, "handoffMode", json_string("external_initializer")) ||
          set_default(doc, "engines", json_pack("[ss]", "native", "genai")) ||
          set_default(doc, "externalDataLayout", json_string("one_file_per_tensor")) ||
          set_default(doc, "frozenBaseBlob", json_string("frozen_base.onnx.data")) ||
          set_default(doc, "mergerModels", json_object());
  static const char *const maps[] = {"tensorDtypes", "tensorShapes", "checkpointNames", "adapterDtypes",
                                     "adapterShapes", "mergerOutputNames", "mergedTensorNames",
                                     "inferenceInitializerNames", "externalDataLocation", "sha256",
                                     "genaiInputNames"};
  for (size_t i = 0; !bad && i < n; i++) {
    json_t *e = json_array_get(entries, i);
    bad = set_default(e, "shape", json_array()) || set_default(e, "transposePolicy", json_string("no_transpose"));
    for (size_t k = 0; !bad && k < sizeof maps / sizeof maps[0]; k++) bad = set_default(e, maps[k], json_object());
    const json_t *q = json_object_get(e, "quantization");
    if (!bad && q && json_is_null(q)) json_object_del(e, "quantization"); /* to_dict() leaves out None */
    const json_t *w = json_object_get(json_object_get(e, "inferenceInitializerNames"), "weight");
    se[i].key = json_string_value(w) && json_string_value(w)[0] ? json_string_value(w)
                                                                 : json_string_value(json_object_get(e, "trainingBaseLayerName"));
    se[i].entry = e;
    if (!bad) bad = !se[i].key || !(se[i].tiebreak = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII));
  }
  int rc;
  if (!bad) {
    /* Sorted by the canonical weight name; ties (which the invariants make rare) by content, so the
       bytes never depend on the input order. */
    mpk_sort(se, n, sizeof *se, cmp_sorted);
    json_t *sorted = json_array();
    for (size_t i = 0; sorted && i < n; i++)
      if (json_array_append(sorted, se[i].entry)) bad = 1;
    if (bad) json_decref(sorted);
    if (!sorted || bad || json_object_set_new(doc, "entries", sorted)) bad = 1;
  }
  if (bad) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  else rc = mpk_json_write_document(doc, true, out, len, err);
  for (size_t i = 0; se && i < n; i++) free(se[i].tiebreak);
  free(se);
  json_decref(doc);
  return rc;
}
