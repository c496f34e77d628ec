/* Prefill planning for the JS package (planPrefill, legacyChunks): the planner from its configuration
   as JSON (mpk_mlc_planner_parse), the prompt as SEGMENTS.json (mpk_mlc_segments_parse), the plan
   written by the library (mpk_mlc_prefill_plan_json, mpk_mlc_legacy_plan_json). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* The library's JSON text (freed here) as a jansson value. */
static json_t *loaded(char *text, size_t n, mpk_error *err) {
  json_t *v = json_loadb(text, n, 0, NULL);
  mpk_free(text);
  return v ? v : mpkjs_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory reading the plan");
}

/* args.config: the planner; data: SEGMENTS.json (args.file names it). The plan's JSON. */
json_t *mpkjs_op_prefill_plan(const json_t *args, const void *data, size_t len, mpk_error *err) {
  mpk_mlc_planner *pl = NULL;
  mpk_mlc_segments *segs = NULL;
  mpk_mlc_prefill_plan *plan = NULL;
  json_t *result = NULL;
  const char *file = json_string_value(json_object_get(args, "file"));
  const json_t *config = json_object_get(args, "config");
  char *cfg = json_dumps(config ? config : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
  char *text = NULL;
  size_t n = 0;
  if (!cfg) return mpkjs_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (mpk_mlc_planner_parse(cfg, strlen(cfg), NULL, &pl, err) == 0 &&
      mpk_mlc_segments_parse(data, len, file ? file : "segments", &segs, err) == 0 &&
      mpk_mlc_prefill_plan_segments(pl, segs->filled_kv_cache_length, segs->segments, segs->n, &plan, err) == 0 &&
      mpk_mlc_prefill_plan_json(pl, plan, &text, &n, err) == 0)
    result = loaded(text, n, err);
  free(cfg);
  mpk_mlc_prefill_plan_free(plan);
  mpk_mlc_segments_free(segs);
  mpk_mlc_planner_free(pl);
  return result;
}

/* WebLLM's pre-manifest chunker: args {items: [{"text": N} | {"image": N}], prefill_chunk_size}. */
json_t *mpkjs_op_legacy_chunks(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)data, (void)len;
  const json_t *items = json_object_get(args, "items");
  const json_t *size = json_object_get(args, "prefill_chunk_size");
  if (!json_is_array(items)) return mpkjs_fail(err, MPK_EINVAL, "legacy items", "", "items must be an array");
  if (!json_is_integer(size))
    return mpkjs_fail(err, MPK_EINVAL, "legacy items", "/prefill_chunk_size", "must be an integer");
  size_t n = json_array_size(items);
  mpk_mlc_legacy_item *list = calloc(n ? n : 1, sizeof *list);
  if (!list) return mpkjs_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const json_t *it = json_array_get(items, i), *t = json_object_get(it, "text"), *im = json_object_get(it, "image");
    if (json_object_size(it) != 1 || !(json_is_integer(t) || json_is_integer(im))) {
      char ptr[64];
      snprintf(ptr, sizeof ptr, "/items/%zu", i);
      free(list);
      return mpkjs_fail(err, MPK_EINVAL, "legacy items", ptr, "an item is {\"text\": TOKENS} or {\"image\": EMBED_SIZE}");
    }
    list[i].is_image = im != NULL;
    list[i].length = json_integer_value(im ? im : t);
  }
  mpk_mlc_legacy_plan *plan = NULL;
  json_t *chunks = NULL;
  char *text = NULL;
  size_t tn = 0;
  if (mpk_mlc_legacy_chunks(list, n, json_integer_value(size), &plan, err) == 0 &&
      mpk_mlc_legacy_plan_json(plan, &text, &tn, err) == 0)
    chunks = loaded(text, tn, err);
  mpk_mlc_legacy_plan_free(plan);
  free(list);
  return chunks;
}
