/* The fetch engine's retired trees, tree removal and the cache's garbage collection (docs/fetch.md
   "Readers and retired trees", docs/mt-cache.md).

   A reader of a committed tree holds a shared flock on the tree's directory or on one of its
   top-level directories (mt's load gate: on <tree>/inference) for as long as it uses the files. A
   tree leaving its place — replaced by a commit, removed, or found aside after a crash — is first
   renamed into the stage's retired/ (one rename: nobody ever sees half a tree at the target), then
   deleted by handle only if an exclusive flock on each of those directories can be taken at once
   (held during the deletion); otherwise it stays retired until a gc finds it free. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/engine.h"

/* ---------------------------------------------------------------- readers */

typedef struct held_locks {
  int *fds;
  size_t n, cap;
} held_locks;

static void locks_release(held_locks *h) {
  for (size_t i = 0; i < h->n; i++) close(h->fds[i]);
  free(h->fds);
  memset(h, 0, sizeof *h);
}

/* An exclusive, non-blocking flock on `fd`, kept in `h`: false when someone holds the directory. */
static bool lock_one(held_locks *h, int fd) {
  if (fd < 0) return true; /* vanished or not a directory: nothing to hold */
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    close(fd);
    return errno != EWOULDBLOCK;
  }
  if (h->n == h->cap) {
    size_t nc = h->cap ? h->cap * 2 : 8;
    int *g = realloc(h->fds, nc * sizeof *g);
    if (!g) {
      close(fd);
      return false; /* cannot keep the lock: treat the tree as held, never delete under a reader */
    }
    h->fds = g;
    h->cap = nc;
  }
  h->fds[h->n++] = fd;
  return true;
}

/* Take every reader's place of the tree `name` of `dir`: the tree's directory and its top-level
   directories, exclusively. true with the locks in `h` (the caller deletes, then releases); false
   when a reader (or a writer, like a merge) holds one of them, nothing kept. */
