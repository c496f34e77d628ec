/* mt install: fetch a variant's planned files from a source (source.c) into a staging tree in the
   cache, verified while they arrive and resumable, then swap the complete, synced tree into
   <cache>/<sanitized repo id>/ with one rename. The layout, the staging records and the crash
   analysis are in docs/mt-install.md. */
#define _GNU_SOURCE /* renameat2 (RENAME_EXCHANGE) */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#include "mt.h"
#include "install.h"
#include "source.h"

#define STAGING_DIR ".staging"
#define MAX_JOBS 64
#define BYTES_EVENT_STEP ((uint64_t)1 << 20)

/* ---------------------------------------------------------------- installed paths */

static const char *const stages[] = {"embedding", "inference", "tokenizer", "train"};

int mpk_mt_installed_path(const mpk_mt_variant *v, const char *pkg, char **out, mpk_error *err) {
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

/* ---------------------------------------------------------------- small file helpers */

static int mkdir_one(const char *path) { return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1; }

/* The directories of `rel` (not its last segment) under `root`. */
static int mkdir_parents(const char *root, const char *rel, mpk_error *err) {
  char *p = mpk_path_join(root, rel);
  if (!p) return mpk_fail(err, MPK_ENOMEM, rel, NULL, "out of memory");
  int rc = 0;
  for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
    *s = '\0';
    if (mkdir_one(p) != 0) rc = mpk_fail(err, MPK_EIO, p, NULL, "cannot create the directory: %s", strerror(errno));
    *s = '/';
    if (rc) break;
  }
  free(p);
  return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag == FTW_DP) rmdir(path);
  else unlink(path);
  return 0;
}

/* Remove a tree (best effort: what remains is removed by the next install). */
static void rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path);
    return;
  }
  nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void fsync_path(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    mpk_fsync_dir(fd);
    close(fd);
  }
}

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* The "installId" of the install record in `dir` ("" when there is none or it is unreadable), and
   its "repoId" when `repo_id` is not NULL. */
static void read_record(const char *dir, char id[65], char *repo_id, size_t repo_cap) {
  id[0] = '\0';
  if (repo_id) repo_id[0] = '\0';
  char *p = mpk_path_join(dir, MPK_MT_INSTALL_RECORD);
  json_t *root = NULL;
  if (p && mpk_file_exists(p) && mpk_json_load_file(p, NULL, &root, NULL) == 0 && json_is_object(root)) {
    const char *s = json_string_value(json_object_get(root, "installId"));
    if (s && strlen(s) < 65) strcpy(id, s);
    s = json_string_value(json_object_get(root, "repoId"));
    if (repo_id && s) snprintf(repo_id, repo_cap, "%s", s);
  }
  json_decref(root);
  free(p);
}

