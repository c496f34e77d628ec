/* The fetch engine's commit and recovery (docs/fetch.md, docs/mt-install.md "Commit and crash
   analysis"): the client's documents and the staged tree made durable, a commit marker, one atomic
   swap of the tree into place, cleanup; and the recovery that finishes an interrupted commit using
   only the marker and the two trees' records. */
#define _GNU_SOURCE /* renameat2 (RENAME_EXCHANGE) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fetch/engine.h"

/* One durable step of the commit done; a crash test may stop right after it. */
#define STEP(s)                                                  \
  do {                                                           \
    if (++(s)->step == (s)->stop_after) return MPK_FETCH_STOPPED; \
  } while (0)

/* ---------------------------------------------------------------- commit and recovery */

/* new/ of the staging directory is a real directory (and, when it is open, the one we filled). */
static int check_new(mpk_fetch_stage *s, mpk_error *err) {
  char shown[4096];
  snprintf(shown, sizeof shown, "%s/new", s->staging);
  struct stat st, mine;
  if (fstatat(s->staging_fd, "new", &st, AT_SYMLINK_NOFOLLOW) != 0)
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot stat: %s", strerror(errno));
  if (S_ISLNK(st.st_mode)) return mpk_fx_refuse_link(err, shown);
  if (!S_ISDIR(st.st_mode) ||
      (s->new_fd >= 0 && (fstat(s->new_fd, &mine) != 0 || mine.st_dev != st.st_dev || mine.st_ino != st.st_ino)))
    return mpk_fail(err, MPK_EIO, shown, NULL, "changed while the installer held the lock: refused");
  return 0;
}

/* Put new/ (complete) at the target. With a previous tree there: exchanged in one step
   (renameat2 RENAME_EXCHANGE; new/ then holds the old tree), or, where the file system cannot, the
   target moved to old/ and new/ renamed in (recovery rolls that forward: see the doc). A target
   that is a link is refused: it is never replaced, moved or followed. */
static int swap_in(mpk_fetch_stage *s, int *replaced, mpk_error *err) {
  *replaced = 0;
  int rc = check_new(s, err);
  if (rc) return rc;
  struct stat st;
  if (fstatat(s->cache_fd, s->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) return mpk_fx_refuse_link(err, s->target);
    if (!S_ISDIR(st.st_mode))
      return mpk_fail(err, MPK_EMALFORMED, s->target, NULL, "is %s, not a directory: refused (nothing was replaced)",
                      mpk_file_type_name(st.st_mode));
    *replaced = 1;
#ifdef RENAME_EXCHANGE
    if (!s->no_exchange) {
      if (renameat2(s->staging_fd, "new", s->cache_fd, s->name, RENAME_EXCHANGE) == 0) {
        STEP(s);
        return 0;
      }
      if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return mpk_fail(err, MPK_EIO, s->target, NULL, "cannot exchange the new install with the old one: %s",
                        strerror(errno));
    }
#endif
    if ((rc = mpk_fx_retire(s, s->staging_fd, "old", NULL, NULL, err))) return rc; /* a crash's leftover */
    if (renameat(s->cache_fd, s->name, s->staging_fd, "old") != 0)
      return mpk_fail(err, MPK_EIO, s->target, NULL, "cannot move the old install aside: %s", strerror(errno));
    STEP(s);
  } else if (errno != ENOENT) {
    return mpk_fail(err, MPK_EIO, s->target, NULL, "cannot stat: %s", strerror(errno));
  }
  if (renameat(s->staging_fd, "new", s->cache_fd, s->name) != 0)
    return mpk_fail(err, MPK_EIO, s->target, NULL, "cannot rename the new install into place: %s", strerror(errno));
  STEP(s);
  return 0;
}

/* The tree `name` of `dir` when it is a directory (*fd -1 when absent); a link or another kind of
   file there is refused. */
int mpk_fx_open_tree(int dir, const char *dir_shown, const char *name, int *fd, mpk_error *err) {
  int rc = mpk_fx_open_dir(dir, dir_shown, name, false, fd, err);
  if (rc == MPK_ENOTFOUND) {
    if (err) mpk_error_clear(err);
    rc = 0;
  }
  return rc;
}

/* The staging directory's own entries and the target, before anything is read or removed: each a
   directory or absent — a link is refused, never followed or deleted through. */
