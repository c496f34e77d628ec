/* Checking a MobileTransformers package directory, fail-closed: the manifest and its version gate,
   the selected variant's structure (feature paths, the inference/ group, the weight handoff map and
   the external data files it names, the inference graph against the map), requiredFiles, then
   integrity — every listed file in scope present, inside the package, of its listed size (all
   sizes before any hashing, so a truncated file fails fast), and of its listed SHA-256 (hashed
   streaming on a bounded pool). Every problem is collected; files on disk that the manifest does
   not list are warnings. Rules: docs/mt.md, docs/mt-graph.md. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mt/mt.h"
#if MPK_WITH_ONNX
#include "mt/graph/graph.h" /* the graph/ room is the onnx component */
#endif

#define MAX_UNLISTED_LINES 20 /* warnings naming unlisted files; the rest are counted */

struct mpk_mt_report_priv {
  mpk_findings found;
  mpk_mt_manifest *manifest;
  char *dir;
  char *manifest_path;
  const char **variants; /* borrowed from the manifest */
  char **unlisted;
  size_t n_unlisted, cap_unlisted;
  struct known *known; /* SHA-256 the load gate computed: the integrity pass does not hash them again */
  size_t n_known, cap_known;
};

struct known {
  char *path;
  char hex[65];
  bool merged; /* merged on device: verified against its sidecar, which differs from the shipped digest */
};

static int cmp_known(const void *a, const void *b) {
  return strcmp(((const struct known *)a)->path, ((const struct known *)b)->path);
}

static void remember_digest(struct mpk_mt_report_priv *p, const char *path, const char *hex, bool merged) {
  if (p->n_known == p->cap_known) {
    size_t cap = p->cap_known ? p->cap_known * 2 : 16;
    struct known *k = realloc(p->known, cap * sizeof *k);
    if (!k) return; /* only an optimisation: the file is hashed again */
    p->known = k;
    p->cap_known = cap;
  }
  if (!(p->known[p->n_known].path = strdup(path))) return;
  memcpy(p->known[p->n_known].hex, hex, 65);
  p->known[p->n_known].merged = merged;
  p->n_known++;
}

typedef struct check {
  int root_fd; /* the package directory: every listed file is opened beneath it */
  mpk_mt_report *r;
  struct mpk_mt_report_priv *p;
  const mpk_mt_manifest *m; /* NULL until loaded */
  const mpk_mt_check_options *o;
  /* An installed model (docs/mt-installed.md): its one variant, where each package path is
     (mpk_mt_tree_path), and what its install holds (the recorded features' plan). */
  mpk_mt_tree tree;
  const mpk_mt_variant *iv;
  mpk_mt_download_plan *scope;
  char **listed; /* the installed paths of the files the manifest lists, sorted (unlisted files) */
  size_t n_listed;
  bool manifest_only; /* mpk_mt_check_manifest: the document's rules, nothing on disk */
} check;

/* Where package path `pkg` is, relative to the checked directory (malloc'ed; NULL: no memory). */
static char *disk(const check *c, const char *pkg) {
  return c->tree.installed && c->iv ? mpk_mt_tree_path(&c->tree, c->iv, pkg) : strdup(pkg);
}

/* ... and as a path to show and to look up (the checked directory joined). */
static char *join_disk(const check *c, const char *pkg) {
  char *rel = disk(c, pkg), *abs = rel ? mpk_path_join(c->r->dir, rel) : NULL;
  free(rel);
  return abs;
}

/* ---------------------------------------------------------------- findings */

/* The report's problems and notes are its findings' (published in mpk_mt_check). */
static void add_error(check *c, const mpk_error *e) { mpk_findings_problem(&c->p->found, e); }

#define problem(c, ...) mpk_findings_fail(&(c)->p->found, __VA_ARGS__)

#define note(c, ...) mpk_findings_note(&(c)->p->found, __VA_ARGS__)

/* JSON pointers: "/k1/k2/k3" (NULL ends the keys), and "/variants/N" + "/key" when given. */
static const char *keys_ptr(mpk_path *pp, const char *k1, const char *k2, const char *k3) {
  const char *keys[3] = {k1, k2, k3};
  mpk_path_init(pp);
  for (int i = 0; i < 3 && keys[i]; i++) mpk_path_push_key(pp, keys[i]);
  return pp->buf;
}

static const char *variant_ptr(mpk_path *pp, size_t vi, const char *key) {
  mpk_path_init(pp);
  mpk_path_push_key(pp, "variants");
  mpk_path_push_index(pp, vi);
  if (key) mpk_path_push_key(pp, key);
  return pp->buf;
}

/* ---------------------------------------------------------------- files on disk */

/* Whether DIR/rel exists inside the package (symbolic links resolved) as a regular file, or a
   directory when `want_dir`. When not, *e names the path and says why ("<what> is missing"). A file
   is opened as every reader opens it (mpk_open_read_at beneath the package's handle: no link out,
   never blocking on a FIFO), so what check accepts is what a reader can open. */
static bool probe(check *c, const char *pkg_rel, bool want_dir, const char *what, struct stat *st, mpk_error *e) {
  mpk_error_clear(e);
  char *rel = disk(c, pkg_rel), *abs = rel ? mpk_path_join(c->r->dir, rel) : NULL;
  if (!abs) {
    free(rel);
    mpk_fail(e, MPK_ENOMEM, pkg_rel, NULL, "out of memory");
    return false;
  }
  struct stat lst;
  bool ok = false;
  int fd = -1, orc = 0;
  mpk_error oe;
  mpk_error_clear(&oe);
  if (!want_dir && c->root_fd >= 0)
    orc = mpk_open_read_at(c->root_fd, c->r->dir, rel, 0, "the package directory", &fd, st, &oe);
  if (fd >= 0) close(fd);
  if (!want_dir && c->root_fd >= 0 && orc != MPK_ENOTFOUND) {
    if (!orc) ok = true;
    else if (orc == MPK_EMALFORMED && strstr(oe.message, "resolves outside"))
      mpk_fail(e, MPK_EMALFORMED, abs, NULL, "%s resolves outside the package directory (through a symbolic link)", what);
    else if (orc == MPK_EMALFORMED)
      mpk_fail(e, MPK_EMALFORMED, abs, NULL, "%s %s", what, oe.message); /* "is a FIFO, not a regular file" */
    else
      mpk_fail(e, orc, abs, NULL, "%s cannot be opened: %s", what, oe.message);
  } else if (stat(abs, st) != 0) {
    int en = errno;
    if (en == ENOENT && lstat(abs, &lst) == 0 && S_ISLNK(lst.st_mode))
      mpk_fail(e, MPK_ENOTFOUND, abs, NULL, "%s is missing (a symbolic link to nothing)", what);
    else if (en == ENOENT || en == ENOTDIR)
      mpk_fail(e, MPK_ENOTFOUND, abs, NULL, "%s is missing", what);
    else
      mpk_fail(e, MPK_EIO, abs, NULL, "%s cannot be examined: %s", what, strerror(en));
  } else if (!mpk_path_resolves_inside(c->r->dir, abs)) {
    mpk_fail(e, MPK_EMALFORMED, abs, NULL, "%s resolves outside the package directory (through a symbolic link)", what);
  } else if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
    mpk_fail(e, MPK_EMALFORMED, abs, NULL, "%s is not a %s", what, want_dir ? "directory" : "regular file");
  } else {
    ok = true;
  }
  free(abs);
  free(rel);
  return ok;
}

