/* mlc install from directory sources (docs/mlc-install.md): a model with a manifest and its library
   (examples/gemma4-audio) and a legacy model generated here (three shards of random bytes with their
   real MD5s) install, and the installed trees pass mpk_mlc_check; a corrupt shard is MPK_EMISMATCH
   naming it, nothing committed; a shard without an MD5, a dataPath with "..", an oversize
   tensor-cache.json, a manifest whose parameter_schema_id disagrees, a library that does not bind, a
   missing tokenizer — each refused before any shard is fetched (no download event at all); a second
   install is a no-op (no FILE_START); a changed shard list installs a new tree, the unchanged shards
   copied from the old one; verify repairs a corrupted installed shard. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <modelpkg/mlc.h>

#include "testutil.h"

#define EXAMPLES MPK_SOURCE_DIR "/examples"

typedef struct events {
  int starts, dones, any;
  int cancel_after_done; /* cancel once this many shards are done (0: never) */
} events;

static int on_event(void *ctx, const mpk_fetch_event *ev) {
  events *e = ctx;
  e->any++;
  if (ev->kind == MPK_FETCH_FILE_START) e->starts++;
  if (ev->kind == MPK_FETCH_FILE_DONE) e->dones++;
  return e->cancel_after_done && e->dones >= e->cancel_after_done;
}

static int install(const char *src, const char *cache, const char *lib, int verify, events *ev,
                   mpk_mlc_install_result *r, mpk_error *err) {
  mpk_mlc_install_options o = MPK_MLC_INSTALL_OPTIONS_INIT;
  o.cache_dir = cache;
  o.lib = lib;
  o.verify = verify;
  o.connections = 2;
  o.on_event = on_event;
  o.ctx = ev;
  int cancel = ev->cancel_after_done;
  memset(ev, 0, sizeof *ev);
  ev->cancel_after_done = cancel;
  mpk_error_clear(err);
  return mpk_mlc_install(src, &o, r, err);
}

/* The installed tree checks: no problem, and with a library, bound. */
static void assert_checks(const char *tree, int bound) {
  mpk_mlc_report *rep = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_check(tree, NULL, &rep, &err), 0);
  for (size_t i = 0; i < rep->n_problems; i++) fprintf(stderr, "problem: %s\n", tu_err(&rep->problems[i]));
  assert_int_equal(rep->n_problems, 0);
  assert_true(rep->weights_verified);
  assert_int_equal(rep->resolved, bound);
  mpk_mlc_report_free(rep);
}

/* A legacy model: the example's chat config, a tokenizer.json, three shards with their MD5s. */
static void make_legacy(const char *dir) {
  tu_sh("set -e; mkdir -p '%s'; cd '%s'; cp '" EXAMPLES "/legacy-no-manifest/mlc-chat-config.json' .;"
        "echo '{\"model\": {\"type\": \"BPE\"}}' > tokenizer.json;"
        "head -c 1048583 /dev/urandom > params_shard_0.bin;"
        "head -c 40000 /dev/urandom > params_shard_1.bin;"
        "head -c 3145728 /dev/urandom > params_shard_2.bin",
        dir, dir);
}

/* tensor-cache.json listing `shards` (space-separated) with their sizes and MD5s. */
static void write_cache(const char *dir, const char *shards) {
  tu_sh("set -e; cd '%s'; { printf '{\"metadata\": {\"ParamSize\": 0, \"ParamBytes\": 0.0}, \"records\": ['; sep='';"
        "  for f in %s; do"
        "    printf '%%s{\"dataPath\": \"%%s\", \"format\": \"raw-shard\", \"nbytes\": %%s, \"records\": [], "
        "\"md5sum\": \"%%s\"}' \"$sep\" \"$f\" \"$(stat -c %%s $f)\" \"$(md5sum $f | cut -d' ' -f1)\"; sep=', ';"
        "  done; printf ']}'; } > tensor-cache.json",
        dir, shards);
}

static void make_gemma(const char *dir) {
  tu_sh("set -e; cp -r '" EXAMPLES "/gemma4-audio' '%s'; echo '{}' > '%s/tokenizer.json'", dir, dir);
}

