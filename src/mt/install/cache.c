/* The installed cache as a whole (docs/mt-cache.md): what is installed (mt list), removing one
   install (mt remove), and collecting the cache's garbage (mt gc). The mechanisms are the fetch
   engine's (retire.c: readers, retired trees, gc; stage.c: the lock); what is MT's is here: the
   trees' names, the two install records, the repo id check. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mt/mt.h"
#include "mt/install/install.h"
#include "mt/merge/merge.h"
#include "fetch/engine.h"

/* ---------------------------------------------------------------- records */

/* What the tree's records say, through the one reader of an installed model (mpk_mt_installed_open,
   mt/package/tree.c: modelpkg's record, else the reference's install_record.json). 0 with the
   fields filled; MPK_ENOMEM; or the reader's refusal in `why` (not an installed model, records that
   disagree or are malformed) with nothing filled. */
static int read_records(const char *tree, mpk_mt_cache_entry *e, mpk_error *why) {
  mpk_mt_installed *ins = NULL;
  int rc = mpk_mt_installed_open(tree, &ins, why);
  if (rc) return rc == MPK_ENOMEM ? rc : 1;
  e->record = ins->record == MPK_MT_RECORD_MODELPKG    ? MPK_MT_INSTALL_RECORD
              : ins->record == MPK_MT_RECORD_REFERENCE ? MPK_MT_REFERENCE_INSTALL_RECORD
                                                       : NULL;
  e->installed_at_ms = ins->installed_at_ms;
  rc = (e->repo_id = strdup(ins->repo_id)) ? 0 : MPK_ENOMEM;
  if (!rc && ins->variant && !(e->variant = strdup(ins->variant))) rc = MPK_ENOMEM;
  if (!rc && ins->n_features && !(e->features = calloc(ins->n_features, sizeof *e->features))) rc = MPK_ENOMEM;
  for (size_t i = 0; !rc && i < ins->n_features; i++)
    if (!(e->features[e->n_features++] = strdup(ins->features[i]))) rc = MPK_ENOMEM;
  mpk_mt_installed_free(ins);
  return rc;
}

/* ---------------------------------------------------------------- list */

static void entry_free(mpk_mt_cache_entry *e) {
  free(e->name);
  free(e->repo_id);
  free(e->variant);
  for (size_t i = 0; i < e->n_features; i++) free(e->features[i]);
  free(e->features);
  for (size_t i = 0; i < e->n_adapters; i++) free(e->adapters[i]);
  free(e->adapters);
}

/* What the device did to the model since it was installed: the adapters merged into it (their
   membership) and the load gate's last verification (its stamp). Read-only, best effort: a tree
   whose manifest or inference directory cannot be read has neither (check says why). */
static int device_state(const char *shown, mpk_mt_cache_entry *en) {
  mpk_mt_located loc;
  mpk_error e;
  if (mpk_mt_locate(shown, NULL, &loc, &e)) return e.code == MPK_ENOMEM ? MPK_ENOMEM : 0;
  int rc = 0;
  int64_t at = 0;
  size_t n = 0;
  if (loc.inference_dir && !mpk_mt_stamp_info(loc.inference_dir, &at, &n, &e)) {
    en->verified_at_ms = at;
    en->verified_files = n;
  }
  int dfd = -1;
  json_t *members = NULL;
  if (loc.inference_rel && !mpk_mt_open_inference(shown, &loc, &dfd, &e) && dfd >= 0 &&
      !mpk_mt_members_load(dfd, loc.inference_dir, &members, &e) && members) {
    const json_t *as = json_object_get(members, "adapters"), *a;
    size_t i;
    if (json_array_size(as) && !(en->adapters = calloc(json_array_size(as), sizeof *en->adapters))) rc = MPK_ENOMEM;
    json_array_foreach(as, i, a) {
      if (rc || !(en->adapters[i] = strdup(json_string_value(json_object_get(a, "sha256"))))) {
        rc = MPK_ENOMEM;
        break;
      }
      en->n_adapters = i + 1;
    }
  }
  json_decref(members);
  if (dfd >= 0) close(dfd);
  mpk_mt_located_free(&loc);
  return rc;
}

