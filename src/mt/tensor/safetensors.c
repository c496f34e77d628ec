/* A strict safetensors reader, for adapter factors handed to the on-device merge. The file is
   untrusted: every number in the header is checked before it is used, and the tensors must tile
   the data section exactly, as the reference library (huggingface/safetensors, Metadata::validate)
   requires. Rules, one sentence each: docs/safetensors.md. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/endian.h"
#include "mt/mt.h"

struct mpk_safetensors_priv {
  mpk_arena *arena;
  mpk_mapped map; /* mpk_safetensors_open() owns its mapping; parse borrows */
};

#define ST_DEFAULT_FILE "safetensors"
#define ST_METADATA_KEY "__metadata__"

/* ---------------------------------------------------------------- dtypes */

/* safetensors' names are a column of core's dtype registry. */
int mpk_safetensors_dtype_size(const char *dtype) {
  const mpk_dtype *d = mpk_dtype_by_st_name(dtype);
  return d ? d->bits / 8 : 0;
}

/* ---------------------------------------------------------------- header */

/* The header length is a little-endian u64 (core/endian.h). */

/* "[4, 3]" */
static const char *dims_str(const mpk_safetensors_tensor *t, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "[");
  for (int32_t i = 0; i < t->ndim && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (len < size) snprintf(buf + len, size - len, "]");
  return buf;
}

static int read_shape(mpk_jv *v, const char *name, const json_t *shape, mpk_safetensors_tensor *t) {
  if (!json_is_array(shape))
    return mpk_jv_fail(v, MPK_EMALFORMED, "tensor \"%.200s\": shape must be an array of integers", name);
  size_t n = json_array_size(shape);
  if (n > MPK_TENSOR_MAX_DIMS)
    return mpk_jv_fail(v, MPK_ELIMIT, "tensor \"%.200s\": %zu dimensions (at most %d)", name, n, MPK_TENSOR_MAX_DIMS);
  t->ndim = (int32_t)n;
  /* Every product of dimensions (zeros skipped) stays within int64, so a caller's strides never
     overflow, even for an empty tensor; numel is the full product. */
  int64_t nonzero = 1;
  for (size_t i = 0; i < n; i++) {
    const json_t *dim = json_array_get(shape, i);
    if (!json_is_integer(dim) || json_integer_value(dim) < 0) {
      size_t prev = mpk_path_push_index(&v->path, i);
      int rc = mpk_jv_fail(v, MPK_EMALFORMED, "tensor \"%.200s\": shape[%zu] must be a non-negative integer", name, i);
      mpk_path_pop(&v->path, prev);
      return rc;
    }
    int64_t d = (int64_t)json_integer_value(dim); /* jansson integers are int64 */
    t->shape[i] = d;
    if (d && __builtin_mul_overflow(nonzero, d, &nonzero))
      return mpk_jv_fail(v, MPK_ELIMIT, "tensor \"%.200s\": the product of the dimensions exceeds 2^63 - 1", name);
  }
  t->numel = 1;
  for (size_t i = 0; i < n; i++) t->numel *= (uint64_t)t->shape[i]; /* <= nonzero, or 0 */
  return 0;
}

