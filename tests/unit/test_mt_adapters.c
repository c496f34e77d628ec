/* Adapters as members of the merged model (docs/mt-merge.md "Membership", docs/mt-restore.md):
   the merge records its adapter and (--keep-base) the shipped tensors in its own transaction;
   mt restore puts the shipped bytes back from the kept base or re-fetched from a source, verified
   before anything is replaced, and a crash at any durable step of it leaves one whole version. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/txn.h"
#include "mt/merge/merge.h"
#if MPK_WITH_FETCH
#include "mt/install/install.h"
#endif
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

#if MPK_WITH_FETCH /* a re-fetch and installs need the fetch component (docs/components.md) */
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
#endif

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


/* ---------------------------------------------------------------- installed trees and updates */

#define REPO "org/Tiny"

#if MPK_WITH_FETCH
static const char *cache_of(const char *root) {
  static char b[700];
  snprintf(b, sizeof b, "%s/cache", root);
  return b;
}

static const char *tree_of(const char *root) {
  static char b[720];
  snprintf(b, sizeof b, "%s/cache/org__Tiny", root);
  return b;
}

static const char *const features[] = {"inference", "train"};

static int install(const char *root, const char *src, const mpk_mt_install_test *t, mpk_mt_install_result *res,
                   mpk_error *err) {
  mpk_mt_install_options o = MPK_MT_INSTALL_OPTIONS_INIT;
  o.repo_id = REPO;
  o.cache_dir = cache_of(root);
  o.variant = "cpu-fp16";
  o.features = features;
  o.n_features = 2;
  o.jobs = 2;
  mpk_error_clear(err);
  return mpk_mt_install_ex(src, &o, t, res, err);
}

/* The three tensors of an inference directory, concatenated (malloc'ed). */
static uint8_t *tensors_of(const char *inf, size_t *len) {
  uint8_t *all = NULL;
  *len = 0;
  for (int i = 0; i < N; i++) {
    char p[900];
    snprintf(p, sizeof p, "%s/t%d.MatMul.weight.bin", inf, i);
    size_t l;
    uint8_t *b = tu_read_file(p, &l);
    assert_non_null(b);
    all = realloc(all, *len + l);
    memcpy(all + *len, b, l);
    *len += l;
    free(b);
  }
  return all;
}

static bool tensors_equal(const char *inf, const uint8_t *want, size_t want_len) {
  size_t l;
  uint8_t *got = tensors_of(inf, &l);
  bool same = l == want_len && memcmp(got, want, l) == 0;
  free(got);
  return same;
}

