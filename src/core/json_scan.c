/* Strict JSON scanning: yajl lexes, this file enforces what yajl does not, and hands every value
   to a callback (mpk_json_scan). mpk_json_parse (json.c) builds jansson trees from these events;
   a reader of a large document can also consume them without a tree.

   yajl alone is looser than the rules in core.h, so:
   - strings are validated here (strict UTF-8: shortest form, no surrogate halves, nothing above
     U+10FFFF; no U+0000 unless allowed, never in a key), and strings with escapes are decoded
     here from the raw text, because yajl turns a lone "\ud800" into "?" and pairs a high
     surrogate with any \u escape that follows;
   - numbers are converted here: integers as integers, with overflow refused; reals by strtod, as
     jansson does, overflow refused;
   - '\v' and '\f' are refused (yajl takes them for whitespace), and so is anything but whitespace
     after the top-level value (yajl accepts an unfinished token there);
   - duplicate keys and the nesting limit are checked here.
   Reading through yajl builds the same jansson tree 2.4x faster than jansson's own parser did
   (docs/PERFORMANCE.md, section 2). */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "core/core.h"
#include "core/json_scan.h"

/* A key of an open object: where its bytes are (in the text, or in the pool of decoded keys,
   which moves when it grows), for the duplicate check. */
typedef struct key_entry {
  uint64_t hash;
  size_t at, len;
  bool pooled;
} key_entry;

/* An open container. Objects with many keys get a hash index over their entries, so that
   checking for duplicates stays linear in the size of the document. */
#define LINEAR_KEYS 16
typedef struct frame {
  size_t first_key, pool_start;
  size_t *index; /* entry numbers + 1, 0 = free; NULL while the object has few keys */
  size_t index_cap;
} frame;

typedef struct scanner {
  const unsigned char *text; /* the document, after any BOM */
  size_t len;
  yajl_handle yajl;
  mpk_json_event_fn fn;
  void *ctx;
  size_t max_depth;
  bool allow_nul;
  bool finishing; /* in yajl_complete_parse, whose offsets are not into the text */
  frame *open;
  size_t depth;
  size_t root_end; /* offset just past the top-level value */
  key_entry *keys;
  size_t n_keys, keys_cap;
  char *pool, *str;
  size_t pool_len, pool_cap, str_cap;
  /* why the scan stopped: a rule (code, at, msg) or the callback (user) */
  int code, user;
  size_t at;
  char msg[160];
} scanner;

/* Offset just past the token yajl has lexed. yajl_complete_parse only finishes a top-level number,
   which ends the text. */
static size_t consumed(const scanner *s) { return s->finishing ? s->len : yajl_get_bytes_consumed(s->yajl); }

/* Record why the scan stops; returns 0, which makes yajl stop. */
__attribute__((format(printf, 4, 5))) static int stop(scanner *s, int code, size_t at, const char *fmt, ...) {
  s->code = code;
  s->at = at;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->msg, sizeof s->msg, fmt, ap);
  va_end(ap);
  return 0;
}

static int nomem(scanner *s) { return stop(s, MPK_ENOMEM, consumed(s), "out of memory"); }

static bool grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t n = *cap ? *cap : 16;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * size);
  if (!q) return false;
  *p = q;
  *cap = n;
  return true;
}

/* Offset of the first byte of an invalid UTF-8 sequence in s[0..n), or n when all is valid. */
static size_t utf8_invalid_at(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (n - i >= 8) { /* ASCII eight bytes at a time: nearly every string in a model package */
      uint64_t w;
      memcpy(&w, s + i, 8);
      if (!(w & UINT64_C(0x8080808080808080))) {
        i += 8;
        continue;
      }
    }
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t extra;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) extra = 1, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) extra = 2, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) extra = 3, cp = c & 0x07, min = 0x10000;
    else return i;
    if (n - i - 1 < extra) return i;
    for (size_t j = 1; j <= extra; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += 1 + extra;
  }
  return n;
}

