/* mt install: the source layer (directory fetch from an offset, hashing, exact sizes, retries with
   injected backoff), the installed layout, the plan's refusals, events and cancellation. The flows
   against a real server are in tests/integration/test_install_http.sh. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/core.h"
#include "mt/install.h"
#include "mt/source.h"
#include "testutil.h"

#define TINY "conformance/mobiletransformers/tiny_package"

static const char *tiny(void) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s", tu_shared(TINY));
  return buf;
}

static void test_installed_paths(void **state) {
  (void)state;
  mpk_mt_manifest *m = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_manifest_load(tiny(), &m, &err), 0);
  const mpk_mt_variant *v = mpk_mt_manifest_variant(m, "cpu-int4");
  assert_non_null(v);
  static const char *const cases[][2] = {
      {"variants/cpu-int4/inference/model.onnx", "inference/model.onnx"},
      {"variants/cpu-int4/train/training_config.json", "train/training_config.json"},
      {"variants/cpu-int4/embedding/rag_config.json", "embedding/rag_config.json"},
      {"shared/tokenizer/tokenizer.json", "tokenizer/tokenizer.json"},
      {"variants/cpu-int4/checksums.json", "checksums.json"},
      {"variants/cpu-fp16/checksums.json", "variants/cpu-fp16/checksums.json"}, /* another variant's */
      {"shared/config.json", "shared/config.json"},
      {"variants/cpu-int4/inferencex/a", "variants/cpu-int4/inferencex/a"}, /* a prefix, not a directory */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *out = NULL;
    assert_int_equal(mpk_mt_installed_path(v, cases[i][0], &out, &err), 0);
    assert_string_equal(out, cases[i][1]);
    mpk_free(out);
  }
  mpk_mt_manifest_free(m);
}

/* A directory source, fetched from an offset over a prefix already there: the digest is of the
   whole file, the bytes are the source's, and a wrong prefix shows in the digest. */
static void test_dir_fetch_resume(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char pkg[4096], dst[4096];
  snprintf(pkg, sizeof pkg, "%s/pkg", dir);
  snprintf(dst, sizeof dst, "%s/out.bin", dir);
  tu_sh("mkdir -p '%s' && head -c 3000000 /dev/urandom > '%s/f.bin'", pkg, pkg);
  char src_file[4200];
  snprintf(src_file, sizeof src_file, "%s/f.bin", pkg);
  size_t len;
  uint8_t *want = tu_read_file(src_file, &len);
  char want_hex[65];
  uint8_t d[32];
  mpk_sha256(want, len, d);
  mpk_hex(d, 32, want_hex);

  mpk_src *s = NULL;
  mpk_error err;
  assert_int_equal(mpk_src_open(pkg, NULL, &s, &err), 0);
  assert_false(mpk_src_is_http(s));
  for (int wrong = 0; wrong < 2; wrong++) {
    int fd = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    /* 1 MiB + 7 of the file already there (or of other bytes), plus a tail beyond the offset */
    uint8_t *prefix = malloc(1048583 + 100);
    memcpy(prefix, want, 1048583 + 100);
    if (wrong) prefix[5] ^= 1;
    assert_int_equal(mpk_write_all(fd, prefix, 1048583 + 100), 0);
    free(prefix);
    mpk_src_fetch f = {.rel = "f.bin", .size = len, .fd = fd, .offset = 1048583};
    assert_int_equal(mpk_src_fetch_file(s, &f, &err), 0);
    assert_int_equal(f.resumed_from, 1048583);
    close(fd);
    size_t got_len;
    uint8_t *got = tu_read_file(dst, &got_len);
    assert_int_equal(got_len, len);
    if (wrong) {
      assert_string_not_equal(f.hex, want_hex);
    } else {
      assert_string_equal(f.hex, want_hex);
      assert_memory_equal(got, want, len);
    }
    free(got);
  }
  /* a declared size other than the file's: refused either way */
  int fd = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
  mpk_src_fetch f = {.rel = "f.bin", .size = len - 1, .fd = fd};
  assert_int_equal(mpk_src_fetch_file(s, &f, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "larger than declared"));
  f = (mpk_src_fetch){.rel = "f.bin", .size = len + 1, .fd = fd};
  assert_int_equal(mpk_src_fetch_file(s, &f, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "shorter than declared"));
  f = (mpk_src_fetch){.rel = "nothere.bin", .size = 1, .fd = fd};
  assert_int_equal(mpk_src_fetch_file(s, &f, &err), MPK_ENOTFOUND);
  close(fd);
  /* a small document over its bound */
  uint8_t *data;
  assert_int_equal(mpk_src_read_small(s, "f.bin", 1000, &data, &len, &err), MPK_ELIMIT);
  mpk_src_free(s);
  free(want);
  tu_sh("rm -rf '%s'", dir);
}

