/* Where a variant's files are: its feature paths, its weight handoff map and its inference
   directory. One definition for every command that works on a variant (check, tensors, merge). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mt/mt.h"

const char *mpk_mt_variant_path(const mpk_mt_variant *v, const char *key) {
  for (size_t i = 0; i < v->n_paths; i++)
    if (strcmp(v->paths[i].key, key) == 0) return v->paths[i].value;
  return NULL;
}

char *mpk_mt_inference_rel(const mpk_mt_variant *v) {
  const char *inf = mpk_mt_variant_path(v, "inference");
  if (inf) return strdup(inf);
  if (!v->weight_handoff) return NULL;
  /* The files live beside the map when the variant names no inference path (as the reference). */
  const char *slash = strrchr(v->weight_handoff, '/');
  return strndup(v->weight_handoff, slash ? (size_t)(slash - v->weight_handoff) : 0);
}

void mpk_mt_located_free(mpk_mt_located *l) {
  if (!l) return;
  mpk_mt_tree_free(&l->tree);
  mpk_mt_manifest_free(l->manifest);
  free(l->manifest_file);
  free(l->map_file);
  free(l->inference_dir);
  free(l->train_dir);
  free(l->map_rel);
  free(l->inference_rel);
  memset(l, 0, sizeof *l);
}

int mpk_mt_locate(const char *dir, const char *variant, mpk_mt_located *out, mpk_error *err) {
  return mpk_mt_locate_with(dir, NULL, variant, out, err);
}

int mpk_mt_locate_with(const char *dir, mpk_mt_manifest *given, const char *variant, mpk_mt_located *out,
                       mpk_error *err) {
  memset(out, 0, sizeof *out);
  int rc = mpk_mt_tree_open(dir, &out->tree, err);
  if (rc) {
    mpk_mt_manifest_free(given);
    return rc;
  }
  out->manifest = given;
  if (!(out->manifest_file = mpk_path_join(dir, MPK_MT_MANIFEST_FILENAME))) {
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    goto fail;
  }
  if (!given && (rc = mpk_mt_manifest_load(out->manifest_file, &out->manifest, err))) goto fail;
  if ((rc = mpk_mt_tree_variant(&out->tree, out->manifest, variant, out->manifest_file, &out->variant, err))) goto fail;
  const mpk_mt_variant *v = out->variant;
  const char *mf = out->manifest_file, *why = NULL;
  /* Package paths are where the manifest says; an installed tree has them flattened. */
  if (v->weight_handoff) {
    if (!mpk_path_is_confined(v->weight_handoff, &why)) {
      rc = mpk_fail(err, MPK_EMALFORMED, mf, NULL, "variant \"%s\": weightHandoff \"%s\" %s", v->id, v->weight_handoff, why);
      goto fail;
    }
    if (!(out->map_rel = mpk_mt_tree_path(&out->tree, v, v->weight_handoff)) ||
        !(out->map_file = mpk_path_join(dir, out->map_rel)))
      goto oom;
  }
  char *inf = mpk_mt_inference_rel(v);
  if (inf) {
    out->inference_rel = mpk_mt_tree_path(&out->tree, v, inf);
    free(inf);
    if (!out->inference_rel) goto oom;
    if (!(out->inference_dir = mpk_path_join(dir, out->inference_rel))) goto oom;
  }
  const char *train = mpk_mt_variant_path(v, "train");
  if (train) {
    char *rel = mpk_mt_tree_path(&out->tree, v, train);
    out->train_dir = rel ? mpk_path_join(dir, rel) : NULL;
    free(rel);
    if (!out->train_dir) goto oom;
  }
  return 0;
oom:
  rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
fail:
  mpk_mt_located_free(out);
  return rc;
}

