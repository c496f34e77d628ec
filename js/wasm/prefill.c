/* Prefill planning for the JS package (planPrefill, legacyChunks): a planner configuration read
   strictly from JSON (the fields of mpk_mlc_prefill_config, snake_case), the prompt as SEGMENTS.json
   (mpk_mlc_segments_parse), the plan written by the library (mpk_mlc_prefill_plan_json). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

#define CONFIG "prefill config"

/* What a configuration read from JSON owns. */
typedef struct owned {
  int64_t *ids[8];
  size_t n;
} owned;

static void owned_free(owned *o) {
  for (size_t i = 0; i < o->n; i++) free(o->ids[i]);
}

static int bad(mpk_error *err, const char *pointer, const char *rule) {
  mpkjs_fail(err, MPK_EINVAL, CONFIG, pointer, rule);
  return MPK_EINVAL;
}

/* Only the keys in `allowed` (NULL-terminated). */
static int only_keys(const json_t *o, const char *where, const char *const *allowed, mpk_error *err) {
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    size_t i = 0;
    while (allowed[i] && strcmp(allowed[i], k) != 0) i++;
    if (!allowed[i]) {
      char ptr[256], rule[300];
      snprintf(ptr, sizeof ptr, "%s/%s", where, k);
      snprintf(rule, sizeof rule, "unknown field \"%s\"", k);
      return bad(err, ptr, rule);
    }
  }
  (void)v;
  return 0;
}

static int get_int(const json_t *o, const char *key, const char *where, int64_t dflt, int64_t *out, mpk_error *err) {
  const json_t *v = json_object_get(o, key);
  char ptr[256];
  snprintf(ptr, sizeof ptr, "%s/%s", where, key);
  if (!v || json_is_null(v)) {
    *out = dflt;
    return 0;
  }
  if (!json_is_integer(v)) return bad(err, ptr, "must be an integer");
  *out = json_integer_value(v);
  return 0;
}

static int get_str(const json_t *o, const char *key, const char *where, const char **out, mpk_error *err) {
  const json_t *v = json_object_get(o, key);
  char ptr[256];
  snprintf(ptr, sizeof ptr, "%s/%s", where, key);
  *out = NULL;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v)) return bad(err, ptr, "must be a string or null");
  *out = json_string_value(v);
  return 0;
}

/* An array of integer ids (range checks are the planner's: mpk_mlc_planner_new). */
static int get_ids(const json_t *o, const char *key, const char *where, owned *own, const int64_t **out, size_t *n,
                   mpk_error *err) {
  const json_t *v = json_object_get(o, key);
  char ptr[256];
  snprintf(ptr, sizeof ptr, "%s/%s", where, key);
  *out = NULL;
  *n = 0;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_array(v)) return bad(err, ptr, "must be an array of integers");
  size_t len = json_array_size(v);
  int64_t *ids = malloc((len ? len : 1) * sizeof *ids);
  if (!ids || own->n == sizeof own->ids / sizeof own->ids[0]) {
    free(ids);
    mpkjs_fail(err, MPK_ENOMEM, CONFIG, ptr, "out of memory");
    return MPK_ENOMEM;
  }
  own->ids[own->n++] = ids;
  for (size_t i = 0; i < len; i++) {
    const json_t *x = json_array_get(v, i);
    if (!json_is_integer(x)) {
      char p2[300];
      snprintf(p2, sizeof p2, "%s/%zu", ptr, i);
      return bad(err, p2, "must be an integer");
    }
    ids[i] = json_integer_value(x);
  }
  *out = ids;
  *n = len;
  return 0;
}

/* "audio" / "image": null, or {prompt: {prefix_token_ids, placeholder_token_id, suffix_token_ids} | null,
   adapter_function, num_embeddings}. */
static int get_input(const json_t *cfg, const char *key, owned *own, mpk_mlc_prompt *prompt,
                     mpk_mlc_prefill_input *in, mpk_error *err) {
  static const char *const keys[] = {"prompt", "adapter_function", "num_embeddings", NULL};
  static const char *const pkeys[] = {"prefix_token_ids", "placeholder_token_id", "suffix_token_ids", NULL};
  const json_t *v = json_object_get(cfg, key);
  char where[64], pwhere[80];
  snprintf(where, sizeof where, "/%s", key);
  snprintf(pwhere, sizeof pwhere, "/%s/prompt", key);
  memset(in, 0, sizeof *in);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_object(v)) return bad(err, where, "must be an object or null");
  int rc = only_keys(v, where, keys, err);
  if (!rc) rc = get_str(v, "adapter_function", where, &in->adapter_function, err);
  if (!rc) rc = get_int(v, "num_embeddings", where, 0, &in->num_embeddings, err);
  const json_t *p = json_object_get(v, "prompt");
  if (rc || !p || json_is_null(p)) return rc;
  if (!json_is_object(p)) return bad(err, pwhere, "must be an object or null");
  if (!json_is_integer(json_object_get(p, "placeholder_token_id")))
    return bad(err, pwhere, "needs placeholder_token_id, an integer");
  rc = only_keys(p, pwhere, pkeys, err);
  if (!rc) rc = get_ids(p, "prefix_token_ids", pwhere, own, &prompt->prefix_token_ids, &prompt->n_prefix_token_ids, err);
  if (!rc) rc = get_ids(p, "suffix_token_ids", pwhere, own, &prompt->suffix_token_ids, &prompt->n_suffix_token_ids, err);
  if (!rc) rc = get_int(p, "placeholder_token_id", pwhere, 0, &prompt->placeholder_token_id, err);
  if (!rc) in->prompt = prompt;
  return rc;
}