static int read_tensor(mpk_jv *v, const char *name, const json_t *value, uint64_t data_len, mpk_safetensors_tensor *t) {
  static const char *const keys[] = {"dtype", "shape", "data_offsets", NULL};
  if (!json_is_object(value))
    return mpk_jv_fail(v, MPK_EMALFORMED, "tensor \"%.200s\" must be an object with dtype, shape, data_offsets",
                       name);
  mpk_error sub;
  mpk_error_clear(&sub);
  mpk_error *outer = v->err;
  v->err = &sub;
  int rc = mpk_jv_exact_keys(v, value, keys, keys);
  v->err = outer;
  if (rc) return mpk_jv_fail(v, rc, "tensor \"%.200s\": %s (exactly dtype, shape, data_offsets)", name, sub.message);

  const json_t *dtype = json_object_get(value, "dtype");
  size_t prev = mpk_path_push_key(&v->path, "dtype");
  if (!json_is_string(dtype)) rc = mpk_jv_fail(v, MPK_EMALFORMED, "tensor \"%.200s\": dtype must be a string", name);
  else if (mpk_safetensors_dtype_size(json_string_value(dtype)) == 0)
    rc = mpk_jv_fail(v, MPK_EUNSUPPORTED, "tensor \"%.200s\": unknown dtype \"%.40s\"", name, json_string_value(dtype));
  mpk_path_pop(&v->path, prev);
  if (rc) return rc;
  snprintf(t->dtype, sizeof t->dtype, "%s", json_string_value(dtype)); /* known: fits */
  uint64_t size = (uint64_t)mpk_safetensors_dtype_size(t->dtype);

  prev = mpk_path_push_key(&v->path, "shape");
  rc = read_shape(v, name, json_object_get(value, "shape"), t);
  mpk_path_pop(&v->path, prev);
  if (rc) return rc;
  uint64_t nbytes;
  char dims[256];
  if (__builtin_mul_overflow(t->numel, size, &nbytes) || nbytes > (uint64_t)INT64_MAX) {
    prev = mpk_path_push_key(&v->path, "shape");
    rc = mpk_jv_fail(v, MPK_ELIMIT, "tensor \"%.200s\": %s %s is more than 2^63 bytes", name, t->dtype,
                     dims_str(t, dims, sizeof dims));
    mpk_path_pop(&v->path, prev);
    return rc;
  }

  const json_t *offs = json_object_get(value, "data_offsets");
  prev = mpk_path_push_key(&v->path, "data_offsets");
  if (!json_is_array(offs) || json_array_size(offs) != 2)
    rc = mpk_jv_fail(v, MPK_EMALFORMED, "tensor \"%.200s\": data_offsets must be an array of two integers [begin, end]",
                     name);
  else if (!json_is_integer(json_array_get(offs, 0)) || !json_is_integer(json_array_get(offs, 1)) ||
           json_integer_value(json_array_get(offs, 0)) < 0 || json_integer_value(json_array_get(offs, 1)) < 0)
    rc = mpk_jv_fail(v, MPK_EMALFORMED, "tensor \"%.200s\": data_offsets must be two non-negative integers", name);
  if (!rc) {
    t->begin = (uint64_t)json_integer_value(json_array_get(offs, 0));
    t->end = (uint64_t)json_integer_value(json_array_get(offs, 1));
    if (t->begin > t->end)
      rc = mpk_jv_fail(v, MPK_EMALFORMED, "tensor \"%.200s\": data_offsets [%llu, %llu] end before they begin", name,
                       (unsigned long long)t->begin, (unsigned long long)t->end);
    else if (t->end - t->begin != nbytes)
      rc = mpk_jv_fail(v, MPK_EMALFORMED,
                       "tensor \"%.200s\": data_offsets [%llu, %llu] hold %llu bytes, but %s %s is %llu bytes", name,
                       (unsigned long long)t->begin, (unsigned long long)t->end,
                       (unsigned long long)(t->end - t->begin), t->dtype, dims_str(t, dims, sizeof dims),
                       (unsigned long long)nbytes);
    else if (t->end > data_len)
      rc = mpk_jv_fail(v, MPK_EMALFORMED,
                       "tensor \"%.200s\": data_offsets [%llu, %llu] run past the end of the data section (%llu bytes)",
                       name, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)data_len);
  }
  mpk_path_pop(&v->path, prev);
  return rc;
}

