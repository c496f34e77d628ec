/* The installed cache (docs/mt-cache.md): mpk_mt_cache_list (both records, the reference's fallback,
   dot names, links), mpk_mt_cache_remove (nothing installed, another repo id, a link, a reader
   holding the tree: retired), mpk_mt_cache_gc (a locked stage, an interrupted commit rolled forward,
   partials, retired trees, orphaned locks, links, nothing to do), and a reinstall under a reader. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/core.h"
#include "mt/install/install.h"
#include "testutil.h"

#define TINY "conformance/mobiletransformers/tiny_package"

static const char *tiny(void) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s", tu_shared(TINY));
  return buf;
}

static void install(const char *cache, const char *repo, const char *variant) {
  mpk_mt_install_options o = MPK_MT_INSTALL_OPTIONS_INIT;
  o.repo_id = repo;
  o.cache_dir = cache;
  o.variant = variant;
  o.jobs = 2;
  mpk_error err;
  if (mpk_mt_install(tiny(), &o, NULL, &err) != 0) fail_msg("install %s: %s", repo, tu_err(&err));
}

/* A reader as the load gate is one: a shared flock on the inference directory. */
static int hold(const char *tree) {
  char p[4200];
  snprintf(p, sizeof p, "%s/inference", tree);
  int fd = open(p, O_RDONLY | O_DIRECTORY);
  assert_true(fd >= 0);
  assert_int_equal(flock(fd, LOCK_SH | LOCK_NB), 0);
  return fd;
}

static size_t count_entries(const char *dir) {
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null | wc -l", dir);
  FILE *f = popen(cmd, "r");
  size_t n = 0;
  assert_int_equal(fscanf(f, "%zu", &n), 1);
  pclose(f);
  return n;
}

static const mpk_fetch_gc_item *gc_find(const mpk_fetch_gc_result *r, const char *prefix) {
  for (size_t i = 0; i < r->n; i++)
    if (strncmp(r->items[i].path, prefix, strlen(prefix)) == 0) return &r->items[i];
  return NULL;
}

static void test_list(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096], p[4400];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  mpk_mt_cache_listing *l = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_cache_list(cache, &l, &err), MPK_ENOTFOUND);
  assert_null(l);
  install(cache, "org/Tiny", "cpu-int4");
  /* a tree as the reference installer writes it: only its install_record.json */
  tu_sh("mkdir -p '%s/mobiletransformers__ref-model/inference' && printf 1234 > '%s/mobiletransformers__ref-model/inference/x'",
        cache, cache);
  snprintf(p, sizeof p, "%s/mobiletransformers__ref-model/install_record.json", cache);
  FILE *f = fopen(p, "w");
  fputs("{\"repoId\":\"mobiletransformers/ref-model\",\"variantId\":\"cpu-fp16\",\"features\":[\"inference\",\"train\"],"
        "\"installedAtEpochMs\":1700000000123}",
        f);
  fclose(f);
  /* a legacy tree: no record (the reference's fallback: "__" as "/"); a blank repoId does not count;
     not an installed model either (no inference/): listed by its name all the same, with a note */
  tu_sh("mkdir -p '%s/legacy__thing' && printf '{\"repoId\":\"\"}' > '%s/legacy__thing/install_record.json'", cache,
        cache);
  /* dot names are not models; a link is never followed */
  tu_sh("mkdir -p '%s/.hidden' '%s/decoy' && ln -s '%s/decoy' '%s/linked'", cache, dir, dir, cache);
  assert_int_equal(mpk_mt_cache_list(cache, &l, &err), 0);
  assert_int_equal(l->n, 3);
  assert_string_equal(l->entries[0].name, "legacy__thing");
  assert_string_equal(l->entries[0].repo_id, "legacy/thing");
  assert_null(l->entries[0].record);
  assert_null(l->entries[0].variant);
  assert_int_equal(l->entries[0].installed_at_ms, 0);
  const mpk_mt_cache_entry *ref = &l->entries[1];
  assert_string_equal(ref->repo_id, "mobiletransformers/ref-model");
  assert_string_equal(ref->record, MPK_MT_REFERENCE_INSTALL_RECORD);
  assert_string_equal(ref->variant, "cpu-fp16");
  assert_int_equal(ref->n_features, 2);
  assert_string_equal(ref->features[1], "train");
  assert_int_equal(ref->installed_at_ms, 1700000000123LL);
  assert_false(ref->has_manifest);
  assert_true(ref->bytes >= 4 + 100); /* x and the record */
  const mpk_mt_cache_entry *mine = &l->entries[2];
  assert_string_equal(mine->name, "org__Tiny");
  assert_string_equal(mine->repo_id, "org/Tiny");
  assert_string_equal(mine->record, MPK_MT_INSTALL_RECORD);
  assert_string_equal(mine->variant, "cpu-int4");
  assert_true(mine->has_manifest);
  assert_true(mine->installed_at_ms > 1700000000000LL);
  /* bytes: what du -b --apparent-size counts for regular files */
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "find '%s/org__Tiny' -type f -printf '%%s\\n' | awk '{s+=$1} END {print s}'", cache);
  f = popen(cmd, "r");
  unsigned long long want = 0;
  assert_int_equal(fscanf(f, "%llu", &want), 1);
  pclose(f);
  assert_int_equal(mine->bytes, want);
  assert_int_equal(l->n_notes, 2);
  assert_non_null(strstr(l->notes[0], "legacy__thing: "));
  assert_non_null(strstr(l->notes[0], "not an installed model"));
  assert_non_null(strstr(l->notes[1], "linked: is a symbolic link"));
  mpk_mt_cache_listing_free(l);
  tu_sh("rm -rf '%s'", dir);
}