static int exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static void test_manifest_and_library(void **state) {
  (void)state;
  const char *t = tu_tmpdir();
  char src[4096], cache[4096], lib[4200], tree[4200];
  snprintf(src, sizeof src, "%s/gemma", t);
  snprintf(cache, sizeof cache, "%s/cache", t);
  snprintf(lib, sizeof lib, "%s/lib/gemma4-audio-webgpu.wasm", src);
  make_gemma(src);
  events ev = {0};
  mpk_mlc_install_result r;
  mpk_error err;
  assert_int_equal(install(src, cache, lib, 0, &ev, &r, &err), 0);
  snprintf(tree, sizeof tree, "%s/gemma", cache);
  assert_string_equal(r.tree, tree);
  assert_string_equal(r.library, "gemma4-audio-webgpu.wasm");
  assert_int_equal(r.has_manifest, 1);
  assert_int_equal(r.files, 1);
  assert_int_equal(r.total_bytes, 704);
  assert_int_equal(r.fetched_bytes, 704);
  assert_int_equal(r.unchanged, 0);
  assert_int_equal(ev.starts, 1);
  mpk_mlc_install_result_free(&r);
  tu_sh("set -e; cd '%s'; for f in mlc-model-manifest.json mlc-chat-config.json tensor-cache.json tokenizer.json "
        "params_shard_0.bin; do cmp \"$f\" '%s'/\"$f\"; done; cmp lib/gemma4-audio-webgpu.wasm "
        "'%s/gemma4-audio-webgpu.wasm'; grep -q '\"librarySha256\": \"'$(sha256sum lib/*.wasm | cut -c1-64) "
        "'%s/" MPK_MLC_INSTALL_RECORD "'",
        src, tree, tree, tree);
  assert_checks(tree, 1); /* check binds the library the record names */

  /* the same again: a no-op, nothing fetched */
  assert_int_equal(install(src, cache, lib, 0, &ev, &r, &err), 0);
  assert_int_equal(r.unchanged, 1);
  assert_int_equal(ev.any, 0);
  mpk_mlc_install_result_free(&r);

  /* the installed library changed after the install: check says so */
  tu_sh("printf x >> '%s/gemma4-audio-webgpu.wasm'", tree);
  mpk_mlc_report *rep = NULL;
  assert_int_equal(mpk_mlc_check(tree, NULL, &rep, &err), 0);
  assert_true(rep->n_problems >= 1);
  assert_non_null(strstr(rep->problems[0].message, "changed after the install"));
  mpk_mlc_report_free(rep);
}

static void test_legacy_noop_changed_verify(void **state) {
  (void)state;
  const char *t = tu_tmpdir();
  char src[4096], cache[4096], tree[4200], shard[4300];
  snprintf(src, sizeof src, "%s/legacy", t);
  snprintf(cache, sizeof cache, "%s/cache", t);
  make_legacy(src);
  write_cache(src, "params_shard_0.bin params_shard_1.bin params_shard_2.bin");
  events ev = {0};
  mpk_mlc_install_result r;
  mpk_error err;
  assert_int_equal(install(src, cache, NULL, 0, &ev, &r, &err), 0);
  snprintf(tree, sizeof tree, "%s/legacy", cache);
  assert_int_equal(r.has_manifest, 0);
  assert_int_equal(r.files, 3);
  assert_int_equal(r.total_bytes, 1048583 + 40000 + 3145728);
  assert_int_equal(r.replaced, 0);
  assert_int_equal(ev.starts, 3);
  mpk_mlc_install_result_free(&r);
  assert_checks(tree, 0);
  snprintf(shard, sizeof shard, "%s/" MPK_MLC_MANIFEST_FILENAME, tree);
  assert_false(exists(shard));
  tu_sh("test \"$(ls -A '%s/.staging/legacy')\" = lock", cache);

  /* the second install: a no-op, no FILE_START (nothing fetched, nothing re-hashed) */
  assert_int_equal(install(src, cache, NULL, 0, &ev, &r, &err), 0);
  assert_int_equal(r.unchanged, 1);
  assert_int_equal(r.fetched_bytes, 0);
  assert_int_equal(ev.starts, 0);
  mpk_mlc_install_result_free(&r);

  /* an installed shard corrupted (same size): without verify, still a no-op (nothing re-hashed);
     with verify, found and repaired, the good shards copied from the tree, the bad one fetched */
  snprintf(shard, sizeof shard, "%s/params_shard_1.bin", tree);
  tu_sh("printf 'XXXX' | dd of='%s' bs=1 seek=100 conv=notrunc status=none", shard);
  assert_int_equal(install(src, cache, NULL, 0, &ev, &r, &err), 0);
  assert_int_equal(r.unchanged, 1);
  mpk_mlc_install_result_free(&r);
  assert_int_equal(install(src, cache, NULL, 1, &ev, &r, &err), 0);
  assert_int_equal(r.unchanged, 0);
  assert_int_equal(r.replaced, 1);
  assert_int_equal(r.copied_bytes, 1048583 + 3145728);
  assert_int_equal(r.fetched_bytes, 40000);
  mpk_mlc_install_result_free(&r);
  tu_sh("cmp '%s/params_shard_1.bin' '%s'", src, shard);
  assert_checks(tree, 0);
  assert_int_equal(install(src, cache, NULL, 1, &ev, &r, &err), 0); /* verified, whole: unchanged */
  assert_int_equal(r.unchanged, 1);
  mpk_mlc_install_result_free(&r);

  /* a changed shard list: a new tree; the unchanged shards copied, the new one fetched */
  tu_sh("set -e; cd '%s'; head -c 5000 /dev/urandom > params_shard_3.bin", src);
  write_cache(src, "params_shard_0.bin params_shard_2.bin params_shard_3.bin");
  assert_int_equal(install(src, cache, NULL, 0, &ev, &r, &err), 0);
  assert_int_equal(r.unchanged, 0);
  assert_int_equal(r.replaced, 1);
  assert_int_equal(r.files, 3);
  assert_int_equal(r.copied_bytes, 1048583 + 3145728);
  assert_int_equal(r.fetched_bytes, 5000);
  mpk_mlc_install_result_free(&r);
  assert_false(exists(shard)); /* the old tree's shard 1 is gone with it */
  tu_sh("cmp '%s/params_shard_3.bin' '%s/params_shard_3.bin'", src, tree);
  assert_checks(tree, 0);
}

