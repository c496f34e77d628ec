/* The C side of the differential tests against WebLLM 0.2.86's own functions: reads one JSON value
   a line from stdin and writes one JSON object a line, in the mode argv[1] names.
     url      (tests/url/url_diff.mjs): ["resolve", INPUT, BASE-or-null] (new URL(INPUT, BASE).href)
              or ["clean", MODEL_URL] (cleanModelUrl) -> {"href": ...} or {"error": CODE, "message": ...}
     request  (tests/request/request_diff.mjs): {"request": TEXT, "model_id": ID, "model_type": TYPE,
              "kinds": null or ["audio", "image"...]} (mpk_mlc_request_check) -> {"ok": true} or
              {"error": CODE, "message": ..., "pointer": ...}
   CODE is the mpk error code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/url.h"
#include "modelpkg/mlc.h"

/* One line's answer, or NULL for a line this mode cannot read. */
typedef json_t *(*eval_fn)(const json_t *in);

static json_t *eval_url(const json_t *a) {
  const char *op = json_string_value(json_array_get(a, 0));
  const char *in = json_string_value(json_array_get(a, 1));
  const char *base = json_string_value(json_array_get(a, 2));
  if (!op || !in) return NULL;
  mpk_error err;
  mpk_error_clear(&err);
  char *href = NULL;
  int rc;
  if (strlen(in) != json_string_length(json_array_get(a, 1))) rc = mpk_fail(&err, MPK_EINVAL, NULL, NULL, "NUL");
  else if (strcmp(op, "clean") == 0) rc = mpk_mlc_clean_model_url(in, &href, &err);
  else rc = mpk_url_resolve(in, base, &href, &err);
  json_t *o = rc ? json_pack("{s:i,s:s}", "error", rc, "message", err.message) : json_pack("{s:s}", "href", href);
  mpk_free(href);
  return o;
}

static json_t *eval_request(const json_t *c) {
  const json_t *text = json_object_get(c, "request"), *kinds = json_object_get(c, "kinds");
  if (!json_is_string(text)) return NULL;
  mpk_mlc_request_model m = {.model_id = json_string_value(json_object_get(c, "model_id")),
                             .model_type = json_string_value(json_object_get(c, "model_type"))};
  if (json_is_array(kinds)) {
    m.kinds.declared = 1;
    size_t i;
    const json_t *k;
    json_array_foreach(kinds, i, k) {
      if (json_is_string(k) && strcmp(json_string_value(k), "audio") == 0) m.kinds.audio = 1;
      if (json_is_string(k) && strcmp(json_string_value(k), "image") == 0) m.kinds.image = 1;
    }
  }
  mpk_error err;
  int rc = mpk_mlc_request_check(json_string_value(text), json_string_length(text), NULL, &m, &err);
  return rc ? json_pack("{s:i,s:s,s:s}", "error", rc, "message", err.message, "pointer", err.pointer)
            : json_pack("{s:b}", "ok", 1);
}

int main(int argc, char **argv) {
  eval_fn fn = argc == 2 && strcmp(argv[1], "url") == 0       ? eval_url
               : argc == 2 && strcmp(argv[1], "request") == 0 ? eval_request
                                                              : NULL;
  if (!fn) {
    fprintf(stderr, "usage: webllm_eval url|request < LINES\n");
    return 2;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, stdin)) > 0) {
    json_error_t jerr;
    json_t *in = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &jerr);
    json_t *o = in ? fn(in) : NULL;
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    if (!text) {
      fprintf(stderr, "webllm_eval %s: %s: %s", argv[1], o ? "output is not UTF-8 for" : "bad line", line);
      return 2;
    }
    puts(text);
    free(text);
    json_decref(o);
    json_decref(in);
  }
  free(line);
  return 0;
}
