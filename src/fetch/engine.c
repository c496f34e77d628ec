/* The fetch engine's download of a plan (docs/fetch.md): each file fetched from a source (source.c)
   into the stage's new/ tree, hashed while it arrives (core's hasher, SHA-256 or MD5 per file),
   resumable from its staging record in parts/, `jobs` files at once on core's worker pool; and the
   public wrappers of the source. The commit is commit.c's, the staging area stage.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pool.h"
#include "fetch/engine.h"
#include "fetch/source.h"

#define BYTES_EVENT_STEP ((uint64_t)1 << 20)

/* ---------------------------------------------------------------- sources */

int mpk_fetch_source_open(const char *location, const mpk_fetch_source_options *opts, mpk_fetch_source **out,
                          mpk_error *err) {
  if (out) *out = NULL;
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_src_retry retry = {0};
  if (opts) {
    mpk_fetch_source_options o;
    int rc = MPK_OPTIONS_READ_GROWN(mpk_fetch_source_options, ca_file, &o, opts, err);
    if (rc) return rc;
    retry = (mpk_src_retry){.attempts = o.attempts,
                            .base_ms = o.retry_delay_ms,
                            .max_ms = o.retry_max_ms,
                            .deadline_secs = o.timeout_secs,
                            .low_speed_bytes = o.low_speed_bytes,
                            .low_speed_secs = o.low_speed_secs,
                            .ca_file = o.ca_file};
  }
  return mpk_src_open(location, &retry, out, err);
}

void mpk_fetch_source_free(mpk_fetch_source *src) { mpk_src_free(src); }

const char *mpk_fetch_source_location(const mpk_fetch_source *src) { return src ? mpk_src_location(src) : NULL; }

int mpk_fetch_source_read(mpk_fetch_source *src, const char *path, size_t max, uint8_t **data, size_t *len,
                          mpk_error *err) {
  if (data) *data = NULL;
  if (len) *len = 0;
  if (!src || !path || !data || !len) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (max == SIZE_MAX) return mpk_fail(err, MPK_EINVAL, path, NULL, "no bound given");
  return mpk_src_read_small(src, path, max, data, len, err);
}

/* ---------------------------------------------------------------- the plan */

static const char *dest_of(const mpk_fetch_file *f) { return f->dest ? f->dest : f->path; }

static int cmp_dest(const void *a, const void *b) {
  return strcmp(dest_of(*(const mpk_fetch_file *const *)a), dest_of(*(const mpk_fetch_file *const *)b));
}

static bool digest_ok(const mpk_fetch_file *f) {
  size_t want = f->algo == MPK_DIGEST_MD5 ? 32 : f->algo == MPK_DIGEST_SHA256 ? 64 : 0;
  if (!want || !f->digest || strlen(f->digest) != want) return false;
  for (size_t k = 0; k < want; k++)
    if (!((f->digest[k] >= '0' && f->digest[k] <= '9') || (f->digest[k] >= 'a' && f->digest[k] <= 'f'))) return false;
  return true;
}

/* The plan's files sorted by dest (malloc'ed pointers into `files`), checked. */
static int sorted_plan(const mpk_fetch_file *files, size_t n, const char *doc, const char *const *reserved,
                       size_t n_reserved, const mpk_fetch_file ***out, mpk_error *err) {
  *out = NULL;
  if (n && !files) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  for (size_t i = 0; i < n; i++) {
    const char *why = NULL;
    if (!files[i].path || !mpk_path_is_confined(files[i].path, &why))
      return mpk_fail(err, MPK_EINVAL, doc, NULL, "planned file %s: not a confined relative path%s%s",
                      files[i].path ? files[i].path : "(null)", why ? ": " : "", why ? why : "");
    if (files[i].dest && !mpk_path_is_confined(files[i].dest, &why))
      return mpk_fail(err, MPK_EINVAL, doc, NULL, "planned file %s: its destination %s is not a confined relative path",
                      files[i].path, files[i].dest);
    if (!digest_ok(&files[i]))
      return mpk_fail(err, MPK_EINVAL, doc, NULL, "planned file %s: the digest is not %s as lowercase hex",
                      files[i].path, files[i].algo == MPK_DIGEST_MD5 ? "an MD5" : "a SHA-256");
  }
  const mpk_fetch_file **v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  for (size_t i = 0; i < n; i++) v[i] = &files[i];
  mpk_sort(v, n, sizeof *v, cmp_dest);
  /* Two files at one installed path, or a file where another needs a directory: refused. */
  for (size_t i = 0; i < n; i++) {
    const char *a = dest_of(v[i]);
    for (size_t r = 0; r < n_reserved; r++)
      if (reserved[r] && strcmp(a, reserved[r]) == 0) {
        int rc = mpk_fail(err, MPK_EMALFORMED, doc, NULL,
                          "planned file %s would be installed as %s, which the installer writes itself", v[i]->path, a);
        free(v);
        return rc;
      }
    for (size_t j = i + 1; j < n; j++) {
      const char *b = dest_of(v[j]);
      size_t al = strlen(a);
      if (strncmp(a, b, al) != 0) break;
      if (b[al] == '\0' || b[al] == '/') {
        int rc = mpk_fail(err, MPK_EMALFORMED, doc, NULL,
                          "planned files %s and %s collide in the installed layout (%s, %s)", v[i]->path, v[j]->path,
                          a, b);
        free(v);
        return rc;
      }
    }
  }
  *out = v;
  return 0;
}

