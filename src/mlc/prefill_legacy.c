/* The pre-manifest chunker (WebLLM 0.2.86 getChunkedPrefillInputData), for packages without
   mlc-model-manifest.json: greedy, an image never split and never larger than a chunk, text split
   wherever a chunk fills. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

struct mpk_mlc_legacy_plan_priv {
  mpk_mlc_legacy_piece *pieces;
  mpk_mlc_legacy_chunk *chunks;
};

typedef struct state {
  mpk_mlc_legacy_piece *pieces;
  size_t n_pieces, cap_pieces;
  size_t *chunk_first;      /* pieces[chunk_first[c]] starts chunk c (pointers fixed at the end) */
  int64_t *chunk_len;
  size_t n_chunks, cap_chunks;
  size_t open_first;        /* first piece of the chunk being filled */
  int64_t open_len;
} state;

static bool push_piece(state *s, size_t item, int64_t start, int64_t count) {
  if (s->n_pieces == s->cap_pieces) {
    size_t c = s->cap_pieces ? 2 * s->cap_pieces : 16;
    void *p = realloc(s->pieces, c * sizeof *s->pieces);
    if (!p) return false;
    s->pieces = p, s->cap_pieces = c;
  }
  s->pieces[s->n_pieces++] = (mpk_mlc_legacy_piece){item, start, count};
  return true;
}

/* chunks.push([...curChunk]); curChunk = [] */
static bool close_chunk(state *s) {
  if (s->n_chunks == s->cap_chunks) {
    size_t c = s->cap_chunks ? 2 * s->cap_chunks : 16;
    size_t *f = realloc(s->chunk_first, c * sizeof *f);
    if (!f) return false;
    s->chunk_first = f;
    int64_t *l = realloc(s->chunk_len, c * sizeof *l);
    if (!l) return false;
    s->chunk_len = l, s->cap_chunks = c;
  }
  s->chunk_first[s->n_chunks] = s->open_first;
  s->chunk_len[s->n_chunks++] = s->open_len;
  s->open_first = s->n_pieces;
  s->open_len = 0;
  return true;
}

static int run(state *s, const mpk_mlc_legacy_item *items, size_t n, int64_t size, mpk_error *err) {
  for (size_t i = 0; i < n; i++) {
    int64_t len = items[i].length;
    char ptr[32];
    snprintf(ptr, sizeof ptr, "/%zu", i);
    if (len < 0) return mpk_fail(err, MPK_EINVAL, NULL, ptr, "length %" PRId64 " is negative", len);
    if (items[i].is_image && len == 0) return mpk_fail(err, MPK_EINVAL, NULL, ptr, "an image has no embedding rows");
    if (items[i].is_image && len > size)
      return mpk_fail(err, MPK_ELIMIT, NULL, ptr,
                      "prefillChunkSize needs to be greater than imageEmbedSize because a single image's "
                      "prefill cannot be chunked. Got prefillChunkSize: %" PRId64 ", imageEmbedSize: %" PRId64,
                      size, len);
    /* An empty token array adds nothing (WebLLM would keep an empty piece). */
    if (!items[i].is_image && len == 0) continue;
    if (s->open_len + len <= size) { /* 1. fits in the open chunk */
      if (!push_piece(s, i, 0, len)) return MPK_ENOMEM;
      s->open_len += len;
      if (s->open_len == size && !close_chunk(s)) return MPK_ENOMEM;
    } else if (!items[i].is_image) { /* 2.1 text: fill chunk after chunk */
      for (int64_t start = 0; start < len;) {
        int64_t take = len - start < size - s->open_len ? len - start : size - s->open_len;
        if (!push_piece(s, i, start, take)) return MPK_ENOMEM;
        s->open_len += take;
        start += take;
        if (s->open_len == size && !close_chunk(s)) return MPK_ENOMEM;
      }
    } else { /* 2.2 an image that does not fit: close the open chunk (never empty here), start anew */
      if (!close_chunk(s) || !push_piece(s, i, 0, len)) return MPK_ENOMEM;
      s->open_len = len;
      if (s->open_len == size && !close_chunk(s)) return MPK_ENOMEM;
    }
  }
  if (s->n_pieces > s->open_first && !close_chunk(s)) return MPK_ENOMEM;
  return 0;
}

int mpk_mlc_legacy_chunks(const mpk_mlc_legacy_item *items, size_t n, int64_t prefill_chunk_size,
                          mpk_mlc_legacy_plan **out, mpk_error *err) {
  if (!out || (n && !items)) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (prefill_chunk_size <= 0) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "Make sure `prefill_chunk_size` > 0.");
  state s = {0};
  int rc = run(&s, items, n, prefill_chunk_size, err);
  mpk_mlc_legacy_plan *plan = NULL;
  struct mpk_mlc_legacy_plan_priv *priv = NULL;
  mpk_mlc_legacy_chunk *chunks = NULL;
  if (!rc) {
    plan = calloc(1, sizeof *plan);
    priv = plan ? calloc(1, sizeof *priv) : NULL;
    chunks = priv ? calloc(s.n_chunks ? s.n_chunks : 1, sizeof *chunks) : NULL;
    if (!chunks) rc = MPK_ENOMEM;
  }
  if (rc) {
    free(chunks);
    free(priv);
    free(plan);
    free(s.pieces);
    free(s.chunk_first);
    free(s.chunk_len);
    return rc == MPK_ENOMEM ? mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory") : rc;
  }
  for (size_t c = 0; c < s.n_chunks; c++) {
    size_t end = c + 1 < s.n_chunks ? s.chunk_first[c + 1] : s.n_pieces;
    chunks[c] = (mpk_mlc_legacy_chunk){s.pieces + s.chunk_first[c], end - s.chunk_first[c], s.chunk_len[c]};
  }
  priv->pieces = s.pieces;
  priv->chunks = chunks;
  plan->priv_ = priv;
  plan->chunks = chunks;
  plan->n_chunks = s.n_chunks;
  free(s.chunk_first);
  free(s.chunk_len);
  *out = plan;
  return 0;
}

void mpk_mlc_legacy_plan_free(mpk_mlc_legacy_plan *plan) {
  if (!plan) return;
  if (plan->priv_) {
    free(plan->priv_->pieces);
    free(plan->priv_->chunks);
    free(plan->priv_);
  }
  free(plan);
}
