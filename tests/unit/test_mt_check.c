/* MobileTransformers package validation (mpk_mt_check): the conformance tiny package for each
   variant and for all of them, then damaged copies of it — each problem must name the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define MANIFEST "mobiletransformers_manifest.json"
#define INT4_INF "variants/cpu-int4/inference/"
#define TENSOR_BIN "model.layers.0.attn.q_proj.MatMul.weight.bin"

static char tiny[1024];
static char tmp_root[256];
static char pkg[512];
static char good[512]; /* the tiny package with correct sidecars, resealed: every check holds */

static int setup(void **state) {
  (void)state;
  snprintf(tiny, sizeof tiny, "%s", tu_shared("conformance/mobiletransformers/tiny_package"));
  snprintf(tmp_root, sizeof tmp_root, "%s", tu_tmpdir());
  /* The shipped sidecars are placeholders (64 zeros) and the shipped tensors 23-byte placeholders
     of a float32 [4, 3] (48 bytes), both of which the load gate refuses: a copy with loadable
     tensors (padded to 48 bytes) and correct sidecars, resealed, is the starting point of the
     damaged copies. */
  snprintf(good, sizeof good, "%s/good", tmp_root);
  tu_sh("cp -r '%s' '%s' && chmod -R u+w '%s' && for f in '%s'/variants/*/inference/*.bin; do "
        "truncate -s 48 \"$f\" && sha256sum \"$f\" | cut -c1-64 > \"$f.sha256\"; done",
        tiny, good, good, good);
  mpk_mt_build_input in = {0};
  mpk_mt_build_result res;
  mpk_error err;
  if (mpk_mt_build(good, &in, &res, &err)) fail_msg("reseal: %s", tu_err(&err));
  mpk_mt_build_result_free(&res);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tu_sh("rm -rf '%s'", tmp_root);
  return 0;
}

/* A fresh writable copy of the tiny package (the fixture is read-only). */
static const char *fresh_copy(void) {
  snprintf(pkg, sizeof pkg, "%s/pkg", tmp_root);
  tu_sh("rm -rf '%s' && cp -r '%s' '%s' && chmod -R u+w '%s'", pkg, good, pkg, pkg);
  return pkg;
}

static char *at(const char *rel) {
  static char buf[1024];
  snprintf(buf, sizeof buf, "%s/%s", pkg, rel);
  return buf;
}

/* Replace the first occurrence of `from` in PKG/rel. */
static void edit(const char *rel, const char *from, const char *to) { tu_replace_in_file(at(rel), from, to); }

/* The conformance tiny package's inference/model.onnx is a 17-byte placeholder, not a graph, so
   these tests, which are about the manifest, the files and the load gate, do not read it
   (no_graph); test_tiny_placeholder_graph checks what the default says about it. */
static mpk_mt_report *check(const char *dir, const mpk_mt_check_options *o) {
  mpk_mt_report *r = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_check_options opts = o ? *o : (mpk_mt_check_options){0};
  opts.no_graph = 1;
  int rc = mpk_mt_check(dir, &opts, &r, &err);
  if (rc) fail_msg("mpk_mt_check: %d %s", rc, tu_err(&err));
  return r;
}

