/* A reference executor for prefill plans (issue 10): toy CPU functions stand in for a compiled
   library's — an embedding table (embed_tokens), adapters that emit known rows, prefill and decode
   functions that check their argument shapes the way the spec's role table gives them and record
   what they received. The executor looks functions up by the names the binding gives, runs each
   chunk of the plan, then one decode step. The KV cache it leaves must hold, position by position,
   the rows an independent assembly of the prompt predicts.

   Two prompts, both bound from the example packages (examples/): Gemma 4 style audio on the tokens
   pair (prefill_tokens / decode_tokens) and LLaVA style image on the embeds pair (prefill_embeds /
   decode_embeds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define HIDDEN 8

/* ---------------------------------------------------------------- toy tensors */

typedef enum { F32, I32 } dtype;

typedef struct tensor {
  dtype dt;
  int ndim;
  int64_t shape[3];
  void *data; /* borrowed */
} tensor;

static tensor t2(dtype dt, int64_t a, int64_t b, void *data) { return (tensor){dt, 2, {a, b, 0}, data}; }
static tensor t3(dtype dt, int64_t a, int64_t b, int64_t c, void *data) { return (tensor){dt, 3, {a, b, c}, data}; }
/* A view with another shape over the same elements (as tvm's .view()). */
static tensor view3(tensor t, int64_t a, int64_t b, int64_t c) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; i++) n *= t.shape[i];
  assert_int_equal(n, a * b * c);
  return t3(t.dt, a, b, c, t.data);
}

static void assert_shape(const char *fn, const char *arg, tensor t, dtype dt, int ndim, int64_t d0, int64_t d1,
                         int64_t d2) {
  if (t.dt != dt || t.ndim != ndim || t.shape[0] != d0 || t.shape[1] != d1 || (ndim == 3 && t.shape[2] != d2))
    fail_msg("%s: %s has shape [%lld, %lld%s] %s, the role table says [%lld, %lld%s] %s", fn, arg, (long long)t.shape[0],
             (long long)t.shape[1], t.ndim == 3 ? ", ..." : "", t.dt == F32 ? "float32" : "int32", (long long)d0,
             (long long)d1, ndim == 3 ? ", hidden" : "", dt == F32 ? "float32" : "int32");
}

/* ---------------------------------------------------------------- the toy "library" */

/* embed_tokens: row of token t is t/1000 + h (exact in float32 for the ids used). */
static float embed_value(int32_t token, int h) { return (float)token / 1024.0f + (float)h; }
/* an adapter's row r of call k: distinct from every embedding row */
static float adapter_value(int k, int64_t r, int h) { return -1.0f - (float)k * 4096.0f - (float)r - (float)h / 16.0f; }

typedef struct kv_cache {
  float (*rows)[HIDDEN];
  int32_t *ids, *mods; /* recorded by the tokens pair only */
  size_t len, cap;
  int calls_prefill, calls_decode;
  size_t max_chunk;
} kv_cache;

static void kv_append(kv_cache *kv, const float *emb, const int32_t *ids, const int32_t *mods, size_t n) {
  assert_true(kv->len + n <= kv->cap);
  memcpy(kv->rows[kv->len], emb, n * HIDDEN * sizeof(float));
  for (size_t i = 0; i < n; i++) {
    kv->ids[kv->len + i] = ids ? ids[i] : -1;
    kv->mods[kv->len + i] = mods ? mods[i] : -1;
  }
  kv->len += n;
}

/* embed_tokens(token ids [n], params) -> [n, hidden] */
static tensor fn_embed(tensor ids, float *out) {
  assert_true(ids.dt == I32 && ids.ndim == 1);
  for (int64_t i = 0; i < ids.shape[0]; i++)
    for (int h = 0; h < HIDDEN; h++) out[i * HIDDEN + h] = embed_value(((int32_t *)ids.data)[i], h);
  return t2(F32, ids.shape[0], HIDDEN, out);
}

/* prefill_tokens(embeddings [1, total_len, hidden], token IDs [1, total_len], modality IDs [1, total_len], kv, params) */
static void fn_prefill_tokens(tensor emb, tensor ids, tensor mods, kv_cache *kv) {
  int64_t n = emb.shape[1];
  assert_shape("prefill_tokens", "embeddings", emb, F32, 3, 1, n, HIDDEN);
  assert_shape("prefill_tokens", "token IDs", ids, I32, 2, 1, n, 0);
  assert_shape("prefill_tokens", "modality IDs", mods, I32, 2, 1, n, 0);
  kv_append(kv, emb.data, ids.data, mods.data, (size_t)n);
  kv->calls_prefill++;
  if ((size_t)n > kv->max_chunk) kv->max_chunk = (size_t)n;
}

