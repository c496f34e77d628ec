/* The train/inference parity gate (spec 001 verify_train_inference_parity; docs/mt-numeric.md):
   the same token ids through the variant's training-side evaluation graph and its inference graph
   (the handoff tensors handed over from the load gate's zero-copy views), the mean next-token
   cross-entropy of each, and the verdict |difference| <= max_diff. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "core/libm_dl.h"
#include "mt/mt.h"
#include "mt/numeric/numeric.h"
#include "mt/numeric/probe.h"

/* How close to ln(V) a cross-entropy must be to be called "at the uniform floor". */
#define FLOOR_BAND 0.05
#define DEFAULT_LENGTH 64

struct mpk_mt_parity_priv {
  char *variant, *train_graph, *inference_graph;
  char verdict[512];
};

void mpk_mt_parity_report_free(mpk_mt_parity_report *r) {
  if (!r) return;
  if (r->priv_) {
    free(r->priv_->variant);
    free(r->priv_->train_graph);
    free(r->priv_->inference_graph);
    free(r->priv_);
  }
  free(r);
}

/* The graph is a readable regular file (never a FIFO ONNX Runtime would wait on), beneath `root`
   when given. */
static int check_graph_file(const char *root, const char *rel, mpk_error *err) {
  int fd = -1;
  int rc = mpk_open_read(root, rel, 0, &fd, NULL, err);
  if (fd >= 0) close(fd);
  return rc;
}

/* ONNX Runtime's refusal of an input that is not a language model's, said for the training side. */
static int train_refusal(mpk_error *err, const char *graph, int rc) {
  if (rc != MPK_EUNSUPPORTED || !err) return rc;
  char was[sizeof err->message];
  snprintf(was, sizeof was, "%s", err->message);
  return mpk_fail(err, rc, graph, NULL,
                  "the training-side graph is not a language model's evaluation graph (%s): give one that takes "
                  "input_ids and gives logits with --train-graph (an ONNX Runtime training eval model takes its "
                  "parameters and labels as inputs)",
                  was);
}

static int run_ce(mpk_ort_session *s, const int64_t *ids, size_t n, double *ce, int64_t *vocab, mpk_error *err) {
  const int64_t *seq[1] = {ids};
  size_t len[1] = {n};
  mpk_mtn_tokens t = {seq, len, 1};
  return mpk_mtn_cross_entropy(s, &t, ce, vocab, err);
}

int mpk_mt_parity(const char *dir, const mpk_mt_parity_options *opts, mpk_mt_parity_report **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!dir || !opts || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_mt_parity: a required argument is NULL");
  return mpk_mtn_parity_with(dir, NULL, opts, out, err);
}

