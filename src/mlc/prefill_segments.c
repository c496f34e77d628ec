/* SEGMENTS.json: a prompt as ordered text token ids and media items (docs/prefill.md), read
   strictly since it is the CLI's untrusted input. */
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

struct mpk_mlc_segments_priv {
  mpk_arena *arena;
};

static int text_ids(mpk_jv *v, const json_t *arr, mpk_arena *a, mpk_mlc_segment *s) {
  if (!json_is_array(arr)) return mpk_jv_fail(v, MPK_EMALFORMED, "expected an array of token ids");
  size_t n = json_array_size(arr);
  if ((int64_t)n > MPK_MLC_PREFILL_MAX_POSITIONS)
    return mpk_jv_fail(v, MPK_ELIMIT, "more than %lld token ids", (long long)MPK_MLC_PREFILL_MAX_POSITIONS);
  int32_t *ids = n ? mpk_arena_array(a, n, sizeof *ids) : NULL;
  if (n && !ids) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    int64_t id;
    size_t prev = mpk_path_push_index(&v->path, i);
    int rc = mpk_jv_integer(v, json_array_get(arr, i), 0, &id);
    if (!rc && id > INT32_MAX) rc = mpk_jv_fail(v, MPK_EMALFORMED, "a token id must be at most 2147483647");
    mpk_path_pop(&v->path, prev);
    if (rc) return rc;
    ids[i] = (int32_t)id;
  }
  s->token_ids = ids;
  s->n_token_ids = n;
  return 0;
}

static int media(mpk_jv *v, const json_t *obj, bool image, mpk_mlc_segment *s) {
  static const char *const allowed[] = {"rows", NULL}, *const none[] = {NULL}, *const rows[] = {"rows", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_exact_keys(v, obj, allowed, image ? none : rows); /* audio rows come from its adapter */
  s->kind = image ? MPK_MLC_SEGMENT_IMAGE : MPK_MLC_SEGMENT_AUDIO;
  const json_t *r = json_object_get(obj, "rows");
  if (!rc && r) {
    MPK_JV_AT(v, "rows", mpk_jv_integer(v, r, 1, &s->rows));
    if (s->rows > MPK_MLC_PREFILL_MAX_POSITIONS)
      MPK_JV_AT(v, "rows", mpk_jv_fail(v, MPK_ELIMIT, "more than %lld rows", (long long)MPK_MLC_PREFILL_MAX_POSITIONS));
  }
  return rc;
}

static int segment(mpk_jv *v, const json_t *obj, mpk_arena *a, mpk_mlc_segment *s) {
  static const char *const allowed[] = {"text", "audio", "image", NULL}, *const none[] = {NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc) rc = mpk_jv_exact_keys(v, obj, allowed, none);
  if (rc) return rc;
  if (json_object_size(obj) != 1)
    return mpk_jv_fail(v, MPK_EMALFORMED, "a segment holds exactly one of \"text\", \"audio\", \"image\"");
  const json_t *x;
  if ((x = json_object_get(obj, "text"))) MPK_JV_AT(v, "text", text_ids(v, x, a, s));
  else if ((x = json_object_get(obj, "audio"))) MPK_JV_AT(v, "audio", media(v, x, false, s));
  else MPK_JV_AT(v, "image", media(v, json_object_get(obj, "image"), true, s));
  return 0;
}

static int parse(mpk_jv *v, const json_t *root, mpk_arena *a, mpk_mlc_segments *out) {
  static const char *const allowed[] = {"filled_kv_cache_length", "segments", NULL},
                           *const required[] = {"segments", NULL};
  int rc = mpk_jv_object(v, root);
  if (!rc) rc = mpk_jv_exact_keys(v, root, allowed, required);
  if (rc) return rc;
  const json_t *f = json_object_get(root, "filled_kv_cache_length"), *segs = json_object_get(root, "segments");
  if (f) MPK_JV_AT(v, "filled_kv_cache_length", mpk_jv_integer(v, f, 0, &out->filled_kv_cache_length));
  if (!json_is_array(segs)) MPK_JV_AT(v, "segments", mpk_jv_fail(v, MPK_EMALFORMED, "expected an array"));
  size_t n = json_array_size(segs);
  mpk_mlc_segment *list = n ? mpk_arena_array(a, n, sizeof *list) : NULL;
  if (n && !list) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  size_t prev = mpk_path_push_key(&v->path, "segments");
  for (size_t i = 0; !rc && i < n; i++) {
    size_t p = mpk_path_push_index(&v->path, i);
    rc = segment(v, json_array_get(segs, i), a, &list[i]);
    mpk_path_pop(&v->path, p);
  }
  mpk_path_pop(&v->path, prev);
  out->segments = list;
  out->n = n;
  return rc;
}

/* The segments as a core document (document.c). */
static int validate_segments(void *ctx, mpk_jv *v, json_t *root, mpk_arena *a) {
  mpk_mlc_segments *s = mpk_arena_alloc(a, sizeof *s);
  struct mpk_mlc_segments_priv *priv = s ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  if (!priv) return mpk_fail(v->err, MPK_ENOMEM, v->file, NULL, "out of memory");
  priv->arena = a;
  s->priv_ = priv;
  int rc = parse(v, root, a, s);
  if (!rc) *(mpk_mlc_segments **)ctx = s;
  return rc;
}

int mpk_mlc_segments_parse(const void *data, size_t len, const char *file, mpk_mlc_segments **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  return mpk_document_parse(&(mpk_document){.name = "SEGMENTS.json", .validate = validate_segments, .ctx = out}, data,
                            len, file, err);
}

void mpk_mlc_segments_free(mpk_mlc_segments *s) {
  if (s) mpk_arena_free(s->priv_->arena);
}
