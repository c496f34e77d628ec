/* A parallel for-loop: tasks 0..n-1 handed out in order to up to `workers` threads, the caller's
   thread being one of them. Small and dependency-free so that any module can split independent
   work without its own pool. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "core/core.h"

#define MAX_WORKERS 64

typedef struct par {
  size_t n;
  mpk_task_fn fn;
  void *ctx;
  atomic_size_t next;
  atomic_bool failed;
  int *codes; /* per task; 0 until it ran and succeeded */
} par;

static void *run(void *arg) {
  par *p = arg;
  for (;;) {
    if (atomic_load(&p->failed)) break; /* stop handing out work after a failure */
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->n) break;
    int rc = p->fn(p->ctx, i);
    p->codes[i] = rc;
    if (rc) atomic_store(&p->failed, true);
  }
  return NULL;
}

unsigned mpk_online_cpus(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus < 1 ? 1 : cpus > MAX_WORKERS ? MAX_WORKERS : (unsigned)cpus;
}

int mpk_parallel_for(size_t n, unsigned workers, mpk_task_fn fn, void *ctx, size_t *failed_task) {
  if (!workers) workers = mpk_online_cpus();
  if (workers > MAX_WORKERS) workers = MAX_WORKERS;
  if (workers > n) workers = n ? (unsigned)n : 1;
  int codes_stack[64];
  int *codes = n <= 64 ? codes_stack : calloc(n, sizeof *codes);
  if (!codes) workers = 1; /* no room to record results per task: run them in order, here */
  par p = {.n = n, .fn = fn, .ctx = ctx, .codes = codes};
  atomic_init(&p.next, 0);
  atomic_init(&p.failed, false);
  if (!codes) {
    for (size_t i = 0; i < n; i++) {
      int rc = fn(ctx, i);
      if (rc) {
        if (failed_task) *failed_task = i;
        return rc;
      }
    }
    return 0;
  }
  for (size_t i = 0; i < n; i++) codes[i] = 0;
  pthread_t threads[MAX_WORKERS];
  unsigned started = 0;
  for (unsigned t = 1; t < workers; t++) {
    if (pthread_create(&threads[started], NULL, run, &p) != 0) break; /* fewer threads, same result */
    started++;
  }
  run(&p);
  for (unsigned t = 0; t < started; t++) pthread_join(threads[t], NULL);
  int rc = 0;
  for (size_t i = 0; i < n; i++) /* the lowest failed task: the same answer whatever the timing */
    if (codes[i]) {
      rc = codes[i];
      if (failed_task) *failed_task = i;
      break;
    }
  if (codes != codes_stack) free(codes);
  return rc;
}