/* ---------------------------------------------------------------- manifest and variants */

static bool has_feature(const mpk_mt_variant *v, const char *feature) {
  for (size_t i = 0; i < v->n_features; i++)
    if (strcmp(v->features[i], feature) == 0) return true;
  return false;
}

/* "a, b, c" (cut with "..." when long). */
static const char *variant_ids(const mpk_mt_manifest *m, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < m->n_variants; i++) {
    size_t need = strlen(m->variants[i].id) + (i ? 2 : 0);
    if (len + need + 4 >= size) {
      snprintf(buf + len, size - len, "%s...", i ? ", " : "");
      break;
    }
    len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", m->variants[i].id);
  }
  return buf;
}

static bool load_manifest(check *c) {
  struct mpk_mt_report_priv *p = c->p;
  p->manifest_path = mpk_path_join(c->r->dir, MPK_MT_MANIFEST_FILENAME);
  if (!p->manifest_path) return false;
  struct stat st;
  mpk_error e;
  if (!probe(c, MPK_MT_MANIFEST_FILENAME, false, "the MobileTransformers manifest", &st, &e)) {
    add_error(c, &e);
    return false;
  }
  mpk_error_clear(&e);
  if (mpk_mt_manifest_load(p->manifest_path, &p->manifest, &e)) {
    add_error(c, &e);
    return false;
  }
  c->m = c->r->manifest = p->manifest;
  return true;
}

/* At least one variant, a defaultVariant among them; then which variants this check covers. */
static int select_variants(check *c) {
  const mpk_mt_manifest *m = c->m;
  const char *mf = c->p->manifest_path;
  char ids[400];
  if (m->n_variants == 0)
    problem(c, MPK_EMALFORMED, mf, "/variants", "the manifest declares no variants: a package needs at least one");
  else if (!mpk_mt_manifest_variant(m, m->default_variant))
    problem(c, MPK_EMALFORMED, mf, "/defaultVariant", "defaultVariant \"%s\" is not among the variants (%s)",
            m->default_variant, variant_ids(m, ids, sizeof ids));
  c->p->variants = calloc(m->n_variants ? m->n_variants : 1, sizeof *c->p->variants);
  if (!c->p->variants) return MPK_ENOMEM;
  size_t n = 0;
  if (c->tree.installed) {
    /* An installed model holds one variant: the one its install record names (the default rule). */
    mpk_error e;
    mpk_error_clear(&e);
    if (c->o->all_variants)
      problem(c, MPK_EINVAL, c->r->dir, NULL, "an installed model holds one variant: --all-variants does not apply");
    else if (mpk_mt_tree_variant(&c->tree, m, c->o->variant, mf, &c->iv, &e))
      add_error(c, &e);
    if (c->iv) {
      c->p->variants[n++] = c->iv->id;
      mpk_mt_plan_options po = {.struct_size = sizeof po, .features = (const char *const *)c->tree.features,
                                .n_features = c->tree.n_features, .allow_unverifiable = 1};
      mpk_error_clear(&e);
      if (mpk_mt_plan_download(m, c->iv->id, &po, &c->scope, &e)) {
        if (e.code == MPK_ENOMEM) return MPK_ENOMEM;
        add_error(c, &e);
      }
      char feats[256] = "";
      for (size_t i = 0; c->scope && i < c->scope->n_features; i++)
        snprintf(feats + strlen(feats), sizeof feats - strlen(feats), "%s%s", i ? ", " : "", c->scope->features[i]);
      note(c, "installed model: variant \"%s\" (%s), installed features: %s", c->iv->id,
           c->tree.record == MPK_MT_RECORD_MODELPKG    ? "named by modelpkg's install record"
           : c->tree.record == MPK_MT_RECORD_REFERENCE ? "named by the reference runtime's install record"
                                                       : "no install record: the manifest's defaultVariant",
           feats[0] ? feats : "unknown");
    }
  } else if (c->o->all_variants) {
    for (size_t i = 0; i < m->n_variants; i++) c->p->variants[n++] = m->variants[i].id;
  } else {
    const char *want = c->o->variant ? c->o->variant : m->default_variant;
    const mpk_mt_variant *v = mpk_mt_manifest_variant(m, want);
    if (v) c->p->variants[n++] = v->id;
    else if (c->o->variant)
      problem(c, MPK_ENOTFOUND, mf, "/variants", "the requested variant \"%s\" is not among the variants (%s)", want,
              variant_ids(m, ids, sizeof ids));
  }
  c->r->variants = c->p->variants;
  c->r->n_variants = n;
  return 0;
}

/* ---------------------------------------------------------------- the weight handoff map */

/* Every externalDataLocation file of the map is present in the inference directory. The reader
   (handoff.c) has already refused names that are not plain file names, and files claimed twice. */
static void check_locations(check *c, const char *map_rel, const mpk_mt_handoff *map, const char *inference_rel) {
  for (size_t i = 0; i < map->n_entries; i++) {
    const mpk_mt_handoff_entry *e = &map->entries[i];
    for (int role = 0; role < MPK_MT_ROLE_COUNT; role++) {
      const char *name = e->external_data_location[role];
      if (!name) continue;
      char *rel = inference_rel[0] ? mpk_path_join(inference_rel, name) : strdup(name);
      char what[400];
      snprintf(what, sizeof what, "the external data file of %s entry %zu (%.120s) role \"%s\"", map_rel, i,
               e->training_base_layer_name, mpk_mt_role_name((mpk_mt_role)role));
      struct stat st;
      mpk_error err;
      if (!rel) c->p->found.oom = true;
      else if (!probe(c, rel, false, what, &st, &err)) add_error(c, &err);
      free(rel);
    }
  }
}

