/* The merge's post-merge check (docs/mt-numeric.md, "The post-merge check"): the reference runtime
   accepts a merge whose cross-entropy on a probe is at most 2 x the pre-merge one. modelpkg measures
   both inside the merge's transaction: before, the inference graph with the current handoff
   tensors; after, the same graph with the merged tensors as the transaction staged them (mapped from
   the staged files, before the commit point). Both are handed to ONNX Runtime as initializers
   without a copy (numeric.h: mpk_mtn_open_inference). merge.c then commits, or aborts the
   transaction — the package is left byte-identical. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mt/merge/merge_verify.h"
#include "mt/tensor/tensor.h"

void mpk_merge_verify_free(merge_verify *v) {
  if (!v) return;
  if (v->staged)
    for (size_t i = 0; i < v->n_items * MPK_MT_ROLE_COUNT; i++) mpk_tensor_view_close(&v->staged[i]);
  free(v->staged);
  mpk_mtn_probe_free(v->probe);
  if (v->own_ort) mpk_ort_close(v->ort);
  memset(v, 0, sizeof *v);
}

int mpk_merge_verify_prepare(const merge_plan *p, const mpk_mt_merge_options *o, merge_verify *v, mpk_error *err) {
  memset(v, 0, sizeof *v);
  if (!o->probe) {
    if (o->ort || o->max_ratio != 0 || o->force)
      return mpk_fail(err, MPK_EINVAL, NULL, NULL,
                      "mpk_mt_merge: ort, max_ratio and force belong to the post-merge check: give a probe");
    return 0;
  }
  v->max_ratio = o->max_ratio == 0 ? MPK_MT_MERGE_DEFAULT_MAX_RATIO : o->max_ratio;
  if (!isfinite(v->max_ratio) || v->max_ratio <= 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_mt_merge: max_ratio %g is not a positive finite number", o->max_ratio);
  v->active = true;
  v->n_items = p->n_items;
  int rc = mpk_mtn_probe_load(o->probe, &v->probe, err);
  if (!rc && !(v->staged = calloc(p->n_items * MPK_MT_ROLE_COUNT + 1, sizeof *v->staged)))
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (!rc && o->ort) v->ort = o->ort;
  else if (!rc) {
    mpk_error sub;
    mpk_error_clear(&sub);
    rc = mpk_ort_open(NULL, &v->ort, &sub);
    if (rc)
      rc = mpk_fail(err, rc, sub.file[0] ? sub.file : NULL, NULL, "the post-merge check (a probe) needs ONNX Runtime: %s",
                    sub.message);
    else v->own_ort = true;
  }
  if (rc) mpk_merge_verify_free(v);
  return rc;
}

/* The initializers of one session: each item's roles that have a file, the kept (merged) view when
   `use_staged` and one was kept, else the current tensor mapped now (into `cur`, closed by the
   caller). */
static int gather(const merge_plan *p, merge_verify *v, bool use_staged, mpk_tensor_view *cur, mpk_ort_initializer *inits,
                  size_t *n, mpk_error *err) {
  *n = 0;
  for (size_t i = 0; i < p->n_items; i++) {
    const mpk_mt_handoff_entry *e = p->items[i].e;
    for (int r = 0; r < MPK_MT_ROLE_COUNT; r++) {
      if (!e->external_data_location[r]) continue;
      const char *name = e->inference_initializer_names[r];
      if (!name)
        return mpk_fail(err, MPK_EUNSUPPORTED, p->loc.map_file, NULL,
                        "entry \"%.200s\": role \"%s\" has no inferenceInitializerNames: the post-merge check cannot "
                        "hand its tensor to ONNX Runtime",
                        e->training_base_layer_name, mpk_mt_role_name((mpk_mt_role)r));
      mpk_tensor_view *view = &v->staged[i * MPK_MT_ROLE_COUNT + (size_t)r];
      if (!use_staged || !view->priv_) {
        view = &cur[*n];
        int rc = mpk_mt_tensor_open_at(p->inference_fd, p->loc.inference_dir, e, (mpk_mt_role)r, view, err);
        if (rc) return rc;
      }
      inits[*n].name = name;
      inits[*n].view = view;
      (*n)++;
    }
  }
  return 0;
}

