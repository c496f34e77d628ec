/* The one worker pool (pool.h): a shared next-task counter, the caller's thread working too, the
   lowest-numbered failure kept under a lock, cancellation through the progress callback. This file
   is the only place in the library that starts a thread for parallel work. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/core.h"
#include "core/pool.h"

struct mpk_pool {
  size_t n;
  const mpk_pool_opts *o;
  mpk_pool_task fn;
  void *ctx;
  atomic_size_t next;
  atomic_bool stop;      /* no new task starts */
  atomic_bool cancelled; /* the progress callback (or a task) cancelled */
  pthread_mutex_t lock;  /* guards below, the callback, and the tasks' shared state */
  uint64_t done;
  int rc;                /* the lowest-numbered failure so far */
  size_t failed;
  mpk_error err;
};

unsigned mpk_online_cpus(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus < 1 ? 1 : cpus > MPK_POOL_MAX_WORKERS ? MPK_POOL_MAX_WORKERS : (unsigned)cpus;
}

void mpk_pool_lock(mpk_pool *p) { pthread_mutex_lock(&p->lock); }
void mpk_pool_unlock(mpk_pool *p) { pthread_mutex_unlock(&p->lock); }

bool mpk_pool_stopping(mpk_pool *p) {
  return atomic_load(&p->cancelled) || (!p->o->keep_going && atomic_load(&p->stop));
}

void mpk_pool_cancel(mpk_pool *p) {
  atomic_store(&p->cancelled, true);
  atomic_store(&p->stop, true);
}

bool mpk_pool_advance(mpk_pool *p, uint64_t bytes) {
  if (p->o->progress) {
    pthread_mutex_lock(&p->lock);
    p->done += bytes;
    bool cancel = !atomic_load(&p->cancelled) && p->o->progress(p->o->progress_ctx, p->done, p->o->total);
    pthread_mutex_unlock(&p->lock);
    if (cancel) mpk_pool_cancel(p);
  }
  return mpk_pool_stopping(p);
}

static void *worker(void *arg) {
  mpk_pool *p = arg;
  void *scratch = NULL;
  mpk_error e;
  mpk_error_clear(&e);
  if (p->o->scratch_bytes && !(scratch = malloc(p->o->scratch_bytes))) {
    /* This worker cannot run tasks; the others (or, when alone, the failure below) carry on. */
    size_t k = atomic_fetch_add(&p->next, 1);
    if (k < p->n) {
      size_t i = p->o->order ? p->o->order[k] : k;
      mpk_fail(&e, MPK_ENOMEM, NULL, NULL, "out of memory for a worker's buffer (%zu bytes)", p->o->scratch_bytes);
      pthread_mutex_lock(&p->lock);
      if (!p->rc || i < p->failed) p->rc = MPK_ENOMEM, p->failed = i, p->err = e;
      pthread_mutex_unlock(&p->lock);
      atomic_store(&p->stop, true);
    }
    return NULL;
  }
  while (!mpk_pool_stopping(p)) {
    size_t k = atomic_fetch_add(&p->next, 1);
    if (k >= p->n) break;
    size_t i = p->o->order ? p->o->order[k] : k;
    mpk_error_clear(&e);
    int rc = p->fn(p, p->ctx, i, scratch, &e);
    if (rc) {
      pthread_mutex_lock(&p->lock);
      if (!p->rc || i < p->failed) p->rc = rc, p->failed = i, p->err = e;
      pthread_mutex_unlock(&p->lock);
      atomic_store(&p->stop, true);
    }
  }
  free(scratch);
  return NULL;
}

int mpk_pool_run(size_t n, const mpk_pool_opts *o, mpk_pool_task fn, void *ctx, size_t *failed, mpk_error *err) {
  static const mpk_pool_opts defaults = {0};
  if (!fn) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (!n) return 0;
  if (!o) o = &defaults;
  unsigned workers = o->workers ? o->workers : mpk_online_cpus();
  if (workers > MPK_POOL_MAX_WORKERS) workers = MPK_POOL_MAX_WORKERS;
  if (workers > n) workers = (unsigned)n;
  mpk_pool p = {.n = n, .o = o, .fn = fn, .ctx = ctx};
  atomic_init(&p.next, 0);
  atomic_init(&p.stop, false);
  atomic_init(&p.cancelled, false);
  pthread_mutex_init(&p.lock, NULL);
  pthread_t threads[MPK_POOL_MAX_WORKERS];
  unsigned started = 0;
  for (unsigned t = 1; t < workers; t++) {
    if (pthread_create(&threads[started], NULL, worker, &p) != 0) break; /* fewer threads, same result */
    started++;
  }
  worker(&p);
  for (unsigned t = 0; t < started; t++) pthread_join(threads[t], NULL);
  pthread_mutex_destroy(&p.lock);
  if (atomic_load(&p.cancelled)) return mpk_fail(err, MPK_ECANCELLED, NULL, NULL, "cancelled");
  if (p.rc) {
    if (err) *err = p.err;
    if (failed) *failed = p.failed;
  }
  return p.rc;
}
