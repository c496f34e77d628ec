/* A prefill plan as JSON: the object `modelpkg mlc plan --json` prints and the JS package returns
   (docs/prefill.md), written in one place; and the legacy chunker's. */
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

static json_t *ids_json(const int32_t *ids, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_integer(ids[i]));
  return a;
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static const char *kind_name(mpk_mlc_segment_kind k) {
  return k == MPK_MLC_SEGMENT_AUDIO ? "audio" : k == MPK_MLC_SEGMENT_IMAGE ? "image" : "text";
}

int mpk_mlc_prefill_plan_json(const mpk_mlc_planner *pl, const mpk_mlc_prefill_plan *p, char **out, size_t *out_len,
                              mpk_error *err) {
  if (out) *out = NULL;
  if (!pl || !p || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  const mpk_mlc_prefill_config *c = &pl->config;
  json_t *items = json_array(), *chunks = json_array();
  for (size_t i = 0; items && i < p->n_items; i++) {
    const mpk_mlc_prefill_item *it = &p->items[i];
    json_array_append_new(items, json_pack("{s:s, s:I, s:o, s:I, s:I, s:[I, I]}", "kind", kind_name(it->kind), "segment",
                                           (json_int_t)it->segment, "adapter_function", str_or_null(it->adapter_function),
                                           "rows", (json_int_t)it->rows, "offset", (json_int_t)it->offset, "chunks",
                                           (json_int_t)it->first_chunk, (json_int_t)it->n_chunks));
  }
  for (size_t i = 0; chunks && i < p->n_chunks; i++) {
    const mpk_mlc_prefill_chunk *ch = &p->chunks[i];
    /* token ids, modality ids and embedding_rows as the conformance vectors write a chunk */
    json_t *rows = ch->from_adapter ? json_pack("[I, I]", (json_int_t)ch->row_start, (json_int_t)ch->n) : json_null();
    json_array_append_new(chunks, json_pack("{s:o, s:o, s:o, s:I, s:o}", "token_ids", ids_json(ch->token_ids, ch->n),
                                            "modality_ids", ids_json(ch->modality_ids, ch->n), "embedding_rows", rows,
                                            "offset", (json_int_t)ch->offset, "item",
                                            ch->from_adapter ? json_integer((json_int_t)ch->item) : json_null()));
  }
  json_t *root = json_pack(
      "{s:s, s:{s:o, s:o, s:o}, s:I, s:o, s:I, s:I, s:I, s:I, s:o, s:o}", "generation_inputs",
      p->generation_inputs == MPK_MLC_GENERATION_TOKENS ? "tokens" : "embeds", "functions", "embed_tokens",
      str_or_null(p->embed_tokens), "prefill", str_or_null(p->prefill), "decode", str_or_null(p->decode),
      "prefill_chunk_size", (json_int_t)c->prefill_chunk_size, "prefill_chunk_size_from",
      str_or_null(pl->prefill_chunk_size_from), "context_window_size", (json_int_t)c->context_window_size,
      "sliding_window_size", (json_int_t)c->sliding_window_size, "filled_kv_cache_length",
      (json_int_t)p->filled_kv_cache_length, "prompt_length", (json_int_t)p->prompt_length, "items", items, "chunks",
      chunks);
  char *text = root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(root);
  if (!text) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory writing the prefill plan");
  *out = text; /* jansson allocates with malloc: mpk_free releases it */
  if (out_len) *out_len = strlen(text);
  return 0;
}

/* The legacy chunker's plan: [{length, pieces: [{item, start, count}]}] (the JS package's legacyChunks). */
int mpk_mlc_legacy_plan_json(const mpk_mlc_legacy_plan *plan, char **out, size_t *out_len, mpk_error *err) {
  if (out) *out = NULL;
  if (!plan || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  json_t *chunks = json_array();
  for (size_t c = 0; chunks && c < plan->n_chunks; c++) {
    const mpk_mlc_legacy_chunk *ch = &plan->chunks[c];
    json_t *pieces = json_array();
    for (size_t p = 0; pieces && p < ch->n_pieces; p++)
      json_array_append_new(pieces, json_pack("{s:I, s:I, s:I}", "item", (json_int_t)ch->pieces[p].item, "start",
                                              (json_int_t)ch->pieces[p].start, "count", (json_int_t)ch->pieces[p].count));
    if (json_array_append_new(chunks, json_pack("{s:I, s:o}", "length", (json_int_t)ch->length, "pieces", pieces))) {
      json_decref(chunks);
      chunks = NULL;
    }
  }
  char *text = chunks ? json_dumps(chunks, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(chunks);
  if (!text) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory writing the legacy chunks");
  *out = text;
  if (out_len) *out_len = strlen(text);
  return 0;
}
