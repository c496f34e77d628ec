/* An installed model is a package to every command (docs/mt-installed.md): check, the load gate,
   the graph report and the default-variant rule on a tree mt install wrote, on one in the reference
   installer's layout with only its install_record.json, and on a hand-pushed tree with no record;
   the records' rules (both present must agree); install applying the manifest's rules first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define TINY MPK_SOURCE_DIR "/examples/mt-tiny"

static const char *tiny(void) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s", TINY);
  return buf;
}

/* mt install of `variant` (NULL: the default rule) into cache/org__Tiny; returns the variant. */
static char *install(const char *source, const char *cache, const char *variant, const char *const *features, size_t nf) {
  mpk_mt_install_options o = MPK_MT_INSTALL_OPTIONS_INIT;
  o.repo_id = "org/Tiny";
  o.cache_dir = cache;
  o.variant = variant;
  o.features = features;
  o.n_features = nf;
  mpk_mt_install_result r;
  mpk_error err;
  int rc = mpk_mt_install(source, &o, &r, &err);
  if (rc) fail_msg("install: %s", tu_err(&err));
  char *v = strdup(r.variant);
  mpk_mt_install_result_free(&r);
  return v;
}

static mpk_mt_report *check(const char *dir, const char *variant) {
  mpk_mt_check_options o = MPK_MT_CHECK_OPTIONS_INIT;
  o.variant = variant;
  mpk_mt_report *r = NULL;
  mpk_error err;
  if (mpk_mt_check(dir, &o, &r, &err)) fail_msg("check: %s", tu_err(&err));
  return r;
}

static void print_problems(const mpk_mt_report *r) {
  for (size_t i = 0; i < r->n_problems; i++) print_message("problem: %s: %s\n", r->problems[i].file, r->problems[i].message);
}

static bool has_problem(const mpk_mt_report *r, const char *file_part, const char *msg_part) {
  for (size_t i = 0; i < r->n_problems; i++)
    if (strstr(r->problems[i].file, file_part) && strstr(r->problems[i].message, msg_part)) return true;
  return false;
}

/* A tree mt install wrote: check passes on its variant (not the manifest's default), the gate and
   the graph report find the flattened inference/, another variant is refused by name. */
static void test_installed_tree(void **state) {
  (void)state;
  char cache[4096], tree[4200];
  snprintf(cache, sizeof cache, "%s/cache", tu_tmpdir());
  snprintf(tree, sizeof tree, "%s/org__Tiny", cache);
  static const char *const feats[] = {"inference"};
  char *v = install(tiny(), cache, "cpu-int4", feats, 1);
  assert_string_equal(v, "cpu-int4");
  free(v);

  mpk_mt_report *r = check(tree, NULL);
  print_problems(r);
  assert_int_equal(r->n_problems, 0);
  assert_int_equal(r->installed, 1);
  assert_int_equal(r->n_variants, 1);
  assert_string_equal(r->variants[0], "cpu-int4");
  assert_true(r->n_files_hashed > 5);
  assert_int_equal(r->n_unlisted, 0);
  mpk_mt_report_free(r);

  mpk_mt_variant_gate *g = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_variant_gate_open(tree, NULL, NULL, &g, &err), 0);
  assert_string_equal(g->variant, "cpu-int4");
  assert_int_equal(g->map_absent, 0);
  assert_non_null(g->report);
  assert_int_equal(g->report->ready, 1);
  assert_true(g->report->n_tensors > 0);
  assert_non_null(strstr(g->report->tensors[0].file, "/org__Tiny/inference/"));
  mpk_mt_variant_gate_free(g);

  assert_int_equal(mpk_mt_variant_gate_open(tree, "cpu-fp16", NULL, &g, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "holds variant \"cpu-int4\", not \"cpu-fp16\""));
  assert_non_null(strstr(err.file, "modelpkg_install.json"));

  mpk_mt_graph_report *gr = NULL;
#if MPK_WITH_ONNX
  assert_int_equal(mpk_mt_graph_report_open(tree, NULL, NULL, &gr, &err), 0);
  assert_int_equal(gr->graph_present, 1);
  assert_non_null(strstr(gr->graph_file, "/org__Tiny/inference/model.onnx"));
#else /* the graph reader is the onnx component (docs/components.md) */
  assert_int_equal(mpk_mt_graph_report_open(tree, NULL, NULL, &gr, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "built without the onnx component"));