int mpk_mtn_parity_with(const char *dir, mpk_mt_manifest *given, const mpk_mt_parity_options *opts,
                        mpk_mt_parity_report **out, mpk_error *err) {
  *out = NULL;
  mpk_mt_parity_options o;
  int rc = MPK_OPTIONS_READ(mpk_mt_parity_options, &o, opts, err);
  if (rc) {
    mpk_mt_manifest_free(given);
    return rc;
  }
  if (!o.ort)
    rc = mpk_fail(err, MPK_EINVAL, dir, NULL, "mpk_mt_parity: no ONNX Runtime (opts->ort is NULL: mpk_ort_open() one)");
  else if (o.tokens && o.n_tokens < 2)
    rc = mpk_fail(err, MPK_EINVAL, dir, NULL, "the parity gate needs at least 2 token ids (one prediction); %zu given",
                  o.n_tokens);
  else if (!o.tokens && o.length == 1)
    rc = mpk_fail(err, MPK_EINVAL, dir, NULL, "the parity gate needs a length of at least 2 token ids");
  else if (o.max_diff < 0 || isnan(o.max_diff))
    rc = mpk_fail(err, MPK_EINVAL, dir, NULL, "max_diff must be a number >= 0 (nats)");
  if (rc) {
    mpk_mt_manifest_free(given);
    return rc;
  }
  double max_diff = o.max_diff > 0 ? o.max_diff : MPK_MT_PARITY_MAX_DIFF;

  mpk_mt_parity_report *r = calloc(1, sizeof *r);
  struct mpk_mt_parity_priv *p = r ? calloc(1, sizeof *p) : NULL;
  if (!p) {
    free(r);
    mpk_mt_manifest_free(given);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  r->priv_ = p;
  mpk_mt_variant_gate *g = NULL;
  mpk_mtn_views views = {0};
  mpk_ort_session *inf = NULL, *train = NULL;
  int64_t *ids = NULL;

  /* The variant and its merged weights, verified by the load gate (which holds the directory
     against merges until it is freed: the session runs exactly the bytes it verified). */
  rc = mpk_mt_variant_gate_open_with(dir, given, o.variant, NULL, &g, err); /* takes `given` */
  if (rc) goto fail;
  const mpk_mt_located *loc = mpk_mt_variant_gate_located(g);
  if (!(p->variant = strdup(g->variant))) goto oom;
  if (!loc->inference_dir) {
    rc = mpk_fail(err, MPK_EMALFORMED, loc->manifest_file, NULL, "variant \"%s\" has no inference directory", g->variant);
    goto fail;
  }
  if (!(p->inference_graph = mpk_path_join(loc->inference_dir, MPK_MT_GRAPH_FILENAME))) goto oom;
  {
    const char *rel = loc->inference_dir + strlen(dir);
    while (*rel == '/') rel++;
    char *graph_rel = mpk_path_join(rel, MPK_MT_GRAPH_FILENAME);
    if (!graph_rel) goto oom;
    rc = check_graph_file(dir, graph_rel, err);
    free(graph_rel);
    if (rc) goto fail;
  }
  if (o.train_graph) {
    if (!(p->train_graph = strdup(o.train_graph))) goto oom;
    if ((rc = check_graph_file(NULL, o.train_graph, err))) goto fail;
  } else {
    if (!loc->train_dir) {
      rc = mpk_fail(err, MPK_ENOTFOUND, loc->manifest_file, NULL,
                    "variant \"%s\" has no train path: give the training-side graph with --train-graph", g->variant);
      goto fail;
    }
    if (!(p->train_graph = mpk_path_join(loc->train_dir, MPK_MT_PARITY_TRAIN_GRAPH))) goto oom;
    const char *rel = loc->train_dir + strlen(dir);
    while (*rel == '/') rel++;
    char *graph_rel = mpk_path_join(rel, MPK_MT_PARITY_TRAIN_GRAPH);
    if (!graph_rel) goto oom;
    rc = check_graph_file(dir, graph_rel, err);
    free(graph_rel);
    if (rc) {
      if (rc == MPK_ENOTFOUND && err)
        rc = mpk_fail(err, rc, p->train_graph, NULL,
                      "no training-side evaluation graph here: give the graph to compare with --train-graph");
      goto fail;
    }
  }

  if ((rc = mpk_mtn_gate_views(dir, g, &views, err))) goto fail;
  if ((rc = mpk_mtn_open_inference(o.ort, loc->inference_dir, views.inits, views.n, &inf, err))) goto fail;
  if ((rc = mpk_ort_session_open(o.ort, p->train_graph, NULL, &train, err))) goto fail;

  /* The tokens: given, or drawn from the seed over the inference graph's vocabulary (read from
     its logits on a two-token run). */
  const int64_t *tok = o.tokens;
  size_t n = o.n_tokens;
  int64_t vocab = 0, vocab_train = 0;
  double ce_inf = 0, ce_train = 0;
  if (!tok) {
    n = o.length ? o.length : DEFAULT_LENGTH;
    int64_t two[2] = {0, 0};
    if ((rc = run_ce(inf, two, 2, &ce_inf, &vocab, err))) goto fail;
    if (!(ids = malloc(n * sizeof *ids))) goto oom;
    mpk_mtn_random_tokens(o.seed, vocab, ids, n);
    tok = ids;
  }
  if ((rc = run_ce(inf, tok, n, &ce_inf, &vocab, err))) goto fail; /* ort's errors name the model */
  if ((rc = mpk_libm_load(err))) goto fail; /* log, below */
  if ((rc = run_ce(train, tok, n, &ce_train, &vocab_train, err))) {
    rc = train_refusal(err, p->train_graph, rc);
    goto fail;
  }
  if (vocab_train != vocab) {
    rc = mpk_fail(err, MPK_EMISMATCH, p->train_graph, NULL,
                  "the training-side graph's logits have a vocabulary of %lld, the inference graph's (%s) %lld: "
                  "they are not the same model",
                  (long long)vocab_train, p->inference_graph, (long long)vocab);
    goto fail;
  }

  r->variant = p->variant;
  r->train_graph = p->train_graph;
  r->inference_graph = p->inference_graph;
  r->n_tokens = n;
  r->vocab = vocab;
  r->ce_train = ce_train;
  r->ce_inference = ce_inf;
  r->diff = fabs(ce_train - ce_inf);
  r->uniform_floor = mpk_log((double)vocab);
  r->max_diff = max_diff;
  r->pass = r->diff <= max_diff;
  size_t len = (size_t)snprintf(p->verdict, sizeof p->verdict,
                                "the training-side and inference graphs' cross-entropies differ by %.4g nats %s %g: %s",
                                r->diff, r->pass ? "≤" : ">", max_diff, r->pass ? "pass" : "fail");
  int inf_floor = fabs(ce_inf - r->uniform_floor) <= FLOOR_BAND, train_floor = fabs(ce_train - r->uniform_floor) <= FLOOR_BAND;
  if ((inf_floor || train_floor) && !(inf_floor && train_floor) && len < sizeof p->verdict)
    snprintf(p->verdict + len, sizeof p->verdict - len,
             "; the %s graph sits at the uniform floor ln(%lld)=%.4f (a model that knows nothing: its weights look lost)",
             inf_floor ? "inference" : "training-side", (long long)vocab, r->uniform_floor);
  r->verdict = p->verdict;
  mpk_ort_session_close(train);
  mpk_ort_session_close(inf);
  mpk_mtn_views_close(&views);
  mpk_mt_variant_gate_free(g);
  free(ids);
  *out = r;
  return 0;
oom:
  rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
fail:
  mpk_ort_session_close(train);
  mpk_ort_session_close(inf);
  mpk_mtn_views_close(&views);
  mpk_mt_variant_gate_free(g);
  free(ids);
  mpk_mt_parity_report_free(r);
  return rc;
}

int mpk_mt_parity_tokens_load(const char *path, int64_t **ids, size_t *n, mpk_error *err) {
  if (ids) *ids = NULL;
  if (n) *n = 0;
  if (!path || !ids || !n) return mpk_fail(err, MPK_EINVAL, path, NULL, "mpk_mt_parity_tokens_load: a required argument is NULL");
  json_t *root = NULL;
  int rc = mpk_json_load_file(path, NULL, &root, err);
  if (rc) return rc;
  const char *key;
  json_t *v, *tokens = NULL;
  if (!json_is_object(root)) {
    rc = mpk_fail(err, MPK_EMALFORMED, path, "", "must be an object {\"tokens\": [id, ...]}");
    goto out;
  }
  json_object_foreach(root, key, v) {
    if (strcmp(key, "tokens") != 0) {
      char ptr[300];
      snprintf(ptr, sizeof ptr, "/%.280s", key);
      rc = mpk_fail(err, MPK_EMALFORMED, path, ptr, "unknown key: TOKENS.json holds only \"tokens\"");
      goto out;
    }
    tokens = v;
  }
  if (!tokens) {
    rc = mpk_fail(err, MPK_EMALFORMED, path, "/tokens", "missing: the token ids, an array of integers");
    goto out;
  }
  size_t count = json_is_array(tokens) ? json_array_size(tokens) : 0;
  if (!json_is_array(tokens) || count < 2) {
    rc = mpk_fail(err, MPK_EMALFORMED, path, "/tokens", "must be an array of at least 2 token ids (one prediction)%s",
                  json_is_array(tokens) ? "" : "; it is not an array");
    goto out;
  }
  if (count > MPK_MT_PARITY_MAX_TOKENS) {
    rc = mpk_fail(err, MPK_ELIMIT, path, "/tokens", "%zu token ids: at most %d", count, MPK_MT_PARITY_MAX_TOKENS);
    goto out;
  }
  int64_t *out = malloc(count * sizeof *out);
  if (!out) {
    rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < count; i++) {
    if (!mpk_mtn_token_id(json_array_get(tokens, i), &out[i])) { /* the probe's rule */
      char ptr[48];
      snprintf(ptr, sizeof ptr, "/tokens/%zu", i);
      free(out);
      rc = mpk_fail(err, MPK_EMALFORMED, path, ptr, "a token id must be an integer from 0 to %lld",
                    (long long)MPK_MTN_PROBE_MAX_ID);
      goto out;
    }
  }
  *ids = out;
  *n = count;
out:
  json_decref(root);
  return rc;
}