static void test_remove(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096], target[4200], p[4400];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(target, sizeof target, "%s/org__m", cache);
  mpk_error err;
  mpk_mt_cache_remove_result r;
  /* nothing installed: said so, nothing created */
  tu_sh("mkdir -p '%s'", cache);
  assert_int_equal(mpk_mt_cache_remove(cache, "org/m", NULL, &r, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "not installed"));
  assert_int_equal(count_entries(cache), 0);
  /* another repo id with the same directory name: refused, untouched */
  install(cache, "org/m", "cpu-int4");
  assert_int_equal(mpk_mt_cache_remove(cache, "org__m", NULL, &r, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "holds repo org/m, not org__m"));
  assert_true(mpk_is_dir(target));
  /* removed: gone, the bytes reported */
  assert_int_equal(mpk_mt_cache_remove(cache, "org/m", NULL, &r, &err), 0);
  assert_false(r.held);
  assert_null(r.retired_path);
  assert_true(r.bytes > 10000);
  mpk_mt_cache_remove_result_free(&r);
  assert_false(mpk_is_dir(target));
  snprintf(p, sizeof p, "%s/.staging/org__m", cache);
  assert_int_equal(count_entries(p), 1); /* the lock only: gc's */
  /* a reader holds it: moved out of place at once, kept retired, the reader's files intact */
  install(cache, "org/m", "cpu-int4");
  int fd = hold(target);
  assert_int_equal(mpk_mt_cache_remove(cache, "org/m", NULL, &r, &err), 0);
  assert_true(r.held);
  assert_non_null(r.retired_path);
  assert_false(mpk_is_dir(target));
  snprintf(p, sizeof p, "%s/inference/model.onnx", r.retired_path);
  assert_true(mpk_file_exists(p));
  assert_int_equal(faccessat(fd, "model.onnx", R_OK, 0), 0);
  /* gc keeps it while held, removes it once the reader lets go, then leaves nothing */
  mpk_fetch_gc_result *g = NULL;
  assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  const mpk_fetch_gc_item *it = gc_find(g, ".staging/org__m/retired/");
  assert_non_null(it);
  assert_false(it->removed);
  assert_non_null(strstr(it->reason, "a reader holds"));
  mpk_fetch_gc_result_free(g);
  assert_true(mpk_is_dir(r.retired_path));
  close(fd);
  assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  it = gc_find(g, ".staging/org__m/retired/");
  assert_non_null(it);
  assert_true(it->removed);
  assert_true(it->bytes > 10000);
  mpk_fetch_gc_result_free(g);
  assert_false(mpk_is_dir(r.retired_path));
  assert_int_equal(count_entries(cache), 0);
  mpk_mt_cache_remove_result_free(&r);
  /* a tree that is a link: refused, nothing followed or deleted */
  tu_sh("mkdir -p '%s/decoy/inference' && echo keep > '%s/decoy/inference/precious' && ln -s '%s/decoy' '%s'", dir,
        dir, dir, target);
  assert_int_not_equal(mpk_mt_cache_remove(cache, "org/m", NULL, &r, &err), 0);
  assert_non_null(strstr(err.message, "symbolic link"));
  snprintf(p, sizeof p, "%s/decoy/inference/precious", dir);
  assert_true(mpk_file_exists(p));
  tu_sh("rm -rf '%s'", dir);
}

