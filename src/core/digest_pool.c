/* Hashing many files: streaming reads (one fixed buffer per worker, so memory does not grow with
   the package) on the worker pool (pool.c), the largest files first (by expected_size): one file
   goes to one worker, so a big file handed out last would run alone while the other workers idle
   (docs/PERFORMANCE.md, section 3). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "core/hash.h"
#include "core/pool.h"

#define CHUNK (1u << 20)
#define MAX_WORKERS 8

/* The order files are handed out in: largest expected_size first; equal sizes (and jobs without an
   expected_size) keep the caller's order. */
typedef struct slot {
  uint64_t size;
  size_t job;
} slot;

static int cmp_larger_first(const void *a, const void *b) {
  const slot *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  return (x->job > y->job) - (x->job < y->job);
}

typedef struct run {
  mpk_digest_job *jobs;
  mpk_error *errs;  /* one per job */
  const char *root; /* non-NULL: job paths are relative to it, opened beneath it (open.c) */
} run;

typedef struct counted {
  mpk_pool *pool;
  uint64_t last;
} counted;

static int on_bytes(void *ctx, uint64_t total) {
  counted *c = ctx;
  uint64_t step = total - c->last;
  c->last = total;
  return mpk_pool_advance(c->pool, step) ? 1 : 0;
}

static int hash_one(mpk_pool *pool, const run *r, mpk_digest_job *job, uint8_t *buf, mpk_error *err) {
  int fd = -1;
  if (r->root) {
    int rc = mpk_open_read(r->root, job->path, 0, &fd, NULL, err);
    if (rc) return rc;
  } else if ((fd = open(job->path, O_RDONLY | O_CLOEXEC)) < 0) {
    return mpk_fail(err, errno == ENOENT ? MPK_ENOTFOUND : MPK_EIO, job->path, NULL, "cannot open: %s",
                    strerror(errno));
  }
#ifdef POSIX_FADV_SEQUENTIAL
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  mpk_hasher h;
  int rc = mpk_hasher_init(&h, job->algo);
  if (rc) {
    rc = mpk_fail(err, MPK_ENOMEM, job->path, NULL, "cannot start the digest");
  } else {
    counted c = {.pool = pool};
    rc = mpk_hasher_update_fd(&h, fd, 0, UINT64_MAX, buf, CHUNK, &job->size, on_bytes, &c);
    if (rc == MPK_ECANCELLED) rc = mpk_fail(err, MPK_ECANCELLED, job->path, NULL, "cancelled");
    else if (rc) rc = mpk_fail(err, rc, job->path, NULL, "read failed: %s", strerror(errno));
    else if (mpk_hasher_final_hex(&h, job->hex)) rc = mpk_fail(err, MPK_EIO, job->path, NULL, "cannot finish the digest");
  }
  mpk_hasher_free(&h);
  close(fd);
  return rc;
}

static int task(mpk_pool *pool, void *ctx, size_t i, void *scratch, mpk_error *err) {
  run *r = ctx;
  (void)err; /* each job keeps its own result: the pool runs with keep_going */
  mpk_error_clear(&r->errs[i]);
  r->jobs[i].code = hash_one(pool, r, &r->jobs[i], scratch, &r->errs[i]);
  return 0;
}

int mpk_digest_files(mpk_digest_job *jobs, size_t n, unsigned workers, mpk_progress_fn progress,
                     void *progress_ctx, mpk_error *err) {
  return mpk_digest_files_beneath(NULL, jobs, n, workers, progress, progress_ctx, err);
}

int mpk_digest_files_beneath(const char *root, mpk_digest_job *jobs, size_t n, unsigned workers,
                             mpk_progress_fn progress, void *progress_ctx, mpk_error *err) {
  if (n && !jobs) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (!workers) workers = mpk_online_cpus() > MAX_WORKERS ? MAX_WORKERS : mpk_online_cpus();
  mpk_pool_opts o = {.workers = workers, .scratch_bytes = CHUNK, .keep_going = true, .progress = progress,
                     .progress_ctx = progress_ctx};
  for (size_t i = 0; i < n; i++) {
    o.total += jobs[i].expected_size;
    jobs[i].code = MPK_ECANCELLED; /* until a worker runs it */
    jobs[i].hex[0] = '\0';
  }
  run r = {.jobs = jobs, .root = root, .errs = calloc(n ? n : 1, sizeof *r.errs)};
  slot *slots = calloc(n ? n : 1, sizeof *slots);
  size_t *order = calloc(n ? n : 1, sizeof *order);
  if (!r.errs || !slots || !order) {
    free(r.errs);
    free(slots);
    free(order);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  for (size_t i = 0; i < n; i++) slots[i] = (slot){.size = jobs[i].expected_size, .job = i};
  mpk_sort(slots, n, sizeof *slots, cmp_larger_first);
  for (size_t i = 0; i < n; i++) order[i] = slots[i].job;
  o.order = order;
  int rc = mpk_pool_run(n, &o, task, &r, NULL, err);
  if (!rc) {
    for (size_t i = 0; i < n && err; i++) {
      if (jobs[i].code) {
        *err = r.errs[i];
        break;
      }
    }
  }
  free(r.errs);
  free(slots);
  free(order);
  return rc;
}
