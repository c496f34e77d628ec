/* Canonical JSON, the text hashed for identities: sorted keys (code point order), no
   whitespace, raw non-ASCII, minimal escapes, integers only. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/core.h"

static void put_string(mpk_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  mpk_buf_putc(b, '"');
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char u[7];
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c == '\b') esc = "\\b";
    else if (c == '\f') esc = "\\f";
    else if (c == '\n') esc = "\\n";
    else if (c == '\r') esc = "\\r";
    else if (c == '\t') esc = "\\t";
    else if (c < 0x20) {
      memcpy(u, "\\u00", 4);
      u[4] = hex[c >> 4];
      u[5] = hex[c & 15];
      u[6] = '\0';
      esc = u;
    }
    if (esc) {
      mpk_buf_put(b, s + i - run, run);
      run = 0;
      mpk_buf_puts(b, esc);
    } else {
      run++;
    }
  }
  mpk_buf_put(b, s + n - run, run);
  mpk_buf_putc(b, '"');
}

static int dump(const json_t *v, mpk_buf *b, mpk_path *path, mpk_error *err) {
  switch (json_typeof(v)) {
    case JSON_OBJECT: {
      const char **keys;
      size_t n;
      if (mpk_json_keys_sorted(v, true, &keys, &n)) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
      mpk_buf_putc(b, '{');
      for (size_t i = 0; i < n; i++) {
        if (i) mpk_buf_putc(b, ',');
        put_string(b, keys[i], strlen(keys[i]));
        mpk_buf_putc(b, ':');
        size_t prev = mpk_path_push_key(path, keys[i]);
        int rc = dump(json_object_get(v, keys[i]), b, path, err);
        mpk_path_pop(path, prev);
        if (rc) {
          free(keys);
          return rc;
        }
      }
      free(keys);
      mpk_buf_putc(b, '}');
      return 0;
    }
    case JSON_ARRAY: {
      mpk_buf_putc(b, '[');
      for (size_t i = 0; i < json_array_size(v); i++) {
        if (i) mpk_buf_putc(b, ',');
        size_t prev = mpk_path_push_index(path, i);
        int rc = dump(json_array_get(v, i), b, path, err);
        mpk_path_pop(path, prev);
        if (rc) return rc;
      }
      mpk_buf_putc(b, ']');
      return 0;
    }
    case JSON_STRING:
      put_string(b, json_string_value(v), json_string_length(v));
      return 0;
    case JSON_INTEGER:
    case JSON_REAL: {
      int64_t i;
      if (!mpk_json_safe_integer(v, &i))
        return mpk_fail(err, MPK_EMALFORMED, NULL, path->buf,
                        "canonical JSON allows only integers within +/-(2^53-1)");
      mpk_buf_printf(b, "%lld", (long long)i);
      return 0;
    }
    case JSON_TRUE: mpk_buf_puts(b, "true"); return 0;
    case JSON_FALSE: mpk_buf_puts(b, "false"); return 0;
    case JSON_NULL: mpk_buf_puts(b, "null"); return 0;
  }
  return mpk_fail(err, MPK_EMALFORMED, NULL, path->buf, "not a JSON value");
}

int mpk_canonical_dump(const json_t *value, char **out, size_t *out_len, mpk_error *err) {
  mpk_buf b = {0};
  mpk_path path;
  mpk_path_init(&path);
  *out = NULL;
  int rc = dump(value, &b, &path, err);
  if (rc) {
    mpk_buf_free(&b);
    return rc;
  }
  *out = mpk_buf_take(&b, out_len);
  if (!*out) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  return 0;
}

int mpk_canonical_json(const char *json, size_t len, char **out, size_t *out_len, mpk_error *err) {
  if (!json || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  json_t *v;
  mpk_json_opts opts = {.allow_nul = true};
  int rc = mpk_json_parse(json, len, &opts, NULL, &v, err);
  if (rc) return rc;
  size_t n = 0;
  rc = mpk_canonical_dump(v, out, &n, err);
  json_decref(v);
  if (out_len) *out_len = n;
  return rc;
}

void mpk_free(void *p) { free(p); }
