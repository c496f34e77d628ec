/* A planner from a configuration written as JSON: the fields of mpk_mlc_prefill_config, snake_case,
   read strictly (unknown fields named by their pointer), then checked by mpk_mlc_planner_new. What
   the JS package's planPrefill and the Python binding's Planner.from_config hand over. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

#define CONFIG_NAME "prefill config"

typedef struct reader {
  const char *file;
  mpk_error *err;
  int64_t *ids[8]; /* what the configuration read owns until the planner copies it */
  size_t n_ids;
} reader;

static int bad(reader *r, const char *pointer, const char *rule) {
  return mpk_fail(r->err, MPK_EINVAL, r->file, pointer, "%s", rule);
}

/* Only the keys in `allowed` (NULL-terminated). */
static int only_keys(reader *r, const json_t *o, const char *where, const char *const *allowed) {
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    size_t i = 0;
    while (allowed[i] && strcmp(allowed[i], k) != 0) i++;
    if (!allowed[i]) {
      char ptr[256], rule[300];
      snprintf(ptr, sizeof ptr, "%s/%s", where, k);
      snprintf(rule, sizeof rule, "unknown field \"%s\"", k);
      return bad(r, ptr, rule);
    }
  }
  (void)v;
  return 0;
}

static int get_int(reader *r, const json_t *o, const char *key, const char *where, int64_t dflt, int64_t *out) {
  const json_t *v = json_object_get(o, key);
  char ptr[256];
  snprintf(ptr, sizeof ptr, "%s/%s", where, key);
  if (!v || json_is_null(v)) {
    *out = dflt;
    return 0;
  }
  if (!json_is_integer(v)) return bad(r, ptr, "must be an integer");
  *out = json_integer_value(v);
  return 0;
}

static int get_str(reader *r, const json_t *o, const char *key, const char *where, const char **out) {
  const json_t *v = json_object_get(o, key);
  char ptr[256];
  snprintf(ptr, sizeof ptr, "%s/%s", where, key);
  *out = NULL;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v)) return bad(r, ptr, "must be a string or null");
  *out = json_string_value(v);
  return 0;
}

/* An array of integer ids (range checks are the planner's: mpk_mlc_planner_new). */
static int get_ids(reader *r, const json_t *o, const char *key, const char *where, const int64_t **out, size_t *n) {
  const json_t *v = json_object_get(o, key);
  char ptr[256];
  snprintf(ptr, sizeof ptr, "%s/%s", where, key);
  *out = NULL;
  *n = 0;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_array(v)) return bad(r, ptr, "must be an array of integers");
  size_t len = json_array_size(v);
  int64_t *ids = malloc((len ? len : 1) * sizeof *ids);
  if (!ids || r->n_ids == sizeof r->ids / sizeof r->ids[0]) {
    free(ids);
    return mpk_fail(r->err, MPK_ENOMEM, r->file, ptr, "out of memory");
  }
  r->ids[r->n_ids++] = ids;
  for (size_t i = 0; i < len; i++) {
    const json_t *x = json_array_get(v, i);
    if (!json_is_integer(x)) {
      char p2[300];
      snprintf(p2, sizeof p2, "%s/%zu", ptr, i);
      return bad(r, p2, "must be an integer");
    }
    ids[i] = json_integer_value(x);
  }
  *out = ids;
  *n = len;
  return 0;
}

/* "audio" / "image": null, or {prompt: {prefix_token_ids, placeholder_token_id, suffix_token_ids} | null,
   adapter_function, num_embeddings}. */
