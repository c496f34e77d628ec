/* The ONNX Runtime binding (docs/ort.md) against the real library (npm onnxruntime-node 1.30.0's
   libonnxruntime.so.1, named by $MPK_ORT_LIBRARY): loading and its refusals, sessions over files and
   over caller-supplied initializers, the language model's cross-entropy against numpy's value
   (tests/tools/make_ort_graphs.py) and against onnxruntime-node's (tests/tools/ort_lm_ce.js).
   Skipped (77) without the library or without /usr/bin/python3 + numpy + onnx; the node comparison
   is skipped alone (a printed note, and its own assertion not run) only when node is absent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "modelpkg/ort.h"

static char dir[512];
static const char *lib;
static double expected_ce;
static int64_t tokens[64];
static size_t n_tokens;
static float E[11 * 4], W[4 * 11];

static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

static int read_floats(const char *name, float *dst, size_t n) {
  char p[700];
  path_of(p, sizeof p, name);
  size_t len = 0;
  uint8_t *b = tu_read_file(p, &len);
  if (!b || len != n * sizeof(float)) return -1;
  memcpy(dst, b, len);
  free(b);
  return 0;
}

static int setup(void **state) {
  (void)state;
  lib = getenv(MPK_ORT_LIBRARY_ENV);
  if (!lib || !*lib || access(lib, R_OK) != 0) {
    printf("SKIP: test_ort: ONNX Runtime (libonnxruntime.so.1 from npm onnxruntime-node: scripts/deps_node.sh) not found%s%s\n",
           lib ? " at " : "", lib ? lib : "");
    exit(77);
  }
  mpk_test_need_python_module("numpy");
  mpk_test_need_python_module("onnx");
  snprintf(dir, sizeof dir, "%s", tu_tmpdir());
  tu_sh("/usr/bin/python3 '%s/tests/tools/make_ort_graphs.py' '%s' >/dev/null", MPK_SOURCE_DIR, dir);
  char p[700];
  path_of(p, sizeof p, "expected.json");
  json_t *ex = tu_load_json(p);
  expected_ce = json_real_value(json_object_get(ex, "lm"));
  json_decref(ex);
  path_of(p, sizeof p, "tokens.json");
  json_t *tk = tu_load_json(p);
  n_tokens = json_array_size(tk);
  for (size_t i = 0; i < n_tokens; i++) tokens[i] = json_integer_value(json_array_get(tk, i));
  json_decref(tk);
  if (read_floats("E.bin", E, 44) || read_floats("W.bin", W, 44)) return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tu_sh("rm -rf '%s'", dir);
  return 0;
}

static mpk_ort *open_ort(void) {
  mpk_ort *o = NULL;
  mpk_error err = {0};
  mpk_ort_options opts = MPK_ORT_OPTIONS_INIT;
  opts.library = lib;
  opts.threads = 1;
  int rc = mpk_ort_open(&opts, &o, &err);
  if (rc) fprintf(stderr, "mpk_ort_open: %s\n", tu_err(&err));
  assert_int_equal(rc, 0);
  return o;
}

static void test_open_version(void **state) {
  (void)state;
  mpk_ort *o = open_ort();
  assert_string_equal(mpk_ort_version(o), "1.30.0");
  const char *where = mpk_ort_library(o);
  assert_non_null(where);
  assert_non_null(strstr(where, "libonnxruntime.so"));
  mpk_ort_close(o);
  /* From the environment when no option names a library. */
  mpk_ort *o2 = NULL;
  mpk_error err = {0};
  assert_int_equal(mpk_ort_open(NULL, &o2, &err), 0);
  assert_string_equal(mpk_ort_version(o2), "1.30.0");
  mpk_ort_close(o2);
  mpk_ort_close(NULL);
  assert_null(mpk_ort_version(NULL));
  assert_int_equal(mpk_ort_open(NULL, NULL, &err), MPK_EINVAL);
}

static void expect_unavailable(const char *path, const char *needle) {
  mpk_ort *o = (mpk_ort *)1;
  mpk_error err = {0};
  mpk_ort_options opts = MPK_ORT_OPTIONS_INIT;
  opts.library = path;
  assert_int_equal(mpk_ort_open(&opts, &o, &err), MPK_EUNSUPPORTED);
  assert_null(o);
  const char *m = tu_err(&err);
  if (!strstr(m, "ONNX Runtime not available: ") || !strstr(m, path) || !strstr(m, needle) || !strstr(m, "scripts/deps_node.sh"))
    fail_msg("unexpected message for %s: %s", path, m);
}

