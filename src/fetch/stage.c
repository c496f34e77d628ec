/* The fetch engine's staging area (docs/fetch.md): `<cache>/.staging/<name>/` with its lock, new/
   (the files being downloaded, in their final layout), parts/ (one staging record per file) and the
   commit marker, and the file operations on it.

   Every operation in the cache works relative to directory handles: the cache directory is opened
   as the user named it, everything beneath it one component at a time without following a link
   (mpk_open_dir_at, O_NOFOLLOW), and files are created, renamed and removed with openat, renameat2
   and unlinkat on those handles. A staging, parts or target path that is a symbolic link is
   refused, never deleted or written through (docs/SECURITY.md, "The installer's cache"). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fetch/engine.h"

/* ---------------------------------------------------------------- directory handles */

void mpk_fx_close(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void show(char *buf, size_t cap, const char *dir, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
}

int mpk_fx_refuse_link(mpk_error *err, const char *shown) {
  return mpk_fail(err, MPK_EMALFORMED, shown, NULL,
                  "is a symbolic link: refused, nothing was followed, written or deleted through it (the "
                  "installer's staging, parts and target paths must be real directories; remove the link)");
}

/* The entry `name` of `dir`, without following it: 0 with *st, or -1 with errno. */
static int entry_stat(int dir, const char *name, struct stat *st) {
  return fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW);
}

/* The directory `name` (one component) of `parent`, first created when `create`, opened without
   following a link: a link is refused (never followed, never removed), anything else that is not a
   directory too. Without `create`, a missing directory is MPK_ENOTFOUND. */
int mpk_fx_open_dir(int parent, const char *parent_shown, const char *name, bool create, int *fd, mpk_error *err) {
  char shown[4096];
  show(shown, sizeof shown, parent_shown, name);
  *fd = -1;
  if (create && mkdirat(parent, name, 0777) != 0 && errno != EEXIST)
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot create the directory: %s", strerror(errno));
  struct stat st;
  if (entry_stat(parent, name, &st) != 0)
    return errno == ENOENT ? mpk_fail(err, MPK_ENOTFOUND, shown, NULL, "not found")
                           : mpk_fail(err, MPK_EIO, shown, NULL, "cannot stat: %s", strerror(errno));
  if (S_ISLNK(st.st_mode)) return mpk_fx_refuse_link(err, shown);
  if (!S_ISDIR(st.st_mode))
    return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "is %s, not a directory: refused (nothing was removed)",
                    mpk_file_type_name(st.st_mode));
  return mpk_open_dir_at(parent, parent_shown, name, fd, err);
}

/* The directory holding the last segment of `rel` (a confined relative path) beneath `root`, its
   directories created when `create`; *base points into rel at that segment. */
int mpk_fx_open_parent(int root, const char *root_shown, const char *rel, bool create, int *fd, const char **base,
                       mpk_error *err) {
  *fd = -1;
  const char *slash = strrchr(rel, '/');
  *base = slash ? slash + 1 : rel;
  int cur = fcntl(root, F_DUPFD_CLOEXEC, 0);
  if (cur < 0) return mpk_fail(err, MPK_EIO, root_shown, NULL, "cannot duplicate a handle: %s", strerror(errno));
  char shown[4096], comp[NAME_MAX + 1];
  snprintf(shown, sizeof shown, "%s", root_shown);
  for (const char *p = rel; slash && p <= slash;) {
    const char *e = strchr(p, '/');
    size_t n = (size_t)(e - p);
    if (n == 0 || n > NAME_MAX) {
      close(cur);
      return mpk_fail(err, MPK_EMALFORMED, rel, NULL, "not a confined relative path");
    }
    memcpy(comp, p, n);
    comp[n] = '\0';
    int next;
    int rc = mpk_fx_open_dir(cur, shown, comp, create, &next, err);
    close(cur);
    if (rc) return rc;
    cur = next;
    size_t sl = strlen(shown);
    snprintf(shown + sl, sizeof shown - sl, "/%s", comp);
    p = e + 1;
  }
  *fd = cur;
  return 0;
}

/* Names in a directory handle (not "." and ".."), malloc'ed; NULL with *n 0 when unreadable. */
char **mpk_fx_list_dir(int dir, size_t *n) {
  *n = 0;
  int dup = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
  if (!d) {
    if (dup >= 0) close(dup);
    return NULL;
  }
  char **names = NULL;
  size_t cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (*n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      char **g = realloc(names, nc * sizeof *g);
      if (!g) break;
      names = g;
      cap = nc;
    }
    if (!(names[*n] = strdup(e->d_name))) break;
    (*n)++;
  }
  closedir(d);
  return names;
}

