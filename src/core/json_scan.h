/* Strict JSON as a stream of events (json_scan.c): the reader under mpk_json_parse, for callers
   that want a large document's values without building a jansson tree. Internal. */
#ifndef MPK_JSON_SCAN_H
#define MPK_JSON_SCAN_H

#include "core/core.h"

typedef enum mpk_json_event_kind {
  MPK_JSON_NULL,
  MPK_JSON_FALSE,
  MPK_JSON_TRUE,
  MPK_JSON_INTEGER,
  MPK_JSON_REAL,
  MPK_JSON_STRING,
  MPK_JSON_KEY,
  MPK_JSON_OBJECT_START,
  MPK_JSON_OBJECT_END,
  MPK_JSON_ARRAY_START,
  MPK_JSON_ARRAY_END,
} mpk_json_event_kind;

typedef struct mpk_json_event {
  mpk_json_event_kind kind;
  /* Containers open around the event: 0 for the top-level value. A container's START and END
     have the same depth, and so do a key and its value. */
  size_t depth;
  /* STRING and KEY: the decoded bytes, valid UTF-8, not NUL-terminated; U+0000 only in a STRING
     and only with allow_nul. A KEY's bytes stay valid until the next KEY event, a STRING's until
     the next STRING event. */
  const char *str;
  size_t len;
  int64_t integer; /* INTEGER: a number written without fraction or exponent */
  double real;     /* REAL: as strtod reads it (and jansson's json_real) */
} mpk_json_event;

/* Return 0 to go on; anything else stops the scan, and mpk_json_scan returns it. */
typedef int (*mpk_json_event_fn)(void *ctx, const mpk_json_event *e);

/* Scan a JSON text under the rules of mpk_json_parse (core.h): one value, duplicate keys refused,
   strict UTF-8, a leading BOM skipped, size and depth limited. Returns 0; an error code with err
   set as mpk_json_parse sets it; or the callback's nonzero answer, err untouched. Events may
   arrive before an error later in the text is found: act on them only when the scan returns 0. */
int mpk_json_scan(const void *data, size_t len, const mpk_json_opts *opts, const char *file,
                  mpk_json_event_fn fn, void *ctx, mpk_error *err);

#endif