static void test_corrupt_shard(void **state) {
  (void)state;
  const char *t = tu_tmpdir();
  char src[4096], cache[4096], tree[4200];
  snprintf(src, sizeof src, "%s/m", t);
  snprintf(cache, sizeof cache, "%s/cache", t);
  make_legacy(src);
  write_cache(src, "params_shard_0.bin params_shard_1.bin params_shard_2.bin");
  tu_sh("printf 'XXXX' | dd of='%s/params_shard_2.bin' bs=1 seek=7 conv=notrunc status=none", src);
  events ev = {0};
  mpk_mlc_install_result r;
  mpk_error err;
  assert_int_equal(install(src, cache, NULL, 0, &ev, &r, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.file, "params_shard_2.bin"));
  assert_non_null(strstr(err.message, "MD5"));
  assert_null(r.tree);
  snprintf(tree, sizeof tree, "%s/m", cache);
  assert_false(exists(tree)); /* nothing committed */
}

/* Each refused before any shard is fetched: no download event, no tree, and the code expected. */
static void refused(const char *src, const char *lib, int code, const char *needle) {
  char cache[4200], tree[4300];
  snprintf(cache, sizeof cache, "%s.cache", src);
  events ev = {0};
  mpk_mlc_install_result r;
  mpk_error err;
  int rc = install(src, cache, lib, 0, &ev, &r, &err);
  if (rc != code || !strstr(tu_err(&err), needle)) fail_msg("%s: got %d: %s", src, rc, tu_err(&err));
  assert_int_equal(ev.any, 0);
  const char *slash = strrchr(src, '/');
  snprintf(tree, sizeof tree, "%s/%s", cache, slash + 1);
  assert_false(exists(tree));
}

