/* The prefill planner's properties over random prompts (a seeded PRNG, the seed printed), the
   context checks at their edges, configuration and argument errors, SEGMENTS.json, the legacy
   chunker's properties, and planners opened from the example packages. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---------------------------------------------------------------- a seeded PRNG (xorshift64*) */

static uint64_t rng_state;
static uint64_t rnd(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * UINT64_C(2685821657736338717);
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static uint64_t seed(void) {
  const char *s = getenv("MPK_TEST_SEED");
  uint64_t v = s ? strtoull(s, NULL, 0) : UINT64_C(0x5eed10);
  printf("  seed 0x%" PRIx64 " (set MPK_TEST_SEED to replay another)\n", v);
  return v ? v : 1;
}

/* ---------------------------------------------------------------- helpers */

static mpk_mlc_planner *planner(const mpk_mlc_prefill_config *cfg) {
  mpk_mlc_planner *p = NULL;
  mpk_error err;
  if (mpk_mlc_planner_new(cfg, &p, &err)) fail_msg("planner: %s", tu_err(&err));
  return p;
}

static const int64_t g_prefix[] = {256000}, g_suffix[] = {258883};
static const mpk_mlc_prompt g_audio = {g_prefix, 1, 258881, g_suffix, 1};
static const mpk_mlc_prompt g_image = {NULL, 0, 32000, NULL, 0};

static mpk_mlc_prefill_config base_config(int64_t chunk, int64_t context) {
  mpk_mlc_prefill_config c = {0};
  c.prefill_chunk_size = chunk;
  c.context_window_size = context;
  c.sliding_window_size = -1;
  c.audio.prompt = &g_audio;
  c.image.prompt = &g_image;
  c.image.num_embeddings = 4;
  return c;
}

/* ---------------------------------------------------------------- properties */

typedef struct rand_prompt {
  int64_t sys[6], apre[4], asuf[4], ipre[4], isuf[4];
  mpk_mlc_prompt audio, image;
  mpk_mlc_prefill_config cfg;
  mpk_mlc_segment segs[10];
  int32_t text[10][40];
  size_t n_segs;
  int64_t filled;
  /* the prompt, assembled here independently of the planner */
  int32_t *ids, *mods;
  size_t len;
} rand_prompt;

static void push(rand_prompt *r, int32_t id, int32_t mod) {
  r->ids[r->len] = id;
  r->mods[r->len++] = mod;
}

static void random_ids(int64_t *out, size_t *n, size_t max) {
  *n = (size_t)rnd_in(0, (int64_t)max);
  for (size_t i = 0; i < *n; i++) out[i] = rnd_in(0, 300000);
}

static void random_prompt(rand_prompt *r) {
  memset(r, 0, sizeof *r);
  r->ids = calloc(4096, sizeof *r->ids);
  r->mods = calloc(4096, sizeof *r->mods);
  mpk_mlc_prefill_config *c = &r->cfg;
  c->generation_inputs = rnd() % 2 ? MPK_MLC_GENERATION_TOKENS : MPK_MLC_GENERATION_EMBEDS;
  c->prefill_chunk_size = rnd_in(1, 17);
  c->sliding_window_size = -1;
  c->context_window_size = 100000; /* properties hold for prompts that fit; the checks are tested below */
  if (rnd() % 4 == 0) c->sliding_window_size = 64, c->context_window_size = -1;
  random_ids(r->sys, &c->n_system_prefix_token_ids, 5);
  c->system_prefix_token_ids = r->sys;
  random_ids(r->apre, &r->audio.n_prefix_token_ids, 3);
  random_ids(r->asuf, &r->audio.n_suffix_token_ids, 3);
  random_ids(r->ipre, &r->image.n_prefix_token_ids, 3);
  random_ids(r->isuf, &r->image.n_suffix_token_ids, 3);
  r->audio.prefix_token_ids = r->apre, r->audio.suffix_token_ids = r->asuf;
  r->image.prefix_token_ids = r->ipre, r->image.suffix_token_ids = r->isuf;
  r->audio.placeholder_token_id = rnd_in(0, 300000);
  r->image.placeholder_token_id = rnd_in(0, 300000);
  if (rnd() % 5) c->audio.prompt = &r->audio;
  if (rnd() % 5) c->image.prompt = &r->image;
  c->image.num_embeddings = rnd() % 2 ? rnd_in(1, 40) : 0;
  r->filled = rnd() % 3 == 0 ? rnd_in(1, 500) : 0;
  if (r->filled == 0)
    for (size_t i = 0; i < c->n_system_prefix_token_ids; i++) push(r, (int32_t)r->sys[i], 0);
  r->n_segs = (size_t)rnd_in(0, 9);
  for (size_t i = 0; i < r->n_segs; i++) {
    mpk_mlc_segment *s = &r->segs[i];
    int pick = (int)(rnd() % 3);
    if (pick == 1 && !c->audio.prompt) pick = 0; /* undeclared inputs are an error, tested below */
    if (pick == 2 && !c->image.prompt) pick = 0;
    if (pick == 0) {
      s->kind = MPK_MLC_SEGMENT_TEXT;
      s->n_token_ids = (size_t)rnd_in(0, 39);
      for (size_t k = 0; k < s->n_token_ids; k++) r->text[i][k] = (int32_t)rnd_in(0, 300000);
      s->token_ids = r->text[i];
      for (size_t k = 0; k < s->n_token_ids; k++) push(r, r->text[i][k], 0);
    } else {
      const mpk_mlc_prompt *p = pick == 1 ? &r->audio : &r->image;
      s->kind = pick == 1 ? MPK_MLC_SEGMENT_AUDIO : MPK_MLC_SEGMENT_IMAGE;
      int64_t rows = pick == 2 && c->image.num_embeddings ? c->image.num_embeddings : rnd_in(1, 60);
      s->rows = pick == 2 && c->image.num_embeddings && rnd() % 2 ? 0 : rows;
      for (size_t k = 0; k < p->n_prefix_token_ids; k++) push(r, (int32_t)p->prefix_token_ids[k], 0);
      for (int64_t k = 0; k < rows; k++) push(r, (int32_t)p->placeholder_token_id, 1);
      for (size_t k = 0; k < p->n_suffix_token_ids; k++) push(r, (int32_t)p->suffix_token_ids[k], 0);
    }
  }
}

static void check_properties(const rand_prompt *r, const mpk_mlc_prefill_plan *p, int iter) {
  size_t size = (size_t)r->cfg.prefill_chunk_size;
  if (p->prompt_length != r->len) fail_msg("iteration %d: %zu positions, assembled %zu", iter, p->prompt_length, r->len);
  /* the assembled sequence, and the chunks laid end to end, are the independent assembly */
  assert_memory_equal(p->token_ids, r->ids, r->len * sizeof *r->ids);
  assert_memory_equal(p->modality_ids, r->mods, r->len * sizeof *r->mods);
  size_t at = 0;
  for (size_t i = 0; i < p->n_chunks; i++) {
    const mpk_mlc_prefill_chunk *c = &p->chunks[i];
    if (c->n < 1 || c->n > size) fail_msg("iteration %d: chunk %zu has %zu positions, chunk size %zu", iter, i, c->n, size);
    assert_int_equal(c->offset, at);
    for (size_t k = 0; k < c->n; k++) {
      if (c->token_ids[k] != r->ids[at + k] || c->modality_ids[k] != r->mods[at + k])
        fail_msg("iteration %d: chunk %zu position %zu differs from the assembled prompt", iter, i, k);
      /* no chunk mixes text and adapter rows; modality 1 marks exactly the adapter's */
      if (c->modality_ids[k] != (c->from_adapter ? 1 : 0)) fail_msg("iteration %d: chunk %zu mixes", iter, i);
    }
    if (c->from_adapter) {
      const mpk_mlc_prefill_item *it = &p->items[c->item];
      assert_true(c->item < p->n_items);
      assert_int_equal(c->offset, it->offset + (size_t)c->row_start);
      assert_true(c->row_start + (int64_t)c->n <= it->rows);
      assert_true(i >= it->first_chunk && i < it->first_chunk + it->n_chunks);
      /* only an item's last slice may be short */
      if (c->n < size) assert_int_equal(c->row_start + (int64_t)c->n, it->rows);
    } else if (c->n < size) {
      /* text is flushed only when a chunk fills, before an adapter span, or at the end */
      assert_true(i + 1 == p->n_chunks || p->chunks[i + 1].from_adapter);
    }
    at += c->n;
  }
  assert_int_equal(at, r->len);
  size_t media = 0;
  for (size_t i = 0; i < r->n_segs; i++) media += r->segs[i].kind != MPK_MLC_SEGMENT_TEXT;
  assert_int_equal(p->n_items, media);
  for (size_t k = 0; k < p->n_items; k++) { /* an item's slices are consecutive chunks covering its rows */
    const mpk_mlc_prefill_item *it = &p->items[k];
    int64_t next = 0;
    for (size_t i = it->first_chunk; i < it->first_chunk + it->n_chunks; i++) {
      assert_true(p->chunks[i].from_adapter);
      assert_int_equal(p->chunks[i].item, k);
      assert_int_equal(p->chunks[i].row_start, next);
      next += (int64_t)p->chunks[i].n;
    }
    assert_int_equal(next, it->rows);
    assert_int_equal(r->segs[it->segment].kind, it->kind);
  }
}

static void test_random_prompts(void **state) {
  (void)state;
  rng_state = seed();
  int planned = 0, empty = 0;
  for (int iter = 0; iter < 3000; iter++) {
    rand_prompt r;
    random_prompt(&r);
    mpk_mlc_planner *pl = planner(&r.cfg);
    mpk_mlc_prefill_plan *p = NULL;
    mpk_error err;
    int rc = mpk_mlc_prefill_plan_segments(pl, r.filled, r.segs, r.n_segs, &p, &err);
    if (r.len == 0) {
      assert_int_equal(rc, MPK_EINVAL);
      assert_string_equal(err.message, "Prompt must contain at least one token");
      empty++;
    } else {
      if (rc) fail_msg("iteration %d: %s", iter, tu_err(&err));
      check_properties(&r, p, iter);
      planned++;
    }
    mpk_mlc_prefill_plan_free(p);
    mpk_mlc_planner_free(pl);
    free(r.ids);
    free(r.mods);
  }
  printf("  %d random prompts planned with every property holding, %d empty ones refused\n", planned, empty);
  assert_true(planned > 2000);
}

/* ---------------------------------------------------------------- context checks at their edges */

static int plan(const mpk_mlc_prefill_config *cfg, int64_t filled, const mpk_mlc_segment *s, size_t n,
                mpk_mlc_prefill_plan **out, mpk_error *err) {
  mpk_mlc_planner *pl = planner(cfg);
  mpk_error_clear(err);
  int rc = mpk_mlc_prefill_plan_segments(pl, filled, s, n, out, err);
  mpk_mlc_planner_free(pl);
  return rc;
}

static void expect_overflow(const mpk_mlc_prefill_config *cfg, int64_t filled, const mpk_mlc_segment *s, size_t n,
                            int64_t tokens, const char *pointer) {
  mpk_mlc_prefill_plan *p = NULL;
  mpk_error err;
  assert_int_equal(plan(cfg, filled, s, n, &p, &err), MPK_ELIMIT);
  assert_null(p);
  char want[160];
  snprintf(want, sizeof want, "Prompt tokens exceed context window size: number of prompt tokens: %" PRId64
           "; context window size: %" PRId64 ".", tokens, cfg->context_window_size);
  if (strncmp(err.message, want, strlen(want)) != 0) fail_msg("expected %s\ngot %s", want, err.message);
  assert_string_equal(err.pointer, pointer);
}

static void test_context_edges(void **state) {
  (void)state;
  int32_t t3[] = {1, 2, 3};
  mpk_mlc_prefill_config cfg = base_config(4, 8);
  mpk_mlc_prefill_plan *p = NULL;
  mpk_error err;
  /* exactly the window: planned; one more: the final check refuses */
  int32_t t8[] = {1, 2, 3, 4, 5, 6, 7, 8}, t9[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  mpk_mlc_segment s8 = {MPK_MLC_SEGMENT_TEXT, t8, 8, 0}, s9 = {MPK_MLC_SEGMENT_TEXT, t9, 9, 0};
  assert_int_equal(plan(&cfg, 0, &s8, 1, &p, &err), 0);
  assert_int_equal(p->prompt_length, 8);
  mpk_mlc_prefill_plan_free(p);
  expect_overflow(&cfg, 0, &s9, 1, 9, "");
  /* the final check counts the filled KV cache, and reports the prompt alone */
  expect_overflow(&cfg, 6, (mpk_mlc_segment[]){{MPK_MLC_SEGMENT_TEXT, t3, 3, 0}}, 1, 3, "");
  assert_int_equal(plan(&cfg, 5, (mpk_mlc_segment[]){{MPK_MLC_SEGMENT_TEXT, t3, 3, 0}}, 1, &p, &err), 0);
  mpk_mlc_prefill_plan_free(p);
  /* the adapter check: text so far + the audio prefix (flushed before it) + the rows, at the item */
  mpk_mlc_segment ta[] = {{MPK_MLC_SEGMENT_TEXT, t3, 3, 0}, {MPK_MLC_SEGMENT_AUDIO, NULL, 0, 5}};
  expect_overflow(&cfg, 0, ta, 2, 9, "/segments/1"); /* 3 + prefix 1 + 5 rows */
  ta[1].rows = 4; /* 3 + 1 + 4 = 8 fits at the item; the suffix makes 9: the final check refuses */
  expect_overflow(&cfg, 0, ta, 2, 9, "");
  ta[1].rows = 3;
  assert_int_equal(plan(&cfg, 0, ta, 2, &p, &err), 0);
  assert_int_equal(p->prompt_length, 8);
  mpk_mlc_prefill_plan_free(p);
  /* the adapter check counts the filled KV cache but reports the prompt's own positions */
  mpk_mlc_segment a4 = {MPK_MLC_SEGMENT_AUDIO, NULL, 0, 4};
  expect_overflow(&cfg, 4, &a4, 1, 5, "/segments/0"); /* 4 + 1 + 4 = 9 > 8; prompt 5 */
  /* an image's rows are known: the check runs with rows 0 (num_embeddings 4) */
  mpk_mlc_segment im = {MPK_MLC_SEGMENT_IMAGE, NULL, 0, 0};
  expect_overflow(&cfg, 5, &im, 1, 4, "/segments/0");
  /* a sliding window skips both checks */
  mpk_mlc_prefill_config sw = base_config(4, -1);
  sw.sliding_window_size = 8;
  mpk_mlc_segment big = {MPK_MLC_SEGMENT_AUDIO, NULL, 0, 100000};
  assert_int_equal(plan(&sw, 1000, &big, 1, &p, &err), 0);
  assert_int_equal(p->prompt_length, 100002);
  assert_int_equal(p->n_chunks, 1 + 25000 + 1);
  mpk_mlc_prefill_plan_free(p);
  /* the prompt limit holds even without a context window */
  big.rows = MPK_MLC_PREFILL_MAX_POSITIONS;
  assert_int_equal(plan(&sw, 0, &big, 1, &p, &err), MPK_ELIMIT);
  /* the system prefix comes only while the KV cache is empty */
  int64_t sys[] = {7, 7};
  cfg.system_prefix_token_ids = sys;
  cfg.n_system_prefix_token_ids = 2;
  assert_int_equal(plan(&cfg, 0, &s8, 1, &p, &err), MPK_ELIMIT); /* 10 > 8 */
  assert_int_equal(plan(&cfg, 0, (mpk_mlc_segment[]){{MPK_MLC_SEGMENT_TEXT, t3, 3, 0}}, 1, &p, &err), 0);
  assert_int_equal(p->prompt_length, 5);
  assert_int_equal(p->token_ids[0], 7);
  mpk_mlc_prefill_plan_free(p);
  assert_int_equal(plan(&cfg, 1, (mpk_mlc_segment[]){{MPK_MLC_SEGMENT_TEXT, t3, 3, 0}}, 1, &p, &err), 0);
  assert_int_equal(p->prompt_length, 3);
  assert_int_equal(p->token_ids[0], 1);
  mpk_mlc_prefill_plan_free(p);
}

/* ---------------------------------------------------------------- errors */

static void expect_config_error(mpk_mlc_prefill_config cfg, const char *msg) {
  mpk_mlc_planner *p = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_planner_new(&cfg, &p, &err), MPK_EINVAL);
  assert_null(p);
  if (strncmp(err.message, msg, strlen(msg)) != 0) fail_msg("expected %s\ngot %s", msg, err.message);
}

static void test_config_errors(void **state) {
  (void)state;
  mpk_mlc_prefill_config c = base_config(0, 8);
  expect_config_error(c, "Make sure `prefill_chunk_size` > 0.");
  c = base_config(4, 8), c.sliding_window_size = 16;
  expect_config_error(c, "Only one of context_window_size and sliding_window_size can be positive. Got: "
                         "context_window_size: 8, sliding_window_size: 16");
  c = base_config(4, -1);
  expect_config_error(c, "Need to specify either sliding_window_size or max_window_size.");
  c = base_config(4, 0);
  expect_config_error(c, "context_window_size must be -1 or positive, got 0");
  c = base_config(4, -1), c.sliding_window_size = -4;
  expect_config_error(c, "sliding_window_size must be -1 or positive, got -4");
  int64_t bad[] = {1, -2};
  c = base_config(4, 8), c.system_prefix_token_ids = bad, c.n_system_prefix_token_ids = 2;
  expect_config_error(c, "system_prefix_token_ids[1] = -2 is not a token id");
  mpk_mlc_prompt wide = {NULL, 0, INT64_C(1) << 31, NULL, 0};
  c = base_config(4, 8), c.audio.prompt = &wide;
  expect_config_error(c, "audio prompt placeholder_token_id[0] = 2147483648 is not a token id");
  mpk_mlc_planner *p = NULL;
  assert_int_equal(mpk_mlc_planner_new(NULL, &p, NULL), MPK_EINVAL);
  mpk_mlc_planner_free(NULL);
  mpk_mlc_prefill_plan_free(NULL);
  mpk_mlc_prefill_builder_free(NULL);
  mpk_mlc_legacy_plan_free(NULL);
  mpk_mlc_segments_free(NULL);
}

static void test_builder_errors(void **state) {
  (void)state;
  mpk_mlc_prefill_config cfg = base_config(4, 64);
  cfg.image.prompt = NULL;
  mpk_mlc_planner *pl = planner(&cfg);
  mpk_mlc_prefill_builder *b = NULL;
  mpk_mlc_prefill_plan *p = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_prefill_begin(pl, -1, &b, &err), MPK_EINVAL);
  assert_null(b);
  int32_t ok[] = {1, 2}, neg[] = {1, -3};
  struct {
    int kind;
    const int32_t *ids;
    int64_t rows;
    int code;
    const char *msg;
  } table[] = {
      {MPK_MLC_SEGMENT_TEXT, neg, 0, MPK_EINVAL, "token id -3 at index 1 is negative"},
      {MPK_MLC_SEGMENT_IMAGE, NULL, 0, MPK_EUNSUPPORTED, "The loaded artifact does not declare an image input"},
      {MPK_MLC_SEGMENT_AUDIO, NULL, 0, MPK_EINVAL, "audio adapter must return [audio_tokens, hidden_size] with at least one row"},
      {MPK_MLC_SEGMENT_AUDIO, NULL, -2, MPK_EINVAL, "audio adapter must return"},
      {MPK_MLC_SEGMENT_TEXT + 7, NULL, 1, MPK_EINVAL, "a media segment is audio or image"},
  };
  for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
    assert_int_equal(mpk_mlc_prefill_begin(pl, 0, &b, &err), 0);
    assert_int_equal(mpk_mlc_prefill_add_text(b, ok, 2, &err), 0);
    int rc = table[i].kind == MPK_MLC_SEGMENT_TEXT ? mpk_mlc_prefill_add_text(b, table[i].ids, 2, &err)
                                                   : mpk_mlc_prefill_add_media(b, (mpk_mlc_segment_kind)table[i].kind,
                                                                               table[i].rows, &err);
    assert_int_equal(rc, table[i].code);
    if (strncmp(err.message, table[i].msg, strlen(table[i].msg)) != 0)
      fail_msg("row %zu: expected %s\ngot %s", i, table[i].msg, err.message);
    assert_string_equal(err.pointer, "/segments/1");
    /* poisoned: nothing more, and no plan */
    assert_int_equal(mpk_mlc_prefill_add_text(b, ok, 2, &err), MPK_EINVAL);
    assert_int_equal(mpk_mlc_prefill_finish(b, &p, &err), MPK_EINVAL);
    assert_null(p);
    mpk_mlc_prefill_builder_free(b);
  }
  /* an image's rows must be its num_embeddings */
  mpk_mlc_prefill_config ic = base_config(4, 64);
  mpk_mlc_planner *ipl = planner(&ic);
  assert_int_equal(mpk_mlc_prefill_begin(ipl, 0, &b, &err), 0);
  assert_int_equal(mpk_mlc_prefill_add_media(b, MPK_MLC_SEGMENT_IMAGE, 5, &err), MPK_EMISMATCH);
  assert_string_equal(err.message, "image adapter must return [4, hidden_size], got 5 rows");
  mpk_mlc_prefill_builder_free(b);
  /* finished: no more adds, no second plan */
  assert_int_equal(mpk_mlc_prefill_begin(ipl, 0, &b, &err), 0);
  assert_int_equal(mpk_mlc_prefill_add_media(b, MPK_MLC_SEGMENT_IMAGE, 0, &err), 0);
  assert_int_equal(mpk_mlc_prefill_finish(b, &p, &err), 0);
  assert_int_equal(p->prompt_length, 4);
  assert_int_equal(p->n_items, 1);
  assert_int_equal(p->items[0].rows, 4);
  mpk_mlc_prefill_plan *p2 = NULL;
  assert_int_equal(mpk_mlc_prefill_add_text(b, ok, 2, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_prefill_finish(b, &p2, &err), MPK_EINVAL);
  mpk_mlc_prefill_builder_free(b); /* the plan outlives its builder */
  assert_int_equal(p->token_ids[3], 32000);
  mpk_mlc_prefill_plan_free(p);
  mpk_mlc_planner_free(ipl);
  /* the empty prompt */
  assert_int_equal(mpk_mlc_prefill_begin(pl, 0, &b, &err), 0);
  assert_int_equal(mpk_mlc_prefill_add_text(b, NULL, 0, &err), 0);
  assert_int_equal(mpk_mlc_prefill_finish(b, &p, &err), MPK_EINVAL);
  assert_string_equal(err.message, "Prompt must contain at least one token");
  mpk_mlc_prefill_builder_free(b);
  mpk_mlc_planner_free(pl);
}