/* The load gate over the variant's map (tensor.c), read-only: check never finishes an interrupted
   merge (a pending one is a problem saying what does), never trusts a merge journal or record the
   manifest lists, and opens the inference directory as the gate and the merge do (no component a
   link). Refusals are problems, verified tensors notes naming the authority, and a tensor that
   cannot be loaded (no declared layout, or a size that breaks it) a problem. */
static void gate(check *c, const mpk_mt_variant *v, const mpk_mt_handoff *map, const char *inference_rel) {
  char *drel = disk(c, inference_rel), *inf = drel ? mpk_path_join(c->r->dir, drel) : NULL;
  if (!inf) {
    free(drel);
    c->p->found.oom = true;
    return;
  }
  mpk_mt_gate_options go = {.presence_only = c->o->no_hash, .workers = c->o->workers};
  mpk_mt_gate_report *g = NULL;
  mpk_error e;
  mpk_error_clear(&e);
  const char *listed = mpk_mt_listed_txn_file(c->m, inference_rel);
  if (listed) {
    mpk_path pp;
    problem(c, MPK_EMALFORMED, c->p->manifest_path, keys_ptr(&pp, "sha256", listed, NULL),
            "the manifest lists \"%s\", a file only modelpkg writes on the device (the merge transaction's journal "
            "or the merge record): a package that ships one is refused; it is never replayed or trusted",
            listed);
  }
  int root = open(c->r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dfd = -1;
  int orc = root < 0 ? mpk_fail(&e, MPK_EIO, c->r->dir, NULL, "cannot open the package directory")
            : *drel ? mpk_open_dir_at(root, c->r->dir, drel, &dfd, &e)
                             : ((dfd = dup(root)) < 0 ? mpk_fail(&e, MPK_EIO, c->r->dir, NULL, "cannot open") : 0);
  if (root >= 0) close(root);
  char next[700];
  snprintf(next, sizeof next, "`modelpkg mt tensors %.300s --variant %.200s` (the load gate)", c->r->dir, v->id);
  mpk_mt_gate_ctx ctx = {.read_only = true, .shipped_txn = listed != NULL, .next_step = next};
  if (orc && orc != MPK_ENOTFOUND) {
    /* a link, or not a directory: the gate would refuse to load from it */
    if (orc == MPK_ENOMEM) c->p->found.oom = true;
    else
      problem(c, orc, e.file[0] ? e.file : inf, NULL, "variant \"%s\": the inference directory cannot be opened "
              "as the load gate opens it: %s", v->id, e.message);
    free(inf);
    free(drel);
    return;
  }
  mpk_error_clear(&e);
  if (mpk_mt_load_gate_at(dfd, inf, map, &go, &ctx, &g, &e)) {
    if (e.code == MPK_ENOMEM) c->p->found.oom = true;
    else add_error(c, &e);
    if (dfd >= 0) close(dfd);
    free(inf);
    free(drel);
    return;
  }
  if (dfd >= 0) close(dfd);
  if (g->no_merged_weights)
    note(c, "load gate, variant \"%s\": no merged weights (the map has no entries): use the base weights", v->id);
  /* A file check_locations() already refused (missing, outside, not regular) is not reported twice. */
  size_t before = c->p->found.n_problems;
  for (size_t i = 0; i < g->n_problems; i++) {
    bool dup = false;
    for (size_t k = 0; k < before && !dup; k++) dup = strcmp(c->p->found.problems[k].file, g->problems[i].file) == 0;
    if (!dup) add_error(c, &g->problems[i]);
  }
  for (size_t i = 0; i < g->n_tensors; i++) {
    const mpk_mt_gate_tensor *t = &g->tensors[i];
    c->r->n_tensors++;
    /* A tensor merged on device: modelpkg's merge record (written in the merge's transaction) names
       it with these bytes, and its sidecar agrees; the manifest, like the map, keeps the shipped
       digests. Nothing else makes bytes that differ from the manifest's acceptable. */
    bool merged = t->status == MPK_MT_TENSOR_VERIFIED && t->merged;
    if (t->actual[0]) remember_digest(c->p, t->file, t->actual, merged);
    if (merged) {
      char *side = malloc(strlen(t->file) + 8);
      if (side) {
        sprintf(side, "%s.sha256", t->file);
        static const char none[65] = ""; /* a merged sidecar is not hashed: the gate read it */
        remember_digest(c->p, side, none, true);
        free(side);
      }
      note(c, "load gate, variant \"%s\": %s (layer \"%.150s\") was merged on device: modelpkg's merge record "
           "(" MPK_MT_MERGE_RECORD "), not the manifest's shipped digest, is its authority", v->id, t->file, t->layer);
    }
    if (t->status == MPK_MT_TENSOR_VERIFIED) {
      c->r->n_tensors_verified++;
      note(c, "load gate, variant \"%s\": %s (layer \"%.150s\" role \"%s\") verified against the %s", v->id,
           t->file, t->layer, mpk_mt_role_name(t->role),
           t->authority == MPK_MT_AUTH_RECORD    ? "merge record"
           : t->authority == MPK_MT_AUTH_SIDECAR ? "sidecar (the map has no sha256)"
           : t->sidecar[0]                       ? "map's sha256 and the sidecar"
                                                 : "map's sha256 (no sidecar)");
    }
    if (t->status == MPK_MT_TENSOR_MISSING || t->status == MPK_MT_TENSOR_UNREADABLE) continue;
    /* A tensor the runtime cannot load fails the package, hashed or not (--no-hash). */
    if (t->layout_code)
      problem(c, MPK_EMALFORMED, t->file, NULL,
              "layer \"%.150s\" role \"%s\": the map declares no dtype/shape for it: it cannot be loaded "
              "(a .bin has no header; its layout comes from the map)", t->layer, mpk_mt_role_name(t->role));
    else if (!t->size_ok)
      problem(c, MPK_EMISMATCH, t->file, NULL,
              "layer \"%.150s\" role \"%s\": the file is %llu bytes, but %s of %zu dimension%s is %llu bytes: "
              "it cannot be loaded", t->layer, mpk_mt_role_name(t->role), (unsigned long long)t->size, t->dtype,
              t->ndim, t->ndim == 1 ? "" : "s", (unsigned long long)t->declared_bytes);
  }
  if (g->n_tensors && g->ready && go.presence_only)
    note(c, "load gate, variant \"%s\": %zu tensor%s present (digests not computed)", v->id, g->n_tensors,
         g->n_tensors == 1 ? "" : "s");
  mpk_mt_gate_report_free(g);
  free(inf);
  free(drel);
}

/* The inference graph, when the variant ships one (graph_report.c): the map checked against its
   initializers, and its measured precision against inference/optimum_config.json. */
static void check_graph(check *c, const mpk_mt_variant *v) {
#if !MPK_WITH_ONNX
  /* The graph reader is the onnx component: without it the rest of the check still holds, and the
     report says what it did not look at rather than failing a package that may be fine. */
  note(c, "variant \"%s\": graph not checked: built without the onnx component", v->id);
  return;
#else
  mpk_mt_graph_report *g = NULL;
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_mt_graph_report_variant(c->r->dir, &c->tree, v, NULL, &g, &e)) {
    c->p->found.oom = true;
    return;
  }
  for (size_t i = 0; i < g->n_problems; i++) add_error(c, &g->problems[i]);
  for (size_t i = 0; i < g->n_notes; i++) note(c, "%s", g->notes[i]);
  mpk_mt_graph_report_free(g);
#endif
}

