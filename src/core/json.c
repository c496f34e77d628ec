/* Strict JSON reading into jansson trees, and the key orders other implementations iterate in. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/json_scan.h"

/* The tree is built from mpk_json_scan's events (json_scan.c), which enforce every rule. */
typedef struct tree {
  json_t *root;
  json_t *open[MPK_JSON_DEFAULT_MAX_DEPTH]; /* open containers, innermost last */
  json_t **deep;                            /* instead, when max_depth is larger */
  size_t depth;
  const char *key; /* the key awaiting its value */
  size_t key_len;
  const char *file;
  mpk_error *err;
} tree;

static int tree_event(void *ctx, const mpk_json_event *e) {
  tree *t = ctx;
  json_t *v;
  switch (e->kind) {
    case MPK_JSON_KEY: t->key = e->str, t->key_len = e->len; return 0;
    case MPK_JSON_OBJECT_END:
    case MPK_JSON_ARRAY_END: t->depth--; return 0;
    case MPK_JSON_NULL: v = json_null(); break;
    case MPK_JSON_FALSE: v = json_false(); break;
    case MPK_JSON_TRUE: v = json_true(); break;
    case MPK_JSON_INTEGER: v = json_integer(e->integer); break;
    case MPK_JSON_REAL: v = json_real(e->real); break;
    case MPK_JSON_STRING: v = json_stringn_nocheck(e->str, e->len); break; /* checked by the scan */
    case MPK_JSON_OBJECT_START: v = json_object(); break;
    case MPK_JSON_ARRAY_START: v = json_array(); break;
    default: v = NULL;
  }
  json_t **open = t->deep ? t->deep : t->open;
  int bad = !v;
  if (!bad && !t->depth) t->root = v;
  else if (!bad && json_is_array(open[t->depth - 1])) bad = json_array_append_new(open[t->depth - 1], v);
  else if (!bad) bad = json_object_setn_new_nocheck(open[t->depth - 1], t->key, t->key_len, v);
  if (bad) return mpk_fail(t->err, MPK_ENOMEM, t->file, NULL, "out of memory");
  if (e->kind == MPK_JSON_OBJECT_START || e->kind == MPK_JSON_ARRAY_START) open[t->depth++] = v;
  return 0;
}

int mpk_json_parse(const void *data, size_t len, const mpk_json_opts *opts, const char *file,
                   json_t **out, mpk_error *err) {
  *out = NULL;
  tree t = {.file = file, .err = err};
  size_t max_depth = opts && opts->max_depth ? opts->max_depth : MPK_JSON_DEFAULT_MAX_DEPTH;
  if (max_depth > MPK_JSON_DEFAULT_MAX_DEPTH && !(t.deep = calloc(max_depth, sizeof *t.deep)))
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  int rc = mpk_json_scan(data, len, opts, file, tree_event, &t, err);
  free(t.deep);
  if (rc) json_decref(t.root);
  else *out = t.root;
  return rc;
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
  mpk_sort(items, *n, sizeof *items, cmp_js_order);
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
  mpk_sort(items, *n, sizeof *items, codepoint ? cmp_codepoint : cmp_utf16);
  return finish(items, *n, keys);
}
