/* mt restore: every tensor modelpkg's merge record names back to its shipped bytes — from the base
   a --keep-base merge kept, else re-fetched from the install source through the fetch engine —
   each verified against the shipped digest before anything is replaced, then one merge-named
   transaction over the tensors, their sidecars, the emptied merge record and the emptied adapter
   membership. Rules: docs/mt-restore.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/engine.h"
#include "mt/merge/merge.h"

struct mpk_mt_restore_priv {
  mpk_arena *arena;
};

void mpk_mt_restore_report_free(mpk_mt_restore_report *r) {
  if (!r) return;
  if (r->priv_) mpk_arena_free(r->priv_->arena);
  free(r->priv_);
  free(r);
}

/* One file to put back. */
typedef struct item {
  const char *name;       /* in the inference directory */
  char shipped[65];       /* the shipped bytes' digest */
  const char *kept;       /* the kept copy's name, or NULL */
  char *pkg_path;         /* its path in the package (the source) */
  uint64_t size;
  bool fetch;
  bool sidecar;           /* a sidecar: `shipped` is its own digest */
  bool synthesize;        /* a sidecar written as "<tensor digest>\n" */
  char tensor_sha[65];    /* for a synthesized sidecar */
  const char *from;
} item;

typedef struct restore {
  mpk_mt_restore_options o;
  const char *dir;
  mpk_mt_located loc;
  int ifd;
  mpk_mt_handoff *map;
  json_t *record, *members;
  item *items;
  size_t n;
  mpk_fetch_stage *stage;
  mpk_fetch_source *src;
  char *source;
  mpk_findings notes;
} restore;

/* The tree `dir` as its installer names it: the cache and the stage name. */
static int split_tree(const char *dir, char **cache, char **name) {
  char *d = realpath(dir, NULL); /* "." or "x/.." name no stage: the directory's real name does */
  if (!d) d = strdup(dir);
  if (!d) return MPK_ENOMEM;
  size_t n = strlen(d);
  while (n > 1 && d[n - 1] == '/') d[--n] = '\0';
  char *slash = strrchr(d, '/');
  if (!slash) {
    *cache = strdup(".");
    *name = strdup(d);
  } else {
    *name = strdup(slash + 1);
    *slash = '\0';
    *cache = strdup(slash == d ? "/" : d);
  }
  free(d);
  return *cache && *name ? 0 : MPK_ENOMEM;
}

/* An installed tree <cache>/<name>: the stage lock every writer of the repo holds
   (<cache>/.staging/<name>/lock, the fetch engine's), taken before the directory's transaction
   lock. Also where a package's re-fetch is staged (<parent>/.staging/<name>/). */
int mpk_mt_tree_lock(const char *dir, int wait_for_lock, mpk_fetch_stage **out, mpk_error *err) {
  char *cache = NULL, *name = NULL;
  int rc = split_tree(dir, &cache, &name);
  if (rc) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  mpk_fetch_stage_options so = {.struct_size = sizeof so, .record_name = MPK_MT_INSTALL_RECORD,
                                .wait_for_lock = wait_for_lock};
  if (!rc) rc = mpk_fetch_stage_open(cache, name, &so, out, err);
  free(cache);
  free(name);
  return rc;
}

static int open_stage(restore *r, mpk_error *err) {
  return mpk_mt_tree_lock(r->dir, r->o.wait_for_lock, &r->stage, err);
}


/* The entry and role of the map that name `loc`, or NULL. */
static const mpk_mt_handoff_entry *map_entry(const mpk_mt_handoff *map, const char *loc, int *role) {
  for (size_t i = 0; map && i < map->n_entries; i++)
    for (int r = 0; r < MPK_MT_ROLE_COUNT; r++)
      if (map->entries[i].external_data_location[r] && strcmp(map->entries[i].external_data_location[r], loc) == 0) {
        *role = r;
        return &map->entries[i];
      }
  return NULL;
}

static int add_item(restore *r, item it, mpk_error *err) {
  item *n = realloc(r->items, (r->n + 1) * sizeof *n);
  if (!n) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  r->items = n;
  r->items[r->n++] = it;
  return 0;
}

