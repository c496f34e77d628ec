/* The C side of the request differential test (tests/request/request_diff.mjs): reads one JSON
   object a line from stdin — {"request": TEXT, "model_id": ID, "model_type": TYPE, "kinds": null or
   ["audio", "image"...]} — checks TEXT with mpk_mlc_request_check and writes one JSON object a line:
   {"ok": true} or {"error": CODE, "message": ..., "pointer": ...}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "modelpkg/mlc.h"

int main(void) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, stdin)) > 0) {
    json_error_t jerr;
    json_t *c = json_loadb(line, (size_t)len, 0, &jerr);
    const json_t *text = json_object_get(c, "request"), *kinds = json_object_get(c, "kinds");
    if (!json_is_string(text)) {
      fprintf(stderr, "request_eval: bad line: %s", line);
      return 2;
    }
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
    json_t *o = rc ? json_pack("{s:i,s:s,s:s}", "error", rc, "message", err.message, "pointer", err.pointer)
                   : json_pack("{s:b}", "ok", 1);
    char *out = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (!out) {
      fprintf(stderr, "request_eval: output is not UTF-8 for: %s", line);
      return 2;
    }
    puts(out);
    free(out);
    json_decref(o);
    json_decref(c);
  }
  free(line);
  return 0;
}
