/* The on-device LoRA merge: after the plan (merge_plan.c), prove each base unmerged (or take the
   adapter's frozen base), then compute every merged tensor into a staged file and replace them all,
   with their sidecars, as one transaction (core/txn.c). Rules: docs/mt-merge.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/endian.h"
#include "core/txn.h"
#include "mt/merge/merge.h"
#include "mt/merge/merge_kernel.h"
#include "mt/merge/merge_verify.h"

#define JOURNAL MPK_MT_MERGE_TXN

struct mpk_mt_merge_priv {
  mpk_arena *arena;
};

void mpk_mt_merge_report_free(mpk_mt_merge_report *r) {
  if (!r) return;
  mpk_arena_free(r->priv_->arena);
  free(r->priv_);
  free(r);
}

int mpk_mt_merge_recover(const char *inference_dir, mpk_mt_recovery *outcome, size_t *files, mpk_error *err) {
  mpk_txn_outcome o = {0};
  int rc = mpk_txn_recover(inference_dir, JOURNAL, &o, err);
  if (outcome) *outcome = rc || o.action == MPK_TXN_NOTHING ? MPK_MT_RECOVERY_NONE
                         : o.action == MPK_TXN_ROLLED_FORWARD ? MPK_MT_RECOVERY_ROLLED_FORWARD
                                                              : MPK_MT_RECOVERY_ROLLED_BACK;
  if (files) *files = rc ? 0 : o.action == MPK_TXN_ROLLED_FORWARD ? o.files : o.removed;
  return rc;
}

/* ---------------------------------------------------------------- the base: unmerged, or frozen */

/* Every file an item rewrites must still hold the shipped bytes: its SHA-256 equals the map's
   sha256[role]. Hashed together, in parallel, beneath the inference directory's handle. Items with
   a frozen base skip it. */
static int gate_bases(merge_plan *p, const json_t *record, unsigned workers, mpk_error *err) {
  size_t n = 0;
  mpk_mt_hash_job *jobs = calloc(p->n_items * MPK_MT_ROLE_COUNT, sizeof *jobs);
  const char **sha = calloc(p->n_items * MPK_MT_ROLE_COUNT, sizeof *sha);
  const char **layer = calloc(p->n_items * MPK_MT_ROLE_COUNT, sizeof *layer);
  int rc = 0;
  const char *inf = p->loc.inference_dir;
  if (!jobs || !sha || !layer) {
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < p->n_items; i++) {
    const merge_item *it = &p->items[i];
    if (it->frozen) continue;
    for (int r = 0; r < MPK_MT_ROLE_COUNT; r++) {
      const char *loc = it->e->external_data_location[r];
      if (!loc) continue;
      if (!it->e->sha256[r]) {
        rc = mpk_fail(err, MPK_ENOTFOUND, p->loc.map_file, NULL,
                      "entry \"%.200s\": the map has no sha256 for role \"%s\", so the shipped %s cannot be proven "
                      "unmerged: merge with an adapter that holds the frozen base weight",
                      it->e->training_base_layer_name, mpk_mt_role_name((mpk_mt_role)r), loc);
        goto out;
      }
      jobs[n].name = loc;
      sha[n] = it->e->sha256[r];
      layer[n] = it->e->training_base_layer_name;
      n++;
    }
  }
  if (n && mpk_mt_hash_at(p->inference_fd, inf, jobs, n, workers)) {
    rc = mpk_fail(err, MPK_ENOMEM, inf, NULL, "out of memory");
    goto out;
  }
  for (size_t k = 0; k < n && !rc; k++) {
    const mpk_mt_hash_job *j = &jobs[k];
    char file[1024];
    snprintf(file, sizeof file, "%s/%s", inf, j->name);
    if (j->code) {
      rc = mpk_fail(err, j->code, file, NULL, "entry \"%.200s\": the base cannot be read: %s", layer[k], j->err.message);
    } else if (strcmp(j->hex, sha[k]) != 0) {
      char side[65], why[700], side_name[1024];
      const char *rs = NULL, *rm = NULL;
      snprintf(side_name, sizeof side_name, "%s.sha256", j->name);
      if (mpk_mt_read_sidecar_at(p->inference_fd, inf, side_name, side, why, sizeof why) != 1) side[0] = '\0';
      bool recorded = mpk_mt_record_find(record, j->name, &rs, &rm) && strcmp(rm, j->hex) == 0;
      if (recorded || (side[0] && strcmp(side, j->hex) == 0))
        rc = mpk_fail(err, MPK_EMISMATCH, file, NULL,
                      "entry \"%.200s\": already merged: its bytes (sha256 %s) are %s, not the "
                      "shipped ones the map records (%s); merging again would add the delta twice. To merge "
                      "again, use an adapter that holds the frozen base weight (checkpointNames.weight)",
                      layer[k], j->hex,
                      recorded ? "the merged ones modelpkg's merge record lists" : "those its sidecar records", sha[k]);
      else
        rc = mpk_fail(err, MPK_EMISMATCH, file, NULL,
                      "entry \"%.200s\": the base's sha256 %s matches neither the map's shipped digest %s nor its "
                      "sidecar (%s): the file is damaged",
                      layer[k], j->hex, sha[k], side[0] ? side : "none");
    }
  }
out:
  free(jobs);
  free(sha);
  free(layer);
  return rc;
}

