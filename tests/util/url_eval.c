/* The C side of the URL differential test (tests/url/url_diff.mjs): reads one JSON array a line
   from stdin — ["resolve", INPUT, BASE-or-null] (new URL(INPUT, BASE).href) or ["clean", MODEL_URL]
   (WebLLM's cleanModelUrl) — and writes one JSON object a line: {"href": ...} or {"error": CODE,
   "message": ...}, CODE being mpk_strerror's name of the error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/url.h"
#include "modelpkg/mlc.h"

int main(void) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, stdin)) > 0) {
    json_error_t jerr;
    json_t *a = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &jerr);
    const char *op = json_string_value(json_array_get(a, 0));
    const char *in = json_string_value(json_array_get(a, 1));
    const char *base = json_string_value(json_array_get(a, 2));
    if (!op || !in) {
      fprintf(stderr, "url_eval: bad line: %s", line);
      return 2;
    }
    mpk_error err;
    mpk_error_clear(&err);
    char *href = NULL;
    int rc;
    if (strlen(in) != json_string_length(json_array_get(a, 1))) rc = mpk_fail(&err, MPK_EINVAL, NULL, NULL, "NUL");
    else if (strcmp(op, "clean") == 0) rc = mpk_mlc_clean_model_url(in, &href, &err);
    else rc = mpk_url_resolve(in, base, &href, &err);
    json_t *o = rc ? json_pack("{s:i,s:s}", "error", rc, "message", err.message) : json_pack("{s:s}", "href", href);
    char *text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (!text) {
      fprintf(stderr, "url_eval: output is not UTF-8 for: %s", line);
      return 2;
    }
    puts(text);
    free(text);
    json_decref(o);
    json_decref(a);
    mpk_free(href);
  }
  free(line);
  return 0;
}