/* Decide, per merged tensor and per sidecar, where its shipped bytes come from. */
static int plan(restore *r, mpk_error *err) {
  char *inf_rel = mpk_mt_inference_rel(r->loc.variant);
  if (!inf_rel) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  const json_t *kept = json_object_get(r->members, "kept_base");
  const char *name;
  json_t *t;
  int rc = 0;
  char file[1024];
  snprintf(file, sizeof file, "%s/%s", r->loc.inference_dir, MPK_MT_MERGE_RECORD);
  json_object_foreach(json_object_get(r->record, "tensors"), name, t) {
    const char *shipped = json_string_value(json_object_get(t, "shipped_sha256"));
    if (!shipped) {
      rc = mpk_fail(err, MPK_ENOTFOUND, file, NULL,
                    "%s: the record has no shipped digest for it, so restored bytes could not be verified: nothing was "
                    "changed",
                    name);
      break;
    }
    int role;
    const mpk_mt_handoff_entry *e = map_entry(r->map, name, &role);
    if (e && e->sha256[role] && strcmp(e->sha256[role], shipped) != 0) {
      rc = mpk_fail(err, MPK_EMISMATCH, file, NULL,
                    "%s: the record's shipped digest %s is not the map's %s (a record of another package): nothing was "
                    "changed",
                    name, shipped, e->sha256[role]);
      break;
    }
    item it = {.name = name};
    snprintf(it.shipped, sizeof it.shipped, "%s", shipped);
    const json_t *k = json_object_get(kept, name);
    it.kept = json_string_value(json_object_get(k, "file"));
    it.pkg_path = *inf_rel ? mpk_path_join(inf_rel, name) : strdup(name);
    if (!it.pkg_path) {
      rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
      break;
    }
    const mpk_mt_file *mf = mpk_mt_manifest_file(r->loc.manifest, it.pkg_path);
    if (!it.kept) {
      if (!mf || !mf->has_size) {
        rc = mpk_fail(err, MPK_ENOTFOUND, r->loc.manifest_file, NULL,
                      "%s: no kept base, and the manifest lists no size for %s to re-fetch it: nothing was changed",
                      name, it.pkg_path);
        free(it.pkg_path);
        break;
      }
      it.fetch = true;
      it.size = mf->size;
    }
    if ((rc = add_item(r, it, err))) {
      free(it.pkg_path);
      break;
    }
    /* Its sidecar: the kept one; else the manifest's (re-fetched unless "<digest>\n" is it); else
       "<digest>\n", which is what the load gate compares. */
    item sc = {.sidecar = true};
    char side[300];
    snprintf(side, sizeof side, "%s.sha256", name);
    const char *kept_side = json_string_value(json_object_get(k, "sidecar"));
    char *side_pkg = *inf_rel ? mpk_path_join(inf_rel, side) : strdup(side);
    if (!side_pkg) {
      rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
      break;
    }
    sc.name = strdup(side);
    sc.pkg_path = side_pkg;
    snprintf(sc.tensor_sha, sizeof sc.tensor_sha, "%s", shipped);
    const mpk_mt_file *sf = mpk_mt_manifest_file(r->loc.manifest, side_pkg);
    char line[66];
    snprintf(line, sizeof line, "%s\n", shipped);
    uint8_t d[32];
    char want[65];
    mpk_sha256(line, 65, d);
    mpk_hex(d, 32, want);
    if (kept_side) {
      sc.kept = kept_side;
      snprintf(sc.shipped, sizeof sc.shipped, "%s", sf && sf->sha256 ? sf->sha256 : "");
    } else if (sf && sf->sha256 && strcmp(sf->sha256, want) != 0) {
      if (!sf->has_size) {
        rc = mpk_fail(err, MPK_ENOTFOUND, r->loc.manifest_file, NULL,
                      "%s: the manifest lists no size for it to re-fetch it: nothing was changed", side_pkg);
        free(sc.pkg_path);
        free((char *)sc.name);
        break;
      }
      sc.fetch = true;
      sc.size = sf->size;
      snprintf(sc.shipped, sizeof sc.shipped, "%s", sf->sha256);
    } else {
      sc.synthesize = true;
      snprintf(sc.shipped, sizeof sc.shipped, "%s", want);
    }
    if ((rc = add_item(r, sc, err))) {
      free(sc.pkg_path);
      free((char *)sc.name);
      break;
    }
  }
  free(inf_rel);
  return rc;
}

