/* Prompt assembly and prefill planning against WebLLM 0.2.86 (issue 10):
   - prefill_chunks_artifact.json (getArtifactPrefillChunks): every case gives the same chunks
     (token ids, modality ids, adapter row slices), the same prompt length, or the same error, at the
     same call (an adapter output WebLLM disposes is one our add_media refused);
   - prefill_chunks_legacy.json (getChunkedPrefillInputData): the same pieces and chunk lengths;
   - prompt_segments.json: the segments a conversation renders to, fed in order, land in the plan in
     that order, with the system prefix in the first round only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* WebLLM error class -> our code. */
static int code_for(const char *name) {
  if (strcmp(name, "ContextWindowSizeExceededError") == 0) return MPK_ELIMIT;
  if (strcmp(name, "PrefillChunkSizeSmallerThanImageError") == 0) return MPK_ELIMIT;
  if (strcmp(name, "ArtifactManifestError") == 0) return MPK_EUNSUPPORTED;
  if (strcmp(name, "Error") == 0) return MPK_EINVAL;
  fail_msg("unknown WebLLM error class %s", name);
  return 0;
}

/* WebLLM's message up to its first newline must open ours (its second line we join with ". "). */
static void assert_message(const char *name, const mpk_error *err, const char *expected) {
  size_t n = strcspn(expected, "\n");
  if (strncmp(err->message, expected, n) != 0)
    fail_msg("%s: expected message\n  %.*s\ngot\n  %s", name, (int)n, expected, err->message);
  if (expected[n] == '\n') { /* the rest is there too, on the same line */
    const char *rest = expected + n + 1;
    if (!strstr(err->message, rest)) fail_msg("%s: message lacks \"%s\": %s", name, rest, err->message);
  }
}

static int64_t *ids64(const json_t *a, size_t *n) {
  *n = json_array_size(a);
  int64_t *out = calloc(*n + 1, sizeof *out);
  assert_non_null(out);
  for (size_t i = 0; i < *n; i++) out[i] = json_integer_value(json_array_get(a, i));
  return out;
}

static int32_t *ids32(const json_t *a, size_t *n) {
  *n = json_array_size(a);
  int32_t *out = calloc(*n + 1, sizeof *out);
  assert_non_null(out);
  for (size_t i = 0; i < *n; i++) out[i] = (int32_t)json_integer_value(json_array_get(a, i));
  return out;
}

typedef struct prompt_buf {
  mpk_mlc_prompt p;
  int64_t *prefix, *suffix;
} prompt_buf;

static void read_prompt(const json_t *v, prompt_buf *b, mpk_mlc_prefill_input *in) {
  if (!v) return;
  b->p.placeholder_token_id = json_integer_value(json_object_get(v, "placeholder_token_id"));
  b->prefix = ids64(json_object_get(v, "prefix_token_ids"), &b->p.n_prefix_token_ids);
  b->suffix = ids64(json_object_get(v, "suffix_token_ids"), &b->p.n_suffix_token_ids);
  b->p.prefix_token_ids = b->prefix;
  b->p.suffix_token_ids = b->suffix;
  in->prompt = &b->p;
}

/* The case as a planner and a segment list; `image_rows_known`: declare the image's row count as
   num_embeddings and pass 0 rows (the check then runs before the adapter). */
typedef struct art_case {
  mpk_mlc_prefill_config cfg;
  prompt_buf audio, image;
  int64_t *prefix, filled;
  mpk_mlc_segment *segs;
  size_t n_segs;
} art_case;