static int check_layout(mpk_fetch_stage *s, mpk_error *err) {
  static const char *const dirs[] = {"new", "parts", "old", MPK_FETCH_RETIRED_DIR};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    int fd;
    int rc = mpk_fx_open_tree(s->staging_fd, s->staging, dirs[i], &fd, err);
    mpk_fx_close(&fd);
    if (rc) return rc;
  }
  int fd;
  int rc = mpk_fx_open_tree(s->cache_fd, s->cache_dir, s->name, &fd, err);
  mpk_fx_close(&fd);
  return rc;
}

/* What a process killed while writing the commit marker left: "commit.json.tmp.XXXXXX", regular
   files only (anything else of that name is left alone, never followed). */
/* Removes the commit marker's temporaries; how many it removed. */
static size_t remove_marker_temps(mpk_fetch_stage *s) {
  size_t n, removed = 0;
  char **names = mpk_fx_list_dir(s->staging_fd, &n);
  size_t bl = strlen(MPK_FETCH_COMMIT_FILE);
  for (size_t i = 0; i < n; i++) {
    const char *e = names[i];
    struct stat st;
    if (strncmp(e, MPK_FETCH_COMMIT_FILE, bl) != 0 || strncmp(e + bl, ".tmp.", 5) != 0 || !mpk_is_temp_suffix(e + bl + 5))
      continue;
    if (fstatat(s->staging_fd, e, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && unlinkat(s->staging_fd, e, 0) == 0)
      removed++;
  }
  mpk_fx_free_names(names, n);
  return removed;
}

/* Finish what an interrupted commit left (under the lock): the marker names the new tree; if the
   target holds it, the swap happened and only cleanup remains; if the staging tree holds it, the
   swap is done now. */
int mpk_fx_recover(mpk_fetch_stage *s, mpk_error *err) {
  int rc = check_layout(s, err);
  if (rc) return rc;
  char id[65], tid[65], nid[65];
  mpk_fx_read_ids(s->staging_fd, s->staging, MPK_FETCH_COMMIT_FILE, id, NULL, 0);
  if (id[0]) {
    int tfd = -1;
    if ((rc = mpk_fx_open_tree(s->cache_fd, s->cache_dir, s->name, &tfd, err)) ||
        (rc = mpk_fx_open_tree(s->staging_fd, s->staging, "new", &s->new_fd, err))) {
      mpk_fx_close(&tfd);
      return rc;
    }
    mpk_fx_read_ids(tfd, s->target, s->record_name, tid, NULL, 0);
    mpk_fx_read_ids(s->new_fd, s->new_dir, s->record_name, nid, NULL, 0);
    mpk_fx_close(&tfd);
    if (strcmp(nid, id) == 0 && strcmp(tid, id) != 0) {
      int replaced;
      rc = swap_in(s, &replaced, err);
      mpk_fx_close(&s->new_fd);
      if (rc) return rc < 0 ? rc : 0;
      mpk_fsync_dir(s->cache_fd);
      mpk_fsync_dir(s->staging_fd);
    }
    mpk_fx_close(&s->new_fd);
    if (strcmp(nid, id) == 0 || strcmp(tid, id) == 0) {
      /* the old tree after an exchange (retired: a reader may hold it), or nothing */
      if ((rc = mpk_fx_retire(s, s->staging_fd, "new", NULL, NULL, err))) return rc;
      mpk_fx_rm_tree(s->staging_fd, "parts", 0);
    }
  }
  if ((rc = mpk_fx_retire(s, s->staging_fd, "old", NULL, NULL, err))) return rc; /* the old tree, two renames */
  bool marker = unlinkat(s->staging_fd, MPK_FETCH_COMMIT_FILE, 0) == 0;
  /* Only when something was removed: a fresh stage (every first install) has nothing to make
     durable, and a directory fsync is a journal commit (15 ms here) before the first byte. */
  if (remove_marker_temps(s) > 0 || marker) mpk_fsync_dir(s->staging_fd);
  return 0;
}

void mpk_fetch_new_id(char out[33]) {
  if (!out) return;
  uint8_t b[16];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
    uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    for (size_t i = 0; i < sizeof b; i++) b[i] = (uint8_t)(t >> (8 * (i % 8))) ^ (uint8_t)i;
  }
  mpk_hex(b, sizeof b, out);
}

