/* PROBE.json: the token sequences the post-merge check (merge/merge_verify.c) runs before and after
   a merge (docs/mt-numeric.md, "The probe"). Read strictly: core's JSON parser (duplicate keys,
   invalid UTF-8, depth and size limits), then exactly this shape

     {"sequences": [[id, id, ...], ...]}

   every error naming the file, the JSON pointer and the rule. The limits keep a probe a probe: a
   few thousand tokens run through the inference graph twice, not a data set. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "mt/numeric/probe.h"

struct probe_priv {
  int64_t *ids;           /* every sequence's ids, one after the other */
  const int64_t **seq;    /* into ids */
  size_t *len;
};

void mpk_mtn_probe_free(mpk_mtn_probe *p) {
  if (!p) return;
  struct probe_priv *v = p->priv_;
  if (v) {
    free(v->ids);
    free(v->seq);
    free(v->len);
    free(v);
  }
  free(p);
}

static int probe_fail(const char *file, const char *pointer, int code, const char *rule, mpk_error *err) {
  return mpk_fail(err, code, file, pointer, "%s", rule);
}

bool mpk_mtn_token_id(const json_t *value, int64_t *id) {
  int64_t v;
  if (!mpk_json_safe_integer(value, &v) || v < 0 || v > MPK_MTN_PROBE_MAX_ID) return false;
  *id = v;
  return true;
}

int mpk_mtn_probe_parse(const void *data, size_t len, const char *file, mpk_mtn_probe **out, mpk_error *err) {
  if (out) *out = NULL;
  if ((!data && len) || !file || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (!data) data = "";
  mpk_json_opts jo = {.max_bytes = MPK_MTN_PROBE_MAX_BYTES, .max_depth = 8};
  json_t *root = NULL;
  int rc = mpk_json_parse(data, len, &jo, file, &root, err);
  if (rc) return rc;
  mpk_mtn_probe *p = calloc(1, sizeof *p);
  struct probe_priv *v = calloc(1, sizeof *v);
  char ptr[64];
  if (!p || !v) {
    rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
    goto fail;
  }
  p->priv_ = v;
  if (!json_is_object(root)) {
    rc = probe_fail(file, "", MPK_EMALFORMED, "a probe is an object {\"sequences\": [[token ids...], ...]}", err);
    goto fail;
  }
  const char *key;
  json_t *val;
  json_object_foreach(root, key, val) {
    if (strcmp(key, "sequences") != 0) {
      char kp[300];
      snprintf(kp, sizeof kp, "/%.250s", key);
      rc = mpk_fail(err, MPK_EMALFORMED, file, kp, "unknown key \"%.200s\": a probe has only \"sequences\"", key);
      goto fail;
    }
  }
  const json_t *seqs = json_object_get(root, "sequences");
  if (!seqs) {
    rc = probe_fail(file, "", MPK_EMALFORMED, "missing \"sequences\" (an array of token id arrays)", err);
    goto fail;
  }
  size_t n = json_is_array(seqs) ? json_array_size(seqs) : 0;
  if (!json_is_array(seqs) || n == 0) {
    rc = probe_fail(file, "/sequences", MPK_EMALFORMED, "expected a non-empty array of token id arrays", err);
    goto fail;
  }
  if (n > MPK_MTN_PROBE_MAX_SEQUENCES) {
    rc = mpk_fail(err, MPK_ELIMIT, file, "/sequences", "%zu sequences: at most %d", n, MPK_MTN_PROBE_MAX_SEQUENCES);
    goto fail;
  }
  /* The shape and the counts first, so that the ids are one allocation of a bounded size. */
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *s = json_array_get(seqs, i);
    snprintf(ptr, sizeof ptr, "/sequences/%zu", i);
    if (!json_is_array(s)) {
      rc = probe_fail(file, ptr, MPK_EMALFORMED, "expected an array of token ids", err);
      goto fail;
    }
    size_t m = json_array_size(s);
    if (m < 2) {
      rc = mpk_fail(err, MPK_EMALFORMED, file, ptr,
                    "%zu token id%s: a sequence needs at least 2 (the first predicts the second)", m, m == 1 ? "" : "s");
      goto fail;
    }
    if (m > MPK_MTN_PROBE_MAX_LENGTH) {
      rc = mpk_fail(err, MPK_ELIMIT, file, ptr, "%zu token ids: a sequence has at most %d", m, MPK_MTN_PROBE_MAX_LENGTH);
      goto fail;
    }
    total += m;
    if (total > MPK_MTN_PROBE_MAX_TOKENS) {
      rc = mpk_fail(err, MPK_ELIMIT, file, ptr, "more than %d token ids in all (sequences 0..%zu)", MPK_MTN_PROBE_MAX_TOKENS,
                    i);
      goto fail;
    }
  }
  v->ids = malloc(total * sizeof *v->ids);
  v->seq = calloc(n, sizeof *v->seq);
  v->len = calloc(n, sizeof *v->len);
  if (!v->ids || !v->seq || !v->len) {
    rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
    goto fail;
  }
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *s = json_array_get(seqs, i);
    size_t m = json_array_size(s);
    v->seq[i] = v->ids + at;
    v->len[i] = m;
    for (size_t k = 0; k < m; k++) {
      int64_t id;
      if (!mpk_mtn_token_id(json_array_get(s, k), &id)) {
        snprintf(ptr, sizeof ptr, "/sequences/%zu/%zu", i, k);
        rc = mpk_fail(err, MPK_EMALFORMED, file, ptr, "expected a token id: an integer from 0 to %lld",
                      (long long)MPK_MTN_PROBE_MAX_ID);
        goto fail;
      }
      v->ids[at++] = id;
    }
  }
  p->tokens.seq = (const int64_t *const *)v->seq;
  p->tokens.len = v->len;
  p->tokens.n = n;
  json_decref(root);
  *out = p;
  return 0;
fail:
  json_decref(root);
  mpk_mtn_probe_free(p);
  if (!p) free(v);
  return rc;
}

int mpk_mtn_probe_load(const char *path, mpk_mtn_probe **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!path || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_mapped m;
  /* mpk_map_file: a regular file (a FIFO is refused, never waited on), at most the size given. */
  int rc = mpk_map_file(path, MPK_MTN_PROBE_MAX_BYTES, &m, err);
  if (rc) return rc;
  rc = mpk_mtn_probe_parse(m.data, m.size, path, out, err);
  mpk_unmap_file(&m);
  return rc;
}
