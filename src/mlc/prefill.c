/* Prompt assembly and prefill planning for a manifest model, with WebLLM 0.2.86's rules, order and
   messages (LLMChatPipeline.getArtifactPrefillChunks): the system prefix, text, adapter spans with
   their prefix/suffix tokens, chunks that never mix text and adapter rows, and the two context
   checks. The plan names, per chunk, where its embeddings come from; a runtime executes it. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

/* ---------------------------------------------------------------- the planner (a checked copy) */

struct mpk_mlc_planner_priv {
  mpk_arena *arena;
};

static const char *kind_name(mpk_mlc_segment_kind k) {
  return k == MPK_MLC_SEGMENT_AUDIO ? "audio" : k == MPK_MLC_SEGMENT_IMAGE ? "image" : "text";
}

/* Compiled functions take int32 token ids: WebLLM would wrap a larger id silently, we refuse it. */
static int check_ids(const int64_t *ids, size_t n, const char *what, mpk_error *err) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] > INT32_MAX)
      return mpk_fail(err, MPK_EINVAL, NULL, NULL,
                      "%s[%zu] = %" PRId64 " is not a token id the compiled functions take (0..2147483647)",
                      what, i, ids[i]);
  return 0;
}

static int check_input(const mpk_mlc_prefill_input *in, const char *kind, mpk_error *err) {
  if (!in->prompt) return 0;
  char what[64];
  snprintf(what, sizeof what, "%s prompt prefix_token_ids", kind);
  int rc = check_ids(in->prompt->prefix_token_ids, in->prompt->n_prefix_token_ids, what, err);
  snprintf(what, sizeof what, "%s prompt suffix_token_ids", kind);
  if (!rc) rc = check_ids(in->prompt->suffix_token_ids, in->prompt->n_suffix_token_ids, what, err);
  snprintf(what, sizeof what, "%s prompt placeholder_token_id", kind);
  if (!rc) rc = check_ids(&in->prompt->placeholder_token_id, 1, what, err);
  if (!rc && (in->num_embeddings < 0 || in->num_embeddings > MPK_MLC_PREFILL_MAX_POSITIONS))
    rc = mpk_fail(err, MPK_EINVAL, NULL, NULL, "%s num_embeddings %" PRId64 " is out of range", kind,
                  in->num_embeddings);
  return rc;
}

/* The window checks of LLMChatPipeline's constructor, plus: the window in use must be positive
   (WebLLM would take 0 or -5 as a window every prompt overflows). */
static int check_window(const mpk_mlc_prefill_config *c, mpk_error *err) {
  if (c->prefill_chunk_size <= 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "Make sure `prefill_chunk_size` > 0.");
  if (c->context_window_size != -1 && c->sliding_window_size != -1)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL,
                    "Only one of context_window_size and sliding_window_size can be positive. Got: "
                    "context_window_size: %" PRId64 ", sliding_window_size: %" PRId64,
                    c->context_window_size, c->sliding_window_size);
  if (c->context_window_size == -1 && c->sliding_window_size == -1)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "Need to specify either sliding_window_size or max_window_size.");
  if (c->sliding_window_size == -1 && c->context_window_size <= 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "context_window_size must be -1 or positive, got %" PRId64,
                    c->context_window_size);
  if (c->context_window_size == -1 && c->sliding_window_size <= 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "sliding_window_size must be -1 or positive, got %" PRId64,
                    c->sliding_window_size);
  return 0;
}

void mpk_mlc_prefill_config_from_binding(const mpk_mlc_binding *b, mpk_mlc_prefill_config *cfg) {
  if (!b || !cfg) return;
  cfg->generation_inputs = b->generation_inputs;
  cfg->embed_tokens = b->embed_tokens;
  cfg->prefill = b->prefill;
  cfg->decode = b->decode;
  memset(&cfg->audio, 0, sizeof cfg->audio);
  memset(&cfg->image, 0, sizeof cfg->image);
  if (b->has_audio) {
    cfg->audio.prompt = b->audio.input->prompt;
    cfg->audio.adapter_function = b->audio.adapter_function;
  }
  if (b->has_image) {
    cfg->image.prompt = b->image.input->prompt;
    cfg->image.adapter_function = b->image.adapter_function;
    cfg->image.num_embeddings = b->image.input->image.num_embeddings;
  }
}