/* Connection refused is retried with exponential backoff, capped, a bounded number of times. */
typedef struct sleeps {
  unsigned ms[16];
  size_t n;
} sleeps;
static void record_sleep(void *ctx, unsigned ms) {
  sleeps *s = ctx;
  if (s->n < 16) s->ms[s->n++] = ms;
}

static void test_http_retry_backoff(void **state) {
  (void)state;
  /* a port nobody listens on: bind one, take its number, close it */
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(sock, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t al = sizeof a;
  getsockname(sock, (struct sockaddr *)&a, &al);
  close(sock);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/pkg/", ntohs(a.sin_port));
  sleeps sl = {0};
  mpk_src_retry r = {.attempts = 5, .base_ms = 10, .max_ms = 35, .sleep_ms = record_sleep, .sleep_ctx = &sl};
  mpk_src *s = NULL;
  mpk_error err;
  assert_int_equal(mpk_src_open(url, &r, &s, &err), 0);
  assert_true(mpk_src_is_http(s));
  char *u = mpk_src_url(s, "a b/c%d.bin");
  assert_int_not_equal(0, strlen(u));
  char expect[128];
  snprintf(expect, sizeof expect, "http://127.0.0.1:%d/pkg/a%%20b/c%%25d.bin", ntohs(a.sin_port));
  assert_string_equal(u, expect);
  free(u);
  const char *dir = tu_tmpdir();
  char dst[4096];
  snprintf(dst, sizeof dst, "%s/x", dir);
  int fd = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
  mpk_src_fetch f = {.rel = "x.bin", .size = 10, .fd = fd};
  assert_int_equal(mpk_src_fetch_file(s, &f, &err), MPK_EIO);
  assert_int_equal(f.retries, 4);
  assert_int_equal(sl.n, 4);
  assert_int_equal(sl.ms[0], 10);
  assert_int_equal(sl.ms[1], 20);
  assert_int_equal(sl.ms[2], 35);
  assert_int_equal(sl.ms[3], 35);
  close(fd);
  mpk_src_free(s);
  tu_sh("rm -rf '%s'", dir);
}

/* ---------------------------------------------------------------- the installer */

typedef struct events {
  int kinds[4096];
  size_t n;
  uint64_t last_done, total;
  int cancel_at; /* cancel at this event kind (-1: never) */
} events;

static int on_event(void *ctx, const mpk_mt_install_event *ev) {
  events *e = ctx;
  if (e->n < 4096) e->kinds[e->n++] = (int)ev->kind;
  e->last_done = ev->done;
  e->total = ev->total;
  return (int)ev->kind == e->cancel_at;
}

static void test_install_events_and_record(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  events ev = {.cancel_at = -1};
  const char *feat[] = {"train", "rag"};
  mpk_mt_install_options o = {.repo_id = "café/model", .cache_dir = cache, .variant = "cpu-int4",
                              .features = feat, .n_features = 2, .jobs = 2, .on_event = on_event, .ctx = &ev};
  mpk_mt_install_result r;
  mpk_error err;
  assert_int_equal(mpk_mt_install(tiny(), &o, &r, &err), 0);
  char expect[4200];
  snprintf(expect, sizeof expect, "%s/caf___model", cache);
  assert_string_equal(r.repo_dir, expect);
  assert_int_equal(r.replaced, 0);
  assert_int_equal(ev.kinds[0], MPK_MT_INSTALL_PLANNED);
  assert_int_equal(ev.kinds[ev.n - 1], MPK_MT_INSTALL_COMMITTED);
  assert_int_equal(ev.last_done, ev.total);
  assert_int_equal(ev.total, r.total_bytes);
  /* core + checksums + train + rag: no inference (not asked for) */
  char p[4400];
  snprintf(p, sizeof p, "%s/embedding/rag_config.json", r.repo_dir);
  assert_true(mpk_file_exists(p));
  snprintf(p, sizeof p, "%s/inference/model.onnx", r.repo_dir);
  assert_false(mpk_file_exists(p));
  snprintf(p, sizeof p, "%s/" MPK_MT_INSTALL_RECORD, r.repo_dir);
  json_t *rec = tu_load_json(p);
  assert_string_equal(json_string_value(json_object_get(rec, "repoId")), "café/model");
  assert_string_equal(json_string_value(json_object_get(rec, "variant")), "cpu-int4");
  assert_int_equal(json_array_size(json_object_get(rec, "features")), 2);
  json_decref(rec);
  mpk_mt_install_result_free(&r);

  /* a reinstall replaces it; a cancelled one leaves it as it was */
  ev = (events){.cancel_at = -1};
  o.variant = "cpu-fp16";
  o.features = NULL;
  o.n_features = 0;
  assert_int_equal(mpk_mt_install(tiny(), &o, &r, &err), 0);
  assert_int_equal(r.replaced, 1);
  mpk_mt_install_result_free(&r);
  snprintf(p, sizeof p, "%s/inference/model.onnx", expect);
  size_t before_len;
  uint8_t *before = tu_read_file(p, &before_len);
  ev = (events){.cancel_at = MPK_MT_INSTALL_FILE_DONE};
  o.variant = "cpu-int4";
  assert_int_equal(mpk_mt_install(tiny(), &o, &r, &err), MPK_ECANCELLED);
  size_t after_len;
  uint8_t *after = tu_read_file(p, &after_len);
  assert_int_equal(before_len, after_len);
  assert_memory_equal(before, after, before_len);
  free(before);
  free(after);
  snprintf(p, sizeof p, "%s/" MPK_MT_INSTALL_RECORD, expect);
  rec = tu_load_json(p);
  assert_string_equal(json_string_value(json_object_get(rec, "variant")), "cpu-fp16");
  json_decref(rec);

  /* another repo id that sanitizes to the same directory is refused */
  o.repo_id = "caf\xc3\xa9__model";
  o.on_event = NULL;
  assert_int_equal(mpk_mt_install(tiny(), &o, &r, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "not caf"));
  tu_sh("rm -rf '%s'", dir);
}

static void test_install_refusals(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  mpk_mt_install_options o = {.repo_id = "org/x", .cache_dir = cache, .variant = "nope"};
  mpk_error err;
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_ENOTFOUND);
  o.variant = "cpu-fp16";
  const char *feat[] = {"rag"}; /* cpu-fp16 does not declare it */
  o.features = feat;
  o.n_features = 1;
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "rag"));
  o.n_features = 0;
  o.repo_id = ".staging";
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_EINVAL);
  o.repo_id = "..";
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_EINVAL);
  /* nothing was created by a refusal before the plan */
  assert_false(mpk_is_dir(cache));
  tu_sh("rm -rf '%s'", dir);
}