static int read_metadata(mpk_jv *v, const json_t *value, mpk_arena *a, mpk_safetensors *st) {
  if (!json_is_object(value))
    return mpk_jv_fail(v, MPK_EMALFORMED, ST_METADATA_KEY " must be an object of string values");
  const char **keys;
  size_t n;
  if (mpk_json_keys_insertion(value, &keys, &n)) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  mpk_mt_pair *pairs = mpk_arena_array(a, n ? n : 1, sizeof *pairs);
  int rc = pairs ? 0 : mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < n; i++) {
    const json_t *s = json_object_get(value, keys[i]);
    size_t prev = mpk_path_push_key(&v->path, keys[i]);
    if (!json_is_string(s))
      rc = mpk_jv_fail(v, MPK_EMALFORMED, ST_METADATA_KEY " \"%.200s\" must be a string (metadata is string to string)",
                       keys[i]);
    else if (!(pairs[i].key = mpk_arena_strdup(a, keys[i])) ||
             !(pairs[i].value = mpk_arena_strdup(a, json_string_value(s))))
      rc = mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
    mpk_path_pop(&v->path, prev);
  }
  free(keys);
  if (rc) return rc;
  st->metadata = pairs;
  st->n_metadata = n;
  return 0;
}

static int cmp_pair(const void *x, const void *y) {
  return strcmp(((const mpk_mt_pair *)x)->key, ((const mpk_mt_pair *)y)->key);
}

static int cmp_name(const void *x, const void *y) {
  return strcmp(((const mpk_safetensors_tensor *)x)->name, ((const mpk_safetensors_tensor *)y)->name);
}

/* Data order: by begin, then end (empty tensors before the one that starts where they sit). */
static int cmp_offsets(const void *x, const void *y) {
  const mpk_safetensors_tensor *a = *(const mpk_safetensors_tensor *const *)x, *b = *(const mpk_safetensors_tensor *const *)y;
  if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
  if (a->end != b->end) return a->end < b->end ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* The tensors, in data order, must tile [0, data_len): no hole, no overlap, nothing left over. */
static int check_tiling(mpk_jv *v, mpk_safetensors_tensor *t, size_t n, uint64_t data_len) {
  const mpk_safetensors_tensor **order = malloc((n ? n : 1) * sizeof *order);
  if (!order) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) order[i] = &t[i];
  mpk_sort(order, n, sizeof *order, cmp_offsets);
  uint64_t at = 0;
  int rc = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    const mpk_safetensors_tensor *cur = order[i];
    if (cur->begin == at) {
      at = cur->end;
      continue;
    }
    size_t p1 = mpk_path_push_key(&v->path, cur->name);
    size_t p2 = mpk_path_push_key(&v->path, "data_offsets");
    if (i == 0)
      rc = mpk_jv_fail(v, MPK_EMALFORMED,
                       "tensor \"%.200s\" begins at %llu: the first tensor must begin at 0 (a hole of %llu bytes)",
                       cur->name, (unsigned long long)cur->begin, (unsigned long long)cur->begin);
    else if (cur->begin > at)
      rc = mpk_jv_fail(v, MPK_EMALFORMED,
                       "tensor \"%.200s\" begins at %llu, but tensor \"%.200s\" ends at %llu: a hole of %llu bytes",
                       cur->name, (unsigned long long)cur->begin, order[i - 1]->name, (unsigned long long)at,
                       (unsigned long long)(cur->begin - at));
    else
      rc = mpk_jv_fail(v, MPK_EMALFORMED,
                       "tensor \"%.200s\" [%llu, %llu] overlaps tensor \"%.200s\" [%llu, %llu]", cur->name,
                       (unsigned long long)cur->begin, (unsigned long long)cur->end, order[i - 1]->name,
                       (unsigned long long)order[i - 1]->begin, (unsigned long long)at);
    mpk_path_pop(&v->path, p2);
    mpk_path_pop(&v->path, p1);
  }
  if (!rc && at != data_len) {
    /* at < data_len: every end was checked against data_len. */
    if (n == 0)
      rc = mpk_jv_fail(v, MPK_EMALFORMED, "the header declares no tensor, but %llu data bytes follow it",
                       (unsigned long long)data_len);
    else
      rc = mpk_jv_fail(v, MPK_EMALFORMED,
                       "%llu bytes after tensor \"%.200s\" (which ends at %llu) belong to no tensor: the last tensor "
                       "must end where the file ends",
                       (unsigned long long)(data_len - at), order[n - 1]->name, (unsigned long long)at);
  }
  free(order);
  return rc;
}

