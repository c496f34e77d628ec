/* A JSON writer that produces exactly what Python's json.dumps(value, indent=N,
   ensure_ascii=...) writes, keys in the object's insertion order: the bytes MLC's producer
   writes, so files modelpkg produces are byte-identical to the reference's. And, the same writer
   in another style, exactly what Gson's default toJson writes (compact, HTML-safe escapes): the
   MobileTransformers runtime's install_record.json. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/core.h"

/* Decode one UTF-8 sequence (input is valid UTF-8: jansson checked it). */
static unsigned decode(const unsigned char *s, size_t *i) {
  unsigned c = s[*i];
  int extra = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
  if (extra) c &= 0x3Fu >> extra;
  for (int k = 1; k <= extra; k++) c = (c << 6) | (s[*i + (size_t)k] & 0x3F);
  *i += (size_t)extra + 1;
  return c;
}

/* The output style: Python's json.dumps (indent >= 0, ascii: ensure_ascii) or Gson's (compact). */
typedef enum { PY_UTF8, PY_ASCII, GSON } style;

/* Gson's JsonWriter with htmlSafe (Gson's default): these ASCII characters as \u00XX too. */
static bool gson_html(unsigned char c) { return c == '<' || c == '>' || c == '&' || c == '=' || c == '\''; }

static void put_string(mpk_buf *b, const char *str, size_t n, style sty) {
  bool ascii = sty == PY_ASCII;
  const unsigned char *s = (const unsigned char *)str;
  mpk_buf_putc(b, '"');
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (sty == GSON) {
      if (gson_html(c)) {
        mpk_buf_printf(b, "\\u%04x", c);
        i++;
        continue;
      }
      /* U+2028 and U+2029 (E2 80 A8 / E2 80 A9): escaped, as Gson does for JavaScript's sake */
      if (c == 0xE2 && i + 2 < n && s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9)) {
        mpk_buf_printf(b, "\\u%04x", s[i + 2] == 0xA8 ? 0x2028u : 0x2029u);
        i += 3;
        continue;
      }
    }
    switch (c) {
      case '"': mpk_buf_puts(b, "\\\""); i++; continue;
      case '\\': mpk_buf_puts(b, "\\\\"); i++; continue;
      case '\n': mpk_buf_puts(b, "\\n"); i++; continue;
      case '\r': mpk_buf_puts(b, "\\r"); i++; continue;
      case '\t': mpk_buf_puts(b, "\\t"); i++; continue;
      case '\b': mpk_buf_puts(b, "\\b"); i++; continue;
      case '\f': mpk_buf_puts(b, "\\f"); i++; continue;
      default: break;
    }
    if (c < 0x20) {
      mpk_buf_printf(b, "\\u%04x", c);
      i++;
    } else if (c < 0x80 || !ascii) {
      mpk_buf_putc(b, (char)c);
      i++;
    } else {
      unsigned cp = decode(s, &i);
      if (cp >= 0x10000) { /* a surrogate pair, as Python writes it */
        cp -= 0x10000;
        mpk_buf_printf(b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        mpk_buf_printf(b, "\\u%04x", cp);
      }
    }
  }
  mpk_buf_putc(b, '"');
}

static void newline(mpk_buf *b, int indent, int depth) {
  if (indent < 0) return; /* compact (Gson) */
  mpk_buf_putc(b, '\n');
  for (int i = 0; i < indent * depth; i++) mpk_buf_putc(b, ' ');
}

static int write_value(mpk_buf *b, const json_t *v, int indent, int depth, style ascii, bool sort, mpk_error *err) {
  switch (json_typeof(v)) {
    case JSON_OBJECT: {
      if (json_object_size(v) == 0) {
        mpk_buf_puts(b, "{}");
        return 0;
      }
      mpk_buf_putc(b, '{');
      const char **keys;
      size_t n;
      /* sort_keys: Python sorts str keys by code point, which is bytewise UTF-8 order. */
      if ((sort ? mpk_json_keys_sorted(v, true, &keys, &n) : mpk_json_keys_insertion(v, &keys, &n)))
        return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
      for (size_t i = 0; i < n; i++) {
        if (i) mpk_buf_putc(b, ',');
        newline(b, indent, depth + 1);
        put_string(b, keys[i], strlen(keys[i]), ascii);
        mpk_buf_puts(b, indent < 0 ? ":" : ": ");
        int rc = write_value(b, json_object_get(v, keys[i]), indent, depth + 1, ascii, sort, err);
        if (rc) {
          free(keys);
          return rc;
        }
      }
      free(keys);
      newline(b, indent, depth);
      mpk_buf_putc(b, '}');
      return 0;
    }
    case JSON_ARRAY: {
      if (json_array_size(v) == 0) {
        mpk_buf_puts(b, "[]");
        return 0;
      }
      mpk_buf_putc(b, '[');
      for (size_t i = 0; i < json_array_size(v); i++) {
        if (i) mpk_buf_putc(b, ',');
        newline(b, indent, depth + 1);
        int rc = write_value(b, json_array_get(v, i), indent, depth + 1, ascii, sort, err);
        if (rc) return rc;
      }
      newline(b, indent, depth);
      mpk_buf_putc(b, ']');
      return 0;
    }
    case JSON_STRING:
      put_string(b, json_string_value(v), json_string_length(v), ascii);
      return 0;
    case JSON_INTEGER:
      mpk_buf_printf(b, "%lld", (long long)json_integer_value(v));
      return 0;
    case JSON_TRUE: mpk_buf_puts(b, "true"); return 0;
    case JSON_FALSE: mpk_buf_puts(b, "false"); return 0;
    case JSON_NULL: mpk_buf_puts(b, "null"); return 0;
    case JSON_REAL: break;
  }
  /* Python's float repr is not reproduced: the documents written here hold no reals. */
  return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL, "cannot write a real number in Python's format");
}

int mpk_json_dumps_python(const json_t *value, int indent, bool ensure_ascii, bool sort_keys, char **out,
                          size_t *len, mpk_error *err) {
  mpk_buf b = {0};
  *out = NULL;
  int rc = write_value(&b, value, indent, 0, ensure_ascii ? PY_ASCII : PY_UTF8, sort_keys, err);
  if (rc) {
    mpk_buf_free(&b);
    return rc;
  }
  *out = mpk_buf_take(&b, len);
  return *out ? 0 : mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
}

int mpk_json_write_document(const json_t *value, bool sort_keys, char **out, size_t *len, mpk_error *err) {
  mpk_buf b = {0};
  *out = NULL;
  int rc = write_value(&b, value, 2, 0, PY_ASCII, sort_keys, err);
  if (rc) {
    mpk_buf_free(&b);
    return rc;
  }
  mpk_buf_putc(&b, '\n');
  *out = mpk_buf_take(&b, len);
  return *out ? 0 : mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
}

int mpk_json_dumps_gson(const json_t *value, char **out, size_t *len, mpk_error *err) {
  mpk_buf b = {0};
  *out = NULL;
  int rc = write_value(&b, value, -1, 0, GSON, false, err);
  if (rc) {
    mpk_buf_free(&b);
    return rc;
  }
  *out = mpk_buf_take(&b, len);
  return *out ? 0 : mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
}