static int write_json(const char *path, json_t *doc, mpk_error *err) {
  char *text = NULL;
  size_t len = 0;
  int rc = doc ? mpk_json_write_document(doc, true, &text, &len, err) : mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  if (!rc) rc = mpk_write_file_atomic(path, text, len, err);
  mpk_free(text);
  json_decref(doc);
  return rc;
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
  char *target, *staging, *new_dir, *parts_dir, *old_dir, *commit_file, *lock_file;
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

/* The staging record of a partial file: what it is meant to become, where its bytes came from. */
typedef struct part_ctx {
  inst *s;
  item *it;
  const char *record;
} part_ctx;

/* A staging record is replaced whole (a temp file renamed over it, so it is never torn by a killed
   process) but not fsynced: it only says where a resume may start, and the resumed bytes are
   re-hashed and checked against the manifest's digest anyway. After a power loss a record may be
   missing or empty; that file then starts over from 0. Syncing it (two fsyncs, three times per
   file) cost more than the 1 MiB files themselves (docs/PERFORMANCE.md, section 6). */
static int write_part(inst *s, const item *it, const char *record, const char *validator, uint64_t verified,
                      mpk_error *err) {
  json_t *doc = json_pack("{s:s, s:I, s:s, s:s, s:s, s:I}", "path", it->f->path, "size", (json_int_t)it->f->size,
                          "sha256", it->f->sha256, "validator", validator ? validator : "", "source",
                          mpk_src_location(s->src), "verified", (json_int_t)verified);
  char *text = NULL, *tmp = NULL;
  size_t len = 0;
  int rc = doc ? mpk_json_write_document(doc, true, &text, &len, err) : mpk_fail(err, MPK_ENOMEM, record, NULL, "out of memory");
  json_decref(doc);
  size_t n = strlen(record);
  if (!rc && !(tmp = malloc(n + 16))) rc = mpk_fail(err, MPK_ENOMEM, record, NULL, "out of memory");
  if (!rc) {
    snprintf(tmp, n + 16, "%s.tmp.XXXXXX", record); /* a leftover is removed as a stray */
    int fd = mpk_temp_open(tmp);
    if (fd < 0) {
      rc = mpk_fail(err, MPK_EIO, record, NULL, "cannot create a temporary file beside it: %s", strerror(errno));
    } else {
      bool ok = mpk_write_all(fd, text, len) == 0;
      int e = errno;
      if (close(fd) != 0 && ok) ok = false, e = errno;
      if (ok && rename(tmp, record) != 0) ok = false, e = errno;
      if (!ok) {
        unlink(tmp);
        rc = mpk_fail(err, MPK_EIO, record, NULL, "cannot write: %s", strerror(e));
      }
    }
  }
  free(tmp);
  mpk_free(text);
  return rc;
}

static void on_validator(void *ctx, const char *validator) {
  part_ctx *p = ctx;
  /* Best effort: without it the next resume goes without If-Range and relies on the digest. */
  write_part(p->s, p->it, p->record, validator, 0, NULL);
}

static int on_bytes(void *ctx, uint64_t done) {
  part_ctx *p = ctx;
  set_done(p->s, p->it, done);
  pthread_mutex_lock(&p->s->mu);
  bool stop = p->s->stop;
  pthread_mutex_unlock(&p->s->mu);
  return stop;
}

/* What the staging record says about the bytes already there: resume from them or not. */
static uint64_t resume_point(inst *s, const item *it, const char *record, const char *path, char validator[256]) {
  validator[0] = '\0';
  json_t *doc = NULL;
  struct stat st;
  uint64_t offset = 0;
  if (mpk_file_exists(record) && stat(path, &st) == 0 && mpk_json_load_file(record, NULL, &doc, NULL) == 0) {
    const char *sha = json_string_value(json_object_get(doc, "sha256"));
    const char *src = json_string_value(json_object_get(doc, "source"));
    const char *val = json_string_value(json_object_get(doc, "validator"));
    json_int_t size = json_integer_value(json_object_get(doc, "size"));
    if (sha && strcmp(sha, it->f->sha256) == 0 && size >= 0 && (uint64_t)size == it->f->size) {
      offset = (uint64_t)st.st_size <= it->f->size ? (uint64_t)st.st_size : 0;
      /* A validator means something only to the server that gave it. */
      if (val && src && strcmp(src, mpk_src_location(s->src)) == 0) snprintf(validator, 256, "%s", val);
    }
  }
  json_decref(doc);
  return offset;
}

static int install_one(inst *s, item *it, mpk_error *err) {
  char *path = mpk_path_join(s->new_dir, it->inst), *rj = mpk_path_join(s->parts_dir, it->inst);
  char *record = rj ? malloc(strlen(rj) + 6) : NULL;
  int rc = 0, fd = -1;
  if (!path || !record) {
    rc = mpk_fail(err, MPK_ENOMEM, it->f->path, NULL, "out of memory");
    goto out;
  }
  sprintf(record, "%s.json", rj);
  if ((rc = mkdir_parents(s->new_dir, it->inst, err)) || (rc = mkdir_parents(s->parts_dir, it->inst, err))) goto out;
  mpk_src_fetch f = {.rel = it->f->path, .size = it->f->size};
  f.offset = resume_point(s, it, record, path, f.validator);
  fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot create the staged file: %s", strerror(errno));
    goto out;
  }
  if (f.offset == 0 && ftruncate(fd, 0) != 0) {
    rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot truncate: %s", strerror(errno));
    goto out;
  }
  if (f.offset == 0 && (rc = write_part(s, it, record, "", 0, err))) goto out;
  set_done(s, it, f.offset);
  emit(s, MPK_MT_INSTALL_FILE_START, it, NULL);
  part_ctx pc = {s, it, record};
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
    write_part(s, it, record, "", 0, NULL);
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
  if (!rc) rc = write_part(s, it, record, f.validator, it->f->size, err);
  if (!rc) emit(s, MPK_MT_INSTALL_FILE_DONE, it, NULL);
out:
  if (fd >= 0) close(fd);
  free(path);
  free(rj);
  free(record);
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

static int plan(inst *s, const mpk_mt_manifest *m, const mpk_mt_variant *v, mpk_error *err) {
  /* core + checksums + the features (default inference), each file with its size and digest: a
     file that cannot be verified fails the plan, before anything is fetched. */
  mpk_mt_plan_options po = {.features = s->o->features, .n_features = s->o->n_features};
  int rc = mpk_mt_plan_download(m, v->id, &po, &s->plan, err);
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
   feature set): the committed tree holds exactly the planned files. */
typedef struct stray_ctx {
  inst *s;
  const char *root;
  const char *suffix;
} stray_ctx;

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

static int on_stray(void *ctx, const char *rel, int type, uint64_t size) {
  (void)size;
  stray_ctx *c = ctx;
  char name[4096];
  snprintf(name, sizeof name, "%s", rel);
  size_t n = strlen(name), sl = strlen(c->suffix);
  bool keep = false;
  if (type == MPK_WALK_FILE && n > sl && strcmp(name + n - sl, c->suffix) == 0) {
    name[n - sl] = '\0';
    keep = find_item(c->s, name) >= 0;
  }
  if (!keep) {
    char *p = mpk_path_join(c->root, rel);
    if (p) unlink(p);
    free(p);
  }
  return 0;
}

static int remove_strays(inst *s, mpk_error *err) {
  stray_ctx a = {s, s->new_dir, ""}, b = {s, s->parts_dir, ".json"};
  int rc = 0;
  if (mpk_is_dir(s->new_dir)) rc = mpk_walk_files(s->new_dir, on_stray, &a, err);
  if (!rc && mpk_is_dir(s->parts_dir)) rc = mpk_walk_files(s->parts_dir, on_stray, &b, err);
  return rc;
}

/* ---------------------------------------------------------------- commit and recovery */

/* Put `from` (complete) at `to`. With a previous tree at `to`: exchanged in one step
   (renameat2 RENAME_EXCHANGE; `from` then holds the old tree), or, where the file system cannot,
   `to` moved to `aside` and `from` renamed in (recovery rolls that forward: see the doc). */
static int swap_in(inst *s, int *replaced, mpk_error *err) {
  const char *from = s->new_dir, *to = s->target, *aside = s->old_dir;
  *replaced = 0;
  if (exists(to)) {
    *replaced = 1;
#ifdef RENAME_EXCHANGE
    if (!s->no_exchange) {
      if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE) == 0) {
        STEP(s);
        return 0;
      }
      if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return mpk_fail(err, MPK_EIO, to, NULL, "cannot exchange the new install with the old one: %s", strerror(errno));
    }
#endif
    rm_rf(aside);
    if (rename(to, aside) != 0)
      return mpk_fail(err, MPK_EIO, to, NULL, "cannot move the old install aside: %s", strerror(errno));
    STEP(s);
  }
  if (rename(from, to) != 0) return mpk_fail(err, MPK_EIO, to, NULL, "cannot rename the new install into place: %s", strerror(errno));
  STEP(s);
  return 0;
}