static const int64_t *copy_ids(mpk_arena *a, const int64_t *ids, size_t n, bool *oom) {
  if (!n) return NULL;
  int64_t *out = mpk_arena_array(a, n, sizeof *out);
  if (!out) {
    *oom = true;
    return NULL;
  }
  memcpy(out, ids, n * sizeof *out);
  return out;
}

static const char *copy_str(mpk_arena *a, const char *s, bool *oom) {
  if (!s) return NULL;
  char *out = mpk_arena_strdup(a, s);
  if (!out) *oom = true;
  return out;
}

static void copy_input(mpk_arena *a, mpk_mlc_prefill_input *dst, const mpk_mlc_prefill_input *src, bool *oom) {
  *dst = *src;
  dst->adapter_function = copy_str(a, src->adapter_function, oom);
  if (!src->prompt) return;
  mpk_mlc_prompt *p = mpk_arena_alloc(a, sizeof *p);
  if (!p) {
    *oom = true;
    return;
  }
  *p = *src->prompt;
  p->prefix_token_ids = copy_ids(a, src->prompt->prefix_token_ids, src->prompt->n_prefix_token_ids, oom);
  p->suffix_token_ids = copy_ids(a, src->prompt->suffix_token_ids, src->prompt->n_suffix_token_ids, oom);
  dst->prompt = p;
}