/* Re-fetch every item without a kept copy into the stage's new/, verified by the engine. */
static int fetch(restore *r, mpk_error *err) {
  size_t n = 0;
  for (size_t i = 0; i < r->n; i++) n += r->items[i].fetch;
  if (!n) return 0;
  const char *src = r->o.source ? r->o.source : r->source;
  if (!src) {
    for (size_t i = 0; i < r->n; i++)
      if (r->items[i].fetch)
        return mpk_fail(err, MPK_ENOTFOUND, r->loc.inference_dir, NULL,
                        "%s: no kept base (merge with --keep-base keeps one) and no install source to re-fetch it "
                        "from: give --source DIR|URL; nothing was changed",
                        r->items[i].name);
  }
  mpk_fetch_file *files = calloc(n, sizeof *files);
  if (!files) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < r->n; i++)
    if (r->items[i].fetch)
      files[k++] = (mpk_fetch_file){.path = r->items[i].pkg_path, .size = r->items[i].size,
                                    .algo = MPK_DIGEST_SHA256, .digest = r->items[i].shipped};
  int rc = mpk_fetch_source_open(src, NULL, &r->src, err);
  if (!rc && !r->stage) rc = open_stage(r, err);
  mpk_fetch_options fo = {.struct_size = sizeof fo, .plan_name = "the shipped digest"};
  if (!rc) rc = mpk_fetch_download(r->stage, r->src, files, n, &fo, NULL, err);
  free(files);
  if (rc) return rc;
  for (size_t i = 0; i < r->n; i++) {
    if (!r->items[i].fetch) continue;
    size_t len = strlen(src) + 32;
    char *f = malloc(len);
    if (f) snprintf(f, len, "re-fetched from %s", src);
    r->items[i].from = f;
  }
  return 0;
}

static int stage_all(restore *r, mpk_txn *txn, mpk_error *err) {
  const char *inf = r->loc.inference_dir;
  int rc = 0;
  for (size_t i = 0; i < r->n && !rc; i++) {
    item *it = &r->items[i];
    char hex[65] = "";
    if (it->synthesize) {
      char line[66];
      snprintf(line, sizeof line, "%s\n", it->tensor_sha);
      rc = mpk_txn_stage_bytes(txn, it->name, line, 65, err);
      if (!it->from) it->from = strdup("written from the shipped digest");
      continue;
    }
    if (it->kept) {
      rc = mpk_mt_stage_copy_of(r->ifd, inf, it->kept, it->name, txn, hex, err);
      if (!it->from) it->from = strdup("kept base");
    } else {
      rc = mpk_mt_stage_copy_of(r->stage->new_fd, r->stage->new_dir, it->pkg_path, it->name, txn, hex, err);
    }
    if (rc) break;
    if (it->shipped[0] && strcmp(hex, it->shipped) != 0)
      rc = mpk_fail(err, MPK_EMISMATCH, inf, NULL,
                    "%s: the %s hashes to %s, not the shipped %s: nothing was changed", it->name,
                    it->kept ? "kept base" : "re-fetched file", hex, it->shipped);
    if (!it->shipped[0]) snprintf(it->shipped, sizeof it->shipped, "%s", hex);
  }
  /* The merge record and the membership, emptied in the same transaction (removed right after). */
  static const char empty_record[] = "{\n  \"format\": \"modelpkg-merge-record\",\n  \"tensors\": {},\n  \"version\": 1\n}\n";
  static const char empty_members[] =
      "{\n  \"adapters\": [],\n  \"format\": \"modelpkg-adapters\",\n  \"kept_base\": {},\n  \"version\": 1\n}\n";
  if (!rc) rc = mpk_txn_stage_bytes(txn, MPK_MT_MERGE_RECORD, empty_record, sizeof empty_record - 1, err);
  if (!rc && r->members) rc = mpk_txn_stage_bytes(txn, MPK_MT_MEMBERS, empty_members, sizeof empty_members - 1, err);
  return rc;
}

