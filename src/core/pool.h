/* The one worker pool (docs/ARCHITECTURE.md, "Threads"): every parallel loop in the library runs on
   it — digesting, the transaction's fsyncs, the merge kernel, the installer's downloads, audio.
   Tasks 0..n-1 are handed out in order (or in the caller's order) to up to `workers` threads from a
   shared counter; the caller's thread is one of them, so a run with one worker starts no thread and
   a failure to start threads only makes the run slower. */
#ifndef MPK_CORE_POOL_H
#define MPK_CORE_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modelpkg/core.h"

/* Workers of one run at most (a clamp, whatever the caller or the machine asks). */
#define MPK_POOL_MAX_WORKERS 64

/* A run in progress, as its tasks see it. */
typedef struct mpk_pool mpk_pool;

/* One task: 0, or a negative MPK_E* code with its details in *err (the worker's own mpk_error).
   `scratch` is this worker's buffer of mpk_pool_opts.scratch_bytes (NULL when 0). */
typedef int (*mpk_pool_task)(mpk_pool *pool, void *ctx, size_t task, void *scratch, mpk_error *err);

typedef struct mpk_pool_opts {
  unsigned workers;         /* 0: online CPUs. Clamped to MPK_POOL_MAX_WORKERS and to n. */
  size_t scratch_bytes;     /* each worker's scratch buffer, allocated once per worker (0: none) */
  const size_t *order;      /* NULL: tasks run in index order; else the k-th handed out is order[k] */
  bool keep_going;          /* a failed task does not stop the others from starting (each task's
                               result is the caller's to keep); the default stops handing out work */
  mpk_progress_fn progress; /* called (never concurrently) from mpk_pool_advance; non-zero cancels */
  void *progress_ctx;
  uint64_t total;           /* the `total` progress is called with */
} mpk_pool_opts;

/* Run fn(pool, ctx, i, scratch, err) for every task. Returns 0 when every task succeeded;
   MPK_ECANCELLED when the progress callback cancelled (err says so; that wins over failures);
   else the code of the lowest-numbered failed task, its details in *err and its index in *failed
   (either may be NULL) — the same answer whatever the timing, since tasks start in order.
   o NULL: the defaults. */
int mpk_pool_run(size_t n, const mpk_pool_opts *o, mpk_pool_task fn, void *ctx, size_t *failed, mpk_error *err);

/* From a task: `bytes` more are done; reports progress through the callback. Returns true when the
   run is stopping (cancelled, or a task failed and keep_going is off): the task should return. */
bool mpk_pool_advance(mpk_pool *pool, uint64_t bytes);
/* Whether the run is stopping (see mpk_pool_advance), without reporting anything. */
bool mpk_pool_stopping(mpk_pool *pool);
/* Stop the run from a task, as a cancelled progress callback would (the run returns MPK_ECANCELLED). */
void mpk_pool_cancel(mpk_pool *pool);
/* One lock per run, for state the tasks share in ctx (the progress callback runs under it too). */
void mpk_pool_lock(mpk_pool *pool);
void mpk_pool_unlock(mpk_pool *pool);

/* Online CPUs, at least 1, at most MPK_POOL_MAX_WORKERS. */
unsigned mpk_online_cpus(void);

#endif