static void test_library_missing(void **state) {
  (void)state;
  char p[700];
  path_of(p, sizeof p, "no-such-libonnxruntime.so.1");
  expect_unavailable(p, "No such file");
  path_of(p, sizeof p, "not-a-library.so");
  tu_sh("printf 'not an ELF' > '%s'", p);
  expect_unavailable(p, "not-a-library.so");
  /* A real shared library without OrtGetApiBase. */
  const char *libz = NULL;
  /* The target's multiarch directory (tests/ort.cmake: CMake's CMAKE_LIBRARY_ARCHITECTURE): a cross
     build's test runs the target's libz, never the host's. */
  static const char *cands[] = {"/lib/" MPK_LIB_ARCH "/libz.so.1", "/usr/lib/" MPK_LIB_ARCH "/libz.so.1",
                                "/lib64/libz.so.1", "/usr/lib/libz.so.1"};
  for (size_t i = 0; i < sizeof cands / sizeof *cands && !libz; i++)
    if (access(cands[i], R_OK) == 0) libz = cands[i];
  assert_non_null(libz);
  expect_unavailable(libz, "has no OrtGetApiBase");
}

/* A library with OrtGetApiBase but too old (1.11.0), or new enough by its version string but
   without API 12: MPK_EVERSION naming its version and path. */
static void test_version_refused(void **state) {
  (void)state;
  mpk_ort *o = (mpk_ort *)1;
  mpk_error err = {0};
  mpk_ort_options opts = MPK_ORT_OPTIONS_INIT;
  opts.library = MPK_FAKE_ORT;
  unsetenv("FAKE_ORT_VERSION");
  assert_int_equal(mpk_ort_open(&opts, &o, &err), MPK_EVERSION);
  assert_null(o);
  if (!strstr(tu_err(&err), "1.11.0") || !strstr(tu_err(&err), "too old") || !strstr(tu_err(&err), "fake_ort"))
    fail_msg("message: %s", tu_err(&err));
  setenv("FAKE_ORT_VERSION", "1.30.0", 1);
  assert_int_equal(mpk_ort_open(&opts, &o, &err), MPK_EVERSION);
  if (!strstr(tu_err(&err), "does not provide C API version 12")) fail_msg("message: %s", tu_err(&err));
  setenv("FAKE_ORT_VERSION", "garbage", 1);
  assert_int_equal(mpk_ort_open(&opts, &o, &err), MPK_EVERSION);
  unsetenv("FAKE_ORT_VERSION");
}