int mpk_fetch_plan_check(const mpk_fetch_file *files, size_t n, const char *plan_doc, const char *const *reserved,
                         size_t n_reserved, mpk_error *err) {
  const mpk_fetch_file **v;
  int rc = sorted_plan(files, n, plan_doc, reserved, n_reserved, &v, err);
  free(v);
  return rc;
}

/* ---------------------------------------------------------------- the download state */

/* Emit an event (the pool's lock held). A non-zero answer cancels the download. */
static void emit_locked(mpk_fx_run *r, mpk_fetch_event_kind kind, const mpk_fx_item *it, const char *message) {
  if (!r->o.on_event) return;
  mpk_fetch_event ev = {.kind = kind, .file = it->f->path, .file_done = it->done, .file_size = it->f->size,
                        .done = r->done, .total = r->total, .files = r->n, .message = message};
  if (r->o.on_event(r->o.ctx, &ev) && !r->stop) {
    r->stop = true;
    if (!r->rc) r->rc = mpk_fail(&r->err, MPK_ECANCELLED, NULL, NULL, "cancelled");
  }
}

void mpk_fx_emit(mpk_pool *pool, mpk_fx_run *r, mpk_fetch_event_kind kind, const mpk_fx_item *it, const char *message) {
  mpk_pool_lock(pool);
  emit_locked(r, kind, it, message);
  mpk_pool_unlock(pool);
}

/* Move one file's progress to `done` bytes. */
void mpk_fx_set_done(mpk_pool *pool, mpk_fx_run *r, mpk_fx_item *it, uint64_t done) {
  mpk_pool_lock(pool);
  r->done = r->done - it->done + done;
  it->done = done;
  if (done < it->evented || done - it->evented >= BYTES_EVENT_STEP || done == it->f->size) {
    it->evented = done;
    emit_locked(r, MPK_FETCH_BYTES, it, NULL);
  }
  mpk_pool_unlock(pool);
}

/* ---------------------------------------------------------------- one file */

/* A staging record is replaced whole (a temp file renamed over it, so it is never torn by a killed
   process) but not fsynced: it only says where a resume may start, and the resumed bytes are
   re-hashed and checked against the plan's digest anyway. After a power loss a record may be
   missing or empty; that file then starts over from 0. Syncing it (two fsyncs, three times per
   file) cost more than the 1 MiB files themselves (docs/PERFORMANCE.md, section 6). */
int mpk_fx_staged_record(const mpk_fx_staged *p, const char *validator, uint64_t verified, int64_t prefix,
                         mpk_error *err) {
  const mpk_fetch_file *f = p->it->f;
  json_t *doc = json_pack("{s:s, s:I, s:s, s:s, s:s, s:I}", "path", f->path, "size", (json_int_t)f->size,
                          mpk_fetch_algo_key(f->algo), f->digest, "validator", validator ? validator : "", "source",
                          mpk_src_location(p->r->src), "verified", (json_int_t)verified);
  /* A ranged file: the contiguous prefix written and hashed (pieces beyond it are not trusted). */
  if (doc && prefix >= 0 && json_object_set_new(doc, "prefix", json_integer((json_int_t)prefix)) != 0) {
    json_decref(doc);
    doc = NULL;
  }
  return mpk_fx_write_json_at(p->pdir, p->pshown, p->record, doc, false, err);
}
static int write_part(const mpk_fx_staged *p, const char *validator, uint64_t verified, mpk_error *err) {
  return mpk_fx_staged_record(p, validator, verified, -1, err);
}