static int read_header(mpk_jv *v, const json_t *root, const uint8_t *data_section, uint64_t data_len, mpk_arena *a,
                       mpk_safetensors *st) {
  if (!json_is_object(root)) return mpk_jv_fail(v, MPK_EMALFORMED, "the header must be a JSON object");
  const char **keys;
  size_t n;
  if (mpk_json_keys_insertion(root, &keys, &n)) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  size_t n_tensors = n - (json_object_get(root, ST_METADATA_KEY) ? 1 : 0);
  mpk_safetensors_tensor *t = mpk_arena_array(a, n_tensors ? n_tensors : 1, sizeof *t);
  int rc = t ? 0 : mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    const json_t *value = json_object_get(root, keys[i]);
    size_t prev = mpk_path_push_key(&v->path, keys[i]);
    if (strcmp(keys[i], ST_METADATA_KEY) == 0) {
      rc = read_metadata(v, value, a, st);
    } else if (keys[i][0] == '\0') {
      rc = mpk_jv_fail(v, MPK_EMALFORMED, "a tensor name must not be empty");
    } else {
      mpk_safetensors_tensor *cur = &t[k++];
      rc = read_tensor(v, keys[i], value, data_len, cur);
      if (!rc && !(cur->name = mpk_arena_strdup(a, keys[i]))) rc = mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
      if (!rc) cur->data = data_section + cur->begin; /* end <= data_len: inside, or one past for empty */
    }
    mpk_path_pop(&v->path, prev);
  }
  free(keys);
  if (rc) return rc;
  if ((rc = check_tiling(v, t, n_tensors, data_len))) return rc;
  mpk_sort(t, n_tensors, sizeof *t, cmp_name);
  if (st->n_metadata) mpk_sort((void *)st->metadata, st->n_metadata, sizeof *st->metadata, cmp_pair);
  st->tensors = t;
  st->n_tensors = n_tensors;
  return 0;
}

/* The members of the header object, counted without parsing: commas at depth 1 outside strings,
   plus one. A malformed header may be miscounted; the JSON reader refuses it anyway. Stops counting
   past `limit`. */
static uint64_t count_members(const uint8_t *h, size_t n, uint64_t limit) {
  uint64_t commas = 0;
  int depth = 0;
  bool in_str = false, any = false;
  for (size_t i = 0; i < n && commas <= limit; i++) {
    uint8_t c = h[i];
    if (in_str) {
      if (c == '\\') i++;
      else if (c == '"') in_str = false;
      continue;
    }
    if (c == '"') {
      in_str = true;
      if (depth == 1) any = true;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      depth--;
    } else if (c == ',' && depth == 1) {
      commas++;
    }
  }
  return any ? commas + 1 : 0;
}

int mpk_safetensors_parse(const void *data, size_t len, const char *file, mpk_safetensors **out, mpk_error *err) {
  return mpk_safetensors_parse_budget(data, len, file, NULL, out, err);
}