/* The variant's weight_handoff_map.json: present, read by the handoff-map reader (version gate,
   typed fields, every invariant: mpk_mt_handoff_parse), and every externalDataLocation file present
   in inference/. */
static void check_handoff(check *c, const mpk_mt_variant *v, size_t vi) {
  const char *mf = c->p->manifest_path;
  mpk_path pp;
  if (!v->weight_handoff) {
    problem(c, MPK_EMALFORMED, mf, variant_ptr(&pp, vi, NULL),
            "variant \"%s\" has no weightHandoff: its weight_handoff_map.json cannot be found", v->id);
    return;
  }
  char what[300];
  snprintf(what, sizeof what, "the weight handoff map of variant \"%s\" (weightHandoff)", v->id);
  struct stat st;
  mpk_error e;
  if (!probe(c, v->weight_handoff, false, what, &st, &e)) {
    add_error(c, &e);
    return;
  }
  char *map_rel = disk(c, v->weight_handoff), *abs = map_rel ? mpk_path_join(c->r->dir, map_rel) : NULL;
  free(map_rel);
  if (!abs) {
    c->p->found.oom = true;
    return;
  }
  mpk_mt_handoff *map = NULL;
  mpk_error_clear(&e);
  if (mpk_mt_handoff_load(abs, &map, &e)) {
    add_error(c, &e);
  } else {
    char *inf = mpk_mt_inference_rel(v); /* the inference path, else beside the map */
    if (inf) {
      check_locations(c, v->weight_handoff, map, inf);
      gate(c, v, map, inf);
      if (!c->o->no_graph) check_graph(c, v);
    } else {
      c->p->found.oom = true;
    }
    free(inf);
  }
  mpk_mt_handoff_free(map);
  free(abs);
}

/* ---------------------------------------------------------------- what an installed model holds */

static int cmp_planned(const void *key, const void *f) {
  return strcmp(key, ((const mpk_mt_planned_file *)f)->path);
}

/* In an installed model: whether its install planned package path `path` (the recorded features'
   plan). The reference installer copies only the stages, the tokenizer, the manifest and
   checksums.json (ModelPackageInstaller.kt): other core files are in scope only where modelpkg
   installed the tree. */
static bool installed_holds(const check *c, const char *path) {
  if (!c->scope || !c->iv) return false;
  if (!bsearch(path, c->scope->files, c->scope->n_files, sizeof *c->scope->files, cmp_planned)) return false;
  if (c->tree.record == MPK_MT_RECORD_MODELPKG) return true;
  char *d = disk(c, path);
  bool moved = d && strcmp(d, path) != 0;
  free(d);
  return moved;
}

/* In an installed model: a file of its variant that the install did not plan but that is there (the
   reference installer copies whole stage directories, train/ included, whatever the features): what
   is on disk is verified like the rest; its absence is no problem. */
static bool installed_extra(const check *c, const char *path) {
  if (!c->tree.installed || !c->iv || !mpk_mt_tree_holds(&c->tree, c->iv, path)) return false;
  char *d = disk(c, path);
  struct stat st;
  bool there = d && fstatat(c->root_fd, d, &st, AT_SYMLINK_NOFOLLOW) == 0;
  free(d);
  return there;
}

/* Whether a variant's directory is there to probe: always in a package; in an installed model
   when its install holds a file beneath it. */
static bool holds_dir(const check *c, const char *dir) {
  if (!c->tree.installed) return true;
  size_t n = strlen(dir);
  for (size_t i = 0; c->scope && i < c->scope->n_files; i++) {
    const char *p = c->scope->files[i].path;
    if (strncmp(p, dir, n) == 0 && p[n] == '/' && installed_holds(c, p)) return true;
  }
  return false;
}

/* ---------------------------------------------------------------- one variant's structure */

