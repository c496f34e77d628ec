/* Checks for strict documents: typed getters that name the path and the rule when they fail.
   The wording follows the reference consumer (WebLLM's artifact manifest parser) so that a
   report from either names the same field and the same rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/mathx.h"

int mpk_jv_fail(mpk_jv *v, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mpk_vfail(v->err, code, v->file, v->path.buf, fmt, ap);
  va_end(ap);
  return code;
}

int mpk_jv_object(mpk_jv *v, const json_t *value) {
  if (!json_is_object(value)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected an object");
  return 0;
}

static bool in_list(const char *const *list, const char *key) {
  for (; *list; list++)
    if (strcmp(*list, key) == 0) return true;
  return false;
}

/* JSON.stringify of a key, for messages: quotes and the escapes that keep it on one line. */
static void quote(char *out, size_t cap, const char *s) {
  size_t o = 0;
  if (cap < 8) return;
  out[o++] = '"';
  for (; *s && o + 8 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[o++] = '\\';
      out[o++] = (char)c;
    } else if (c < 0x20) {
      o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
    } else {
      out[o++] = (char)c;
    }
  }
  out[o++] = '"';
  out[o] = '\0';
}

int mpk_jv_exact_keys(mpk_jv *v, const json_t *obj, const char *const *allowed,
                      const char *const *required) {
  const char **keys;
  size_t n;
  if (mpk_json_keys_js_order(obj, &keys, &n)) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  char q[300];
  for (size_t i = 0; i < n; i++) {
    if (!in_list(allowed, keys[i])) {
      quote(q, sizeof q, keys[i]);
      free(keys);
      return mpk_jv_fail(v, MPK_EMALFORMED, "unknown field %s", q);
    }
  }
  free(keys);
  return mpk_jv_required_keys(v, obj, required);
}

int mpk_jv_required_keys(mpk_jv *v, const json_t *obj, const char *const *required) {
  char q[300];
  for (; *required; required++) {
    if (!json_object_get(obj, *required)) {
      quote(q, sizeof q, *required);
      return mpk_jv_fail(v, MPK_EMALFORMED, "missing field %s", q);
    }
  }
  return 0;
}

int mpk_jv_string(mpk_jv *v, const json_t *value, const char **out) {
  if (!json_is_string(value) || json_string_length(value) == 0)
    return mpk_jv_fail(v, MPK_EMALFORMED, "expected a non-empty string");
  *out = json_string_value(value);
  return 0;
}

int mpk_jv_literal(mpk_jv *v, const json_t *value, const char *expected) {
  if (!json_is_string(value) || strcmp(json_string_value(value), expected) != 0 ||
      json_string_length(value) != strlen(expected)) {
    char q[300];
    quote(q, sizeof q, expected);
    return mpk_jv_fail(v, MPK_EMALFORMED, "expected %s", q);
  }
  return 0;
}

bool mpk_json_safe_integer(const json_t *value, int64_t *out) {
  if (json_is_integer(value)) {
    json_int_t i = json_integer_value(value);
    if (i > MPK_SAFE_INT_MAX || i < -MPK_SAFE_INT_MAX) return false;
    *out = (int64_t)i;
    return true;
  }
  if (json_is_real(value)) {
    double d = json_real_value(value);
    if (!isfinite(d) || d != mpk_floor(d) || fabs(d) > (double)MPK_SAFE_INT_MAX) return false;
    *out = (int64_t)d;
    return true;
  }
  return false;
}

int mpk_jv_integer(mpk_jv *v, const json_t *value, int64_t minimum, int64_t *out) {
  int64_t i;
  if (!mpk_json_safe_integer(value, &i) || i < minimum)
    return mpk_jv_fail(v, MPK_EMALFORMED, "expected an integer greater than or equal to %lld",
                       (long long)minimum);
  *out = i;
  return 0;
}

bool mpk_is_sha256_id(const char *s) {
  if (strncmp(s, "sha256:", 7) != 0) return false;
  s += 7;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return s[64] == '\0';
}

int mpk_jv_sha256_id(mpk_jv *v, const json_t *value, const char **out) {
  int rc = mpk_jv_string(v, value, out);
  if (rc) return rc;
  if (!mpk_is_sha256_id(*out))
    return mpk_jv_fail(v, MPK_EMALFORMED,
                       "expected a lowercase sha256:<64 hex digits> identifier");
  return 0;
}

int mpk_jv_strdup(mpk_jv *v, mpk_arena *a, const char *s, const char **out) {
  *out = mpk_arena_strdup(a, s);
  return *out ? 0 : mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
}

int mpk_jv_each_member(mpk_jv *v, const json_t *obj, mpk_jv_member_fn fn, void *ctx) {
  const char **keys;
  size_t n;
  if (mpk_json_keys_sorted(obj, false, &keys, &n)) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  int rc = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    if (keys[i][0] == '\0') {
      /* WebLLM names this "<path> key"; the JSON pointer to the empty key is "<path>/". */
      size_t prev = mpk_path_push_key(&v->path, "");
      rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected a non-empty string");
      mpk_path_pop(&v->path, prev);
    }
  }
  for (size_t i = 0; !rc && i < n; i++) {
    size_t prev = mpk_path_push_key(&v->path, keys[i]);
    rc = fn(v, i, keys[i], json_object_get(obj, keys[i]), ctx);
    mpk_path_pop(&v->path, prev);
  }
  free(keys);
  return rc;
}

int mpk_jv_version_gate(mpk_jv *v, const json_t *root, const char *reader, mpk_arena *a, const char **schema_version,
                        const char **min_reader_version) {
  int rc = mpk_jv_object(v, root);
  if (rc) return rc;
  const json_t *sv = json_object_get(root, "schemaVersion"), *mr = json_object_get(root, "minReaderVersion");
  if (sv && !json_is_string(sv))
    MPK_JV_AT(v, "schemaVersion", mpk_jv_fail(v, MPK_EMALFORMED, "expected a \"MAJOR.MINOR\" string"));
  if (mr && !json_is_string(mr))
    MPK_JV_AT(v, "minReaderVersion", mpk_jv_fail(v, MPK_EMALFORMED, "expected a \"MAJOR.MINOR\" string"));
  mpk_error gate;
  mpk_error_clear(&gate);
  rc = mpk_doc_version_check(sv ? json_string_value(sv) : NULL, mr ? json_string_value(mr) : NULL, reader, &gate);
  if (rc) return mpk_fail(v->err, rc, v->file, gate.pointer, "%s", gate.message);
  if ((rc = mpk_jv_strdup(v, a, json_string_value(sv), schema_version)) ||
      (rc = mpk_jv_strdup(v, a, json_string_value(mr), min_reader_version)))
    return rc;
  return 0;
}