static void read_commit(const char *file, char id[65]) {
  id[0] = '\0';
  json_t *doc = NULL;
  if (mpk_file_exists(file) && mpk_json_load_file(file, NULL, &doc, NULL) == 0) {
    const char *s = json_string_value(json_object_get(doc, "installId"));
    if (s && strlen(s) < 65) strcpy(id, s);
  }
  json_decref(doc);
}

static void cache_dir_of(const char *target, char *out, size_t cap) {
  snprintf(out, cap, "%s", target);
  char *slash = strrchr(out, '/');
  if (slash && slash != out) *slash = '\0';
  else snprintf(out, cap, ".");
}

/* Finish what an interrupted commit left (under the lock): the marker names the new tree; if the
   target holds it, the swap happened and only cleanup remains; if the staging tree holds it, the
   swap is done now. */
static int recover(inst *s, mpk_error *err) {
  char id[65], tid[65], nid[65];
  read_commit(s->commit_file, id);
  if (id[0]) {
    read_record(s->target, tid, NULL, 0);
    read_record(s->new_dir, nid, NULL, 0);
    if (strcmp(nid, id) == 0 && strcmp(tid, id) != 0) {
      int replaced;
      int rc = swap_in(s, &replaced, err);
      if (rc) return rc < 0 ? rc : 0;
      char cache[4096];
      cache_dir_of(s->target, cache, sizeof cache);
      fsync_path(cache);
      fsync_path(s->staging);
    }
    if (strcmp(nid, id) == 0 || strcmp(tid, id) == 0) {
      rm_rf(s->new_dir); /* the old tree after an exchange, or nothing */
      rm_rf(s->parts_dir);
    }
  }
  rm_rf(s->old_dir);
  unlink(s->commit_file);
  fsync_path(s->staging);
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
  char *rpath = mpk_path_join(s->new_dir, MPK_MT_INSTALL_RECORD);
  if (!rpath) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
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
  int rc = write_json(rpath, doc, err);
  free(rpath);
  return rc;
}

