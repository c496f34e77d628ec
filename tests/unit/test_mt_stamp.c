/* The load gate's verification stamp ("verified once, gated always", src/mt/tensor/stamp.c): an
   unchanged file is accepted without hashing; a byte flipped in place with size and mtime restored
   (utimensat, as `touch -d` does) is caught through its ctime; a file replaced by another inode is
   caught; a file written in the same second as the stamp is re-hashed (racy); a torn or edited stamp
   is ignored; rehash hashes everything; and a stamped digest is judged exactly as a computed one
   (map, sidecar, merge record). */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define STAMP ".modelpkg-verified.json"
#define NT 3
static const char *const bins[NT] = {"a.bin", "b.bin", "c.bin"};

static char tmp_root[256];
static char inf[512];

static int setup(void **state) {
  (void)state;
  snprintf(tmp_root, sizeof tmp_root, "%s", tu_tmpdir());
  snprintf(inf, sizeof inf, "%s/inference", tmp_root);
  tu_sh("rm -rf '%s' && mkdir -p '%s'", inf, inf);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tu_sh("rm -rf '%s'", tmp_root);
  return 0;
}

static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", inf, name); }

/* 64 bytes (float32 [4, 4]) derived from `seed`. */
static void write_tensor(const char *name, int seed) {
  char p[700];
  path_of(p, sizeof p, name);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  for (int i = 0; i < 64; i++) fputc((i * 7 + seed * 31 + 1) & 0xff, f);
  fclose(f);
}

static void write_text(const char *name, const char *text) {
  char p[700];
  path_of(p, sizeof p, name);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void digest_of(const char *name, char hex[65]) {
  char p[700];
  path_of(p, sizeof p, name);
  size_t len;
  uint8_t *data = tu_read_file(p, &len);
  char id[MPK_SHA256_ID_SIZE];
  mpk_sha256_id(data, len, id);
  free(data);
  snprintf(hex, 65, "%s", id + 7);
}

/* A map of NT entries, each one float32 [4, 4] weight in bins[i], sha256 shas[i]. */
static mpk_mt_handoff *make_map(char shas[NT][65]) {
  char json[8192];
  size_t len = (size_t)snprintf(json, sizeof json,
                                "{\"schemaVersion\": \"1.0\", \"minReaderVersion\": \"1.0\", \"handoffMode\": "
                                "\"external_initializer\", \"externalDataLayout\": \"one_file_per_tensor\", \"entries\": [");
  for (int i = 0; i < NT; i++)
    len += (size_t)snprintf(
        json + len, sizeof json - len,
        "%s{\"trainingBaseLayerName\": \"layer%d\", \"dtype\": \"float32\", \"shape\": [4, 4],"
        " \"tensorDtypes\": {\"weight\": \"float32\"}, \"tensorShapes\": {\"weight\": [4, 4]},"
        " \"checkpointNames\": {\"weight\": \"w%d\"}, \"mergerOutputNames\": {\"weight\": \"m%d\"},"
        " \"mergedTensorNames\": {\"weight\": \"W%d\"}, \"inferenceInitializerNames\": {\"weight\": \"W%d\"},"
        " \"externalDataLocation\": {\"weight\": \"%s\"}, \"sha256\": {\"weight\": \"%s\"}}",
        i ? ", " : "", i, i, i, i, i, bins[i], shas[i]);
  snprintf(json + len, sizeof json - len, "]}");
  mpk_mt_handoff *map = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_mt_handoff_parse(json, strlen(json), "map.json", &map, &err)) fail_msg("parse: %s", tu_err(&err));
  return map;
}

/* The shipped tensors and their map. */
static mpk_mt_handoff *shipped(void) {
  char shas[NT][65];
  for (int i = 0; i < NT; i++) {
    write_tensor(bins[i], i);
    digest_of(bins[i], shas[i]);
  }
  return make_map(shas);
}

/* Sleep until the wall clock is `ms` milliseconds into the next second. */
static void next_second(int ms) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  struct timespec d = {0, (1000000000L - now.tv_nsec) + (long)ms * 1000000L};
  while (d.tv_nsec >= 1000000000L) d.tv_sec++, d.tv_nsec -= 1000000000L;
  nanosleep(&d, NULL);
}