#endif
  mpk_mt_graph_report_free(gr);

  mpk_mt_installed *in = NULL;
  assert_int_equal(mpk_mt_installed_open(tree, &in, &err), 0);
  assert_string_equal(in->repo_id, "org/Tiny");
  assert_string_equal(in->variant, "cpu-int4");
  assert_int_equal(in->record, MPK_MT_RECORD_MODELPKG);
  assert_int_equal(in->n_features, 1);
  assert_true(in->installed_at_ms > 1700000000000LL);
  assert_non_null(in->install_id);
  assert_string_equal(in->source, tiny());
  mpk_mt_manifest *m = NULL;
  char mf[4400];
  snprintf(mf, sizeof mf, "%s/" MPK_MT_MANIFEST_FILENAME, tree);
  assert_int_equal(mpk_mt_manifest_load(mf, &m, &err), 0);
  assert_string_equal(mpk_mt_default_variant(m, in), "cpu-int4");
  assert_string_equal(mpk_mt_default_variant(m, NULL), m->default_variant);
  mpk_mt_manifest_free(m);
  mpk_mt_installed_free(in);

  /* A tensor changed in the tree: check names its installed path; so does a stray file. */
  char bin[4400];
  snprintf(bin, sizeof bin, "%s/inference/extra.bin", tree);
  FILE *f = fopen(bin, "w");
  fputs("x", f);
  fclose(f);
  tu_sh("f=$(ls '%s'/inference/*.weight.bin | head -n 1); printf 'Z' | dd of=\"$f\" bs=1 seek=0 conv=notrunc 2>/dev/null",
        tree);
  r = check(tree, NULL);
  print_problems(r);
  assert_true(has_problem(r, "/org__Tiny/inference/", "does not equal"));
  assert_int_equal(r->n_unlisted, 1);
  assert_string_equal(r->unlisted[0], "inference/extra.bin");
  mpk_mt_report_free(r);
}

/* The reference installer's layout (ModelPackageInstaller.kt) with only its install_record.json, as
   Gson writes it: checked (core files it does not copy are out of scope), gated; the record read. */
static void make_reference_tree(const char *tree, const char *variant, const char *record) {
  tu_sh("set -e; mkdir -p '%s'; cd '%s'; for s in inference train embedding; do "
        "[ -d variants/%s/$s ] && cp -r variants/%s/$s '%s'/$s; done; cp -r shared/tokenizer '%s'/tokenizer; "
        "cp " MPK_MT_MANIFEST_FILENAME " '%s'/; cp variants/%s/checksums.json '%s'/",
        tree, tiny(), variant, variant, tree, tree, tree, variant, tree);
  if (record) {
    char p[4400];
    snprintf(p, sizeof p, "%s/" MPK_MT_REFERENCE_INSTALL_RECORD, tree);
    FILE *f = fopen(p, "w");
    fputs(record, f);
    fclose(f);
  }
}

static void test_reference_tree(void **state) {
  (void)state;
  char tree[4200];
  snprintf(tree, sizeof tree, "%s/refcache/org__Tiny", tu_tmpdir());
  make_reference_tree(tree, "cpu-int4",
                      "{\"repoId\":\"org/Tiny\",\"variantId\":\"cpu-int4\",\"features\":[\"core\",\"inference\"],"
                      "\"installedAtEpochMs\":1764633600000}");
  mpk_mt_report *r = check(tree, NULL);
  print_problems(r);
  assert_int_equal(r->n_problems, 0);
  assert_int_equal(r->installed, 1);
  assert_string_equal(r->variants[0], "cpu-int4");
  mpk_mt_report_free(r);

  mpk_mt_installed *in = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_installed_open(tree, &in, &err), 0);
  assert_int_equal(in->record, MPK_MT_RECORD_REFERENCE);
  assert_string_equal(in->repo_id, "org/Tiny");
  assert_string_equal(in->variant, "cpu-int4");
  assert_int_equal(in->installed_at_ms, 1764633600000LL);
  assert_int_equal(in->n_features, 2);
  assert_string_equal(in->features[1], "inference");
  assert_null(in->source);
  mpk_mt_installed_free(in);

  mpk_mt_variant_gate *g = NULL;
  assert_int_equal(mpk_mt_variant_gate_open(tree, NULL, NULL, &g, &err), 0);
  assert_string_equal(g->variant, "cpu-int4");
  assert_int_equal(g->report->ready, 1);
  mpk_mt_variant_gate_free(g);

  /* A modelpkg record beside it that names another variant: the two disagree, nothing is trusted. */
  char own[4400];
  snprintf(own, sizeof own, "%s/" MPK_MT_INSTALL_RECORD, tree);
  FILE *f = fopen(own, "w");
  fputs("{\"installId\":\"x\",\"repoId\":\"org/Tiny\",\"variant\":\"cpu-fp16\",\"features\":[\"inference\"]}", f);
  fclose(f);
  assert_int_equal(mpk_mt_installed_open(tree, &in, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "the tree's two install records disagree"));
  r = check(tree, NULL);
  assert_true(has_problem(r, MPK_MT_REFERENCE_INSTALL_RECORD, "disagree"));
  mpk_mt_report_free(r);
  unlink(own);

  /* A record of the wrong shape is a problem naming the field. */
  make_reference_tree(tree, "cpu-int4",
                      "{\"repoId\":\"org/Tiny\",\"variantId\":\"cpu-int4\",\"installedAtEpochMs\":\"yesterday\"}");
  assert_int_equal(mpk_mt_installed_open(tree, &in, &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/installedAtEpochMs");

  /* checksums.json whose hub-path key disagrees with the manifest */
  make_reference_tree(tree, "cpu-int4",
                      "{\"repoId\":\"org/Tiny\",\"variantId\":\"cpu-int4\",\"features\":[\"inference\"],"
                      "\"installedAtEpochMs\":1}");
  tu_sh("cd '%s' && /usr/bin/python3 -c \"import json;d=json.load(open('checksums.json'));"
        "k=sorted(d)[0];d[k]='0'*64;json.dump(d,open('checksums.json','w'),indent=2)\"",
        tree);
  r = check(tree, NULL);
  assert_true(has_problem(r, "checksums.json", "the two disagree"));
  mpk_mt_report_free(r);
}

/* No record at all (a hand-pushed tree): installed, the manifest's defaultVariant, the repo id from
   the directory name ("__" → "/", the reference's fallback). */
static void test_hand_pushed_tree(void **state) {
  (void)state;
  char tree[4200];
  snprintf(tree, sizeof tree, "%s/pushcache/org__Tiny", tu_tmpdir());
  mpk_mt_manifest *m = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_manifest_load(tiny(), &m, &err), 0);
  make_reference_tree(tree, m->default_variant, NULL);
  mpk_mt_installed *in = NULL;
  assert_int_equal(mpk_mt_installed_open(tree, &in, &err), 0);
  assert_int_equal(in->record, MPK_MT_RECORD_NONE);
  assert_null(in->variant);
  assert_string_equal(in->repo_id, "org/Tiny");
  assert_string_equal(mpk_mt_default_variant(m, in), m->default_variant);
  mpk_mt_installed_free(in);
  mpk_mt_report *r = check(tree, NULL);
  print_problems(r);
  assert_int_equal(r->n_problems, 0);
  assert_int_equal(r->installed, 1);
  assert_string_equal(r->variants[0], m->default_variant);
  mpk_mt_report_free(r);
  /* a package is not an installed model */
  assert_int_equal(mpk_mt_installed_open(tiny(), &in, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "not an installed model"));
  mpk_mt_manifest_free(m);
}