void mpk_mt_cache_listing_free(mpk_mt_cache_listing *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) entry_free(&l->entries[i]);
  free(l->entries);
  for (size_t i = 0; i < l->n_notes; i++) free(l->notes[i]);
  free(l->notes);
  free(l);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int add_note(mpk_mt_cache_listing *l, const char *name, const char *what) {
  char **g = realloc(l->notes, (l->n_notes + 1) * sizeof *g);
  if (!g) return MPK_ENOMEM;
  l->notes = g;
  size_t len = strlen(name) + strlen(what) + 3;
  if (!(l->notes[l->n_notes] = malloc(len))) return MPK_ENOMEM;
  snprintf(l->notes[l->n_notes++], len, "%s: %s", name, what);
  return 0;
}

int mpk_mt_cache_list(const char *cache_dir, mpk_mt_cache_listing **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!cache_dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  int cfd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cfd < 0)
    return errno == ENOENT ? mpk_fail(err, MPK_ENOTFOUND, cache_dir, NULL, "not found")
                           : mpk_fail(err, MPK_EIO, cache_dir, NULL, "cannot open the cache directory: %s", strerror(errno));
  mpk_mt_cache_listing *l = calloc(1, sizeof *l);
  size_t n = 0;
  char **names = mpk_fx_list_dir(cfd, &n);
  int rc = l ? 0 : MPK_ENOMEM;
  if (!rc && n && !(l->entries = calloc(n, sizeof *l->entries))) rc = MPK_ENOMEM;
  if (names) mpk_sort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n && !rc; i++) {
    const char *nm = names[i];
    if (nm[0] == '.') continue; /* .staging, and dot names (as the reference's CacheIndex) */
    struct stat st;
    if (fstatat(cfd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      rc = add_note(l, nm, "is a symbolic link: not listed (never followed)");
      continue;
    }
    if (!S_ISDIR(st.st_mode)) continue;
    int tfd;
    mpk_error e;
    if (mpk_fx_open_tree(cfd, cache_dir, nm, &tfd, &e) || tfd < 0) continue;
    mpk_mt_cache_entry *en = &l->entries[l->n];
    char *shown = mpk_path_join(cache_dir, nm);
    mpk_error why;
    mpk_error_clear(&why);
    int r = shown ? read_records(shown, en, &why) : MPK_ENOMEM;
    if (r == 1) /* listed by its name all the same, as the reference's CacheIndex lists every directory */
      r = add_note(l, nm, why.message);
    if (r || !(en->name = strdup(nm)) || (!en->repo_id && !(en->repo_id = mpk_mt_unsanitize_repo_dir(nm)))) rc = MPK_ENOMEM;
    struct stat ms;
    en->has_manifest = fstatat(tfd, MPK_MT_MANIFEST_FILENAME, &ms, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(ms.st_mode);
    en->bytes = mpk_fx_tree_bytes(cfd, nm, &en->disk_bytes);
    if (!rc && shown && en->has_manifest && device_state(shown, en)) rc = MPK_ENOMEM;
    free(shown);
    close(tfd);
    l->n++;
  }
  mpk_fx_free_names(names, n);
  close(cfd);
  if (rc) {
    mpk_mt_cache_listing_free(l);
    return mpk_fail(err, MPK_ENOMEM, cache_dir, NULL, "out of memory");
  }
  *out = l;
  return 0;
}

/* ---------------------------------------------------------------- remove */

void mpk_mt_cache_remove_result_free(mpk_mt_cache_remove_result *r) {
  if (!r) return;
  free(r->repo_dir);
  mpk_free(r->retired_path);
  memset(r, 0, sizeof *r);
}

int mpk_mt_cache_remove(const char *cache_dir, const char *repo_id, const mpk_mt_cache_remove_options *opts,
                        mpk_mt_cache_remove_result *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!cache_dir || !repo_id) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_mt_cache_remove_options o;
  int rc = MPK_OPTIONS_READ(mpk_mt_cache_remove_options, &o, opts, err);
  if (rc) return rc;
  char name[MPK_MT_REPO_DIR_MAX + 1];
  if ((rc = mpk_mt_sanitize_repo_id(repo_id, name, sizeof name, err))) return rc;
  if (strcmp(name, MPK_FETCH_STAGING_DIR) == 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "repo id %s would name the installer's staging directory", repo_id);
  /* Nothing installed: said so, and nothing created (no stage, no lock). */
  char *target = mpk_path_join(cache_dir, name);
  if (!target) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  struct stat st;
  if (lstat(target, &st) != 0) {
    rc = errno == ENOENT ? mpk_fail(err, MPK_ENOTFOUND, target, NULL, "%s is not installed in this cache", repo_id)
                         : mpk_fail(err, MPK_EIO, target, NULL, "cannot stat: %s", strerror(errno));
    free(target);
    return rc;
  }
  free(target);
  mpk_fetch_stage_options so = {.struct_size = sizeof so, .record_name = MPK_MT_INSTALL_RECORD,
                                .wait_for_lock = o.wait_for_lock};
  mpk_fetch_stage *stg = NULL;
  if ((rc = mpk_fetch_stage_open(cache_dir, name, &so, &stg, err))) return rc; /* the lock; recovery */
  int tfd = -1;
  if ((rc = mpk_fx_open_tree(stg->cache_fd, stg->cache_dir, stg->name, &tfd, err))) goto done; /* a link: refused */
  if (tfd < 0) {
    rc = mpk_fail(err, MPK_ENOTFOUND, stg->target, NULL, "%s is not installed in this cache", repo_id);
    goto done;
  }
  {
    /* The rule is not one-to-one: a tree whose record names another repo id is not this one. */
    mpk_mt_cache_entry e;
    memset(&e, 0, sizeof e);
    mpk_error why;
    /* a tree the reader refuses (no record, records that disagree) is removed by its name */
    if (read_records(stg->target, &e, &why) == MPK_ENOMEM) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    else if (e.record && e.repo_id && strcmp(e.repo_id, repo_id) != 0)
      rc = mpk_fail(err, MPK_EMISMATCH, stg->target, NULL,
                    "holds repo %s, not %s (both sanitize to %s): refusing to remove it", e.repo_id, repo_id, name);
    entry_free(&e);
    close(tfd);
    if (rc) goto done;
  }
  uint64_t bytes = mpk_fx_tree_bytes(stg->cache_fd, stg->name, NULL);
  int held = 0;
  char *retired = NULL;
  if ((rc = mpk_fetch_stage_remove(stg, &held, &retired, err))) goto done;
  if (out) {
    out->repo_dir = strdup(stg->target);
    out->held = held;
    out->retired_path = retired;
    out->bytes = bytes;
    retired = NULL;
    if (!out->repo_dir) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory (the tree was removed)");
  }
  mpk_free(retired);
done:
  mpk_fetch_stage_close(stg);
  if (rc && out) mpk_mt_cache_remove_result_free(out);
  return rc;
}

/* ---------------------------------------------------------------- gc */

int mpk_mt_cache_gc(const char *cache_dir, const mpk_mt_cache_gc_options *opts, mpk_fetch_gc_result **out,
                    mpk_error *err) {
  if (out) *out = NULL;
  if (!cache_dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_mt_cache_gc_options o;
  int rc = MPK_OPTIONS_READ(mpk_mt_cache_gc_options, &o, opts, err);
  if (rc) return rc;
  mpk_fetch_gc_options fo = {.struct_size = sizeof fo, .record_name = MPK_MT_INSTALL_RECORD, .dry_run = o.dry_run};
  return mpk_fetch_gc(cache_dir, &fo, out, err);
}