static int read_config(const json_t *cfg, owned *own, mpk_mlc_prompt prompts[2], mpk_mlc_prefill_config *c,
                       mpk_error *err) {
  static const char *const keys[] = {"generation_inputs", "embed_tokens", "prefill", "decode", "audio", "image",
                                     "prefill_chunk_size", "context_window_size", "sliding_window_size",
                                     "system_prefix_token_ids", NULL};
  memset(c, 0, sizeof *c);
  if (!json_is_object(cfg)) return bad(err, "", "the planner configuration must be an object");
  int rc = only_keys(cfg, "", keys, err);
  const char *gen = NULL;
  if (!rc) rc = get_str(cfg, "generation_inputs", "", &gen, err);
  if (!rc && gen && strcmp(gen, "tokens") != 0 && strcmp(gen, "embeds") != 0)
    rc = bad(err, "/generation_inputs", "must be \"tokens\" or \"embeds\"");
  c->generation_inputs = gen && strcmp(gen, "embeds") == 0 ? MPK_MLC_GENERATION_EMBEDS : MPK_MLC_GENERATION_TOKENS;
  if (!rc) rc = get_str(cfg, "embed_tokens", "", &c->embed_tokens, err);
  if (!rc) rc = get_str(cfg, "prefill", "", &c->prefill, err);
  if (!rc) rc = get_str(cfg, "decode", "", &c->decode, err);
  if (!rc) rc = get_input(cfg, "audio", own, &prompts[0], &c->audio, err);
  if (!rc) rc = get_input(cfg, "image", own, &prompts[1], &c->image, err);
  if (!rc) rc = get_int(cfg, "prefill_chunk_size", "", 0, &c->prefill_chunk_size, err);
  if (!rc) rc = get_int(cfg, "context_window_size", "", -1, &c->context_window_size, err);
  if (!rc) rc = get_int(cfg, "sliding_window_size", "", -1, &c->sliding_window_size, err);
  if (!rc)
    rc = get_ids(cfg, "system_prefix_token_ids", "", own, &c->system_prefix_token_ids, &c->n_system_prefix_token_ids, err);
  return rc;
}

/* args.config: the planner; data: SEGMENTS.json (args.file names it). The plan's JSON. */
json_t *mpkjs_op_prefill_plan(const json_t *args, const void *data, size_t len, mpk_error *err) {
  owned own = {0};
  mpk_mlc_prompt prompts[2] = {{0}};
  mpk_mlc_prefill_config cfg;
  mpk_mlc_planner *pl = NULL;
  mpk_mlc_segments *segs = NULL;
  mpk_mlc_prefill_plan *plan = NULL;
  json_t *result = NULL;
  const char *file = json_string_value(json_object_get(args, "file"));
  if (read_config(json_object_get(args, "config"), &own, prompts, &cfg, err) == 0 &&
      mpk_mlc_planner_new(&cfg, &pl, err) == 0 &&
      mpk_mlc_segments_parse(data, len, file ? file : "segments", &segs, err) == 0 &&
      mpk_mlc_prefill_plan_segments(pl, segs->filled_kv_cache_length, segs->segments, segs->n, &plan, err) == 0) {
    char *text = NULL;
    if (mpk_mlc_prefill_plan_json(pl, plan, &text, NULL, err) == 0) {
      result = json_loads(text, 0, NULL);
      mpk_free(text);
      if (!result) mpkjs_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory reading the plan");
    }
  }
  mpk_mlc_prefill_plan_free(plan);
  mpk_mlc_segments_free(segs);
  mpk_mlc_planner_free(pl);
  owned_free(&own);
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
  if (mpk_mlc_legacy_chunks(list, n, json_integer_value(size), &plan, err) == 0) {
    chunks = json_array();
    for (size_t c = 0; chunks && c < plan->n_chunks; c++) {
      const mpk_mlc_legacy_chunk *ch = &plan->chunks[c];
      json_t *pieces = json_array();
      for (size_t p = 0; pieces && p < ch->n_pieces; p++)
        json_array_append_new(pieces, json_pack("{s:I, s:I, s:I}", "item", (json_int_t)ch->pieces[p].item, "start",
                                                (json_int_t)ch->pieces[p].start, "count", (json_int_t)ch->pieces[p].count));
      json_array_append_new(chunks, json_pack("{s:I, s:o}", "length", (json_int_t)ch->length, "pieces", pieces));
    }
  }
  mpk_mlc_legacy_plan_free(plan);
  free(list);
  return chunks;
}