static void dump(const mpk_mt_report *r) {
  for (size_t i = 0; i < r->n_problems; i++) {
    char line[2048];
    mpk_error_format(&r->problems[i], line, sizeof line);
    print_message("  problem: %s [%s]\n", line, mpk_code_name(r->problems[i].code));
  }
  for (size_t i = 0; i < r->n_notes; i++) print_message("  note: %s\n", r->notes[i]);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The problem with this code whose file ends with `file`, pointer equals `pointer` (NULL: any)
   and message contains `msg`; fails the test (listing every problem) when there is none. */
static const mpk_error *expect_problem(const mpk_mt_report *r, int code, const char *file, const char *pointer,
                                       const char *msg) {
  for (size_t i = 0; i < r->n_problems; i++) {
    const mpk_error *e = &r->problems[i];
    if (e->code == code && ends_with(e->file, file) && (!pointer || strcmp(e->pointer, pointer) == 0) &&
        strstr(e->message, msg))
      return e;
  }
  dump(r);
  fail_msg("no %s problem in ...%s at \"%s\" saying \"%s\"", mpk_code_name(code), file, pointer ? pointer : "*", msg);
  return NULL;
}

static void expect_ok(const mpk_mt_report *r) {
  if (r->n_problems) {
    dump(r);
    fail_msg("%zu problems", r->n_problems);
  }
}

static bool has_note(const mpk_mt_report *r, const char *text) {
  for (size_t i = 0; i < r->n_notes; i++)
    if (strstr(r->notes[i], text)) return true;
  return false;
}

/* The tiny package as shipped: its only problems are the load gate refusing each checked
   variant's tensor, whose sidecar is a placeholder — naming the file and both digests — and whose
   23 bytes cannot be loaded as the float32 [4, 3] the map declares (a problem, not a warning: a
   tensor the runtime cannot load fails the package). */
static void expect_placeholder_sidecars(const mpk_mt_report *r, size_t n_variants) {
  if (r->n_problems != 2 * n_variants) {
    dump(r);
    fail_msg("%zu problems, want %zu (the placeholder sidecars and tensors)", r->n_problems, 2 * n_variants);
  }
  expect_problem(r, MPK_EMISMATCH, "/inference/" TENSOR_BIN, "",
                 "the file is 23 bytes, but float32 of 2 dimensions is 48 bytes: it cannot be loaded");
  for (size_t i = 0; i < n_variants; i++) {
    const mpk_error *e = expect_problem(r, MPK_EMISMATCH, "/inference/" TENSOR_BIN, "",
                                        "does not equal its sidecar's 0000000000000000000000000000000000000000000000000000000000000000");
    assert_non_null(strstr(e->message, "b39a7c6175b60a789569dd83dafebc0ef35cd78d53f955bdcd05fd8142895da3"));
  }
  assert_int_equal(r->n_tensors, n_variants);
  assert_int_equal(r->n_tensors_verified, 0);
}

/* ---------------------------------------------------------------- the tiny package as shipped */

/* By default check reads the inference graph: the tiny package's placeholder is refused as not an
   ONNX model, naming the file — one problem more than with no_graph, nothing else changes. */
static void test_tiny_placeholder_graph(void **state) {
  (void)state;
  mpk_mt_report *r = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_mt_check(tiny, NULL, &r, &err)) fail_msg("%s", tu_err(&err));
#if MPK_WITH_ONNX
  assert_int_equal(r->n_problems, 3);
  expect_problem(r, MPK_EMALFORMED, "/inference/model.onnx", NULL, "is not an ONNX protobuf (it looks like text: a placeholder?)");
#else
  /* without the onnx component the graph is not read: the rest of the check, and a note saying so */
  assert_int_equal(r->n_problems, 2);
  assert_true(has_note(r, "graph not checked: built without the onnx component"));
#endif
  expect_problem(r, MPK_EMISMATCH, "/inference/" TENSOR_BIN, "", "does not equal its sidecar's");
  mpk_mt_report_free(r);
}

static void test_tiny_default_variant(void **state) {
  (void)state;
  mpk_mt_report *r = check(tiny, NULL);
  expect_placeholder_sidecars(r, 1);
  assert_non_null(r->manifest);
  assert_int_equal(r->n_variants, 1);
  assert_string_equal(r->variants[0], "cpu-int4");
  /* its 16 plan files (core, inference, train, rag, genai, checksums) + 6 package-wide files */
  assert_int_equal(r->n_files, 22);
  assert_int_equal(r->n_files_sized, 22);
  assert_int_equal(r->n_files_hashed, 22);
  assert_true(r->hashed);
  assert_int_equal(r->bytes_hashed, 4006);
  assert_int_equal(r->n_unlisted, 0);
  assert_true(has_note(r, "9 listed files of other variants not checked"));
  mpk_mt_report_free(r);
}

static void test_tiny_each_variant(void **state) {
  (void)state;
  const char *ids[] = {"cpu-int4", "cpu-fp16"};
  const size_t files[] = {22, 19};
  for (size_t i = 0; i < 2; i++) {
    mpk_mt_check_options o = {.variant = ids[i], .workers = 2};
    mpk_mt_report *r = check(tiny, &o);
    expect_placeholder_sidecars(r, 1);
    assert_int_equal(r->n_variants, 1);
    assert_string_equal(r->variants[0], ids[i]);
    assert_int_equal(r->n_files, files[i]);
    assert_int_equal(r->n_files_hashed, files[i]);
    mpk_mt_report_free(r);
  }
}

static void test_tiny_all_variants(void **state) {
  (void)state;
  for (unsigned workers = 1; workers <= 8; workers *= 2) {
    mpk_mt_check_options o = {.all_variants = 1, .workers = workers};
    mpk_mt_report *r = check(tiny, &o);
    expect_placeholder_sidecars(r, 2);
    assert_true(r->all_variants);
    assert_int_equal(r->n_variants, 2);
    assert_int_equal(r->n_files, 31); /* every file the manifest lists */
    assert_int_equal(r->n_files_hashed, 31);
    assert_int_equal(r->bytes_hashed, 7299);
    /* no warnings: that each 23-byte tensor is not the 48 bytes its float32 [4, 3] needs is a problem */
    assert_int_equal(r->n_notes, 0);
    mpk_mt_report_free(r);
  }
}