/* The commit, step by step (docs/mt-install.md, "Commit and crash analysis"): each step is durable
   before the next, and the numbers are the steps a crash test can stop after. */
static int commit(inst *s, const mpk_mt_variant *v, const uint8_t *manifest, size_t manifest_len, int *replaced,
                  mpk_error *err) {
  s->step = 0;
  char *mpath = mpk_path_join(s->new_dir, MPK_MT_MANIFEST_FILENAME);
  int rc = mpath ? mpk_write_file_atomic(mpath, manifest, manifest_len, err)
                 : mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  free(mpath);
  if (rc) return rc;
  STEP(s); /* 1: the manifest */
  char id[33];
  random_id(id);
  if ((rc = write_record(s, v, id, err))) return rc;
  STEP(s); /* 2: the install record */
  /* Every directory of the new tree durable before the marker says the tree is complete, each
     once: the items are sorted by installed path, so a directory the previous item's chain
     already synced ends this item's walk up. */
  char *prev = NULL; /* the previous item's path: its directories are synced */
  for (size_t i = 0; i < s->n; i++) {
    char *d = mpk_path_join(s->new_dir, s->items[i].inst), *keep = d ? strdup(d) : NULL;
    for (char *slash; d && (slash = strrchr(d, '/')) && strlen(d) > strlen(s->new_dir);) {
      *slash = '\0';
      size_t dl = strlen(d);
      if (prev && strncmp(prev, d, dl) == 0 && prev[dl] == '/') break;
      fsync_path(d);
    }
    free(d);
    if (keep) {
      free(prev);
      prev = keep;
    }
  }
  free(prev);
  fsync_path(s->new_dir);
  fsync_path(s->staging);
  STEP(s); /* 3: the tree synced */
  json_t *marker = json_pack("{s:s}", "installId", id);
  if ((rc = write_json(s->commit_file, marker, err))) return rc;
  STEP(s); /* 4: the marker: from here on, recovery rolls forward */
  if ((rc = swap_in(s, replaced, err))) { /* 5 (exchange), or 5 aside + 6 renamed in */
    if (rc < 0) unlink(s->commit_file); /* not swapped: the staging tree stays for the next attempt */
    return rc;
  }
  char cache[4096];
  cache_dir_of(s->target, cache, sizeof cache);
  fsync_path(cache);
  fsync_path(s->staging);
  STEP(s); /* the swap durable */
  /* The new install is in place: what remains is cleanup, which recovery would also do. */
  rm_rf(s->new_dir);
  STEP(s);
  rm_rf(s->old_dir);
  rm_rf(s->parts_dir);
  STEP(s);
  unlink(s->commit_file);
  fsync_path(s->staging);
  return 0;
}

/* ---------------------------------------------------------------- entry point */

