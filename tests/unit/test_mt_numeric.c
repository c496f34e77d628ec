/* mt/numeric without ONNX Runtime: the parity gate's random tokens (splitmix64, docs/mt-numeric.md)
   pinned by vectors computed independently (Python integers mod 2^64; the first raw output for seed
   0 is Vigna's published 0xe220a8397b1dcdaf), and the cross-entropy's argument rules. */
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "mt/numeric/numeric.h"

static void expect_ids(uint64_t seed, int64_t vocab, const int64_t *want, size_t n) {
  int64_t got[16];
  memset(got, 0xff, sizeof got);
  mpk_mtn_random_tokens(seed, vocab, got, n);
  for (size_t i = 0; i < n; i++) {
    if (got[i] != want[i]) fail_msg("seed %llu vocab %lld: id %zu is %lld, want %lld", (unsigned long long)seed,
                                    (long long)vocab, i, (long long)got[i], (long long)want[i]);
  }
}

static void test_random_tokens_vectors(void **state) {
  (void)state;
  /* vocab 2^63 - 1: the raw outputs, nearly (z mod (2^63 - 1)). */
  static const int64_t raw[] = {7070836379803831728LL, 7960286522194355700LL, 487617019471545679LL};
  expect_ids(0, INT64_MAX, raw, 3);
  static const int64_t v64[] = {47, 52, 15, 44, 27, 42, 33, 60};
  expect_ids(0, 64, v64, 8);
  static const int64_t gpt2[] = {28780, 18232, 4911, 13232, 20808, 42797, 20763, 34928};
  expect_ids(1234567, 50257, gpt2, 8);
  static const int64_t wrap[] = {0, 1, 0, 6, 1, 5, 3, 4}; /* the state wraps around 2^64 */
  expect_ids(UINT64_MAX, 7, wrap, 8);
}

static void test_random_tokens_prefix_and_range(void **state) {
  (void)state;
  /* A longer draw extends a shorter one (the same sequence, not a re-seeded one). */
  int64_t a[1000], b[10];
  mpk_mtn_random_tokens(99, 256, a, 1000);
  mpk_mtn_random_tokens(99, 256, b, 10);
  assert_memory_equal(a, b, sizeof b);
  size_t seen[256] = {0};
  for (size_t i = 0; i < 1000; i++) {
    assert_true(a[i] >= 0 && a[i] < 256);
    seen[a[i]]++;
  }
  size_t distinct = 0;
  for (size_t i = 0; i < 256; i++) distinct += seen[i] != 0;
  assert_true(distinct > 200); /* 1000 draws over 256 ids: ~250 distinct expected */
}

static void test_cross_entropy_arguments(void **state) {
  (void)state;
  mpk_error err;
  double ce = 1;
  int64_t vocab = 1;
  mpk_mtn_tokens t = {0};
  assert_int_equal(mpk_mtn_cross_entropy(NULL, &t, &ce, &vocab, &err), MPK_EINVAL);
  mpk_ort_session *s = NULL;
  assert_int_equal(mpk_mtn_open_inference(NULL, "x", NULL, 0, &s, &err), MPK_EINVAL);
  assert_null(s);
  mpk_mtn_views v;
  assert_int_equal(mpk_mtn_gate_views(NULL, NULL, &v, &err), MPK_EINVAL);
  assert_int_equal(v.n, 0);
  mpk_mtn_views_close(&v);
  mpk_mtn_views_close(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_tokens_vectors),
      cmocka_unit_test(test_random_tokens_prefix_and_range),
      cmocka_unit_test(test_cross_entropy_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