/* Run the probe through the graph with the given tensors: the mean cross-entropy. */
static int run_probe(const merge_plan *p, merge_verify *v, bool use_staged, const char *when, double *ce,
                     mpk_error *err) {
  size_t cap = p->n_items * MPK_MT_ROLE_COUNT + 1, n = 0;
  mpk_tensor_view *cur = calloc(cap, sizeof *cur);
  mpk_ort_initializer *inits = calloc(cap, sizeof *inits);
  mpk_ort_session *s = NULL;
  int rc = 0;
  if (!cur || !inits) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (!rc) rc = gather(p, v, use_staged, cur, inits, &n, err);
  mpk_error sub;
  mpk_error_clear(&sub);
  if (!rc && (rc = mpk_mtn_open_inference(v->ort, p->loc.inference_dir, inits, n, &s, &sub)) == 0)
    rc = mpk_mtn_cross_entropy(s, &v->probe->tokens, ce, &v->vocab, &sub);
  if (sub.code)
    rc = mpk_fail(err, rc, sub.file[0] ? sub.file : NULL, sub.pointer[0] ? sub.pointer : NULL,
                  "the post-merge check (%s the merge): %s", when, sub.message);
  mpk_ort_session_close(s); /* before the views it reads are unmapped */
  if (cur)
    for (size_t k = 0; k < cap; k++) mpk_tensor_view_close(&cur[k]);
  free(cur);
  free(inits);
  return rc;
}

int mpk_merge_verify_before(const merge_plan *p, merge_verify *v, mpk_error *err) {
  if (!v->active) return 0;
  return run_probe(p, v, false, "before", &v->ce_before, err);
}

int mpk_merge_verify_keep(const merge_plan *p, merge_verify *v, size_t i, mpk_mt_role role, int fd, mpk_error *err) {
  if (!v->active) return 0;
  const mpk_mt_handoff_entry *e = p->items[i].e;
  const char *layer = e->training_base_layer_name, *loc = e->external_data_location[role];
  const char *dtype;
  const int64_t *shape;
  size_t ndim;
  uint64_t numel = 0, nbytes = 0;
  int rc = mpk_mt_handoff_role_layout(e, role, &dtype, &shape, &ndim, err);
  if (!rc && ndim > MPK_TENSOR_MAX_DIMS)
    rc = mpk_fail(err, MPK_ELIMIT, loc, NULL, "entry \"%.150s\": %zu dimensions", layer, ndim);
  if (!rc) rc = mpk_tensor_nbytes(dtype, shape, ndim, &numel, &nbytes, err);
  if (rc) return rc;
  struct stat st;
  int dup_fd = dup(fd);
  if (dup_fd < 0 || fstat(dup_fd, &st) != 0) {
    if (dup_fd >= 0) close(dup_fd);
    return mpk_fail(err, MPK_EIO, loc, NULL, "entry \"%.150s\": the staged merged tensor cannot be read back", layer);
  }
  if ((uint64_t)st.st_size != nbytes) {
    close(dup_fd);
    return mpk_fail(err, MPK_EMISMATCH, loc, NULL,
                    "entry \"%.150s\" role \"%s\": the staged merged tensor is %lld bytes, its layout %llu",
                    layer, mpk_mt_role_name(role), (long long)st.st_size, (unsigned long long)nbytes);
  }
  mpk_mapped *m = calloc(1, sizeof *m);
  if (!m) {
    close(dup_fd);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  if ((rc = mpk_map_fd(dup_fd, loc, (size_t)nbytes, m, err))) { /* closes dup_fd */
    free(m);
    return rc;
  }
  mpk_tensor_view *view = &v->staged[i * MPK_MT_ROLE_COUNT + (size_t)role];
  mpk_tensor_view_close(view);
  mpk_tensor_view_fill(view, m, dtype, shape, ndim, numel);
  return mpk_tensor_view_to_host(view, loc, err); /* ONNX Runtime reads host order */
}

int mpk_merge_verify_after(const merge_plan *p, merge_verify *v, bool force, bool dry_run, mpk_error *err) {
  if (!v->active) return 0;
  int rc = run_probe(p, v, true, "after", &v->ce_after, err);
  if (rc) return rc;
  double b = v->ce_before, a = v->ce_after;
  v->ratio = b > 0 ? a / b : a == 0 ? 1.0 : INFINITY;
  /* A cross-entropy that is not a number (weights that overflowed) never passes the bound. */
  v->exceeded = !isfinite(a) || !isfinite(b) || !(v->ratio <= v->max_ratio);
  char head[300];
  if (!isfinite(a) || !isfinite(b))
    snprintf(head, sizeof head, "post-merge cross-entropy %.4g nats against the pre-merge %.4g (bound %g): not a finite "
             "number", a, b, v->max_ratio);
  else
    snprintf(head, sizeof head, "post-merge cross-entropy %.4g nats is %.3g times the pre-merge %.4g (bound %g)", a,
             v->ratio, b, v->max_ratio);
  const char *tail = !v->exceeded ? (dry_run ? "within the bound (dry run: nothing written)" : "within the bound: committed")
                     : dry_run    ? (force ? "above the bound; force would commit it (dry run: nothing written)"
                                           : "above the bound: it would be rolled back (dry run: nothing written)")
                     : force      ? "above the bound: committed because of --force"
                                  : "rolled back, nothing was changed; --force commits it";
  snprintf(v->verdict, sizeof v->verdict, "%s: %s", head, tail);
  return 0;
}