static mpk_mt_gate_report *gate(const mpk_mt_handoff *map, int use_stamp, int rehash) {
  mpk_mt_gate_options o = MPK_MT_GATE_OPTIONS_INIT;
  o.use_stamp = use_stamp;
  o.rehash = rehash;
  mpk_mt_gate_report *r = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_mt_load_gate(inf, map, &o, &r, &err)) fail_msg("gate: %s", tu_err(&err));
  return r;
}

/* Files old enough not to be racy, and a stamp written after them: every file hashed once. */
static void establish(const mpk_mt_handoff *map) {
  next_second(50);
  mpk_mt_gate_report *r = gate(map, 1, 0);
  assert_true(r->ready);
  assert_int_equal(r->n_hashed, NT);
  assert_int_equal(r->stamp_written, 1);
  mpk_mt_gate_report_free(r);
}

static const mpk_mt_gate_tensor *find(const mpk_mt_gate_report *r, const char *bin) {
  for (size_t i = 0; i < r->n_tensors; i++) {
    const char *b = strrchr(r->tensors[i].file, '/');
    if (strcmp(b ? b + 1 : r->tensors[i].file, bin) == 0) return &r->tensors[i];
  }
  fail_msg("no tensor %s", bin);
  return NULL;
}

static void test_unchanged_accepted(void **state) {
  (void)state;
  mpk_mt_handoff *map = shipped();
  int64_t before = (int64_t)time(NULL) * 1000;
  establish(map);
  int64_t written = 0;
  size_t n = 0;
  mpk_error err;
  mpk_error_clear(&err);
  assert_int_equal(mpk_mt_stamp_info(inf, &written, &n, &err), 0);
  assert_int_equal(n, NT);
  assert_true(written >= before && written <= (int64_t)time(NULL) * 1000 + 1000);
  mpk_mt_gate_report *r = gate(map, 1, 0);
  assert_true(r->ready);
  assert_int_equal(r->n_verified, NT);
  assert_int_equal(r->n_from_stamp, NT);
  assert_int_equal(r->n_hashed, 0);
  assert_int_equal(r->stamp_written, 0); /* nothing new to remember */
  assert_null(r->stamp_ignored);
  for (size_t i = 0; i < r->n_tensors; i++) {
    assert_int_equal(r->hashing[i].from_stamp, 1);
    assert_int_equal(r->tensors[i].status, MPK_MT_TENSOR_VERIFIED);
    assert_true(r->hashing[i].hashed_at_ms >= before && r->hashing[i].hashed_at_ms <= written);
    char hex[65];
    digest_of(bins[i], hex);
    assert_string_equal(r->tensors[i].actual, hex);
  }
  mpk_mt_gate_report_free(r);
  /* Without use_stamp (and for a caller built before the stamp: struct_size of the 0.1 layout) every file is hashed. */
  r = gate(map, 0, 0);
  assert_int_equal(r->n_hashed, NT);
  assert_int_equal(r->n_from_stamp, 0);
  mpk_mt_gate_report_free(r);
  mpk_mt_gate_options old = {.struct_size = offsetof(mpk_mt_gate_options, use_stamp), .workers = 1};
  assert_int_equal(mpk_mt_load_gate(inf, map, &old, &r, &err), 0);
  assert_int_equal(r->n_hashed, NT);
  mpk_mt_gate_report_free(r);
  mpk_mt_handoff_free(map);
}

/* A byte flipped in place, size unchanged and mtime restored (utimensat, as `touch -d`): ctime. */
static void test_flip_in_place_mtime_restored(void **state) {
  (void)state;
  mpk_mt_handoff *map = shipped();
  establish(map);
  next_second(50); /* no help from the racy rule: the change is in a later second than the stamp */
  char p[700];
  path_of(p, sizeof p, "b.bin");
  struct stat before, after;
  assert_int_equal(stat(p, &before), 0);
  int fd = open(p, O_WRONLY);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, "\x5a", 1, 17), 1);
  close(fd);
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  assert_int_equal(utimensat(AT_FDCWD, p, times, 0), 0);
  assert_int_equal(stat(p, &after), 0);
  assert_int_equal(after.st_size, before.st_size);
  assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  assert_int_equal(after.st_ino, before.st_ino);
  mpk_mt_gate_report *r = gate(map, 1, 0);
  assert_false(r->ready);
  assert_int_equal(r->n_hashed, 1);
  assert_int_equal(r->n_from_stamp, NT - 1);
  const mpk_mt_gate_tensor *t = find(r, "b.bin");
  assert_int_equal(r->hashing[t - r->tensors].from_stamp, 0);
  assert_int_equal(t->status, MPK_MT_TENSOR_MISMATCH);
  mpk_mt_gate_report_free(r);
  mpk_mt_handoff_free(map);
}

