/* Turn modelpkg's parsed structs back into the JSON shapes WebLLM's functions return, so the
   conformance tests compare whole results, not a few fields. */
#ifndef MPK_WEBLLM_JSON_H
#define MPK_WEBLLM_JSON_H

#include <jansson.h>

#include "modelpkg.h"

json_t *wj_package(const mpk_mlc_package *pkg);
json_t *wj_artifact(const mpk_mlc_artifact *art);
json_t *wj_binding(const mpk_mlc_binding *b);
/* Assert that `err` is the error WebLLM reported: "<location>: <reason>" must start with
   `expected_message` (modelpkg may add detail after it). */
void wj_assert_error(const char *case_name, const mpk_error *err, const char *expected_message);
/* Assert two JSON values are equal (key order ignored), printing both when not. */
void wj_assert_equal(const char *case_name, const json_t *expected, const json_t *actual);

/* Parse `text`; on success return the result as WebLLM's JSON shape, on failure NULL with err set. */
typedef json_t *(*wj_parse_fn)(const char *text, size_t len, mpk_error *err);
/* Run every case of a vector file whose cases hold `input_field` (a JSON value, or base64 bytes when
   the field name ends in "_base64") and `expected` or `expected_error`. `divergent`, when not NULL,
   handles the cases modelpkg deliberately decides differently (returns 1 when it took the case).
   Returns the number of cases run. */
size_t wj_run_parse_cases(const char *file, const char *input_field, wj_parse_fn parse,
                          int (*divergent)(const char *name, const char *text, size_t len));

#endif