/* With correct sidecars the load gate passes, and says which tensor it verified against what. */
static void test_tiny_correct_sidecars(void **state) {
  (void)state;
  mpk_mt_check_options o = {.all_variants = 1};
  mpk_mt_report *r = check(good, &o);
  expect_ok(r);
  assert_int_equal(r->n_tensors, 2);
  assert_int_equal(r->n_tensors_verified, 2);
  assert_true(has_note(r, "load gate, variant \"cpu-int4\": "));
  assert_true(has_note(r, "/cpu-fp16/inference/" TENSOR_BIN " (layer \"backbone.model.layers.0.self_attn.q_proj.base_layer\" "
                          "role \"weight\") verified against the sidecar"));
  mpk_mt_report_free(r);
  /* a stale sidecar fails (the manifest resealed, so only the gate sees it) */
  fresh_copy();
  tu_sh("echo 1111111111111111111111111111111111111111111111111111111111111111 > '%s'", at(INT4_INF TENSOR_BIN ".sha256"));
  mpk_mt_build_input in = {0};
  mpk_mt_build_result res;
  mpk_error err;
  if (mpk_mt_build(pkg, &in, &res, &err)) fail_msg("reseal: %s", tu_err(&err));
  mpk_mt_build_result_free(&res);
  r = check(pkg, NULL);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EMISMATCH, INT4_INF TENSOR_BIN, "", "does not equal its sidecar's 1111");
  mpk_mt_report_free(r);
  /* no sidecar and no map digest: "no checksum" */
  fresh_copy();
  tu_sh("rm '%s'", at(INT4_INF TENSOR_BIN ".sha256"));
  if (mpk_mt_build(pkg, &in, &res, &err)) fail_msg("reseal: %s", tu_err(&err));
  mpk_mt_build_result_free(&res);
  r = check(pkg, NULL);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_ENOTFOUND, INT4_INF TENSOR_BIN, "", "no checksum for layer");
  mpk_mt_report_free(r);
}

static void test_tiny_no_hash(void **state) {
  (void)state;
  mpk_mt_check_options o = {.no_hash = 1};
  /* --no-hash still fails a tensor that cannot be loaded: the shipped 23-byte placeholder */
  mpk_mt_report *r = check(tiny, &o);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EMISMATCH, "/inference/" TENSOR_BIN, "", "it cannot be loaded");
  mpk_mt_report_free(r);
  r = check(good, &o);
  expect_ok(r);
  assert_false(r->hashed);
  assert_int_equal(r->n_files_sized, 22);
  assert_int_equal(r->n_files_hashed, 0);
  assert_int_equal(r->bytes_hashed, 0);
  assert_true(has_note(r, "digests not computed"));
  mpk_mt_report_free(r);
}

typedef struct progress_log {
  uint64_t total, last;
  unsigned calls;
  int cancel;
} progress_log;

static int progress(void *ctx, uint64_t done, uint64_t total) {
  progress_log *p = ctx;
  assert_true(done <= total);
  p->total = total;
  p->last = done;
  p->calls++;
  return p->cancel;
}

static void test_progress_and_cancel(void **state) {
  (void)state;
  progress_log log = {0};
  mpk_mt_check_options o = {.progress = progress, .progress_ctx = &log};
  mpk_mt_report *r = check(good, &o);
  expect_ok(r);
  assert_true(log.calls > 0);
  /* 4006 bytes in scope, less the 23-byte tensor the load gate hashed already (not hashed twice) */
  assert_int_equal(log.total, 4006 - 23);
  assert_int_equal(log.last, 4006 - 23);
  mpk_mt_report_free(r);

  log = (progress_log){.cancel = 1};
  mpk_error err;
  r = (mpk_mt_report *)1;
  assert_int_equal(mpk_mt_check(tiny, &o, &r, &err), MPK_ECANCELLED);
  assert_null(r);
}

static void test_bad_arguments(void **state) {
  (void)state;
  mpk_mt_report *r;
  mpk_error err;
  mpk_mt_check_options o = {.variant = "cpu-int4", .all_variants = 1};
  assert_int_equal(mpk_mt_check(tiny, &o, &r, &err), MPK_EINVAL);
  assert_int_equal(mpk_mt_check("/nonexistent/mt-package", NULL, &r, &err), MPK_ENOTFOUND);
  assert_string_equal(err.message, "not a directory");
  assert_int_equal(mpk_mt_check(NULL, NULL, &r, &err), MPK_EINVAL);
  /* a directory without a manifest: checked, and the problem says so */
  tu_sh("mkdir -p '%s/empty'", tmp_root);
  char empty[600];
  snprintf(empty, sizeof empty, "%s/empty", tmp_root);
  r = check(empty, NULL);
  assert_int_equal(r->n_problems, 1);
  assert_null(r->manifest);
  expect_problem(r, MPK_ENOTFOUND, "/empty/" MANIFEST, "", "the MobileTransformers manifest is missing");
  mpk_mt_report_free(r);
}