static void check_variant(check *c, size_t vi) {
  const mpk_mt_manifest *m = c->m;
  const mpk_mt_variant *v = &m->variants[vi];
  const char *mf = c->p->manifest_path;
  mpk_path pp;
  /* Every claimed feature that needs a subtree has its path (MobileTransformersManifest.validate);
     "embedding" is this reader's addition, the subtree "rag" names. */
  static const struct {
    const char *feature, *path;
  } needs[] = {{"inference", "inference"}, {"train", "train"}, {"rag", "embedding"}, {"embedding", "embedding"}};
  for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
    if (has_feature(v, needs[i].feature) && !mpk_mt_variant_path(v, needs[i].path))
      problem(c, MPK_EMALFORMED, mf, variant_ptr(&pp, vi, "paths"),
              "variant \"%s\" claims feature \"%s\" but has no \"%s\" path", v->id, needs[i].feature, needs[i].path);
  if (!has_feature(v, "inference") && !mpk_mt_variant_path(v, "inference"))
    problem(c, MPK_EMALFORMED, mf, variant_ptr(&pp, vi, "paths"),
            "variant \"%s\" has no \"inference\" path: every variant needs its inference/ group", v->id);
  for (size_t i = 0; i < v->n_paths && !c->manifest_only; i++) {
    if (!holds_dir(c, v->paths[i].value)) continue; /* a stage this install did not plan */
    char what[300];
    snprintf(what, sizeof what, "the \"%s\" directory of variant \"%s\" (paths)", v->paths[i].key, v->id);
    struct stat st;
    mpk_error e;
    if (!probe(c, v->paths[i].value, true, what, &st, &e)) add_error(c, &e);
  }
  /* The plan's inference group: it must exist and select files the manifest lists. */
  const mpk_mt_plan *plan = mpk_mt_manifest_plan(m, v->id);
  if (!plan) {
    problem(c, MPK_EMALFORMED, mf, "/downloadPlan", "variant \"%s\" has no download plan", v->id);
  } else {
    const mpk_mt_group *g = mpk_mt_plan_group(plan, "inference");
    const char *ptr = keys_ptr(&pp, "downloadPlan", v->id, g ? "inference" : NULL);
    if (!g || g->n_patterns == 0) {
      problem(c, MPK_EMALFORMED, mf, ptr, "the download plan of variant \"%s\" has %s \"inference\" group", v->id,
              g ? "an empty" : "no");
    } else {
      bool any = false;
      for (size_t f = 0; f < m->n_files && !any; f++) any = mpk_mt_group_selects(g, m->files[f].path);
      if (!any)
        problem(c, MPK_EMALFORMED, mf, ptr,
                "the \"inference\" group of variant \"%s\" selects no file the manifest lists", v->id);
    }
  }
  if (!c->manifest_only) check_handoff(c, v, vi);
}

static void check_required(check *c) {
  size_t elsewhere = 0;
  for (size_t i = 0; i < c->m->n_required_files; i++) {
    if (c->tree.installed && (!c->iv || !mpk_mt_tree_holds(&c->tree, c->iv, c->m->required_files[i]))) {
      elsewhere++; /* another variant's file (the defaultVariant's model.onnx): not installed here */
      continue;
    }
    char what[64];
    snprintf(what, sizeof what, "required file (requiredFiles/%zu)", i);
    struct stat st;
    mpk_error e;
    if (!probe(c, c->m->required_files[i], false, what, &st, &e)) add_error(c, &e);
  }
  if (elsewhere)
    note(c, "%zu requiredFiles entr%s of other variants not checked: an installed model holds one variant", elsewhere,
         elsewhere == 1 ? "y" : "ies");
}

/* ---------------------------------------------------------------- plans and scope */

static bool checked(const check *c, const char *id) {
  for (size_t i = 0; i < c->r->n_variants; i++)
    if (strcmp(c->r->variants[i], id) == 0) return true;
  return false;
}

static bool under_variant(const char *path, const char *id) {
  size_t n = strlen(id);
  return strncmp(path, "variants/", 9) == 0 && strncmp(path + 9, id, n) == 0 && path[9 + n] == '/';
}

static bool plan_selects(const mpk_mt_plan *plan, const char *path) {
  for (size_t g = 0; plan && g < plan->n_groups; g++)
    if (mpk_mt_group_selects(&plan->groups[g], path)) return true;
  return false;
}

/* In scope: what the checked variants' plans select or hold under variants/<id>/, and package-wide
   files (selected by no plan, under no variant's directory: README, licenses, ...). */
static bool in_scope(const check *c, const char *path) {
  const mpk_mt_manifest *m = c->m;
  if (c->tree.installed) return installed_holds(c, path);
  if (c->o->all_variants) return true;
  for (size_t i = 0; i < c->r->n_variants; i++)
    if (under_variant(path, c->r->variants[i]) || plan_selects(mpk_mt_manifest_plan(m, c->r->variants[i]), path))
      return true;
  for (size_t i = 0; i < m->n_plans; i++)
    if (plan_selects(&m->plans[i], path)) return false;
  for (size_t i = 0; i < m->n_variants; i++)
    if (under_variant(path, m->variants[i].id)) return false;
  return true;
}

/* Patterns that select nothing are warnings: the exporter writes the core patterns whether or not
   the model has, e.g., a chat template. */
static void check_patterns(check *c) {
  const mpk_mt_manifest *m = c->m;
  for (size_t i = 0; i < m->n_plans; i++) {
    const mpk_mt_plan *plan = &m->plans[i];
    if (!mpk_mt_manifest_variant(m, plan->variant)) {
      note(c, "warning: downloadPlan has a plan for \"%s\", which is not among the variants", plan->variant);
      continue;
    }
    if (!checked(c, plan->variant)) continue;
    for (size_t g = 0; g < plan->n_groups; g++)
      for (size_t k = 0; k < plan->groups[g].n_patterns; k++) {
        const char *pat = plan->groups[g].patterns[k];
        size_t n = strlen(pat);
        bool any = strcmp(pat, MPK_MT_MANIFEST_FILENAME) == 0;
        for (size_t f = 0; f < m->n_files && !any; f++) any = mpk_pattern_matches(pat, m->files[f].path);
        if (any) continue;
        bool glob = n > 3 && strcmp(pat + n - 3, "/**") == 0;
        note(c, "warning: download pattern \"%s\" (variant \"%s\", group \"%s\") %s", pat, plan->variant,
             plan->groups[g].name,
             glob ? "selects no file the manifest lists" : "names a file the manifest does not list");
      }
  }
}

/* ---------------------------------------------------------------- integrity */

static void check_listing(check *c) {
  const mpk_mt_manifest *m = c->m;
  mpk_path pp;
  mpk_tally no_size = {0}, no_digest = {0};
  for (size_t i = 0; i < m->n_files; i++) {
    const mpk_mt_file *f = &m->files[i];
    if (!f->has_size && mpk_tally_keep(&no_size))
      problem(c, MPK_EMALFORMED, c->p->manifest_path, keys_ptr(&pp, "sha256", f->path, NULL),
              "file \"%s\" has a sha256 digest but no fileSizes entry", f->path);
    if (!f->sha256 && mpk_tally_keep(&no_digest))
      problem(c, MPK_EMALFORMED, c->p->manifest_path, keys_ptr(&pp, "fileSizes", f->path, NULL),
              "file \"%s\" has a size but no sha256 digest", f->path);
  }
  if (mpk_tally_over(&no_size))
    problem(c, MPK_EMALFORMED, c->p->manifest_path, "/sha256",
            "%zu of %zu listed files have a sha256 digest but no fileSizes entry (the first %d listed)", no_size.count,
            m->n_files, MPK_LIST_MAX);
  if (mpk_tally_over(&no_digest))
    problem(c, MPK_EMALFORMED, c->p->manifest_path, "/fileSizes",
            "%zu of %zu listed files have a size but no sha256 digest (the first %d listed)", no_digest.count,
            m->n_files, MPK_LIST_MAX);
}

