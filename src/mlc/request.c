/* A chat-completion request's messages against what the model declares it accepts: WebLLM
   0.2.86's postInitAndCheckFieldsChatCompletion, its message steps (docs/mlc-request.md), with
   its messages and its order of checks. Stricter where WebLLM would crash or read on: a request
   whose shape is not a chat request is refused, naming the field. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "modelpkg/mlc.h"

#define FLOAT32_MARKER "$float32array"

/* ---------------------------------------------------------------- JavaScript's String(value) */

typedef struct jsbuf {
  char *s;
  size_t cap, len;
} jsbuf;

static void put(jsbuf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n && b->len + 1 < b->cap; i++) b->s[b->len++] = s[i];
  b->s[b->len] = '\0';
}
static void puts_(jsbuf *b, const char *s) { put(b, s, strlen(s)); }

/* Number::toString (ECMAScript's algorithm): the shortest digits that read back, plain from 1e-7 to
   1e21, else d[.ddd]e+N / e-N. */
static void put_number(jsbuf *b, double d) {
  if (d == 0) { puts_(b, "0"); return; } /* -0 too */
  if (d < 0) { puts_(b, "-"); d = -d; }
  char t[40], digits[20];
  int p = 1;
  for (; p < 17; p++) { /* the fewest significant digits that read back */
    snprintf(t, sizeof t, "%.*e", p - 1, d);
    if (strtod(t, NULL) == d) break;
  }
  snprintf(t, sizeof t, "%.*e", p - 1, d);
  size_t k = 0;
  for (const char *c = t; *c && *c != 'e'; c++)
    if (*c >= '0' && *c <= '9' && k < sizeof digits - 1) digits[k++] = *c;
  while (k > 1 && digits[k - 1] == '0') k--; /* %e may pad */
  digits[k] = '\0';
  int n = atoi(strchr(t, 'e') + 1) + 1; /* the decimal point sits after n digits */
  static const char zeros[] = "000000000000000000000"; /* at most 21 are needed */
  char out[64];
  if ((int)k <= n && n <= 21) snprintf(out, sizeof out, "%s%.*s", digits, n - (int)k, zeros);
  else if (0 < n && n <= 21) snprintf(out, sizeof out, "%.*s.%s", n, digits, digits + n);
  else if (-6 < n && n <= 0) snprintf(out, sizeof out, "0.%.*s%s", -n, zeros, digits);
  else snprintf(out, sizeof out, "%c%s%se%c%d", digits[0], k > 1 ? "." : "", digits + 1, n - 1 < 0 ? '-' : '+',
                abs(n - 1));
  puts_(b, out);
}

/* String(v) of a JSON value or NULL, undefined (what a template literal prints): arrays join their elements' strings
   with ",", null and undefined elements as ""; an object is "[object Object]". */
static void put_js(jsbuf *b, const json_t *v) { /* as deep as the parser allows (64) */
  if (!v) puts_(b, "undefined"); /* an absent member */
  else if (json_is_string(v)) puts_(b, json_string_value(v));
  else if (json_is_integer(v)) put_number(b, (double)json_integer_value(v));
  else if (json_is_real(v)) put_number(b, json_real_value(v));
  else if (json_is_true(v)) puts_(b, "true");
  else if (json_is_false(v)) puts_(b, "false");
  else if (json_is_null(v)) puts_(b, "null");
  else if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++) {
      if (i) puts_(b, ",");
      const json_t *e = json_array_get(v, i);
      if (!json_is_null(e)) put_js(b, e);
    }
  } else puts_(b, "[object Object]");
}

static const char *js_string(const json_t *v, char *buf, size_t cap) {
  jsbuf b = {buf, cap, 0};
  buf[0] = '\0';
  put_js(&b, v);
  return buf;
}

/* ---------------------------------------------------------------- one content part */

typedef struct req_ctx {
  const mpk_mlc_request_model *model;
  const char *model_id;
} req_ctx;