/* ---------------------------------------------------------------- plans */

static void test_plan_files(void **state) {
  (void)state;
  mpk_mt_manifest *m;
  mpk_error err;
  if (mpk_mt_manifest_load(tiny, &m, &err)) fail_msg("%s", tu_err(&err));
  const mpk_mt_file **files;
  size_t n;
  const char *inference[] = {"inference"};
  assert_int_equal(mpk_mt_plan_files(m, "cpu-int4", inference, 1, &files, &n, &err), 0);
  assert_int_equal(n, 7);
  assert_string_equal(files[0]->path, INT4_INF "frozen_base.onnx.data");
  assert_string_equal(files[6]->path, INT4_INF "weight_handoff_map.json");
  for (size_t i = 1; i < n; i++) assert_true(strcmp(files[i - 1]->path, files[i]->path) < 0);
  mpk_free(files);
  /* the inference and genai groups overlap: each file once */
  const char *two[] = {"genai", "inference"};
  assert_int_equal(mpk_mt_plan_files(m, "cpu-int4", two, 2, &files, &n, &err), 0);
  assert_int_equal(n, 7);
  mpk_free(files);
  assert_int_equal(mpk_mt_plan_files(m, "cpu-int4", NULL, 0, &files, &n, &err), 0);
  assert_int_equal(n, 16); /* the manifest itself is in "core" but never listed */
  mpk_free(files);
  const char *core[] = {"core"};
  assert_int_equal(mpk_mt_plan_files(m, "cpu-fp16", core, 1, &files, &n, &err), 0);
  assert_int_equal(n, 4);
  assert_string_equal(files[3]->path, "shared/tokenizer/tokenizer.json");
  mpk_free(files);
  const char *rag[] = {"rag"};
  assert_int_equal(mpk_mt_plan_files(m, "cpu-fp16", rag, 1, &files, &n, &err), 0);
  assert_int_equal(n, 0);
  mpk_free(files);
  const char *bogus[] = {"weights"};
  assert_int_equal(mpk_mt_plan_files(m, "cpu-fp16", bogus, 1, &files, &n, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "no group \"weights\""));
  assert_int_equal(mpk_mt_plan_files(m, "gpu-int4", NULL, 0, &files, &n, &err), MPK_ENOTFOUND);
  mpk_mt_manifest_free(m);
}

/* ---------------------------------------------------------------- damaged copies: integrity */

static void test_flipped_byte(void **state) {
  (void)state;
  fresh_copy();
  FILE *f = fopen(at(INT4_INF "model.onnx"), "r+b");
  assert_non_null(f);
  fseek(f, 5, SEEK_SET);
  int ch = fgetc(f);
  fseek(f, 5, SEEK_SET);
  fputc(ch ^ 0x01, f);
  fclose(f);
  mpk_mt_report *r = check(pkg, NULL);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EMISMATCH, INT4_INF "model.onnx", "",
                 "does not equal the manifest's sha256 f41027621d842764ef7f3b12331cec51ede487a823c41b445cc84d1414030147");
  assert_int_equal(r->n_files_sized, 22);
  assert_int_equal(r->n_files_hashed, 21);
  mpk_mt_report_free(r);
  /* sizes only: not seen; another variant: not in scope */
  mpk_mt_check_options o = {.no_hash = 1};
  r = check(pkg, &o);
  expect_ok(r);
  mpk_mt_report_free(r);
  o = (mpk_mt_check_options){.variant = "cpu-fp16"};
  r = check(pkg, &o);
  expect_ok(r);
  mpk_mt_report_free(r);
  o = (mpk_mt_check_options){.all_variants = 1};
  r = check(pkg, &o);
  assert_int_equal(r->n_problems, 1);
  mpk_mt_report_free(r);
}

static void test_truncated_file(void **state) {
  (void)state;
  fresh_copy();
  assert_int_equal(truncate(at(INT4_INF "frozen_base.onnx.data"), 10), 0);
  progress_log log = {0};
  mpk_mt_check_options o = {.progress = progress, .progress_ctx = &log};
  mpk_mt_report *r = check(pkg, &o);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EMISMATCH, INT4_INF "frozen_base.onnx.data", "",
                 "file is 10 bytes, fileSizes says 24 (truncated)");
  /* it was never hashed: the sizes come first */
  assert_int_equal(r->n_files_sized, 21);
  assert_int_equal(r->n_files_hashed, 21);
  assert_int_equal(log.total, 4006 - 24 - 23); /* the gate hashed the 23-byte tensor */
  mpk_mt_report_free(r);
  /* longer than listed, and with --no-hash too */
  tu_sh("printf 'x%%.0s' $(seq 30) > '%s'", at(INT4_INF "frozen_base.onnx.data"));
  o = (mpk_mt_check_options){.no_hash = 1};
  r = check(pkg, &o);
  expect_problem(r, MPK_EMISMATCH, INT4_INF "frozen_base.onnx.data", "", "file is 30 bytes, fileSizes says 24 (longer");
  mpk_mt_report_free(r);
}