/* An installed model's checksums.json (the variant's, flattened to the top): its keys are hub paths
   (variants/<id>/...), as the exporter wrote them; each is the installed file at its flattened path,
   and its digest must be the manifest's for that file — the integrity pass then verifies the bytes
   against that one digest. A key the manifest does not list, or a file of another variant, is a
   problem: the two documents come from one export and must agree. */
static void check_checksums(check *c) {
  if (!c->tree.installed || !c->iv) return;
  char ck[600];
  snprintf(ck, sizeof ck, "variants/%s/" MPK_MT_CHECKSUMS_FILENAME, c->iv->id);
  if (!in_scope(c, ck)) return; /* the install did not plan it */
  mpk_mapped mm;
  mpk_error e;
  mpk_error_clear(&e);
  char *file = mpk_path_join(c->r->dir, MPK_MT_CHECKSUMS_FILENAME);
  json_t *root = NULL;
  if (!file) {
    c->p->found.oom = true;
    return;
  }
  if (mpk_map_beneath(c->r->dir, MPK_MT_CHECKSUMS_FILENAME, MPK_JSON_DEFAULT_MAX_BYTES, &mm, &e)) {
    if (e.code != MPK_ENOTFOUND) add_error(c, &e); /* absent: the integrity pass reports it missing */
    free(file);
    return;
  }
  int rc = mpk_json_parse(mm.data, mm.size, NULL, file, &root, &e);
  mpk_unmap_file(&mm);
  if (rc) {
    add_error(c, &e);
  } else if (!json_is_object(root)) {
    problem(c, MPK_EMALFORMED, file, "", "checksums.json is an object of package paths to SHA-256 digests");
  } else {
    const char *key;
    json_t *val;
    mpk_path pp;
    mpk_tally bad = {0};
    json_object_foreach(root, key, val) {
      const mpk_mt_file *f = mpk_mt_manifest_file(c->m, key);
      const char *hex = json_string_value(val);
      const char *ptr = keys_ptr(&pp, key, NULL, NULL);
      if (!hex || strlen(hex) != 64 || strspn(hex, "0123456789abcdefABCDEF") != 64) {
        if (mpk_tally_keep(&bad)) problem(c, MPK_EMALFORMED, file, ptr, "must be a SHA-256 digest (64 hex digits)");
      } else if (!mpk_mt_tree_holds(&c->tree, c->iv, key)) {
        if (mpk_tally_keep(&bad))
          problem(c, MPK_EMALFORMED, file, ptr, "names a file of another variant: the installed variant is \"%s\"",
                  c->iv->id);
      } else if (!f || !f->sha256) {
        if (mpk_tally_keep(&bad))
          problem(c, MPK_EMALFORMED, file, ptr, "names a file the manifest does not list with a digest: it cannot be "
                  "verified against the manifest");
      } else if (strcasecmp(hex, f->sha256) != 0) {
        if (mpk_tally_keep(&bad))
          problem(c, MPK_EMISMATCH, file, ptr, "says %s, but the manifest's sha256 for %s is %s: the two disagree",
                  hex, key, f->sha256);
      }
    }
    if (mpk_tally_over(&bad))
      problem(c, MPK_EMALFORMED, file, "", "%zu entries of checksums.json disagree with the manifest (the first %d listed)",
              bad.count, MPK_LIST_MAX);
  }
  json_decref(root);
  free(file);
}

static int check_integrity(check *c) {
  const mpk_mt_manifest *m = c->m;
  mpk_mt_report *r = c->r;
  mpk_digest_job *jobs = calloc(m->n_files ? m->n_files : 1, sizeof *jobs);
  const mpk_mt_file **of = calloc(m->n_files ? m->n_files : 1, sizeof *of);
  if (!jobs || !of) {
    free(jobs);
    free(of);
    return MPK_ENOMEM;
  }
  size_t nj = 0, skipped = 0;
  int rc = 0;
  if (c->p->n_known) mpk_sort(c->p->known, c->p->n_known, sizeof *c->p->known, cmp_known);
  /* Sizes first, for every file: a truncated file fails before anything is hashed. */
  mpk_tally missing = {0};
  for (size_t i = 0; i < m->n_files && !rc; i++) {
    const mpk_mt_file *f = &m->files[i];
    if (!in_scope(c, f->path) && !installed_extra(c, f->path)) {
      skipped++;
      continue;
    }
    r->n_files++;
    struct stat st;
    mpk_error e;
    if (!probe(c, f->path, false, "listed file", &st, &e)) {
      if (e.code != MPK_ENOTFOUND || mpk_tally_keep(&missing)) add_error(c, &e);
      continue;
    }
    if (f->has_size && (uint64_t)st.st_size != f->size) {
      char *abs = join_disk(c, f->path);
      problem(c, MPK_EMISMATCH, abs ? abs : f->path, NULL, "file is %lld bytes, fileSizes says %llu (%s)",
              (long long)st.st_size, (unsigned long long)f->size,
              (uint64_t)st.st_size < f->size ? "truncated" : "longer than listed");
      free(abs);
      continue;
    }
    if (f->has_size) r->n_files_sized++;
    if (c->o->no_hash || !f->sha256) continue;
    char *abs = join_disk(c, f->path);
    if (!abs) {
      rc = MPK_ENOMEM;
      break;
    }
    struct known probe_key = {.path = abs};
    const struct known *k = c->p->n_known ? bsearch(&probe_key, c->p->known, c->p->n_known, sizeof *k, cmp_known) : NULL;
    if (k && k->merged) { /* merged on device: the gate verified it against its sidecar */
      r->n_files_merged++;
      free(abs);
      continue;
    }
    if (k) { /* the load gate hashed it already */
      if (strcmp(k->hex, f->sha256) != 0)
        problem(c, MPK_EMISMATCH, abs, NULL, "SHA-256 %s does not equal the manifest's sha256 %s", k->hex, f->sha256);
      else {
        r->n_files_hashed++;
        r->bytes_hashed += (uint64_t)st.st_size;
      }
      free(abs);
      continue;
    }
    free(abs);
    /* hashed beneath the package by path relative to it: a file swapped for a link out after the
       probe is refused again when it is opened to hash it */
    char *rel = disk(c, f->path);
    if (!rel) {
      rc = MPK_ENOMEM;
      break;
    }
    jobs[nj] = (mpk_digest_job){.path = rel, .algo = MPK_DIGEST_SHA256, .expected_size = (uint64_t)st.st_size};
    of[nj++] = f;
  }
  if (mpk_tally_over(&missing))
    problem(c, MPK_ENOTFOUND, r->dir, NULL, "%zu of %zu listed files in scope are missing (the first %d listed)",
            missing.count, r->n_files, MPK_LIST_MAX);
  if (!rc) {
    mpk_error e;
    mpk_error_clear(&e);
    rc = mpk_digest_files_beneath(r->dir, jobs, nj, c->o->workers, c->o->progress, c->o->progress_ctx, &e);
  }
  for (size_t j = 0; !rc && j < nj; j++) {
    char *abs = mpk_path_join(r->dir, jobs[j].path);
    const char *shown = abs ? abs : jobs[j].path;
    if (jobs[j].code)
      problem(c, jobs[j].code, shown, NULL, "listed file could not be read to hash it");
    else if (jobs[j].size != jobs[j].expected_size)
      problem(c, MPK_EMISMATCH, shown, NULL, "file changed size while it was hashed");
    else if (strcmp(jobs[j].hex, of[j]->sha256) != 0)
      problem(c, MPK_EMISMATCH, shown, NULL, "SHA-256 %s does not equal the manifest's sha256 %s",
              jobs[j].hex, of[j]->sha256);
    else {
      r->n_files_hashed++;
      r->bytes_hashed += jobs[j].size;
    }
    free(abs);
  }
  for (size_t j = 0; j < nj; j++) free((char *)jobs[j].path);
  free(jobs);
  free(of);
  if (rc) return rc;
  if (skipped && c->tree.installed)
    note(c, "%zu listed file%s not installed here (other variants, features this install did not plan%s)", skipped,
         skipped == 1 ? "" : "s", c->tree.record == MPK_MT_RECORD_MODELPKG ? "" : ", package-wide files the reference installer does not copy");
  else if (skipped)
    note(c, "%zu listed file%s of other variants not checked (check them all with --all-variants)", skipped,
         skipped == 1 ? "" : "s");
  if (c->o->no_hash) note(c, "digests not computed (--no-hash): presence, confinement and sizes only");
  return 0;
}