static void test_refused_before_any_shard(void **state) {
  (void)state;
  const char *t = tu_tmpdir();
  char d[4096], f[4300], lib[4300];
  /* a shard without an MD5: fail closed */
  snprintf(d, sizeof d, "%s/nomd5", t);
  make_legacy(d);
  write_cache(d, "params_shard_0.bin params_shard_1.bin");
  tu_sh("cd '%s' && sed -i 's/, \"md5sum\": \"[0-9a-f]*\"//2' tensor-cache.json", d);
  refused(d, NULL, MPK_EMALFORMED, "shard params_shard_1.bin has no md5sum");
  /* a dataPath leaving the base */
  snprintf(d, sizeof d, "%s/dotdot", t);
  make_legacy(d);
  write_cache(d, "params_shard_0.bin params_shard_1.bin");
  snprintf(f, sizeof f, "%s/tensor-cache.json", d);
  tu_replace_in_file(f, "\"params_shard_1.bin\"", "\"../x/params_shard_1.bin\"");
  refused(d, NULL, MPK_EMALFORMED, "must stay inside");
  /* an oversize tensor-cache.json (sparse: nothing is read) */
  snprintf(d, sizeof d, "%s/huge", t);
  make_legacy(d);
  write_cache(d, "params_shard_0.bin");
  tu_sh("truncate -s 70M '%s/tensor-cache.json'", d);
  refused(d, NULL, MPK_ELIMIT, "tensor-cache.json");
  /* a manifest whose parameter_schema_id is not the weights' */
  snprintf(d, sizeof d, "%s/schema", t);
  make_gemma(d);
  snprintf(f, sizeof f, "%s/mlc-model-manifest.json", d);
  tu_replace_in_file(f, "sha256:977290fefd7f05db1e36a3a4df4e99e5f358e8617785ed1bc86a96bb8c2beba6",
                     "sha256:0000000000000000000000000000000000000000000000000000000000000000");
  refused(d, NULL, MPK_EMISMATCH, "parameter_schema_id");
  /* a library whose _metadata does not bind to the manifest */
  snprintf(d, sizeof d, "%s/wronglib", t);
  make_gemma(d);
  snprintf(lib, sizeof lib, EXAMPLES "/mismatched-lib/gemma4-audio-other-weights-webgpu.wasm");
  refused(d, lib, MPK_EMISMATCH, "gemma4-audio-other-weights-webgpu.wasm");
  /* the tokenizer WebLLM loads is listed but missing */
  snprintf(d, sizeof d, "%s/notok", t);
  make_legacy(d);
  write_cache(d, "params_shard_0.bin");
  tu_sh("rm '%s/tokenizer.json'", d);
  refused(d, NULL, MPK_ENOTFOUND, "tokenizer.json");
  /* a tree name that would be the staging area, or leave the cache */
  snprintf(d, sizeof d, "%s/named", t);
  make_legacy(d);
  write_cache(d, "params_shard_0.bin");
  const char *names[] = {".staging", "..", "a/b", ""};
  for (size_t i = 0; i < 4; i++) {
    mpk_mlc_install_options o = MPK_MLC_INSTALL_OPTIONS_INIT;
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/namedcache", t);
    o.cache_dir = cache;
    o.name = names[i];
    mpk_error err;
    assert_int_equal(mpk_mlc_install(d, &o, NULL, &err), MPK_EINVAL);
    assert_false(exists(cache));
  }
}

/* An install cancelled after its first shard leaves no tree; run again, it resumes (the finished
   shard re-hashed, not fetched). A malformed install record in a tree is a problem for check. */
static void test_resume_and_record(void **state) {
  (void)state;
  const char *t = tu_tmpdir();
  char src[4096], cache[4096], tree[4200];
  snprintf(src, sizeof src, "%s/r", t);
  snprintf(cache, sizeof cache, "%s/cache", t);
  make_legacy(src);
  write_cache(src, "params_shard_0.bin params_shard_1.bin params_shard_2.bin");
  events ev = {.cancel_after_done = 1};
  mpk_mlc_install_result r;
  mpk_error err;
  mpk_mlc_install_options o = MPK_MLC_INSTALL_OPTIONS_INIT;
  o.cache_dir = cache;
  o.connections = 1; /* one shard at a time: the cancellation lands after the first */
  o.on_event = on_event;
  o.ctx = &ev;
  assert_int_equal(mpk_mlc_install(src, &o, &r, &err), MPK_ECANCELLED);
  snprintf(tree, sizeof tree, "%s/r", cache);
  assert_false(exists(tree));
  ev.cancel_after_done = 0;
  assert_int_equal(mpk_mlc_install(src, &o, &r, &err), 0);
  assert_true(r.reused_bytes > 0);
  assert_int_equal(r.copied_bytes, 0);
  assert_int_equal(r.fetched_bytes + r.reused_bytes, r.total_bytes);
  mpk_mlc_install_result_free(&r);
  assert_checks(tree, 0);
  tu_sh("echo '[1]' > '%s/" MPK_MLC_INSTALL_RECORD "'", tree);
  mpk_mlc_report *rep = NULL;
  assert_int_equal(mpk_mlc_check(tree, NULL, &rep, &err), 0);
  assert_int_equal(rep->n_problems, 1);
  assert_non_null(strstr(rep->problems[0].file, MPK_MLC_INSTALL_RECORD));
  mpk_mlc_report_free(rep);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_manifest_and_library),
      cmocka_unit_test(test_legacy_noop_changed_verify),
      cmocka_unit_test(test_corrupt_shard),
      cmocka_unit_test(test_refused_before_any_shard),
      cmocka_unit_test(test_resume_and_record),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
