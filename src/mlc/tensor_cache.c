/* tensor-cache.json (ndarray-cache.json before it was renamed): MLC's index of weight shards.
   Parsed tolerantly (the format carries no version and MLC adds fields), checked strictly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

#define AT_KEY MPK_JV_AT

struct mpk_mlc_tensor_cache_priv {
  mpk_arena *arena;
};

static int u64_field(mpk_jv *v, const json_t *obj, const char *key, uint64_t *out) {
  int64_t x;
  MPK_JV_AT(v, key, mpk_jv_integer(v, json_object_get(obj, key), 0, &x));
  *out = (uint64_t)x;
  return 0;
}

static bool is_md5_hex(const char *s) {
  for (int i = 0; i < 32; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return s[32] == '\0';
}

/* nbytes of a record: elements x ceil(bits/8), overflow-checked (also tensor_cache_scan.c). */
bool mpk_mlc_record_bytes(const int64_t *shape, size_t ndim, int bits, uint64_t *out) {
  uint64_t n = (uint64_t)mpk_dtype_unpacked_bytes(bits);
  for (size_t i = 0; i < ndim; i++) {
    if (shape[i] != 0 && n > UINT64_MAX / (uint64_t)shape[i]) return false;
    n *= (uint64_t)shape[i];
  }
  *out = n;
  return true;
}