/* ---------------------------------------------------------------- files the manifest does not list */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A file an installer or the device writes into an installed model, never listed by a manifest:
   the install records, and modelpkg's device files in any directory (docs/mt-installed.md). */
static bool installed_device_file(const char *rel) {
  if (strcmp(rel, MPK_MT_INSTALL_RECORD) == 0 || strcmp(rel, MPK_MT_REFERENCE_INSTALL_RECORD) == 0) return true;
  char seg[256];
  for (const char *p = rel; *p;) {
    size_t n = strcspn(p, "/");
    if (n < sizeof seg) {
      memcpy(seg, p, n);
      seg[n] = '\0';
      if (mpk_mt_is_device_file(seg)) return true;
    }
    p += n + (p[n] == '/');
  }
  return false;
}

static bool listed(const check *c, const char *rel) {
  if (strcmp(rel, MPK_MT_MANIFEST_FILENAME) == 0) return true;
  if (!c->tree.installed) return mpk_mt_manifest_file(c->m, rel) != NULL;
  const char *key = rel;
  return c->n_listed && bsearch(&key, c->listed, c->n_listed, sizeof *c->listed, cmp_str);
}

static int unlisted_cb(void *ctx, const char *rel, int type, uint64_t size) {
  (void)size;
  check *c = ctx;
  struct mpk_mt_report_priv *p = c->p;
  if (listed(c, rel)) return 0;
  if (c->tree.installed && installed_device_file(rel) && strstr(rel, MPK_MT_MERGE_RECORD) == NULL) return 0;
  const char *base = strrchr(rel, '/');
  base = base ? base + 1 : rel;
  if (type == MPK_WALK_FILE && strcmp(base, MPK_MT_MERGE_RECORD) == 0) {
    /* Written on the device by mt merge, inside its transaction; the load gate read it above. */
    note(c, "%s/%s: modelpkg's merge record (written by mt merge on this device): the tensors it names were merged "
         "on device", c->r->dir, rel);
    return 0;
  }
  if (type == MPK_WALK_FILE && mpk_mt_is_device_file(base) && strncmp(base, MPK_MT_STAMP_FILE, sizeof MPK_MT_STAMP_FILE - 1) == 0)
    return 0; /* the load gate's verification stamp (or a temporary of it): device state; check hashes regardless */
  if (type == MPK_WALK_FILE && strcmp(base, MPK_MT_MEMBERS) == 0) {
    note(c, "%s/%s: modelpkg's adapter membership (written by mt merge on this device): the adapters merged into "
         "this variant, for mt restore and updates", c->r->dir, rel);
    return 0;
  }
  if (type == MPK_WALK_FILE && mpk_mt_is_device_file(base) &&
      (strncmp(base, MPK_MT_ADAPTER_PREFIX, sizeof MPK_MT_ADAPTER_PREFIX - 1) == 0 ||
       (strlen(base) > sizeof MPK_MT_KEPT_SUFFIX - 1 &&
        strcmp(base + strlen(base) - (sizeof MPK_MT_KEPT_SUFFIX - 1), MPK_MT_KEPT_SUFFIX) == 0)))
    return 0; /* an adapter copy or a kept shipped tensor, named by the membership */
  if (p->n_unlisted == p->cap_unlisted) {
    size_t nc = p->cap_unlisted ? p->cap_unlisted * 2 : 16;
    char **nu = realloc(p->unlisted, nc * sizeof *nu);
    if (!nu) return MPK_ENOMEM;
    p->unlisted = nu;
    p->cap_unlisted = nc;
  }
  if (!(p->unlisted[p->n_unlisted] = strdup(rel))) return MPK_ENOMEM;
  p->n_unlisted++;
  return 0;
}