/* prefill_embeds(embeddings [1, total_len, hidden], kv, params) */
static void fn_prefill_embeds(tensor emb, kv_cache *kv) {
  int64_t n = emb.shape[1];
  assert_shape("prefill_embeds", "embeddings", emb, F32, 3, 1, n, HIDDEN);
  kv_append(kv, emb.data, NULL, NULL, (size_t)n);
  kv->calls_prefill++;
  if ((size_t)n > kv->max_chunk) kv->max_chunk = (size_t)n;
}

/* decode_tokens(token IDs [batch_size, 1], kv, params): batch 1 here */
static void fn_decode_tokens(tensor ids, kv_cache *kv) {
  assert_shape("decode_tokens", "token IDs", ids, I32, 2, 1, 1, 0);
  float row[HIDDEN];
  for (int h = 0; h < HIDDEN; h++) row[h] = embed_value(((int32_t *)ids.data)[0], h); /* it embeds inside */
  int32_t mod = 0;
  kv_append(kv, row, ids.data, &mod, 1);
  kv->calls_decode++;
}

/* decode_embeds(embeddings [1, 1, hidden], kv, params) */
static void fn_decode_embeds(tensor emb, kv_cache *kv) {
  assert_shape("decode_embeds", "embeddings", emb, F32, 3, 1, 1, HIDDEN);
  kv_append(kv, emb.data, NULL, NULL, 1);
  kv->calls_decode++;
}

/* An adapter output [rows, hidden], known rows. */
static float *run_adapter(int call, int64_t rows) {
  float *out = malloc((size_t)rows * HIDDEN * sizeof *out);
  assert_non_null(out);
  for (int64_t r = 0; r < rows; r++)
    for (int h = 0; h < HIDDEN; h++) out[r * HIDDEN + h] = adapter_value(call, r, h);
  return out;
}

/* ---------------------------------------------------------------- the executor */

/* Run a plan against the toy library, functions looked up by the names the plan carries. */
static void execute(const mpk_mlc_prefill_plan *p, float *const *adapter_out, kv_cache *kv, const char *embed_name,
                    const char *prefill_name) {
  assert_string_equal(p->embed_tokens, embed_name);
  assert_string_equal(p->prefill, prefill_name);
  float *buf = malloc(p->prompt_length * HIDDEN * sizeof *buf + 1);
  for (size_t i = 0; i < p->n_chunks; i++) {
    const mpk_mlc_prefill_chunk *c = &p->chunks[i];
    tensor emb;
    if (c->from_adapter) {
      /* rows [row_start, row_start + n) of the item's output, viewed as [1, n, hidden] */
      emb = t3(F32, 1, (int64_t)c->n, HIDDEN, adapter_out[c->item] + c->row_start * HIDDEN);
    } else {
      tensor ids = {I32, 1, {(int64_t)c->n, 0, 0}, (void *)c->token_ids};
      emb = view3(fn_embed(ids, buf), 1, (int64_t)c->n, HIDDEN);
    }
    if (p->generation_inputs == MPK_MLC_GENERATION_TOKENS)
      fn_prefill_tokens(emb, t2(I32, 1, (int64_t)c->n, (void *)c->token_ids),
                        t2(I32, 1, (int64_t)c->n, (void *)c->modality_ids), kv);
    else
      fn_prefill_embeds(emb, kv);
  }
  free(buf);
}

static void decode_one(const mpk_mlc_prefill_plan *p, int32_t token, kv_cache *kv) {
  if (p->generation_inputs == MPK_MLC_GENERATION_TOKENS) {
    fn_decode_tokens(t2(I32, 1, 1, &token), kv);
  } else {
    float row[HIDDEN];
    tensor ids = {I32, 1, {1, 0, 0}, &token};
    fn_decode_embeds(view3(fn_embed(ids, row), 1, 1, HIDDEN), kv);
  }
}

/* ---------------------------------------------------------------- the expected cache, built independently */

typedef struct expect {
  float (*rows)[HIDDEN];
  int32_t *ids, *mods;
  size_t len;
} expect;