int mpk_safetensors_parse_budget(const void *data, size_t len, const char *file, const mpk_safetensors_budget *budget,
                                 mpk_safetensors **out, mpk_error *err) {
  if (!out || (!data && len)) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  uint64_t max_header = budget && budget->max_header_bytes ? budget->max_header_bytes : MPK_SAFETENSORS_DEFAULT_HEADER_BUDGET;
  uint64_t max_tensors = budget && budget->max_tensors ? budget->max_tensors : MPK_SAFETENSORS_DEFAULT_TENSOR_BUDGET;
  *out = NULL;
  if (!file) file = ST_DEFAULT_FILE;
  const uint8_t *p = data;
  if (len < 8)
    return mpk_fail_at(err, MPK_EMALFORMED, file, 0,
                       "the file is %zu bytes: a safetensors file starts with an 8-byte header length", len);
  uint64_t n = mpk_load_le64(p);
  if (n > MPK_SAFETENSORS_MAX_HEADER)
    return mpk_fail_at(err, MPK_ELIMIT, file, 0, "the header length %llu exceeds the limit of %u bytes",
                       (unsigned long long)n, MPK_SAFETENSORS_MAX_HEADER);
  if (n > (uint64_t)(len - 8))
    return mpk_fail_at(err, MPK_EMALFORMED, file, 0,
                       "the header length %llu runs past the end of the file (%zu bytes after the length)",
                       (unsigned long long)n, len - 8);
  if (n == 0 || p[8] != '{')
    return mpk_fail_at(err, MPK_EMALFORMED, file, 8, "the header must begin with '{'");
  /* The memory budget, before the JSON reader allocates about 16 bytes per header byte. */
  if (n > max_header)
    return mpk_fail_at(err, MPK_ELIMIT, file, 0,
                       "the header is %llu bytes, over the safetensors reader's memory budget of %llu header bytes "
                       "(mt merge --max-adapter-header; docs/safetensors.md rule 4a)",
                       (unsigned long long)n, (unsigned long long)max_header);
  uint64_t members = count_members(p + 8, (size_t)n, max_tensors);
  if (members > max_tensors)
    return mpk_fail_at(err, MPK_ELIMIT, file, 8,
                       "the header declares more than %llu tensors, over the safetensors reader's memory budget of "
                       "%llu tensors (mt merge --max-adapter-tensors; docs/safetensors.md rule 4a)",
                       (unsigned long long)max_tensors, (unsigned long long)max_tensors);

  mpk_json_opts opts = {.max_bytes = MPK_SAFETENSORS_MAX_HEADER};
  mpk_error sub;
  mpk_error_clear(&sub);
  json_t *root;
  int rc = mpk_json_parse(p + 8, (size_t)n, &opts, file, &root, &sub);
  if (rc) /* the JSON reader's offset is within the header */
    return mpk_fail_at(err, rc, file, sub.offset >= 0 ? sub.offset + 8 : 8, "header: %s", sub.message);

  mpk_arena *a = mpk_arena_new();
  mpk_safetensors *st = a ? mpk_arena_alloc(a, sizeof *st) : NULL;
  struct mpk_safetensors_priv *priv = st ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  const char *name = priv ? mpk_arena_strdup(a, file) : NULL;
  if (!name) {
    json_decref(root);
    mpk_arena_free(a);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  priv->arena = a;
  st->priv_ = priv;
  st->file = name;
  st->header_len = n;
  st->data_len = (uint64_t)(len - 8) - n;
  mpk_jv v = {.file = file, .err = err};
  mpk_path_init(&v.path);
  rc = read_header(&v, root, p + 8 + n, st->data_len, a, st);
  json_decref(root); /* everything kept was copied into the arena */
  if (rc) {
    mpk_safetensors_free(st);
    return rc;
  }
  *out = st;
  return 0;
}

int mpk_safetensors_open(const char *path, mpk_safetensors **out, mpk_error *err) {
  return mpk_safetensors_open_budget(path, NULL, out, err);
}

int mpk_safetensors_open_budget(const char *path, const mpk_safetensors_budget *budget, mpk_safetensors **out,
                                mpk_error *err) {
  if (!path || !out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  mpk_mapped m;
  int rc = mpk_map_file(path, 0, &m, err);
  if (rc) return rc;
  if ((rc = mpk_safetensors_parse_budget(m.data, m.size, path, budget, out, err))) {
    mpk_unmap_file(&m);
    return rc;
  }
  (*out)->priv_->map = m;
  return 0;
}

const mpk_safetensors_tensor *mpk_safetensors_find(const mpk_safetensors *st, const char *name) {
  if (!st || !name) return NULL;
  size_t lo = 0, hi = st->n_tensors;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(st->tensors[mid].name, name);
    if (c == 0) return &st->tensors[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

const char *mpk_safetensors_metadata(const mpk_safetensors *st, const char *key) {
  if (!st || !key || !st->n_metadata) return NULL;
  mpk_mt_pair probe = {.key = key};
  const mpk_mt_pair *hit = bsearch(&probe, st->metadata, st->n_metadata, sizeof probe, cmp_pair);
  return hit ? hit->value : NULL;
}

void mpk_safetensors_free(mpk_safetensors *st) {
  if (!st) return;
  mpk_unmap_file(&st->priv_->map); /* a zeroed map (parse) is left alone */
  mpk_arena_free(st->priv_->arena);
}

/* ---------------------------------------------------------------- conversion to float32 */

/* Little-endian loads from bytes: the data section has no alignment guarantee. */

static float f32_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* IEEE binary16 to binary32, exactly: every half value is a float value. */
static float half_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) { /* zero or subnormal: mant × 2^-24, exact in float */
    float f = (float)mant * 0x1p-24f;
    return sign ? -f : f;
  }
  if (exp == 31) return f32_bits(sign | 0x7f800000u | mant << 13); /* inf, NaN with its payload */
  return f32_bits(sign | (exp + 112) << 23 | mant << 13);
}

int mpk_safetensors_tensor_to_f32(const mpk_safetensors_tensor *t, float **out, mpk_error *err) {
  if (!t || !out || (!t->data && t->numel)) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "invalid argument");
  *out = NULL;
  const char *name = t->name ? t->name : "?";
  const mpk_dtype *dt = mpk_dtype_by_st_name(t->dtype);
  mpk_dtype_id kind = dt ? dt->id : MPK_DT_UNKNOWN;
  if (kind != MPK_DT_FLOAT32 && kind != MPK_DT_FLOAT16 && kind != MPK_DT_BFLOAT16 && kind != MPK_DT_FLOAT64)
    return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL, "tensor \"%.200s\": dtype %s cannot be read as float32 (F32, F16, "
                    "BF16 or F64 only)", name, t->dtype);
  if (t->numel > SIZE_MAX / sizeof(float))
    return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "tensor \"%.200s\": %llu elements do not fit in memory", name,
                    (unsigned long long)t->numel);
  size_t n = (size_t)t->numel;
  float *f = malloc(n ? n * sizeof *f : 1);
  if (!f) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "tensor \"%.200s\": out of memory", name);
  const uint8_t *p = t->data;
  switch (kind) {
    case MPK_DT_FLOAT32:
      for (size_t i = 0; i < n; i++) f[i] = f32_bits(mpk_load_le32(p + 4 * i));
      break;
    case MPK_DT_FLOAT16:
      for (size_t i = 0; i < n; i++) f[i] = half_to_f32(mpk_load_le16(p + 2 * i));
      break;
    case MPK_DT_BFLOAT16:
      for (size_t i = 0; i < n; i++) f[i] = f32_bits((uint32_t)mpk_load_le16(p + 2 * i) << 16);
      break;
    default:
      for (size_t i = 0; i < n; i++) {
        uint64_t u = (uint64_t)mpk_load_le32(p + 8 * i) | (uint64_t)mpk_load_le32(p + 8 * i + 4) << 32;
        double d;
        memcpy(&d, &u, sizeof d);
        f[i] = (float)d; /* round to nearest; inf and NaN stay what they are */
        if (isinf(f[i]) && !isinf(d)) {
          free(f);
          return mpk_fail(err, MPK_ELIMIT, NULL, NULL,
                          "tensor \"%.200s\": element %zu (%g) is beyond the float32 range", name, i, d);
        }
      }
  }
  *out = f;
  return 0;
}