static void test_missing_listed_file(void **state) {
  (void)state;
  fresh_copy();
  assert_int_equal(unlink(at("variants/cpu-int4/train/training_config.json")), 0);
  mpk_mt_report *r = check(pkg, NULL);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_ENOTFOUND, "variants/cpu-int4/train/training_config.json", "", "listed file is missing");
  mpk_mt_report_free(r);
  /* a package-wide file is in every variant's scope */
  assert_int_equal(unlink(at("licenses/FRAMEWORK_LICENSE")), 0);
  mpk_mt_check_options o = {.variant = "cpu-fp16", .no_hash = 1};
  r = check(pkg, &o);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_ENOTFOUND, "/licenses/FRAMEWORK_LICENSE", "", "listed file is missing");
  mpk_mt_report_free(r);
}

static void test_unlisted_files_warn(void **state) {
  (void)state;
  fresh_copy();
  tu_sh("cd '%s' && echo extra > " INT4_INF "extra.bin && echo x > notes.txt && ln -s README.md README.link", pkg);
  mpk_mt_report *r = check(pkg, NULL);
  expect_ok(r); /* warnings only */
  assert_int_equal(r->n_unlisted, 3);
  assert_string_equal(r->unlisted[0], "README.link");
  assert_string_equal(r->unlisted[1], "notes.txt");
  assert_string_equal(r->unlisted[2], INT4_INF "extra.bin");
  assert_true(has_note(r, "warning: "));
  assert_true(has_note(r, "/pkg/notes.txt is on disk but the manifest does not list it"));
  assert_true(has_note(r, "/pkg/" INT4_INF "extra.bin is on disk but the manifest does not list it"));
  mpk_mt_report_free(r);
}

/* A listed symbolic link that stays in the package is fine; one that leaves it is refused. */
static void test_symlinks(void **state) {
  (void)state;
  fresh_copy();
  tu_sh("cd '%s' && rm variants/cpu-int4/train/weight_handoff_map.json && "
     "ln -s ../inference/weight_handoff_map.json variants/cpu-int4/train/weight_handoff_map.json",
     pkg);
  mpk_mt_report *r = check(pkg, NULL);
  expect_ok(r);
  mpk_mt_report_free(r);

  tu_sh("cd '%s' && rm " INT4_INF "model.onnx && ln -s /etc/hostname " INT4_INF "model.onnx", pkg);
  r = check(pkg, NULL);
  expect_problem(r, MPK_EMALFORMED, INT4_INF "model.onnx", "",
                 "listed file resolves outside the package directory (through a symbolic link)");
  expect_problem(r, MPK_EMALFORMED, INT4_INF "model.onnx", "", "required file (requiredFiles/2) resolves outside");
  assert_int_equal(r->n_problems, 2);
  mpk_mt_report_free(r);

  /* a FIFO listed file is refused at once, naming its type (opened non-blocking, never waited on) */
  tu_sh("cd '%s' && rm " INT4_INF "model.onnx && mkfifo " INT4_INF "model.onnx", pkg);
  r = check(pkg, NULL);
  expect_problem(r, MPK_EMALFORMED, INT4_INF "model.onnx", "", "listed file is a FIFO, not a regular file");
  mpk_mt_report_free(r);

  /* a symlinked directory that leaves the package */
  fresh_copy();
  tu_sh("cd '%s' && rm -r variants/cpu-int4/embedding && ln -s /etc variants/cpu-int4/embedding", pkg);
  r = check(pkg, NULL);
  expect_problem(r, MPK_EMALFORMED, "variants/cpu-int4/embedding", "",
                 "the \"embedding\" directory of variant \"cpu-int4\" (paths) resolves outside the package");
  /* a file beneath it is opened as a reader opens it: through the link, outside (not "missing") */
  expect_problem(r, MPK_EMALFORMED, "variants/cpu-int4/embedding/rag_config.json", "",
                 "listed file resolves outside the package directory");
  mpk_mt_report_free(r);

  /* the manifest itself, linked from outside: not read */
  fresh_copy();
  tu_sh("cd '%s' && mv " MANIFEST " ../outside.json && ln -s ../outside.json " MANIFEST, pkg);
  r = check(pkg, NULL);
  assert_null(r->manifest);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EMALFORMED, "/pkg/" MANIFEST, "", "the MobileTransformers manifest resolves outside the package");
  mpk_mt_report_free(r);
}