/* After the commit (or finding one a crash left): the emptied documents, the kept bases and the
   adapter copies go. An empty record is the same as none, so a crash in between changes nothing. */
static int cleanup(int ifd, int stop_after) {
  if (stop_after == 0) return MPK_TXN_STOPPED;
  unlinkat(ifd, MPK_MT_MERGE_RECORD, 0);
  if (stop_after == 1) return MPK_TXN_STOPPED;
  unlinkat(ifd, MPK_MT_MEMBERS, 0);
  if (stop_after == 2) return MPK_TXN_STOPPED;
  mpk_mt_members_sweep(ifd, NULL);
  fsync(ifd);
  return 0;
}

static int report(restore *r, bool was_merged, bool written, mpk_mt_restore_report **out, mpk_error *err) {
  mpk_mt_restore_report *o = calloc(1, sizeof *o);
  mpk_arena *a = mpk_arena_new();
  if (o) o->priv_ = calloc(1, sizeof *o->priv_);
  if (!o || !a || !o->priv_) goto oom;
  o->priv_->arena = a;
  o->was_merged = was_merged;
  o->written = written;
  if (!(o->variant = mpk_arena_strdup(a, r->loc.variant->id)) || !(o->inference_dir = mpk_arena_strdup(a, r->loc.inference_dir)))
    goto oom;
  mpk_mt_restore_file *fs = mpk_arena_array(a, r->n + 1, sizeof *fs);
  if (!fs) goto oom;
  for (size_t i = 0; i < r->n; i++)
    if (!(fs[i].name = mpk_arena_strdup(a, r->items[i].name)) || !(fs[i].sha256 = mpk_arena_strdup(a, r->items[i].shipped)) ||
        !(fs[i].from = mpk_arena_strdup(a, r->items[i].from ? r->items[i].from : "")))
      goto oom;
  o->files = fs;
  o->n_files = r->n;
  size_t na = json_array_size(json_object_get(r->members, "adapters"));
  const char **as = mpk_arena_array(a, na + 1, sizeof *as);
  if (!as) goto oom;
  for (size_t i = 0; i < na; i++)
    if (!(as[i] = mpk_arena_strdup(a, json_string_value(json_object_get(json_array_get(json_object_get(r->members, "adapters"), i), "sha256")))))
      goto oom;
  o->adapters = as;
  o->n_adapters = na;
  const char **ns = mpk_arena_array(a, r->notes.n_notes + 1, sizeof *ns);
  if (!ns) goto oom;
  for (size_t i = 0; i < r->notes.n_notes; i++)
    if (!(ns[i] = mpk_arena_strdup(a, r->notes.notes[i]))) goto oom;
  o->notes = ns;
  o->n_notes = r->notes.n_notes;
  *out = o;
  return 0;
oom:
  if (o && o->priv_) mpk_mt_restore_report_free(o);
  else {
    free(o);
    mpk_arena_free(a);
  }
  return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
}

int mpk_mt_restore(const char *dir, const mpk_mt_restore_options *given, mpk_mt_restore_report **out, mpk_error *err) {
  return mpk_mt_restore_until(dir, given, -1, out, err);
}