/* ---------------------------------------------------------------- SEGMENTS.json */

static void test_segments_json(void **state) {
  (void)state;
  const char *good = "{\"filled_kv_cache_length\": 3, \"segments\": [{\"text\": [1, 2147483647]}, "
                     "{\"audio\": {\"rows\": 6}}, {\"image\": {}}, {\"image\": {\"rows\": 576}}, {\"text\": []}]}";
  mpk_mlc_segments *s = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_segments_parse(good, strlen(good), "S.json", &s, &err), 0);
  assert_int_equal(s->filled_kv_cache_length, 3);
  assert_int_equal(s->n, 5);
  assert_int_equal(s->segments[0].kind, MPK_MLC_SEGMENT_TEXT);
  assert_int_equal(s->segments[0].n_token_ids, 2);
  assert_int_equal(s->segments[0].token_ids[1], INT32_MAX);
  assert_int_equal(s->segments[1].kind, MPK_MLC_SEGMENT_AUDIO);
  assert_int_equal(s->segments[1].rows, 6);
  assert_int_equal(s->segments[2].kind, MPK_MLC_SEGMENT_IMAGE);
  assert_int_equal(s->segments[2].rows, 0);
  assert_int_equal(s->segments[3].rows, 576);
  assert_int_equal(s->segments[4].n_token_ids, 0);
  mpk_mlc_segments_free(s);
  static const struct {
    const char *doc, *pointer, *msg;
  } bad[] = {
      {"[]", "", "expected an object"},
      {"{}", "", "missing field \"segments\""},
      {"{\"segments\": [], \"x\": 1}", "", "unknown field \"x\""},
      {"{\"segments\": {}}", "/segments", "expected an array"},
      {"{\"segments\": [], \"filled_kv_cache_length\": -1}", "/filled_kv_cache_length", ""},
      {"{\"segments\": [{\"text\": [1], \"audio\": {\"rows\": 1}}]}", "/segments/0", "a segment holds exactly one"},
      {"{\"segments\": [{}]}", "/segments/0", "a segment holds exactly one"},
      {"{\"segments\": [{\"video\": {}}]}", "/segments/0", "unknown field \"video\""},
      {"{\"segments\": [{\"text\": [1, -1]}]}", "/segments/0/text/1", ""},
      {"{\"segments\": [{\"text\": [2147483648]}]}", "/segments/0/text/0", "a token id must be at most 2147483647"},
      {"{\"segments\": [{\"text\": [1.5]}]}", "/segments/0/text/0", ""},
      {"{\"segments\": [{\"text\": \"hi\"}]}", "/segments/0/text", "expected an array of token ids"},
      {"{\"segments\": [{\"audio\": {}}]}", "/segments/0/audio", "missing field \"rows\""},
      {"{\"segments\": [{\"audio\": {\"rows\": 0}}]}", "/segments/0/audio/rows", ""},
      {"{\"segments\": [{\"image\": {\"rows\": 16777217}}]}", "/segments/0/image/rows", "more than 16777216 rows"},
      {"{\"segments\": [{\"image\": {\"rows\": 1, \"crop\": 2}}]}", "/segments/0/image", "unknown field \"crop\""},
      {"{\"segments\": [], \"segments\": []}", NULL, "invalid JSON"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    mpk_error_clear(&err);
    int rc = mpk_mlc_segments_parse(bad[i].doc, strlen(bad[i].doc), "S.json", &s, &err);
    if (rc == 0) fail_msg("accepted: %s", bad[i].doc);
    assert_null(s);
    assert_string_equal(err.file, "S.json");
    if (bad[i].pointer && strcmp(err.pointer, bad[i].pointer) != 0)
      fail_msg("%s: pointer %s, expected %s (%s)", bad[i].doc, err.pointer, bad[i].pointer, err.message);
    if (strncmp(err.message, bad[i].msg, strlen(bad[i].msg)) != 0)
      fail_msg("%s: expected %s\ngot %s", bad[i].doc, bad[i].msg, err.message);
  }
}

