/* Adapters as members of the merged model (docs/mt-merge.md "Membership", docs/mt-restore.md):
   the merge records its adapter and (--keep-base) the shipped tensors in its own transaction;
   mt restore puts the shipped bytes back from the kept base or re-fetched from a source, verified
   before anything is replaced, and a crash at any durable step of it leaves one whole version. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/core.h"
#include "core/txn.h"
#include "mt/merge/merge.h"
#include "mt/mt.h"
#include "mt_fixture.h"
#include "testutil.h"

#define N 3
static const fx_entry entries[N] = {
    {"backbone.model.layers.0.q.base_layer", "float32", 16, 24, 16, 24, 4, NULL},
    {"backbone.model.layers.0.v.base_layer", "float16", 8, 24, 8, 24, 4, NULL},
    {"backbone.model.layers.1.o.base_layer", "bfloat16", 24, 16, 24, 16, 4, NULL},
};

/* The fixture, sealed (its manifest lists the tensors with their sizes and digests, as an install
   source must), and a pristine copy of it at root/pristine. */
static void build(const char *root) {
  fx_options fo = {.alpha = 8, .rank = 4, .seed = 7};
  fx_build(root, entries, N, &fo);
  mpk_mt_build_input in = {0};
  mpk_mt_build_result res = {0};
  mpk_error err;
  if (mpk_mt_build(fx_pkg(root), &in, &res, &err)) fail_msg("reseal: %s", tu_err(&err));
  mpk_mt_build_result_free(&res);
  tu_sh("rm -rf '%s/pristine' && cp -a '%s' '%s/pristine'", root, fx_pkg(root), root);
}

static char *path_in(const char *root, const char *name) {
  static char buf[4][900];
  static int k;
  char *b = buf[k++ & 3];
  snprintf(b, 900, "%s/%s", fx_inference(root), name);
  return b;
}

static char *pristine(const char *root, const char *name) {
  static char buf[900];
  snprintf(buf, sizeof buf, "%s/pristine/variants/cpu-fp16/inference/%s", root, name);
  return buf;
}

static bool same_file(const char *a, const char *b) {
  size_t la, lb;
  uint8_t *x = tu_read_file(a, &la), *y = tu_read_file(b, &lb);
  bool same = x && y && la == lb && memcmp(x, y, la) == 0;
  free(x);
  free(y);
  return same;
}

static bool exists(const char *p) {
  struct stat st;
  return lstat(p, &st) == 0;
}

/* Every tensor and sidecar byte-identical to the shipped ones. */
static bool all_shipped(const char *root) {
  for (int i = 0; i < N; i++) {
    char n[64], s[80];
    snprintf(n, sizeof n, "t%d.MatMul.weight.bin", i);
    snprintf(s, sizeof s, "%s.sha256", n);
    if (!same_file(path_in(root, n), pristine(root, n)) || !same_file(path_in(root, s), pristine(root, s))) return false;
  }
  return true;
}

static bool none_shipped(const char *root) {
  for (int i = 0; i < N; i++) {
    char n[64];
    snprintf(n, sizeof n, "t%d.MatMul.weight.bin", i);
    if (same_file(path_in(root, n), pristine(root, n))) return false;
  }
  return true;
}

/* No file only a merge writes is left in the inference directory. */
static int device_files(const char *root) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "ls -A '%s' > '%s/ls.txt'", fx_inference(root), root);
  tu_sh("%s", cmd);
  char p[700];
  snprintf(p, sizeof p, "%s/ls.txt", root);
  size_t len;
  char *t = (char *)tu_read_file(p, &len);
  int n = 0;
  for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n"))
    if (mpk_mt_is_device_file(line)) n++;
  free(t);
  return n;
}

static int do_merge(const char *root, int keep_base, mpk_error *err) {
  mpk_mt_merge_options o = {.struct_size = sizeof o, .adapter = fx_adapter(root), .workers = 2, .keep_base = keep_base};
  mpk_mt_merge_report *r = NULL;
  mpk_error_clear(err);
  int rc = mpk_mt_merge(fx_pkg(root), &o, &r, err);
  mpk_mt_merge_report_free(r);
  return rc;
}