static int hex4(const unsigned char *p, uint32_t *out) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = p[i];
    unsigned d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 16;
    if (d > 15) return -1;
    v = v << 4 | d;
  }
  *out = v;
  return 0;
}

static size_t put_utf8(uint32_t cp, char *o) {
  if (cp < 0x80) return o[0] = (char)cp, 1;
  if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000)
    return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
           o[2] = (char)(0x80 | (cp & 0x3F)), 3;
  o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  o[2] = (char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Decode the string yajl has just lexed with escapes in it into s->str, from its raw text. The
   closing quote is the last byte yajl consumed; the opening quote is the nearest '"' before it
   that no backslash escapes. */
static int decode_escaped(scanner *s, bool is_key, size_t *out_len) {
  size_t end = consumed(s) - 1;
  if (end >= s->len || s->text[end] != '"') return stop(s, MPK_EMALFORMED, end, "cannot locate an escaped string");
  size_t start = end;
  for (;;) {
    if (start == 0) return stop(s, MPK_EMALFORMED, end, "cannot locate an escaped string");
    start--;
    if (s->text[start] != '"') continue;
    size_t k = start;
    while (k > 0 && s->text[k - 1] == '\\') k--;
    if ((start - k) % 2 == 0) break;
  }
  const unsigned char *t = s->text + start + 1;
  size_t n = end - start - 1;
  size_t bad = utf8_invalid_at(t, n);
  if (bad < n) return stop(s, MPK_EMALFORMED, start + 1 + bad, "invalid UTF-8 in a string");
  if (!grow((void **)&s->str, &s->str_cap, n + 1, 1)) return nomem(s); /* decoding never lengthens */
  char *o = s->str;
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    if (t[i] != '\\') {
      o[w++] = (char)t[i++];
      continue;
    }
    size_t at = start + 1 + i; /* yajl has checked the escape's syntax */
    unsigned e = t[i + 1];
    i += 2;
    if (e != 'u') {
      o[w++] = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : (char)e;
      continue;
    }
    uint32_t cp, lo;
    if (i + 4 > n || hex4(t + i, &cp)) return stop(s, MPK_EMALFORMED, at, "invalid \\u escape");
    i += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
      return stop(s, MPK_EMALFORMED, at, "invalid Unicode '\\u%04X': a lone low surrogate", (unsigned)cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (i + 6 > n || t[i] != '\\' || t[i + 1] != 'u' || hex4(t + i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
        return stop(s, MPK_EMALFORMED, at, "invalid Unicode '\\u%04X': a high surrogate without its low half",
                    (unsigned)cp);
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      i += 6;
    }
    if (cp == 0 && (is_key || !s->allow_nul))
      return stop(s, MPK_EMALFORMED, at, is_key ? "NUL byte in object key not supported"
                                                : "\\u0000 is not allowed in a string");
    w += put_utf8(cp, o + w);
  }
  *out_len = w;
  return 1;
}

/* A string or key as yajl hands it over: unescaped strings point into the text itself. */
static int take_string(scanner *s, const unsigned char *p, size_t n, bool is_key, const char **out,
                       size_t *out_len) {
  uintptr_t at = (uintptr_t)p, lo = (uintptr_t)s->text;
  if (at >= lo && at - lo < s->len) {
    size_t bad = utf8_invalid_at(p, n);
    if (bad < n) return stop(s, MPK_EMALFORMED, at - lo + bad, "invalid UTF-8 in a string");
    *out = (const char *)p;
    *out_len = n;
    return 1;
  }
  if (!decode_escaped(s, is_key, out_len)) return 0;
  *out = s->str;
  return 1;
}

static const char *key_bytes(const scanner *s, const key_entry *k) {
  return k->pooled ? s->pool + k->at : (const char *)s->text + k->at;
}

static bool same_key(const scanner *s, const key_entry *k, uint64_t hash, const char *p, size_t n) {
  return k->hash == hash && k->len == n && memcmp(key_bytes(s, k), p, n) == 0;
}

/* Insert entry number e into the frame's index (open addressing, linear probing). */
static void index_put(const scanner *s, frame *f, size_t e) {
  size_t mask = f->index_cap - 1, i = (size_t)s->keys[e].hash & mask;
  while (f->index[i]) i = (i + 1) & mask;
  f->index[i] = e + 1;
}

static bool index_rebuild(scanner *s, frame *f, size_t cap) {
  size_t *index = calloc(cap, sizeof *index);
  if (!index) return false;
  free(f->index);
  f->index = index;
  f->index_cap = cap;
  for (size_t e = f->first_key; e < s->n_keys; e++) index_put(s, f, e);
  return true;
}

/* Refuse a key the innermost object already has, then remember it. */
static int add_key(scanner *s, const char *p, size_t n, size_t at) {
  frame *f = &s->open[s->depth - 1];
  uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * UINT64_C(0x100000001b3);
  size_t count = s->n_keys - f->first_key;
  bool dup = false;
  if (!f->index) {
    for (size_t e = f->first_key; e < s->n_keys && !dup; e++) dup = same_key(s, &s->keys[e], h, p, n);
  } else {
    size_t mask = f->index_cap - 1;
    for (size_t i = (size_t)h & mask; f->index[i] && !dup; i = (i + 1) & mask)
      dup = same_key(s, &s->keys[f->index[i] - 1], h, p, n);
  }
  if (dup) return stop(s, MPK_EMALFORMED, at, "duplicate object key");
  if (!grow((void **)&s->keys, &s->keys_cap, s->n_keys + 1, sizeof *s->keys)) return nomem(s);
  key_entry k = {.hash = h, .len = n};
  uintptr_t lo = (uintptr_t)s->text;
  if ((uintptr_t)p >= lo && (uintptr_t)p - lo < s->len) {
    k.at = (uintptr_t)p - lo;
  } else { /* decoded: keep a copy, the decoding buffer is reused */
    if (!grow((void **)&s->pool, &s->pool_cap, s->pool_len + n + 1, 1)) return nomem(s);
    memcpy(s->pool + s->pool_len, p, n);
    s->pool[s->pool_len + n] = '\0';
    k.at = s->pool_len;
    k.pooled = true;
    s->pool_len += n + 1;
  }
  s->keys[s->n_keys++] = k;
  count++;
  if (f->index ? count * 2 > f->index_cap : count > LINEAR_KEYS) {
    if (!index_rebuild(s, f, f->index ? f->index_cap * 2 : 4 * LINEAR_KEYS)) return nomem(s);
  } else if (f->index) {
    index_put(s, f, s->n_keys - 1);
  }
  return 1;
}

/* Hand an event to the callback; a nonzero answer stops the scan. */
static int deliver(scanner *s, mpk_json_event *e) {
  e->depth = s->depth;
  int rc = s->fn(s->ctx, e);
  if (rc) {
    s->user = rc;
    return 0;
  }
  return 1;
}

/* Every value, container or scalar, passes here first. */
static int value(scanner *s, mpk_json_event *e) {
  if (s->depth >= s->max_depth)
    return stop(s, MPK_ELIMIT, consumed(s), "JSON nesting deeper than the limit of %zu levels", s->max_depth);
  if (!deliver(s, e)) return 0;
  if (!s->depth) s->root_end = consumed(s); /* a container's end resets it */
  return 1;
}

static int on_null(void *ctx) { return value(ctx, &(mpk_json_event){.kind = MPK_JSON_NULL}); }

static int on_boolean(void *ctx, int v) {
  return value(ctx, &(mpk_json_event){.kind = v ? MPK_JSON_TRUE : MPK_JSON_FALSE});
}

static int on_number(void *ctx, const char *p, size_t n) {
  scanner *s = ctx;
  bool real = false;
  for (size_t i = 0; i < n && !real; i++) real = p[i] == '.' || p[i] == 'e' || p[i] == 'E';
  if (!real) { /* yajl has checked the syntax: -?(0|[1-9][0-9]*) */
    bool neg = p[0] == '-';
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (size_t i = neg; i < n; i++) {
      unsigned d = (unsigned)(p[i] - '0');
      if (v > (limit - d) / 10)
        return stop(s, MPK_EMALFORMED, consumed(s), neg ? "too big negative integer" : "too big integer");
      v = v * 10 + d;
    }
    return value(s, &(mpk_json_event){.kind = MPK_JSON_INTEGER, .integer = neg ? (int64_t)(0 - v) : (int64_t)v});
  }
  char small[64], *t = n < sizeof small ? small : malloc(n + 1);
  if (!t) return nomem(s);
  memcpy(t, p, n);
  t[n] = '\0';
  /* strtod reads the locale's decimal point; jansson makes the same substitution. */
  const char *point = localeconv()->decimal_point;
  if (point[0] != '.' && point[0] && !point[1]) {
    char *dot = memchr(t, '.', n);
    if (dot) *dot = point[0];
  }
  errno = 0;
  double d = strtod(t, NULL);
  int e = errno;
  if (t != small) free(t);
  if ((d == HUGE_VAL || d == -HUGE_VAL) && e == ERANGE)
    return stop(s, MPK_EMALFORMED, consumed(s), "real number overflow");
  return value(s, &(mpk_json_event){.kind = MPK_JSON_REAL, .real = d});
}

static int on_string(void *ctx, const unsigned char *p, size_t n) {
  scanner *s = ctx;
  mpk_json_event e = {.kind = MPK_JSON_STRING};
  if (!take_string(s, p, n, false, &e.str, &e.len)) return 0;
  return value(s, &e);
}

static int on_key(void *ctx, const unsigned char *p, size_t n) {
  scanner *s = ctx;
  size_t at = consumed(s);
  mpk_json_event e = {.kind = MPK_JSON_KEY};
  if (!take_string(s, p, n, true, &e.str, &e.len) || !add_key(s, e.str, e.len, at)) return 0;
  const key_entry *k = &s->keys[s->n_keys - 1];
  e.str = key_bytes(s, k); /* stays put until the next key; s->str does not */
  return deliver(s, &e);
}

static int on_start(scanner *s, bool object) {
  if (!value(s, &(mpk_json_event){.kind = object ? MPK_JSON_OBJECT_START : MPK_JSON_ARRAY_START})) return 0;
  frame *f = &s->open[s->depth++]; /* value() refused depth >= max_depth, and open holds max_depth */
  *f = (frame){.first_key = s->n_keys, .pool_start = s->pool_len};
  return 1;
}

static int on_end(scanner *s, bool object) {
  frame *f = &s->open[--s->depth];
  s->n_keys = f->first_key;
  s->pool_len = f->pool_start;
  free(f->index);
  f->index = NULL;
  if (!deliver(s, &(mpk_json_event){.kind = object ? MPK_JSON_OBJECT_END : MPK_JSON_ARRAY_END})) return 0;
  if (!s->depth) s->root_end = consumed(s);
  return 1;
}

static int on_start_map(void *ctx) { return on_start(ctx, true); }
static int on_start_array(void *ctx) { return on_start(ctx, false); }
static int on_end_map(void *ctx) { return on_end(ctx, true); }
static int on_end_array(void *ctx) { return on_end(ctx, false); }

static const yajl_callbacks events = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number, /* the text: integers and reals are told apart here */
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end_map,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end_array,
};

static bool json_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* Run yajl over the text; on failure s->code (a rule) or s->user (the callback) says why. */
static void run(scanner *s) {
  yajl_status st = yajl_parse(s->yajl, s->text, s->len);
  if (st == yajl_status_ok) {
    s->finishing = true;
    st = yajl_complete_parse(s->yajl);
  }
  if (st == yajl_status_client_canceled) return;
  if (st != yajl_status_ok) {
    /* yajl's message without its "lexical error: " / "parse error: " prefix and final period */
    unsigned char *e = yajl_get_error(s->yajl, 0, NULL, 0);
    const char *m = e ? (const char *)e : "unknown error";
    const char *colon = strstr(m, "error: ");
    if (colon) m = colon + 7;
    int n = (int)strcspn(m, "\n");
    if (n && m[n - 1] == '.') n--;
    stop(s, MPK_EMALFORMED, consumed(s), "%.*s", n, m);
    if (e) yajl_free_error(s->yajl, e);
    return;
  }
  for (size_t i = s->root_end; i < s->len; i++)
    if (!json_space(s->text[i])) {
      stop(s, MPK_EMALFORMED, i, "end of file expected");
      return;
    }
}

int mpk_json_scan(const void *data, size_t len, const mpk_json_opts *opts, const char *file,
                  mpk_json_event_fn fn, void *ctx, mpk_error *err) {
  size_t max_bytes = opts && opts->max_bytes ? opts->max_bytes : MPK_JSON_DEFAULT_MAX_BYTES;
  size_t max_depth = opts && opts->max_depth ? opts->max_depth : MPK_JSON_DEFAULT_MAX_DEPTH;
  if (len > max_bytes)
    return mpk_fail_at(err, MPK_ELIMIT, file, 0, "document of %zu bytes exceeds the limit of %zu bytes",
                       len, max_bytes);
  const unsigned char *p = data;
  size_t skip = 0;
  /* A leading UTF-8 BOM is tolerated, as TextDecoder and Python's utf-8-sig do. */
  if (len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) skip = 3;
  frame open[MPK_JSON_DEFAULT_MAX_DEPTH];
  scanner s = {.text = p + skip, .len = len - skip, .fn = fn, .ctx = ctx, .max_depth = max_depth,
               .allow_nul = opts && opts->allow_nul, .open = open};
  if (max_depth > MPK_JSON_DEFAULT_MAX_DEPTH) s.open = calloc(max_depth, sizeof *s.open);
  s.yajl = s.open ? yajl_alloc(&events, NULL, &s) : NULL;
  if (!s.yajl) {
    if (s.open != open) free(s.open);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  yajl_config(s.yajl, yajl_dont_validate_strings, 1); /* take_string() validates, more strictly */
  run(&s);
  /* yajl takes '\v' and '\f' for whitespace; they cannot be anything else in a text it accepts
     (strings refuse raw control characters), so the first one is the error unless one came first. */
  const unsigned char *vt = memchr(s.text, '\v', s.len), *ff = memchr(s.text, '\f', s.len);
  const unsigned char *sp = vt && ff ? (vt < ff ? vt : ff) : vt ? vt : ff;
  if (sp && ((!s.code && !s.user) || (s.code && (size_t)(sp - s.text) < s.at))) {
    s.user = 0;
    stop(&s, MPK_EMALFORMED, (size_t)(sp - s.text), "invalid whitespace character 0x%02x", *sp);
  }
  int rc = s.user ? s.user : s.code;
  if (s.user) {
    /* the callback has set err */
  } else if (rc == MPK_ENOMEM) {
    mpk_fail(err, rc, file, NULL, "out of memory");
  } else if (rc == MPK_ELIMIT) {
    mpk_fail_at(err, rc, file, (int64_t)(s.at + skip), "%s", s.msg);
  } else if (rc) {
    size_t at = s.at < s.len ? s.at : s.len, line_start = 0;
    int line = 1;
    for (const unsigned char *nl = s.text; (nl = memchr(nl, '\n', at - (size_t)(nl - s.text)));) {
      line++;
      line_start = (size_t)(++nl - s.text);
    }
    mpk_fail_at(err, rc, file, (int64_t)(at + skip), "invalid JSON: %s (line %d, column %zu)", s.msg, line,
                at - line_start + 1);
  }
  yajl_free(s.yajl);
  for (size_t i = 0; i < s.depth; i++) free(s.open[i].index);
  if (s.open != open) free(s.open);
  free(s.keys);
  free(s.pool);
  free(s.str);
  return rc;
}
