/* Parameter lists (from a tensor cache, a library's _metadata.params, or a JSON file), their
   identity (parameter_schema_id), the resources they need, and matching one list to another. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

struct mpk_mlc_params_priv {
  mpk_arena *arena;
};

static mpk_mlc_params *new_params(size_t n, mpk_arena **arena) {
  mpk_arena *a = mpk_arena_new();
  mpk_mlc_params *p = a ? mpk_arena_alloc(a, sizeof *p) : NULL;
  struct mpk_mlc_params_priv *priv = p ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  mpk_mlc_param *items = priv ? mpk_arena_array(a, n ? n : 1, sizeof *items) : NULL;
  if (!items) {
    mpk_arena_free(a);
    return NULL;
  }
  priv->arena = a;
  p->priv_ = priv;
  p->items = items;
  p->n = n;
  *arena = a;
  return p;
}

void mpk_mlc_params_free(mpk_mlc_params *p) {
  if (p) mpk_arena_free(p->priv_->arena);
}

int mpk_mlc_params_from_tensor_cache(const mpk_mlc_tensor_cache *tc, mpk_mlc_params **out,
                                     mpk_error *err) {
  if (!tc || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_arena *a;
  mpk_mlc_params *p = new_params(tc->n_records, &a);
  if (!p) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  mpk_mlc_param *items = (mpk_mlc_param *)p->items;
  for (size_t i = 0; i < tc->n_records; i++) {
    const mpk_mlc_tensor_record *r = &tc->records[i];
    mpk_mlc_dim *dims = mpk_arena_array(a, r->ndim ? r->ndim : 1, sizeof *dims);
    /* Own copies: the list may outlive the cache. */
    items[i] = (mpk_mlc_param){mpk_arena_strdup(a, r->name), dims, r->ndim, mpk_arena_strdup(a, r->dtype)};
    if (!dims || !items[i].name || !items[i].dtype) {
      mpk_mlc_params_free(p);
      return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    }
    for (size_t d = 0; d < r->ndim; d++) dims[d].value = r->shape[d];
  }
  *out = p;
  return 0;
}

/* One parameter from {"name", "shape", "dtype", ...} or [name, shape, dtype]. */
static int parse_param(mpk_jv *v, const json_t *value, mpk_arena *a, mpk_mlc_param *out) {
  const json_t *name, *shape, *dtype;
  if (json_is_array(value)) {
    if (json_array_size(value) != 3)
      return mpk_jv_fail(v, MPK_EMALFORMED, "expected [name, shape, dtype]");
    name = json_array_get(value, 0);
    shape = json_array_get(value, 1);
    dtype = json_array_get(value, 2);
  } else {
    static const char *const required[] = {"name", "shape", "dtype", NULL};
    int rc = mpk_jv_object(v, value);
    if (!rc) rc = mpk_jv_required_keys(v, value, required);
    if (rc) return rc;
    name = json_object_get(value, "name");
    shape = json_object_get(value, "shape");
    dtype = json_object_get(value, "dtype");
  }
  const char *s;
  int rc = mpk_jv_string(v, name, &s);
  if (!rc) rc = mpk_jv_strdup(v, a, s, &out->name);
  if (!rc) rc = mpk_jv_string(v, dtype, &s);
  if (rc) return rc;
  if (mpk_dtype_bits(s) <= 0) return mpk_jv_fail(v, MPK_EUNSUPPORTED, "parameter \"%s\": unknown dtype \"%s\"", out->name, s);
  if ((rc = mpk_jv_strdup(v, a, s, &out->dtype))) return rc;
  if (!json_is_array(shape)) return mpk_jv_fail(v, MPK_EMALFORMED, "parameter \"%s\": shape must be an array", out->name);
  out->ndim = json_array_size(shape);
  mpk_mlc_dim *dims = mpk_arena_array(a, out->ndim ? out->ndim : 1, sizeof *dims);
  if (!dims) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  for (size_t d = 0; d < out->ndim; d++) {
    const json_t *x = json_array_get(shape, d);
    if (json_is_string(x) && json_string_length(x) > 0) {
      if ((rc = mpk_jv_strdup(v, a, json_string_value(x), &dims[d].name))) return rc;
    } else if (!mpk_json_safe_integer(x, &dims[d].value) || dims[d].value < 0) {
      return mpk_jv_fail(v, MPK_EMALFORMED,
                         "parameter \"%s\": dimension %zu must be a non-negative integer or a name",
                         out->name, d);
    }
  }
  out->shape = dims;
  return 0;
}

