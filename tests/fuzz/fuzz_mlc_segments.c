/* Fuzz target: SEGMENTS.json (mpk_mlc_segments_parse), then the planner over what it accepted — a
   token-pair planner with a context window and an embeds-pair one with a sliding window — and the
   legacy chunker over the same items. Prompts beyond 2^16 positions are not planned here (the
   planner's own limit, 2^24, is tested in test_mlc_prefill; this keeps each run fast). */
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  mpk_mlc_segments *s = NULL;
  if (mpk_mlc_segments_parse(data, size, "fuzz", &s, &err)) return 0;
  int64_t total = 0;
  for (size_t i = 0; i < s->n; i++)
    total += s->segments[i].kind == MPK_MLC_SEGMENT_TEXT ? (int64_t)s->segments[i].n_token_ids : s->segments[i].rows;
  if (total <= (1 << 16)) {
    static const int64_t pre[] = {256000}, suf[] = {258883}, sys[] = {2};
    static const mpk_mlc_prompt audio = {pre, 1, 258881, suf, 1}, image = {NULL, 0, 32000, NULL, 0};
    mpk_mlc_prefill_config c = {.prefill_chunk_size = 7, .context_window_size = 4096, .sliding_window_size = -1,
                                .system_prefix_token_ids = sys, .n_system_prefix_token_ids = 1,
                                .audio = {&audio, "audio_embed", 0}, .image = {&image, "image_embed", 576}};
    for (int k = 0; k < 2; k++) {
      if (k) c.generation_inputs = MPK_MLC_GENERATION_EMBEDS, c.context_window_size = -1, c.sliding_window_size = 64,
             c.image.num_embeddings = 0, c.prefill_chunk_size = 1024;
      mpk_mlc_planner *pl = NULL;
      mpk_mlc_prefill_plan *plan = NULL;
      if (mpk_mlc_planner_new(&c, &pl, &err)) __builtin_trap();
      if (mpk_mlc_prefill_plan_segments(pl, s->filled_kv_cache_length, s->segments, s->n, &plan, &err) == 0) {
        size_t at = 0; /* the chunks tile the prompt */
        for (size_t i = 0; i < plan->n_chunks; i++) at += plan->chunks[i].n;
        if (at != plan->prompt_length) __builtin_trap();
      }
      mpk_mlc_prefill_plan_free(plan);
      mpk_mlc_planner_free(pl);
    }
    mpk_mlc_legacy_item items[64];
    size_t n = s->n < 64 ? s->n : 64;
    for (size_t i = 0; i < n; i++) {
      items[i].is_image = s->segments[i].kind != MPK_MLC_SEGMENT_TEXT;
      items[i].length = items[i].is_image ? s->segments[i].rows : (int64_t)s->segments[i].n_token_ids;
    }
    mpk_mlc_legacy_plan *lp = NULL;
    mpk_mlc_legacy_chunks(items, n, 64, &lp, &err);
    mpk_mlc_legacy_plan_free(lp);
  }
  mpk_mlc_segments_free(s);
  return 0;
}