/* One default rule: install with no variant and no device takes defaultVariant; over an install,
   the recorded variant. Install applies the manifest's rules before a byte is fetched. */
static void test_install_default_and_rules(void **state) {
  (void)state;
  char cache[4096], src[4096];
  snprintf(cache, sizeof cache, "%s/defcache", tu_tmpdir());
  mpk_mt_manifest *m = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_manifest_load(tiny(), &m, &err), 0);
  char *v = install(tiny(), cache, NULL, NULL, 0);
  assert_string_equal(v, m->default_variant);
  free(v);
  const char *other = strcmp(m->default_variant, "cpu-int4") == 0 ? "cpu-fp16" : "cpu-int4";
  free(install(tiny(), cache, other, NULL, 0));
  v = install(tiny(), cache, NULL, NULL, 0);
  assert_string_equal(v, other);
  free(v);
  mpk_mt_manifest_free(m);

  /* A variant that claims "rag" without an embedding path: check's rule, applied by install before
     it fetches anything; the cache is not touched. */
  snprintf(src, sizeof src, "%s/badsrc", tu_tmpdir());
  tu_sh("cp -r '%s' '%s'", tiny(), src);
  char mpath[4200];
  snprintf(mpath, sizeof mpath, "%s/" MPK_MT_MANIFEST_FILENAME, src);
  json_t *doc = tu_load_json(mpath);
  json_t *vs = json_object_get(doc, "variants");
  for (size_t i = 0; i < json_array_size(vs); i++) {
    json_t *var = json_array_get(vs, i);
    if (strcmp(json_string_value(json_object_get(var, "id")), "cpu-fp16") != 0) continue;
    json_array_append_new(json_object_get(var, "features"), json_string("rag"));
    json_object_del(json_object_get(var, "paths"), "embedding");
  }
  assert_int_equal(json_dump_file(doc, mpath, JSON_INDENT(2)), 0);
  json_decref(doc);
  char fresh[4200];
  snprintf(fresh, sizeof fresh, "%s/badcache", tu_tmpdir());
  mpk_mt_install_options o = MPK_MT_INSTALL_OPTIONS_INIT;
  o.repo_id = "org/Tiny";
  o.cache_dir = fresh;
  o.variant = "cpu-fp16";
  assert_int_equal(mpk_mt_install(src, &o, NULL, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "claims feature \"rag\""));
  assert_non_null(strstr(err.message, "nothing was fetched"));
  char target[4400];
  snprintf(target, sizeof target, "%s/org__Tiny", fresh);
  struct stat st;
  assert_int_not_equal(stat(target, &st), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_installed_tree),
      cmocka_unit_test(test_reference_tree),
      cmocka_unit_test(test_hand_pushed_tree),
      cmocka_unit_test(test_install_default_and_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
