/* core/parallel.c: every task runs once, on several threads; a failure stops new tasks and the
   lowest failed task's code is returned. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "testutil.h"
#include "core/core.h"

typedef struct counts {
  atomic_int ran[1000];
  atomic_int threads_seen;
  pthread_t first;
  int fail_from; /* tasks >= this fail (with -(task)); -1: none */
} counts;

static int task(void *vctx, size_t i) {
  counts *c = vctx;
  atomic_fetch_add(&c->ran[i], 1);
  if (!pthread_equal(pthread_self(), c->first)) atomic_store(&c->threads_seen, 1);
  for (volatile int spin = 0; spin < 20000; spin++) {
  }
  return c->fail_from >= 0 && (int)i >= c->fail_from ? -(int)(i % 7) - 1 : 0;
}

static void test_all_run_once(void **state) {
  (void)state;
  static counts c;
  memset(&c, 0, sizeof c);
  c.first = pthread_self();
  c.fail_from = -1;
  size_t failed = 12345;
  assert_int_equal(mpk_parallel_for(1000, 2, task, &c, &failed), 0);
  assert_int_equal(failed, 12345); /* untouched on success */
  for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&c.ran[i]), 1);
  if (mpk_online_cpus() > 1) assert_int_equal(atomic_load(&c.threads_seen), 1);
}

static void test_lowest_failure(void **state) {
  (void)state;
  static counts c;
  memset(&c, 0, sizeof c);
  c.first = pthread_self();
  c.fail_from = 300;
  size_t failed = 0;
  int rc = mpk_parallel_for(1000, 2, task, &c, &failed);
  assert_int_equal(failed, 300);
  assert_int_equal(rc, -(300 % 7) - 1);
  for (int i = 0; i < 300; i++) assert_int_equal(atomic_load(&c.ran[i]), 1); /* all before it ran */
  int after = 0;
  for (int i = 301; i < 1000; i++) after += atomic_load(&c.ran[i]);
  assert_true(after < 699); /* no new task starts after the failure (a few were already running) */
  /* One worker: strictly in order, stops right at the failure. */
  memset(&c, 0, sizeof c);
  c.first = pthread_self();
  c.fail_from = 5;
  assert_int_equal(mpk_parallel_for(1000, 1, task, &c, &failed), -6);
  assert_int_equal(failed, 5);
  assert_int_equal(atomic_load(&c.ran[6]), 0);
  assert_int_equal(atomic_load(&c.threads_seen), 0);
  assert_int_equal(mpk_parallel_for(0, 0, task, &c, &failed), 0); /* nothing to do */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_run_once),
      cmocka_unit_test(test_lowest_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