/* The commit, step by step (docs/mt-install.md, "Commit and crash analysis"): each step is durable
   before the next, and the numbers are the steps a crash test can stop after. */
int mpk_fetch_commit(mpk_fetch_stage *s, const char *install_id, const mpk_fetch_doc *docs, size_t n_docs,
                     int *replaced_out, mpk_error *err) {
  int replaced_ = 0, *replaced = replaced_out ? replaced_out : &replaced_;
  *replaced = 0;
  if (!s || !install_id || (n_docs && !docs)) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (strlen(install_id) >= 65) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "an install id is at most 64 bytes");
  bool has_record = false;
  for (size_t i = 0; i < n_docs; i++) {
    const char *nm = docs[i].name;
    if (!nm || !*nm || strchr(nm, '/') || strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0 || (!docs[i].data && docs[i].len))
      return mpk_fail(err, MPK_EINVAL, NULL, NULL, "a commit document needs a name (one component) and its bytes");
    if (strcmp(nm, s->record_name) == 0) has_record = true;
  }
  /* Recovery decides from the record's installId: a commit without it could not be rolled forward. */
  if (!has_record)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the commit's documents must include the record %s", s->record_name);
  int rc = 0;
  if (s->new_fd < 0 && (rc = mpk_fx_open_dir(s->staging_fd, s->staging, "new", true, &s->new_fd, err))) return rc;
  s->step = 0;
  for (size_t i = 0; i < n_docs; i++) {
    if ((rc = mpk_fx_write_at(s->new_fd, s->new_dir, docs[i].name, docs[i].data, docs[i].len, true, err))) return rc;
    STEP(s); /* 1: the manifest, 2: the install record (mt install) */
  }
  /* Every directory of the new tree durable before the marker says the tree is complete. */
  mpk_fx_fsync_tree(s->new_fd, 0);
  mpk_fsync_dir(s->staging_fd);
  STEP(s); /* 3: the tree synced */
  json_t *marker = json_pack("{s:s}", "installId", install_id);
  if ((rc = mpk_fx_write_json_at(s->staging_fd, s->staging, MPK_FETCH_COMMIT_FILE, marker, true, err))) return rc;
  STEP(s); /* 4: the marker: from here on, recovery rolls forward */
  if ((rc = swap_in(s, replaced, err))) { /* 5 (exchange), or 5 aside + 6 renamed in */
    if (rc < 0) unlinkat(s->staging_fd, MPK_FETCH_COMMIT_FILE, 0); /* not swapped: the staging tree stays */
    return rc;
  }
  mpk_fx_close(&s->new_fd); /* it is the installed tree now */
  mpk_fsync_dir(s->cache_fd);
  mpk_fsync_dir(s->staging_fd);
  STEP(s); /* the swap durable */
  /* The new tree is in place: what remains is cleanup, which recovery would also do. The old tree
     is retired, not deleted: renamed into retired/ and deleted only when no reader holds it (a
     reader keeps it until it lets go; mt gc removes it then). Best effort: recovery retries. */
  mpk_fx_retire(s, s->staging_fd, "new", NULL, NULL, NULL);
  STEP(s);
  mpk_fx_retire(s, s->staging_fd, "old", NULL, NULL, NULL);
  mpk_fx_rm_tree(s->staging_fd, "parts", 0);
  STEP(s);
  unlinkat(s->staging_fd, MPK_FETCH_COMMIT_FILE, 0);
  mpk_fsync_dir(s->staging_fd);
  return 0;
}

int mpk_fetch_recover(const char *cache_dir, const char *name, const char *record_name, int *recovered,
                      mpk_error *err) {
  if (recovered) *recovered = 0;
  if (!cache_dir || !name || !record_name) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_fetch_stage s;
  int rc = mpk_fx_stage_init(&s, cache_dir, name, record_name, err);
  if (!rc) rc = mpk_fx_stage_acquire(&s, false, err);
  if (rc == MPK_ENOTFOUND) { /* nothing staged: nothing to recover, nothing to create */
    if (err) mpk_error_clear(err);
    rc = 0;
  } else if (!rc) {
    struct stat st;
    if (recovered) *recovered = fstatat(s.staging_fd, MPK_FETCH_COMMIT_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0;
    rc = mpk_fx_recover(&s, err);
  }
  mpk_fx_stage_fini(&s);
  return rc;
}