static int params_from_json(const json_t *root, const char *file, mpk_mlc_params **out, mpk_error *err) {
  mpk_jv v = {.file = file, .err = err};
  mpk_path_init(&v.path);
  const json_t *list = root;
  if (json_is_object(root)) {
    list = json_object_get(root, "params");
    mpk_path_push_key(&v.path, "params");
  }
  if (!json_is_array(list)) return mpk_jv_fail(&v, MPK_EMALFORMED, "expected a list of parameters");
  mpk_arena *a;
  mpk_mlc_params *p = new_params(json_array_size(list), &a);
  if (!p) return mpk_jv_fail(&v, MPK_ENOMEM, "out of memory");
  for (size_t i = 0; i < p->n; i++) {
    size_t prev = mpk_path_push_index(&v.path, i);
    int rc = parse_param(&v, json_array_get(list, i), a, (mpk_mlc_param *)&p->items[i]);
    mpk_path_pop(&v.path, prev);
    if (rc) {
      mpk_mlc_params_free(p);
      return rc;
    }
  }
  *out = p;
  return 0;
}

int mpk_mlc_params_parse(const void *json, size_t len, const char *file, mpk_mlc_params **out,
                         mpk_error *err) {
  if (!out || (!json && len)) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  json_t *root;
  int rc = mpk_json_parse(json, len, NULL, file, &root, err);
  if (rc) return rc;
  rc = params_from_json(root, file, out, err);
  json_decref(root);
  return rc;
}