static void on_validator(void *ctx, const char *validator) {
  /* Best effort: without it the next resume goes without If-Range and relies on the digest. */
  write_part(ctx, validator, 0, NULL);
}

static int on_bytes(void *ctx, uint64_t done) {
  mpk_fx_staged *p = ctx;
  mpk_fx_set_done(p->pool, p->r, p->it, done);
  mpk_pool_lock(p->pool);
  bool stop = p->r->stop;
  mpk_pool_unlock(p->pool);
  return stop;
}

/* What the staging record says about the bytes already there (the open staged file `fd`): resume
   from them or not. */
uint64_t mpk_fx_staged_resume(const mpk_fx_staged *p, char validator[256]) {
  validator[0] = '\0';
  struct stat st;
  if (fstat(p->fd, &st) != 0) return 0;
  size_t len;
  char *data = mpk_fx_read_small_at(p->pdir, p->pshown, p->record, &len);
  const mpk_fetch_file *f = p->it->f;
  uint64_t offset = data ? mpk_fetch_parse_part(data, len, f->algo, f->digest, f->size, mpk_src_location(p->r->src),
                                                (uint64_t)st.st_size, validator)
                         : 0;
  free(data);
  return offset;
}

/* The staged file `name` in `dir`, created when missing: a regular file, never through a link. */
static int open_staged(int dir, const char *shown, const char *name, int *fd, mpk_error *err) {
  *fd = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666);
  if (*fd < 0) {
    struct stat st;
    if (errno == ELOOP || (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)))
      return mpk_fx_refuse_link(err, shown);
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot create the staged file: %s", strerror(errno));
  }
  struct stat st;
  if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    mpk_fx_close(fd);
    return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "is %s, not a regular file: refused",
                    mpk_file_type_name(st.st_mode));
  }
  int fl = fcntl(*fd, F_GETFL);
  if (fl >= 0) (void)fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK);
  return 0;
}

void mpk_fx_staged_close(mpk_fx_staged *sf) {
  mpk_fx_close(&sf->fd);
  mpk_fx_close(&sf->dir);
  mpk_fx_close(&sf->pdir);
}

int mpk_fx_staged_open(mpk_pool *pool, mpk_fx_run *r, mpk_fx_item *it, mpk_fx_staged *sf, mpk_error *err) {
  mpk_fetch_stage *st = r->st;
  const mpk_fetch_file *file = it->f;
  *sf = (mpk_fx_staged){.pool = pool, .r = r, .it = it, .fd = -1, .dir = -1, .pdir = -1};
  const char *pbase;
  int rc;
  snprintf(sf->path, sizeof sf->path, "%s/%s", st->new_dir, it->dest);
  snprintf(sf->pshown, sizeof sf->pshown, "%s/%s", st->parts_dir, it->dest);
  char *slash = strrchr(sf->pshown, '/');
  *slash = '\0'; /* the record's directory */
  if ((rc = mpk_fx_open_parent(st->new_fd, st->new_dir, it->dest, true, &sf->dir, &sf->base, err)) ||
      (rc = mpk_fx_open_parent(st->parts_fd, st->parts_dir, it->dest, true, &sf->pdir, &pbase, err)))
    goto fail;
  if (strlen(pbase) + 5 > NAME_MAX) {
    rc = mpk_fail(err, MPK_ELIMIT, file->path, NULL, "file name too long for its staging record");
    goto fail;
  }
  snprintf(sf->record, sizeof sf->record, "%s.json", pbase);
  if ((rc = open_staged(sf->dir, sf->path, sf->base, &sf->fd, err))) goto fail;
  return 0;
fail:
  mpk_fx_staged_close(sf);
  return rc;
}

