/* mt install: fetch a variant's planned files from a source (source.c) into a staging tree in the
   cache, verified while they arrive and resumable, then swap the complete, synced tree into
   <cache>/<sanitized repo id>/ with one rename. The layout, the staging records and the crash
   analysis are in docs/mt-install.md.

   Every operation in the cache works relative to directory handles: the cache directory is opened
   as the user named it, everything beneath it one component at a time without following a link
   (mpk_open_dir_at, O_NOFOLLOW), and files are created, renamed and removed with openat, renameat2
   and unlinkat on those handles. A staging, parts or target path that is a symbolic link is
   refused, never deleted or written through (docs/SECURITY.md, "The installer's cache"). */
#define _GNU_SOURCE /* renameat2 (RENAME_EXCHANGE) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "mt/mt.h"
#include "mt/install/install.h"
#include "fetch/source.h"

#define STAGING_DIR ".staging"
#define COMMIT_FILE "commit.json"
#define LOCK_FILE "lock"
#define MAX_JOBS 64
#define BYTES_EVENT_STEP ((uint64_t)1 << 20)
#define RECORD_MAX_BYTES ((uint64_t)1 << 20) /* a staging record, the marker, the install record */
#define TREE_MAX_DEPTH 128                   /* directories below new/, parts/, old/ */

/* ---------------------------------------------------------------- installed paths */

static const char *const stages[] = {"embedding", "inference", "tokenizer", "train"};

int mpk_mt_installed_path(const mpk_mt_variant *v, const char *pkg, char **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (!v || !pkg) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  char ck[600];
  int n = snprintf(ck, sizeof ck, "variants/%s/checksums.json", v->id);
  if (n > 0 && (size_t)n < sizeof ck && strcmp(pkg, ck) == 0) {
    *out = strdup("checksums.json");
  } else {
    for (size_t i = 0; i < sizeof stages / sizeof *stages && !*out; i++) {
      const char *dir = mpk_mt_variant_path(v, stages[i]);
      size_t dl = dir ? strlen(dir) : 0;
      if (!dl || strncmp(pkg, dir, dl) != 0 || pkg[dl] != '/') continue;
      size_t len = strlen(stages[i]) + strlen(pkg + dl) + 1;
      if ((*out = malloc(len))) snprintf(*out, len, "%s%s", stages[i], pkg + dl);
      if (!*out) break;
    }
    if (!*out) {
      bool mapped = false;
      for (size_t i = 0; i < sizeof stages / sizeof *stages; i++) {
        const char *dir = mpk_mt_variant_path(v, stages[i]);
        if (dir && strncmp(pkg, dir, strlen(dir)) == 0 && pkg[strlen(dir)] == '/') mapped = true;
      }
      if (!mapped) *out = strdup(pkg);
    }
  }
  return *out ? 0 : mpk_fail(err, MPK_ENOMEM, pkg, NULL, "out of memory");
}

/* ---------------------------------------------------------------- directory handles */

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void show(char *buf, size_t cap, const char *dir, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
}

static int refuse_link(mpk_error *err, const char *shown) {
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
static int open_dir(int parent, const char *parent_shown, const char *name, bool create, int *fd, mpk_error *err) {
  char shown[4096];
  show(shown, sizeof shown, parent_shown, name);
  *fd = -1;
  if (create && mkdirat(parent, name, 0777) != 0 && errno != EEXIST)
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot create the directory: %s", strerror(errno));
  struct stat st;
  if (entry_stat(parent, name, &st) != 0)
    return errno == ENOENT ? mpk_fail(err, MPK_ENOTFOUND, shown, NULL, "not found")
                           : mpk_fail(err, MPK_EIO, shown, NULL, "cannot stat: %s", strerror(errno));
  if (S_ISLNK(st.st_mode)) return refuse_link(err, shown);
  if (!S_ISDIR(st.st_mode))
    return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "is %s, not a directory: refused (nothing was removed)",
                    mpk_file_type_name(st.st_mode));
  return mpk_open_dir_at(parent, parent_shown, name, fd, err);
}

/* The directory holding the last segment of `rel` (a confined relative path) beneath `root`, its
   directories created when `create`; *base points into rel at that segment. */