static int get_input(reader *r, const json_t *cfg, const char *key, mpk_mlc_prompt *prompt,
                     mpk_mlc_prefill_input *in) {
  static const char *const keys[] = {"prompt", "adapter_function", "num_embeddings", NULL};
  static const char *const pkeys[] = {"prefix_token_ids", "placeholder_token_id", "suffix_token_ids", NULL};
  const json_t *v = json_object_get(cfg, key);
  char where[64], pwhere[80];
  snprintf(where, sizeof where, "/%s", key);
  snprintf(pwhere, sizeof pwhere, "/%s/prompt", key);
  memset(in, 0, sizeof *in);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_object(v)) return bad(r, where, "must be an object or null");
  int rc = only_keys(r, v, where, keys);
  if (!rc) rc = get_str(r, v, "adapter_function", where, &in->adapter_function);
  if (!rc) rc = get_int(r, v, "num_embeddings", where, 0, &in->num_embeddings);
  const json_t *p = json_object_get(v, "prompt");
  if (rc || !p || json_is_null(p)) return rc;
  if (!json_is_object(p)) return bad(r, pwhere, "must be an object or null");
  if (!json_is_integer(json_object_get(p, "placeholder_token_id")))
    return bad(r, pwhere, "needs placeholder_token_id, an integer");
  rc = only_keys(r, p, pwhere, pkeys);
  if (!rc) rc = get_ids(r, p, "prefix_token_ids", pwhere, &prompt->prefix_token_ids, &prompt->n_prefix_token_ids);
  if (!rc) rc = get_ids(r, p, "suffix_token_ids", pwhere, &prompt->suffix_token_ids, &prompt->n_suffix_token_ids);
  if (!rc) rc = get_int(r, p, "placeholder_token_id", pwhere, 0, &prompt->placeholder_token_id);
  if (!rc) in->prompt = prompt;
  return rc;
}

static int read_config(reader *r, const json_t *cfg, mpk_mlc_prompt prompts[2], mpk_mlc_prefill_config *c) {
  static const char *const keys[] = {"generation_inputs", "embed_tokens", "prefill", "decode", "audio", "image",
                                     "prefill_chunk_size", "context_window_size", "sliding_window_size",
                                     "system_prefix_token_ids", NULL};
  memset(c, 0, sizeof *c);
  if (!json_is_object(cfg)) return bad(r, "", "the planner configuration must be an object");
  int rc = only_keys(r, cfg, "", keys);
  const char *gen = NULL;
  if (!rc) rc = get_str(r, cfg, "generation_inputs", "", &gen);
  if (!rc && gen && strcmp(gen, "tokens") != 0 && strcmp(gen, "embeds") != 0)
    rc = bad(r, "/generation_inputs", "must be \"tokens\" or \"embeds\"");
  c->generation_inputs = gen && strcmp(gen, "embeds") == 0 ? MPK_MLC_GENERATION_EMBEDS : MPK_MLC_GENERATION_TOKENS;
  if (!rc) rc = get_str(r, cfg, "embed_tokens", "", &c->embed_tokens);
  if (!rc) rc = get_str(r, cfg, "prefill", "", &c->prefill);
  if (!rc) rc = get_str(r, cfg, "decode", "", &c->decode);
  if (!rc) rc = get_input(r, cfg, "audio", &prompts[0], &c->audio);
  if (!rc) rc = get_input(r, cfg, "image", &prompts[1], &c->image);
  if (!rc) rc = get_int(r, cfg, "prefill_chunk_size", "", 0, &c->prefill_chunk_size);
  if (!rc) rc = get_int(r, cfg, "context_window_size", "", -1, &c->context_window_size);
  if (!rc) rc = get_int(r, cfg, "sliding_window_size", "", -1, &c->sliding_window_size);
  if (!rc)
    rc = get_ids(r, cfg, "system_prefix_token_ids", "", &c->system_prefix_token_ids, &c->n_system_prefix_token_ids);
  return rc;
}

int mpk_mlc_planner_parse(const void *data, size_t len, const char *file, mpk_mlc_planner **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!data || !out) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  reader r = {.file = file ? file : CONFIG_NAME, .err = err};
  json_t *root = NULL;
  int rc = mpk_json_parse(data, len, NULL, r.file, &root, err);
  if (rc) return rc;
  mpk_mlc_prompt prompts[2] = {{0}};
  mpk_mlc_prefill_config cfg;
  rc = read_config(&r, root, prompts, &cfg);
  if (!rc) rc = mpk_mlc_planner_new(&cfg, out, err); /* copies everything it keeps */
  for (size_t i = 0; i < r.n_ids; i++) free(r.ids[i]);
  json_decref(root);
  return rc;
}