int mpk_mt_restore_until(const char *dir, const mpk_mt_restore_options *given, int stop_after,
                         mpk_mt_restore_report **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (!dir) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  restore r = {.dir = dir, .ifd = -1};
  int rc = MPK_OPTIONS_READ(mpk_mt_restore_options, &r.o, given, err);
  if (rc) return rc;
  mpk_txn *txn = NULL;
  /* An installed tree: every writer of the repo (install, merge, restore, remove) holds its stage
     lock, taken before the directory's transaction lock. */
  {
    mpk_mt_tree tree;
    if ((rc = mpk_mt_tree_open(dir, &tree, err))) goto out;
    bool installed = tree.installed;
    if (tree.source && !(r.source = strdup(tree.source))) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    mpk_mt_tree_free(&tree);
    if (rc || (installed && (rc = open_stage(&r, err)))) goto out;
  }
  if ((rc = mpk_mt_locate(dir, r.o.variant, &r.loc, err))) goto out;
  if ((rc = mpk_mt_open_inference(dir, &r.loc, &r.ifd, err))) goto out;
  if (r.ifd < 0) {
    rc = mpk_fail(err, MPK_ENOTFOUND, r.loc.manifest_file, NULL, "variant \"%s\" has no inference directory: nothing to restore",
                  r.loc.variant->id);
    goto out;
  }
  mpk_txn_outcome how;
  if ((rc = mpk_txn_begin_at(r.ifd, r.loc.inference_dir, MPK_MT_MERGE_TXN, &how, &txn, err))) goto out;
  if (how.action == MPK_TXN_ROLLED_FORWARD)
    mpk_findings_note(&r.notes, "an interrupted merge or restore had committed: finished it first");
  else if (how.action == MPK_TXN_ROLLED_BACK)
    mpk_findings_note(&r.notes, "an interrupted merge or restore had not committed: undone first");
  if ((rc = mpk_mt_record_load(r.ifd, r.loc.inference_dir, &r.record, err)) ||
      (rc = mpk_mt_members_load(r.ifd, r.loc.inference_dir, &r.members, err)))
    goto out;
  if (!r.record || json_object_size(json_object_get(r.record, "tensors")) == 0) {
    cleanup(r.ifd, -1); /* what a restore interrupted after its commit left, if anything */
    mpk_findings_note(&r.notes, "no tensor of variant \"%s\" is merged: nothing to restore", r.loc.variant->id);
    json_decref(r.members);
    r.members = NULL;
    rc = report(&r, false, false, out, err);
    goto out;
  }
  if ((rc = mpk_mt_load_map(dir, &r.loc, &r.map, err)) && rc != MPK_ENOTFOUND) goto out;
  rc = 0;
  if ((rc = plan(&r, err)) || (rc = fetch(&r, err)) || (rc = stage_all(&r, txn, err))) goto out;
  if (stop_after >= 0 && stop_after < 100) {
    rc = mpk_txn_commit_until(txn, stop_after, err);
    if (rc == MPK_TXN_STOPPED) {
      txn = NULL; /* a crash: left as it is, the child _exit()s */
      goto out;
    }
  } else {
    rc = mpk_txn_commit(txn, err);
  }
  txn = NULL;
  if (rc) goto out;
  if (cleanup(r.ifd, stop_after >= 100 ? stop_after - 100 : -1) == MPK_TXN_STOPPED) {
    rc = MPK_TXN_STOPPED;
    goto out;
  }
#if MPK_WITH_FETCH /* without it there is no stage: mpk_fetch_stage_open() said so */
  if (r.stage) { /* the re-fetched copies: the stage is left as a finished install leaves it */
    mpk_fx_close(&r.stage->new_fd);
    mpk_fx_close(&r.stage->parts_fd);
    mpk_fx_rm_tree(r.stage->staging_fd, "new", 0);
    mpk_fx_rm_tree(r.stage->staging_fd, "parts", 0);
  }
#endif
  rc = report(&r, true, true, out, err);
out:
  mpk_txn_abort(txn);
  mpk_fetch_stage_close(r.stage);
  mpk_fetch_source_free(r.src);
  for (size_t i = 0; i < r.n; i++) {
    free(r.items[i].pkg_path);
    free((char *)r.items[i].from);
    if (r.items[i].sidecar) free((char *)r.items[i].name);
  }
  free(r.items);
  free(r.source);
  json_decref(r.record);
  json_decref(r.members);
  mpk_mt_handoff_free(r.map);
  if (r.ifd >= 0) close(r.ifd);
  mpk_mt_located_free(&r.loc);
  mpk_findings_free(&r.notes);
  return rc;
}