static int do_restore(const char *root, const char *source, mpk_mt_restore_report **r, mpk_error *err) {
  mpk_mt_restore_options o = MPK_MT_RESTORE_OPTIONS_INIT;
  o.source = source;
  mpk_error_clear(err);
  *r = NULL;
  return mpk_mt_restore(fx_pkg(root), &o, r, err);
}

/* The load gate (which recovers first) finds every tensor ready. */
static void gate_ready(const char *root) {
  mpk_mt_handoff *map = NULL;
  mpk_error err;
  if (mpk_mt_handoff_load(path_in(root, "weight_handoff_map.json"), &map, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_gate_report *g = NULL;
  if (mpk_mt_load_gate(fx_inference(root), map, NULL, &g, &err)) fail_msg("gate: %s", tu_err(&err));
  for (size_t i = 0; i < g->n_problems; i++) print_error("gate: %s\n", tu_err(&g->problems[i]));
  assert_true(g->ready);
  mpk_mt_gate_report_free(g);
  mpk_mt_handoff_free(map);
}

/* ---------------------------------------------------------------- membership */

static void test_membership_and_keep_base(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  build(root);
  mpk_error err;
  if (do_merge(root, 1, &err)) fail_msg("merge: %s", tu_err(&err));
  assert_true(none_shipped(root));
  /* the membership names the adapter by its content digest, with a copy of its bytes */
  size_t alen;
  uint8_t *adapter = tu_read_file(fx_adapter(root), &alen), d[32];
  char sha[65], copy[128];
  mpk_sha256(adapter, alen, d);
  mpk_hex(d, 32, sha);
  mpk_mt_adapter_copy_name(sha, copy);
  assert_true(same_file(fx_adapter(root), path_in(root, copy)));
  json_t *m = tu_load_json(path_in(root, MPK_MT_MEMBERS));
  json_t *a = json_array_get(json_object_get(m, "adapters"), 0);
  assert_int_equal(json_array_size(json_object_get(m, "adapters")), 1);
  assert_string_equal(json_string_value(json_object_get(a, "sha256")), sha);
  assert_string_equal(json_string_value(json_object_get(a, "orientation")), "no_transpose");
  assert_non_null(strstr(json_string_value(json_object_get(a, "evidence")), "non-square"));
  json_t *es = json_object_get(a, "entries");
  assert_int_equal(json_array_size(es), N);
  json_t *e0 = json_array_get(es, 0);
  assert_true(json_number_value(json_object_get(e0, "scale")) == 2.0); /* alpha 8 / rank 4 */
  assert_non_null(strstr(json_string_value(json_object_get(e0, "scale_source")), "training_config.json"));
  assert_string_equal(json_string_value(json_array_get(json_object_get(e0, "tensors"), 0)), "t0.MatMul.weight.bin");
  /* the kept bases are the shipped bytes, and their sidecars the shipped sidecars */
  json_t *kept = json_object_get(m, "kept_base");
  assert_int_equal(json_object_size(kept), N);
  for (int i = 0; i < N; i++) {
    char n[64], k[96], ks[120], s[80];
    snprintf(n, sizeof n, "t%d.MatMul.weight.bin", i);
    snprintf(s, sizeof s, "%s.sha256", n);
    snprintf(k, sizeof k, "%s" MPK_MT_KEPT_SUFFIX, n);
    snprintf(ks, sizeof ks, "%s" MPK_MT_KEPT_SUFFIX, s);
    assert_true(same_file(path_in(root, k), pristine(root, n)));
    assert_true(same_file(path_in(root, ks), pristine(root, s)));
    assert_string_equal(json_string_value(json_object_get(json_object_get(kept, n), "file")), k);
  }
  /* check accepts the tree (device files are not unlisted files) and the gate verifies it */
  gate_ready(root);
  mpk_mt_check_options co = MPK_MT_CHECK_OPTIONS_INIT;
  co.no_graph = 1; /* the fixture's maps name tensors the example graph does not hold */
  mpk_mt_report *cr = NULL;
  if (mpk_mt_check(fx_pkg(root), &co, &cr, &err)) fail_msg("check: %s", tu_err(&err));
  for (size_t i = 0; i < cr->n_problems; i++) print_error("check: %s\n", tu_err(&cr->problems[i]));
  assert_int_equal(cr->n_problems, 0);
  mpk_mt_report_free(cr);
  /* a shipped package carrying any of these names is refused by its reader */
  assert_true(mpk_mt_is_device_file(MPK_MT_MEMBERS));
  assert_true(mpk_mt_is_device_file(copy));
  assert_true(mpk_mt_is_device_file("x.bin" MPK_MT_KEPT_SUFFIX));
  assert_false(mpk_mt_is_device_file("x.bin"));
  json_decref(m);
  free(adapter);
  tu_sh("rm -rf '%s'", root);
}

/* A membership document that is not exactly its shape is refused, naming the rule. */
static void test_membership_strict(void **state) {
  (void)state;
  static const char *const bad[] = {
      "{}",
      "{\"adapters\":[],\"format\":\"x\",\"kept_base\":{},\"version\":1}",
      "{\"adapters\":[],\"format\":\"modelpkg-adapters\",\"kept_base\":{},\"version\":2}",
      "{\"adapters\":[],\"format\":\"modelpkg-adapters\",\"kept_base\":{\"a.bin\":{\"file\":\"../etc/passwd\","
      "\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"sidecar\":null}},\"version\":1}",
      "{\"adapters\":[{\"entries\":[],\"evidence\":\"\",\"file\":\"other.safetensors\",\"merged_at\":\"\",\"orientation\":"
      "\"no_transpose\",\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"size\":1}],"
      "\"format\":\"modelpkg-adapters\",\"kept_base\":{},\"version\":1}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_t *out = NULL;
    mpk_error err;
    assert_int_not_equal(mpk_mt_members_parse(bad[i], strlen(bad[i]), "m.json", &out, &err), 0);
    assert_null(out);
    assert_string_equal(err.file, "m.json");
  }
  const char *good = "{\"adapters\":[],\"format\":\"modelpkg-adapters\",\"kept_base\":{},\"version\":1}";
  json_t *out = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_members_parse(good, strlen(good), "m.json", &out, &err), 0);
  json_decref(out);
}

/* ---------------------------------------------------------------- restore */

static void test_restore_from_kept_base(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  build(root);
  mpk_error err;
  if (do_merge(root, 1, &err)) fail_msg("merge: %s", tu_err(&err));
  /* the source is unreachable: a kept base needs none */
  mpk_mt_restore_report *r;
  if (do_restore(root, "/nonexistent/source", &r, &err)) fail_msg("restore: %s", tu_err(&err));
  assert_true(r->was_merged);
  assert_true(r->written);
  assert_int_equal(r->n_files, 2 * N);
  assert_string_equal(r->files[0].from, "kept base");
  assert_int_equal(r->n_adapters, 1);
  mpk_mt_restore_report_free(r);
  assert_true(all_shipped(root));
  assert_int_equal(device_files(root), 0);
  gate_ready(root);
  /* restoring again: nothing to do, nothing changed */
  if (do_restore(root, NULL, &r, &err)) fail_msg("restore again: %s", tu_err(&err));
  assert_false(r->was_merged);
  assert_false(r->written);
  assert_non_null(strstr(r->notes[0], "nothing to restore"));
  mpk_mt_restore_report_free(r);
  /* and the restored package merges again, to the same bytes */
  if (do_merge(root, 0, &err)) fail_msg("merge after restore: %s", tu_err(&err));
  assert_true(none_shipped(root));
  tu_sh("rm -rf '%s'", root);
}

static void test_restore_refetch(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  build(root);
  mpk_error err;
  if (do_merge(root, 0, &err)) fail_msg("merge: %s", tu_err(&err));
  assert_false(exists(path_in(root, "t0.MatMul.weight.bin" MPK_MT_KEPT_SUFFIX)));
  tu_sh("cd '%s' && sha256sum *.bin *.sha256 .modelpkg-* > '%s/merged.sums'", fx_inference(root), root);
  /* no kept base and no install source (a package, not an installed tree): refused, unchanged */
  mpk_mt_restore_report *r;
  assert_int_equal(do_restore(root, NULL, &r, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "--source"));
  assert_null(r);
  tu_sh("cd '%s' && sha256sum --quiet -c '%s/merged.sums'", fx_inference(root), root);
  /* a source whose tensor is not the shipped bytes (same size): refused before anything changes */
  char bad[700];
  snprintf(bad, sizeof bad, "%s/badsrc", root);
  tu_sh("cp -a '%s/pristine' '%s' && printf 'XXXX' | dd of='%s/variants/cpu-fp16/inference/t1.MatMul.weight.bin' "
        "bs=1 seek=8 conv=notrunc 2>/dev/null",
        root, bad, bad);
  assert_int_equal(do_restore(root, bad, &r, &err), MPK_EMISMATCH);
  if (!strstr(tu_err(&err), "t1.MatMul.weight.bin") || !strstr(err.message, "shipped digest")) fail_msg("%s", tu_err(&err));
  assert_null(r);
  tu_sh("cd '%s' && sha256sum --quiet -c '%s/merged.sums'", fx_inference(root), root);
  gate_ready(root);
  /* the pristine directory source: every tensor back, byte for byte */
  char src[700];
  snprintf(src, sizeof src, "%s/pristine", root);
  if (do_restore(root, src, &r, &err)) fail_msg("restore: %s", tu_err(&err));
  assert_true(r->written);
  assert_non_null(strstr(r->files[0].from, "re-fetched from"));
  mpk_mt_restore_report_free(r);
  assert_true(all_shipped(root));
  assert_int_equal(device_files(root), 0);
  /* the stage it downloaded into holds no tensor afterwards */
  char staged[800];
  snprintf(staged, sizeof staged, "%s/.staging/pkg/new", root);
  assert_false(exists(staged));
  gate_ready(root);
  tu_sh("rm -rf '%s'", root);
}

/* A crash at every durable step of a restore (and of its cleanup): the load gate finds one whole
   version — every tensor merged with its record, or every tensor shipped — and the next restore
   completes. */
static void test_restore_crash(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  build(root);
  char merged[700];
  snprintf(merged, sizeof merged, "%s/merged", root);
  mpk_error err;
  if (do_merge(root, 1, &err)) fail_msg("merge: %s", tu_err(&err));
  tu_sh("cp -a '%s' '%s'", fx_pkg(root), merged);
  int n_old = 0, n_new = 0;
  static const int steps[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 100, 101, 102};
  for (size_t s = 0; s < sizeof steps / sizeof *steps; s++) {
    tu_sh("rm -rf '%s' && cp -a '%s' '%s'", fx_pkg(root), merged, fx_pkg(root));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      mpk_mt_restore_options o = MPK_MT_RESTORE_OPTIONS_INIT;
      mpk_mt_restore_report *r = NULL;
      mpk_error e;
      int rc = mpk_mt_restore_until(fx_pkg(root), &o, steps[s], &r, &e);
      _exit(rc == MPK_TXN_STOPPED ? 3 : rc ? 1 : 0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && (WEXITSTATUS(st) == 3 || WEXITSTATUS(st) == 0));
    gate_ready(root); /* recovers first */
    bool shipped = all_shipped(root), still = none_shipped(root);
    if (!shipped && !still) fail_msg("step %d: a mix of shipped and merged tensors", steps[s]);
    if (still) {
      n_old++;
      assert_true(exists(path_in(root, MPK_MT_MERGE_RECORD))); /* merged, as recorded */
    } else {
      n_new++;
    }
    mpk_mt_restore_report *r;
    if (do_restore(root, NULL, &r, &err)) fail_msg("step %d: the next restore: %s", steps[s], tu_err(&err));
    mpk_mt_restore_report_free(r);
    assert_true(all_shipped(root));
    if (device_files(root)) {
      tu_sh("ls -A '%s'", fx_inference(root));
      fail_msg("step %d: device files left", steps[s]);
    }
  }
  assert_true(n_old > 0 && n_new > 0);
  tu_sh("rm -rf '%s'", root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_membership_and_keep_base),
      cmocka_unit_test(test_membership_strict),
      cmocka_unit_test(test_restore_from_kept_base),
      cmocka_unit_test(test_restore_refetch),
      cmocka_unit_test(test_restore_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