static void test_gc(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096], st[4300], p[4400];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(st, sizeof st, "%s/.staging/org__m", cache);
  mpk_error err;
  mpk_fetch_gc_result *g = NULL;
  /* nothing to do */
  tu_sh("mkdir -p '%s'", cache);
  assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  assert_int_equal(g->n, 0);
  mpk_fetch_gc_result_free(g);
  install(cache, "org/m", "cpu-fp16");
  /* an interrupted commit (the marker written: roll forward) — gc runs recovery, never cleans it away */
  pid_t pid = fork();
  if (pid == 0) {
    mpk_mt_install_options o = MPK_MT_INSTALL_OPTIONS_INIT;
    o.repo_id = "org/m";
    o.cache_dir = cache;
    o.variant = "cpu-int4";
    mpk_mt_install_test t = {.stop_after = 5, .no_exchange = 0};
    _exit(mpk_mt_install_ex(tiny(), &o, &t, NULL, &err) == MPK_MT_INSTALL_STOPPED ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  snprintf(p, sizeof p, "%s/commit.json", st);
  assert_true(mpk_file_exists(p));
  /* dry run: says so, changes nothing */
  mpk_mt_cache_gc_options go = MPK_MT_CACHE_GC_OPTIONS_INIT;
  go.dry_run = 1;
  assert_int_equal(mpk_mt_cache_gc(cache, &go, &g, &err), 0);
  assert_non_null(gc_find(g, ".staging/org__m/commit.json"));
  mpk_fetch_gc_result_free(g);
  assert_true(mpk_file_exists(p));
  assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  const mpk_fetch_gc_item *it = gc_find(g, ".staging/org__m/commit.json");
  assert_non_null(it);
  assert_non_null(strstr(it->reason, "recovery"));
  mpk_fetch_gc_result_free(g);
  snprintf(p, sizeof p, "%s/org__m/" MPK_MT_REFERENCE_INSTALL_RECORD, cache);
  json_t *rec = tu_load_json(p);
  assert_string_equal(json_string_value(json_object_get(rec, "variantId")), "cpu-int4"); /* rolled forward */
  json_decref(rec);
  assert_false(mpk_is_dir(st));
  /* a stage an installer holds: never touched */
  tu_sh("mkdir -p '%s/new/inference' '%s/parts' && echo partial > '%s/new/inference/model.onnx'", st, st, st);
  snprintf(p, sizeof p, "%s/lock", st);
  int lfd = open(p, O_RDWR | O_CREAT, 0666);
  assert_int_equal(flock(lfd, LOCK_EX), 0);
  assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  it = gc_find(g, ".staging/org__m");
  assert_non_null(it);
  assert_false(it->removed);
  assert_non_null(strstr(it->reason, "installer holds"));
  mpk_fetch_gc_result_free(g);
  snprintf(p, sizeof p, "%s/new/inference/model.onnx", st);
  assert_true(mpk_file_exists(p));
  close(lfd);
  /* free: the partial download, its records, a marker temporary, links planted (removed themselves,
     never followed), a stranger's file kept */
  tu_sh("mkdir -p '%s/decoy' && echo keep > '%s/decoy/precious' && touch '%s/commit.json.tmp.AbC123' && "
        "ln -s '%s/decoy' '%s/old' && ln -s '%s/decoy' '%s/.staging/evil' && echo mine > '%s/notes.txt'",
        dir, dir, st, dir, st, dir, cache, st);
  assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  assert_true(gc_find(g, ".staging/org__m/new")->removed);
  assert_true(gc_find(g, ".staging/org__m/parts")->removed);
  assert_true(gc_find(g, ".staging/org__m/old")->removed);
  assert_true(gc_find(g, ".staging/org__m/commit.json.tmp.AbC123")->removed);
  assert_true(gc_find(g, ".staging/evil")->removed);
  assert_false(gc_find(g, ".staging/org__m/notes.txt")->removed);
  mpk_fetch_gc_result_free(g);
  snprintf(p, sizeof p, "%s/decoy/precious", dir);
  assert_true(mpk_file_exists(p));
  assert_int_equal(count_entries(st), 2); /* lock and notes.txt: not orphaned, the stranger's file is there */
  tu_sh("rm '%s/notes.txt'", st);
  assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  assert_true(gc_find(g, ".staging/org__m/lock")->removed);
  mpk_fetch_gc_result_free(g);
  assert_int_equal(count_entries(cache), 1); /* org__m only */
  /* .staging itself a link: refused, nothing followed */
  tu_sh("ln -s '%s/decoy' '%s/.staging'", dir, cache);
  assert_int_not_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  assert_non_null(strstr(err.message, "symbolic link"));
  assert_true(mpk_file_exists(p));
  tu_sh("rm -rf '%s'", dir);
}

/* A reinstall while a reader holds the old tree: the new tree is swapped in, the old one retired
   (never deleted under the reader), and a gc removes it once the reader lets go — with the
   exchange and with two renames. */
static void test_reinstall_under_reader(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096], target[4200], p[4400];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(target, sizeof target, "%s/org__m", cache);
  mpk_error err;
  install(cache, "org/m", "cpu-fp16");
  int fd = hold(target);
  install(cache, "org/m", "cpu-int4");
  snprintf(p, sizeof p, "%s/" MPK_MT_REFERENCE_INSTALL_RECORD, target);
  json_t *rec = tu_load_json(p);
  assert_string_equal(json_string_value(json_object_get(rec, "variantId")), "cpu-int4");
  json_decref(rec);
  snprintf(p, sizeof p, "%s/.staging/org__m/retired", cache);
  assert_int_equal(count_entries(p), 1);
  assert_int_equal(faccessat(fd, "model.onnx", R_OK, 0), 0); /* the reader's tree is whole */
  mpk_fetch_gc_result *g = NULL;
  assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  assert_false(gc_find(g, ".staging/org__m/retired/")->removed);
  mpk_fetch_gc_result_free(g);
  close(fd);
  assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
  assert_true(gc_find(g, ".staging/org__m/retired/")->removed);
  mpk_fetch_gc_result_free(g);
  assert_int_equal(count_entries(cache), 1);
  tu_sh("rm -rf '%s'", dir);
}