int mpk_mlc_planner_new(const mpk_mlc_prefill_config *cfg, mpk_mlc_planner **out, mpk_error *err) {
  if (!cfg || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (cfg->generation_inputs != MPK_MLC_GENERATION_TOKENS && cfg->generation_inputs != MPK_MLC_GENERATION_EMBEDS)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "unknown generation_inputs %d", (int)cfg->generation_inputs);
  int rc = check_window(cfg, err);
  if (!rc) rc = check_ids(cfg->system_prefix_token_ids, cfg->n_system_prefix_token_ids, "system_prefix_token_ids", err);
  if (!rc) rc = check_input(&cfg->audio, "audio", err);
  if (!rc) rc = check_input(&cfg->image, "image", err);
  if (rc) return rc;
  mpk_mlc_planner *p = calloc(1, sizeof *p);
  struct mpk_mlc_planner_priv *priv = p ? calloc(1, sizeof *priv) : NULL;
  mpk_arena *a = priv ? mpk_arena_new() : NULL;
  if (!a) {
    free(priv);
    free(p);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  priv->arena = a;
  p->priv_ = priv;
  bool oom = false;
  mpk_mlc_prefill_config *c = &p->config;
  *c = *cfg;
  c->embed_tokens = copy_str(a, cfg->embed_tokens, &oom);
  c->prefill = copy_str(a, cfg->prefill, &oom);
  c->decode = copy_str(a, cfg->decode, &oom);
  c->system_prefix_token_ids = copy_ids(a, cfg->system_prefix_token_ids, cfg->n_system_prefix_token_ids, &oom);
  copy_input(a, &c->audio, &cfg->audio, &oom);
  copy_input(a, &c->image, &cfg->image, &oom);
  if (oom) {
    mpk_mlc_planner_free(p);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  *out = p;
  return 0;
}

void mpk_mlc_planner_free(mpk_mlc_planner *p) {
  if (!p) return;
  if (p->priv_) mpk_arena_free(p->priv_->arena);
  free(p->priv_);
  free(p);
}

/* ---------------------------------------------------------------- the builder */

/* A chunk while building: positions by offset (the sequence may still move). */
typedef struct chunk_rec {
  size_t offset, n;
  bool from_adapter;
  size_t item;
  int64_t row_start;
} chunk_rec;

struct mpk_mlc_prefill_builder {
  const mpk_mlc_planner *planner;
  int64_t filled;
  int32_t *ids, *mods;      /* the assembled prompt */
  size_t len, cap_ids, cap_mods;
  size_t pending;           /* text positions at the end of the prompt not yet in a chunk */
  chunk_rec *chunks;
  size_t n_chunks, cap_chunks;
  mpk_mlc_prefill_item *items;
  size_t n_items, cap_items;
  size_t segment;           /* index of the next add call, for error pointers */
  bool failed, finished;
};

/* Fail and poison: a half-built prompt must not be finished into a plan. */
static int bfail(mpk_mlc_prefill_builder *b, mpk_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bfail(mpk_mlc_prefill_builder *b, mpk_error *err, int code, const char *fmt, ...) {
  b->failed = true;
  if (!err) return code;
  char msg[sizeof err->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char ptr[32];
  snprintf(ptr, sizeof ptr, "/segments/%zu", b->segment);
  return mpk_fail(err, code, NULL, ptr, "%s", msg);
}

static bool grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * size);
  if (!q) return false;
  *p = q;
  *cap = c;
  return true;
}

/* Room for `n` more positions, within the prompt limit. */
static int reserve(mpk_mlc_prefill_builder *b, int64_t n, mpk_error *err) {
  if (n > MPK_MLC_PREFILL_MAX_POSITIONS - (int64_t)b->len)
    return bfail(b, err, MPK_ELIMIT, "the prompt would hold more than %" PRId64 " positions",
                 (int64_t)MPK_MLC_PREFILL_MAX_POSITIONS);
  size_t need = b->len + (size_t)n;
  if (!grow((void **)&b->ids, &b->cap_ids, need, sizeof *b->ids) ||
      !grow((void **)&b->mods, &b->cap_mods, need, sizeof *b->mods))
    return bfail(b, err, MPK_ENOMEM, "out of memory");
  return 0;
}

static int push_chunk(mpk_mlc_prefill_builder *b, size_t offset, size_t n, bool from_adapter, size_t item,
                      int64_t row_start, mpk_error *err) {
  if (!grow((void **)&b->chunks, &b->cap_chunks, b->n_chunks + 1, sizeof *b->chunks))
    return bfail(b, err, MPK_ENOMEM, "out of memory");
  b->chunks[b->n_chunks++] = (chunk_rec){offset, n, from_adapter, item, row_start};
  return 0;
}

/* flushTokens: the pending text becomes one chunk. */
static int flush(mpk_mlc_prefill_builder *b, mpk_error *err) {
  if (!b->pending) return 0;
  int rc = push_chunk(b, b->len - b->pending, b->pending, false, 0, 0, err);
  b->pending = 0;
  return rc;
}

/* appendTokens: text positions, a chunk flushed each time the pending text fills one. */
static int append_tokens(mpk_mlc_prefill_builder *b, const int32_t *ids32, const int64_t *ids64, size_t n,
                         mpk_error *err) {
  int rc = reserve(b, (int64_t)n, err);
  size_t size = (size_t)b->planner->config.prefill_chunk_size;
  for (size_t i = 0; !rc && i < n; i++) {
    b->ids[b->len] = ids32 ? ids32[i] : (int32_t)ids64[i]; /* ids64 were range-checked by the planner */
    b->mods[b->len++] = 0;
    if (++b->pending == size) rc = flush(b, err);
  }
  return rc;
}

static int usable(mpk_mlc_prefill_builder *b, mpk_error *err) {
  if (!b) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (b->failed) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "an earlier call on this prompt failed");
  if (b->finished) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the prompt is already finished");
  return 0;
}

int mpk_mlc_prefill_begin(const mpk_mlc_planner *planner, int64_t filled_kv_cache_length,
                          mpk_mlc_prefill_builder **out, mpk_error *err) {
  if (!planner || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (filled_kv_cache_length < 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "filled_kv_cache_length must be >= 0, got %" PRId64,
                    filled_kv_cache_length);
  mpk_mlc_prefill_builder *b = calloc(1, sizeof *b);
  if (!b) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  b->planner = planner;
  b->filled = filled_kv_cache_length;
  /* The system prefix opens a conversation only: a later round continues the KV cache. */
  const mpk_mlc_prefill_config *c = &planner->config;
  int rc = filled_kv_cache_length == 0
               ? append_tokens(b, NULL, c->system_prefix_token_ids, c->n_system_prefix_token_ids, err)
               : 0;
  if (rc) {
    mpk_mlc_prefill_builder_free(b);
    return rc;
  }
  *out = b;
  return 0;
}

int mpk_mlc_prefill_add_text(mpk_mlc_prefill_builder *b, const int32_t *token_ids, size_t n, mpk_error *err) {
  int rc = usable(b, err);
  if (rc) return rc;
  if (n && !token_ids) return bfail(b, err, MPK_EINVAL, "NULL token ids");
  for (size_t i = 0; i < n; i++)
    if (token_ids[i] < 0)
      return bfail(b, err, MPK_EINVAL, "token id %" PRId32 " at index %zu is negative", token_ids[i], i);
  rc = append_tokens(b, token_ids, NULL, n, err);
  b->segment++;
  return rc;
}

/* The total WebLLM compares with the context window: positions in the KV cache, in chunks, pending,
   and about to be added. */
static int64_t length_so_far(const mpk_mlc_prefill_builder *b, int64_t adding) {
  return b->filled + (int64_t)b->len + adding;
}

static int context_exceeded(mpk_error *err, const char *ptr, int64_t prompt_tokens, int64_t window) {
  /* WebLLM's ContextWindowSizeExceededError; its second line joined with ". ". */
  return mpk_fail(err, MPK_ELIMIT, NULL, ptr,
                  "Prompt tokens exceed context window size: number of prompt tokens: %" PRId64
                  "; context window size: %" PRId64
                  ". Consider shortening the prompt, or increase `context_window_size`, or using sliding "
                  "window via `sliding_window_size`.",
                  prompt_tokens, window);
}

int mpk_mlc_prefill_add_media(mpk_mlc_prefill_builder *b, mpk_mlc_segment_kind kind, int64_t rows,
                              mpk_error *err) {
  int rc = usable(b, err);
  if (rc) return rc;
  if (kind != MPK_MLC_SEGMENT_AUDIO && kind != MPK_MLC_SEGMENT_IMAGE)
    return bfail(b, err, MPK_EINVAL, "a media segment is audio or image, not %s", kind_name(kind));
  const mpk_mlc_prefill_config *c = &b->planner->config;
  const mpk_mlc_prefill_input *in = kind == MPK_MLC_SEGMENT_AUDIO ? &c->audio : &c->image;
  if (!in->prompt)
    return bfail(b, err, MPK_EUNSUPPORTED, "The loaded artifact does not declare an %s input", kind_name(kind));
  if (rows == 0 && in->num_embeddings > 0) rows = in->num_embeddings;
  if (in->num_embeddings > 0 && rows != in->num_embeddings)
    return bfail(b, err, MPK_EMISMATCH, "%s adapter must return [%" PRId64 ", hidden_size], got %" PRId64 " rows",
                 kind_name(kind), in->num_embeddings, rows);
  if (rows <= 0)
    return bfail(b, err, MPK_EINVAL,
                 "%s adapter must return [%s_tokens, hidden_size] with at least one row, got %" PRId64 " rows",
                 kind_name(kind), kind_name(kind), rows);
  if (rows > MPK_MLC_PREFILL_MAX_POSITIONS)
    return bfail(b, err, MPK_ELIMIT, "%" PRId64 " rows: the prompt would hold more than %" PRId64 " positions",
                 rows, (int64_t)MPK_MLC_PREFILL_MAX_POSITIONS);
  const mpk_mlc_prompt *p = in->prompt;
  rc = append_tokens(b, NULL, p->prefix_token_ids, p->n_prefix_token_ids, err);
  if (!rc) rc = flush(b, err);
  if (rc) return rc;
  /* Reject an input that cannot fit before its rows are sliced (the runtime then disposes the
     adapter output, or for an image never runs the adapter). */
  int64_t so_far = length_so_far(b, rows);
  if (c->sliding_window_size == -1 && so_far > c->context_window_size) {
    b->failed = true;
    char ptr[32];
    snprintf(ptr, sizeof ptr, "/segments/%zu", b->segment);
    return context_exceeded(err, ptr, so_far - b->filled, c->context_window_size);
  }
  if ((rc = reserve(b, rows, err))) return rc;
  if (!grow((void **)&b->items, &b->cap_items, b->n_items + 1, sizeof *b->items))
    return bfail(b, err, MPK_ENOMEM, "out of memory");
  mpk_mlc_prefill_item *it = &b->items[b->n_items];
  *it = (mpk_mlc_prefill_item){kind, b->segment, in->adapter_function, rows, b->len, b->n_chunks, 0};
  int32_t placeholder = (int32_t)p->placeholder_token_id, *ids = b->ids + b->len, *mods = b->mods + b->len;
  for (size_t r = 0; r < (size_t)rows; r++) ids[r] = placeholder, mods[r] = 1; /* local pointers: vectorized */
  for (int64_t start = 0; start < rows;) {
    int64_t count = rows - start < c->prefill_chunk_size ? rows - start : c->prefill_chunk_size;
    if ((rc = push_chunk(b, b->len + (size_t)start, (size_t)count, true, b->n_items, start, err))) return rc;
    start += count;
    it->n_chunks++;
  }
  b->len += (size_t)rows;
  b->n_items++;
  rc = append_tokens(b, NULL, p->suffix_token_ids, p->n_suffix_token_ids, err);
  b->segment++;
  return rc;
}

struct mpk_mlc_prefill_plan_priv {
  int32_t *ids, *mods;
  mpk_mlc_prefill_chunk *chunks;
  mpk_mlc_prefill_item *items;
};

int mpk_mlc_prefill_finish(mpk_mlc_prefill_builder *b, mpk_mlc_prefill_plan **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  int rc = usable(b, err);
  if (rc) return rc;
  if ((rc = flush(b, err))) return rc;
  const mpk_mlc_prefill_config *c = &b->planner->config;
  if (b->len == 0) {
    b->failed = true;
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "Prompt must contain at least one token");
  }
  if (c->sliding_window_size == -1 && (int64_t)b->len + b->filled > c->context_window_size) {
    b->failed = true;
    return context_exceeded(err, NULL, (int64_t)b->len, c->context_window_size);
  }
  mpk_mlc_prefill_plan *plan = calloc(1, sizeof *plan);
  struct mpk_mlc_prefill_plan_priv *priv = plan ? calloc(1, sizeof *priv) : NULL;
  mpk_mlc_prefill_chunk *chunks = priv ? calloc(b->n_chunks, sizeof *chunks) : NULL;
  if (!chunks) {
    free(priv);
    free(plan);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  /* The plan takes the builder's arrays: no copy of a long prompt. */
  priv->ids = b->ids, priv->mods = b->mods, priv->items = b->items, priv->chunks = chunks;
  b->ids = b->mods = NULL;
  b->items = NULL;
  b->finished = true;
  for (size_t i = 0; i < b->n_chunks; i++) {
    const chunk_rec *r = &b->chunks[i];
    chunks[i] = (mpk_mlc_prefill_chunk){r->offset, r->n, priv->ids + r->offset, priv->mods + r->offset,
                                        r->from_adapter, r->item, r->row_start};
  }
  plan->priv_ = priv;
  plan->prompt_length = b->len;
  plan->filled_kv_cache_length = b->filled;
  plan->token_ids = priv->ids;
  plan->modality_ids = priv->mods;
  plan->chunks = chunks;
  plan->n_chunks = b->n_chunks;
  plan->items = priv->items;
  plan->n_items = b->n_items;
  plan->generation_inputs = c->generation_inputs;
  plan->embed_tokens = c->embed_tokens;
  plan->prefill = c->prefill;
  plan->decode = c->decode;
  *out = plan;
  return 0;
}

void mpk_mlc_prefill_builder_free(mpk_mlc_prefill_builder *b) {
  if (!b) return;
  free(b->ids);
  free(b->mods);
  free(b->chunks);
  free(b->items);
  free(b);
}

void mpk_mlc_prefill_plan_free(mpk_mlc_prefill_plan *plan) {
  if (!plan) return;
  if (plan->priv_) {
    free(plan->priv_->ids);
    free(plan->priv_->mods);
    free(plan->priv_->chunks);
    free(plan->priv_->items);
    free(plan->priv_);
  }
  free(plan);
}

int mpk_mlc_prefill_plan_segments(const mpk_mlc_planner *planner, int64_t filled_kv_cache_length,
                                  const mpk_mlc_segment *segments, size_t n, mpk_mlc_prefill_plan **out,
                                  mpk_error *err) {
  if (!out || (n && !segments)) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  mpk_mlc_prefill_builder *b = NULL;
  int rc = mpk_mlc_prefill_begin(planner, filled_kv_cache_length, &b, err);
  for (size_t i = 0; !rc && i < n; i++) {
    const mpk_mlc_segment *s = &segments[i];
    rc = s->kind == MPK_MLC_SEGMENT_TEXT ? mpk_mlc_prefill_add_text(b, s->token_ids, s->n_token_ids, err)
                                         : mpk_mlc_prefill_add_media(b, s->kind, s->rows, err);
  }
  if (!rc) rc = mpk_mlc_prefill_finish(b, out, err);
  mpk_mlc_prefill_builder_free(b);
  return rc;
}