static void test_session_bad_model(void **state) {
  (void)state;
  mpk_ort *o = open_ort();
  char p[700];
  path_of(p, sizeof p, "garbage.onnx");
  tu_sh("printf 'garbage, not protobuf' > '%s'", p);
  mpk_ort_session *s = (mpk_ort_session *)1;
  mpk_error err = {0};
  assert_int_equal(mpk_ort_session_open(o, p, NULL, &s, &err), MPK_EMALFORMED);
  assert_null(s);
  assert_non_null(strstr(tu_err(&err), "garbage.onnx"));
  path_of(p, sizeof p, "absent.onnx");
  assert_int_equal(mpk_ort_session_open(o, p, NULL, &s, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(tu_err(&err), "absent.onnx"));
  assert_int_equal(mpk_ort_session_open(o, NULL, NULL, &s, &err), MPK_EINVAL);
  mpk_ort_close(o);
}

static void ce_of(mpk_ort *o, const char *model, const mpk_ort_session_options *so, mpk_ort_lm_result *r) {
  char p[700];
  path_of(p, sizeof p, model);
  mpk_ort_session *s = NULL;
  mpk_error err = {0};
  int rc = mpk_ort_session_open(o, p, so, &s, &err);
  if (rc) fail_msg("%s: %s", model, tu_err(&err));
  rc = mpk_ort_lm_cross_entropy(s, tokens, n_tokens, r, &err);
  if (rc) fail_msg("%s: %s", model, tu_err(&err));
  mpk_ort_session_close(s);
}

static void test_lm_cross_entropy(void **state) {
  (void)state;
  mpk_ort *o = open_ort();
  mpk_ort_lm_result r;
  ce_of(o, "lm.onnx", NULL, &r);
  assert_true(fabs(r.cross_entropy - expected_ce) <= 1e-9 * fabs(expected_ce));
  assert_int_equal(r.vocab, 11);
  assert_true(fabs(r.uniform_floor - log(11.0)) < 1e-15);
  assert_int_equal(r.n_tokens, n_tokens);
  assert_int_equal(r.n_predicted, n_tokens - 1);
  assert_string_equal(r.logits_output, "logits");
  assert_int_equal(strlen(r.logits_sha256), 64);
  /* The same graph with its weights as external data, and with an empty past input. */
  mpk_ort_lm_result r2, r3;
  ce_of(o, "lm_ext.onnx", NULL, &r2);
  assert_true(r2.cross_entropy == r.cross_entropy);
  assert_string_equal(r2.logits_sha256, r.logits_sha256);
  ce_of(o, "lm_past.onnx", NULL, &r3);
  assert_true(r3.cross_entropy == r.cross_entropy);
  ce_of(o, "lm_f16.onnx", NULL, &r3); /* float16 logits, widened exactly */
  assert_true(r3.cross_entropy == r.cross_entropy);
  assert_string_not_equal(r3.logits_sha256, r.logits_sha256); /* 2-byte elements hashed as returned */

  /* onnxruntime-node, the independent reference, within 1e-5. */
  if (mpk_test_have_tool("node")) {
    char cmd[2048], out[700];
    path_of(out, sizeof out, "node.json");
    snprintf(cmd, sizeof cmd, "node '%s/tests/tools/ort_lm_ce.js' '%s/lm.onnx' '%s/tokens.json' > '%s'", MPK_SOURCE_DIR, dir, dir, out);
    int st = system(cmd);
    if (st != 0) fail_msg("ort_lm_ce.js failed (%d)", st);
    json_t *j = tu_load_json(out);
    double node_ce = json_real_value(json_object_get(j, "cross_entropy"));
    json_decref(j);
    if (fabs(node_ce - r.cross_entropy) > 1e-5) fail_msg("node %.17g vs modelpkg %.17g", node_ce, r.cross_entropy);
  } else {
    printf("NOTE: test_ort: node not found: the onnxruntime-node comparison was not run\n");
  }

  /* Token ids outside the vocabulary; too few tokens; an input the LM is not fed. */
  char p[700];
  path_of(p, sizeof p, "lm.onnx");
  mpk_ort_session *s = NULL;
  mpk_error err = {0};
  assert_int_equal(mpk_ort_session_open(o, p, NULL, &s, &err), 0);
  int64_t bad[4] = {1, 2, 11, 3};
  assert_int_equal(mpk_ort_lm_cross_entropy(s, bad, 4, &r, &err), MPK_EINVAL);
  assert_non_null(strstr(tu_err(&err), "position 2"));
  int64_t neg[3] = {1, -1, 3};
  assert_int_equal(mpk_ort_lm_cross_entropy(s, neg, 3, &r, &err), MPK_EINVAL);
  assert_non_null(strstr(tu_err(&err), "position 1"));
  assert_int_equal(mpk_ort_lm_cross_entropy(s, tokens, 1, &r, &err), MPK_EINVAL);
  assert_int_equal(mpk_ort_lm_cross_entropy(s, NULL, 3, &r, &err), MPK_EINVAL);
  mpk_ort_session_close(s);
  path_of(p, sizeof p, "lm_odd.onnx");
  assert_int_equal(mpk_ort_session_open(o, p, NULL, &s, &err), 0);
  assert_int_equal(mpk_ort_lm_cross_entropy(s, tokens, n_tokens, &r, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(tu_err(&err), "token_type_ids"));
  mpk_ort_session_close(s);
  path_of(p, sizeof p, "add.onnx");
  assert_int_equal(mpk_ort_session_open(o, p, NULL, &s, &err), 0);
  assert_int_equal(mpk_ort_lm_cross_entropy(s, tokens, n_tokens, &r, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(tu_err(&err), "'A'"));
  mpk_ort_session_close(s);
  mpk_ort_close(o);
}

static mpk_tensor_view view_of(float *data, int64_t d0, int64_t d1) {
  mpk_tensor_view v;
  memset(&v, 0, sizeof v);
  v.data = data;
  snprintf(v.dtype, sizeof v.dtype, "float32");
  v.ndim = 2;
  v.shape[0] = d0, v.shape[1] = d1;
  v.strides[0] = d1, v.strides[1] = 1;
  v.numel = (uint64_t)(d0 * d1);
  v.nbytes = v.numel * 4;
  return v;
}

static void test_initializers(void **state) {
  (void)state;
  mpk_ort *o = open_ort();
  mpk_ort_lm_result files, given;
  ce_of(o, "lm_ext.onnx", NULL, &files);
  /* Different bytes at the same path prove the session reads the views, not the files. */
  char p[700];
  path_of(p, sizeof p, "lm_ext.onnx");
  mpk_tensor_view ve = view_of(E, 11, 4), vw = view_of(W, 4, 11);
  mpk_ort_initializer init[2] = {{"E", &ve}, {"W", &vw}};
  mpk_ort_session_options so = MPK_ORT_SESSION_OPTIONS_INIT;
  so.initializers = init;
  so.n_initializers = 2;
  ce_of(o, "lm_ext.onnx", &so, &given);
  assert_true(given.cross_entropy == files.cross_entropy);
  assert_string_equal(given.logits_sha256, files.logits_sha256);
  float W2[44];
  for (int i = 0; i < 44; i++) W2[i] = -W[i];
  mpk_tensor_view vw2 = view_of(W2, 4, 11);
  init[1].view = &vw2;
  mpk_ort_lm_result neg;
  ce_of(o, "lm_ext.onnx", &so, &neg);
  assert_true(neg.cross_entropy != files.cross_entropy);
  assert_string_not_equal(neg.logits_sha256, files.logits_sha256);

  mpk_ort_session *s = (mpk_ort_session *)1;
  mpk_error err = {0};
  /* A name the graph does not have. */
  init[1].view = &vw;
  init[1].name = "W_missing";
  assert_int_equal(mpk_ort_session_open(o, p, &so, &s, &err), MPK_EMISMATCH);
  assert_null(s);
  if (!strstr(tu_err(&err), "W_missing")) fail_msg("no initializer name in: %s", tu_err(&err));
  /* The right name, the wrong shape. */
  init[1].name = "W";
  mpk_tensor_view vbad = view_of(W, 11, 4);
  init[1].view = &vbad;
  assert_int_equal(mpk_ort_session_open(o, p, &so, &s, &err), MPK_EMISMATCH);
  if (!strstr(tu_err(&err), "'W'") || !strstr(tu_err(&err), "float32[11,4]")) fail_msg("message: %s", tu_err(&err));
  /* A view smaller than its shape says. */
  mpk_tensor_view vshort = view_of(W, 4, 11);
  vshort.nbytes = 8;
  init[1].view = &vshort;
  assert_int_equal(mpk_ort_session_open(o, p, &so, &s, &err), MPK_EMISMATCH);
  /* The right shape, the wrong dtype; a view of a dtype ONNX Runtime cannot take in place. */
  mpk_tensor_view vh = view_of(W, 4, 11);
  snprintf(vh.dtype, sizeof vh.dtype, "float16");
  vh.nbytes = 44 * 2;
  init[1].view = &vh;
  assert_int_equal(mpk_ort_session_open(o, p, &so, &s, &err), MPK_EMISMATCH);
  if (!strstr(tu_err(&err), "float16[4,11]") || !strstr(tu_err(&err), "float32[4,11]")) fail_msg("message: %s", tu_err(&err));
  mpk_tensor_view vi4 = view_of(W, 4, 11);
  snprintf(vi4.dtype, sizeof vi4.dtype, "int4");
  init[1].view = &vi4;
  assert_int_equal(mpk_ort_session_open(o, p, &so, &s, &err), MPK_EUNSUPPORTED);
  init[1].view = &vw;
  /* Hostile model files with initializers supplied: truncated anywhere, or not protobuf — refused
     with the file named, never a crash or a read past the end (ASan build). */
  char src[700], cut[700];
  path_of(src, sizeof src, "lm.onnx");
  path_of(cut, sizeof cut, "cut.onnx");
  size_t len = 0;
  uint8_t *bytes = tu_read_file(src, &len);
  assert_non_null(bytes);
  for (size_t k = 0; k < len; k += len / 23 + 1) {
    FILE *f = fopen(cut, "wb");
    assert_non_null(f);
    fwrite(bytes, 1, k, f);
    fclose(f);
    int rc = mpk_ort_session_open(o, cut, &so, &s, &err);
    assert_int_not_equal(rc, 0);
    assert_null(s);
    if (!strstr(tu_err(&err), "cut.onnx")) fail_msg("cut at %zu: %s", k, tu_err(&err));
  }
  free(bytes);
  /* n_initializers without an array. */
  so.initializers = NULL;
  assert_int_equal(mpk_ort_session_open(o, p, &so, &s, &err), MPK_EINVAL);
  mpk_ort_close(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_open_version),      cmocka_unit_test(test_library_missing),
      cmocka_unit_test(test_version_refused),   cmocka_unit_test(test_session_bad_model),
      cmocka_unit_test(test_lm_cross_entropy),
      cmocka_unit_test(test_initializers),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