static void load_case(const json_t *c, art_case *a, bool image_rows_known) {
  memset(a, 0, sizeof *a);
  a->cfg.generation_inputs = MPK_MLC_GENERATION_TOKENS;
  a->cfg.prefill_chunk_size = json_integer_value(json_object_get(c, "prefill_chunk_size"));
  a->cfg.context_window_size = json_integer_value(json_object_get(c, "context_window_size"));
  const json_t *sw = json_object_get(c, "sliding_window_size");
  a->cfg.sliding_window_size = sw ? json_integer_value(sw) : -1;
  a->filled = json_integer_value(json_object_get(c, "filled_kv_cache_length")); /* 0 when absent */
  a->prefix = ids64(json_object_get(c, "system_prefix_token_ids"), &a->cfg.n_system_prefix_token_ids);
  a->cfg.system_prefix_token_ids = a->prefix;
  read_prompt(json_object_get(c, "audio_prompt"), &a->audio, &a->cfg.audio);
  read_prompt(json_object_get(c, "image_prompt"), &a->image, &a->cfg.image);
  const json_t *segs = json_object_get(c, "segments"), *tok = json_object_get(c, "tokenizer"),
               *rows = json_object_get(c, "adapter_rows");
  a->n_segs = json_array_size(segs);
  a->segs = calloc(a->n_segs + 1, sizeof *a->segs);
  size_t next = 0;
  for (size_t i = 0; i < a->n_segs; i++) {
    const char *s = json_string_value(json_array_get(segs, i));
    mpk_mlc_segment *g = &a->segs[i];
    if (strcmp(s, "AUDIO") == 0 || strcmp(s, "IMAGE") == 0) {
      g->kind = s[0] == 'A' ? MPK_MLC_SEGMENT_AUDIO : MPK_MLC_SEGMENT_IMAGE;
      g->rows = json_integer_value(json_array_get(rows, next++));
      if (g->kind == MPK_MLC_SEGMENT_IMAGE && image_rows_known && a->cfg.image.prompt) {
        a->cfg.image.num_embeddings = g->rows;
        g->rows = 0;
      }
    } else {
      g->kind = MPK_MLC_SEGMENT_TEXT;
      g->token_ids = ids32(json_object_get(tok, s), &g->n_token_ids);
    }
  }
}

static void free_case(art_case *a) {
  for (size_t i = 0; i < a->n_segs; i++) free((void *)a->segs[i].token_ids);
  free(a->segs);
  free(a->prefix);
  free(a->audio.prefix), free(a->audio.suffix), free(a->image.prefix), free(a->image.suffix);
}

static void compare_plan(const char *name, const json_t *c, const mpk_mlc_prefill_plan *plan) {
  const json_t *chunks = json_object_get(c, "expected_chunks");
  assert_int_equal(plan->prompt_length, json_integer_value(json_object_get(c, "expected_prompt_length")));
  if (plan->n_chunks != json_array_size(chunks))
    fail_msg("%s: %zu chunks, WebLLM %zu", name, plan->n_chunks, json_array_size(chunks));
  size_t offset = 0;
  for (size_t i = 0; i < plan->n_chunks; i++) {
    const mpk_mlc_prefill_chunk *ch = &plan->chunks[i];
    const json_t *e = json_array_get(chunks, i), *tok = json_object_get(e, "token_ids"),
                 *mod = json_object_get(e, "modality_ids"), *rows = json_object_get(e, "embedding_rows");
    if (ch->n != json_array_size(tok)) fail_msg("%s: chunk %zu has %zu positions, WebLLM %zu", name, i, ch->n, json_array_size(tok));
    for (size_t k = 0; k < ch->n; k++) {
      if (ch->token_ids[k] != json_integer_value(json_array_get(tok, k)) ||
          ch->modality_ids[k] != json_integer_value(json_array_get(mod, k)))
        fail_msg("%s: chunk %zu position %zu: token %d modality %d, WebLLM %lld %lld", name, i, k, ch->token_ids[k],
                 ch->modality_ids[k], json_integer_value(json_array_get(tok, k)), json_integer_value(json_array_get(mod, k)));
    }
    if (json_is_null(rows)) {
      assert_false(ch->from_adapter);
    } else {
      assert_true(ch->from_adapter);
      assert_int_equal(ch->row_start, json_integer_value(json_array_get(rows, 0)));
      assert_int_equal(ch->n, json_integer_value(json_array_get(rows, 1)));
    }
    assert_int_equal(ch->offset, offset); /* the chunks tile the prompt */
    assert_ptr_equal(ch->token_ids, plan->token_ids + offset);
    offset += ch->n;
  }
  assert_int_equal(offset, plan->prompt_length);
}