/* Another inode renamed over a tensor (same size, same mtime): caught, hashed, refused. */
static void test_replaced_inode(void **state) {
  (void)state;
  mpk_mt_handoff *map = shipped();
  establish(map);
  char p[700], q[700];
  path_of(p, sizeof p, "c.bin");
  path_of(q, sizeof q, "c.bin.new");
  struct stat before;
  assert_int_equal(stat(p, &before), 0);
  write_tensor("c.bin.new", 9);
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  assert_int_equal(utimensat(AT_FDCWD, q, times, 0), 0);
  assert_int_equal(rename(q, p), 0);
  mpk_mt_gate_report *r = gate(map, 1, 0);
  assert_false(r->ready);
  assert_int_equal(r->n_hashed, 1);
  const mpk_mt_gate_tensor *t = find(r, "c.bin");
  assert_int_equal(r->hashing[t - r->tensors].from_stamp, 0);
  assert_int_equal(t->status, MPK_MT_TENSOR_MISMATCH);
  mpk_mt_gate_report_free(r);
  /* The stamp now remembers the new inode's (wrong) digest: still refused, by the same judgement. */
  next_second(50);
  r = gate(map, 1, 1);
  mpk_mt_gate_report_free(r);
  r = gate(map, 1, 0);
  assert_int_equal(r->hashing[find(r, "c.bin") - r->tensors].from_stamp, 1);
  assert_int_equal(find(r, "c.bin")->status, MPK_MT_TENSOR_MISMATCH);
  assert_false(r->ready);
  mpk_mt_gate_report_free(r);
  mpk_mt_handoff_free(map);
}

/* Files written in the second the stamp is written are racy: hashed again until a stamp is written
   in a later second. */
static void test_same_second_rehashed(void **state) {
  (void)state;
  next_second(100);
  mpk_mt_handoff *map = shipped();
  mpk_mt_gate_report *r = gate(map, 1, 0);
  time_t written = time(NULL);
  assert_int_equal(r->n_hashed, NT);
  assert_int_equal(r->stamp_written, 1);
  mpk_mt_gate_report_free(r);
  struct stat st;
  char p[700];
  path_of(p, sizeof p, "a.bin");
  assert_int_equal(stat(p, &st), 0);
  if (st.st_ctim.tv_sec != written) skip(); /* the second turned in between (should not, 100 ms in) */
  r = gate(map, 1, 0);
  assert_true(r->ready);
  assert_int_equal(r->n_hashed, NT); /* every file is racy: re-hashed although its stat matches */
  assert_int_equal(r->n_from_stamp, 0);
  mpk_mt_gate_report_free(r);
  next_second(50);
  r = gate(map, 1, 0); /* hashed again (racy), stamp written in a later second */
  assert_int_equal(r->n_hashed, NT);
  mpk_mt_gate_report_free(r);
  r = gate(map, 1, 0);
  assert_int_equal(r->n_from_stamp, NT);
  assert_int_equal(r->n_hashed, 0);
  mpk_mt_gate_report_free(r);
  mpk_mt_handoff_free(map);
}

static void corrupt_and_expect_ignored(const mpk_mt_handoff *map, const char *sh) {
  tu_sh("%s", sh);
  int64_t w;
  size_t n;
  mpk_error err;
  mpk_error_clear(&err);
  assert_int_equal(mpk_mt_stamp_info(inf, &w, &n, &err), MPK_EMALFORMED);
  mpk_mt_gate_report *r = gate(map, 1, 0);
  assert_true(r->ready);
  assert_non_null(r->stamp_ignored);
  assert_int_equal(r->n_from_stamp, 0);
  assert_int_equal(r->n_hashed, NT);
  assert_int_equal(r->stamp_written, 1); /* replaced by a valid one */
  mpk_mt_gate_report_free(r);
  assert_int_equal(mpk_mt_stamp_info(inf, &w, &n, &err), 0);
}

