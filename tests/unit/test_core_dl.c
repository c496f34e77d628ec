/* core/dl.c, the one run-time loader: a present library and its symbols resolve once and are
   callable; a missing library, or a missing symbol, is MPK_EUNSUPPORTED naming the dependency and
   the soname, remembered (the same answer again, without a second attempt); threads racing on the
   first load all see it loaded. Also mpk_components() / mpk_has_component(), the build's facts. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "testutil.h"
#include "core/core.h"
#include "core/dl.h"

static void test_loads_and_calls(void **state) {
  (void)state;
  static const char *const names[] = {"cos", "sqrt", NULL};
  static void *slots[2];
  static mpk_dl m = MPK_DL_INIT("libm", "libm.so.6", names, slots);
  mpk_error err = {0};
  assert_int_equal(mpk_dl_load(&m, &err), 0);
  double (*sq)(double);
  memcpy(&sq, &slots[1], sizeof sq);
  assert_true(sq(81.0) == 9.0);
  assert_int_equal(mpk_dl_load(&m, &err), 0); /* the second call is the fast path */
}

static void test_missing_library(void **state) {
  (void)state;
  static const char *const names[] = {"nothing", NULL};
  static void *slots[1];
  static mpk_dl d = MPK_DL_INIT("libnothere", "libmpk-not-a-library.so.9", names, slots);
  mpk_error err = {0};
  assert_int_equal(mpk_dl_load(&d, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "libnothere is not available (libmpk-not-a-library.so.9)"));
  assert_int_equal(atomic_load(&d.state), -1);
  mpk_error again = {0};
  assert_int_equal(mpk_dl_load(&d, &again), MPK_EUNSUPPORTED);
  assert_string_equal(again.message, err.message);
}

static void test_missing_symbol(void **state) {
  (void)state;
  static const char *const names[] = {"cos", "mpk_no_such_symbol_anywhere", NULL};
  static void *slots[2];
  static mpk_dl d = MPK_DL_INIT("libm", "libm.so.6", names, slots);
  mpk_error err = {0};
  assert_int_equal(mpk_dl_load(&d, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "symbol mpk_no_such_symbol_anywhere not found"));
}

static const char *const race_names[] = {"sin", NULL};
static void *race_slots[1];
static mpk_dl race = MPK_DL_INIT("libm", "libm.so.6", race_names, race_slots);

static void *racer(void *arg) {
  (void)arg;
  mpk_error err = {0};
  return (void *)(intptr_t)mpk_dl_load(&race, &err);
}

static void test_threads_race(void **state) {
  (void)state;
  pthread_t t[8];
  for (int i = 0; i < 8; i++) assert_int_equal(pthread_create(&t[i], NULL, racer, NULL), 0);
  for (int i = 0; i < 8; i++) {
    void *rc;
    pthread_join(t[i], &rc);
    assert_int_equal((intptr_t)rc, 0);
  }
  assert_non_null(race_slots[0]);
}

static void test_components(void **state) {
  (void)state;
  const char *list = mpk_components();
  assert_non_null(list);
  assert_memory_equal(list, "core", 4);
  assert_int_equal(mpk_has_component("core"), 1);
  assert_int_equal(mpk_has_component(NULL), 0);
  assert_int_equal(mpk_has_component("nonesuch"), 0);
  /* every name in the list is reported built, and the list holds nothing else */
  static const char *const all[] = {"core", "mlc", "mt", "fetch", "audio", "image", "onnx"};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    size_t n = strlen(all[i]);
    int listed = 0;
    for (const char *p = list; (p = strstr(p, all[i])) != NULL; p += n)
      if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) listed = 1;
    assert_int_equal(mpk_has_component(all[i]), listed);
  }
  const char *h = mpk_hash_implementation();
  assert_non_null(h);
  assert_true(strcmp(h, "openssl") == 0 || strncmp(h, "builtin-", 8) == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loads_and_calls), cmocka_unit_test(test_missing_library),
      cmocka_unit_test(test_missing_symbol),  cmocka_unit_test(test_threads_race),
      cmocka_unit_test(test_components),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