/* An installer waiting (--wait) on a lock that gc unlinks with its stage (an orphaned lock) starts
   over once it gets it, instead of installing through a stage nobody else can see. */
static void test_waiter_on_removed_lock(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096], st[4300], lock[4400];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(st, sizeof st, "%s/.staging/org__m", cache);
  snprintf(lock, sizeof lock, "%s/lock", st);
  install(cache, "org/m", "cpu-fp16"); /* leaves the stage with its lock only */
  int lfd = open(lock, O_RDWR);
  assert_true(lfd >= 0);
  assert_int_equal(flock(lfd, LOCK_EX), 0); /* as gc holds it */
  struct stat ls;
  assert_int_equal(fstat(lfd, &ls), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(lfd); /* the lock's open file is the parent's (gc's): not held by the installer too */
    mpk_mt_install_options o = MPK_MT_INSTALL_OPTIONS_INIT;
    o.repo_id = "org/m";
    o.cache_dir = cache;
    o.variant = "cpu-int4";
    o.wait_for_lock = 1;
    mpk_error e;
    _exit(mpk_mt_install(tiny(), &o, NULL, &e) == 0 ? 0 : 1);
  }
  /* until the installer is blocked on our lock: a waiter ("->") on the lock's inode in /proc/locks */
  char ino[64];
  snprintf(ino, sizeof ino, ":%lu ", (unsigned long)ls.st_ino);
  bool waiting = false;
  for (int i = 0; i < 500 && !waiting; i++) {
    FILE *f = fopen("/proc/locks", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
      if (strstr(line, "->") && strstr(line, ino)) waiting = true;
    if (f) fclose(f);
    if (!waiting) usleep(10000);
  }
  if (!waiting) skip(); /* no /proc/locks: the race cannot be staged here */
  /* gc's orphaned-lock removal: the lock unlinked and the stage removed while held */
  assert_int_equal(unlink(lock), 0);
  assert_int_equal(rmdir(st), 0);
  close(lfd);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0); /* it started over with a fresh stage and installed */
  char p[4400];
  snprintf(p, sizeof p, "%s/org__m/" MPK_MT_REFERENCE_INSTALL_RECORD, cache);
  json_t *rec = tu_load_json(p);
  assert_string_equal(json_string_value(json_object_get(rec, "variantId")), "cpu-int4");
  json_decref(rec);
  assert_true(mpk_file_exists(lock));
  tu_sh("rm -rf '%s'", dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list),
      cmocka_unit_test(test_remove),
      cmocka_unit_test(test_gc),
      cmocka_unit_test(test_reinstall_under_reader),
      cmocka_unit_test(test_waiter_on_removed_lock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