static void test_corrupt_stamp_ignored(void **state) {
  (void)state;
  mpk_mt_handoff *map = shipped();
  establish(map);
  char s[700];
  path_of(s, sizeof s, STAMP);
  char cmd[2048];
  /* an edited digit in the body (still valid JSON): the checksum no longer matches */
  snprintf(cmd, sizeof cmd, "sed -i 's/\"size\":64/\"size\":65/' '%s'", s);
  corrupt_and_expect_ignored(map, cmd);
  /* torn: cut in the middle */
  snprintf(cmd, sizeof cmd, "truncate -s 100 '%s'", s);
  corrupt_and_expect_ignored(map, cmd);
  /* not a stamp at all */
  snprintf(cmd, sizeof cmd, "printf '{}' > '%s'", s);
  corrupt_and_expect_ignored(map, cmd);
  /* an edited checksum */
  snprintf(cmd, sizeof cmd, "sed -i 's/^{\"checksum\":\"./{\"checksum\":\"g/' '%s'", s);
  corrupt_and_expect_ignored(map, cmd);
  mpk_mt_handoff_free(map);
}

static void test_rehash_hashes_all(void **state) {
  (void)state;
  mpk_mt_handoff *map = shipped();
  establish(map);
  int64_t w1, w2;
  size_t n;
  mpk_error err;
  mpk_error_clear(&err);
  assert_int_equal(mpk_mt_stamp_info(inf, &w1, &n, &err), 0);
  nanosleep(&(struct timespec){0, 5000000}, NULL);
  mpk_mt_gate_report *r = gate(map, 0, 1);
  assert_true(r->ready);
  assert_int_equal(r->n_hashed, NT);
  assert_int_equal(r->n_from_stamp, 0);
  assert_int_equal(r->stamp_written, 1);
  for (size_t i = 0; i < r->n_tensors; i++) assert_true(r->hashing[i].hashed_at_ms >= w1);
  mpk_mt_gate_report_free(r);
  assert_int_equal(mpk_mt_stamp_info(inf, &w2, &n, &err), 0);
  assert_true(w2 > w1);
  /* presence_only never hashes, never stamps */
  mpk_mt_gate_options o = MPK_MT_GATE_OPTIONS_INIT;
  o.use_stamp = 1;
  o.presence_only = 1;
  assert_int_equal(mpk_mt_load_gate(inf, map, &o, &r, &err), 0);
  assert_int_equal(r->n_hashed, 0);
  assert_int_equal(r->n_from_stamp, 0);
  assert_int_equal(r->stamp_written, 0);
  mpk_mt_gate_report_free(r);
  mpk_mt_handoff_free(map);
}

/* A stamped digest goes through the same judgement as a computed one: the same status, authority
   and problem, whether the tensor was hashed now or accepted by the stamp. */
static void same_verdict(const mpk_mt_handoff *map, const char *bin, mpk_mt_tensor_status want) {
  mpk_mt_gate_report *a = gate(map, 1, 0);
  const mpk_mt_gate_tensor *ta = find(a, bin);
  assert_int_equal(a->hashing[ta - a->tensors].from_stamp, 1);
  assert_int_equal(ta->status, want);
  mpk_mt_gate_report *b = gate(map, 0, 0);
  const mpk_mt_gate_tensor *tb = find(b, bin);
  assert_int_equal(b->hashing[tb - b->tensors].from_stamp, 0);
  assert_int_equal(tb->status, ta->status);
  assert_int_equal(tb->authority, ta->authority);
  assert_int_equal(tb->merged, ta->merged);
  assert_int_equal(a->ready, b->ready);
  assert_int_equal(a->n_problems, b->n_problems);
  for (size_t i = 0; i < a->n_problems; i++) assert_string_equal(a->problems[i].message, b->problems[i].message);
  mpk_mt_gate_report_free(a);
  mpk_mt_gate_report_free(b);
}

