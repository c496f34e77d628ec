/* PROBE.json (src/mt/numeric/probe.c, docs/mt-numeric.md "The probe"): the format the post-merge
   check reads. A valid probe gives its sequences in order; every bad one is refused naming the
   file, the JSON pointer and the rule; the limits hold at their edges; a FIFO is refused at once. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "mt/numeric/probe.h"

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_valid(void **state) {
  (void)state;
  const char *doc = "{\"sequences\": [[1, 2, 3], [0, 2147483647], [7, 7, 7, 7]]}";
  mpk_mtn_probe *p = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  assert_int_equal(mpk_mtn_probe_parse(doc, strlen(doc), "probe.json", &p, &err), 0);
  assert_non_null(p);
  assert_int_equal(p->tokens.n, 3);
  assert_int_equal(p->tokens.len[0], 3);
  assert_int_equal(p->tokens.len[1], 2);
  assert_int_equal(p->tokens.len[2], 4);
  assert_int_equal(p->tokens.seq[0][0], 1);
  assert_int_equal(p->tokens.seq[0][2], 3);
  assert_int_equal(p->tokens.seq[1][1], 2147483647);
  assert_int_equal(p->tokens.seq[2][3], 7);
  mpk_mtn_probe_free(p);
  /* an integral real is an integer (JSON has one number type) */
  const char *real = "{\"sequences\": [[1.0, 2e0]]}";
  assert_int_equal(mpk_mtn_probe_parse(real, strlen(real), "probe.json", &p, &err), 0);
  assert_int_equal(p->tokens.seq[0][1], 2);
  mpk_mtn_probe_free(p);
  mpk_mtn_probe_free(NULL);
}

typedef struct bad_case {
  const char *doc;
  int code;
  const char *pointer;
  const char *words; /* in the message */
} bad_case;