int mpk_fx_fetch_whole(mpk_pool *pool, mpk_fx_run *r, mpk_fx_item *it, void *curl, mpk_error *err) {
  const mpk_fetch_file *file = it->f;
  const char *algo = mpk_fetch_algo_name(file->algo);
  mpk_fx_staged sfo, *pc = &sfo;
  int rc = mpk_fx_staged_open(pool, r, it, pc, err);
  if (rc) return rc;
  int fd = pc->fd;
  const char *path = pc->path;
  mpk_src_fetch f = {.rel = file->path, .size = file->size, .algo = file->algo};
  f.offset = mpk_fx_staged_resume(pc, f.validator);
  if (f.offset == 0 && ftruncate(fd, 0) != 0) {
    rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot truncate: %s", strerror(errno));
    goto out;
  }
  if (f.offset == 0 && (rc = write_part(pc, "", 0, err))) goto out;
  mpk_fx_set_done(pool, r, it, f.offset);
  mpk_fx_emit(pool, r, MPK_FETCH_FILE_START, it, NULL);
  f.fd = fd;
  f.on_validator = on_validator;
  f.on_bytes = on_bytes;
  f.ctx = pc;
  f.curl = curl;
  unsigned tries = r->o.digest_attempts ? r->o.digest_attempts : 3;
  char got[65] = "";
  bool ok = false;
  for (unsigned t = 1; t <= tries; t++) {
    rc = mpk_src_fetch_file(r->src, &f, err);
    mpk_pool_lock(pool);
    r->retries += f.retries;
    r->restarts += f.restarts;
    mpk_pool_unlock(pool);
    if (rc) break;
    if (strcmp(f.hex, file->digest) == 0) {
      ok = true;
      mpk_pool_lock(pool);
      r->reused += f.resumed_from;
      mpk_pool_unlock(pool);
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
    write_part(pc, "", 0, NULL);
    mpk_fx_set_done(pool, r, it, 0);
    if (t < tries) {
      char msg[200];
      snprintf(msg, sizeof msg, "%s %s, %s says %s", algo, got, r->plan_name, file->digest);
      mpk_fx_emit(pool, r, MPK_FETCH_RETRY, it, msg);
    }
  }
  if (!rc && !ok)
    rc = mpk_fail(err, MPK_EMISMATCH, file->path, NULL, "%s of the downloaded bytes is %s, %s says %s (%u download%s)",
                  algo, got, r->plan_name, file->digest, tries, tries == 1 ? "" : "s");
  if (!rc && fsync(fd) != 0) {
    int e = errno;
    rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot sync: %s%s", strerror(e),
                  e == ENOSPC || e == EDQUOT ? " (the disk is full)" : "");
  }
  if (!rc) rc = write_part(pc, f.validator, file->size, err);
  if (!rc) mpk_fx_emit(pool, r, MPK_FETCH_FILE_DONE, it, NULL);
out:
  mpk_fx_staged_close(pc);
  return rc;
}

/* One file, on core's worker pool. The first failure (in time) is kept in r->rc / r->err with the
   cancellation an event callback may cause, under the pool's lock; r->stop ends the other
   downloads early. */
static int fetch_task(mpk_pool *pool, void *ctx, size_t i, void *scratch, mpk_error *err) {
  (void)scratch, (void)err;
  mpk_fx_run *r = ctx;
  mpk_pool_lock(pool);
  bool stop = r->stop;
  mpk_pool_unlock(pool);
  if (stop) return 0;
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_fx_fetch_whole(pool, r, &r->items[i], NULL, &e);
  if (rc) {
    mpk_pool_lock(pool);
    if (!r->rc) {
      r->rc = rc;
      r->err = e;
    }
    r->stop = true;
    mpk_pool_unlock(pool);
  }
  return rc;
}

/* ---------------------------------------------------------------- strays */

/* Remove what the staging tree holds beyond the plan (an earlier run with another plan, a
   temporary file a killed process left): the committed tree holds exactly the planned files.
   Entries are removed with unlinkat, links themselves, never followed. */
static int find_item(const mpk_fx_run *r, const char *rel) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(r->items[mid].dest, rel);
    if (!c) return (int)mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/* `rel` (a path under new/ or parts/) is a planned file's, with `suffix` after it. */
static bool planned(const mpk_fx_run *r, const char *rel, const char *suffix) {
  size_t n = strlen(rel), sl = strlen(suffix);
  if (n <= sl || strcmp(rel + n - sl, suffix) != 0) return false;
  char name[4096];
  if (n - sl >= sizeof name) return false;
  memcpy(name, rel, n - sl);
  name[n - sl] = '\0';
  return find_item(r, name) >= 0;
}