static int open_parent(int root, const char *root_shown, const char *rel, bool create, int *fd, const char **base,
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
    int rc = open_dir(cur, shown, comp, create, &next, err);
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
static char **list_dir(int dir, size_t *n) {
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

static void free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* Remove `name` of `dir` and, when it is a directory, everything in it: links (and any other
   non-directory) are unlinked themselves, never followed. Best effort: what remains is removed by
   the next install. */
static void rm_tree_at(int dir, const char *name, int depth) {
  struct stat st;
  if (entry_stat(dir, name, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlinkat(dir, name, 0);
    return;
  }
  if (depth > TREE_MAX_DEPTH) return;
  int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  size_t n;
  char **names = list_dir(fd, &n);
  for (size_t i = 0; i < n; i++) rm_tree_at(fd, names[i], depth + 1);
  free_names(names, n);
  close(fd);
  unlinkat(dir, name, AT_REMOVEDIR);
}

/* fsync every directory of the tree under `dir` (children first), then `dir`. */
static void fsync_tree(int dir, int depth) {
  size_t n;
  char **names = depth <= TREE_MAX_DEPTH ? list_dir(dir, &n) : (n = 0, NULL);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (entry_stat(dir, names[i], &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    int fd = openat(dir, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      fsync_tree(fd, depth + 1);
      close(fd);
    }
  }
  free_names(names, n);
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
static int write_at(int dir, const char *dir_shown, const char *name, const void *data, size_t len, bool durable,
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

static int write_json_at(int dir, const char *dir_shown, const char *name, json_t *doc, bool durable, mpk_error *err) {
  char *text = NULL;
  size_t len = 0;
  int rc = doc ? mpk_json_write_document(doc, true, &text, &len, err) : mpk_fail(err, MPK_ENOMEM, name, NULL, "out of memory");
  if (!rc) rc = write_at(dir, dir_shown, name, text, len, durable, err);
  mpk_free(text);
  json_decref(doc);
  return rc;
}

/* A small document `name` beneath `dir` (a regular file, never through a link out of it, at most
   RECORD_MAX_BYTES): its bytes (malloc'ed), or NULL when it is absent or unreadable. */
static char *read_small_at(int dir, const char *dir_shown, const char *name, size_t *len_out) {
  int fd;
  struct stat st;
  *len_out = 0;
  if (dir < 0 ||
      mpk_open_read_at(dir, dir_shown, name, RECORD_MAX_BYTES, "the installer's directory", &fd, &st, NULL) != 0)
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
  if (buf) *len_out = len;
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

bool mpk_mt_install_parse_ids(const void *data, size_t len, char id[65], char *repo_id, size_t repo_cap) {
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

uint64_t mpk_mt_install_parse_part(const void *data, size_t len, const char *sha256, uint64_t size, const char *source,
                                   uint64_t have, char validator[256]) {
  validator[0] = '\0';
  json_t *doc = parse_object(data, len);
  uint64_t offset = 0;
  if (doc) {
    const char *sha = json_string_value(json_object_get(doc, "sha256"));
    const char *src = json_string_value(json_object_get(doc, "source"));
    const char *val = json_string_value(json_object_get(doc, "validator"));
    json_t *sz = json_object_get(doc, "size");
    json_int_t n = json_is_integer(sz) ? json_integer_value(sz) : -1;
    if (sha && strcmp(sha, sha256) == 0 && n >= 0 && (uint64_t)n == size) {
      offset = have <= size ? have : 0;
      /* A validator means something only to the server that gave it. */
      if (val && src && strcmp(src, source) == 0) snprintf(validator, 256, "%s", val);
    }
  }
  json_decref(doc);
  return offset;
}

/* The "installId" of document `name` in `dir` ("" when there is none or it is unreadable), and its
   "repoId" when `repo_id` is not NULL. */
static void read_ids(int dir, const char *dir_shown, const char *name, char id[65], char *repo_id, size_t repo_cap) {
  size_t len;
  char *data = read_small_at(dir, dir_shown, name, &len);
  mpk_mt_install_parse_ids(data, len, id, repo_id, repo_cap);
  free(data);
}

/* ---------------------------------------------------------------- the install state */

typedef struct item {
  const mpk_mt_planned_file *f;
  char *inst;      /* installed path */
  uint64_t done;   /* bytes present and hashed (progress) */
  uint64_t evented;
} item;

typedef struct inst {
  const mpk_mt_install_options *o;
  mpk_src *src;
  char name[MPK_MT_REPO_DIR_MAX + 1];
  /* paths for messages only: every operation goes through the handles */
  char *target, *stage_root, *staging, *new_dir, *parts_dir;
  int cache_fd, stage_root_fd, staging_fd, new_fd, parts_fd;
  mpk_mt_download_plan *plan;
  item *items;
  size_t n;
  uint64_t total;
  /* shared by the workers, under mu */
  pthread_mutex_t mu;
  size_t next;
  uint64_t done;
  int rc;
  mpk_error err;
  bool stop;
  uint64_t reused;
  unsigned retries, restarts;
  /* crash tests (install.h) */
  int stop_after, step;
  bool no_exchange;
} inst;

/* One durable step of the commit done; a crash test may stop right after it. */
#define STEP(s)                                                          \
  do {                                                                   \
    if (++(s)->step == (s)->stop_after) return MPK_MT_INSTALL_STOPPED;   \
  } while (0)

/* Emit an event (mu held). A non-zero answer cancels the install. */
static void emit_locked(inst *s, mpk_mt_install_event_kind kind, const item *it, const char *message) {
  if (!s->o->on_event) return;
  mpk_mt_install_event ev = {.kind = kind, .file = it ? it->f->path : NULL, .file_done = it ? it->done : 0,
                             .file_size = it ? it->f->size : 0, .done = s->done, .total = s->total,
                             .files = s->n, .message = message};
  if (s->o->on_event(s->o->ctx, &ev) && !s->stop) {
    s->stop = true;
    if (!s->rc) s->rc = mpk_fail(&s->err, MPK_ECANCELLED, NULL, NULL, "cancelled");
  }
}

static void emit(inst *s, mpk_mt_install_event_kind kind, const item *it, const char *message) {
  pthread_mutex_lock(&s->mu);
  emit_locked(s, kind, it, message);
  pthread_mutex_unlock(&s->mu);
}

/* Move one file's progress to `done` bytes. */
static void set_done(inst *s, item *it, uint64_t done) {
  pthread_mutex_lock(&s->mu);
  s->done = s->done - it->done + done;
  it->done = done;
  if (done < it->evented || done - it->evented >= BYTES_EVENT_STEP || done == it->f->size) {
    it->evented = done;
    emit_locked(s, MPK_MT_INSTALL_BYTES, it, NULL);
  }
  pthread_mutex_unlock(&s->mu);
}

/* ---------------------------------------------------------------- one file */

/* The staging record of a partial file: what it is meant to become, where its bytes came from. It
   lives in parts/ beside where the file's directory would be: `dir` is that directory's handle,
   `name` the record's name in it, `dir_shown` its path for messages. */
typedef struct part_ctx {
  inst *s;
  item *it;
  int dir;
  const char *dir_shown;
  const char *name;
} part_ctx;

/* A staging record is replaced whole (a temp file renamed over it, so it is never torn by a killed
   process) but not fsynced: it only says where a resume may start, and the resumed bytes are
   re-hashed and checked against the manifest's digest anyway. After a power loss a record may be
   missing or empty; that file then starts over from 0. Syncing it (two fsyncs, three times per
   file) cost more than the 1 MiB files themselves (docs/PERFORMANCE.md, section 6). */
static int write_part(const part_ctx *p, const char *validator, uint64_t verified, mpk_error *err) {
  const item *it = p->it;
  json_t *doc = json_pack("{s:s, s:I, s:s, s:s, s:s, s:I}", "path", it->f->path, "size", (json_int_t)it->f->size,
                          "sha256", it->f->sha256, "validator", validator ? validator : "", "source",
                          mpk_src_location(p->s->src), "verified", (json_int_t)verified);
  return write_json_at(p->dir, p->dir_shown, p->name, doc, false, err);
}

static void on_validator(void *ctx, const char *validator) {
  /* Best effort: without it the next resume goes without If-Range and relies on the digest. */
  write_part(ctx, validator, 0, NULL);
}

static int on_bytes(void *ctx, uint64_t done) {
  part_ctx *p = ctx;
  set_done(p->s, p->it, done);
  pthread_mutex_lock(&p->s->mu);
  bool stop = p->s->stop;
  pthread_mutex_unlock(&p->s->mu);
  return stop;
}

/* What the staging record says about the bytes already there (the open staged file `fd`): resume
   from them or not. */
static uint64_t resume_point(const part_ctx *p, int fd, char validator[256]) {
  validator[0] = '\0';
  struct stat st;
  if (fstat(fd, &st) != 0) return 0;
  size_t len;
  char *data = read_small_at(p->dir, p->dir_shown, p->name, &len);
  uint64_t offset = data ? mpk_mt_install_parse_part(data, len, p->it->f->sha256, p->it->f->size,
                                                     mpk_src_location(p->s->src), (uint64_t)st.st_size, validator)
                         : 0;
  free(data);
  return offset;
}

/* The staged file `name` in `dir`, created when missing: a regular file, never through a link. */
static int open_staged(int dir, const char *shown, const char *name, int *fd, mpk_error *err) {
  *fd = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666);
  if (*fd < 0) {
    struct stat st;
    if (errno == ELOOP || (entry_stat(dir, name, &st) == 0 && S_ISLNK(st.st_mode))) return refuse_link(err, shown);
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot create the staged file: %s", strerror(errno));
  }
  struct stat st;
  if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close_fd(fd);
    return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "is %s, not a regular file: refused",
                    mpk_file_type_name(st.st_mode));
  }
  int fl = fcntl(*fd, F_GETFL);
  if (fl >= 0) (void)fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK);
  return 0;
}

static int install_one(inst *s, item *it, mpk_error *err) {
  int rc = 0, fd = -1, dir = -1, pdir = -1;
  const char *base, *pbase;
  char path[4096], pshown[4096], record[NAME_MAX + 1];
  show(path, sizeof path, s->new_dir, it->inst);
  snprintf(pshown, sizeof pshown, "%s/%s", s->parts_dir, it->inst);
  char *slash = strrchr(pshown, '/');
  *slash = '\0'; /* the record's directory */
  if ((rc = open_parent(s->new_fd, s->new_dir, it->inst, true, &dir, &base, err)) ||
      (rc = open_parent(s->parts_fd, s->parts_dir, it->inst, true, &pdir, &pbase, err)))
    goto out;
  if (strlen(pbase) + 5 > NAME_MAX) {
    rc = mpk_fail(err, MPK_ELIMIT, it->f->path, NULL, "file name too long for its staging record");
    goto out;
  }
  snprintf(record, sizeof record, "%s.json", pbase);
  part_ctx pc = {s, it, pdir, pshown, record};
  if ((rc = open_staged(dir, path, base, &fd, err))) goto out;
  mpk_src_fetch f = {.rel = it->f->path, .size = it->f->size};
  f.offset = resume_point(&pc, fd, f.validator);
  if (f.offset == 0 && ftruncate(fd, 0) != 0) {
    rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot truncate: %s", strerror(errno));
    goto out;
  }
  if (f.offset == 0 && (rc = write_part(&pc, "", 0, err))) goto out;
  set_done(s, it, f.offset);
  emit(s, MPK_MT_INSTALL_FILE_START, it, NULL);
  f.fd = fd;
  f.on_validator = on_validator;
  f.on_bytes = on_bytes;
  f.ctx = &pc;
  unsigned tries = s->o->digest_attempts ? s->o->digest_attempts : 3;
  char got[65] = "";
  bool ok = false;
  for (unsigned t = 1; t <= tries; t++) {
    rc = mpk_src_fetch_file(s->src, &f, err);
    pthread_mutex_lock(&s->mu);
    s->retries += f.retries;
    s->restarts += f.restarts;
    pthread_mutex_unlock(&s->mu);
    if (rc) break;
    if (strcmp(f.hex, it->f->sha256) == 0) {
      ok = true;
      pthread_mutex_lock(&s->mu);
      s->reused += f.resumed_from;
      pthread_mutex_unlock(&s->mu);
      break;
    }
    /* Wrong bytes: discard them all (a resumed prefix may be what is stale) and fetch again. */
    snprintf(got, sizeof got, "%s", f.hex);
    if (ftruncate(fd, 0) != 0) {
      rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot truncate: %s", strerror(errno));
      break;
    }
    f.offset = 0;
    f.validator[0] = '\0';
    write_part(&pc, "", 0, NULL);
    set_done(s, it, 0);
    if (t < tries) {
      char msg[200];
      snprintf(msg, sizeof msg, "SHA-256 %s, the manifest says %s", got, it->f->sha256);
      emit(s, MPK_MT_INSTALL_RETRY, it, msg);
    }
  }
  if (!rc && !ok)
    rc = mpk_fail(err, MPK_EMISMATCH, it->f->path, NULL,
                  "SHA-256 of the downloaded bytes is %s, the manifest says %s (%u download%s)", got, it->f->sha256,
                  tries, tries == 1 ? "" : "s");
  if (!rc && fsync(fd) != 0) {
    int e = errno;
    rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot sync: %s%s", strerror(e),
                  e == ENOSPC || e == EDQUOT ? " (the disk is full)" : "");
  }
  if (!rc) rc = write_part(&pc, f.validator, it->f->size, err);
  if (!rc) emit(s, MPK_MT_INSTALL_FILE_DONE, it, NULL);
out:
  close_fd(&fd);
  close_fd(&dir);
  close_fd(&pdir);
  return rc;
}

static void *worker(void *arg) {
  inst *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    size_t i = s->next++;
    bool stop = s->stop || i >= s->n;
    pthread_mutex_unlock(&s->mu);
    if (stop) break;
    mpk_error e;
    mpk_error_clear(&e);
    int rc = install_one(s, &s->items[i], &e);
    if (rc) {
      pthread_mutex_lock(&s->mu);
      if (!s->rc) {
        s->rc = rc;
        s->err = e;
      }
      s->stop = true;
      pthread_mutex_unlock(&s->mu);
      break;
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------- plan */

static int cmp_item(const void *a, const void *b) {
  return strcmp(((const item *)a)->inst, ((const item *)b)->inst);
}

/* The merge's journal, temporaries and record are written only on the device, inside modelpkg's own merge
   transaction: a package that lists either (as any file's last segment) is refused before anything
   is fetched — never installed, so never replayed or trusted (docs/SECURITY.md). */
static int refuse_device_files(const mpk_mt_manifest *m, mpk_error *err) {
  for (size_t i = 0; i < m->n_files; i++) {
    const char *p = m->files[i].path, *slash = strrchr(p, '/'), *base = slash ? slash + 1 : p;
    if (!mpk_mt_is_device_file(base)) continue;
    mpk_path ptr;
    mpk_path_init(&ptr);
    mpk_path_push_key(&ptr, m->files[i].has_size ? "fileSizes" : "sha256");
    mpk_path_push_key(&ptr, p);
    return mpk_fail(err, MPK_EMALFORMED, MPK_MT_MANIFEST_FILENAME, ptr.buf,
                    "lists %s, a %s: those are written only on the device by modelpkg's merge, never shipped in a "
                    "package; an install source carrying one is refused",
                    p, strcmp(base, MPK_MT_MERGE_RECORD) == 0 ? "merge record" : "merge transaction file");
  }
  for (size_t i = 0; i < m->n_required_files; i++) {
    const char *p = m->required_files[i], *slash = strrchr(p, '/'), *base = slash ? slash + 1 : p;
    if (!mpk_mt_is_device_file(base)) continue;
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/requiredFiles/%zu", i);
    return mpk_fail(err, MPK_EMALFORMED, MPK_MT_MANIFEST_FILENAME, ptr,
                    "lists %s, written only on the device by modelpkg's merge, never shipped in a package; an "
                    "install source carrying one is refused",
                    p);
  }
  return 0;
}

static int plan(inst *s, const mpk_mt_manifest *m, const mpk_mt_variant *v, mpk_error *err) {
  /* core + checksums + the features (default inference), each file with its size and digest: a
     file that cannot be verified fails the plan, before anything is fetched. */
  int rc = refuse_device_files(m, err);
  if (rc) return rc;
  mpk_mt_plan_options po = {.features = s->o->features, .n_features = s->o->n_features};
  rc = mpk_mt_plan_download(m, v->id, &po, &s->plan, err);
  if (rc) return rc;
  const mpk_mt_download_plan *p = s->plan;
  if (!(s->items = calloc(p->n_files ? p->n_files : 1, sizeof *s->items)))
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  for (size_t i = 0; i < p->n_files && !rc; i++) {
    const mpk_mt_planned_file *f = &p->files[i];
    if (!f->has_size || !f->sha256) /* the plan refuses these already; never trust one anyway */
      return mpk_fail(err, MPK_EMALFORMED, MPK_MT_MANIFEST_FILENAME, NULL, "planned file %s cannot be verified", f->path);
    s->items[i].f = f;
    s->n = i + 1;
    rc = mpk_mt_installed_path(v, f->path, &s->items[i].inst, err);
  }
  s->total = p->total_bytes;
  if (rc) return rc;
  /* Two files at one installed path, or a file where another needs a directory: refused. */
  qsort(s->items, s->n, sizeof *s->items, cmp_item);
  for (size_t i = 0; i < s->n; i++) {
    const char *a = s->items[i].inst;
    if (strcmp(a, MPK_MT_MANIFEST_FILENAME) == 0 || strcmp(a, MPK_MT_INSTALL_RECORD) == 0)
      return mpk_fail(err, MPK_EMALFORMED, MPK_MT_MANIFEST_FILENAME, NULL,
                      "planned file %s would be installed as %s, which the installer writes itself", s->items[i].f->path, a);
    for (size_t j = i + 1; j < s->n; j++) {
      const char *b = s->items[j].inst;
      size_t al = strlen(a);
      if (strncmp(a, b, al) != 0) break;
      if (b[al] == '\0' || b[al] == '/')
        return mpk_fail(err, MPK_EMALFORMED, MPK_MT_MANIFEST_FILENAME, NULL,
                        "planned files %s and %s collide in the installed layout (%s, %s)", s->items[i].f->path,
                        s->items[j].f->path, a, b);
    }
  }
  return 0;
}

/* Remove what the staging tree holds beyond the plan (an earlier install of another variant or
   feature set, a temporary file a killed process left): the committed tree holds exactly the
   planned files. Entries are removed with unlinkat, links themselves, never followed. */
static int find_item(const inst *s, const char *rel) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(s->items[mid].inst, rel);
    if (!c) return (int)mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/* `rel` (a path under new/ or parts/) is a planned file's, with `suffix` after it. */
static bool planned(const inst *s, const char *rel, const char *suffix) {
  size_t n = strlen(rel), sl = strlen(suffix);
  if (n <= sl || strcmp(rel + n - sl, suffix) != 0) return false;
  char name[4096];
  if (n - sl >= sizeof name) return false;
  memcpy(name, rel, n - sl);
  name[n - sl] = '\0';
  return find_item(s, name) >= 0;
}

static void strays_at(const inst *s, int dir, char *rel, size_t len, const char *suffix, int depth) {
  size_t n;
  char **names = list_dir(dir, &n);
  for (size_t i = 0; i < n; i++) {
    size_t nl = strlen(names[i]);
    if (len + nl + 2 > 4096) continue;
    if (len) rel[len] = '/';
    memcpy(rel + len + (len ? 1 : 0), names[i], nl + 1);
    size_t rl = len + (len ? 1 : 0) + nl;
    struct stat st;
    if (entry_stat(dir, names[i], &st) != 0) {
      rel[len] = '\0';
      continue;
    }
    if (S_ISDIR(st.st_mode) && !planned(s, rel, suffix) && depth < TREE_MAX_DEPTH) {
      int fd = openat(dir, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        strays_at(s, fd, rel, rl, suffix, depth + 1);
        close(fd);
      }
    } else if (!S_ISREG(st.st_mode) || !planned(s, rel, suffix)) {
      rm_tree_at(dir, names[i], depth); /* a link, FIFO, or a directory where a file is planned */
    }
    rel[len] = '\0';
  }
  free_names(names, n);
}

static void remove_strays(inst *s) {
  char rel[4096] = "";
  strays_at(s, s->new_fd, rel, 0, "", 0);
  strays_at(s, s->parts_fd, rel, 0, ".json", 0);
}

/* ---------------------------------------------------------------- commit and recovery */

/* new/ of the staging directory is a real directory (and, when it is open, the one we filled). */
static int check_new(inst *s, mpk_error *err) {
  char shown[4096];
  show(shown, sizeof shown, s->staging, "new");
  struct stat st, mine;
  if (entry_stat(s->staging_fd, "new", &st) != 0)
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot stat: %s", strerror(errno));
  if (S_ISLNK(st.st_mode)) return refuse_link(err, shown);
  if (!S_ISDIR(st.st_mode) ||
      (s->new_fd >= 0 && (fstat(s->new_fd, &mine) != 0 || mine.st_dev != st.st_dev || mine.st_ino != st.st_ino)))
    return mpk_fail(err, MPK_EIO, shown, NULL, "changed while the installer held the lock: refused");
  return 0;
}

/* Put new/ (complete) at the target. With a previous tree there: exchanged in one step
   (renameat2 RENAME_EXCHANGE; new/ then holds the old tree), or, where the file system cannot, the
   target moved to old/ and new/ renamed in (recovery rolls that forward: see the doc). A target
   that is a link is refused: it is never replaced, moved or followed. */
static int swap_in(inst *s, int *replaced, mpk_error *err) {
  *replaced = 0;
  int rc = check_new(s, err);
  if (rc) return rc;
  struct stat st;
  if (entry_stat(s->cache_fd, s->name, &st) == 0) {
    if (S_ISLNK(st.st_mode)) return refuse_link(err, s->target);
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
    rm_tree_at(s->staging_fd, "old", 0);
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
static int open_tree(int dir, const char *dir_shown, const char *name, int *fd, mpk_error *err) {
  int rc = open_dir(dir, dir_shown, name, false, fd, err);
  if (rc == MPK_ENOTFOUND) {
    if (err) mpk_error_clear(err);
    rc = 0;
  }
  return rc;
}

/* The staging directory's own entries and the target, before anything is read or removed: each a
   directory or absent — a link is refused, never followed or deleted through. */
static int check_layout(inst *s, mpk_error *err) {
  static const char *const dirs[] = {"new", "parts", "old"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    int fd;
    int rc = open_tree(s->staging_fd, s->staging, dirs[i], &fd, err);
    close_fd(&fd);
    if (rc) return rc;
  }
  int fd;
  int rc = open_tree(s->cache_fd, s->o->cache_dir, s->name, &fd, err);
  close_fd(&fd);
  return rc;
}

/* What a process killed while writing the commit marker left: "commit.json.tmp.XXXXXX", regular
   files only (anything else of that name is left alone, never followed). */
static void remove_marker_temps(inst *s) {
  size_t n;
  char **names = list_dir(s->staging_fd, &n);
  size_t bl = strlen(COMMIT_FILE);
  for (size_t i = 0; i < n; i++) {
    const char *e = names[i];
    struct stat st;
    if (strncmp(e, COMMIT_FILE, bl) != 0 || strncmp(e + bl, ".tmp.", 5) != 0 || !mpk_is_temp_suffix(e + bl + 5))
      continue;
    if (entry_stat(s->staging_fd, e, &st) == 0 && S_ISREG(st.st_mode)) unlinkat(s->staging_fd, e, 0);
  }
  free_names(names, n);
}

/* Finish what an interrupted commit left (under the lock): the marker names the new tree; if the
   target holds it, the swap happened and only cleanup remains; if the staging tree holds it, the
   swap is done now. */
static int recover(inst *s, mpk_error *err) {
  int rc = check_layout(s, err);
  if (rc) return rc;
  char id[65], tid[65], nid[65];
  read_ids(s->staging_fd, s->staging, COMMIT_FILE, id, NULL, 0);
  if (id[0]) {
    int tfd = -1;
    if ((rc = open_tree(s->cache_fd, s->o->cache_dir, s->name, &tfd, err)) ||
        (rc = open_tree(s->staging_fd, s->staging, "new", &s->new_fd, err))) {
      close_fd(&tfd);
      return rc;
    }
    read_ids(tfd, s->target, MPK_MT_INSTALL_RECORD, tid, NULL, 0);
    read_ids(s->new_fd, s->new_dir, MPK_MT_INSTALL_RECORD, nid, NULL, 0);
    close_fd(&tfd);
    if (strcmp(nid, id) == 0 && strcmp(tid, id) != 0) {
      int replaced;
      rc = swap_in(s, &replaced, err);
      close_fd(&s->new_fd);
      if (rc) return rc < 0 ? rc : 0;
      mpk_fsync_dir(s->cache_fd);
      mpk_fsync_dir(s->staging_fd);
    }
    close_fd(&s->new_fd);
    if (strcmp(nid, id) == 0 || strcmp(tid, id) == 0) {
      rm_tree_at(s->staging_fd, "new", 0); /* the old tree after an exchange, or nothing */
      rm_tree_at(s->staging_fd, "parts", 0);
    }
  }
  rm_tree_at(s->staging_fd, "old", 0);
  unlinkat(s->staging_fd, COMMIT_FILE, 0);
  remove_marker_temps(s);
  mpk_fsync_dir(s->staging_fd);
  return 0;
}

static void random_id(char out[33]) {
  uint8_t b[16];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
    uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    for (size_t i = 0; i < sizeof b; i++) b[i] = (uint8_t)(t >> (8 * (i % 8))) ^ (uint8_t)i;
  }
  mpk_hex(b, sizeof b, out);
}

static int write_record(inst *s, const mpk_mt_variant *v, const char *id, mpk_error *err) {
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  json_t *feat = json_array();
  for (size_t i = 0; i < s->plan->n_features; i++) json_array_append_new(feat, json_string(s->plan->features[i]));
  json_t *doc = json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:I, s:I, s:s}", "installId", id, "repoId", s->o->repo_id,
                          "variant", v->id, "features", feat, "installedAt", when, "source", mpk_src_location(s->src),
                          "files", (json_int_t)s->n, "bytes", (json_int_t)s->total, "installer",
                          "modelpkg " MPK_VERSION_STRING);
  return write_json_at(s->new_fd, s->new_dir, MPK_MT_INSTALL_RECORD, doc, true, err);
}

/* The commit, step by step (docs/mt-install.md, "Commit and crash analysis"): each step is durable
   before the next, and the numbers are the steps a crash test can stop after. */
static int commit(inst *s, const mpk_mt_variant *v, const uint8_t *manifest, size_t manifest_len, int *replaced,
                  mpk_error *err) {
  s->step = 0;
  int rc = write_at(s->new_fd, s->new_dir, MPK_MT_MANIFEST_FILENAME, manifest, manifest_len, true, err);
  if (rc) return rc;
  STEP(s); /* 1: the manifest */
  char id[33];
  random_id(id);
  if ((rc = write_record(s, v, id, err))) return rc;
  STEP(s); /* 2: the install record */
  /* Every directory of the new tree durable before the marker says the tree is complete. */
  fsync_tree(s->new_fd, 0);
  mpk_fsync_dir(s->staging_fd);
  STEP(s); /* 3: the tree synced */
  json_t *marker = json_pack("{s:s}", "installId", id);
  if ((rc = write_json_at(s->staging_fd, s->staging, COMMIT_FILE, marker, true, err))) return rc;
  STEP(s); /* 4: the marker: from here on, recovery rolls forward */
  if ((rc = swap_in(s, replaced, err))) { /* 5 (exchange), or 5 aside + 6 renamed in */
    if (rc < 0) unlinkat(s->staging_fd, COMMIT_FILE, 0); /* not swapped: the staging tree stays */
    return rc;
  }
  close_fd(&s->new_fd); /* it is the installed tree now */
  mpk_fsync_dir(s->cache_fd);
  mpk_fsync_dir(s->staging_fd);
  STEP(s); /* the swap durable */
  /* The new install is in place: what remains is cleanup, which recovery would also do. */
  rm_tree_at(s->staging_fd, "new", 0);
  STEP(s);
  rm_tree_at(s->staging_fd, "old", 0);
  rm_tree_at(s->staging_fd, "parts", 0);
  STEP(s);
  unlinkat(s->staging_fd, COMMIT_FILE, 0);
  mpk_fsync_dir(s->staging_fd);
  return 0;
}

/* ---------------------------------------------------------------- entry point */

static int take_lock(inst *s, int *fd, mpk_error *err) {
  char shown[4096];
  show(shown, sizeof shown, s->staging, LOCK_FILE);
  *fd = openat(s->staging_fd, LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
  if (*fd < 0) {
    if (errno == ELOOP) return refuse_link(err, shown);
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot open the lock file: %s", strerror(errno));
  }
  struct stat st;
  if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close_fd(fd);
    return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "is %s, not a regular file: refused",
                    mpk_file_type_name(st.st_mode));
  }
  int op = LOCK_EX | (s->o->wait_for_lock ? 0 : LOCK_NB);
  while (flock(*fd, op) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    close_fd(fd);
    if (e == EWOULDBLOCK)
      return mpk_fail(err, MPK_EIO, s->target, NULL,
                      "another installer of this repo id is running in this cache (it holds %s); wait for it, or "
                      "ask to wait (--wait)", shown);
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot lock: %s", strerror(e));
  }
  return 0;
}

/* The paths of one cache and repo, for messages: <cache>/<name>, and under <cache>/.staging/<name>/
   the staging tree new/, the records parts/, the old tree old/ (two-rename swap), commit.json and
   lock. */
static int set_paths(inst *s, const char *cache_dir, const char *name, mpk_error *err) {
  snprintf(s->name, sizeof s->name, "%s", name);
  s->cache_fd = s->stage_root_fd = s->staging_fd = s->new_fd = s->parts_fd = -1;
  s->target = mpk_path_join(cache_dir, name);
  s->stage_root = mpk_path_join(cache_dir, STAGING_DIR);
  s->staging = s->stage_root ? mpk_path_join(s->stage_root, name) : NULL;
  s->new_dir = s->staging ? mpk_path_join(s->staging, "new") : NULL;
  s->parts_dir = s->staging ? mpk_path_join(s->staging, "parts") : NULL;
  if (!s->target || !s->new_dir || !s->parts_dir) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (strlen(s->new_dir) > 3000) return mpk_fail(err, MPK_ELIMIT, cache_dir, NULL, "cache path too long");
  return 0;
}

static void free_paths(inst *s) {
  free(s->target);
  free(s->stage_root);
  free(s->staging);
  free(s->new_dir);
  free(s->parts_dir);
  close_fd(&s->cache_fd);
  close_fd(&s->stage_root_fd);
  close_fd(&s->staging_fd);
  close_fd(&s->new_fd);
  close_fd(&s->parts_fd);
}

/* The cache directory as the user named it (links in that path are the user's choice), then
   .staging/ and .staging/<name>/ beneath it, created when `create`, never through a link. Without
   `create`, a missing directory is MPK_ENOTFOUND. */
static int open_staging(inst *s, bool create, mpk_error *err) {
  const char *cache = s->o->cache_dir;
  if (create && mkdir(cache, 0777) != 0 && errno != EEXIST)
    return mpk_fail(err, MPK_EIO, cache, NULL, "cannot create the cache directory: %s", strerror(errno));
  s->cache_fd = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->cache_fd < 0)
    return errno == ENOENT ? mpk_fail(err, MPK_ENOTFOUND, cache, NULL, "not found")
                           : mpk_fail(err, MPK_EIO, cache, NULL, "cannot open the cache directory: %s", strerror(errno));
  int rc = open_dir(s->cache_fd, cache, STAGING_DIR, create, &s->stage_root_fd, err);
  if (!rc) rc = open_dir(s->stage_root_fd, s->stage_root, s->name, create, &s->staging_fd, err);
  return rc;
}

int mpk_mt_install_recover(const char *cache_dir, const char *repo_id, int *recovered, mpk_error *err) {
  if (recovered) *recovered = 0;
  if (!cache_dir || !repo_id) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  char name[MPK_MT_REPO_DIR_MAX + 1];
  int rc = mpk_mt_sanitize_repo_id(repo_id, name, sizeof name, err);
  if (rc) return rc;
  mpk_mt_install_options o = {.repo_id = repo_id, .cache_dir = cache_dir};
  inst s = {.o = &o};
  int fd = -1;
  if (!(rc = set_paths(&s, cache_dir, name, err))) {
    rc = open_staging(&s, false, err);
    if (rc == MPK_ENOTFOUND) { /* nothing staged: nothing to recover, nothing to create */
      if (err) mpk_error_clear(err);
      rc = 0;
    } else if (!rc && !(rc = take_lock(&s, &fd, err))) {
      struct stat st;
      if (recovered) *recovered = entry_stat(s.staging_fd, COMMIT_FILE, &st) == 0;
      rc = recover(&s, err);
    }
  }
  if (fd >= 0) close(fd);
  free_paths(&s);
  return rc;
}

int mpk_mt_manifest_open_source(const char *source, mpk_mt_manifest **out, mpk_error *err) {
  if (!source || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  mpk_src *src = NULL;
  uint8_t *data = NULL;
  size_t len = 0;
  int rc = mpk_src_open(source, NULL, &src, err);
  if (!rc) rc = mpk_src_read_small(src, MPK_MT_MANIFEST_FILENAME, MPK_MT_MANIFEST_MAX_BYTES, &data, &len, err);
  if (!rc) {
    char *url = mpk_src_url(src, MPK_MT_MANIFEST_FILENAME);
    rc = mpk_mt_manifest_parse(data, len, url ? url : MPK_MT_MANIFEST_FILENAME, out, err);
    free(url);
  }
  free(data);
  mpk_src_free(src);
  return rc;
}

int mpk_mt_install(const char *source, const mpk_mt_install_options *o, mpk_mt_install_result *out, mpk_error *err) {
  return mpk_mt_install_ex(source, o, NULL, out, err);
}

int mpk_mt_install_ex(const char *source, const mpk_mt_install_options *given, const mpk_mt_install_test *test,
                      mpk_mt_install_result *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!source) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the source and the options are required");
  mpk_mt_install_options opts;
  int rc = MPK_OPTIONS_READ(mpk_mt_install_options, &opts, given, err);
  if (rc) return rc;
  const mpk_mt_install_options *o = &opts;
  if (!o->repo_id || !o->cache_dir)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the source, repo id and cache directory are required");
  if (o->jobs > MAX_JOBS) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "at most %d jobs", MAX_JOBS);
  char name[MPK_MT_REPO_DIR_MAX + 1];
  rc = mpk_mt_sanitize_repo_id(o->repo_id, name, sizeof name, err);
  if (rc) return rc;
  if (strcmp(name, STAGING_DIR) == 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "repo id %s would name the installer's staging directory", o->repo_id);

  inst s = {.o = o, .stop_after = test ? test->stop_after : 0, .no_exchange = test && test->no_exchange};
  pthread_mutex_init(&s.mu, NULL);
  mpk_mt_manifest *m = NULL;
  mpk_mt_selection *sel = NULL;
  uint8_t *mdata = NULL;
  size_t mlen = 0;
  int lock_fd = -1, replaced = 0;
  if ((rc = set_paths(&s, o->cache_dir, name, err))) goto out;
  mpk_src_retry retry = {.attempts = o->attempts,
                         .base_ms = o->retry_delay_ms,
                         .deadline_secs = o->timeout_secs,
                         .low_speed_bytes = o->low_speed_bytes,
                         .low_speed_secs = o->low_speed_secs};
  /* 1. The manifest, bounded, version-gated and parsed; the plan, refused before any fetch. */
  if ((rc = mpk_src_open(source, &retry, &s.src, err))) goto out;
  if ((rc = mpk_src_read_small(s.src, MPK_MT_MANIFEST_FILENAME, MPK_MT_MANIFEST_MAX_BYTES, &mdata, &mlen, err))) goto out;
  char *murl = mpk_src_url(s.src, MPK_MT_MANIFEST_FILENAME);
  rc = mpk_mt_manifest_parse(mdata, mlen, murl ? murl : MPK_MT_MANIFEST_FILENAME, &m, err);
  free(murl);
  if (rc) goto out;
  const mpk_mt_variant *v = NULL;
  if (o->variant) {
    if (!(v = mpk_mt_manifest_variant(m, o->variant))) {
      rc = mpk_fail(err, MPK_ENOTFOUND, MPK_MT_MANIFEST_FILENAME, "/variants", "no variant %s", o->variant);
      goto out;
    }
  } else {
    /* Selected for the device; the storage budget is the cache's free space unless given. */
    mpk_mt_select_options so;
    if ((rc = MPK_OPTIONS_READ(mpk_mt_select_options, &so, o->select, err))) goto out;
    so.features = o->features;
    so.n_features = o->n_features;
    if (!so.free_bytes.present) {
      struct statvfs vfs;
      char probe[4096];
      snprintf(probe, sizeof probe, "%s", o->cache_dir);
      while (statvfs(probe, &vfs) != 0) {
        char *slash = strrchr(probe, '/');
        if (!slash || slash == probe) {
          snprintf(probe, sizeof probe, "%s", slash == probe ? "/" : ".");
          if (statvfs(probe, &vfs) != 0) vfs.f_bavail = 0, vfs.f_frsize = 0;
          break;
        }
        *slash = '\0';
      }
      uint64_t avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
      if (vfs.f_frsize && avail <= (uint64_t)MPK_SAFE_INT_MAX) {
        so.free_bytes.present = 1;
        so.free_bytes.value = (int64_t)avail;
      }
    }
    if ((rc = mpk_mt_select(m, &so, &sel, err))) goto out;
    v = sel->chosen;
  }
  if (out && !(out->variant = strdup(v->id))) {
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    goto out;
  }
  if ((rc = plan(&s, m, v, err))) goto out;
  pthread_mutex_lock(&s.mu);
  emit_locked(&s, MPK_MT_INSTALL_PLANNED, NULL, NULL);
  rc = s.rc;
  pthread_mutex_unlock(&s.mu);
  if (rc) {
    if (err) *err = s.err;
    goto out;
  }
  /* 2. Staging area and the lock; what an interrupted install left is finished or kept. */
  if ((rc = open_staging(&s, true, err))) goto out;
  if ((rc = take_lock(&s, &lock_fd, err))) goto out;
  if ((rc = recover(&s, err))) goto out;
  {
    char other[1024], tid[65];
    int tfd = -1;
    if ((rc = open_tree(s.cache_fd, o->cache_dir, s.name, &tfd, err))) goto out;
    read_ids(tfd, s.target, MPK_MT_INSTALL_RECORD, tid, other, sizeof other);
    close_fd(&tfd);
    if (other[0] && strcmp(other, o->repo_id) != 0) {
      rc = mpk_fail(err, MPK_EMISMATCH, s.target, NULL,
                    "holds repo %s, not %s (both sanitize to %s): refusing to replace it", other, o->repo_id, name);
      goto out;
    }
  }
  if ((rc = open_dir(s.staging_fd, s.staging, "new", true, &s.new_fd, err)) ||
      (rc = open_dir(s.staging_fd, s.staging, "parts", true, &s.parts_fd, err)))
    goto out;
  remove_strays(&s);
  /* 3. The files, `jobs` at a time. */
  unsigned jobs = o->jobs ? o->jobs : 4;
  if (jobs > s.n) jobs = s.n ? (unsigned)s.n : 1;
  pthread_t tids[MAX_JOBS];
  unsigned started = 0;
  for (; started < jobs; started++)
    if (pthread_create(&tids[started], NULL, worker, &s) != 0) break;
  if (!started) worker(&s);
  for (unsigned i = 0; i < started; i++) pthread_join(tids[i], NULL);
  if (s.rc) {
    rc = s.rc;
    if (err) *err = s.err;
    goto out;
  }
  /* 4. The commit. */
  if ((rc = commit(&s, v, mdata, mlen, &replaced, err))) goto out; /* MPK_MT_INSTALL_STOPPED too */
  emit(&s, MPK_MT_INSTALL_COMMITTED, NULL, NULL);
  if (out) {
    out->repo_dir = strdup(s.target);
    out->files = s.n;
    out->total_bytes = s.total;
    out->reused_bytes = s.reused;
    out->retries = s.retries;
    out->restarts = s.restarts;
    out->replaced = replaced;
  }
out:
  if (rc && out) mpk_mt_install_result_free(out);
  if (lock_fd >= 0) close(lock_fd); /* releases the lock, on every path */
  for (size_t i = 0; i < s.n; i++) free(s.items[i].inst);
  free(s.items);
  mpk_mt_download_plan_free(s.plan);
  mpk_mt_selection_free(sel);
  mpk_mt_manifest_free(m);
  free(mdata);
  mpk_src_free(s.src);
  free_paths(&s);
  pthread_mutex_destroy(&s.mu);
  return rc;
}

void mpk_mt_install_result_free(mpk_mt_install_result *r) {
  if (!r) return;
  free(r->repo_dir);
  free(r->variant);
  memset(r, 0, sizeof *r);
}