static int take_lock(inst *s, int *fd, mpk_error *err) {
  *fd = open(s->lock_file, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (*fd < 0) return mpk_fail(err, MPK_EIO, s->lock_file, NULL, "cannot open the lock file: %s", strerror(errno));
  int op = LOCK_EX | (s->o->wait_for_lock ? 0 : LOCK_NB);
  while (flock(*fd, op) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    close(*fd);
    *fd = -1;
    if (e == EWOULDBLOCK)
      return mpk_fail(err, MPK_EIO, s->target, NULL,
                      "another installer of this repo id is running in this cache (it holds %s); wait for it, or "
                      "ask to wait (--wait)", s->lock_file);
    return mpk_fail(err, MPK_EIO, s->lock_file, NULL, "cannot lock: %s", strerror(e));
  }
  return 0;
}

/* The paths of one cache and repo: <cache>/<name>, and under <cache>/.staging/<name>/ the staging
   tree new/, the records parts/, the old tree old/ (two-rename swap), commit.json and lock. */
static void set_paths(inst *s, const char *cache_dir, const char *name, char **stage_root) {
  *stage_root = mpk_path_join(cache_dir, STAGING_DIR);
  s->target = mpk_path_join(cache_dir, name);
  s->staging = *stage_root ? mpk_path_join(*stage_root, name) : NULL;
  s->new_dir = s->staging ? mpk_path_join(s->staging, "new") : NULL;
  s->parts_dir = s->staging ? mpk_path_join(s->staging, "parts") : NULL;
  s->old_dir = s->staging ? mpk_path_join(s->staging, "old") : NULL;
  s->commit_file = s->staging ? mpk_path_join(s->staging, "commit.json") : NULL;
  s->lock_file = s->staging ? mpk_path_join(s->staging, "lock") : NULL;
}

static void free_paths(inst *s) {
  free(s->target);
  free(s->staging);
  free(s->new_dir);
  free(s->parts_dir);
  free(s->old_dir);
  free(s->commit_file);
  free(s->lock_file);
}

int mpk_mt_install_recover(const char *cache_dir, const char *repo_id, int *recovered, mpk_error *err) {
  if (recovered) *recovered = 0;
  if (!cache_dir || !repo_id) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  char name[MPK_MT_REPO_DIR_MAX + 1];
  int rc = mpk_mt_sanitize_repo_id(repo_id, name, sizeof name, err);
  if (rc) return rc;
  mpk_mt_install_options o = {.repo_id = repo_id, .cache_dir = cache_dir};
  inst s = {.o = &o};
  char *stage_root = NULL;
  set_paths(&s, cache_dir, name, &stage_root);
  int fd = -1;
  if (!s.lock_file) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  else if (mpk_is_dir(s.staging)) { /* nothing staged: nothing to recover, nothing to create */
    if (!(rc = take_lock(&s, &fd, err))) {
      if (recovered) *recovered = mpk_file_exists(s.commit_file);
      rc = recover(&s, err);
    }
  }
  if (fd >= 0) close(fd);
  free(stage_root);
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

int mpk_mt_install_ex(const char *source, const mpk_mt_install_options *o, const mpk_mt_install_test *test,
                      mpk_mt_install_result *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!source || !o || !o->repo_id || !o->cache_dir)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the source, repo id and cache directory are required");
  if (o->jobs > MAX_JOBS) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "at most %d jobs", MAX_JOBS);
  char name[MPK_MT_REPO_DIR_MAX + 1];
  int rc = mpk_mt_sanitize_repo_id(o->repo_id, name, sizeof name, err);
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
  char *stage_root = NULL;
  set_paths(&s, o->cache_dir, name, &stage_root);
  if (!s.target || !s.new_dir || !s.parts_dir || !s.old_dir || !s.commit_file || !s.lock_file) {
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    goto out;
  }
  mpk_src_retry retry = {.attempts = o->attempts, .base_ms = o->retry_delay_ms};
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
    mpk_mt_select_options so = {0};
    if (o->select) so = *o->select;
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
    *err = s.err;
    goto out;
  }
  /* 2. Staging area and the lock; what an interrupted install left is finished or kept. */
  if (mkdir_one(o->cache_dir) || mkdir_one(stage_root) || mkdir_one(s.staging)) {
    rc = mpk_fail(err, MPK_EIO, s.staging, NULL, "cannot create the staging directory: %s", strerror(errno));
    goto out;
  }
  if ((rc = take_lock(&s, &lock_fd, err))) goto out;
  if ((rc = recover(&s, err))) goto out;
  {
    char other[1024], tid[65];
    read_record(s.target, tid, other, sizeof other);
    if (other[0] && strcmp(other, o->repo_id) != 0) {
      rc = mpk_fail(err, MPK_EMISMATCH, s.target, NULL,
                    "holds repo %s, not %s (both sanitize to %s): refusing to replace it", other, o->repo_id, name);
      goto out;
    }
  }
  if (mkdir_one(s.new_dir) || mkdir_one(s.parts_dir)) {
    rc = mpk_fail(err, MPK_EIO, s.staging, NULL, "cannot create the staging directory: %s", strerror(errno));
    goto out;
  }
  if ((rc = remove_strays(&s, err))) goto out;
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
  if (lock_fd >= 0) close(lock_fd); /* releases the lock */
  for (size_t i = 0; i < s.n; i++) free(s.items[i].inst);
  free(s.items);
  mpk_mt_download_plan_free(s.plan);
  mpk_mt_selection_free(sel);
  mpk_mt_manifest_free(m);
  free(mdata);
  mpk_src_free(s.src);
  free(stage_root);
  free_paths(&s);
  pthread_mutex_destroy(&s.mu);
  return rc;
}

void mpk_mt_install_result_free(mpk_mt_install_result *r) {
  if (!r) return;
  free(r->repo_dir);
  free(r->variant);
  r->repo_dir = r->variant = NULL;
}