static void strays_at(const mpk_fx_run *r, int dir, char *rel, size_t len, const char *suffix, int depth) {
  size_t n;
  char **names = mpk_fx_list_dir(dir, &n);
  for (size_t i = 0; i < n; i++) {
    size_t nl = strlen(names[i]);
    if (len + nl + 2 > 4096) continue;
    if (len) rel[len] = '/';
    memcpy(rel + len + (len ? 1 : 0), names[i], nl + 1);
    size_t rl = len + (len ? 1 : 0) + nl;
    struct stat st;
    if (fstatat(dir, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
      rel[len] = '\0';
      continue;
    }
    if (S_ISDIR(st.st_mode) && !planned(r, rel, suffix) && depth < MPK_FETCH_TREE_MAX_DEPTH) {
      int fd = openat(dir, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        strays_at(r, fd, rel, rl, suffix, depth + 1);
        close(fd);
      }
    } else if (!S_ISREG(st.st_mode) || !planned(r, rel, suffix)) {
      mpk_fx_rm_tree(dir, names[i], depth); /* a link, FIFO, or a directory where a file is planned */
    }
    rel[len] = '\0';
  }
  mpk_fx_free_names(names, n);
}

/* ---------------------------------------------------------------- the download */

int mpk_fetch_download(mpk_fetch_stage *st, mpk_fetch_source *src, const mpk_fetch_file *files, size_t n,
                       const mpk_fetch_options *opts, mpk_fetch_result *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!st || !src) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_fx_run r = {.st = st, .src = src};
  int orc = MPK_OPTIONS_READ_GROWN(mpk_fetch_options, connections, &r.o, opts, err);
  if (orc) return orc;
  if (r.o.jobs > MPK_FETCH_MAX_JOBS) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "at most %d jobs", MPK_FETCH_MAX_JOBS);
  if (r.o.connections > MPK_FETCH_MAX_JOBS)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "at most %d connections", MPK_FETCH_MAX_JOBS);
  r.plan_name = r.o.plan_name ? r.o.plan_name : "the plan";
  const mpk_fetch_file **sorted;
  int rc = sorted_plan(files, n, NULL, NULL, 0, &sorted, err);
  if (rc) return rc;
  if (!(r.items = calloc(n ? n : 1, sizeof *r.items))) {
    free(sorted);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  r.n = n;
  for (size_t i = 0; i < n; i++) {
    r.items[i].f = sorted[i];
    r.items[i].dest = dest_of(sorted[i]);
    r.total += sorted[i]->size;
  }
  free(sorted);
  mpk_fx_close(&st->new_fd); /* a second download into the same stage opens them afresh */
  mpk_fx_close(&st->parts_fd);
  if ((rc = mpk_fx_open_dir(st->staging_fd, st->staging, "new", true, &st->new_fd, err)) ||
      (rc = mpk_fx_open_dir(st->staging_fd, st->staging, "parts", true, &st->parts_fd, err)))
    goto out;
  char rel[4096] = "";
  strays_at(&r, st->new_fd, rel, 0, "", 0);
  strays_at(&r, st->parts_fd, rel, 0, ".json", 0);
  /* `connections` transfers at once: over HTTP the ranged scheduler (ranges.c: whole files and
     pieces of large ones, one kept-alive handle per worker); a directory, whole files on the pool. */
  unsigned jobs = r.o.connections ? r.o.connections : r.o.jobs ? r.o.jobs : 4;
  r.connections = jobs;
  if (mpk_src_is_http(src)) {
    mpk_fx_download_http(&r);
  } else {
    if (jobs > r.n) jobs = r.n ? (unsigned)r.n : 1;
    mpk_pool_run(r.n, &(mpk_pool_opts){.workers = jobs}, fetch_task, &r, NULL, NULL); /* r.rc has the result */
  }
  if (r.rc) {
    rc = r.rc;
    if (err) *err = r.err;
    goto out;
  }
  if (out) {
    out->files = r.n;
    out->total_bytes = r.total;
    out->reused_bytes = r.reused;
    out->retries = r.retries;
    out->restarts = r.restarts;
  }
out:
  free(r.items);
  return rc;
}