static void gate_ready_at(const char *inf) {
  char map_path[900];
  snprintf(map_path, sizeof map_path, "%s/weight_handoff_map.json", inf);
  mpk_mt_handoff *map = NULL;
  mpk_error err;
  if (mpk_mt_handoff_load(map_path, &map, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_gate_report *g = NULL;
  if (mpk_mt_load_gate(inf, map, NULL, &g, &err)) fail_msg("gate: %s", tu_err(&err));
  for (size_t i = 0; i < g->n_problems; i++) print_error("gate: %s\n", tu_err(&g->problems[i]));
  assert_true(g->ready);
  mpk_mt_gate_report_free(g);
  mpk_mt_handoff_free(map);
}

/* A merge into an installed tree (the lead's mt tree) records its adapter there; mt restore
   re-fetches the shipped bytes from the install record's source, through the repo's stage. */
static void test_installed_merge_restore(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  build(root);
  mpk_error err;
  mpk_mt_install_result res;
  if (install(root, fx_pkg(root), NULL, &res, &err)) fail_msg("install: %s", tu_err(&err));
  assert_int_equal(res.n_adapters, 0);
  mpk_mt_install_result_free(&res);
  char inf[800], pinf[800];
  snprintf(inf, sizeof inf, "%s/inference", tree_of(root));
  snprintf(pinf, sizeof pinf, "%s/pristine/variants/cpu-fp16/inference", root);
  size_t shipped_len;
  uint8_t *shipped = tensors_of(pinf, &shipped_len);
  mpk_mt_merge_options o = {.struct_size = sizeof o, .adapter = fx_adapter(root), .workers = 2};
  mpk_mt_merge_report *r = NULL;
  if (mpk_mt_merge(tree_of(root), &o, &r, &err)) fail_msg("merge installed: %s", tu_err(&err));
  mpk_mt_merge_report_free(r);
  assert_false(tensors_equal(inf, shipped, shipped_len));
  char members[900];
  snprintf(members, sizeof members, "%s/%s", inf, MPK_MT_MEMBERS);
  assert_true(exists(members));
  /* a writer holding the repo's lock (an installer) makes the restore fail at once, changing nothing */
  mpk_fetch_stage *held = NULL;
  assert_int_equal(mpk_mt_tree_lock(tree_of(root), 0, &held, &err), 0);
  mpk_mt_restore_options ro = MPK_MT_RESTORE_OPTIONS_INIT;
  mpk_mt_restore_report *rr = NULL;
  assert_int_equal(mpk_mt_restore(tree_of(root), &ro, &rr, &err), MPK_EIO);
  mpk_fetch_stage_close(held);
  assert_true(exists(members));
  /* no kept base: re-fetched from the install record's source */
  if (mpk_mt_restore(tree_of(root), &ro, &rr, &err)) fail_msg("restore installed: %s", tu_err(&err));
  assert_non_null(strstr(rr->files[0].from, fx_pkg(root)));
  mpk_mt_restore_report_free(rr);
  assert_true(tensors_equal(inf, shipped, shipped_len));
  assert_false(exists(members));
  gate_ready_at(inf);
  char staging[900];
  snprintf(staging, sizeof staging, "%s/.staging/org__Tiny", cache_of(root));
  tu_sh("test \"$(ls -A '%s')\" = lock", staging);
  free(shipped);
  tu_sh("rm -rf '%s'", root);
}

/* Version 2 of the package at root/v2: other shipped weights (another seed), the same entries, or
   entry 1 with another shape. Returns the v2 fixture root. */
static const char *build_v2(const char *root, bool reshaped) {
  static char v2[700];
  snprintf(v2, sizeof v2, "%s/v2", root);
  tu_sh("mkdir -p '%s'", v2);
  fx_entry es[N];
  memcpy(es, entries, sizeof es);
  if (reshaped) es[1].cols = es[1].in = 32;
  fx_options fo = {.alpha = 8, .rank = 4, .seed = 99};
  fx_build(v2, es, N, &fo);
  mpk_mt_build_input in = {0};
  mpk_mt_build_result res = {0};
  mpk_error err;
  if (mpk_mt_build(fx_pkg(v2), &in, &res, &err)) fail_msg("reseal v2: %s", tu_err(&err));
  mpk_mt_build_result_free(&res);
  return v2;
}

/* What v2 merged with v1's adapter is: v2's package merged directly (a copy). */
static uint8_t *expected_v2_merged(const char *root, const char *v2, size_t *len) {
  char copy[800], cinf[900];
  snprintf(copy, sizeof copy, "%s/v2merged", root);
  tu_sh("rm -rf '%s' && cp -a '%s' '%s'", copy, fx_pkg(v2), copy);
  mpk_mt_merge_options o = {.struct_size = sizeof o, .adapter = fx_adapter(root), .workers = 2};
  mpk_mt_merge_report *r = NULL;
  mpk_error err;
  if (mpk_mt_merge(copy, &o, &r, &err)) fail_msg("merge v2 copy: %s", tu_err(&err));
  mpk_mt_merge_report_free(r);
  snprintf(cinf, sizeof cinf, "%s/variants/cpu-fp16/inference", copy);
  return tensors_of(cinf, len);
}

static void merge_installed(const char *root, int keep_base) {
  mpk_mt_merge_options o = {.struct_size = sizeof o, .adapter = fx_adapter(root), .workers = 2, .keep_base = keep_base};
  mpk_mt_merge_report *r = NULL;
  mpk_error err;
  if (mpk_mt_merge(tree_of(root), &o, &r, &err)) fail_msg("merge installed: %s", tu_err(&err));
  mpk_mt_merge_report_free(r);
}

static void test_update_reapplies(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  build(root);
  mpk_error err;
  mpk_mt_install_result res;
  if (install(root, fx_pkg(root), NULL, &res, &err)) fail_msg("install v1: %s", tu_err(&err));
  mpk_mt_install_result_free(&res);
  merge_installed(root, 1);
  const char *v2 = build_v2(root, false);
  size_t want_len;
  uint8_t *want = expected_v2_merged(root, v2, &want_len);
  /* the user's adapter file is gone: the recorded copy is what is re-applied */
  tu_sh("mv '%s' '%s.moved'", fx_adapter(root), fx_adapter(root));
  if (install(root, fx_pkg(v2), NULL, &res, &err)) fail_msg("install v2: %s", tu_err(&err));
  assert_int_equal(res.n_adapters, 1);
  assert_int_equal(res.adapters[0].reapplied, 1);
  assert_null(res.adapters[0].reason);
  assert_true(res.replaced);
  mpk_mt_install_result_free(&res);
  char inf[800];
  snprintf(inf, sizeof inf, "%s/inference", tree_of(root));
  assert_true(tensors_equal(inf, want, want_len));
  gate_ready_at(inf);
  /* kept base follows: the restore needs no download and gives v2's shipped bytes */
  char v2inf[900];
  snprintf(v2inf, sizeof v2inf, "%s/variants/cpu-fp16/inference", fx_pkg(v2));
  size_t v2_len;
  uint8_t *v2_shipped = tensors_of(v2inf, &v2_len);
  mpk_mt_restore_options ro = MPK_MT_RESTORE_OPTIONS_INIT;
  ro.source = "/nonexistent";
  mpk_mt_restore_report *rr = NULL;
  if (mpk_mt_restore(tree_of(root), &ro, &rr, &err)) fail_msg("restore v2: %s", tu_err(&err));
  assert_string_equal(rr->files[0].from, "kept base");
  mpk_mt_restore_report_free(rr);
  assert_true(tensors_equal(inf, v2_shipped, v2_len));
  free(v2_shipped);
  free(want);
  tu_sh("rm -rf '%s'", root);
}

static void test_update_changed_shape(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  build(root);
  mpk_error err;
  mpk_mt_install_result res;
  if (install(root, fx_pkg(root), NULL, &res, &err)) fail_msg("install v1: %s", tu_err(&err));
  mpk_mt_install_result_free(&res);
  merge_installed(root, 0);
  const char *v2 = build_v2(root, true);
  if (install(root, fx_pkg(v2), NULL, &res, &err)) fail_msg("install v2: %s", tu_err(&err));
  assert_int_equal(res.n_adapters, 1);
  assert_int_equal(res.adapters[0].reapplied, 0);
  const char *why = res.adapters[0].reason;
  if (!why || !strstr(why, "backbone.model.layers.0.v.base_layer") || !strstr(why, "was float16 [8, 24], now float16 [8, 32]"))
    fail_msg("reason: %s", why ? why : "(none)");
  mpk_mt_install_result_free(&res);
  /* the base installed: v2's shipped bytes, no record, no membership */
  char inf[800], v2inf[900];
  snprintf(inf, sizeof inf, "%s/inference", tree_of(root));
  snprintf(v2inf, sizeof v2inf, "%s/variants/cpu-fp16/inference", fx_pkg(v2));
  size_t v2_len;
  uint8_t *v2_shipped = tensors_of(v2inf, &v2_len);
  assert_true(tensors_equal(inf, v2_shipped, v2_len));
  char rec[900];
  snprintf(rec, sizeof rec, "%s/%s", inf, MPK_MT_MERGE_RECORD);
  assert_false(exists(rec));
  snprintf(rec, sizeof rec, "%s/%s", inf, MPK_MT_MEMBERS);
  assert_false(exists(rec));
  gate_ready_at(inf);
  free(v2_shipped);
  tu_sh("rm -rf '%s'", root);
}

/* An update over a merged install stopped at every durable step of its commit (step 1 comes after
   the re-application into new/), and SIGKILLed at instants spread over the whole run: the cache
   holds the old merged model or the new merged model, recovery finishes a marked commit, and the
   next install completes with the adapter re-applied (a half-merged new/ is re-hashed, re-fetched,
   its membership files removed as strays). */
static void test_update_crash(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  build(root);
  mpk_error err;
  mpk_mt_install_result res;
  if (install(root, fx_pkg(root), NULL, &res, &err)) fail_msg("install v1: %s", tu_err(&err));
  mpk_mt_install_result_free(&res);
  merge_installed(root, 0);
  char inf[800], saved[800];
  snprintf(inf, sizeof inf, "%s/inference", tree_of(root));
  snprintf(saved, sizeof saved, "%s/cache.v1merged", root);
  size_t old_len, new_len;
  uint8_t *old_merged = tensors_of(inf, &old_len);
  tu_sh("cp -a '%s' '%s'", cache_of(root), saved);
  const char *v2 = build_v2(root, false);
  uint8_t *new_merged = expected_v2_merged(root, v2, &new_len);
  int n_old = 0, n_new = 0;
  for (int k = 1; k <= 24; k++) {
    tu_sh("rm -rf '%s' && cp -a '%s' '%s'", cache_of(root), saved, cache_of(root));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      mpk_mt_install_test t = {.stop_after = k <= 9 ? k : 0};
      mpk_error e;
      int rc = install(root, fx_pkg(v2), &t, NULL, &e);
      _exit(rc == MPK_MT_INSTALL_STOPPED ? 3 : rc ? 1 : 0);
    }
    if (k > 9) { /* SIGKILL at an instant: 0.5 ms steps over the run */
      struct timespec ts = {0, (long)(k - 10) * 500000L};
      nanosleep(&ts, NULL);
      kill(pid, SIGKILL);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 1) fail_msg("step %d: the install failed", k);
    if (k == 1) { /* stopped after the re-application, before the marker: new/ is merged, uncommitted */
      char staged[900];
      snprintf(staged, sizeof staged, "%s/.staging/org__Tiny/new/inference/%s", cache_of(root), MPK_MT_MEMBERS);
      assert_true(exists(staged));
    }
    int recovered;
    if (mpk_mt_install_recover(cache_of(root), REPO, &recovered, &err)) fail_msg("recover: %s", tu_err(&err));
    gate_ready_at(inf);
    if (tensors_equal(inf, old_merged, old_len)) n_old++;
    else if (tensors_equal(inf, new_merged, new_len)) n_new++;
    else fail_msg("step %d: the tree is neither the old merged model nor the new one", k);
    if (install(root, fx_pkg(v2), NULL, &res, &err)) fail_msg("step %d: the next install: %s", k, tu_err(&err));
    assert_int_equal(res.n_adapters, 1);
    assert_int_equal(res.adapters[0].reapplied, 1);
    mpk_mt_install_result_free(&res);
    assert_true(tensors_equal(inf, new_merged, new_len));
    gate_ready_at(inf);
  }
  assert_true(n_old > 0 && n_new > 0);
  free(old_merged);
  free(new_merged);
  tu_sh("rm -rf '%s'", root);
}

#endif /* MPK_WITH_FETCH */

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_membership_and_keep_base),
      cmocka_unit_test(test_membership_strict),
      cmocka_unit_test(test_restore_from_kept_base),
      cmocka_unit_test(test_restore_crash),
#if MPK_WITH_FETCH
      cmocka_unit_test(test_restore_refetch),
      cmocka_unit_test(test_installed_merge_restore),
      cmocka_unit_test(test_update_reapplies),
      cmocka_unit_test(test_update_changed_shape),
      cmocka_unit_test(test_update_crash),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