bool mpk_mt_is_device_file(const char *base) {
  static const char suffix[] = "." MPK_MT_MERGE_TXN "-txn."; /* core/txn.c: <final>.merge-txn.XXXXXX */
  if (strcmp(base, MPK_MT_MERGE_JOURNAL) == 0 || strcmp(base, MPK_MT_MERGE_JOURNAL ".tmp") == 0 ||
      strcmp(base, MPK_MT_MERGE_RECORD) == 0)
    return true;
  if (strcmp(base, MPK_MT_REFERENCE_INSTALL_RECORD) == 0) return true; /* mt install: the reference's record */
  static const char stamp_tmp[] = MPK_MT_STAMP_FILE ".tmp.";
  if (strcmp(base, MPK_MT_STAMP_FILE) == 0 ||
      (strncmp(base, stamp_tmp, sizeof stamp_tmp - 1) == 0 && mpk_is_temp_suffix(base + sizeof stamp_tmp - 1)))
    return true;
  if (strcmp(base, MPK_MT_MEMBERS) == 0) return true;
  if (strncmp(base, MPK_MT_ADAPTER_PREFIX, sizeof MPK_MT_ADAPTER_PREFIX - 1) == 0) return true;
  size_t bl = strlen(base), kl = sizeof MPK_MT_KEPT_SUFFIX - 1;
  if (bl > kl && strcmp(base + bl - kl, MPK_MT_KEPT_SUFFIX) == 0) return true;
  const char *at = strstr(base, suffix);
  return at && strlen(at) == sizeof suffix - 1 + 6;
}

const char *mpk_mt_listed_txn_file(const mpk_mt_manifest *m, const char *inference_rel) {
  size_t n = strlen(inference_rel);
  for (size_t i = 0; m && i < m->n_files; i++) {
    const char *p = m->files[i].path;
    if (n && (strncmp(p, inference_rel, n) != 0 || p[n] != '/')) continue;
    const char *base = p + (n ? n + 1 : 0);
    if (!strchr(base, '/') && mpk_mt_is_device_file(base)) return p;
  }
  return NULL;
}

int mpk_mt_open_inference(const char *dir, const mpk_mt_located *loc, int *fd, mpk_error *err) {
  *fd = -1;
  char *pkg_inf = mpk_mt_inference_rel(loc->variant); /* the manifest's paths are package paths */
  const char *inf = loc->inference_rel;
  if (!pkg_inf || !inf) {
    free(pkg_inf);
    return 0;
  }
  int rc = 0;
  const char *listed = mpk_mt_listed_txn_file(loc->manifest, pkg_inf);
  if (listed) {
    rc = mpk_fail(err, MPK_EMALFORMED, loc->manifest_file, NULL,
                  "the manifest lists \"%s\", a file only modelpkg writes on the device (the merge transaction's "
                  "journal, the merge record or the load gate's verification stamp): a package that ships one is "
                  "refused; it is never replayed or trusted",
                  listed);
    goto out;
  }
  int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) {
    rc = mpk_fail(err, MPK_ENOTFOUND, dir, NULL, "cannot open the package directory");
    goto out;
  }
  /* Every component beneath the package root must be a real directory: a merge writes through
     this handle, and a link (variants/<id>/inference -> elsewhere) would send it out. */
  if (*inf) rc = mpk_open_dir_at(root, dir, inf, fd, err);
  else if ((*fd = fcntl(root, F_DUPFD_CLOEXEC, 0)) < 0)
    rc = mpk_fail(err, MPK_EIO, dir, NULL, "cannot open the package directory");
  close(root);
out:
  free(pkg_inf);
  return rc;
}

int mpk_mt_load_map(const char *dir, const mpk_mt_located *loc, mpk_mt_handoff **out, mpk_error *err) {
  *out = NULL;
  if (!loc->variant->weight_handoff)
    return mpk_fail(err, MPK_ENOTFOUND, loc->manifest_file, NULL, "variant \"%s\" has no weightHandoff",
                    loc->variant->id);
  mpk_mapped m;
  /* Beneath the package root: a map linked out of the package is refused, a FIFO never waited on. */
  int rc = mpk_map_beneath(dir, loc->map_rel, MPK_JSON_DEFAULT_MAX_BYTES, &m, err);
  if (rc) return rc;
  rc = mpk_mt_handoff_parse(m.data, m.size, loc->map_file, out, err);
  mpk_unmap_file(&m);
  return rc;
}

