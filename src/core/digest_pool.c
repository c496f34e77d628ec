/* Hashing many files: streaming reads (one fixed buffer per worker, so memory does not grow with
   the package) on a bounded pool of threads that take the next file from a shared counter, the
   largest files first (by expected_size): one file goes to one worker, so a big file handed out
   last would run alone while the other workers idle (docs/PERFORMANCE.md, section 3). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "core/core.h"

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

typedef struct pool {
  mpk_digest_job *jobs;
  size_t n;
  slot *order; /* job indices in the order they are handed out */
  atomic_size_t next;
  atomic_bool cancelled;
  pthread_mutex_t lock; /* guards the progress sum and the callback */
  uint64_t done, total;
  mpk_progress_fn progress;
  void *progress_ctx;
  mpk_error *errs; /* one per job */
  const char *root; /* non-NULL: job paths are relative to it, opened beneath it (open.c) */
} pool;

static void report(pool *p, uint64_t bytes) {
  if (!p->progress) return;
  pthread_mutex_lock(&p->lock);
  p->done += bytes;
  if (!atomic_load(&p->cancelled) && p->progress(p->progress_ctx, p->done, p->total))
    atomic_store(&p->cancelled, true);
  pthread_mutex_unlock(&p->lock);
}

static int hash_one(pool *p, mpk_digest_job *job, uint8_t *buf, mpk_error *err) {
  int fd = -1;
  if (p->root) {
    int rc = mpk_open_read(p->root, job->path, 0, &fd, NULL, err);
    if (rc) return rc;
  } else if ((fd = open(job->path, O_RDONLY | O_CLOEXEC)) < 0) {
    return mpk_fail(err, errno == ENOENT ? MPK_ENOTFOUND : MPK_EIO, job->path, NULL, "cannot open: %s",
                    strerror(errno));
  }
#ifdef POSIX_FADV_SEQUENTIAL
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  const EVP_MD *md = job->algo == MPK_DIGEST_MD5 ? EVP_md5() : EVP_sha256();
  int rc = 0;
  if (!ctx || !EVP_DigestInit_ex(ctx, md, NULL)) {
    rc = mpk_fail(err, MPK_ENOMEM, job->path, NULL, "cannot start the digest");
    goto out;
  }
  job->size = 0;
  for (;;) {
    if (atomic_load(&p->cancelled)) {
      rc = mpk_fail(err, MPK_ECANCELLED, job->path, NULL, "cancelled");
      goto out;
    }
    ssize_t got = read(fd, buf, CHUNK);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      rc = mpk_fail(err, MPK_EIO, job->path, NULL, "read failed: %s", strerror(errno));
      goto out;
    }
    if (got == 0) break;
    EVP_DigestUpdate(ctx, buf, (size_t)got);
    job->size += (uint64_t)got;
    report(p, (uint64_t)got);
  }
  uint8_t d[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, d, &len);
  mpk_hex(d, len, job->hex);
out:
  EVP_MD_CTX_free(ctx);
  close(fd);
  return rc;
}

static void *worker(void *arg) {
  pool *p = arg;
  uint8_t *buf = malloc(CHUNK);
  for (;;) {
    size_t k = atomic_fetch_add(&p->next, 1);
    if (k >= p->n) break;
    size_t i = p->order[k].job;
    mpk_error_clear(&p->errs[i]);
    p->jobs[i].code = buf ? hash_one(p, &p->jobs[i], buf, &p->errs[i])
                          : mpk_fail(&p->errs[i], MPK_ENOMEM, p->jobs[i].path, NULL, "out of memory");
  }
  free(buf);
  return NULL;
}

static unsigned default_workers(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus < 1 ? 1 : cpus > MAX_WORKERS ? MAX_WORKERS : (unsigned)cpus;
}

int mpk_digest_files(mpk_digest_job *jobs, size_t n, unsigned workers, mpk_progress_fn progress,
                     void *progress_ctx, mpk_error *err) {
  return mpk_digest_files_beneath(NULL, jobs, n, workers, progress, progress_ctx, err);
}

int mpk_digest_files_beneath(const char *root, mpk_digest_job *jobs, size_t n, unsigned workers,
                             mpk_progress_fn progress, void *progress_ctx, mpk_error *err) {
  if (n && !jobs) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (!workers) workers = default_workers();
  if (workers > n) workers = n ? (unsigned)n : 1;
  pool p = {.jobs = jobs, .n = n, .progress = progress, .progress_ctx = progress_ctx, .root = root};
  atomic_init(&p.next, 0);
  atomic_init(&p.cancelled, false);
  for (size_t i = 0; i < n; i++) {
    p.total += jobs[i].expected_size;
    jobs[i].code = MPK_ECANCELLED; /* until a worker runs it */
    jobs[i].hex[0] = '\0';
  }
  p.errs = calloc(n ? n : 1, sizeof *p.errs);
  p.order = calloc(n ? n : 1, sizeof *p.order);
  pthread_t *threads = calloc(workers, sizeof *threads);
  if (!p.errs || !p.order || !threads) {
    free(p.errs);
    free(p.order);
    free(threads);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  for (size_t i = 0; i < n; i++) p.order[i] = (slot){.size = jobs[i].expected_size, .job = i};
  if (n > 1) qsort(p.order, n, sizeof *p.order, cmp_larger_first);
  pthread_mutex_init(&p.lock, NULL);
  unsigned started = 0;
  /* The calling thread is a worker too; extra threads only when there is more than one file. */
  for (unsigned t = 1; t < workers; t++)
    if (pthread_create(&threads[t], NULL, worker, &p) == 0) started = t;
    else break;
  worker(&p);
  for (unsigned t = 1; t <= started; t++) pthread_join(threads[t], NULL);
  pthread_mutex_destroy(&p.lock);
  int rc = atomic_load(&p.cancelled) ? MPK_ECANCELLED : 0;
  if (rc) {
    mpk_fail(err, MPK_ECANCELLED, NULL, NULL, "cancelled");
  } else {
    for (size_t i = 0; i < n && err; i++) {
      if (jobs[i].code) {
        *err = p.errs[i];
        break;
      }
    }
  }
  free(p.errs);
  free(p.order);
  free(threads);
  return rc;
}
