/* Strict JSON reading on jansson, and the key orders other implementations iterate in. */
#include <stdlib.h>
#include <string.h>

#include "core.h"

static size_t depth_of(const json_t *v, size_t limit, size_t here) {
  if (here > limit) return here;
  size_t max = here;
  if (json_is_object(v)) {
    const char *k;
    json_t *child;
    json_object_foreach((json_t *)v, k, child) {
      size_t d = depth_of(child, limit, here + 1);
      if (d > max) max = d;
      if (max > limit) break;
    }
  } else if (json_is_array(v)) {
    size_t i;
    json_t *child;
    json_array_foreach(v, i, child) {
      size_t d = depth_of(child, limit, here + 1);
      if (d > max) max = d;
      if (max > limit) break;
    }
  }
  return max;
}

int mpk_json_parse(const void *data, size_t len, const mpk_json_opts *opts, const char *file,
                   json_t **out, mpk_error *err) {
  *out = NULL;
  size_t max_bytes = opts && opts->max_bytes ? opts->max_bytes : MPK_JSON_DEFAULT_MAX_BYTES;
  size_t max_depth = opts && opts->max_depth ? opts->max_depth : MPK_JSON_DEFAULT_MAX_DEPTH;
  if (len > max_bytes)
    return mpk_fail_at(err, MPK_ELIMIT, file, 0, "document of %zu bytes exceeds the limit of %zu bytes",
                       len, max_bytes);
  const unsigned char *p = data;
  size_t skip = 0;
  /* A leading UTF-8 BOM is tolerated, as TextDecoder and Python's utf-8-sig do. */
  if (len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) skip = 3;
  size_t flags = JSON_REJECT_DUPLICATES | JSON_DECODE_ANY;
  if (opts && opts->allow_nul) flags |= JSON_ALLOW_NUL;
  json_error_t jerr;
  json_t *v = json_loadb((const char *)p + skip, len - skip, flags, &jerr);
  if (!v) {
    int code = strstr(jerr.text, "maximum parsing depth") ? MPK_ELIMIT : MPK_EMALFORMED;
    return mpk_fail_at(err, code, file, (int64_t)(jerr.position + skip),
                       "invalid JSON: %s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
  }
  if (depth_of(v, max_depth, 1) > max_depth) {
    json_decref(v);
    return mpk_fail_at(err, MPK_ELIMIT, file, 0, "JSON nesting deeper than the limit of %zu levels",
                       max_depth);
  }
  *out = v;
  return 0;
}

int mpk_json_load_file(const char *path, const mpk_json_opts *opts, json_t **out, mpk_error *err) {
  *out = NULL;
  size_t max = opts && opts->max_bytes ? opts->max_bytes : MPK_JSON_DEFAULT_MAX_BYTES;
  mpk_mapped m;
  int rc = mpk_map_file(path, max, &m, err);
  if (rc) return rc;
  rc = mpk_json_parse(m.data, m.size, opts, path, out, err);
  mpk_unmap_file(&m);
  return rc;
}

/* ECMAScript array index: "0" or [1-9][0-9]* with value <= 2^32 - 2. */
static bool array_index(const char *k, uint64_t *out) {
  if (!*k) return false;
  if (k[0] == '0' && k[1]) return false;
  uint64_t v = 0;
  for (const char *c = k; *c; c++) {
    if (*c < '0' || *c > '9') return false;
    v = v * 10 + (uint64_t)(*c - '0');
    if (v > UINT64_C(4294967294)) return false;
  }
  *out = v;
  return true;
}

typedef struct keyed {
  const char *key;
  uint64_t index;
  size_t order;
  bool is_index;
} keyed;

static int cmp_js_order(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->is_index != y->is_index) return x->is_index ? -1 : 1;
  if (x->is_index) return x->index < y->index ? -1 : x->index > y->index;
  return x->order < y->order ? -1 : x->order > y->order;
}

static int collect(const json_t *obj, keyed **items, size_t *n) {
  size_t count = json_object_size(obj);
  *n = count;
  *items = calloc(count ? count : 1, sizeof(keyed));
  if (!*items) return MPK_ENOMEM;
  size_t i = 0;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)obj, k, v) {
    (*items)[i].key = k;
    (*items)[i].order = i;
    (*items)[i].is_index = array_index(k, &(*items)[i].index);
    i++;
  }
  return 0;
}

static int finish(keyed *items, size_t n, const char ***keys) {
  *keys = calloc(n ? n : 1, sizeof(char *));
  if (!*keys) {
    free(items);
    return MPK_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) (*keys)[i] = items[i].key;
  free(items);
  return 0;
}

int mpk_json_keys_insertion(const json_t *obj, const char ***keys, size_t *n) {
  keyed *items;
  if (collect(obj, &items, n)) return MPK_ENOMEM;
  return finish(items, *n, keys);
}

int mpk_json_keys_js_order(const json_t *obj, const char ***keys, size_t *n) {
  keyed *items;
  if (collect(obj, &items, n)) return MPK_ENOMEM;
  qsort(items, *n, sizeof *items, cmp_js_order);
  return finish(items, *n, keys);
}

/* Next UTF-16 code unit of a valid UTF-8 string; *pending holds a low surrogate to emit. */
static unsigned next_unit(const unsigned char **s, unsigned *pending) {
  if (*pending) {
    unsigned u = *pending;
    *pending = 0;
    return u;
  }
  const unsigned char *p = *s;
  unsigned c = p[0];
  int extra = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
  if (extra) c &= 0x3F >> extra;
  for (int i = 1; i <= extra && p[i]; i++) c = (c << 6) | (p[i] & 0x3F);
  *s = p + 1 + extra;
  if (c >= 0x10000) {
    c -= 0x10000;
    *pending = 0xDC00 + (c & 0x3FF);
    return 0xD800 + (c >> 10);
  }
  return c;
}

int mpk_utf16_cmp(const char *a, const char *b) {
  const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
  unsigned px = 0, py = 0;
  for (;;) {
    bool ex = !*x && !px, ey = !*y && !py;
    if (ex || ey) return ex && ey ? 0 : ex ? -1 : 1;
    unsigned ux = next_unit(&x, &px), uy = next_unit(&y, &py);
    if (ux != uy) return ux < uy ? -1 : 1;
  }
}

static int cmp_utf16(const void *a, const void *b) {
  return mpk_utf16_cmp(((const keyed *)a)->key, ((const keyed *)b)->key);
}

/* Bytewise UTF-8 order is code point order. */
static int cmp_codepoint(const void *a, const void *b) {
  return strcmp(((const keyed *)a)->key, ((const keyed *)b)->key);
}

int mpk_json_keys_sorted(const json_t *obj, bool codepoint, const char ***keys, size_t *n) {
  keyed *items;
  if (collect(obj, &items, n)) return MPK_ENOMEM;
  qsort(items, *n, sizeof *items, codepoint ? cmp_codepoint : cmp_utf16);
  return finish(items, *n, keys);
}