/* The step-by-step path: begin, add in order, finish. Returns the failing step's kind (-1: begin or
   finish, else the segment kind) through *failed_kind. */
static int plan_steps(const art_case *a, mpk_mlc_prefill_plan **plan, int *failed_kind, mpk_error *err) {
  mpk_mlc_planner *pl = NULL;
  mpk_mlc_prefill_builder *b = NULL;
  *failed_kind = -1;
  int rc = mpk_mlc_planner_new(&a->cfg, &pl, err);
  assert_int_equal(rc, 0);
  rc = mpk_mlc_prefill_begin(pl, a->filled, &b, err);
  for (size_t i = 0; !rc && i < a->n_segs; i++) {
    const mpk_mlc_segment *s = &a->segs[i];
    rc = s->kind == MPK_MLC_SEGMENT_TEXT ? mpk_mlc_prefill_add_text(b, s->token_ids, s->n_token_ids, err)
                                         : mpk_mlc_prefill_add_media(b, s->kind, s->rows, err);
    if (rc) *failed_kind = (int)s->kind;
  }
  if (!rc) rc = mpk_mlc_prefill_finish(b, plan, err);
  else { /* a failed builder stays failed */
    mpk_error again;
    assert_int_equal(mpk_mlc_prefill_finish(b, plan, &again), MPK_EINVAL);
    assert_null(*plan);
  }
  mpk_mlc_prefill_builder_free(b);
  mpk_mlc_planner_free(pl);
  return rc;
}

static void test_artifact_cases(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("prefill_chunks_artifact.json", &root);
  size_t i, planned = 0, refused = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    const json_t *expected_error = json_object_get(c, "expected_error");
    for (int known = 0; known < 2; known++) {
      art_case a;
      load_case(c, &a, known);
      mpk_error err;
      mpk_error_clear(&err);
      mpk_mlc_prefill_plan *plan = NULL;
      int failed_kind;
      int rc = plan_steps(&a, &plan, &failed_kind, &err);
      if (expected_error) {
        const char *ename = json_string_value(json_object_get(expected_error, "name"));
        if (rc == 0) fail_msg("%s: planned, WebLLM refuses with %s", name, ename);
        assert_int_equal(rc, code_for(ename));
        assert_message(name, &err, json_string_value(json_object_get(expected_error, "message")));
        /* WebLLM disposes an adapter output exactly when the check before slicing refuses it:
           here, when add_media of a media item fails on the context window. */
        int disposed = failed_kind > 0 && rc == MPK_ELIMIT;
        assert_int_equal(disposed, json_integer_value(json_object_get(c, "adapter_outputs_disposed")));
      } else {
        if (rc) fail_msg("%s: refused (%s), WebLLM plans it", name, tu_err(&err));
        compare_plan(name, c, plan);
      }
      /* The one-call form gives the same result. */
      mpk_mlc_planner *pl = NULL;
      mpk_mlc_prefill_plan *plan2 = NULL;
      mpk_error err2;
      assert_int_equal(mpk_mlc_planner_new(&a.cfg, &pl, &err2), 0);
      int rc2 = mpk_mlc_prefill_plan_segments(pl, a.filled, a.segs, a.n_segs, &plan2, &err2);
      assert_int_equal(rc2, rc);
      if (rc) {
        assert_string_equal(err2.message, err.message);
      } else {
        assert_int_equal(plan2->prompt_length, plan->prompt_length);
        assert_memory_equal(plan2->token_ids, plan->token_ids, plan->prompt_length * sizeof(int32_t));
        assert_memory_equal(plan2->modality_ids, plan->modality_ids, plan->prompt_length * sizeof(int32_t));
        assert_int_equal(plan2->n_chunks, plan->n_chunks);
      }
      mpk_mlc_prefill_plan_free(plan2);
      mpk_mlc_planner_free(pl);
      mpk_mlc_prefill_plan_free(plan);
      free_case(&a);
    }
    expected_error ? refused++ : planned++;
  }
  printf("  %zu cases: %zu planned as WebLLM does, %zu refused with its message\n", planned + refused, planned, refused);
  assert_int_equal(planned + refused, 15);
  json_decref(root);
}