static int parse_record(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mlc_tensor_record *r) {
  static const char *const required[] = {"name", "shape", "dtype", "format", "nbytes", "byteOffset", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_required_keys(v, obj, required);
  if (rc) return rc;
  const char *s;
  AT_KEY(v, "name", mpk_jv_string(v, json_object_get(obj, "name"), &s));
  if ((rc = mpk_jv_strdup(v, a, s, &r->name))) return rc;
  const json_t *shape = json_object_get(obj, "shape");
  size_t prev = mpk_path_push_key(&v->path, "shape");
  if (!json_is_array(shape)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected an array");
  r->ndim = json_array_size(shape);
  int64_t *dims = mpk_arena_array(a, r->ndim ? r->ndim : 1, sizeof *dims);
  if (!dims) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  for (size_t i = 0; i < r->ndim; i++) {
    size_t p2 = mpk_path_push_index(&v->path, i);
    rc = mpk_jv_integer(v, json_array_get(shape, i), 0, &dims[i]);
    mpk_path_pop(&v->path, p2);
    if (rc) return rc;
  }
  mpk_path_pop(&v->path, prev);
  r->shape = dims;
  AT_KEY(v, "dtype", mpk_jv_string(v, json_object_get(obj, "dtype"), &s));
  int bits = mpk_dtype_bits(s);
  if (bits <= 0) AT_KEY(v, "dtype", mpk_jv_fail(v, MPK_EUNSUPPORTED, "unknown dtype \"%s\"", s));
  if ((rc = mpk_jv_strdup(v, a, s, &r->dtype))) return rc;
  AT_KEY(v, "format", mpk_jv_string(v, json_object_get(obj, "format"), &s));
  if ((rc = mpk_jv_strdup(v, a, s, &r->format))) return rc;
  if ((rc = u64_field(v, obj, "nbytes", &r->nbytes))) return rc;
  if ((rc = u64_field(v, obj, "byteOffset", &r->byte_offset))) return rc;
  uint64_t want = 0;
  if (!mpk_mlc_record_bytes(r->shape, r->ndim, bits, &want))
    AT_KEY(v, "shape", mpk_jv_fail(v, MPK_ELIMIT, "element count overflows 64 bits"));
  if (want != r->nbytes)
    AT_KEY(v, "nbytes", mpk_jv_fail(v, MPK_EMALFORMED,
                                    "nbytes %llu does not equal elements x %d-byte %s = %llu",
                                    (unsigned long long)r->nbytes, mpk_dtype_unpacked_bytes(bits), r->dtype,
                                    (unsigned long long)want));
  return 0;
}

typedef struct order {
  uint64_t offset, nbytes;
  size_t index;
} order;

static int cmp_offset(const void *a, const void *b) {
  const order *x = a, *y = b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Records inside the shard and not overlapping one another. */
static int check_layout(mpk_jv *v, const mpk_mlc_shard *sh, const mpk_mlc_tensor_record *recs,
                        size_t shard_index) {
  order *o = calloc(sh->n_records ? sh->n_records : 1, sizeof *o);
  if (!o) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  int rc = 0;
  for (size_t i = 0; i < sh->n_records; i++) {
    const mpk_mlc_tensor_record *r = &recs[sh->first_record + i];
    o[i] = (order){r->byte_offset, r->nbytes, i};
    if (r->byte_offset > sh->nbytes || r->nbytes > sh->nbytes - r->byte_offset) {
      char ptr[64];
      snprintf(ptr, sizeof ptr, "/records/%zu/records/%zu", shard_index, i);
      rc = mpk_fail(v->err, MPK_EMALFORMED, v->file, ptr,
                    "record \"%s\" [%llu, %llu) lies outside its shard of %llu bytes", r->name,
                    (unsigned long long)r->byte_offset,
                    (unsigned long long)(r->byte_offset + r->nbytes), (unsigned long long)sh->nbytes);
      break;
    }
  }
  if (!rc) mpk_sort(o, sh->n_records, sizeof *o, cmp_offset);
  for (size_t i = 1; !rc && i < sh->n_records; i++) {
    if (o[i - 1].offset + o[i - 1].nbytes > o[i].offset && o[i - 1].nbytes && o[i].nbytes) {
      const mpk_mlc_tensor_record *x = &recs[sh->first_record + o[i - 1].index];
      const mpk_mlc_tensor_record *y = &recs[sh->first_record + o[i].index];
      char ptr[64];
      snprintf(ptr, sizeof ptr, "/records/%zu/records/%zu", shard_index, o[i].index);
      rc = mpk_fail(v->err, MPK_EMALFORMED, v->file, ptr,
                    "record \"%s\" at byte %llu overlaps record \"%s\" [%llu, %llu)", y->name,
                    (unsigned long long)y->byte_offset, x->name, (unsigned long long)x->byte_offset,
                    (unsigned long long)(x->byte_offset + x->nbytes));
    }
  }
  free(o);
  return rc;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp((*(const mpk_mlc_tensor_record *const *)a)->name,
                (*(const mpk_mlc_tensor_record *const *)b)->name);
}

static int check_unique(mpk_jv *v, const mpk_mlc_shard *shards, const mpk_mlc_tensor_record *recs,
                        size_t n) {
  const mpk_mlc_tensor_record **s = calloc(n ? n : 1, sizeof *s);
  if (!s) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) s[i] = &recs[i];
  mpk_sort(s, n, sizeof *s, cmp_name);
  int rc = 0;
  for (size_t i = 1; i < n && !rc; i++) {
    if (strcmp(s[i - 1]->name, s[i]->name) == 0) {
      const mpk_mlc_tensor_record *dup = s[i - 1] > s[i] ? s[i - 1] : s[i]; /* the later one */
      char ptr[64];
      snprintf(ptr, sizeof ptr, "/records/%zu/records/%zu/name", dup->shard,
               (size_t)(dup - recs) - shards[dup->shard].first_record);
      rc = mpk_fail(v->err, MPK_EMALFORMED, v->file, ptr,
                    "parameter name \"%s\" appears more than once (parameter names must be unique)",
                    dup->name);
    }
  }
  free(s);
  return rc;
}

static int parse_cache(mpk_jv *v, const json_t *root, mpk_arena *a, mpk_mlc_tensor_cache *tc) {
  static const char *const top[] = {"records", NULL};
  static const char *const shard_keys[] = {"dataPath", "format", "nbytes", "records", NULL};
  int rc = mpk_jv_object(v, root);
  if (!rc) rc = mpk_jv_required_keys(v, root, top);
  if (rc) return rc;
  const json_t *meta = json_object_get(root, "metadata");
  if (meta) {
    AT_KEY(v, "metadata", mpk_jv_object(v, meta));
    const json_t *ps = json_object_get(meta, "ParamSize"), *pb = json_object_get(meta, "ParamBytes");
    size_t prev = mpk_path_push_key(&v->path, "metadata");
    if (ps) AT_KEY(v, "ParamSize", mpk_jv_integer(v, ps, 0, &tc->param_size));
    if (pb && !json_is_number(pb)) AT_KEY(v, "ParamBytes", mpk_jv_fail(v, MPK_EMALFORMED, "expected a number"));
    mpk_path_pop(&v->path, prev);
    tc->has_param_size = ps != NULL;
    tc->has_param_bytes = pb != NULL;
    if (pb) tc->param_bytes = json_number_value(pb);
  }
  const json_t *shards = json_object_get(root, "records");
  if (!json_is_array(shards)) AT_KEY(v, "records", mpk_jv_fail(v, MPK_EMALFORMED, "expected an array"));
  size_t ns = json_array_size(shards), nr = 0;
  for (size_t i = 0; i < ns; i++) {
    const json_t *recs = json_object_get(json_array_get(shards, i), "records");
    if (json_is_array(recs)) nr += json_array_size(recs);
  }
  mpk_mlc_shard *sh = mpk_arena_array(a, ns ? ns : 1, sizeof *sh);
  mpk_mlc_tensor_record *rec = mpk_arena_array(a, nr ? nr : 1, sizeof *rec);
  if (!sh || !rec) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  size_t at = 0;
  size_t prev = mpk_path_push_key(&v->path, "records");
  for (size_t i = 0; i < ns; i++) {
    const json_t *s = json_array_get(shards, i);
    size_t p1 = mpk_path_push_index(&v->path, i);
    if ((rc = mpk_jv_object(v, s)) || (rc = mpk_jv_required_keys(v, s, shard_keys))) return rc;
    const char *str, *why;
    AT_KEY(v, "dataPath", mpk_jv_string(v, json_object_get(s, "dataPath"), &str));
    if (!mpk_path_is_confined(str, &why))
      AT_KEY(v, "dataPath", mpk_jv_fail(v, MPK_EMALFORMED, "shard path \"%s\" %s: it must stay inside the package", str, why));
    if ((rc = mpk_jv_strdup(v, a, str, &sh[i].data_path))) return rc;
    AT_KEY(v, "format", mpk_jv_string(v, json_object_get(s, "format"), &str));
    if ((rc = mpk_jv_strdup(v, a, str, &sh[i].format))) return rc;
    if ((rc = u64_field(v, s, "nbytes", &sh[i].nbytes))) return rc;
    const json_t *md5 = json_object_get(s, "md5sum");
    if (md5) {
      AT_KEY(v, "md5sum", mpk_jv_string(v, md5, &str));
      if (!is_md5_hex(str)) AT_KEY(v, "md5sum", mpk_jv_fail(v, MPK_EMALFORMED, "expected 32 lowercase hex digits"));
      if ((rc = mpk_jv_strdup(v, a, str, &sh[i].md5sum))) return rc;
    }
    const json_t *recs = json_object_get(s, "records");
    if (!json_is_array(recs)) AT_KEY(v, "records", mpk_jv_fail(v, MPK_EMALFORMED, "expected an array"));
    sh[i].first_record = at;
    sh[i].n_records = json_array_size(recs);
    size_t p2 = mpk_path_push_key(&v->path, "records");
    for (size_t j = 0; j < sh[i].n_records; j++, at++) {
      size_t p3 = mpk_path_push_index(&v->path, j);
      rec[at].shard = i;
      if ((rc = parse_record(v, json_array_get(recs, j), a, &rec[at]))) return rc;
      mpk_path_pop(&v->path, p3);
    }
    mpk_path_pop(&v->path, p2);
    mpk_path_pop(&v->path, p1);
  }
  mpk_path_pop(&v->path, prev);
  tc->shards = sh;
  tc->n_shards = ns;
  tc->records = rec;
  tc->n_records = at;
  return 0;
}

/* The checks across records, once every field has been read. */
static int check_cache(mpk_jv *v, const mpk_mlc_tensor_cache *tc) {
  int rc;
  for (size_t i = 0; i < tc->n_shards; i++)
    if ((rc = check_layout(v, &tc->shards[i], tc->records, i))) return rc;
  return check_unique(v, tc->shards, tc->records, tc->n_records);
}

/* An empty cache in a new arena, or NULL. */
static mpk_mlc_tensor_cache *new_cache(void) {
  mpk_arena *a = mpk_arena_new();
  mpk_mlc_tensor_cache *tc = a ? mpk_arena_alloc(a, sizeof *tc) : NULL;
  struct mpk_mlc_tensor_cache_priv *priv = tc ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  if (!priv) {
    mpk_arena_free(a);
    return NULL;
  }
  priv->arena = a;
  tc->priv_ = priv;
  return tc;
}

int mpk_mlc_tensor_cache_parse(const void *data, size_t len, const char *file,
                               mpk_mlc_tensor_cache **out, mpk_error *err) {
  if (!out || (!data && len)) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  if (!file) file = MPK_MLC_TENSOR_CACHE_FILENAME;
  mpk_jv v = {.file = file, .err = err};
  mpk_path_init(&v.path);
  /* Without a tree first (tensor_cache_scan.c: most of the time is the tree otherwise); the tree
     path reads what that one gives up on, and names what is wrong. */
  mpk_mlc_tensor_cache *tc = new_cache();
  if (!tc) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  int rc = mpk_mlc_tensor_cache_scan(data, len, tc->priv_->arena, tc);
  if (rc) {
    mpk_mlc_tensor_cache_free(tc);
    json_t *root;
    if ((rc = mpk_json_parse(data, len, NULL, file, &root, err))) return rc;
    if (!(tc = new_cache())) rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
    else rc = parse_cache(&v, root, tc->priv_->arena, tc);
    json_decref(root);
  }
  if (!rc) rc = check_cache(&v, tc);
  if (rc) {
    mpk_mlc_tensor_cache_free(tc);
    return rc;
  }
  *out = tc;
  return 0;
}

/* A core document (document.c) that parses in its own way (the scan first, above). */
static int parse_document(void *ctx, const void *data, size_t len, const char *file, mpk_error *err) {
  return mpk_mlc_tensor_cache_parse(data, len, file, ctx, err);
}

int mpk_mlc_tensor_cache_load(const char *path, mpk_mlc_tensor_cache **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  return mpk_document_load(
      &(mpk_document){.name = MPK_MLC_TENSOR_CACHE_FILENAME, .parse = parse_document, .ctx = out}, path, err);
}

int mpk_mlc_tensor_cache_load_beneath(const char *dir, const char *rel, mpk_mlc_tensor_cache **out,
                                      mpk_error *err) {
  *out = NULL;
  mpk_mapped m;
  int rc = mpk_mlc_pkg_map(dir, rel, MPK_JSON_DEFAULT_MAX_BYTES, &m, err);
  if (rc) return rc;
  char *path = mpk_path_join(dir, rel);
  rc = path ? mpk_mlc_tensor_cache_parse(m.data, m.size, path, out, err) : mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  free(path);
  mpk_unmap_file(&m);
  return rc;
}

void mpk_mlc_tensor_cache_free(mpk_mlc_tensor_cache *tc) {
  if (tc) mpk_arena_free(tc->priv_->arena);
}