static void test_listing_incomplete(void **state) {
  (void)state;
  fresh_copy();
  edit(MANIFEST, "\"README.md\": \"51aba426dcfe1a3e908b8742381ba6cd976f7082ab60c31dc2f0e9c97055ae65\",\n    ", "");
  mpk_mt_report *r = check(pkg, NULL);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EMALFORMED, MANIFEST, "/fileSizes/README.md", "file \"README.md\" has a size but no sha256 digest");
  mpk_mt_report_free(r);
}

/* ---------------------------------------------------------------- damaged copies: the manifest */

/* Edit the manifest of a fresh copy; the check must stop at the manifest with this one problem. */
static void expect_manifest_refused(const char *from, const char *to, int code, const char *pointer, const char *msg) {
  fresh_copy();
  edit(MANIFEST, from, to);
  mpk_mt_report *r = check(pkg, NULL);
  assert_null(r->manifest);
  assert_int_equal(r->n_variants, 0);
  assert_int_equal(r->n_files, 0);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, code, "/pkg/" MANIFEST, pointer, msg);
  mpk_mt_report_free(r);
}

static void test_manifest_refusals(void **state) {
  (void)state;
  expect_manifest_refused("\"README.md\": 42", "\"../README.md\": 42", MPK_EMALFORMED, "/fileSizes/..~1README.md",
                          "leaves the package");
  expect_manifest_refused("\"requiredFiles\": [\n    \"mobiletransformers_manifest.json\"",
                          "\"requiredFiles\": [\n    \"/etc/hostname\"", MPK_EMALFORMED, "/requiredFiles/0", "is absolute");
  expect_manifest_refused("\"tokenizer\": \"shared/tokenizer\"", "\"tokenizer\": \"/usr/share\"", MPK_EMALFORMED,
                          "/variants/0/paths/tokenizer", "is absolute");
  expect_manifest_refused("\"id\": \"cpu-fp16\"", "\"id\": \"cpu-int4\"", MPK_EMALFORMED, "/variants/1",
                          "variant id \"cpu-int4\" appears twice");
  expect_manifest_refused("\"schemaVersion\": \"1.0\"", "\"schemaVersion\": \"2.0\"", MPK_EVERSION, "/schemaVersion",
                          "schemaVersion 2.0 is a newer major version than this reader supports (1.0)");
  expect_manifest_refused("\"minReaderVersion\": \"1.0\"", "\"minReaderVersion\": \"1.1\"", MPK_EVERSION,
                          "/minReaderVersion", "minReaderVersion 1.1 is newer than this reader (1.0)");
  expect_manifest_refused("\"shared/tokenizer/**\"", "\"shared/tokenizer/*\"", MPK_EMALFORMED,
                          "/downloadPlan/cpu-fp16/core/1", "no other glob form");
  expect_manifest_refused("\"shared/tokenizer/**\"", "\"shared/**/tokenizer.json\"", MPK_EMALFORMED,
                          "/downloadPlan/cpu-fp16/core/1", "no other glob form");
  expect_manifest_refused("{", "[", MPK_EMALFORMED, "", "invalid JSON");
}

static void test_default_variant(void **state) {
  (void)state;
  fresh_copy();
  edit(MANIFEST, "\"defaultVariant\": \"cpu-int4\"", "\"defaultVariant\": \"gpu-int4\"");
  mpk_mt_report *r = check(pkg, NULL);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EMALFORMED, MANIFEST, "/defaultVariant",
                 "defaultVariant \"gpu-int4\" is not among the variants (cpu-int4, cpu-fp16)");
  assert_int_equal(r->n_variants, 0);
  assert_int_equal(r->n_files, 6); /* the package-wide files only */
  mpk_mt_report_free(r);
  /* naming a variant still checks it, and the manifest still fails */
  mpk_mt_check_options o = {.variant = "cpu-fp16"};
  r = check(pkg, &o);
  assert_int_equal(r->n_problems, 1);
  assert_int_equal(r->n_files, 19);
  mpk_mt_report_free(r);
}

static void test_no_variants(void **state) {
  (void)state;
  fresh_copy();
  /* "variants": [ ... ] is the last array of the document: empty it */
  size_t len;
  char *text = (char *)tu_read_file(at(MANIFEST), &len);
  char *start = strstr(text, "\"variants\": [");
  char *end = strstr(start, "\n  ],\n  \"weightHandoff\"");
  assert_non_null(start);
  assert_non_null(end);
  FILE *f = fopen(at(MANIFEST), "wb");
  fwrite(text, 1, (size_t)(start - text), f);
  fputs("\"variants\": [", f);
  fputs(end + 3, f); /* from the closing bracket on */
  fclose(f);
  free(text);
  mpk_mt_report *r = check(pkg, NULL);
  expect_problem(r, MPK_EMALFORMED, MANIFEST, "/variants", "the manifest declares no variants");
  assert_int_equal(r->n_variants, 0);
  mpk_mt_report_free(r);
}