static void test_stamp_precedence(void **state) {
  (void)state;
  char shas[NT][65];
  mpk_mt_handoff *map = shipped();
  establish(map);
  for (int i = 0; i < NT; i++) digest_of(bins[i], shas[i]);
  /* the map names other bytes: the stamped digest fails exactly as a hash would */
  char other[NT][65];
  memcpy(other, shas, sizeof other);
  memcpy(other[0], shas[1], 65);
  mpk_mt_handoff *wrong = make_map(other);
  same_verdict(wrong, "a.bin", MPK_MT_TENSOR_MISMATCH);
  mpk_mt_handoff_free(wrong);
  /* a stale sidecar fails */
  char side[80];
  snprintf(side, sizeof side, "%s\n", shas[2]);
  write_text("a.bin.sha256", side);
  same_verdict(map, "a.bin", MPK_MT_TENSOR_MISMATCH);
  /* an agreeing sidecar passes */
  snprintf(side, sizeof side, "%s\n", shas[0]);
  write_text("a.bin.sha256", side);
  same_verdict(map, "a.bin", MPK_MT_TENSOR_VERIFIED);
  /* merged on device: the merge record's post-merge digest is the authority */
  char merged_map[NT][65];
  memcpy(merged_map, shas, sizeof merged_map);
  memcpy(merged_map[1], shas[2], 65); /* b.bin's shipped digest was c's: b holds "merged" bytes */
  mpk_mt_handoff *mm = make_map(merged_map);
  char rec[1024];
  snprintf(rec, sizeof rec,
           "{\"format\": \"modelpkg-merge-record\", \"version\": 1, \"tensors\": {\"b.bin\": {\"sha256\": \"%s\", "
           "\"shipped_sha256\": \"%s\"}}}",
           shas[1], shas[2]);
  write_text(".modelpkg-merge-record.json", rec);
  same_verdict(mm, "b.bin", MPK_MT_TENSOR_VERIFIED);
  mpk_mt_gate_report *r = gate(mm, 1, 0);
  assert_int_equal(find(r, "b.bin")->merged, 1);
  assert_int_equal(find(r, "b.bin")->authority, MPK_MT_AUTH_RECORD);
  mpk_mt_gate_report_free(r);
  /* the record lists other post-merge bytes: refused */
  snprintf(rec, sizeof rec,
           "{\"format\": \"modelpkg-merge-record\", \"version\": 1, \"tensors\": {\"b.bin\": {\"sha256\": \"%s\", "
           "\"shipped_sha256\": \"%s\"}}}",
           shas[0], shas[2]);
  write_text(".modelpkg-merge-record.json", rec);
  same_verdict(mm, "b.bin", MPK_MT_TENSOR_MISMATCH);
  mpk_mt_handoff_free(mm);
  /* absent: missing, whatever the stamp says */
  char p[700];
  path_of(p, sizeof p, "c.bin");
  assert_int_equal(unlink(p), 0);
  r = gate(map, 1, 0);
  assert_false(r->ready);
  assert_int_equal(find(r, "c.bin")->status, MPK_MT_TENSOR_MISSING);
  assert_int_equal(r->hashing[find(r, "c.bin") - r->tensors].from_stamp, 0);
  mpk_mt_gate_report_free(r);
  mpk_mt_handoff_free(map);
}

/* A stamp that cannot be written (here: a directory where it belongs) is no error: no stamp. */
static void test_unwritable_no_stamp(void **state) {
  (void)state;
  mpk_mt_handoff *map = shipped();
  tu_sh("mkdir '%s/" STAMP "'", inf);
  next_second(50);
  mpk_mt_gate_report *r = gate(map, 1, 0);
  assert_true(r->ready);
  assert_int_equal(r->n_hashed, NT);
  assert_int_equal(r->stamp_written, 0);
  mpk_mt_gate_report_free(r);
  r = gate(map, 1, 0);
  assert_int_equal(r->n_hashed, NT);
  mpk_mt_gate_report_free(r);
  int64_t w;
  size_t n;
  mpk_error err;
  mpk_error_clear(&err);
  assert_int_equal(mpk_mt_stamp_info(inf, &w, &n, &err), MPK_EMALFORMED);
  tu_sh("rmdir '%s/" STAMP "'", inf);
  assert_int_equal(mpk_mt_stamp_info(inf, &w, &n, &err), MPK_ENOTFOUND);
  mpk_mt_handoff_free(map);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_unchanged_accepted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_flip_in_place_mtime_restored, setup, teardown),
      cmocka_unit_test_setup_teardown(test_replaced_inode, setup, teardown),
      cmocka_unit_test_setup_teardown(test_same_second_rehashed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_stamp_ignored, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rehash_hashes_all, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stamp_precedence, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unwritable_no_stamp, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