static void expect_token(expect *e, int32_t t) {
  for (int h = 0; h < HIDDEN; h++) e->rows[e->len][h] = embed_value(t, h);
  e->ids[e->len] = t;
  e->mods[e->len++] = 0;
}

static void expect_text(expect *e, const char *s) {
  for (const char *c = s; *c; c++) expect_token(e, 1000 + (unsigned char)*c);
}

static void expect_adapter(expect *e, int call, int64_t rows, int32_t placeholder) {
  for (int64_t r = 0; r < rows; r++) {
    for (int h = 0; h < HIDDEN; h++) e->rows[e->len][h] = adapter_value(call, r, h);
    e->ids[e->len] = placeholder;
    e->mods[e->len++] = 1;
  }
}

static int32_t *toy_tokens(const char *s, size_t *n) {
  *n = strlen(s);
  int32_t *out = calloc(*n + 1, sizeof *out);
  for (size_t i = 0; i < *n; i++) out[i] = 1000 + (unsigned char)s[i];
  return out;
}

static void kv_init(kv_cache *kv, size_t cap) {
  memset(kv, 0, sizeof *kv);
  kv->rows = calloc(cap, sizeof *kv->rows);
  kv->ids = calloc(cap, sizeof *kv->ids);
  kv->mods = calloc(cap, sizeof *kv->mods);
  kv->cap = cap;
}
static void kv_free(kv_cache *kv) { free(kv->rows), free(kv->ids), free(kv->mods); }
static void expect_init(expect *e, size_t cap) {
  memset(e, 0, sizeof *e);
  e->rows = calloc(cap, sizeof *e->rows);
  e->ids = calloc(cap, sizeof *e->ids);
  e->mods = calloc(cap, sizeof *e->mods);
}
static void expect_free(expect *e) { free(e->rows), free(e->ids), free(e->mods); }

static void compare_kv(const char *what, const kv_cache *kv, const expect *e, bool with_ids) {
  assert_int_equal(kv->len, e->len);
  for (size_t i = 0; i < e->len; i++) {
    if (memcmp(kv->rows[i], e->rows[i], sizeof e->rows[i]) != 0)
      fail_msg("%s: position %zu holds row [%g, ...], expected [%g, ...]", what, i, kv->rows[i][0], e->rows[i][0]);
    if (with_ids && (kv->ids[i] != e->ids[i] || kv->mods[i] != e->mods[i]))
      fail_msg("%s: position %zu got token %d modality %d, expected %d %d", what, i, kv->ids[i], kv->mods[i], e->ids[i],
               e->mods[i]);
  }
}

/* A planner from an example package, its window changed to exercise chunking. */
static mpk_mlc_planner *example_planner(const char *name, int64_t chunk, const int64_t *sys, size_t n_sys) {
  char dir[1024], lib[2100];
  snprintf(dir, sizeof dir, "%s/examples/%s", MPK_SOURCE_DIR, name);
  snprintf(lib, sizeof lib, "%s/lib/%s-webgpu.wasm", dir, name);
  mpk_mlc_planner *opened = NULL, *p = NULL;
  mpk_error err;
  if (mpk_mlc_planner_open(dir, lib, &opened, &err)) fail_msg("%s", tu_err(&err));
  mpk_mlc_prefill_config cfg = opened->config;
  cfg.prefill_chunk_size = chunk;
  cfg.system_prefix_token_ids = sys;
  cfg.n_system_prefix_token_ids = n_sys;
  if (mpk_mlc_planner_new(&cfg, &p, &err)) fail_msg("%s", tu_err(&err));
  mpk_mlc_planner_free(opened);
  return p;
}

/* ---------------------------------------------------------------- Gemma 4: audio on the tokens pair */