static void test_unknown_variant_requested(void **state) {
  (void)state;
  mpk_mt_check_options o = {.variant = "cpu-int8"};
  mpk_mt_report *r = check(tiny, &o);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_ENOTFOUND, MANIFEST, "/variants",
                 "the requested variant \"cpu-int8\" is not among the variants (cpu-int4, cpu-fp16)");
  mpk_mt_report_free(r);
}

static void test_feature_without_path(void **state) {
  (void)state;
  fresh_copy();
  edit(MANIFEST, "\"embedding\": \"variants/cpu-int4/embedding\",\n", "");
  mpk_mt_report *r = check(pkg, NULL);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EMALFORMED, MANIFEST, "/variants/0/paths",
                 "variant \"cpu-int4\" claims feature \"rag\" but has no \"embedding\" path");
  mpk_mt_report_free(r);
  /* a declared path must be a directory */
  fresh_copy();
  tu_sh("rm -r '%s'", at("variants/cpu-fp16/train"));
  mpk_mt_check_options o = {.variant = "cpu-fp16"};
  r = check(pkg, &o);
  expect_problem(r, MPK_ENOTFOUND, "/pkg/variants/cpu-fp16/train", "",
                 "the \"train\" directory of variant \"cpu-fp16\" (paths) is missing");
  mpk_mt_report_free(r);
}

static void test_inference_group(void **state) {
  (void)state;
  fresh_copy();
  edit(MANIFEST, "\"inference\": [\n        \"variants/cpu-fp16/inference/**\"\n      ]", "\"inference\": []");
  mpk_mt_check_options o = {.variant = "cpu-fp16"};
  mpk_mt_report *r = check(pkg, &o);
  expect_problem(r, MPK_EMALFORMED, MANIFEST, "/downloadPlan/cpu-fp16/inference",
                 "the download plan of variant \"cpu-fp16\" has an empty \"inference\" group");
  mpk_mt_report_free(r);
}

static void test_required_file_missing(void **state) {
  (void)state;
  fresh_copy();
  edit(MANIFEST, "\"variants/cpu-int4/inference/model.onnx\"\n  ]", "\"variants/cpu-int4/inference/model_v2.onnx\"\n  ]");
  mpk_mt_report *r = check(pkg, NULL);
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_ENOTFOUND, "/pkg/" INT4_INF "model_v2.onnx", "", "required file (requiredFiles/2) is missing");
  mpk_mt_report_free(r);
}

static void test_pattern_warnings(void **state) {
  (void)state;
  fresh_copy();
  edit(MANIFEST, "\"shared/chat_template.jinja\",", "\"shared/template.jinja\",");  /* cpu-fp16's plan */
  mpk_mt_check_options o = {.variant = "cpu-fp16"};
  mpk_mt_report *r = check(pkg, &o);
  expect_ok(r);
  assert_true(has_note(r, "warning: download pattern \"shared/template.jinja\" (variant \"cpu-fp16\", group \"core\") "
                          "names a file the manifest does not list"));
  mpk_mt_report_free(r);
}

/* ---------------------------------------------------------------- damaged copies: the handoff map */

static void test_missing_handoff_map(void **state) {
  (void)state;
  fresh_copy();
  assert_int_equal(unlink(at(INT4_INF "weight_handoff_map.json")), 0);
  mpk_mt_report *r = check(pkg, NULL);
  expect_problem(r, MPK_ENOTFOUND, "/pkg/" INT4_INF "weight_handoff_map.json", "",
                 "the weight handoff map of variant \"cpu-int4\" (weightHandoff) is missing");
  expect_problem(r, MPK_ENOTFOUND, "/pkg/" INT4_INF "weight_handoff_map.json", "", "listed file is missing");
  assert_int_equal(r->n_problems, 2);
  mpk_mt_report_free(r);
}

static void test_missing_external_file(void **state) {
  (void)state;
  fresh_copy();
  assert_int_equal(unlink(at(INT4_INF TENSOR_BIN)), 0);
  mpk_mt_report *r = check(pkg, NULL);
  expect_problem(r, MPK_ENOTFOUND, "/pkg/" INT4_INF TENSOR_BIN, "",
                 "the external data file of " INT4_INF "weight_handoff_map.json entry 0 "
                 "(backbone.model.layers.0.self_attn.q_proj.base_layer) role \"weight\" is missing");
  expect_problem(r, MPK_ENOTFOUND, "/pkg/" INT4_INF TENSOR_BIN, "", "listed file is missing");
  assert_int_equal(r->n_problems, 2);
  mpk_mt_report_free(r);
}