/* ---------------------------------------------------------------- the legacy chunker */

static void test_legacy_properties(void **state) {
  (void)state;
  rng_state = seed() ^ 0x1e9ac7;
  for (int iter = 0; iter < 3000; iter++) {
    int64_t size = rnd_in(1, 40);
    size_t n = (size_t)rnd_in(0, 8);
    mpk_mlc_legacy_item items[8];
    for (size_t i = 0; i < n; i++) {
      items[i].is_image = rnd() % 3 == 0;
      items[i].length = items[i].is_image ? rnd_in(1, size) : rnd_in(0, 100);
    }
    mpk_mlc_legacy_plan *p = NULL;
    mpk_error err;
    if (mpk_mlc_legacy_chunks(items, n, size, &p, &err)) fail_msg("iteration %d: %s", iter, tu_err(&err));
    size_t item = 0;
    int64_t at = 0; /* position within `item` */
    for (size_t c = 0; c < p->n_chunks; c++) {
      const mpk_mlc_legacy_chunk *ch = &p->chunks[c];
      int64_t sum = 0;
      assert_true(ch->n_pieces > 0);
      for (size_t k = 0; k < ch->n_pieces; k++) {
        const mpk_mlc_legacy_piece *pc = &ch->pieces[k];
        while (item < n && !items[item].is_image && items[item].length == 0) item++; /* empty text adds nothing */
        assert_int_equal(pc->item, item);     /* items in order, */
        assert_int_equal(pc->start, at);      /* each covered contiguously, */
        assert_true(pc->count > 0);
        if (items[item].is_image) assert_int_equal(pc->count, items[item].length); /* an image whole */
        at += pc->count;
        if (at == items[item].length) item++, at = 0;
        sum += pc->count;
      }
      assert_int_equal(sum, ch->length);
      assert_true(ch->length <= size);
      /* greedy: a chunk closes short only when the next item is an image that does not fit */
      if (ch->length < size && c + 1 < p->n_chunks) {
        const mpk_mlc_legacy_piece *next = &p->chunks[c + 1].pieces[0];
        assert_true(items[next->item].is_image);
        assert_true(ch->length + items[next->item].length > size);
      }
    }
    while (item < n && !items[item].is_image && items[item].length == 0) item++;
    assert_int_equal(item, n);
    mpk_mlc_legacy_plan_free(p);
  }
  mpk_mlc_legacy_item neg = {0, -1}, img0 = {1, 0};
  mpk_mlc_legacy_plan *p = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_legacy_chunks(&neg, 1, 4, &p, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_legacy_chunks(&img0, 1, 4, &p, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_legacy_chunks(&neg, 0, 0, &p, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_legacy_chunks(NULL, 0, 4, &p, &err), 0);
  assert_int_equal(p->n_chunks, 0);
  mpk_mlc_legacy_plan_free(p);
}

/* ---------------------------------------------------------------- planners from packages */

static void test_open_examples(void **state) {
  (void)state;
  mpk_mlc_planner *p = NULL;
  mpk_error err;
  const char *dir = MPK_SOURCE_DIR "/examples/gemma4-audio", *lib = MPK_SOURCE_DIR "/examples/gemma4-audio/lib/gemma4-audio-webgpu.wasm";
  if (mpk_mlc_planner_open(dir, lib, &p, &err)) fail_msg("%s", tu_err(&err));
  const mpk_mlc_prefill_config *c = &p->config;
  assert_int_equal(c->generation_inputs, MPK_MLC_GENERATION_TOKENS);
  assert_string_equal(c->prefill, "prefill_tokens");
  assert_string_equal(c->decode, "decode_tokens");
  assert_string_equal(c->embed_tokens, "embed");
  assert_int_equal(c->prefill_chunk_size, 1024);
  assert_string_equal(p->prefill_chunk_size_from, "_metadata");
  assert_int_equal(c->context_window_size, 4096);
  assert_int_equal(c->sliding_window_size, -1);
  assert_int_equal(c->n_system_prefix_token_ids, 0);
  assert_non_null(c->audio.prompt);
  assert_int_equal(c->audio.prompt->prefix_token_ids[0], 256000);
  assert_int_equal(c->audio.prompt->placeholder_token_id, 258881);
  assert_string_equal(c->audio.adapter_function, "audio_embed");
  assert_null(c->image.prompt);
  mpk_mlc_planner_free(p);

  /* LLaVA: the embeds pair; its library states no prefill_chunk_size, the chat config's is taken */
  dir = MPK_SOURCE_DIR "/examples/llava-image";
  lib = MPK_SOURCE_DIR "/examples/llava-image/lib/llava-image-webgpu.wasm";
  if (mpk_mlc_planner_open(dir, lib, &p, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(p->config.generation_inputs, MPK_MLC_GENERATION_EMBEDS);
  assert_string_equal(p->config.prefill, "prefill");
  assert_string_equal(p->prefill_chunk_size_from, "chat_config");
  assert_int_equal(p->config.image.num_embeddings, 576);
  assert_string_equal(p->config.image.adapter_function, "image_embed");
  mpk_mlc_planner_free(p);

  /* no manifest: the legacy chunker's package */
  assert_int_equal(mpk_mlc_planner_open(MPK_SOURCE_DIR "/examples/legacy-no-manifest", lib, &p, &err), MPK_ENOTFOUND);
  assert_null(p);
  /* a library bound to another package */
  assert_int_equal(mpk_mlc_planner_open(MPK_SOURCE_DIR "/examples/gemma4-audio", lib, &p, &err), MPK_EMISMATCH);

  /* the chat config's window and system prefix, read from a copy of the Gemma 4 example */
  const char *tmp = tu_tmpdir();
  tu_sh("cp -r '%s/examples/gemma4-audio/.' '%s/'", MPK_SOURCE_DIR, tmp);
  char cc[1024], glib[1024];
  snprintf(cc, sizeof cc, "%s/mlc-chat-config.json", tmp);
  snprintf(glib, sizeof glib, "%s/lib/gemma4-audio-webgpu.wasm", tmp);
  tu_sh("/usr/bin/python3 -c \"import json; p='%s'; d=json.load(open(p)); d['conv_template']['system_prefix_token_ids']=[2]; "
        "d['context_window_size']=-1; d['sliding_window_size']=512; json.dump(d, open(p, 'w'))\"", cc);
  if (mpk_mlc_planner_open(tmp, glib, &p, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(p->config.n_system_prefix_token_ids, 1);
  assert_int_equal(p->config.system_prefix_token_ids[0], 2);
  assert_int_equal(p->config.sliding_window_size, 512);
  mpk_mlc_planner_free(p);
  tu_sh("/usr/bin/python3 -c \"import json; p='%s'; d=json.load(open(p)); d['context_window_size']=4096; json.dump(d, open(p, 'w'))\"", cc);
  assert_int_equal(mpk_mlc_planner_open(tmp, glib, &p, &err), MPK_EINVAL);
  assert_string_equal(err.file, cc);
  assert_true(strstr(err.message, "Only one of context_window_size and sliding_window_size") != NULL);
  tu_sh("/usr/bin/python3 -c \"import json; p='%s'; d=json.load(open(p)); d['conv_template']['system_prefix_token_ids']=[2, -1]; "
        "d['sliding_window_size']=-1; json.dump(d, open(p, 'w'))\"", cc);
  assert_int_equal(mpk_mlc_planner_open(tmp, glib, &p, &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/conv_template/system_prefix_token_ids/1");
  tu_sh("rm -rf '%s'", tmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_prompts),    cmocka_unit_test(test_context_edges),
      cmocka_unit_test(test_config_errors),     cmocka_unit_test(test_builder_errors),
      cmocka_unit_test(test_segments_json),     cmocka_unit_test(test_legacy_properties),
      cmocka_unit_test(test_open_examples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