static void test_gemma4_audio(void **state) {
  (void)state;
  static const int64_t sys[] = {2}; /* Gemma 4's conv_template system_prefix_token_ids */
  /* the segments WebLLM's conversation renders for text then audio (prompt_segments.json) */
  const char *before = "<|turn>user\nWhat is spoken?", *after[] = {"<turn|>\n", "<|turn>model\n"};
  static const int64_t chunks[] = {7, 64, 1024}; /* the example library's own is 1024 */
  for (size_t ci = 0; ci < 3; ci++) {
    int64_t chunk = chunks[ci];
    mpk_mlc_planner *pl = example_planner("gemma4-audio", chunk, sys, 1);
    mpk_mlc_prefill_builder *b = NULL;
    mpk_error err;
    assert_int_equal(mpk_mlc_prefill_begin(pl, 0, &b, &err), 0);
    size_t n;
    int32_t *t = toy_tokens(before, &n);
    assert_int_equal(mpk_mlc_prefill_add_text(b, t, n, &err), 0);
    free(t);
    /* the audio adapter runs first (its row count depends on the recording), then the planner
       checks the rows before any slice is taken */
    int64_t rows = 188; /* ~7.5 s of 16 kHz audio */
    float *audio = run_adapter(0, rows);
    assert_int_equal(mpk_mlc_prefill_add_media(b, MPK_MLC_SEGMENT_AUDIO, rows, &err), 0);
    for (int i = 0; i < 2; i++) {
      t = toy_tokens(after[i], &n);
      assert_int_equal(mpk_mlc_prefill_add_text(b, t, n, &err), 0);
      free(t);
    }
    mpk_mlc_prefill_plan *p = NULL;
    assert_int_equal(mpk_mlc_prefill_finish(b, &p, &err), 0);
    mpk_mlc_prefill_builder_free(b);
    assert_string_equal(p->items[0].adapter_function, "audio_embed");

    kv_cache kv;
    kv_init(&kv, 4096);
    float *outs[] = {audio};
    execute(p, outs, &kv, "embed", "prefill_tokens");
    assert_int_equal(kv.calls_prefill, p->n_chunks);
    assert_true(kv.max_chunk <= (size_t)chunk);
    assert_string_equal(p->decode, "decode_tokens");
    decode_one(p, 42, &kv);

    expect e;
    expect_init(&e, 4096);
    expect_token(&e, 2);
    expect_text(&e, before);
    expect_token(&e, 256000);
    expect_adapter(&e, 0, rows, 258881);
    expect_token(&e, 258883);
    expect_text(&e, after[0]);
    expect_text(&e, after[1]);
    assert_int_equal(p->prompt_length, e.len);
    expect_token(&e, 42); /* the decoded token */
    compare_kv("gemma4 audio", &kv, &e, true);
    printf("  gemma4 audio, chunk %4lld: %zu positions in %d prefill_tokens calls, 1 decode_tokens call\n",
           (long long)chunk, p->prompt_length, kv.calls_prefill);
    expect_free(&e);
    kv_free(&kv);
    free(audio);
    mpk_mlc_prefill_plan_free(p);
    mpk_mlc_planner_free(pl);
  }
}

/* A recording that cannot fit is refused before a slice is taken or a prefill runs. */
static void test_gemma4_audio_too_long(void **state) {
  (void)state;
  mpk_mlc_planner *pl = example_planner("gemma4-audio", 64, NULL, 0);
  mpk_mlc_prefill_builder *b = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_prefill_begin(pl, 4000, &b, &err), 0); /* 4000 of 4096 filled */
  int32_t t[] = {5, 6, 7};
  assert_int_equal(mpk_mlc_prefill_add_text(b, t, 3, &err), 0);
  float *audio = run_adapter(0, 94);
  assert_int_equal(mpk_mlc_prefill_add_media(b, MPK_MLC_SEGMENT_AUDIO, 94, &err), MPK_ELIMIT); /* 4000+3+1+94 */
  assert_true(strstr(err.message, "number of prompt tokens: 98; context window size: 4096") != NULL);
  free(audio); /* the runtime disposes the output; nothing was prefilled */
  mpk_mlc_prefill_builder_free(b);
  mpk_mlc_planner_free(pl);
}

/* ---------------------------------------------------------------- LLaVA: image on the embeds pair */