void mpk_fx_free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* Remove `name` of `dir` and, when it is a directory, everything in it: links (and any other
   non-directory) are unlinked themselves, never followed. Best effort: what remains is removed by
   the next install. */
void mpk_fx_rm_tree(int dir, const char *name, int depth) {
  struct stat st;
  if (entry_stat(dir, name, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlinkat(dir, name, 0);
    return;
  }
  if (depth > MPK_FETCH_TREE_MAX_DEPTH) return;
  int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  size_t n;
  char **names = mpk_fx_list_dir(fd, &n);
  for (size_t i = 0; i < n; i++) mpk_fx_rm_tree(fd, names[i], depth + 1);
  mpk_fx_free_names(names, n);
  close(fd);
  unlinkat(dir, name, AT_REMOVEDIR);
}

/* fsync every directory of the tree under `dir` (children first), then `dir`. */
void mpk_fx_fsync_tree(int dir, int depth) {
  size_t n;
  char **names = depth <= MPK_FETCH_TREE_MAX_DEPTH ? mpk_fx_list_dir(dir, &n) : (n = 0, NULL);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (entry_stat(dir, names[i], &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    int fd = openat(dir, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      mpk_fx_fsync_tree(fd, depth + 1);
      close(fd);
    }
  }
  mpk_fx_free_names(names, n);
  mpk_fsync_dir(dir);
}

/* "<name>.tmp.XXXXXX" created beside `name` in `dir` (O_EXCL: never through an existing entry). */
static int temp_open_at(int dir, const char *name, char tmp[NAME_MAX + 1]) {
  static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  size_t n = strlen(name);
  if (n + 11 > NAME_MAX) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (int attempt = 0; attempt < 100; attempt++) {
    uint8_t r[6];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
      uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16) ^ (uint64_t)attempt * 0x9E3779B97F4A7C15ull ^
                   (uint64_t)(uintptr_t)&r;
      for (int i = 0; i < 6; i++) r[i] = (uint8_t)(t >> (8 * i));
    }
    memcpy(tmp, name, n);
    memcpy(tmp + n, ".tmp.", 5);
    for (int i = 0; i < 6; i++) tmp[n + 5 + i] = chars[r[i] % 62];
    tmp[n + 11] = '\0';
    int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

/* Replace `name` in `dir` whole: a temporary file beside it renamed over it (a link there is
   replaced, never written through). `durable`: the file and the directory are fsynced. */
int mpk_fx_write_at(int dir, const char *dir_shown, const char *name, const void *data, size_t len, bool durable,
                    mpk_error *err) {
  char shown[4096], tmp[NAME_MAX + 1];
  show(shown, sizeof shown, dir_shown, name);
  int fd = temp_open_at(dir, name, tmp);
  if (fd < 0) return mpk_fail(err, MPK_EIO, shown, NULL, "cannot create a temporary file beside it: %s", strerror(errno));
  bool ok = mpk_write_all(fd, data, len) == 0 && (!durable || fsync(fd) == 0);
  int e = errno;
  if (close(fd) != 0 && ok) ok = false, e = errno;
  if (ok && renameat(dir, tmp, dir, name) != 0) ok = false, e = errno;
  if (!ok) {
    unlinkat(dir, tmp, 0);
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot write: %s%s", strerror(e),
                    e == ENOSPC || e == EFBIG || e == EDQUOT ? " (the disk is full)" : "");
  }
  if (durable) mpk_fsync_dir(dir); /* the rename is durable only once its directory is */
  return 0;
}

int mpk_fx_write_json_at(int dir, const char *dir_shown, const char *name, json_t *doc, bool durable, mpk_error *err) {
  char *text = NULL;
  size_t len = 0;
  int rc = doc ? mpk_json_write_document(doc, true, &text, &len, err) : mpk_fail(err, MPK_ENOMEM, name, NULL, "out of memory");
  if (!rc) rc = mpk_fx_write_at(dir, dir_shown, name, text, len, durable, err);
  mpk_free(text);
  json_decref(doc);
  return rc;
}

/* A small document `name` beneath `dir` (a regular file, never through a link out of it, at most
   MPK_FETCH_RECORD_MAX_BYTES): its bytes (malloc'ed), or NULL when it is absent or unreadable. */
char *mpk_fx_read_small_at(int dir, const char *dir_shown, const char *name, size_t *len_out) {
  int fd;
  struct stat st;
  *len_out = 0;
  if (dir < 0 ||
      mpk_open_read_at(dir, dir_shown, name, MPK_FETCH_RECORD_MAX_BYTES, "the installer's directory", &fd, &st, NULL) != 0)
    return NULL;
  size_t len = (size_t)st.st_size, got = 0;
  char *buf = malloc(len + 1);
  while (buf && got < len) {
    ssize_t r = pread(fd, buf + got, len - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (buf && got != len) {
    free(buf);
    buf = NULL;
  }
  if (buf) {
    buf[len] = '\0';
    *len_out = len;
  }
  return buf;
}

/* A document the installer wrote and reads back: a JSON object, else NULL. */
static json_t *parse_object(const void *data, size_t len) {
  json_t *doc = NULL;
  if (!data || mpk_json_parse(data, len, NULL, "record", &doc, NULL) != 0) return NULL;
  if (!json_is_object(doc)) {
    json_decref(doc);
    return NULL;
  }
  return doc;
}

bool mpk_fetch_parse_ids(const void *data, size_t len, char id[65], char *repo_id, size_t repo_cap) {
  id[0] = '\0';
  if (repo_id && repo_cap) repo_id[0] = '\0';
  json_t *root = parse_object(data, len);
  if (!root) return false;
  const char *s = json_string_value(json_object_get(root, "installId"));
  if (s && strlen(s) < 65) strcpy(id, s);
  s = json_string_value(json_object_get(root, "repoId"));
  if (repo_id && repo_cap && s) snprintf(repo_id, repo_cap, "%s", s);
  json_decref(root);
  return true;
}

const char *mpk_fetch_algo_key(mpk_digest_algo algo) { return algo == MPK_DIGEST_MD5 ? "md5" : "sha256"; }
const char *mpk_fetch_algo_name(mpk_digest_algo algo) { return algo == MPK_DIGEST_MD5 ? "MD5" : "SHA-256"; }

uint64_t mpk_fetch_parse_part(const void *data, size_t len, mpk_digest_algo algo, const char *digest, uint64_t size,
                              const char *source, uint64_t have, char validator[256]) {
  validator[0] = '\0';
  json_t *doc = parse_object(data, len);
  uint64_t offset = 0;
  if (doc) {
    const char *dg = json_string_value(json_object_get(doc, mpk_fetch_algo_key(algo)));
    const char *src = json_string_value(json_object_get(doc, "source"));
    const char *val = json_string_value(json_object_get(doc, "validator"));
    json_t *sz = json_object_get(doc, "size");
    json_int_t n = json_is_integer(sz) ? json_integer_value(sz) : -1;
    if (dg && strcmp(dg, digest) == 0 && n >= 0 && (uint64_t)n == size) {
      offset = have <= size ? have : 0;
      /* A ranged download: only its contiguous prefix was hashed in order; bytes written ahead of
         it (pieces) are fetched again. */
      json_t *px = json_object_get(doc, "prefix");
      if (json_is_integer(px) && json_integer_value(px) >= 0 && (uint64_t)json_integer_value(px) < offset)
        offset = (uint64_t)json_integer_value(px);
      /* A validator means something only to the server that gave it. */
      if (val && src && strcmp(src, source) == 0) snprintf(validator, 256, "%s", val);
    }
  }
  json_decref(doc);
  return offset;
}

/* The "installId" of document `name` in `dir` ("" when there is none or it is unreadable), and its
   "repoId" when `repo_id` is not NULL. */
void mpk_fx_read_ids(int dir, const char *dir_shown, const char *name, char id[65], char *repo_id, size_t repo_cap) {
  size_t len;
  char *data = mpk_fx_read_small_at(dir, dir_shown, name, &len);
  mpk_fetch_parse_ids(data, len, id, repo_id, repo_cap);
  free(data);
}
/* ---------------------------------------------------------------- the stage */

/* The paths of one cache and name, for messages: <cache>/<name>, and under <cache>/.staging/<name>/
   the staging tree new/, the records parts/, the old tree old/ (two-rename swap), commit.json and
   lock. */
int mpk_fx_stage_init(mpk_fetch_stage *st, const char *cache_dir, const char *name, const char *record_name,
                      mpk_error *err) {
  memset(st, 0, sizeof *st);
  st->cache_fd = st->stage_root_fd = st->staging_fd = st->new_fd = st->parts_fd = st->lock_fd = -1;
  snprintf(st->name, sizeof st->name, "%s", name);
  st->cache_dir = strdup(cache_dir);
  st->record_name = strdup(record_name);
  st->target = mpk_path_join(cache_dir, name);
  st->stage_root = mpk_path_join(cache_dir, MPK_FETCH_STAGING_DIR);
  st->staging = st->stage_root ? mpk_path_join(st->stage_root, name) : NULL;
  st->new_dir = st->staging ? mpk_path_join(st->staging, "new") : NULL;
  st->parts_dir = st->staging ? mpk_path_join(st->staging, "parts") : NULL;
  if (!st->cache_dir || !st->record_name || !st->target || !st->new_dir || !st->parts_dir)
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (strlen(st->new_dir) > 3000) return mpk_fail(err, MPK_ELIMIT, cache_dir, NULL, "cache path too long");
  return 0;
}

void mpk_fx_stage_fini(mpk_fetch_stage *st) {
  free(st->cache_dir);
  free(st->record_name);
  free(st->target);
  free(st->stage_root);
  free(st->staging);
  free(st->new_dir);
  free(st->parts_dir);
  mpk_fx_close(&st->cache_fd);
  mpk_fx_close(&st->stage_root_fd);
  mpk_fx_close(&st->staging_fd);
  mpk_fx_close(&st->new_fd);
  mpk_fx_close(&st->parts_fd);
  mpk_fx_close(&st->lock_fd); /* releases the lock, on every path */
}

/* The cache directory as the user named it (links in that path are the user's choice), then
   .staging/ and .staging/<name>/ beneath it, created when `create`, never through a link. Without
   `create`, a missing directory is MPK_ENOTFOUND. */
int mpk_fx_stage_open_dirs(mpk_fetch_stage *st, bool create, mpk_error *err) {
  const char *cache = st->cache_dir;
  if (create && mkdir(cache, 0777) != 0 && errno != EEXIST)
    return mpk_fail(err, MPK_EIO, cache, NULL, "cannot create the cache directory: %s", strerror(errno));
  st->cache_fd = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (st->cache_fd < 0)
    return errno == ENOENT ? mpk_fail(err, MPK_ENOTFOUND, cache, NULL, "not found")
                           : mpk_fail(err, MPK_EIO, cache, NULL, "cannot open the cache directory: %s", strerror(errno));
  int rc = mpk_fx_open_dir(st->cache_fd, cache, MPK_FETCH_STAGING_DIR, create, &st->stage_root_fd, err);
  if (!rc) rc = mpk_fx_open_dir(st->stage_root_fd, st->stage_root, st->name, create, &st->staging_fd, err);
  return rc;
}

/* .staging/<name>/ as opened is still the one at that path (a gc may have removed it meanwhile). */
static bool stage_still_linked(mpk_fetch_stage *st) {
  struct stat a, b, c, d;
  return fstat(st->stage_root_fd, &a) == 0 && fstatat(st->cache_fd, MPK_FETCH_STAGING_DIR, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino && fstat(st->staging_fd, &c) == 0 &&
         fstatat(st->stage_root_fd, st->name, &d, AT_SYMLINK_NOFOLLOW) == 0 && c.st_dev == d.st_dev &&
         c.st_ino == d.st_ino;
}

/* After a failure: was the staging directory (or .staging) removed under us? Then start over. */
static bool stage_vanished(mpk_fetch_stage *st) {
  if (st->cache_fd < 0 || st->stage_root_fd < 0 || st->staging_fd < 0) {
    struct stat x;
    return st->cache_fd >= 0 && (fstatat(st->cache_fd, MPK_FETCH_STAGING_DIR, &x, AT_SYMLINK_NOFOLLOW) != 0 ||
                                 (st->stage_root_fd >= 0 && fstatat(st->stage_root_fd, st->name, &x, AT_SYMLINK_NOFOLLOW) != 0));
  }
  return !stage_still_linked(st);
}

int mpk_fx_stage_lock(mpk_fetch_stage *st, mpk_error *err) {
  char shown[4096];
  show(shown, sizeof shown, st->staging, MPK_FETCH_LOCK_FILE);
  int *fd = &st->lock_fd;
  *fd = openat(st->staging_fd, MPK_FETCH_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
               0666);
  if (*fd < 0) {
    if (errno == ELOOP) return mpk_fx_refuse_link(err, shown);
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot open the lock file: %s", strerror(errno));
  }
  struct stat st_;
  if (fstat(*fd, &st_) != 0 || !S_ISREG(st_.st_mode)) {
    mpk_fx_close(fd);
    return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "is %s, not a regular file: refused",
                    mpk_file_type_name(st_.st_mode));
  }
  int op = LOCK_EX | (st->wait_for_lock ? 0 : LOCK_NB);
  while (flock(*fd, op) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    mpk_fx_close(fd);
    if (e == EWOULDBLOCK)
      return mpk_fail(err, MPK_EIO, st->target, NULL,
                      "another installer of this repo id is running in this cache (it holds %s); wait for it, or "
                      "ask to wait (--wait)", shown);
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot lock: %s", strerror(e));
  }
  /* The lock file we hold must still be the one at .staging/<name>/lock: a gc that found the stage
     empty unlinks the lock (holding it) and removes the directory; whoever waited on that file then
     holds a lock nobody else can see, and must start over (MPK_FX_STALE). */
  struct stat here;
  if (fstat(*fd, &st_) != 0 || fstatat(st->cache_fd, MPK_FETCH_STAGING_DIR, &here, AT_SYMLINK_NOFOLLOW) != 0 ||
      fstatat(st->staging_fd, MPK_FETCH_LOCK_FILE, &here, AT_SYMLINK_NOFOLLOW) != 0 || here.st_dev != st_.st_dev ||
      here.st_ino != st_.st_ino || !stage_still_linked(st)) {
    mpk_fx_close(fd);
    return MPK_FX_STALE;
  }
  return 0;
}

int mpk_fx_stage_acquire(mpk_fetch_stage *st, bool create, mpk_error *err) {
  for (int attempt = 0;; attempt++) {
    int rc = mpk_fx_stage_open_dirs(st, create, err);
    if (!rc) rc = mpk_fx_stage_lock(st, err);
    if (rc != MPK_FX_STALE && !(rc && create && attempt < 20 && stage_vanished(st))) return rc;
    if (rc && err) mpk_error_clear(err);
    mpk_fx_close(&st->lock_fd);
    mpk_fx_close(&st->staging_fd);
    mpk_fx_close(&st->stage_root_fd);
    mpk_fx_close(&st->cache_fd);
    if (attempt >= 20)
      return mpk_fail(err, MPK_EIO, st->staging, NULL, "the staging directory keeps being removed (mt gc?); try again");
  }
}

void mpk_fetch_stage_set_test(mpk_fetch_stage *st, int stop_after, bool no_exchange) {
  st->stop_after = stop_after;
  st->no_exchange = no_exchange;
}

/* One path component the engine may use as a tree's name. */
static int check_name(const char *name, mpk_error *err) {
  size_t n = name ? strlen(name) : 0;
  if (!n || n > MPK_FETCH_NAME_MAX || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the name %s is not one path component", name ? name : "(null)");
  if (strcmp(name, MPK_FETCH_STAGING_DIR) == 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the name %s would name the staging directory", name);
  return 0;
}

int mpk_fetch_stage_open(const char *cache_dir, const char *name, const mpk_fetch_stage_options *opts,
                         mpk_fetch_stage **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!cache_dir || !name || !opts || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_fetch_stage_options o;
  int orc = MPK_OPTIONS_READ(mpk_fetch_stage_options, &o, opts, err);
  if (orc) return orc;
  if (!o.record_name || check_name(o.record_name, NULL))
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the stage's record_name must be one path component");
  int rc = check_name(name, err);
  if (rc) return rc;
  mpk_fetch_stage *st = malloc(sizeof *st);
  if (!st) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  rc = mpk_fx_stage_init(st, cache_dir, name, o.record_name, err);
  st->wait_for_lock = o.wait_for_lock != 0;
  /* Staging area and the lock; what an interrupted commit left is finished. */
  if (!rc) rc = mpk_fx_stage_acquire(st, true, err);
  if (!rc) rc = mpk_fx_recover(st, err);
  if (!rc) mpk_fx_sweep_retired(st);
  if (rc) {
    mpk_fetch_stage_close(st);
    return rc;
  }
  *out = st;
  return 0;
}

void mpk_fetch_stage_close(mpk_fetch_stage *st) {
  if (!st) return;
  mpk_fx_stage_fini(st);
  free(st);
}

const char *mpk_fetch_stage_target(const mpk_fetch_stage *st) { return st ? st->target : NULL; }

int mpk_fetch_stage_read_installed(mpk_fetch_stage *st, const char *doc, uint8_t **data, size_t *len,
                                   mpk_error *err) {
  if (data) *data = NULL;
  if (len) *len = 0;
  if (!st || !doc || !data || !len) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  int tfd = -1;
  int rc = mpk_fx_open_tree(st->cache_fd, st->cache_dir, st->name, &tfd, err);
  if (rc) return rc;
  *data = (uint8_t *)mpk_fx_read_small_at(tfd, st->target, doc, len);
  mpk_fx_close(&tfd);
  return 0;
}
