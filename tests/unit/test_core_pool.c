/* core/pool.c, the one worker pool: every task runs once, on several threads (the caller's among
   them); a failure stops new tasks and the lowest-numbered failure wins with its details;
   keep_going runs them all; a caller's order; per-worker scratch; progress, and cancelling it. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "core/core.h"
#include "core/pool.h"

typedef struct counts {
  atomic_int ran[1000];
  atomic_int threads_seen;
  atomic_size_t seq; /* order in which tasks started */
  size_t started_as[1000];
  pthread_t first;
  int fail_from; /* tasks >= this fail (with -(task % 7) - 1); -1: none */
  bool await_other; /* the caller's first task waits (10 s at most) for another thread's */
} counts;

static int task(mpk_pool *pool, void *vctx, size_t i, void *scratch, mpk_error *err) {
  (void)scratch;
  counts *c = vctx;
  c->started_as[i] = atomic_fetch_add(&c->seq, 1);
  atomic_fetch_add(&c->ran[i], 1);
  if (!pthread_equal(pthread_self(), c->first)) atomic_store(&c->threads_seen, 1);
  /* On a loaded machine the caller could run all tasks before a worker is scheduled: holding the
     caller back is what shows that another thread takes tasks, whatever the load. */
  if (pthread_equal(pthread_self(), c->first) && c->await_other) { /* the caller alone reads it */
    for (int ms = 0; ms < 10000 && !atomic_load(&c->threads_seen); ms++)
      nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    c->await_other = false; /* once: if no worker came, the assertion says so, 10 s later */
  }
  for (volatile int spin = 0; spin < 20000; spin++) {
  }
  mpk_pool_advance(pool, 1);
  if (c->fail_from >= 0 && (int)i >= c->fail_from)
    return mpk_fail(err, -(int)(i % 7) - 1, "task", NULL, "task %zu failed", i);
  return 0;
}

static counts *fresh(int fail_from) {
  static counts c;
  memset(&c, 0, sizeof c);
  c.first = pthread_self();
  c.fail_from = fail_from;
  return &c;
}

static void test_all_run_once(void **state) {
  (void)state;
  counts *c = fresh(-1);
  c->await_other = mpk_online_cpus() > 1;
  size_t failed = 12345;
  mpk_error err;
  assert_int_equal(mpk_pool_run(1000, &(mpk_pool_opts){.workers = 2}, task, c, &failed, &err), 0);
  assert_int_equal(failed, 12345); /* untouched on success */
  for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&c->ran[i]), 1);
  if (mpk_online_cpus() > 1) assert_int_equal(atomic_load(&c->threads_seen), 1);
  assert_int_equal(mpk_pool_run(0, NULL, task, c, &failed, &err), 0); /* nothing to do */
  assert_int_equal(mpk_pool_run(1, NULL, NULL, c, &failed, &err), MPK_EINVAL);
}

static void test_lowest_failure(void **state) {
  (void)state;
  counts *c = fresh(300);
  size_t failed = 0;
  mpk_error err;
  int rc = mpk_pool_run(1000, &(mpk_pool_opts){.workers = 2}, task, c, &failed, &err);
  assert_int_equal(failed, 300);
  assert_int_equal(rc, -(300 % 7) - 1);
  assert_string_equal(err.message, "task 300 failed"); /* the lowest failure's own details */
  for (int i = 0; i < 300; i++) assert_int_equal(atomic_load(&c->ran[i]), 1); /* all before it ran */
  int after = 0;
  for (int i = 301; i < 1000; i++) after += atomic_load(&c->ran[i]);
  assert_true(after < 699); /* no new task starts after the failure (a few were already running) */
  /* One worker: strictly in order, on the caller's thread, stops right at the failure. */
  c = fresh(5);
  assert_int_equal(mpk_pool_run(1000, &(mpk_pool_opts){.workers = 1}, task, c, &failed, &err), -6);
  assert_int_equal(failed, 5);
  assert_int_equal(atomic_load(&c->ran[6]), 0);
  assert_int_equal(atomic_load(&c->threads_seen), 0);
}

static void test_keep_going_and_order(void **state) {
  (void)state;
  counts *c = fresh(500);
  size_t failed = 0, order[1000];
  for (size_t k = 0; k < 1000; k++) order[k] = 999 - k;
  mpk_error err;
  int rc = mpk_pool_run(1000, &(mpk_pool_opts){.workers = 1, .keep_going = true, .order = order}, task, c, &failed, &err);
  for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&c->ran[i]), 1); /* every task ran */
  assert_int_equal(failed, 500); /* the lowest-numbered failure, though it ran last of the failures */
  assert_int_equal(rc, -(500 % 7) - 1);
  assert_true(c->started_as[999] == 0 && c->started_as[0] == 999); /* the caller's order */
}

typedef struct prog {
  atomic_int calls;
  uint64_t last_done, total;
  uint64_t cancel_at; /* 0: never */
  int concurrent, in_call;
} prog;

static int on_progress(void *ctx, uint64_t done, uint64_t total) {
  prog *p = ctx;
  if (p->in_call++) p->concurrent = 1; /* never called concurrently */
  atomic_fetch_add(&p->calls, 1);
  if (done <= p->last_done) p->concurrent = 1; /* done grows */
  p->last_done = done, p->total = total;
  int cancel = p->cancel_at && done >= p->cancel_at;
  p->in_call--;
  return cancel;
}

static void test_progress_and_cancel(void **state) {
  (void)state;
  counts *c = fresh(-1);
  prog p = {0};
  mpk_error err;
  mpk_pool_opts o = {.workers = 2, .progress = on_progress, .progress_ctx = &p, .total = 1000};
  assert_int_equal(mpk_pool_run(1000, &o, task, c, NULL, &err), 0);
  assert_int_equal(atomic_load(&p.calls), 1000);
  assert_int_equal(p.last_done, 1000);
  assert_int_equal(p.total, 1000);
  assert_int_equal(p.concurrent, 0);
  c = fresh(-1);
  memset(&p, 0, sizeof p);
  p.cancel_at = 100;
  assert_int_equal(mpk_pool_run(1000, &o, task, c, NULL, &err), MPK_ECANCELLED);
  assert_string_equal(err.message, "cancelled");
  int ran = 0;
  for (int i = 0; i < 1000; i++) ran += atomic_load(&c->ran[i]);
  assert_true(ran >= 100 && ran < 1000); /* no new task after the cancel */
}

static int scratch_task(mpk_pool *pool, void *ctx, size_t i, void *scratch, mpk_error *err) {
  (void)pool, (void)ctx, (void)err;
  unsigned char *b = scratch;
  if (!b) return MPK_EIO;
  for (int k = 0; k < 4096; k++) b[k] = (unsigned char)i; /* its own buffer: ASan would see a race's overflow */
  return 0;
}

static void test_scratch(void **state) {
  (void)state;
  mpk_error err;
  assert_int_equal(mpk_pool_run(64, &(mpk_pool_opts){.workers = 2, .scratch_bytes = 4096}, scratch_task, NULL, NULL, &err), 0);
  size_t failed = 99;
  assert_int_equal(mpk_pool_run(3, &(mpk_pool_opts){.workers = 2}, scratch_task, NULL, &failed, &err), MPK_EIO);
  assert_int_equal(failed, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_run_once),         cmocka_unit_test(test_lowest_failure),
      cmocka_unit_test(test_keep_going_and_order), cmocka_unit_test(test_progress_and_cancel),
      cmocka_unit_test(test_scratch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