static void test_llava_image(void **state) {
  (void)state;
  static const int64_t sys[] = {1};
  /* the LLaVA segments for image then text (prompt_segments.json llava_image_then_text) */
  const char *pre[] = {"A chat between a curious human and an artificial intelligence assistant.", "USER: "},
             *post[] = {"\nWhat is shown? ", "ASSISTANT:"};
  mpk_mlc_planner *pl = example_planner("llava-image", 256, sys, 1);
  mpk_mlc_prefill_builder *b = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_prefill_begin(pl, 0, &b, &err), 0);
  size_t n;
  for (int i = 0; i < 2; i++) {
    int32_t *t = toy_tokens(pre[i], &n);
    assert_int_equal(mpk_mlc_prefill_add_text(b, t, n, &err), 0);
    free(t);
  }
  /* num_embeddings is fixed: the span is reserved and checked before the adapter runs */
  assert_int_equal(mpk_mlc_prefill_add_media(b, MPK_MLC_SEGMENT_IMAGE, 0, &err), 0);
  float *image = run_adapter(0, 576);
  for (int i = 0; i < 2; i++) {
    int32_t *t = toy_tokens(post[i], &n);
    assert_int_equal(mpk_mlc_prefill_add_text(b, t, n, &err), 0);
    free(t);
  }
  mpk_mlc_prefill_plan *p = NULL;
  assert_int_equal(mpk_mlc_prefill_finish(b, &p, &err), 0);
  mpk_mlc_prefill_builder_free(b);
  assert_int_equal(p->generation_inputs, MPK_MLC_GENERATION_EMBEDS);
  assert_int_equal(p->n_items, 1);
  assert_int_equal(p->items[0].rows, 576);
  assert_int_equal(p->items[0].n_chunks, 3); /* 256 + 256 + 64 */
  assert_string_equal(p->items[0].adapter_function, "image_embed");

  kv_cache kv;
  kv_init(&kv, 2048);
  float *outs[] = {image};
  execute(p, outs, &kv, "embed", "prefill");
  assert_true(kv.max_chunk <= 256);
  assert_string_equal(p->decode, "decode");
  decode_one(p, 319, &kv);

  expect e;
  expect_init(&e, 2048);
  expect_token(&e, 1);
  expect_text(&e, pre[0]);
  expect_text(&e, pre[1]);
  expect_adapter(&e, 0, 576, 32000);
  expect_text(&e, post[0]);
  expect_text(&e, post[1]);
  assert_int_equal(p->prompt_length, e.len);
  expect_token(&e, 319);
  compare_kv("llava image", &kv, &e, false); /* the embeds pair passes no ids: the rows say it all */
  printf("  llava image: %zu positions in %d prefill_embeds calls (576 image rows in 3), 1 decode_embeds call\n",
         p->prompt_length, kv.calls_prefill);
  expect_free(&e);
  kv_free(&kv);
  free(image);
  mpk_mlc_prefill_plan_free(p);
  mpk_mlc_planner_free(pl);
}

/* Two items of one kind, and a later round: each item's rows come from its own output, and the
   second round starts at the filled KV cache without the system prefix. */
static void test_two_rounds_two_items(void **state) {
  (void)state;
  static const int64_t sys[] = {2};
  mpk_mlc_planner *pl = example_planner("gemma4-audio", 5, sys, 1);
  kv_cache kv;
  kv_init(&kv, 1024);
  expect e;
  expect_init(&e, 1024);
  float *outs[2] = {run_adapter(0, 7), run_adapter(1, 3)};
  mpk_mlc_segment segs[] = {{MPK_MLC_SEGMENT_AUDIO, NULL, 0, 7}, {MPK_MLC_SEGMENT_AUDIO, NULL, 0, 3}};
  mpk_mlc_prefill_plan *p = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_prefill_plan_segments(pl, 0, segs, 2, &p, &err), 0);
  execute(p, outs, &kv, "embed", "prefill_tokens");
  expect_token(&e, 2);
  for (int k = 0; k < 2; k++) {
    expect_token(&e, 256000);
    expect_adapter(&e, k, k ? 3 : 7, 258881);
    expect_token(&e, 258883);
  }
  decode_one(p, 9, &kv);
  expect_token(&e, 9);
  mpk_mlc_prefill_plan_free(p);
  /* round two */
  size_t n;
  int32_t *t = toy_tokens("again", &n);
  mpk_mlc_segment seg2 = {MPK_MLC_SEGMENT_TEXT, t, n, 0};
  assert_int_equal(mpk_mlc_prefill_plan_segments(pl, (int64_t)kv.len, &seg2, 1, &p, &err), 0);
  assert_int_equal(p->filled_kv_cache_length, (int64_t)kv.len);
  execute(p, outs, &kv, "embed", "prefill_tokens");
  expect_text(&e, "again");
  compare_kv("two rounds", &kv, &e, true);
  free(t);
  mpk_mlc_prefill_plan_free(p);
  free(outs[0]), free(outs[1]);
  expect_free(&e);
  kv_free(&kv);
  mpk_mlc_planner_free(pl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemma4_audio),
      cmocka_unit_test(test_gemma4_audio_too_long),
      cmocka_unit_test(test_llava_image),
      cmocka_unit_test(test_two_rounds_two_items),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