static void test_legacy_cases(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("prefill_chunks_legacy.json", &root);
  size_t i, ran = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const json_t *input = json_object_get(c, "input");
    size_t n = json_array_size(input);
    mpk_mlc_legacy_item *items = calloc(n + 1, sizeof *items);
    for (size_t k = 0; k < n; k++) {
      const json_t *it = json_array_get(input, k);
      items[k].is_image = json_object_get(it, "image") != NULL;
      items[k].length = json_integer_value(json_object_get(it, items[k].is_image ? "embed_size" : "count"));
    }
    mpk_mlc_legacy_plan *plan = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_mlc_legacy_chunks(items, n, json_integer_value(json_object_get(c, "prefill_chunk_size")), &plan, &err);
    const json_t *expected_error = json_object_get(c, "expected_error");
    if (expected_error) {
      assert_int_equal(rc, code_for(json_string_value(json_object_get(expected_error, "name"))));
      assert_message("legacy", &err, json_string_value(json_object_get(expected_error, "message")));
      assert_null(plan);
    } else {
      if (rc) fail_msg("legacy case %zu refused: %s", i, tu_err(&err));
      const json_t *chunks = json_object_get(c, "expected_chunks"), *lens = json_object_get(c, "expected_chunk_lens");
      assert_int_equal(plan->n_chunks, json_array_size(chunks));
      for (size_t k = 0; k < plan->n_chunks; k++) {
        const mpk_mlc_legacy_chunk *ch = &plan->chunks[k];
        const json_t *ec = json_array_get(chunks, k);
        assert_int_equal(ch->length, json_integer_value(json_array_get(lens, k)));
        assert_int_equal(ch->n_pieces, json_array_size(ec));
        for (size_t p = 0; p < ch->n_pieces; p++) {
          const mpk_mlc_legacy_piece *pc = &ch->pieces[p];
          const json_t *ep = json_array_get(ec, p), *src = json_array_get(input, pc->item);
          if (json_object_get(ep, "image")) {
            assert_true(items[pc->item].is_image);
            assert_true(json_equal(json_object_get(ep, "image"), json_object_get(src, "image")));
            assert_int_equal(pc->start, 0);
            assert_int_equal(pc->count, items[pc->item].length);
          } else {
            /* The vectors write token pieces as [first, last] values of a range starting at the
               item's first value. */
            int64_t base = json_integer_value(json_array_get(json_object_get(src, "tokens"), 0));
            const json_t *r = json_object_get(ep, "tokens");
            assert_false(items[pc->item].is_image);
            assert_int_equal(base + pc->start, json_integer_value(json_array_get(r, 0)));
            assert_int_equal(base + pc->start + pc->count - 1, json_integer_value(json_array_get(r, 1)));
            assert_int_equal(pc->count, json_integer_value(json_object_get(ep, "count")));
          }
        }
      }
    }
    mpk_mlc_legacy_plan_free(plan);
    free(items);
    ran++;
  }
  printf("  %zu legacy cases: same pieces and chunk lengths, or the same error\n", ran);
  assert_int_equal(ran, 9);
  json_decref(root);
}

/* A toy tokenizer for the rendered strings: one token per byte (id = byte + 1000), so a string's
   tokens can be told from the contract's ids. */
static int32_t *toy_tokens(const char *s, size_t *n) {
  *n = strlen(s);
  int32_t *out = calloc(*n + 1, sizeof *out);
  for (size_t i = 0; i < *n; i++) out[i] = 1000 + (unsigned char)s[i];
  return out;
}

/* Plan the segments a conversation renders to, and check the plan keeps their order: the expected
   sequence is built independently, segment by segment. */
