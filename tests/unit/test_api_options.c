/* The options-struct rule (docs/API.md, "Options structs"): the library reads a field only when the
   caller's struct_size covers it; NULL means the defaults; struct_size 0 means the 0.1 layout; a size
   that is no layout is refused; a larger size (a caller built against a later header) is accepted
   only when the bytes this library does not know are zero. Proven on mpk_mt_manifest_options
   (max_files) and mpk_mt_select_options (quantization), whose fields change an observable result. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static uint8_t *manifest;
static size_t manifest_len;

static int setup(void **state) {
  (void)state;
  manifest = tu_read_file(MPK_SOURCE_DIR "/examples/mt-tiny/mobiletransformers_manifest.json", &manifest_len);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  free(manifest);
  return 0;
}

static int parse(const mpk_mt_manifest_options *o, mpk_error *err) {
  mpk_mt_manifest *m = NULL;
  int rc = mpk_mt_manifest_parse_opts(manifest, manifest_len, NULL, o, &m, err);
  if (rc == 0) assert_non_null(m);
  mpk_mt_manifest_free(m);
  return rc;
}

/* The INIT initializer sets struct_size and leaves every other field at its default. */
static void test_init_macros(void **state) {
  (void)state;
  mpk_image_options a = MPK_IMAGE_OPTIONS_INIT;
  mpk_mlc_fit_options b = MPK_MLC_FIT_OPTIONS_INIT;
  mpk_mlc_check_options c = MPK_MLC_CHECK_OPTIONS_INIT;
  mpk_mt_manifest_options d = MPK_MT_MANIFEST_OPTIONS_INIT;
  mpk_mt_check_options e = MPK_MT_CHECK_OPTIONS_INIT;
  mpk_mt_gate_options f = MPK_MT_GATE_OPTIONS_INIT;
  mpk_mt_plan_options g = MPK_MT_PLAN_OPTIONS_INIT;
  mpk_mt_select_options h = MPK_MT_SELECT_OPTIONS_INIT;
  mpk_mt_install_options i = MPK_MT_INSTALL_OPTIONS_INIT;
  mpk_mt_merge_options j = MPK_MT_MERGE_OPTIONS_INIT;
  mpk_mt_graph_options k = MPK_MT_GRAPH_OPTIONS_INIT;
  mpk_mt_handoff_build_options l = MPK_MT_HANDOFF_BUILD_OPTIONS_INIT;
  assert_int_equal(a.struct_size, sizeof a);
  assert_int_equal(a.max_pixels, 0);
  assert_int_equal(b.struct_size, sizeof b);
  assert_int_equal(c.struct_size, sizeof c);
  assert_int_equal(d.struct_size, sizeof d);
  assert_int_equal(d.max_files, 0);
  assert_int_equal(e.struct_size, sizeof e);
  assert_int_equal(f.struct_size, sizeof f);
  assert_int_equal(g.struct_size, sizeof g);
  assert_int_equal(h.struct_size, sizeof h);
  assert_null(h.quantization);
  assert_int_equal(i.struct_size, sizeof i);
  assert_int_equal(j.struct_size, sizeof j);
  assert_int_equal(k.struct_size, sizeof k);
  assert_int_equal(l.struct_size, sizeof l);
  /* struct_size is the first field of every options struct */
  assert_int_equal(offsetof(mpk_mt_select_options, struct_size), 0);
  assert_int_equal(offsetof(mpk_mt_install_options, struct_size), 0);
  assert_int_equal(offsetof(mpk_mt_graph_options, struct_size), 0);
}

static void test_struct_size_covers(void **state) {
  (void)state;
  mpk_error err;
  /* the budget honoured: the example lists more than one file */
  mpk_mt_manifest_options o = MPK_MT_MANIFEST_OPTIONS_INIT;
  o.max_files = 1;
  assert_int_equal(parse(&o, &err), MPK_ELIMIT);
  /* NULL: the defaults */
  assert_int_equal(parse(NULL, &err), 0);
  /* 0: the 0.1 layout, every field read (callers that zero-initialize and set fields) */
  o.struct_size = 0;
  assert_int_equal(parse(&o, &err), MPK_ELIMIT);
  /* A struct_size that stops before max_files: the field is not read, its default applies. */
  o.struct_size = offsetof(mpk_mt_manifest_options, max_files);
  assert_int_equal(parse(&o, &err), 0);
  /* Not the size of any layout: refused, naming the struct. */
  o.struct_size = 3;
  assert_int_equal(parse(&o, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "mpk_mt_manifest_options.struct_size 3"));
  o.struct_size = sizeof o + 1;
  assert_int_equal(parse(&o, &err), MPK_EINVAL);
}

/* A caller built against a later header: its struct is larger; the fields this library does not
   know are accepted only at their defaults (zero). */
static void test_struct_size_larger(void **state) {
  (void)state;
  mpk_error err;
  struct later {
    mpk_mt_manifest_options known;
    uint64_t added_later;
  } l;
  memset(&l, 0, sizeof l);
  l.known.struct_size = sizeof l;
  l.known.max_files = 1;
  assert_int_equal(parse(&l.known, &err), MPK_ELIMIT); /* known fields read */
  l.known.max_files = 0;
  assert_int_equal(parse(&l.known, &err), 0);
  l.added_later = 7;
  assert_int_equal(parse(&l.known, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "mpk_mt_manifest_options"));
}

/* A second struct, with pointers: a quantization filter past the struct_size is ignored. */
static void test_select_struct_size(void **state) {
  (void)state;
  mpk_error err;
  mpk_mt_manifest *m = NULL;
  assert_int_equal(mpk_mt_manifest_parse(manifest, manifest_len, NULL, &m, &err), 0);
  mpk_mt_select_options o = MPK_MT_SELECT_OPTIONS_INIT;
  o.quantization = "no-such-quantization";
  mpk_mt_selection *s = NULL;
  assert_int_equal(mpk_mt_select(m, &o, &s, &err), MPK_ENOVARIANT);
  mpk_mt_selection_free(s);
  s = NULL;
  o.struct_size = offsetof(mpk_mt_select_options, quantization);
  assert_int_equal(mpk_mt_select(m, &o, &s, &err), 0);
  assert_non_null(s->chosen);
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_macros),
      cmocka_unit_test(test_struct_size_covers),
      cmocka_unit_test(test_struct_size_larger),
      cmocka_unit_test(test_select_struct_size),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
