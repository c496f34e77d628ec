/* core/findings.c: a report's public view follows its findings after every addition, and a problem
   a library function files under a logical document name is kept under the real file. */
#include <string.h>

#include "testutil.h"
#include "core/core.h"

typedef struct view {
  const mpk_error *problems;
  size_t n_problems;
  const char *const *notes;
  size_t n_notes;
} view;

static void test_publish(void **state) {
  (void)state;
  mpk_findings f = {0};
  view r = {0};
  MPK_FINDINGS_PUBLISH(&f, &r);
  for (int i = 0; i < 20; i++) { /* past the first growth, so the array moves */
    mpk_findings_fail(&f, MPK_EMISMATCH, "a.json", "/x", "problem %d", i);
    assert_int_equal(r.n_problems, i + 1);
    assert_ptr_equal(r.problems, f.problems);
    assert_string_equal(r.problems[i].file, "a.json");
  }
  mpk_findings_note(&f, "note %d", 1);
  assert_int_equal(r.n_notes, 1);
  assert_string_equal(r.notes[0], "note 1");
  mpk_findings_free(&f);
}

static void test_problem_in(void **state) {
  (void)state;
  mpk_findings f = {0};
  view r = {0};
  MPK_FINDINGS_PUBLISH(&f, &r);
  const mpk_findings_doc docs[] = {{"doc.json", "pkg/doc.json", ""},
                                   {"_metadata.artifact", "lib.wasm", "/artifact"},
                                   {"", "lib.wasm", ""},
                                   {"absent", NULL, "/never"},
                                   {NULL, NULL, NULL}};
  mpk_error e;
  mpk_fail(&e, MPK_EMISMATCH, "_metadata.artifact", "/programs/0", "x");
  mpk_findings_problem_in(&f, &e, docs);
  mpk_fail(&e, MPK_EMISMATCH, "doc.json", "/a", "x");
  mpk_findings_problem_in(&f, &e, docs);
  mpk_fail(&e, MPK_EMISMATCH, NULL, "/b", "x");
  mpk_findings_problem_in(&f, &e, docs);
  mpk_fail(&e, MPK_EMISMATCH, "absent", "/c", "x"); /* a document with no file yet: as it is */
  mpk_findings_problem_in(&f, &e, docs);
  mpk_fail(&e, MPK_EMISMATCH, "other.json", "/d", "x");
  mpk_findings_problem_in(&f, &e, NULL);
  assert_int_equal(r.n_problems, 5);
  assert_string_equal(r.problems[0].file, "lib.wasm");
  assert_string_equal(r.problems[0].pointer, "/artifact/programs/0");
  assert_string_equal(r.problems[1].file, "pkg/doc.json");
  assert_string_equal(r.problems[1].pointer, "/a");
  assert_string_equal(r.problems[2].file, "lib.wasm");
  assert_string_equal(r.problems[2].pointer, "/b");
  assert_string_equal(r.problems[3].file, "absent");
  assert_string_equal(r.problems[3].pointer, "/c");
  assert_string_equal(r.problems[4].file, "other.json");
  mpk_findings_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_publish), cmocka_unit_test(test_problem_in)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