static int check_unlisted(check *c) {
  struct mpk_mt_report_priv *p = c->p;
  if (c->tree.installed && c->iv) { /* the manifest's paths as this tree has them */
    if (!(c->listed = calloc(c->m->n_files ? c->m->n_files : 1, sizeof *c->listed))) return MPK_ENOMEM;
    for (size_t i = 0; i < c->m->n_files; i++) {
      if (!mpk_mt_tree_holds(&c->tree, c->iv, c->m->files[i].path)) continue;
      if (!(c->listed[c->n_listed] = disk(c, c->m->files[i].path))) return MPK_ENOMEM;
      c->n_listed++;
    }
    mpk_sort(c->listed, c->n_listed, sizeof *c->listed, cmp_str);
  }
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_walk_files(c->r->dir, unlisted_cb, c, &e);
  c->r->unlisted = (const char *const *)p->unlisted;
  c->r->n_unlisted = p->n_unlisted;
  if (rc == MPK_ENOMEM) return rc;
  if (rc) add_error(c, &e);
  for (size_t i = 0; i < p->n_unlisted && i < MAX_UNLISTED_LINES; i++) {
    char *abs = mpk_path_join(c->r->dir, p->unlisted[i]);
    note(c, "warning: %s is on disk but the manifest does not list it: it is not verified", abs ? abs : p->unlisted[i]);
    free(abs);
  }
  if (p->n_unlisted > MAX_UNLISTED_LINES)
    note(c, "warning: %zu more files on disk are not listed by the manifest", p->n_unlisted - MAX_UNLISTED_LINES);
  return 0;
}

/* ---------------------------------------------------------------- the check */

/* The rules of the manifest alone (what install applies before it fetches a byte). */
static void run_manifest(check *c) {
  for (size_t i = 0; i < c->m->n_variants; i++)
    if (checked(c, c->m->variants[i].id)) check_variant(c, i);
  check_patterns(c);
  check_listing(c);
}

static int run(check *c) {
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_mt_tree_open(c->r->dir, &c->tree, &e)) { /* an install record that cannot be trusted */
    if (e.code == MPK_ENOMEM) return MPK_ENOMEM;
    add_error(c, &e);
    return 0;
  }
  c->r->installed = c->tree.installed;
  if (!load_manifest(c)) return c->p->manifest_path ? 0 : MPK_ENOMEM; /* nothing else can be checked */
  int rc = select_variants(c);
  if (rc) return rc;
  run_manifest(c);
  check_required(c);
  check_checksums(c);
  if ((rc = check_integrity(c))) return rc;
  return check_unlisted(c);
}

int mpk_mt_check(const char *dir, const mpk_mt_check_options *given, mpk_mt_report **out, mpk_error *err) {
  if (!dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  mpk_mt_check_options opt;
  int orc = MPK_OPTIONS_READ(mpk_mt_check_options, &opt, given, err);
  if (orc) return orc;
  const mpk_mt_check_options *opts = &opt;
  if (opts->variant && opts->all_variants)
    return mpk_fail(err, MPK_EINVAL, dir, NULL, "give one variant or all variants, not both");
  if (!mpk_is_dir(dir)) return mpk_fail(err, MPK_ENOTFOUND, dir, NULL, "not a directory");
  mpk_mt_report *r = calloc(1, sizeof *r);
  struct mpk_mt_report_priv *p = r ? calloc(1, sizeof *p) : NULL;
  if (!p || !(p->dir = strdup(dir))) {
    free(p);
    free(r);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  r->priv_ = p;
  MPK_FINDINGS_PUBLISH(&p->found, r);
  r->dir = p->dir;
  r->all_variants = opts->all_variants ? 1 : 0;
  check c = {.r = r, .p = p, .o = opts, .root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  int rc = run(&c);
  if (c.root_fd >= 0) close(c.root_fd);
  mpk_mt_tree_free(&c.tree);
  mpk_mt_download_plan_free(c.scope);
  for (size_t i = 0; i < c.n_listed; i++) free(c.listed[i]);
  free(c.listed);
  r->hashed = c.m && !opts->no_hash;
  if (!rc && p->found.oom) rc = MPK_ENOMEM; /* a problem could not be kept: never report "all hold" */
  if (rc) {
    mpk_mt_report_free(r);
    return rc == MPK_ECANCELLED ? mpk_fail(err, rc, dir, NULL, "cancelled")
                                : mpk_fail(err, rc, dir, NULL, "out of memory");
  }
  *out = r;
  return 0;
}

int mpk_mt_check_manifest(const mpk_mt_manifest *m, const char *file, const mpk_mt_check_options *given,
                          mpk_mt_report **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, file ? file : MPK_MT_MANIFEST_FILENAME, NULL, "no place for the report");
  *out = NULL;
  if (!m) return mpk_fail(err, MPK_EINVAL, file ? file : MPK_MT_MANIFEST_FILENAME, NULL, "no manifest");
  mpk_mt_check_options opt;
  int rc = MPK_OPTIONS_READ(mpk_mt_check_options, &opt, given, err);
  if (rc) return rc;
  if (opt.variant && opt.all_variants)
    return mpk_fail(err, MPK_EINVAL, file, NULL, "give one variant or all variants, not both");
  mpk_mt_report *r = calloc(1, sizeof *r);
  struct mpk_mt_report_priv *p = r ? calloc(1, sizeof *p) : NULL;
  const char *shown = file ? file : MPK_MT_MANIFEST_FILENAME;
  if (!p || !(p->dir = strdup(shown)) || !(p->manifest_path = strdup(shown))) {
    if (p) free(p->dir);
    free(p);
    free(r);
    return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  }
  r->priv_ = p;
  MPK_FINDINGS_PUBLISH(&p->found, r);
  r->dir = p->dir;
  r->manifest = m; /* borrowed: p->manifest stays NULL */
  r->all_variants = opt.all_variants ? 1 : 0;
  check c = {.r = r, .p = p, .o = &opt, .root_fd = -1, .m = m, .manifest_only = true};
  rc = select_variants(&c);
  if (!rc) run_manifest(&c);
  if (!rc && p->found.oom) rc = MPK_ENOMEM;
  if (rc) {
    mpk_mt_report_free(r);
    return mpk_fail(err, rc, shown, NULL, "out of memory");
  }
  *out = r;
  return 0;
}

void mpk_mt_report_free(mpk_mt_report *r) {
  if (!r) return;
  struct mpk_mt_report_priv *p = r->priv_;
  if (p) {
    mpk_findings_free(&p->found);
    mpk_mt_manifest_free(p->manifest);
    for (size_t i = 0; i < p->n_unlisted; i++) free(p->unlisted[i]);
    free(p->unlisted);
    for (size_t i = 0; i < p->n_known; i++) free(p->known[i].path);
    free(p->known);
    free((void *)p->variants);
    free(p->manifest_path);
    free(p->dir);
    free(p);
  }
  free(r);
}