/* Edit the cpu-int4 inference handoff map; its digest then differs too (that problem is expected). */
static mpk_mt_report *with_handoff_edit(const char *from, const char *to) {
  fresh_copy();
  edit(INT4_INF "weight_handoff_map.json", from, to);
  mpk_mt_check_options o = {.no_hash = 1};
  return check(pkg, &o);
}

static void test_handoff_map_refusals(void **state) {
  (void)state;
  const char *map = "/pkg/" INT4_INF "weight_handoff_map.json";
  mpk_mt_report *r = with_handoff_edit("\"schemaVersion\": \"1.0\"", "\"schemaVersion\": \"2.0\"");
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EVERSION, map, "/schemaVersion", "schemaVersion 2.0 is a newer major version than this reader supports (1.1)");
  mpk_mt_report_free(r);
  r = with_handoff_edit("\"minReaderVersion\": \"1.0\"", "\"minReaderVersion\": \"1.2\"");
  assert_int_equal(r->n_problems, 1);
  expect_problem(r, MPK_EVERSION, map, "/minReaderVersion", "minReaderVersion 1.2 is newer than this reader (1.1)");
  mpk_mt_report_free(r);
  r = with_handoff_edit("\"minReaderVersion\": \"1.0\"", "\"minReaderVersion\": \"1.1\""); /* the reader is 1.1 */
  expect_ok(r);
  mpk_mt_report_free(r);
  r = with_handoff_edit("\"minReaderVersion\": \"1.0\",\n", "");
  expect_problem(r, MPK_EMALFORMED, map, "/minReaderVersion", "minReaderVersion is missing");
  mpk_mt_report_free(r);
  r = with_handoff_edit("\"weight\": \"" TENSOR_BIN "\"", "\"weight\": \"../../../../etc/hostname\"");
  assert_int_equal(r->n_problems, 2); /* and the file's size */
  expect_problem(r, MPK_EMALFORMED, map, "/entries/0/externalDataLocation/weight",
                 "externalDataLocation names a subdirectory: it must be the name of a file in the variant's "
                 "inference/ directory");
  mpk_mt_report_free(r);
  r = with_handoff_edit("\"weight\": \"" TENSOR_BIN "\"", "\"weight\": \"/etc/hostname\"");
  expect_problem(r, MPK_EMALFORMED, map, "/entries/0/externalDataLocation/weight", "externalDataLocation is absolute");
  mpk_mt_report_free(r);
  r = with_handoff_edit("\"weight\": \"" TENSOR_BIN "\"", "\"weight\": \"..\"");
  expect_problem(r, MPK_EMALFORMED, map, "/entries/0/externalDataLocation/weight", "externalDataLocation is a \".\" or \"..\"");
  mpk_mt_report_free(r);
  r = with_handoff_edit("\"weight\": \"" TENSOR_BIN "\"", "\"weight\": \"" TENSOR_BIN "\", \"scale\": \"" TENSOR_BIN "\"");
  expect_problem(r, MPK_EMALFORMED, map, NULL, "externalDataLocation \"" TENSOR_BIN "\" is claimed twice");
  mpk_mt_report_free(r);
  r = with_handoff_edit("\"entries\": [", "\"entriesX\": [");
  expect_problem(r, MPK_EMALFORMED, map, "/entries", "missing field \"entries\"");
  mpk_mt_report_free(r);
  r = with_handoff_edit("{", "[");
  expect_problem(r, MPK_EMALFORMED, map, "", "invalid JSON");
  mpk_mt_report_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tiny_placeholder_graph),
      cmocka_unit_test(test_tiny_default_variant),
      cmocka_unit_test(test_tiny_each_variant),
      cmocka_unit_test(test_tiny_all_variants),
      cmocka_unit_test(test_tiny_correct_sidecars),
      cmocka_unit_test(test_tiny_no_hash),
      cmocka_unit_test(test_progress_and_cancel),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_plan_files),
      cmocka_unit_test(test_flipped_byte),
      cmocka_unit_test(test_truncated_file),
      cmocka_unit_test(test_missing_listed_file),
      cmocka_unit_test(test_unlisted_files_warn),
      cmocka_unit_test(test_symlinks),
      cmocka_unit_test(test_listing_incomplete),
      cmocka_unit_test(test_manifest_refusals),
      cmocka_unit_test(test_default_variant),
      cmocka_unit_test(test_no_variants),
      cmocka_unit_test(test_unknown_variant_requested),
      cmocka_unit_test(test_feature_without_path),
      cmocka_unit_test(test_inference_group),
      cmocka_unit_test(test_required_file_missing),
      cmocka_unit_test(test_pattern_warnings),
      cmocka_unit_test(test_missing_handoff_map),
      cmocka_unit_test(test_missing_external_file),
      cmocka_unit_test(test_handoff_map_refusals),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