/* ---------------------------------------------------------------- crashing the commit */

/* The variant of the complete install at `repo_dir` ("" when it is not one): its record names a
   variant, and every file of that variant's plan (default features) is there with its digest. */
static void complete_install(const char *repo_dir, char variant[64]) {
  variant[0] = '\0';
  char p[4400];
  snprintf(p, sizeof p, "%s/" MPK_MT_INSTALL_RECORD, repo_dir);
  if (!mpk_file_exists(p)) return;
  json_t *rec = tu_load_json(p);
  const char *v = json_string_value(json_object_get(rec, "variant"));
  mpk_mt_manifest *m = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_manifest_load(tiny(), &m, &err), 0);
  mpk_mt_download_plan *plan = NULL;
  assert_int_equal(mpk_mt_plan_download(m, v, NULL, &plan, &err), 0);
  bool ok = true;
  for (size_t i = 0; i < plan->n_files && ok; i++) {
    char *inst = NULL;
    assert_int_equal(mpk_mt_installed_path(mpk_mt_manifest_variant(m, v), plan->files[i].path, &inst, &err), 0);
    snprintf(p, sizeof p, "%s/%s", repo_dir, inst);
    mpk_free(inst);
    int fd = open(p, O_RDONLY);
    char hex[65] = "";
    ok = fd >= 0 && mpk_sha256_fd(fd, hex) == 0 && strcmp(hex, plan->files[i].sha256) == 0;
    if (fd >= 0) close(fd);
  }
  snprintf(p, sizeof p, "%s/" MPK_MT_MANIFEST_FILENAME, repo_dir);
  if (ok && mpk_file_exists(p)) snprintf(variant, 64, "%s", v);
  mpk_mt_download_plan_free(plan);
  mpk_mt_manifest_free(m);
  json_decref(rec);
}