static void test_refused(void **state) {
  (void)state;
  static const bad_case cases[] = {
      {"", MPK_EMALFORMED, NULL, "invalid JSON"},
      {"[[1,2]]", MPK_EMALFORMED, "", "is an object"},
      {"{}", MPK_EMALFORMED, "", "missing \"sequences\""},
      {"{\"sequences\": [[1,2]], \"seed\": 3}", MPK_EMALFORMED, "/seed", "unknown key \"seed\""},
      {"{\"sequences\": [[1,2]], \"sequences\": [[1,2]]}", MPK_EMALFORMED, NULL, "duplicate"},
      {"{\"sequences\": []}", MPK_EMALFORMED, "/sequences", "non-empty array"},
      {"{\"sequences\": {\"a\": 1}}", MPK_EMALFORMED, "/sequences", "non-empty array"},
      {"{\"sequences\": [[1,2], 3]}", MPK_EMALFORMED, "/sequences/1", "array of token ids"},
      {"{\"sequences\": [[1,2], [5]]}", MPK_EMALFORMED, "/sequences/1", "at least 2"},
      {"{\"sequences\": [[]]}", MPK_EMALFORMED, "/sequences/0", "at least 2"},
      {"{\"sequences\": [[1,-1]]}", MPK_EMALFORMED, "/sequences/0/1", "integer from 0 to 2147483647"},
      {"{\"sequences\": [[1,2147483648]]}", MPK_EMALFORMED, "/sequences/0/1", "integer from 0"},
      {"{\"sequences\": [[1,2], [3, 1.5]]}", MPK_EMALFORMED, "/sequences/1/1", "integer from 0"},
      {"{\"sequences\": [[1,\"2\"]]}", MPK_EMALFORMED, "/sequences/0/1", "token id"},
      {"{\"sequences\": [[1,null]]}", MPK_EMALFORMED, "/sequences/0/1", "token id"},
      {"{\"sequences\": [[1,true]]}", MPK_EMALFORMED, "/sequences/0/1", "token id"},
      {"{\"sequences\": [[1,[2]]]}", MPK_EMALFORMED, "/sequences/0/1", "token id"},
      {"{\"sequences\": [[1,2]]} x", MPK_EMALFORMED, NULL, "invalid JSON"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const bad_case *c = &cases[i];
    mpk_mtn_probe *p = (mpk_mtn_probe *)1;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_mtn_probe_parse(c->doc, strlen(c->doc), "bad-probe.json", &p, &err);
    if (rc != c->code || p != NULL || strcmp(err.file, "bad-probe.json") != 0 ||
        (c->pointer && strcmp(err.pointer, c->pointer) != 0) || !strstr(err.message, c->words)) {
      print_error("case %zu %s: rc %d, file '%s', pointer '%s', message '%s'\n", i, c->doc, rc, err.file, err.pointer,
                  err.message);
      fail();
    }
  }
}

/* A document of `n` sequences of `len` ids each. */
static char *make_doc(size_t n, size_t len) {
  size_t cap = 32 + n * (len * 3 + 4);
  char *s = malloc(cap), *w = s;
  assert_non_null(s);
  w += sprintf(w, "{\"sequences\":[");
  for (size_t i = 0; i < n; i++) {
    *w++ = i ? ',' : '[';
    if (i) *w++ = '[';
    for (size_t k = 0; k < len; k++) w += sprintf(w, k ? ",%d" : "%d", (int)(k % 10));
    *w++ = ']';
  }
  w += sprintf(w, "]}");
  return s;
}

static void expect_limit(size_t n, size_t len, int ok, const char *pointer) {
  char *doc = make_doc(n, len);
  mpk_mtn_probe *p = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mtn_probe_parse(doc, strlen(doc), "p.json", &p, &err);
  free(doc);
  if (ok) {
    if (rc) print_error("%zu x %zu: %s\n", n, len, err.message);
    assert_int_equal(rc, 0);
    assert_int_equal(p->tokens.n, n);
    assert_int_equal(p->tokens.len[n - 1], len);
    mpk_mtn_probe_free(p);
  } else {
    if (rc != MPK_ELIMIT) print_error("%zu x %zu: rc %d %s\n", n, len, rc, err.message);
    assert_int_equal(rc, MPK_ELIMIT);
    assert_null(p);
    assert_string_equal(err.pointer, pointer);
  }
}

static void test_limits(void **state) {
  (void)state;
  expect_limit(MPK_MTN_PROBE_MAX_SEQUENCES, 2, 1, NULL);
  expect_limit(MPK_MTN_PROBE_MAX_SEQUENCES + 1, 2, 0, "/sequences");
  expect_limit(1, MPK_MTN_PROBE_MAX_LENGTH, 1, NULL);
  expect_limit(1, MPK_MTN_PROBE_MAX_LENGTH + 1, 0, "/sequences/0");
  /* MAX_TOKENS in all: 8 sequences of MAX_LENGTH is exactly it; a 9th goes past it */
  expect_limit(MPK_MTN_PROBE_MAX_TOKENS / MPK_MTN_PROBE_MAX_LENGTH, MPK_MTN_PROBE_MAX_LENGTH, 1, NULL);
  char ptr[32];
  snprintf(ptr, sizeof ptr, "/sequences/%d", MPK_MTN_PROBE_MAX_TOKENS / MPK_MTN_PROBE_MAX_LENGTH);
  expect_limit(MPK_MTN_PROBE_MAX_TOKENS / MPK_MTN_PROBE_MAX_LENGTH + 1, MPK_MTN_PROBE_MAX_LENGTH, 0, ptr);
}

static void test_files(void **state) {
  (void)state;
  char dir[256], path[400];
  snprintf(dir, sizeof dir, "%s", tu_tmpdir());
  snprintf(path, sizeof path, "%s/probe.json", dir);
  mpk_mtn_probe *p = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  write_file(path, "{\"sequences\": [[4, 5]]}\n");
  assert_int_equal(mpk_mtn_probe_load(path, &p, &err), 0);
  assert_int_equal(p->tokens.seq[0][1], 5);
  mpk_mtn_probe_free(p);
  /* a bad file names itself */
  write_file(path, "{\"sequences\": [[4]]}\n");
  assert_int_equal(mpk_mtn_probe_load(path, &p, &err), MPK_EMALFORMED);
  assert_null(p);
  assert_string_equal(err.file, path);
  assert_string_equal(err.pointer, "/sequences/0");
  /* missing */
  snprintf(path, sizeof path, "%s/absent.json", dir);
  assert_int_equal(mpk_mtn_probe_load(path, &p, &err), MPK_ENOTFOUND);
  /* a FIFO without a writer: refused at once, never waited on */
  snprintf(path, sizeof path, "%s/fifo.json", dir);
  assert_int_equal(mkfifo(path, 0600), 0);
  int rc = mpk_mtn_probe_load(path, &p, &err);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(err.message, "FIFO"));
  /* larger than the file limit: refused before parsing */
  snprintf(path, sizeof path, "%s/big.json", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(ftruncate(fileno(f), (off_t)MPK_MTN_PROBE_MAX_BYTES + 1), 0);
  fclose(f);
  assert_int_equal(mpk_mtn_probe_load(path, &p, &err), MPK_ELIMIT);
  /* NULL arguments */
  assert_int_equal(mpk_mtn_probe_load(NULL, &p, &err), MPK_EINVAL);
  assert_int_equal(mpk_mtn_probe_load(path, NULL, &err), MPK_EINVAL);
  tu_sh("rm -rf '%s'", dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