static void check_segments(const char *name, const json_t *conv, const json_t *segs, int64_t filled) {
  static const int64_t g_prefix[] = {256000}, g_suffix[] = {258883};
  mpk_mlc_prompt audio = {g_prefix, 1, 258881, g_suffix, 1}, image = {NULL, 0, 32000, NULL, 0};
  size_t n_sys;
  int64_t *sys = ids64(json_object_get(conv, "system_prefix_token_ids"), &n_sys);
  mpk_mlc_prefill_config cfg = {.prefill_chunk_size = 64, .context_window_size = 4096, .sliding_window_size = -1,
                                .system_prefix_token_ids = sys, .n_system_prefix_token_ids = n_sys,
                                .audio = {&audio, "audio_embed", 0}, .image = {&image, "image_embed", 576}};
  mpk_mlc_planner *pl = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_planner_new(&cfg, &pl, &err), 0);
  size_t n = json_array_size(segs);
  mpk_mlc_segment *list = calloc(n + 1, sizeof *list);
  int32_t *expect = calloc(8192, sizeof *expect), *mods = calloc(8192, sizeof *mods);
  size_t len = 0, media = 0;
  if (filled == 0)
    for (size_t k = 0; k < n_sys; k++) expect[len++] = (int32_t)sys[k];
  for (size_t i = 0; i < n; i++) {
    const json_t *s = json_array_get(segs, i);
    if (json_is_string(s)) {
      list[i].kind = MPK_MLC_SEGMENT_TEXT;
      list[i].token_ids = toy_tokens(json_string_value(s), &list[i].n_token_ids);
      for (size_t k = 0; k < list[i].n_token_ids; k++) expect[len++] = list[i].token_ids[k];
    } else {
      bool is_audio = strcmp(json_string_value(json_object_get(s, "type")), "input_audio") == 0;
      const mpk_mlc_prompt *p = is_audio ? &audio : &image;
      list[i].kind = is_audio ? MPK_MLC_SEGMENT_AUDIO : MPK_MLC_SEGMENT_IMAGE;
      list[i].rows = is_audio ? 25 : 0; /* an image takes num_embeddings */
      int64_t rows = is_audio ? 25 : 576;
      for (size_t k = 0; k < p->n_prefix_token_ids; k++) expect[len++] = (int32_t)p->prefix_token_ids[k];
      for (int64_t r = 0; r < rows; r++) mods[len] = 1, expect[len++] = (int32_t)p->placeholder_token_id;
      for (size_t k = 0; k < p->n_suffix_token_ids; k++) expect[len++] = (int32_t)p->suffix_token_ids[k];
      media++;
    }
  }
  mpk_mlc_prefill_plan *plan = NULL;
  if (mpk_mlc_prefill_plan_segments(pl, filled, list, n, &plan, &err)) fail_msg("%s: %s", name, tu_err(&err));
  assert_int_equal(plan->prompt_length, len);
  assert_memory_equal(plan->token_ids, expect, len * sizeof *expect);
  assert_memory_equal(plan->modality_ids, mods, len * sizeof *mods);
  assert_int_equal(plan->n_items, media);
  for (size_t k = 0, seen = 0; k < n; k++) /* items name their segments, in order */
    if (list[k].kind != MPK_MLC_SEGMENT_TEXT) assert_int_equal(plan->items[seen++].segment, k);
  mpk_mlc_prefill_plan_free(plan);
  for (size_t i = 0; i < n; i++) free((void *)list[i].token_ids);
  free(list);
  free(expect);
  free(mods);
  free(sys);
  mpk_mlc_planner_free(pl);
}

static void test_prompt_segments(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("prompt_segments.json", &root);
  size_t i, applied = 0, not_applicable = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    const json_t *conv = json_object_get(c, "conv_config"), *segs = json_object_get(c, "expected_segments");
    if (!segs) { /* a conversation-level refusal (templating is the tokenizer side's) */
      assert_non_null(json_object_get(c, "expected_error"));
      not_applicable++;
      continue;
    }
    check_segments(name, conv, segs, 0);
    const json_t *last = json_object_get(c, "expected_last_round_segments");
    if (last) check_segments(name, conv, last, 40); /* a later round: the KV cache holds the first */
    applied++;
  }
  printf("  %zu prompt_segments cases applied (segment order kept), %zu conversation-level only\n", applied,
         not_applicable);
  assert_int_equal(applied, 5);
  json_decref(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_artifact_cases),
      cmocka_unit_test(test_legacy_cases),
      cmocka_unit_test(test_prompt_segments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