static int at_key(mpk_jv *v, const char *key, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int at_key(mpk_jv *v, const char *key, int code, const char *fmt, ...) {
  char msg[sizeof v->err->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t prev = key ? mpk_path_push_key(&v->path, key) : v->path.len;
  int rc = mpk_jv_fail(v, code, "%s", msg);
  mpk_path_pop(&v->path, prev);
  return rc;
}

static int unsupported_part(mpk_jv *v, const req_ctx *c, const char *type) {
  return at_key(v, "type", MPK_EUNSUPPORTED, "Model %s does not declare support for user content type \"%s\".",
                c->model_id, type);
}

/* A Float32Array in JSON: {"$float32array": [numbers]} or {"$float32array": length}. */
static bool is_float32array(const json_t *v) {
  if (!json_is_object(v) || json_object_size(v) != 1) return false;
  const json_t *x = json_object_get(v, FLOAT32_MARKER);
  int64_t n;
  return json_is_array(x) || (mpk_json_safe_integer(x, &n) && n >= 0);
}

/* /^https?:/i */
static bool http_url(const char *s) {
  size_t n = 0;
  for (const char *w = "http"; *w; w++, n++)
    if ((s[n] | 0x20) != *w) return false; /* ASCII case folding; '\0' never matches */
  if ((s[n] | 0x20) == 's') n++;
  return s[n] == ':';
}

static int image_part(mpk_jv *v, const req_ctx *c, const json_t *part) {
  const mpk_mlc_input_kinds *k = &c->model->kinds;
  if (k->declared && !k->image) return unsupported_part(v, c, "image_url");
  const json_t *img = json_object_get(part, "image_url"); /* not an object: no detail, no url */
  size_t prev = mpk_path_push_key(&v->path, "image_url");
  int rc = 0;
  const json_t *detail = json_object_get(img, "detail"), *url = json_object_get(img, "url");
  char buf[sizeof v->err->message];
  if (detail && !json_is_null(detail))
    rc = at_key(v, "detail", MPK_EUNSUPPORTED, "Currently do not support field image_url.detail, but received: %s",
                js_string(detail, buf, sizeof buf));
  else if (!json_is_string(url)) rc = at_key(v, "url", MPK_EMALFORMED, "image_url.url must be a string");
  else if (strncmp(json_string_value(url), "data:image", 10) != 0 && strncmp(json_string_value(url), "http", 4) != 0)
    rc = at_key(v, "url", MPK_EUNSUPPORTED,
                "image_url.url should start with \"data:image\" for base64, or with \"http\", but got: %s",
                json_string_value(url));
  mpk_path_pop(&v->path, prev);
  return rc;
}

static int audio_part(mpk_jv *v, const req_ctx *c, const json_t *part) {
  const mpk_mlc_input_kinds *k = &c->model->kinds;
  if (!k->declared || !k->audio) return unsupported_part(v, c, "input_audio");
  const json_t *a = json_object_get(part, "input_audio"); /* not an object: no format, no data */
  size_t prev = mpk_path_push_key(&v->path, "input_audio");
  int rc = 0;
  const json_t *format = json_object_get(a, "format"), *data = json_object_get(a, "data");
  int64_t rate;
  if (json_is_string(format) && strcmp(json_string_value(format), "pcm_f32") == 0) {
    if (!is_float32array(data)) rc = at_key(v, "data", MPK_EMALFORMED, "pcm_f32 input_audio.data must be a Float32Array");
    else if (!mpk_json_safe_integer(json_object_get(a, "sample_rate"), &rate) || rate <= 0)
      rc = at_key(v, "sample_rate", MPK_EMALFORMED, "pcm_f32 input_audio.sample_rate must be a positive integer");
  } else if (!json_is_string(data) || http_url(json_string_value(data))) { /* any other format is WAV's */
    rc = at_key(v, "data", MPK_EMALFORMED, "WAV input_audio.data must be raw base64 or a WAV data URL");
  }
  mpk_path_pop(&v->path, prev);
  return rc;
}

/* ---------------------------------------------------------------- one message */

static bool str_is(const json_t *v, const char *s) { return json_is_string(v) && strcmp(json_string_value(v), s) == 0; }

static int user_content(mpk_jv *v, const req_ctx *c, const json_t *content) {
  const mpk_mlc_request_model *m = c->model;
  char buf[sizeof v->err->message];
  if (!m->kinds.declared && strcmp(m->model_type, "VLM") != 0)
    return at_key(v, "content", MPK_EUNSUPPORTED,
                  "The model loaded is not of type ModelType.VLM (vision-language model). Therefore, user message "
                  "only supports string content, but received: %s. Loaded modelId: %s, modelType: %s",
                  js_string(content, buf, sizeof buf), c->model_id, m->model_type);
  if (!json_is_array(content))
    return at_key(v, "content", MPK_EMALFORMED, "expected a string or an array of content parts");
  size_t prev = mpk_path_push_key(&v->path, "content"), texts = 0;
  int rc = 0;
  for (size_t j = 0; !rc && j < json_array_size(content); j++) {
    const json_t *part = json_array_get(content, j);
    size_t p = mpk_path_push_index(&v->path, j);
    const json_t *type = json_is_object(part) ? json_object_get(part, "type") : NULL;
    if (!json_is_object(part)) rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected a content part (an object with a type)");
    else if (str_is(type, "image_url")) rc = image_part(v, c, part);
    else if (str_is(type, "input_audio")) rc = audio_part(v, c, part);
    else texts++; /* WebLLM counts every other part as text */
    mpk_path_pop(&v->path, p);
  }
  if (!rc && texts > 1)
    rc = mpk_jv_fail(v, MPK_EUNSUPPORTED,
                     "Each message can have at most one text contentPart, but received more than 1.");
  mpk_path_pop(&v->path, prev);
  return rc;
}

static int message(mpk_jv *v, const req_ctx *c, size_t index, const json_t *msg) {
  if (!json_is_object(msg)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected a message (an object with a role)");
  const json_t *role = json_object_get(msg, "role"), *content = json_object_get(msg, "content");
  if (str_is(role, "user") && !json_is_string(content)) {
    int rc = user_content(v, c, content);
    if (rc) return rc;
  }
  if (str_is(role, "system") && index != 0)
    return at_key(v, "role", MPK_EMALFORMED, "System prompt should always be the first message in `messages`.");
  return 0;
}

/* ---------------------------------------------------------------- the request */

void mpk_mlc_input_kinds_of_binding(const mpk_mlc_binding *b, mpk_mlc_input_kinds *out) {
  if (!out) return;
  *out = (mpk_mlc_input_kinds){.declared = 1, .audio = b && b->has_audio, .image = b && b->has_image};
}

void mpk_mlc_input_kinds_of_legacy(const mpk_mlc_legacy_abi *abi, mpk_mlc_input_kinds *out) {
  if (!out) return;
  bool image = abi && abi->image_embed;
  *out = (mpk_mlc_input_kinds){.declared = image, .image = image}; /* text-only: nothing declared */
}

int mpk_mlc_request_check(const void *json, size_t len, const char *file, const mpk_mlc_request_model *model,
                          mpk_error *err) {
  mpk_error_clear(err);
  if (!file) file = "request";
  if (!json || !model) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  mpk_mlc_request_model m = *model;
  if (!m.model_type) m.model_type = "LLM";
  if (strcmp(m.model_type, "LLM") != 0 && strcmp(m.model_type, "VLM") != 0 && strcmp(m.model_type, "embedding") != 0)
    return mpk_fail(err, MPK_EINVAL, file, NULL, "model type \"%s\": expected LLM, VLM or embedding", m.model_type);
  req_ctx c = {&m, m.model_id ? m.model_id : "model"};

  json_t *root = NULL;
  int rc = mpk_json_parse(json, len, NULL, file, &root, err);
  if (rc) return rc;
  mpk_jv v = {.file = file, .err = err};
  mpk_path_init(&v.path);
  const json_t *msgs = json_object_get(root, "messages");
  if (!json_is_object(root)) rc = mpk_jv_fail(&v, MPK_EMALFORMED, "expected a chat-completion request (an object)");
  else if (!json_is_array(msgs) || json_array_size(msgs) == 0)
    rc = at_key(&v, "messages", MPK_EMALFORMED, "expected a non-empty array of messages");
  size_t n = json_array_size(msgs);
  if (!rc) {
    size_t prev = mpk_path_push_key(&v.path, "messages");
    for (size_t i = 0; !rc && i < n; i++) {
      size_t p = mpk_path_push_index(&v.path, i);
      rc = message(&v, &c, i, json_array_get(msgs, i));
      mpk_path_pop(&v.path, p);
    }
    const json_t *role = json_object_get(json_array_get(msgs, n - 1), "role");
    if (!rc && !str_is(role, "user") && !str_is(role, "tool")) {
      mpk_path_push_index(&v.path, n - 1);
      rc = at_key(&v, "role", MPK_EMALFORMED, "Last message should be from either `user` or `tool`.");
    }
    mpk_path_pop(&v.path, prev);
  }
  json_decref(root);
  return rc;
}
