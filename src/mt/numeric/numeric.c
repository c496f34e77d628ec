/* mt/numeric: the numerical gates' shared parts (numeric.h; docs/mt-numeric.md): a variant's
   inference graph opened in ONNX Runtime with the gate's zero-copy views as its handoff
   initializers, the mean next-token cross-entropy over token sequences, and the reproducible random
   tokens of the parity gate. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "mt/mt.h"
#include "mt/numeric/numeric.h"

int mpk_mtn_cross_entropy(mpk_ort_session *s, const mpk_mtn_tokens *t, double *ce, int64_t *vocab, mpk_error *err) {
  if (!s || !t || !ce || !vocab) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_mtn_cross_entropy: a required argument is NULL");
  *ce = 0;
  *vocab = 0;
  if (!t->n) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "no token sequence to run");
  /* Each sequence alone; the mean is over every predicted position (a sum of per-sequence means
     weighted by their n - 1), accumulated in double. */
  double sum = 0;
  size_t predicted = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (t->len[i] < 2)
      return mpk_fail(err, MPK_EINVAL, NULL, NULL, "token sequence %zu has %zu id%s: at least 2 are needed (one prediction)",
                      i, t->len[i], t->len[i] == 1 ? "" : "s");
    mpk_ort_lm_result r;
    memset(&r, 0, sizeof r);
    int rc = mpk_ort_lm_cross_entropy(s, t->seq[i], t->len[i], &r, err);
    if (rc) return rc;
    if (i && r.vocab != *vocab)
      return mpk_fail(err, MPK_EMISMATCH, NULL, NULL, "token sequence %zu: the logits' vocabulary is %lld, sequence 0's was %lld",
                      i, (long long)r.vocab, (long long)*vocab);
    *vocab = r.vocab;
    sum += r.cross_entropy * (double)r.n_predicted;
    predicted += r.n_predicted;
  }
  *ce = sum / (double)predicted;
  return 0;
}

int mpk_mtn_open_inference(mpk_ort *ort, const char *inference_dir, const mpk_ort_initializer *inits, size_t n,
                           mpk_ort_session **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!ort || !inference_dir || !out || (n && !inits))
    return mpk_fail(err, MPK_EINVAL, inference_dir, NULL, "mpk_mtn_open_inference: a required argument is NULL");
  char *model = mpk_path_join(inference_dir, MPK_MT_GRAPH_FILENAME);
  if (!model) return mpk_fail(err, MPK_ENOMEM, inference_dir, NULL, "out of memory");
  mpk_ort_session_options so = MPK_ORT_SESSION_OPTIONS_INIT;
  so.initializers = inits;
  so.n_initializers = n;
  so.no_copies = 1;
  int rc = mpk_ort_session_open(ort, model, &so, out, err);
  free(model);
  return rc;
}

/* splitmix64 (Steele, Lea, Flood 2014; Vigna's reference code), one id per output. */
void mpk_mtn_random_tokens(uint64_t seed, int64_t vocab, int64_t *out, size_t n) {
  uint64_t state = seed;
  for (size_t i = 0; i < n; i++) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    out[i] = vocab > 0 ? (int64_t)(z % (uint64_t)vocab) : 0;
  }
}

void mpk_mtn_views_close(mpk_mtn_views *v) {
  if (!v) return;
  for (size_t i = 0; v->views && i < v->n; i++) mpk_tensor_view_close(&v->views[i]);
  free(v->views);
  free(v->inits);
  memset(v, 0, sizeof *v);
}

int mpk_mtn_gate_views(const char *dir, const mpk_mt_variant_gate *g, mpk_mtn_views *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!dir || !g || !out) return mpk_fail(err, MPK_EINVAL, dir, NULL, "mpk_mtn_gate_views: a required argument is NULL");
  const mpk_mt_gate_report *r = g->report;
  if (g->map_absent || !r || r->no_merged_weights) return 0; /* the graph's own weights */
  if (!r->ready) {
    /* The first refused tensor names itself (layer, file, rule). */
    if (r->n_problems) {
      if (err) *err = r->problems[0];
      return r->problems[0].code ? r->problems[0].code : MPK_EMISMATCH;
    }
    return mpk_fail(err, MPK_EMISMATCH, g->weight_handoff, NULL, "the load gate is not ready");
  }
  const mpk_mt_located *loc = mpk_mt_variant_gate_located(g);
  const mpk_mt_handoff *map = mpk_mt_variant_gate_map(g);
  int fd = -1, rc = mpk_mt_open_inference(dir, loc, &fd, err);
  if (rc) return rc;
  out->views = calloc(r->n_tensors ? r->n_tensors : 1, sizeof *out->views);
  out->inits = calloc(r->n_tensors ? r->n_tensors : 1, sizeof *out->inits);
  if (!out->views || !out->inits) {
    rc = mpk_fail(err, MPK_ENOMEM, loc->inference_dir, NULL, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < r->n_tensors; i++) {
    const mpk_mt_gate_tensor *t = &r->tensors[i];
    const mpk_mt_handoff_entry *e = &map->entries[t->entry];
    const char *name = e->inference_initializer_names[t->role];
    if (!name || !*name) {
      rc = mpk_fail(err, MPK_EMALFORMED, loc->map_file, NULL,
                    "entry \"%s\": no inferenceInitializerNames[\"%s\"]: the graph's initializer for this tensor is not named",
                    t->layer, mpk_mt_role_name(t->role));
      goto fail;
    }
    if ((rc = mpk_mt_tensor_open_at(fd, loc->inference_dir, e, t->role, &out->views[out->n], err))) goto fail;
    out->inits[out->n].name = name;
    out->inits[out->n].view = &out->views[out->n];
    out->n++;
  }
  if (fd >= 0) close(fd);
  return 0;
fail:
  if (fd >= 0) close(fd);
  mpk_mtn_views_close(out);
  return rc;
}