static bool lock_tree(int dir, const char *name, held_locks *h) {
  memset(h, 0, sizeof *h);
  int root = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0) return true; /* not a directory (a link, a file): nobody reads through it */
  size_t n = 0;
  char **names = mpk_fx_list_dir(root, &n);
  bool free_ = true;
  for (size_t i = 0; i < n && free_; i++) {
    struct stat st;
    if (fstatat(root, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    free_ = lock_one(h, openat(root, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  mpk_fx_free_names(names, n);
  if (free_) free_ = lock_one(h, root); /* consumes root */
  else close(root);
  if (!free_) locks_release(h);
  return free_;
}

bool mpk_fx_tree_held(int dir, const char *name) {
  held_locks h;
  if (!lock_tree(dir, name, &h)) return true;
  locks_release(&h);
  return false;
}

int mpk_fx_delete_unless_held(int dir, const char *name) {
  held_locks h;
  if (!lock_tree(dir, name, &h)) return 0;
  mpk_fx_rm_tree(dir, name, 0); /* under the locks: a reader arriving now waits, then finds nothing */
  locks_release(&h);
  return 1;
}

/* ---------------------------------------------------------------- retiring */

/* Trees retired earlier and left there (a reader held them then, or the installer retiring them
   was killed between the rename and the deletion) go, unless a reader still holds them. */
void mpk_fx_sweep_retired_at(int rfd, const char *except) {
  size_t n;
  char **names = mpk_fx_list_dir(rfd, &n);
  for (size_t i = 0; i < n; i++) {
    struct stat est;
    if ((!except || strcmp(names[i], except) != 0) && fstatat(rfd, names[i], &est, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(est.st_mode))
      mpk_fx_delete_unless_held(rfd, names[i]);
  }
  mpk_fx_free_names(names, n);
}

void mpk_fx_sweep_retired(mpk_fetch_stage *s) {
  int rfd = openat(s->staging_fd, MPK_FETCH_RETIRED_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (rfd < 0) return; /* none, or a link gc removes */
  mpk_fx_sweep_retired_at(rfd, NULL);
  close(rfd);
  unlinkat(s->staging_fd, MPK_FETCH_RETIRED_DIR, AT_REMOVEDIR); /* only when empty */
}

int mpk_fx_retire(mpk_fetch_stage *s, int dir, const char *name, int *held, char retired[33], mpk_error *err) {
  if (held) *held = 0;
  if (retired) retired[0] = '\0';
  struct stat st;
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0; /* nothing there */
  if (!S_ISDIR(st.st_mode)) {                                      /* a link or a file: itself */
    unlinkat(dir, name, 0);
    return 0;
  }
  int rfd;
  int rc = mpk_fx_open_dir(s->staging_fd, s->staging, MPK_FETCH_RETIRED_DIR, true, &rfd, err);
  if (rc) return rc;
  char id[33];
  mpk_fetch_new_id(id);
  if (renameat(dir, name, rfd, id) != 0) {
    int e = errno;
    close(rfd);
    return mpk_fail(err, MPK_EIO, s->staging, NULL, "cannot move %s aside into %s/: %s", name, MPK_FETCH_RETIRED_DIR,
                    strerror(e));
  }
  mpk_fsync_dir(rfd);
  mpk_fsync_dir(dir);
  if (retired) snprintf(retired, 33, "%s", id);
  int gone = mpk_fx_delete_unless_held(rfd, id);
  if (held) *held = !gone;
  mpk_fx_sweep_retired_at(rfd, id);
  close(rfd);
  if (gone) unlinkat(s->staging_fd, MPK_FETCH_RETIRED_DIR, AT_REMOVEDIR); /* only when empty */
  return 0;
}

int mpk_fetch_stage_remove(mpk_fetch_stage *s, int *held, char **retired_path, mpk_error *err) {
  if (held) *held = 0;
  if (retired_path) *retired_path = NULL;
  if (!s) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  int tfd;
  int rc = mpk_fx_open_tree(s->cache_fd, s->cache_dir, s->name, &tfd, err); /* a link: refused */
  if (rc) return rc;
  if (tfd < 0) return mpk_fail(err, MPK_ENOTFOUND, s->target, NULL, "not installed: nothing to remove");
  close(tfd);
  int h = 0;
  char id[33];
  if ((rc = mpk_fx_retire(s, s->cache_fd, s->name, &h, id, err))) return rc;
  if (held) *held = h;
  if (h && retired_path) {
    size_t len = strlen(s->staging) + strlen(MPK_FETCH_RETIRED_DIR) + 40;
    if ((*retired_path = malloc(len))) snprintf(*retired_path, len, "%s/%s/%s", s->staging, MPK_FETCH_RETIRED_DIR, id);
  }
  return 0;
}

/* ---------------------------------------------------------------- gc */

typedef struct gc_ctx {
  mpk_fetch_gc_result *r;
  bool dry_run, oom;
} gc_ctx;

/* Bytes of the regular files of the tree `name` of `dir` (never through a link); *disk += the
   blocks allocated to everything in it. */
static uint64_t tree_bytes(int dir, const char *name, int depth, uint64_t *disk) {
  struct stat st;
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  *disk += (uint64_t)st.st_blocks * 512u;
  if (S_ISREG(st.st_mode)) return (uint64_t)st.st_size;
  if (!S_ISDIR(st.st_mode) || depth > MPK_FETCH_TREE_MAX_DEPTH) return 0;
  int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n;
  char **names = mpk_fx_list_dir(fd, &n);
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) sum += tree_bytes(fd, names[i], depth + 1, disk);
  mpk_fx_free_names(names, n);
  close(fd);
  return sum;
}

uint64_t mpk_fx_tree_bytes(int dir, const char *name, uint64_t *disk_bytes) {
  uint64_t disk = 0, b = tree_bytes(dir, name, 0, &disk);
  if (disk_bytes) *disk_bytes = disk;
  return b;
}

static void gc_add(gc_ctx *g, const char *stage, const char *entry, int removed, uint64_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void gc_add(gc_ctx *g, const char *stage, const char *entry, int removed, uint64_t bytes, const char *fmt, ...) {
  mpk_fetch_gc_result *r = g->r;
  if (r->n % 16 == 0) {
    mpk_fetch_gc_item *grown = realloc(r->items, (r->n + 16) * sizeof *grown);
    if (!grown) {
      g->oom = true;
      return;
    }
    r->items = grown;
  }
  char path[4096], why[1024];
  if (!*stage && !entry) snprintf(path, sizeof path, "%s", MPK_FETCH_STAGING_DIR);
  else if (entry) snprintf(path, sizeof path, "%s/%s%s%s", MPK_FETCH_STAGING_DIR, stage ? stage : "", stage ? "/" : "", entry);
  else snprintf(path, sizeof path, "%s/%s", MPK_FETCH_STAGING_DIR, stage);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  mpk_fetch_gc_item *it = &r->items[r->n];
  it->path = strdup(path);
  it->reason = strdup(why);
  it->removed = removed;
  it->bytes = bytes;
  if (!it->path || !it->reason) {
    free(it->path);
    free(it->reason);
    g->oom = true;
    return;
  }
  r->n++;
  if (removed) r->bytes_removed += bytes;
}

/* A link at `name` of `dir`, where the engine expects its own directory or lock: removed itself
   (never followed). true when it was one. */
static bool gc_link(gc_ctx *g, int dir, const char *stage, const char *name) {
  struct stat st;
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode)) return false;
  if (!g->dry_run) unlinkat(dir, name, 0);
  gc_add(g, stage, name, 1, 0, "a symbolic link where the installer keeps its own files: removed itself, never followed");
  return true;
}

/* One stage .staging/<name>/, with no installer holding its lock. */
static void gc_stage(gc_ctx *g, const char *cache_dir, const char *name, const char *record_name) {
  mpk_fetch_stage s;
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_fx_stage_init(&s, cache_dir, name, record_name, &e) || mpk_fx_stage_open_dirs(&s, false, &e)) {
    gc_add(g, name, NULL, 0, 0, "%s", e.message);
    mpk_fx_stage_fini(&s);
    return;
  }
  gc_link(g, s.staging_fd, name, MPK_FETCH_LOCK_FILE);
  if (g->dry_run) {
    /* Look, never create or keep: the lock probed (and released at once) only when it exists. */
    int fd = openat(s.staging_fd, MPK_FETCH_LOCK_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    bool busy = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (fd >= 0) close(fd);
    if (busy) {
      gc_add(g, name, NULL, 0, 0, "an installer holds its lock");
      mpk_fx_stage_fini(&s);
      return;
    }
  } else {
    int rc = mpk_fx_stage_lock(&s, &e);
    if (rc) {
      gc_add(g, name, NULL, 0, 0, "%s",
             rc == MPK_FX_STALE                       ? "the stage changed while gc looked (an installer); next time"
             : strstr(e.message, "another installer") ? "an installer holds its lock"
                                                      : e.message);
      mpk_fx_stage_fini(&s);
      return;
    }
  }
  static const char *const dirs[] = {"new", "parts", "old", MPK_FETCH_RETIRED_DIR};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) gc_link(g, s.staging_fd, name, dirs[i]);
  /* An interrupted commit is finished, never cleaned away: the marker may say the new tree is the
     one to keep (roll forward). */
  struct stat st;
  if (fstatat(s.staging_fd, MPK_FETCH_COMMIT_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (g->dry_run) {
      gc_add(g, name, MPK_FETCH_COMMIT_FILE, 0, 0, "an interrupted commit: gc would finish it (recovery) first");
      mpk_fx_stage_fini(&s);
      return;
    }
    if (mpk_fx_recover(&s, &e)) {
      gc_add(g, name, MPK_FETCH_COMMIT_FILE, 0, 0, "an interrupted commit could not be finished: %s", e.message);
      mpk_fx_stage_fini(&s);
      return;
    }
    gc_add(g, name, MPK_FETCH_COMMIT_FILE, 1, 0, "an interrupted commit was finished (recovery), its marker removed");
  }
  /* With no installer running, what is staged is an interrupted download (resumable, but nobody is
     resuming it), old/ a tree set aside by a crashed swap (retired), commit temporaries leftovers. */
  static const char *const partial[] = {"new", "parts"};
  for (size_t i = 0; i < 2; i++) {
    if (fstatat(s.staging_fd, partial[i], &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    uint64_t b = mpk_fx_tree_bytes(s.staging_fd, partial[i], NULL);
    if (!g->dry_run) mpk_fx_rm_tree(s.staging_fd, partial[i], 0);
    gc_add(g, name, partial[i], 1, b,
           i == 0 ? "a partial download no installer is running (a new install starts over)" : "its staging records");
  }
  if (fstatat(s.staging_fd, "old", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    uint64_t b = mpk_fx_tree_bytes(s.staging_fd, "old", NULL);
    int held = 0;
    char id[33] = "";
    if (!g->dry_run) mpk_fx_retire(&s, s.staging_fd, "old", &held, id, NULL);
    else held = mpk_fx_tree_held(s.staging_fd, "old");
    if (held) gc_add(g, name, "old", 0, b, "a tree set aside by an interrupted swap, held by a reader (retired)");
    else gc_add(g, name, "old", 1, b, "a tree set aside by an interrupted swap");
  }
  /* Retired trees: gone once no reader holds them. */
  int rfd;
  if (mpk_fx_open_tree(s.staging_fd, s.staging, MPK_FETCH_RETIRED_DIR, &rfd, NULL) == 0 && rfd >= 0) {
    size_t n;
    char **names = mpk_fx_list_dir(rfd, &n);
    for (size_t i = 0; i < n; i++) {
      char entry[300];
      snprintf(entry, sizeof entry, "%s/%s", MPK_FETCH_RETIRED_DIR, names[i]);
      if (fstatat(rfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (!S_ISDIR(st.st_mode)) {
        if (!g->dry_run) unlinkat(rfd, names[i], 0);
        gc_add(g, name, entry, 1, 0, S_ISLNK(st.st_mode) ? "a symbolic link: removed itself, never followed"
                                                          : "not a retired tree: removed");
        continue;
      }
      uint64_t b = mpk_fx_tree_bytes(rfd, names[i], NULL);
      bool gone = g->dry_run ? !mpk_fx_tree_held(rfd, names[i]) : mpk_fx_delete_unless_held(rfd, names[i]) == 1;
      if (gone) gc_add(g, name, entry, 1, b, "a retired tree no reader holds");
      else gc_add(g, name, entry, 0, b, "a reader holds this retired tree (removed by a gc once it lets go)");
    }
    mpk_fx_free_names(names, n);
    close(rfd);
    if (!g->dry_run) unlinkat(s.staging_fd, MPK_FETCH_RETIRED_DIR, AT_REMOVEDIR); /* only when empty */
  }
  /* Leftover marker temporaries (recovery's rule: regular files of exactly that pattern). */
  size_t n;
  char **names = mpk_fx_list_dir(s.staging_fd, &n);
  size_t bl = strlen(MPK_FETCH_COMMIT_FILE), others = 0;
  bool lock = false;
  for (size_t i = 0; i < n; i++) {
    const char *en = names[i];
    if (strcmp(en, MPK_FETCH_LOCK_FILE) == 0) {
      lock = true;
      continue;
    }
    if (strcmp(en, "new") == 0 || strcmp(en, "parts") == 0 || strcmp(en, "old") == 0 ||
        strcmp(en, MPK_FETCH_RETIRED_DIR) == 0) {
      others++; /* reported above; still there (held, or a dry run) */
      continue;
    }
    if (strncmp(en, MPK_FETCH_COMMIT_FILE, bl) == 0 && strncmp(en + bl, ".tmp.", 5) == 0 &&
        mpk_is_temp_suffix(en + bl + 5) && fstatat(s.staging_fd, en, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode)) {
      if (!g->dry_run) unlinkat(s.staging_fd, en, 0);
      gc_add(g, name, en, 1, (uint64_t)st.st_size, "a commit marker's temporary left by a killed installer");
      continue;
    }
    others++;
    gc_add(g, name, en, 0, 0, "not one of the installer's files");
  }
  mpk_fx_free_names(names, n);
  /* Nothing left but the lock (we hold it): an orphaned lock, and its directory, go. An installer
     waiting on this lock file finds it unlinked once it gets it, and starts over (stage.c). */
  if (!others) {
    if (!g->dry_run) {
      unlinkat(s.staging_fd, MPK_FETCH_LOCK_FILE, 0);
      unlinkat(s.stage_root_fd, name, AT_REMOVEDIR);
    }
    gc_add(g, name, lock ? MPK_FETCH_LOCK_FILE : NULL, 1, 0,
           lock ? "an orphaned lock (nothing staged, no installer): removed with its directory"
                : "an empty staging directory: removed");
  }
  mpk_fx_stage_fini(&s); /* releases the lock */
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int mpk_fetch_gc(const char *cache_dir, const mpk_fetch_gc_options *opts, mpk_fetch_gc_result **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!cache_dir || !opts || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_fetch_gc_options o;
  int rc = MPK_OPTIONS_READ(mpk_fetch_gc_options, &o, opts, err);
  if (rc) return rc;
  if (!o.record_name || !*o.record_name || strchr(o.record_name, '/'))
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the gc's record_name must be one path component");
  mpk_fetch_gc_result *r = calloc(1, sizeof *r);
  if (!r) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  gc_ctx g = {.r = r, .dry_run = o.dry_run != 0};
  int cfd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cfd < 0) {
    free(r);
    return errno == ENOENT ? mpk_fail(err, MPK_ENOTFOUND, cache_dir, NULL, "not found")
                           : mpk_fail(err, MPK_EIO, cache_dir, NULL, "cannot open the cache directory: %s", strerror(errno));
  }
  int sfd;
  rc = mpk_fx_open_tree(cfd, cache_dir, MPK_FETCH_STAGING_DIR, &sfd, err); /* a link: refused, left alone */
  if (!rc && sfd >= 0) {
    size_t n;
    char **names = mpk_fx_list_dir(sfd, &n);
    mpk_sort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n && !g.oom; i++) {
      struct stat st;
      if (fstatat(sfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISLNK(st.st_mode)) {
        if (!g.dry_run) unlinkat(sfd, names[i], 0);
        gc_add(&g, names[i], NULL, 1, 0, "a symbolic link in the staging area: removed itself, never followed");
      } else if (!S_ISDIR(st.st_mode)) {
        gc_add(&g, names[i], NULL, 0, 0, "%s, not a staging directory", mpk_file_type_name(st.st_mode));
      } else {
        gc_stage(&g, cache_dir, names[i], o.record_name);
      }
    }
    mpk_fx_free_names(names, n);
    close(sfd);
    if (!g.dry_run && unlinkat(cfd, MPK_FETCH_STAGING_DIR, AT_REMOVEDIR) == 0) /* only when empty */
      gc_add(&g, "", NULL, 1, 0, "the staging area, empty: removed");
  }
  close(cfd);
  if (!rc && g.oom) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (rc) {
    mpk_fetch_gc_result_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

void mpk_fetch_gc_result_free(mpk_fetch_gc_result *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    free(r->items[i].path);
    free(r->items[i].reason);
  }
  free(r->items);
  free(r);
}