static void test_commit_crash(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096], target[4200], staging[4300];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(target, sizeof target, "%s/org__m", cache);
  snprintf(staging, sizeof staging, "%s/.staging/org__m", cache);
  mpk_mt_install_options o = {.repo_id = "org/m", .cache_dir = cache, .jobs = 2};
  mpk_error err;
  for (int no_exchange = 0; no_exchange < 2; no_exchange++) {
    int last = 0, k;
    for (k = 1; !last; k++) {
      tu_sh("rm -rf '%s'", cache);
      o.variant = "cpu-fp16";
      assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), 0);
      o.variant = "cpu-int4";
      pid_t pid = fork();
      assert_true(pid >= 0);
      if (pid == 0) {
        mpk_mt_install_test t = {.stop_after = k, .no_exchange = no_exchange};
        int rc = mpk_mt_install_ex(tiny(), &o, &t, NULL, &err);
        _exit(rc == MPK_MT_INSTALL_STOPPED ? 0 : rc == 0 ? 2 : 1);
      }
      int st;
      assert_int_equal(waitpid(pid, &st, 0), pid);
      assert_true(WIFEXITED(st));
      assert_int_not_equal(WEXITSTATUS(st), 1);
      last = WEXITSTATUS(st) == 2; /* ran to the end: k is past the last step */
      char v[64];
      complete_install(target, v);
      /* After the crash: the old install or the new one — or, with two renames, stopped between
         them, nothing at the target while the old tree waits aside, until recovery. */
      bool between = no_exchange && k == 5 && !mpk_is_dir(target);
      if (!between && strcmp(v, "cpu-fp16") != 0 && strcmp(v, "cpu-int4") != 0)
        fail_msg("stopped after step %d (no_exchange %d): the target is not a complete install", k, no_exchange);
      if (k <= 4 && !last) assert_string_equal(v, "cpu-fp16"); /* the swap had not happened */
      int recovered = 0;
      assert_int_equal(mpk_mt_install_recover(cache, "org/m", &recovered, &err), 0);
      complete_install(target, v);
      /* the marker (step 4) decides: before it the old install stays, from it the new one */
      assert_string_equal(v, k >= 4 || last ? "cpu-int4" : "cpu-fp16");
      if (k >= 4 && !last) assert_int_equal(recovered, 1);
      char old_dir[4400];
      snprintf(old_dir, sizeof old_dir, "%s/old", staging);
      assert_false(mpk_is_dir(old_dir));
      /* and the next install completes from there */
      assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), 0);
      complete_install(target, v);
      assert_string_equal(v, "cpu-int4");
      tu_sh("test \"$(ls -A '%s')\" = lock", staging);
      assert_true(k < 20);
    }
    /* every step was crashed at: 8 with the exchange, 9 with two renames, then one complete run */
    assert_int_equal(k - 1, no_exchange ? 10 : 9);
  }
  tu_sh("rm -rf '%s'", dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_installed_paths),
      cmocka_unit_test(test_dir_fetch_resume),
      cmocka_unit_test(test_http_retry_backoff),
      cmocka_unit_test(test_install_events_and_record),
      cmocka_unit_test(test_install_refusals),
      cmocka_unit_test(test_commit_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