int mpk_mlc_params_from_metadata(const mpk_mlc_metadata *md, mpk_mlc_params **out, mpk_error *err) {
  if (!md || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  const json_t *root;
  json_t *owned;
  int rc = mpk_mlc_metadata_tree(md, "_metadata", &root, &owned, err);
  if (rc) return rc;
  if (!json_is_array(json_object_get(root, "params")))
    rc = mpk_fail(err, MPK_EMALFORMED, "_metadata", "/params", "expected a list of parameters");
  else
    rc = params_from_json(root, "_metadata", out, err);
  json_decref(owned);
  return rc;
}

static int cmp_param_name(const void *a, const void *b) {
  return strcmp((*(const mpk_mlc_param *const *)a)->name, (*(const mpk_mlc_param *const *)b)->name);
}

/* Pointers to the items sorted by name (code point order); NULL when out of memory. */
static const mpk_mlc_param **sorted_by_name(const mpk_mlc_params *p) {
  const mpk_mlc_param **s = malloc((p->n ? p->n : 1) * sizeof *s);
  if (!s) return NULL;
  for (size_t i = 0; i < p->n; i++) s[i] = &p->items[i];
  mpk_sort(s, p->n, sizeof *s, cmp_param_name);
  return s;
}

int mpk_mlc_parameter_schema_id(const mpk_mlc_params *p, char out[MPK_SHA256_ID_SIZE], mpk_error *err) {
  if (!p || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  const mpk_mlc_param **s = sorted_by_name(p);
  json_t *list = json_array();
  if (!s || !list) {
    free(s);
    json_decref(list);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  int rc = 0;
  for (size_t i = 0; i < p->n && !rc; i++) {
    if (i && strcmp(s[i - 1]->name, s[i]->name) == 0) {
      rc = mpk_fail(err, MPK_EMALFORMED, NULL, NULL, "parameter names must be unique: \"%s\" appears twice",
                    s[i]->name);
      break;
    }
    json_t *shape = json_array();
    for (size_t d = 0; d < s[i]->ndim; d++)
      json_array_append_new(shape, s[i]->shape[d].name ? json_string(s[i]->shape[d].name)
                                                       : json_integer(s[i]->shape[d].value));
    if (json_array_append_new(list, json_pack("{s:s, s:o, s:s}", "name", s[i]->name, "shape", shape,
                                              "dtype", s[i]->dtype)))
      rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  free(s);
  char *text = NULL;
  size_t len = 0;
  if (!rc) rc = mpk_canonical_dump(list, &text, &len, err);
  json_decref(list);
  if (!rc && mpk_sha256_id(text, len, out)) rc = mpk_fail(err, MPK_EIO, NULL, NULL, "SHA-256 failed");
  mpk_free(text);
  return rc;
}

static int dim_value(const mpk_mlc_param *p, size_t d, const mpk_mlc_named_dim *dims, size_t n_dims,
                     int64_t *out, mpk_error *err) {
  if (!p->shape[d].name) {
    *out = p->shape[d].value;
    return 0;
  }
  for (size_t i = 0; i < n_dims; i++) {
    if (strcmp(dims[i].name, p->shape[d].name) == 0) {
      if (dims[i].value < 0)
        return mpk_fail(err, MPK_EMALFORMED, NULL, NULL, "named dimension '%s' has a negative value",
                        dims[i].name);
      *out = dims[i].value;
      return 0;
    }
  }
  return mpk_fail(err, MPK_ENOTFOUND, NULL, NULL, "missing size for named dimension '%s' of %s",
                  p->shape[d].name, p->name);
}

int mpk_mlc_params_resources(const mpk_mlc_params *p, const mpk_mlc_named_dim *dims, size_t n_dims,
                             mpk_mlc_resources *out, mpk_error *err) {
  if (!p || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  int64_t max = 0, sum = 0;
  for (size_t i = 0; i < p->n; i++) {
    const mpk_mlc_param *x = &p->items[i];
    int bits = mpk_dtype_bits(x->dtype);
    if (bits <= 0) return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL, "parameter %s: unknown dtype \"%s\"", x->name, x->dtype);
    int64_t bytes = mpk_dtype_unpacked_bytes(bits);
    for (size_t d = 0; d < x->ndim; d++) {
      int64_t v;
      int rc = dim_value(x, d, dims, n_dims, &v, err);
      if (rc) return rc;
      if (v && bytes > MPK_SAFE_INT_MAX / v)
        return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "parameter %s: size exceeds 2^53 bytes", x->name);
      bytes *= v;
    }
    if (bytes > max) max = bytes;
    if (bytes > MPK_SAFE_INT_MAX - sum) return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "total size exceeds 2^53 bytes");
    sum += bytes;
  }
  out->max_storage_buffer_binding_size = max;
  out->estimated_device_memory_bytes = sum;
  return 0;
}

static void shape_text(const mpk_mlc_param *p, char *buf, size_t size) {
  size_t o = (size_t)snprintf(buf, size, "[");
  for (size_t d = 0; d < p->ndim && o < size; d++) {
    if (p->shape[d].name) o += (size_t)snprintf(buf + o, size - o, "%s%s", d ? ", " : "", p->shape[d].name);
    else o += (size_t)snprintf(buf + o, size - o, "%s%lld", d ? ", " : "", (long long)p->shape[d].value);
  }
  if (o < size) snprintf(buf + o, size - o, "]");
}

static const mpk_mlc_param *find(const mpk_mlc_param **sorted, size_t n, const char *name) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(sorted[mid]->name, name);
    if (c == 0) return sorted[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static int compare_one(const mpk_mlc_param *e, const mpk_mlc_param *a, const mpk_mlc_named_dim *dims,
                       size_t n_dims, const char *ef, const char *af, mpk_error *err) {
  if (strcmp(e->dtype, a->dtype) != 0)
    return mpk_fail(err, MPK_EMISMATCH, af, NULL, "parameter %s: dtype %s, but %s expects %s", e->name,
                    a->dtype, ef, e->dtype);
  bool same = e->ndim == a->ndim;
  for (size_t d = 0; same && d < e->ndim; d++) {
    int64_t x, y;
    int rc = dim_value(e, d, dims, n_dims, &x, err);
    if (!rc) rc = dim_value(a, d, dims, n_dims, &y, err);
    if (rc) return rc;
    same = x == y;
  }
  if (!same) {
    char es[256], as[256];
    shape_text(e, es, sizeof es);
    shape_text(a, as, sizeof as);
    return mpk_fail(err, MPK_EMISMATCH, af, NULL, "parameter %s: shape %s, but %s expects %s", e->name,
                    as, ef, es);
  }
  return 0;
}

/* ---------------------------------------------------------------- every difference, with pointers */

enum { D_MISSING, D_EXTRA, D_DTYPE, D_SHAPE, N_DIFF };
/* Summary lines: count, of how many, the library's name, how many were listed. */
#define DIFF_FMT(what) "%zu of %zu " what " (the first %d listed)"
static const char *const diff_summary[N_DIFF] = {
    DIFF_FMT("parameters %s expects are missing from the weights"),
    DIFF_FMT("parameters of the weights are not ones %s takes"),
    DIFF_FMT("parameters have a dtype other than %s expects"),
    DIFF_FMT("parameters have a shape other than %s expects")};

typedef struct diffs {
  mpk_problem_fn fn;
  void *ctx;
  mpk_tally count[N_DIFF];
  size_t total;
} diffs;

static void diff(diffs *d, int kind, const mpk_error *e) {
  d->total++;
  if (mpk_tally_keep(&d->count[kind]) && d->fn) d->fn(d->ctx, e);
}

/* "/records/S/records/R" of weights item i when the weights are the tensor cache's records. */
static void record_pointer(const mpk_mlc_tensor_cache *tc, const mpk_mlc_params *actual, const mpk_mlc_param *a,
                           const char *leaf, char *buf, size_t cap) {
  buf[0] = '\0';
  if (!tc || !a || tc->n_records != actual->n) return;
  size_t i = (size_t)(a - actual->items);
  if (i >= tc->n_records) return;
  size_t s = tc->records[i].shard;
  snprintf(buf, cap, "/records/%zu/records/%zu%s", s, i - tc->shards[s].first_record, leaf);
}

size_t mpk_mlc_params_compare_each(const mpk_mlc_params *expected, const mpk_mlc_params *actual,
                                   const mpk_mlc_tensor_cache *tc, const mpk_mlc_named_dim *dims, size_t n_dims,
                                   const char *ef, const char *af, mpk_problem_fn fn, void *ctx) {
  const mpk_mlc_param **se = sorted_by_name(expected), **sa = sorted_by_name(actual);
  diffs d = {.fn = fn, .ctx = ctx};
  mpk_error e;
  char ptr[128];
  if (!se || !sa) {
    free(se);
    free(sa);
    mpk_fail(&e, MPK_ENOMEM, af, NULL, "out of memory");
    if (fn) fn(ctx, &e);
    return 1;
  }
  bool dim_reported = false;
  for (size_t i = 0; i < expected->n; i++) {
    const mpk_mlc_param *x = &expected->items[i], *a = find(sa, actual->n, x->name);
    mpk_error_clear(&e);
    if (!a) {
      /* not in the tensor cache: the pointer is to where the library names it */
      snprintf(ptr, sizeof ptr, "/params/%zu", i);
      mpk_fail(&e, MPK_EMISMATCH, ef, ptr, "parameter %s, which the library expects, is missing from %s", x->name, af);
      diff(&d, D_MISSING, &e);
      continue;
    }
    if (strcmp(x->dtype, a->dtype) != 0) {
      record_pointer(tc, actual, a, "/dtype", ptr, sizeof ptr);
      mpk_fail(&e, MPK_EMISMATCH, af, ptr, "parameter %s: dtype %s, but %s expects %s", x->name, a->dtype, ef,
               x->dtype);
      diff(&d, D_DTYPE, &e);
      continue;
    }
    bool same = x->ndim == a->ndim;
    for (size_t k = 0; same && k < x->ndim; k++) {
      int64_t u, v;
      int rc = dim_value(x, k, dims, n_dims, &u, &e);
      if (!rc) rc = dim_value(a, k, dims, n_dims, &v, &e);
      if (rc) { /* a name without a value: said once, the shapes using it are not compared */
        if (!dim_reported && fn) fn(ctx, &e);
        if (!dim_reported) d.total++;
        dim_reported = true;
        break;
      }
      same = u == v;
    }
    if (!same) {
      char es[256], as[256];
      shape_text(x, es, sizeof es);
      shape_text(a, as, sizeof as);
      record_pointer(tc, actual, a, "/shape", ptr, sizeof ptr);
      mpk_fail(&e, MPK_EMISMATCH, af, ptr, "parameter %s: shape %s, but %s expects %s", x->name, as, ef, es);
      diff(&d, D_SHAPE, &e);
    }
  }
  for (size_t i = 0; i < actual->n; i++) {
    const mpk_mlc_param *a = &actual->items[i];
    if (find(se, expected->n, a->name)) continue;
    record_pointer(tc, actual, a, "/name", ptr, sizeof ptr);
    mpk_fail(&e, MPK_EMISMATCH, af, ptr, "parameter %s is not one %s takes", a->name, ef);
    diff(&d, D_EXTRA, &e);
  }
  for (int k = 0; k < N_DIFF; k++) {
    if (!mpk_tally_over(&d.count[k])) continue;
    size_t of = k == D_EXTRA ? actual->n : expected->n;
    mpk_fail(&e, MPK_EMISMATCH, af, NULL, diff_summary[k], d.count[k].count, of, ef, MPK_LIST_MAX);
    if (fn) fn(ctx, &e);
  }
  free(se);
  free(sa);
  return d.total;
}

int mpk_mlc_params_compare(const mpk_mlc_params *expected, const mpk_mlc_params *actual,
                           const mpk_mlc_named_dim *dims, size_t n_dims, const char *ef,
                           const char *af, mpk_error *err) {
  if (!expected || !actual) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (!ef) ef = "the library";
  if (!af) af = "the weights";
  const mpk_mlc_param **se = sorted_by_name(expected), **sa = sorted_by_name(actual);
  int rc = 0;
  if (!se || !sa) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  for (size_t i = 0; !rc && i < expected->n; i++) {
    const mpk_mlc_param *e = &expected->items[i], *a = find(sa, actual->n, e->name);
    if (!a) rc = mpk_fail(err, MPK_EMISMATCH, af, NULL, "parameter %s, which %s expects, is missing", e->name, ef);
    else rc = compare_one(e, a, dims, n_dims, ef, af, err);
  }
  for (size_t i = 0; !rc && i < actual->n; i++)
    if (!find(se, expected->n, actual->items[i].name))
      rc = mpk_fail(err, MPK_EMISMATCH, af, NULL, "parameter %s is not one %s takes", actual->items[i].name, ef);
  free(se);
  free(sa);
  return rc;
}

int mpk_mlc_named_dims_from_chat_config(const char *path, mpk_mlc_named_dim **dims, size_t *n_dims,
                                        mpk_error *err) {
  if (!path || !dims || !n_dims) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *dims = NULL;
  *n_dims = 0;
  json_t *root = NULL;
  int rc = mpk_json_load_file(path, NULL, &root, err);
  if (rc) return rc;
  rc = mpk_mlc_named_dims_from_json(root, path, dims, n_dims, err);
  json_decref(root);
  return rc;
}

int mpk_mlc_named_dims_from_json(const json_t *root, const char *path, mpk_mlc_named_dim **dims, size_t *n_dims,
                                 mpk_error *err) {
  *dims = NULL;
  *n_dims = 0;
  const json_t *mc = json_object_get(root, "model_config");
  if (!json_is_object(mc)) return mpk_fail(err, MPK_EMALFORMED, path, "/model_config", "expected an object");
  /* One block: the array, then the names. */
  size_t count = 0, names = 0;
  const char *k;
  json_t *v;
  int64_t x;
  json_object_foreach((json_t *)mc, k, v) if (mpk_json_safe_integer(v, &x) && !json_is_real(v)) {
    count++;
    names += strlen(k) + 1;
  }
  mpk_mlc_named_dim *out = malloc(count * sizeof *out + names + 1);
  if (!out) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  char *str = (char *)(out + count);
  size_t i = 0;
  json_object_foreach((json_t *)mc, k, v) if (mpk_json_safe_integer(v, &x) && !json_is_real(v)) {
    size_t n = strlen(k) + 1;
    memcpy(str, k, n);
    out[i++] = (mpk_mlc_named_dim){str, x};
    str += n;
  }
  *dims = out;
  *n_dims = count;
  return 0;
}