/* The public face of the three steps above and the gate: what `modelpkg mt tensors` lists. */
struct mpk_mt_variant_gate_priv {
  mpk_mt_located loc;
  mpk_mt_handoff *map;
  mpk_mt_gate_report *report;
};

const mpk_mt_located *mpk_mt_variant_gate_located(const mpk_mt_variant_gate *g) { return &g->priv_->loc; }
const mpk_mt_handoff *mpk_mt_variant_gate_map(const mpk_mt_variant_gate *g) { return g->priv_->map; }

void mpk_mt_variant_gate_free(mpk_mt_variant_gate *g) {
  if (!g) return;
  if (g->priv_) {
    mpk_mt_gate_report_free(g->priv_->report);
    mpk_mt_handoff_free(g->priv_->map);
    mpk_mt_located_free(&g->priv_->loc);
    free(g->priv_);
  }
  free(g);
}

int mpk_mt_variant_gate_open(const char *dir, const char *variant, const mpk_mt_gate_options *opts,
                             mpk_mt_variant_gate **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, dir ? dir : "package", NULL, "no place for the gate");
  *out = NULL;
  if (!dir) return mpk_fail(err, MPK_EINVAL, "package", NULL, "no package directory");
  return mpk_mt_variant_gate_open_with(dir, NULL, variant, opts, out, err);
}

int mpk_mt_variant_gate_open_with(const char *dir, mpk_mt_manifest *given, const char *variant,
                                  const mpk_mt_gate_options *opts, mpk_mt_variant_gate **out, mpk_error *err) {
  *out = NULL;
  mpk_mt_variant_gate *g = calloc(1, sizeof *g);
  struct mpk_mt_variant_gate_priv *p = g ? calloc(1, sizeof *p) : NULL;
  if (!p) {
    free(g);
    mpk_mt_manifest_free(given);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  g->priv_ = p;
  int rc = mpk_mt_locate_with(dir, given, variant, &p->loc, err);
  if (rc) {
    free(p);
    free(g);
    return rc;
  }
  g->variant = p->loc.variant->id;
  g->weight_handoff = p->loc.variant->weight_handoff;
  if (!p->loc.map_file) {
    rc = mpk_fail(err, MPK_EMALFORMED, p->loc.manifest_file, NULL, "variant \"%s\" has no weightHandoff", g->variant);
    goto fail;
  }
  /* The map, the tensors and their sidecars are read beneath the package: the inference directory
     is opened with no link in its path, and a package shipping a merge journal or record is refused
     before the gate would replay or trust it. */
  mpk_error local;
  mpk_error_clear(&local);
  rc = mpk_mt_load_map(dir, &p->loc, &p->map, &local);
  if (rc == MPK_ENOTFOUND && !p->map && local.code == MPK_ENOTFOUND && strstr(local.message, "not found")) {
    g->map_absent = 1; /* no merged weights: use the base weights */
    *out = g;
    return 0;
  }
  if (rc) {
    if (err) *err = local;
    goto fail;
  }
  int inf_fd = -1;
  if ((rc = mpk_mt_open_inference(dir, &p->loc, &inf_fd, err))) goto fail;
  mpk_mt_gate_options go;
  if ((rc = mpk_mt_gate_options_read(&go, opts, err))) {
    if (inf_fd >= 0) close(inf_fd);
    goto fail;
  }
  /* An installed model keeps the gate's verification stamp in its inference directory (the caller
     may ask for it on a package directory too). */
  if (p->loc.tree.installed) go.use_stamp = 1;
  rc = mpk_mt_load_gate_at(inf_fd, p->loc.inference_dir, p->map, &go, NULL, &p->report, err);
  if (inf_fd >= 0) close(inf_fd);
  if (rc) goto fail;
  g->report = p->report;
  *out = g;
  return 0;
fail:
  mpk_mt_variant_gate_free(g);
  return rc;
}