/* The merge record after this merge (docs/mt-merge.md): every tensor an earlier merge recorded,
   and each one this merge replaces with its post-merge digest and the shipped digest — the one
   an earlier record kept, else the map's sha256[role], else the manifest's, else null. Staged in
   the same transaction as the tensors: both are replaced, or neither. */
static int stage_record(const merge_plan *p, const json_t *old, char (*digests)[MPK_MT_ROLE_COUNT][65], mpk_txn *txn,
                        mpk_error *err) {
  json_t *root = json_object(), *ts = json_object();
  int rc = 0;
  if (!root || !ts || json_object_set_new(root, "tensors", ts)) {
    json_decref(root);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  bool oom = json_object_set_new(root, "format", json_string("modelpkg-merge-record")) ||
             json_object_set_new(root, "version", json_integer(1));
  const char *name;
  json_t *v;
  if (old) json_object_foreach(json_object_get(old, "tensors"), name, v) oom = oom || json_object_set(ts, name, v);
  char *inf_rel = mpk_mt_inference_rel(p->loc.variant);
  oom = oom || !inf_rel;
  for (size_t i = 0; !oom && i < p->n_items; i++) {
    const mpk_mt_handoff_entry *e = p->items[i].e;
    for (int r = 0; !oom && r < MPK_MT_ROLE_COUNT; r++) {
      const char *loc = e->external_data_location[r];
      if (!loc || !digests[i][r][0]) continue;
      const char *shipped = NULL, *prev_merged = NULL;
      if (!mpk_mt_record_find(old, loc, &shipped, &prev_merged) || !shipped) shipped = e->sha256[r];
      if (!shipped) {
        char *listed = *inf_rel ? mpk_path_join(inf_rel, loc) : strdup(loc);
        const mpk_mt_file *f = listed ? mpk_mt_manifest_file(p->loc.manifest, listed) : NULL;
        free(listed);
        if (f && f->sha256) shipped = f->sha256;
      }
      json_t *o = json_object();
      oom = !o || json_object_set_new(ts, loc, o) ||
            json_object_set_new(o, "shipped_sha256", shipped ? json_string(shipped) : json_null()) ||
            json_object_set_new(o, "sha256", json_string(digests[i][r]));
    }
  }
  free(inf_rel);
  char *doc = NULL;
  size_t len = 0;
  if (oom) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  else rc = mpk_json_write_document(root, true, &doc, &len, err);
  json_decref(root);
  if (!rc) rc = mpk_txn_stage_bytes(txn, MPK_MT_MERGE_RECORD, doc, len, err);
  mpk_free(doc);
  return rc;
}

/* ---------------------------------------------------------------- computing one entry */

/* The frozen base [out, in] from the adapter, in the on-disk dtype, layout and byte order
   (little-endian: the kernel reads its base as file bytes) (malloc'ed). */
static int frozen_base(const merge_item *it, mpk_mt_orientation o, mpk_mk_dtype dt, void **out, mpk_error *err) {
  float *w = NULL;
  int rc = mpk_safetensors_tensor_to_f32(it->frozen, &w, err);
  if (rc) return rc;
  size_t n = (size_t)it->out * (size_t)it->in, size = mpk_mk_dtype_size(dt);
  uint8_t *dst = malloc(n * size);
  if (!dst) {
    mpk_free(w);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  bool transpose = o == MPK_MT_ORIENT_ALREADY_TRANSPOSED;
  for (int64_t r = 0; r < it->out; r++)
    for (int64_t c = 0; c < it->in; c++) {
      float v = w[r * it->in + c];
      size_t k = transpose ? (size_t)(c * it->out + r) : (size_t)(r * it->in + c);
      if (dt == MPK_MK_F32) mpk_store_le_f32(dst + k * 4, v);
      else mpk_store_le16(dst + k * 2, dt == MPK_MK_F16 ? mpk_mk_f32_to_f16(v) : mpk_mk_f32_to_bf16(v));
    }
  mpk_free(w);
  *out = dst;
  return 0;
}

static int merge_dense(const merge_plan *p, const merge_item *it, unsigned workers, int fd, mpk_error *err) {
  mpk_mk_dtype dt;
  if (mpk_mk_dtype_from_name(it->dtype, &dt))
    return mpk_fail(err, MPK_EUNSUPPORTED, p->loc.map_file, NULL,
                    "entry \"%.200s\": a %s weight cannot be merged (float32, float16 or bfloat16)",
                    it->e->training_base_layer_name, it->dtype);
  mpk_tensor_view view = {0};
  void *frozen = NULL;
  int rc;
  mpk_merge_dense m = {
      .name = it->e->external_data_location[it->role],
      .dtype = dt,
      .rows = it->rows,
      .cols = it->cols,
      .transposed = p->orientation == MPK_MT_ORIENT_ALREADY_TRANSPOSED,
      .A = it->A,
      .B = it->B,
      .rank = it->rank,
      .scale = (float)it->scale,
  };
  if (it->frozen) {
    if ((rc = frozen_base(it, p->orientation, dt, &frozen, err))) return rc;
    m.base = frozen;
    m.base_len = (size_t)it->rows * (size_t)it->cols * mpk_mk_dtype_size(dt);
  } else {
    if ((rc = mpk_mt_tensor_open_file_at(p->inference_fd, p->loc.inference_dir, it->e, it->role, &view, err))) return rc;
    m.base = view.data;
    m.base_len = (size_t)view.nbytes;
  }
  rc = mpk_merge_dense_to_fd(&m, (int)workers, fd, err);
  mpk_tensor_view_close(&view);
  free(frozen);
  return rc;
}

/* A quantized entry: weight_quantized, scale and zero_point mapped, merged, requantized into
   three staged files. */
static int merge_quant(const merge_plan *p, const merge_item *it, unsigned workers, const int fds[MPK_MT_ROLE_COUNT],
                       mpk_error *err) {
  const mpk_mt_handoff_entry *e = it->e;
  const char *layer = e->training_base_layer_name;
  mpk_tensor_view v[MPK_MT_ROLE_COUNT] = {{0}};
  int rc = 0;
  for (int r = MPK_MT_ROLE_WEIGHT_QUANTIZED; r <= MPK_MT_ROLE_ZERO_POINT && !rc; r++)
    rc = mpk_mt_tensor_open_file_at(p->inference_fd, p->loc.inference_dir, e, (mpk_mt_role)r, &v[r], err);
  mpk_merge_quant m = {
      .name = e->external_data_location[MPK_MT_ROLE_WEIGHT_QUANTIZED],
      .rows = it->rows,
      .cols = it->cols,
      .transposed = p->orientation == MPK_MT_ORIENT_ALREADY_TRANSPOSED,
      .A = it->A,
      .B = it->B,
      .rank = it->rank,
      .scale = (float)it->scale,
  };
  if (!rc) {
    const mpk_tensor_view *q = &v[MPK_MT_ROLE_WEIGHT_QUANTIZED], *s = &v[MPK_MT_ROLE_SCALE], *z = &v[MPK_MT_ROLE_ZERO_POINT];
    if (mpk_mk_qtype_from_name(q->dtype, &m.q_type) || mpk_mk_dtype_from_name(s->dtype, &m.q_scale_dtype) ||
        m.q_scale_dtype == MPK_MK_BF16 || mpk_mk_qtype_from_name(z->dtype, &m.q_zero_type) || s->ndim > 2 || z->ndim > 2)
      rc = mpk_fail(err, MPK_EUNSUPPORTED, p->loc.map_file, NULL,
                    "entry \"%.200s\": quantized as %s with a %s scale and a %s zero point (%d-D, %d-D): supported are "
                    "uint8 or uint4 with a float32 or float16 scale of at most 2 dimensions",
                    layer, q->dtype, s->dtype, z->dtype, (int)s->ndim, (int)z->ndim);
    m.q = q->data;
    m.q_len = (size_t)q->nbytes;
    m.q_scale = s->data;
    m.q_scale_len = (size_t)s->nbytes;
    m.q_scale_ndim = (int)s->ndim;
    m.q_zero = z->data;
    m.q_zero_len = (size_t)z->nbytes;
    m.q_zero_ndim = (int)z->ndim;
    for (int d = 0; d < s->ndim && d < 2; d++) m.q_scale_shape[d] = s->shape[d];
    for (int d = 0; d < z->ndim && d < 2; d++) m.q_zero_shape[d] = z->shape[d];
  }
  if (!rc)
    rc = mpk_merge_quant_to_fds(&m, (int)workers, fds[MPK_MT_ROLE_WEIGHT_QUANTIZED], fds[MPK_MT_ROLE_SCALE],
                                fds[MPK_MT_ROLE_ZERO_POINT], err);
  for (int r = 0; r < MPK_MT_ROLE_COUNT; r++) mpk_tensor_view_close(&v[r]);
  return rc;
}

/* ---------------------------------------------------------------- the transaction */

/* Stage every file the entry rewrites (the weight, or the three quantized roles), compute into
   them, then stage each one's sidecar "<hex>\n". */
static int stage_entry(const merge_plan *p, size_t index, unsigned workers, mpk_txn *txn, merge_verify *v,
                       char digests[MPK_MT_ROLE_COUNT][65], mpk_error *err) {
  const merge_item *it = &p->items[index];
  const mpk_mt_handoff_entry *e = it->e;
  const char *layer = e->training_base_layer_name;
  if (e->quantized && it->frozen)
    return mpk_fail(err, MPK_EUNSUPPORTED, p->loc.map_file, NULL,
                    "entry \"%.200s\": merging from a frozen float base into a quantized weight is not supported: "
                    "use an adapter without the frozen weight (the shipped quantized tensors are the base)",
                    layer);
  int fds[MPK_MT_ROLE_COUNT] = {-1, -1, -1, -1};
  int rc = 0;
  for (int r = e->quantized ? MPK_MT_ROLE_WEIGHT_QUANTIZED : MPK_MT_ROLE_WEIGHT;
       r <= (e->quantized ? MPK_MT_ROLE_ZERO_POINT : MPK_MT_ROLE_WEIGHT) && !rc; r++) {
    if (!e->external_data_location[r])
      return mpk_fail(err, MPK_EMALFORMED, p->loc.map_file, NULL, "entry \"%.200s\": role \"%s\" has no externalDataLocation",
                      layer, mpk_mt_role_name((mpk_mt_role)r));
    rc = mpk_txn_stage(txn, e->external_data_location[r], &fds[r], err);
  }
  if (rc) return rc;
  rc = e->quantized ? merge_quant(p, it, workers, fds, err) : merge_dense(p, it, workers, fds[MPK_MT_ROLE_WEIGHT], err);
  for (int r = 0; r < MPK_MT_ROLE_COUNT && !rc; r++) {
    if (fds[r] < 0) continue;
    const char *name = e->external_data_location[r];
    char *hex = digests[r];
    /* The post-merge check reads the staged bytes where they are (a read-only mapping of the file). */
    if ((rc = mpk_merge_verify_keep(p, v, index, (mpk_mt_role)r, fds[r], err))) return rc;
    if (mpk_sha256_fd(fds[r], hex))
      return mpk_fail(err, MPK_EIO, name, NULL, "entry \"%.200s\": cannot hash the merged tensor: %s", layer,
                      strerror(errno));
    if ((rc = mpk_txn_stage_done(txn, name, hex, err))) return rc;
    char side[66], side_name[4096];
    snprintf(side, sizeof side, "%s\n", hex);
    snprintf(side_name, sizeof side_name, "%s.sha256", name);
    rc = mpk_txn_stage_bytes(txn, side_name, side, 65, err);
  }
  return rc;
}

/* A dry run with a probe: the merged tensors computed into unlinked temporary files outside the
   package (nothing is written there), for the post-merge check to read. */
static int compute_unstaged(const merge_plan *p, unsigned workers, merge_verify *v, mpk_error *err) {
  int rc = 0;
  for (size_t i = 0; i < p->n_items && !rc; i++) {
    const merge_item *it = &p->items[i];
    const mpk_mt_handoff_entry *e = it->e;
    if (e->quantized && it->frozen)
      return mpk_fail(err, MPK_EUNSUPPORTED, p->loc.map_file, NULL,
                      "entry \"%.200s\": merging from a frozen float base into a quantized weight is not supported: "
                      "use an adapter without the frozen weight (the shipped quantized tensors are the base)",
                      e->training_base_layer_name);
    int fds[MPK_MT_ROLE_COUNT] = {-1, -1, -1, -1};
    int lo = e->quantized ? MPK_MT_ROLE_WEIGHT_QUANTIZED : MPK_MT_ROLE_WEIGHT;
    int hi = e->quantized ? MPK_MT_ROLE_ZERO_POINT : MPK_MT_ROLE_WEIGHT;
    const char *tmp = getenv("TMPDIR");
    for (int r = lo; r <= hi && !rc; r++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/modelpkg-merge-probe.XXXXXX", tmp && *tmp ? tmp : "/tmp");
      if ((fds[r] = mpk_temp_open(path)) < 0)
        rc = mpk_fail(err, MPK_EIO, path, NULL, "the dry run's post-merge check cannot create a temporary file: %s",
                      strerror(errno));
      else unlink(path);
    }
    if (!rc)
      rc = e->quantized ? merge_quant(p, it, workers, fds, err) : merge_dense(p, it, workers, fds[MPK_MT_ROLE_WEIGHT], err);
    for (int r = lo; r <= hi && !rc; r++) rc = mpk_merge_verify_keep(p, v, i, (mpk_mt_role)r, fds[r], err);
    for (int r = 0; r < MPK_MT_ROLE_COUNT; r++)
      if (fds[r] >= 0) close(fds[r]);
  }
  return rc;
}

/* ---------------------------------------------------------------- the report */

static int build_report(const merge_plan *p, const mpk_mt_merge_options *o, char (*digests)[MPK_MT_ROLE_COUNT][65],
                        int written, const merge_verify *v, mpk_mt_merge_report **out, mpk_error *err) {
  mpk_mt_merge_report *r = calloc(1, sizeof *r);
  mpk_arena *a = mpk_arena_new();
  if (r) r->priv_ = calloc(1, sizeof *r->priv_);
  if (!r || !a || !r->priv_) goto oom;
  r->priv_->arena = a;
  mpk_mt_merge_entry *es = mpk_arena_array(a, p->n_items, sizeof *es);
  const char **notes = mpk_arena_array(a, p->notes.n_notes + 1, sizeof *notes);
  if (!es || !notes || !(r->variant = mpk_arena_strdup(a, p->loc.variant->id)) ||
      !(r->inference_dir = mpk_arena_strdup(a, p->loc.inference_dir)) || !(r->evidence = mpk_arena_strdup(a, p->evidence)))
    goto oom;
  for (size_t i = 0; i < p->n_items; i++) {
    const merge_item *it = &p->items[i];
    mpk_mt_merge_entry *e = &es[i];
    char base[400];
    if (it->frozen) snprintf(base, sizeof base, "the adapter's frozen weight \"%.300s\"", it->frozen->name);
    else snprintf(base, sizeof base, "the shipped %s (sha256 equals the map's)", it->e->external_data_location[it->role]);
    e->entry = it->e->index;
    e->layer = it->e->training_base_layer_name;
    e->adapter_a = it->a->name;
    e->adapter_b = it->b->name;
    e->out = it->out;
    e->in = it->in;
    e->rank = it->rank;
    e->dtype = it->dtype;
    e->rows = it->rows;
    e->cols = it->cols;
    e->quantized = it->e->quantized;
    e->observed = it->observed;
    e->scale = it->scale;
    if (!(e->layer = mpk_arena_strdup(a, e->layer)) || !(e->adapter_a = mpk_arena_strdup(a, e->adapter_a)) ||
        !(e->adapter_b = mpk_arena_strdup(a, e->adapter_b)) || !(e->dtype = mpk_arena_strdup(a, e->dtype)) ||
        !(e->scale_source = mpk_arena_strdup(a, it->scale_source)) || !(e->base_source = mpk_arena_strdup(a, base)))
      goto oom;
    if (digests) memcpy(e->digest, digests[i], sizeof e->digest);
  }
  for (size_t i = 0; i < p->notes.n_notes; i++)
    if (!(notes[i] = mpk_arena_strdup(a, p->notes.notes[i]))) goto oom;
  r->orientation = p->orientation;
  r->entries = es;
  r->n_entries = p->n_items;
  r->notes = notes;
  r->n_notes = p->notes.n_notes;
  r->written = written;
  if (v && v->active) {
    r->verified = 1;
    r->ce_before = v->ce_before;
    r->ce_after = v->ce_after;
    r->ratio = v->ratio;
    r->max_ratio = v->max_ratio;
    r->rolled_back = v->exceeded && !o->force; /* a dry run: it would be */
    if (!(r->verdict = mpk_arena_strdup(a, v->verdict))) goto oom;
  }
  *out = r;
  return 0;
oom:
  if (r && r->priv_) mpk_mt_merge_report_free(r);
  else {
    free(r);
    mpk_arena_free(a);
  }
  return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
}

int mpk_mt_merge(const char *dir, const mpk_mt_merge_options *given, mpk_mt_merge_report **out, mpk_error *err) {
  if (!dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  mpk_mt_merge_options opt;
  int rc = MPK_OPTIONS_READ_GROWN(mpk_mt_merge_options, progress, &opt, given, err);
  if (rc) return rc;
  /* An installed tree: the repo's stage lock first, as every writer of the repo takes it (an
     install replacing the tree, a restore, a remove wait for the merge or fail). */
  mpk_fetch_stage *lock = NULL;
  {
    mpk_mt_tree tree;
    if ((rc = mpk_mt_tree_open(dir, &tree, err))) return rc;
    bool installed = tree.installed;
    mpk_mt_tree_free(&tree);
    if (installed && (rc = mpk_mt_tree_lock(dir, 0, &lock, err))) return rc;
  }
  merge_plan p;
  rc = mpk_merge_plan(dir, &opt, &p, err);
  if (!rc) {
    rc = mpk_merge_execute(&p, &opt, out, err);
    mpk_merge_plan_free(&p);
  }
  mpk_fetch_stage_close(lock);
  return rc;
}

/* The caller's progress after `done` entries; its non-zero answer cancels before the commit. */
static int progress(const merge_plan *p, const mpk_mt_merge_options *opts, size_t done, mpk_error *err) {
  if (!opts->progress || !opts->progress(opts->progress_ctx, done, p->n_items)) return 0;
  return mpk_fail(err, MPK_ECANCELLED, p->loc.inference_dir, NULL, "merge cancelled after %zu of %zu entries: nothing "
                  "changed", done, p->n_items);
}

int mpk_merge_execute(merge_plan *pp, const mpk_mt_merge_options *opts, mpk_mt_merge_report **out, mpk_error *err) {
  merge_plan p = *pp; /* the caller frees the plan */
  int rc = 0;
  char (*digests)[MPK_MT_ROLE_COUNT][65] = calloc(p.n_items, sizeof *digests);
  mpk_txn *txn = NULL;
  json_t *record = NULL, *members = NULL;
  merge_verify v = {0};
  if (!digests) {
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    goto out;
  }
  /* The post-merge check's probe and ONNX Runtime, before anything is locked or computed: a bad
     probe or a missing runtime refuses the merge here. */
  if ((rc = mpk_merge_verify_prepare(&p, opts, &v, err))) goto out;
  /* The lock first, then the record and the bases: no other merge can change them between the
     proof and the write. */
  if (!opts->dry_run &&
      (rc = mpk_txn_begin_at(p.inference_fd, p.loc.inference_dir, JOURNAL, NULL, &txn, err)))
    goto out;
  if ((rc = mpk_mt_record_load(p.inference_fd, p.loc.inference_dir, &record, err))) goto out;
  if ((rc = mpk_mt_members_load(p.inference_fd, p.loc.inference_dir, &members, err))) goto out;
  if ((rc = gate_bases(&p, record, opts->workers, err))) goto out;
  /* Cross-entropy on the probe with the tensors in place now (the bases just gated). */
  if ((rc = mpk_merge_verify_before(&p, &v, err))) goto out;
  if (opts->dry_run) {
    if ((rc = progress(&p, opts, 0, err))) goto out;
    if (v.active && !(rc = compute_unstaged(&p, opts->workers, &v, err)))
      rc = mpk_merge_verify_after(&p, &v, opts->force, true, err);
    if (!rc) rc = build_report(&p, opts, NULL, 0, &v, out, err);
    if (!rc && v.active && v.exceeded && !opts->force) rc = mpk_fail(err, MPK_EMISMATCH, p.loc.inference_dir, NULL, "%s", v.verdict);
    goto out;
  }
  if ((rc = progress(&p, opts, 0, err))) goto out;
  for (size_t i = 0; i < p.n_items && !rc; i++) {
    rc = stage_entry(&p, i, opts->workers, txn, &v, digests[i], err);
    if (!rc) rc = progress(&p, opts, i + 1, err);
  }
  if (!rc) rc = stage_record(&p, record, digests, txn, err);
  if (!rc) rc = mpk_merge_stage_members(&p, opts, members, record, digests, txn, err);
  /* ... and with the merged tensors as staged, before the commit point: above the bound (and not
     forced), the transaction is aborted below — its temporaries removed, no target touched — and the
     report says why (MPK_EMISMATCH with *out set). */
  if (!rc) rc = mpk_merge_verify_after(&p, &v, opts->force, false, err);
  if (!rc && v.active && v.exceeded && !opts->force) {
    if (!(rc = build_report(&p, opts, NULL, 0, &v, out, err)))
      rc = mpk_fail(err, MPK_EMISMATCH, p.loc.inference_dir, NULL, "%s", v.verdict);
    goto out;
  }
  if (!rc) {
    rc = mpk_txn_commit(txn, err); /* consumes txn */
    txn = NULL;
    mpk_txn_state st;
    mpk_error ierr;
    if (rc && err && mpk_txn_inspect_at(p.inference_fd, p.loc.inference_dir, JOURNAL, &st, &ierr) == 0 && st.journal) {
      /* Past the commit point: the merge will happen; say so rather than "nothing changed". */
      char why[sizeof err->message];
      snprintf(why, sizeof why, "%s", err->message);
      mpk_fail(err, rc, err->file, NULL, "the merge committed but could not finish (%.400s): the next merge or load "
               "(modelpkg mt tensors) completes it", why);
    }
  }
  if (!rc) {
    /* The adapter copies and kept tensors the new membership no longer names (a superseded adapter). */
    json_t *now = NULL;
    mpk_error ignored;
    if (mpk_mt_members_load(p.inference_fd, p.loc.inference_dir, &now, &ignored) == 0) mpk_mt_members_sweep(p.inference_fd, now);
    json_decref(now);
  }
  if (!rc) rc = build_report(&p, opts, digests, 1, &v, out, err);
out:
  mpk_txn_abort(txn);
  mpk_merge_verify_free(&v);
  json_decref(record);
  json_decref(members);
  free(digests);
  return rc;
}
