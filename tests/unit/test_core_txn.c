/* The multi-file transaction (src/core/txn.c), tested by crashing it: a forked writer is stopped
   after every durable step of the commit (and of recovery), or killed with SIGKILL at random
   instants; after recovery every file must hold all its old bytes or all its new bytes — compared
   byte for byte — with no temporary or journal left and nothing else in the directory touched.
   Also: damaged journals, files changed after the commit point, the lock, argument checks. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/txn.h"
#include "testutil.h"

#define TXN "merge"
#define JOURNAL ".merge.txn-journal"
#define JOURNAL_TMP ".merge.txn-journal.tmp"
#define MAXF 32

static char root[256];
static char dir[512];

static int setup(void **state) {
  (void)state;
  snprintf(root, sizeof root, "%s", tu_tmpdir());
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tu_sh("rm -rf '%s'", root);
  return 0;
}

static const char *fresh_dir(void) {
  snprintf(dir, sizeof dir, "%s/inference", root);
  tu_sh("rm -rf '%s' && mkdir -p '%s'", dir, dir);
  return dir;
}

/* ---------------------------------------------------------------- files */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static uint8_t *random_bytes(size_t n, uint64_t seed) {
  uint8_t *p = malloc(n ? n : 1);
  assert_non_null(p);
  for (size_t i = 0; i < n; i++) {
    if (i % 8 == 0) seed = splitmix(&seed);
    p[i] = (uint8_t)(seed >> (8 * (i % 8)));
  }
  return p;
}

static char *path_of(const char *name) {
  static char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

static void put(const char *name, const void *data, size_t len) {
  FILE *f = fopen(path_of(name), "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

/* The bytes of dir/name, or NULL when it does not exist. */
static uint8_t *slurp(const char *name, size_t *len) {
  FILE *f = fopen(path_of(name), "rb");
  if (!f) {
    assert_int_equal(errno, ENOENT);
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *p = malloc(cap);
  assert_non_null(p);
  for (;;) {
    if (n == cap) assert_non_null(p = realloc(p, cap *= 2));
    size_t got = fread(p + n, 1, cap - n, f);
    if (!got) break;
    n += got;
  }
  fclose(f);
  *len = n;
  return p;
}

static void hex_of(const void *data, size_t len, char hex[65]) {
  uint8_t d[MPK_SHA256_LEN];
  assert_int_equal(mpk_sha256(data, len, d), 0);
  mpk_hex(d, sizeof d, hex);
}

/* Old and new contents of the files one transaction replaces; old == NULL: absent before. */
typedef struct fileset {
  size_t n;
  char names[MAXF][64];
  uint8_t *v[2][MAXF];
  size_t len[2][MAXF];
  char hex[2][MAXF][65];
} fileset;

static void fileset_free(fileset *fs) {
  for (size_t i = 0; i < fs->n; i++) {
    free(fs->v[0][i]);
    free(fs->v[1][i]);
  }
}

static void add_file(fileset *fs, const char *name, uint8_t *old, size_t old_len, uint8_t *nw, size_t new_len) {
  size_t i = fs->n++;
  assert_true(i < MAXF);
  snprintf(fs->names[i], sizeof fs->names[i], "%s", name);
  fs->v[0][i] = old;
  fs->len[0][i] = old_len;
  fs->v[1][i] = nw;
  fs->len[1][i] = new_len;
  for (int k = 0; k < 2; k++)
    if (fs->v[k][i]) hex_of(fs->v[k][i], fs->len[k][i], fs->hex[k][i]);
}

/* A tensor file and its "<hex>\n" sidecar, in both versions. */
static void add_tensor(fileset *fs, const char *name, size_t size, uint64_t seed) {
  uint8_t *a = random_bytes(size, seed), *b = random_bytes(size + 1, seed ^ 0xabcdef);
  char sc[2][66], side[80];
  hex_of(a, size, sc[0]);
  hex_of(b, size + 1, sc[1]);
  strcat(sc[0], "\n");
  strcat(sc[1], "\n");
  add_file(fs, name, a, size, b, size + 1);
  snprintf(side, sizeof side, "%s.sha256", name);
  add_file(fs, side, (uint8_t *)strdup(sc[0]), 65, (uint8_t *)strdup(sc[1]), 65);
}

/* The small set of the step tests: two tensors with sidecars, and a file the transaction creates. */
static void small_set(fileset *fs) {
  memset(fs, 0, sizeof *fs);
  add_tensor(fs, "w0.bin", 3000, 1);
  add_tensor(fs, "w1.bin", 70000, 2);
  add_file(fs, "added.bin", NULL, 0, random_bytes(5000, 3), 5000);
}

static void write_version(const fileset *fs, int k) {
  for (size_t i = 0; i < fs->n; i++) {
    if (fs->v[k][i]) put(fs->names[i], fs->v[k][i], fs->len[k][i]);
    else unlink(path_of(fs->names[i]));
  }
}

/* Things in the directory that match no pattern of the transaction, or look close to one: none
   may ever be touched. */
static const char *const decoy_files[] = {"notes.txt", "w0.bin.merge-txn.ABCDE", "w0.bin.tmp.ABCDEF",
                                          "w0.bin.other-txn.ABCDEF", ".other.txn-journal", "merge.txn-journal",
                                          NULL};
static void make_decoys(void) {
  for (const char *const *d = decoy_files; *d; d++) put(*d, *d, strlen(*d));
  assert_int_equal(mkdir(path_of("d.merge-txn.ABCDEF"), 0755), 0);
  assert_int_equal(symlink("notes.txt", path_of("l.merge-txn.ABCDEF")), 0);
}

static bool is_decoy(const char *name) {
  for (const char *const *d = decoy_files; *d; d++)
    if (strcmp(*d, name) == 0) return true;
  return strcmp(name, "d.merge-txn.ABCDEF") == 0 || strcmp(name, "l.merge-txn.ABCDEF") == 0;
}

static void check_decoys(void) {
  for (const char *const *d = decoy_files; *d; d++) {
    size_t len;
    uint8_t *p = slurp(*d, &len);
    if (!p) fail_msg("decoy %s was removed", *d);
    assert_memory_equal(p, *d, strlen(*d));
    free(p);
  }
  struct stat st;
  assert_int_equal(lstat(path_of("d.merge-txn.ABCDEF"), &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(lstat(path_of("l.merge-txn.ABCDEF"), &st), 0);
  assert_true(S_ISLNK(st.st_mode));
}

/* 0 when every file holds its old contents, 1 when every file holds its new ones; fails on a mix,
   on an unexpected file (a temporary, a journal) and on a touched decoy. */
static int dir_state(const fileset *fs, bool decoys) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    bool known = decoys && is_decoy(e->d_name);
    for (size_t i = 0; i < fs->n && !known; i++) known = strcmp(fs->names[i], e->d_name) == 0;
    if (!known) fail_msg("unexpected file left in the directory: %s", e->d_name);
  }
  closedir(d);
  if (decoys) check_decoys();
  int seen[2] = {0, 0};
  for (size_t i = 0; i < fs->n; i++) {
    size_t len = 0;
    uint8_t *p = slurp(fs->names[i], &len);
    bool is[2];
    for (int k = 0; k < 2; k++)
      is[k] = fs->v[k][i] ? p && len == fs->len[k][i] && memcmp(p, fs->v[k][i], len) == 0 : !p;
    free(p);
    if (!is[0] && !is[1]) fail_msg("%s holds neither its old nor its new bytes", fs->names[i]);
    if (is[0]) seen[0]++;
    if (is[1]) seen[1]++;
  }
  if (seen[0] == (int)fs->n) return 0;
  if (seen[1] == (int)fs->n) return 1;
  fail_msg("mixed state: %d of %zu files old, %d new", seen[0], fs->n, seen[1]);
  return -1;
}

/* Keep a copy of the directory as it is (names, bytes, modes), to start several cases from one
   crashed state without running the writer again. */
static void save_dir(void) { tu_sh("rm -rf '%s.saved' && cp -a '%s' '%s.saved'", dir, dir, dir); }
static void restore_dir(void) { tu_sh("rm -rf '%s' && cp -a '%s.saved' '%s'", dir, dir, dir); }

/* ---------------------------------------------------------------- the writer, in a child */

/* Stage version k of every file, each index through a different path of the API: fd with the
   digest given, fd with the digest left to the commit, bytes, fd left open for the commit. */
static int stage_all(mpk_txn *t, const fileset *fs, int k) {
  mpk_error e;
  for (size_t i = 0; i < fs->n; i++) {
    const uint8_t *data = fs->v[k][i];
    size_t len = fs->len[k][i];
    if (!data) continue; /* absent in this version: nothing to write (the test sets never do this) */
    if (i % 4 == 2) {
      if (mpk_txn_stage_bytes(t, fs->names[i], data, len, &e)) return -1;
      continue;
    }
    int fd;
    if (mpk_txn_stage(t, fs->names[i], &fd, &e)) return -1;
    for (size_t off = 0; off < len;) { /* in pieces, as a streaming writer does */
      size_t chunk = len - off < 65536 ? len - off : 65536;
      if (mpk_write_all(fd, data + off, chunk)) return -1;
      off += chunk;
    }
    if (i % 4 == 0 && mpk_txn_stage_done(t, fs->names[i], fs->hex[k][i], &e)) return -1;
    if (i % 4 == 1 && mpk_txn_stage_done(t, fs->names[i], NULL, &e)) return -1;
  }
  return 0;
}

/* Fork a writer that installs version k, stopped after commit step `stop` (-1: never).
   Returns its exit status: 10 stopped, 0 committed. */
static int child_commit(const fileset *fs, int k, int stop) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    mpk_txn *t;
    mpk_error e;
    if (mpk_txn_begin(dir, TXN, NULL, &t, &e)) _exit(3);
    if (stage_all(t, fs, k)) _exit(2);
    int rc = mpk_txn_commit_until(t, stop, &e);
    _exit(rc == MPK_TXN_STOPPED ? 10 : rc == 0 ? 0 : 4); /* a crash: no cleanup at all */
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

/* ---------------------------------------------------------------- (a) a crash after every step */

static void test_crash_after_every_commit_step(void **state) {
  (void)state;
  fileset fs;
  small_set(&fs);
  int n = (int)fs.n, last = n + 8;
  for (int k = 0; k <= last + 1; k++) {
    int stop = k <= last ? k : -1;
    fresh_dir();
    write_version(&fs, 0);
    make_decoys();
    int status = child_commit(&fs, 1, stop);
    assert_int_equal(status, stop < 0 ? 0 : 10);

    /* What recovery will do, asked read-only first. */
    mpk_txn_action expect = stop < 0 || k >= n + 7 ? MPK_TXN_NOTHING
                            : k <= 3               ? MPK_TXN_ROLLED_BACK
                                                   : MPK_TXN_ROLLED_FORWARD;
    mpk_txn_state st;
    mpk_error err;
    assert_int_equal(mpk_txn_inspect(dir, TXN, &st, &err), 0);
    assert_int_equal(st.pending, expect);
    assert_false(st.busy);
    assert_int_equal(st.journal, expect == MPK_TXN_ROLLED_FORWARD);
    if (st.journal) assert_int_equal(st.files, n);
    assert_int_equal(st.journal_tmp, k == 2 || k == 3);

    mpk_txn_outcome o;
    int rc = mpk_txn_recover(dir, TXN, &o, &err);
    if (rc) fail_msg("step %d: %s", k, tu_err(&err));
    assert_int_equal(o.action, expect);
    if (expect == MPK_TXN_ROLLED_FORWARD) {
      assert_int_equal(o.files, n);
      assert_int_equal(o.renamed, k <= 5 ? n : k - 5 >= n ? 0 : n - (k - 5));
      assert_int_equal(o.removed, 0);
    } else if (expect == MPK_TXN_ROLLED_BACK) {
      assert_int_equal(o.removed, n + (k == 2 || k == 3));
    }
    /* Not committed (the journal's name is not in place): all old. Committed: all new. */
    assert_int_equal(dir_state(&fs, true), k >= 4 ? 1 : 0);
    /* Recovery again: nothing left to do, nothing changes. */
    assert_int_equal(mpk_txn_recover(dir, TXN, &o, &err), 0);
    assert_int_equal(o.action, MPK_TXN_NOTHING);
    assert_int_equal(dir_state(&fs, true), k >= 4 ? 1 : 0);
  }
  fileset_free(&fs);
}

/* A crash after a commit step, then a crash after every step of the recovery, then recovery. */
static void test_crash_during_recovery(void **state) {
  (void)state;
  fileset fs;
  small_set(&fs);
  int n = (int)fs.n;
  /* Rolled back with a torn journal; forward before, during and after the renames. */
  const int commit_stops[] = {2, 4, 7, n + 6};
  for (size_t c = 0; c < sizeof commit_stops / sizeof *commit_stops; c++) {
    int k = commit_stops[c], want = k >= 4 ? 1 : 0;
    fresh_dir();
    write_version(&fs, 0);
    make_decoys();
    assert_int_equal(child_commit(&fs, 1, k), 10);
    save_dir();
    for (int j = 1;; j++) {
      restore_dir();
      mpk_txn_outcome o;
      mpk_error err;
      int rc = mpk_txn_recover_until(dir, TXN, j, &o, &err);
      if (rc != MPK_TXN_STOPPED && rc != 0) fail_msg("commit step %d, recovery step %d: %s", k, j, tu_err(&err));
      assert_int_equal(mpk_txn_recover(dir, TXN, &o, &err), 0);
      if (rc == 0) assert_int_equal(o.action, MPK_TXN_NOTHING); /* the first run finished */
      assert_int_equal(dir_state(&fs, true), want);
      if (rc == 0) break;
      assert_true(j < 100);
    }
  }
  fileset_free(&fs);
}

/* ---------------------------------------------------------------- (b) SIGKILL at random instants */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t) {
  double d = t - now_s();
  if (d <= 0) return;
  struct timespec ts = {.tv_sec = (time_t)d, .tv_nsec = (long)((d - (double)(time_t)d) * 1e9)};
  nanosleep(&ts, NULL);
}

typedef struct shared_page {
  _Atomic int phase; /* 1: the writer calls mpk_txn_commit */
} shared_page;

static bool journal_exists(void) {
  struct stat st;
  return stat(path_of(JOURNAL), &st) == 0;
}

/* Wait (polling, without sleeping) until `cond` holds or the child has exited. */
static bool wait_for(pid_t pid, shared_page *sp, int what, double limit) {
  for (;;) {
    if (what == 1 ? atomic_load(&sp->phase) >= 1 : journal_exists()) return true;
    if (now_s() > limit) return false;
    int status;
    if (what == 2 && waitpid(pid, &status, WNOHANG) == pid) {
      /* Reaped here: the caller must not wait again. Report it as "not reached". */
      assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      return false;
    }
  }
}

static void test_sigkill_loop(void **state) {
  (void)state;
  const char *seed_env = getenv("MPK_TXN_TEST_SEED");
  uint64_t seed = seed_env ? strtoull(seed_env, NULL, 10) : 20240806u;
  print_message("sigkill loop: seed %llu (set MPK_TXN_TEST_SEED to change it)\n", (unsigned long long)seed);
  fileset fs;
  memset(&fs, 0, sizeof fs);
  for (int i = 0; i < 5; i++) { /* 5 tensors and their sidecars */
    char name[32];
    snprintf(name, sizeof name, "layer%02d.bin", i);
    add_tensor(&fs, name, 320 * 1024, 100 + (uint64_t)i);
  }
  fresh_dir();
  write_version(&fs, 0);
  make_decoys();
  int cur = 0;
  shared_page *sp = mmap(NULL, sizeof *sp, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(sp != MAP_FAILED);

  /* Calibrate: how long a whole transaction, its commit, and the journal's lifetime take here. */
  double t_total = 0, t_commit = 0, t_journal = 0;
  for (int r = 0; r < 3; r++) {
    atomic_store(&sp->phase, 0);
    fflush(NULL);
    double t0 = now_s();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      mpk_txn *t;
      mpk_error e;
      if (mpk_txn_begin(dir, TXN, NULL, &t, &e) || stage_all(t, &fs, 1 - cur)) _exit(2);
      atomic_store(&sp->phase, 1);
      _exit(mpk_txn_commit(t, &e) ? 4 : 0);
    }
    assert_true(wait_for(pid, sp, 1, t0 + 10));
    double t1 = now_s(), t2 = t1;
    if (wait_for(pid, sp, 2, t0 + 10)) t2 = now_s();
    int status;
    waitpid(pid, &status, 0);
    double t3 = now_s();
    t_total += t3 - t0;
    t_commit += t3 - t1;
    t_journal += t3 - t2;
    cur = 1 - cur;
    assert_int_equal(dir_state(&fs, true), cur);
  }
  t_total /= 3, t_commit /= 3, t_journal /= 3;
  print_message("one transaction (%zu files, %.1f MiB): %.2f ms; commit %.2f ms; journal present %.3f ms\n", fs.n,
                (double)fs.n / 2 * 320 / 1024, t_total * 1e3, t_commit * 1e3, t_journal * 1e3);

  /* Kill: a third of the time at a uniform instant of the whole run, a third within the commit, a
     third within the journal's lifetime (the renames). Each window follows the machine's pace: it
     shrinks when a run finished before its kill, and grows slowly while kills land inside. Go on
     until at least 50 real kills and every kind of interruption was seen (a few seconds here), or a
     generous time limit is reached. */
  double window[3] = {t_total, t_commit, t_journal};
  int kills = 0, completed = 0, rolled_back = 0, before_renames = 0, mid_renames = 0, after_renames = 0,
      nothing = 0;
  double start = now_s();
  for (int it = 0;; it++) {
    bool covered = rolled_back && before_renames && mid_renames && after_renames;
    if ((kills >= 50 && covered) || now_s() - start > 60.0) break;
    int mode = it % 3;
    double frac = (double)(splitmix(&seed) >> 11) / 9007199254740992.0;
    atomic_store(&sp->phase, 0);
    fflush(NULL);
    double t0 = now_s();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      mpk_txn *t;
      mpk_error e;
      if (mpk_txn_begin(dir, TXN, NULL, &t, &e) || stage_all(t, &fs, 1 - cur)) _exit(2);
      atomic_store(&sp->phase, 1);
      _exit(mpk_txn_commit(t, &e) ? 4 : 0);
    }
    bool reaped = false, killed = false;
    int status = 0;
    if (mode == 0) {
      sleep_until(t0 + frac * window[0]);
    } else if (mode == 1) {
      if (wait_for(pid, sp, 1, t0 + 10)) sleep_until(now_s() + frac * window[1]);
    } else {
      if (!wait_for(pid, sp, 1, t0 + 10)) fail_msg("the writer never reached its commit");
      if (wait_for(pid, sp, 2, t0 + 10)) {
        double until = now_s() + frac * window[2];
        while (now_s() < until) { /* spin: sub-millisecond sleeps overshoot */
        }
      } else {
        reaped = true; /* finished before the journal was seen */
      }
    }
    if (!reaped) {
      kill(pid, SIGKILL);
      assert_int_equal(waitpid(pid, &status, 0), pid);
      if (WIFSIGNALED(status)) {
        assert_int_equal(WTERMSIG(status), SIGKILL);
        kills++;
        killed = true;
      } else {
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        completed++;
      }
    } else {
      completed++;
    }
    mpk_txn_outcome o;
    mpk_error err;
    if (mpk_txn_recover(dir, TXN, &o, &err)) fail_msg("after kill %d: %s", kills, tu_err(&err));
    switch (o.action) {
      case MPK_TXN_NOTHING: nothing++; break;
      case MPK_TXN_ROLLED_BACK: rolled_back++; break;
      case MPK_TXN_ROLLED_FORWARD:
        if (o.renamed == o.files) before_renames++;
        else if (o.renamed == 0) after_renames++;
        else mid_renames++;
        break;
    }
    bool late = !killed || (mode != 0 && o.action == MPK_TXN_NOTHING);
    window[mode] *= late ? 0.8 : 1.03;
    int now = dir_state(&fs, true);
    /* Rolled back: the old version stays; otherwise (forward, or the run completed) the new. */
    assert_int_equal(now, o.action == MPK_TXN_ROLLED_BACK ? cur : o.action == MPK_TXN_ROLLED_FORWARD ? 1 - cur : now);
    cur = now;
  }
  double spent = now_s() - start;
  print_message("%d kills (+%d runs that completed) in %.1f s: rolled back %d; rolled forward %d before the "
                "renames, %d during them, %d after them; nothing to do %d\n",
                kills, completed, spent, rolled_back, before_renames, mid_renames, after_renames, nothing);
  assert_true(kills >= 50);
  assert_true(rolled_back > 0);
  assert_true(before_renames > 0);
  assert_true(mid_renames > 0);
  assert_true(after_renames > 0);
  munmap(sp, sizeof *sp);
  fileset_free(&fs);
}

/* ---------------------------------------------------------------- (c) damaged journals */

typedef struct snapshot {
  size_t n;
  char names[64][256];
  uint8_t *data[64];
  size_t len[64];
} snapshot;

static void snap(snapshot *s) {
  memset(s, 0, sizeof *s);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    struct stat st;
    if (lstat(path_of(e->d_name), &st) || !S_ISREG(st.st_mode)) continue;
    assert_true(s->n < 64);
    snprintf(s->names[s->n], sizeof s->names[0], "%s", e->d_name);
    s->data[s->n] = slurp(e->d_name, &s->len[s->n]);
    s->n++;
  }
  closedir(d);
}

static void snap_free(snapshot *s) {
  for (size_t i = 0; i < s->n; i++) free(s->data[i]);
}

/* The directory holds exactly the snapshot's regular files, byte for byte. */
static void assert_unchanged(const snapshot *s) {
  snapshot now;
  snap(&now);
  assert_int_equal(now.n, s->n);
  for (size_t i = 0; i < s->n; i++) {
    size_t len;
    uint8_t *p = slurp(s->names[i], &len);
    if (!p) fail_msg("%s was removed", s->names[i]);
    assert_int_equal(len, s->len[i]);
    assert_memory_equal(p, s->data[i], len);
    free(p);
  }
  snap_free(&now);
}

/* A journal with a correct checksum line over `body` (which must end with "\n"). */
static void put_journal(const char *body) {
  char hex[65], *text = malloc(strlen(body) + 80);
  assert_non_null(text);
  hex_of(body, strlen(body), hex);
  sprintf(text, "%ssha256:%s\n", body, hex);
  put(JOURNAL, text, strlen(text));
  free(text);
}

/* Recovery, begin and (for a damaged journal) the read-only inspection refuse with `code`, naming
   `needle`, and change nothing. The inspection reads no file but the journal, so it cannot see a
   changed file (MPK_EMISMATCH): it reports the roll-forward recovery would attempt. */
static void expect_refused(int code, const char *needle) {
  snapshot s;
  snap(&s);
  mpk_error err;
  mpk_txn_outcome o;
  mpk_txn_state st;
  mpk_txn *t = NULL;
  assert_int_equal(mpk_txn_recover(dir, TXN, &o, &err), code);
  if (!strstr(err.file, needle) && !strstr(err.message, needle))
    fail_msg("expected %s in the error: %s", needle, tu_err(&err));
  assert_unchanged(&s);
  if (code == MPK_EMISMATCH) {
    assert_int_equal(mpk_txn_inspect(dir, TXN, &st, &err), 0);
    assert_int_equal(st.pending, MPK_TXN_ROLLED_FORWARD);
  } else {
    assert_int_equal(mpk_txn_inspect(dir, TXN, &st, &err), code);
  }
  assert_int_equal(mpk_txn_begin(dir, TXN, &o, &t, &err), code);
  assert_null(t);
  assert_unchanged(&s);
  snap_free(&s);
}

static void test_damaged_journal(void **state) {
  (void)state;
  fileset fs;
  small_set(&fs);
  size_t len;
  char temp0[256] = "";
  /* Each case starts from a transaction stopped right at its commit point. */
  fresh_dir();
  write_version(&fs, 0);
  assert_int_equal(child_commit(&fs, 1, 5), 10);
  save_dir();
  for (int c = 0; c < 11; c++) {
    restore_dir();
    uint8_t *j = slurp(JOURNAL, &len);
    assert_non_null(j);
    /* The name of w0.bin's temporary, read from the directory. */
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
      if (!strncmp(e->d_name, "w0.bin.merge-txn.", 17)) snprintf(temp0, sizeof temp0, "%s", e->d_name);
    closedir(d);
    assert_true(temp0[0]);
    char body[1024];
    switch (c) {
      case 0: /* cut by one byte */
        put(JOURNAL, j, len - 1);
        expect_refused(MPK_EMALFORMED, "truncated");
        break;
      case 1: /* cut in half */
        put(JOURNAL, j, len / 2);
        expect_refused(MPK_EMALFORMED, JOURNAL);
        break;
      case 2: /* empty */
        put(JOURNAL, "", 0);
        expect_refused(MPK_EMALFORMED, JOURNAL);
        break;
      case 3: /* one byte of the body changed */
        j[10] ^= 1;
        put(JOURNAL, j, len);
        expect_refused(MPK_EMALFORMED, "checksum does not match");
        break;
      case 4: /* checksum right, not JSON */
        put_journal("hello\n");
        expect_refused(MPK_EMALFORMED, "invalid JSON");
        break;
      case 5: /* an entry whose temporary is another file */
        snprintf(body, sizeof body,
                 "{\"entries\":[{\"final\":\"w1.bin\",\"sha256\":\"sha256:%s\",\"size\":3001,\"temp\":\"%s\"}],"
                 "\"format\":\"modelpkg-txn-journal\",\"name\":\"merge\",\"version\":1}\n",
                 fs.hex[1][0], temp0);
        put_journal(body);
        expect_refused(MPK_EMALFORMED, "a temporary of");
        break;
      case 6: /* an entry that leaves the directory */
        snprintf(body, sizeof body,
                 "{\"entries\":[{\"final\":\"../w0.bin\",\"sha256\":\"sha256:%s\",\"size\":3001,"
                 "\"temp\":\"../w0.bin.merge-txn.ABCDEF\"}],"
                 "\"format\":\"modelpkg-txn-journal\",\"name\":\"merge\",\"version\":1}\n",
                 fs.hex[1][0]);
        put_journal(body);
        expect_refused(MPK_EMALFORMED, "..");
        break;
      case 7: /* a later version */
        put_journal("{\"entries\":[],\"format\":\"modelpkg-txn-journal\",\"name\":\"merge\",\"version\":2}\n");
        expect_refused(MPK_EVERSION, "version 2");
        break;
      case 8: /* an unknown field */
        put_journal("{\"entries\":[],\"extra\":1,\"format\":\"modelpkg-txn-journal\",\"name\":\"merge\",\"version\":1}\n");
        expect_refused(MPK_EMALFORMED, "unknown field");
        break;
      case 9: /* another transaction's journal under this name */
        put_journal("{\"entries\":[],\"format\":\"modelpkg-txn-journal\",\"name\":\"build\",\"version\":1}\n");
        expect_refused(MPK_EMALFORMED, "merge");
        break;
      case 10: /* the same file twice */
        snprintf(body, sizeof body,
                 "{\"entries\":[{\"final\":\"w0.bin\",\"sha256\":\"sha256:%s\",\"size\":3001,\"temp\":\"%s\"},"
                 "{\"final\":\"w0.bin\",\"sha256\":\"sha256:%s\",\"size\":3001,\"temp\":\"%s\"}],"
                 "\"format\":\"modelpkg-txn-journal\",\"name\":\"merge\",\"version\":1}\n",
                 fs.hex[1][0], temp0, fs.hex[1][0], temp0);
        put_journal(body);
        expect_refused(MPK_EMALFORMED, "already entry 0");
        break;
    }
    free(j);
  }
  fileset_free(&fs);
}

/* After the commit point, a file that no longer holds the committed bytes is named, never rolled
   forward over, and nothing is changed. */
static void test_changed_after_commit(void **state) {
  (void)state;
  fileset fs;
  small_set(&fs);
  fresh_dir();
  write_version(&fs, 0);
  assert_int_equal(child_commit(&fs, 1, 5 + 2), 10); /* w0.bin and its sidecar renamed */
  save_dir();
  for (int c = 0; c < 3; c++) {
    restore_dir();
    if (c == 0) put("w0.bin", "tampered", 8);               /* in place, temp gone */
    if (c == 1) unlink(path_of("w0.bin.sha256"));           /* in place, then lost */
    if (c == 2) {                                           /* still a temporary */
      DIR *d = opendir(dir);
      struct dirent *e;
      char t1[256] = "";
      while ((e = readdir(d)))
        if (!strncmp(e->d_name, "w1.bin.merge-txn.", 17)) snprintf(t1, sizeof t1, "%s", e->d_name);
      closedir(d);
      assert_true(t1[0]);
      put(t1, "x", 1);
    }
    expect_refused(MPK_EMISMATCH, c == 0 ? "w0.bin" : c == 1 ? "w0.bin.sha256" : "w1.bin.merge-txn.");
    mpk_error err;
    mpk_txn_outcome o;
    assert_int_equal(mpk_txn_recover(dir, TXN, &o, &err), MPK_EMISMATCH);
    if (c == 0) assert_non_null(strstr(err.message, "holds 8 bytes"));
    if (c == 1) assert_non_null(strstr(err.message, "lost"));
  }
  fileset_free(&fs);
}

/* ---------------------------------------------------------------- (d) the lock */

static void test_lock(void **state) {
  (void)state;
  fresh_dir();
  put("a.bin", "old", 3);
  mpk_txn *t1 = NULL, *t2 = NULL;
  mpk_error err;
  mpk_txn_outcome o;
  mpk_txn_state st;
  assert_int_equal(mpk_txn_begin(dir, TXN, &o, &t1, &err), 0);
  assert_int_equal(o.action, MPK_TXN_NOTHING);
  assert_int_equal(mpk_txn_stage_bytes(t1, "a.bin", "new", 3, &err), 0);

  /* Same process, second begin: refused, naming the directory. */
  assert_int_equal(mpk_txn_begin(dir, TXN, NULL, &t2, &err), MPK_EIO);
  assert_null(t2);
  assert_non_null(strstr(err.message, "another merge transaction is in progress"));
  assert_string_equal(err.file, dir);
  /* Recovery must not take a live transaction's temporaries for leftovers. */
  assert_int_equal(mpk_txn_recover(dir, TXN, &o, &err), MPK_EIO);
  assert_non_null(strstr(err.message, "in progress"));
  assert_int_equal(mpk_txn_inspect(dir, TXN, &st, &err), 0);
  assert_true(st.busy);
  assert_int_equal(st.temps, 1);
  assert_int_equal(st.pending, MPK_TXN_ROLLED_BACK);

  /* Another process: refused too. */
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    mpk_txn *t;
    mpk_error e;
    int rc = mpk_txn_begin(dir, TXN, NULL, &t, &e);
    _exit(rc == MPK_EIO && strstr(e.message, "in progress") ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  assert_int_equal(mpk_txn_commit(t1, &err), 0);
  size_t len;
  uint8_t *p = slurp("a.bin", &len);
  assert_int_equal(len, 3);
  assert_memory_equal(p, "new", 3);
  free(p);
  /* Released by the commit. */
  assert_int_equal(mpk_txn_begin(dir, TXN, NULL, &t2, &err), 0);
  mpk_txn_abort(t2);
  /* A holder that dies releases it: a crashed writer never blocks the next one. */
  assert_int_equal(child_commit(&(fileset){0}, 1, 0), 10);
  assert_int_equal(mpk_txn_begin(dir, TXN, NULL, &t2, &err), 0);
  mpk_txn_abort(t2);
}

/* ---------------------------------------------------------------- (e) idempotence, begin recovers */

static void test_begin_recovers(void **state) {
  (void)state;
  fileset fs;
  small_set(&fs);
  /* Committed but interrupted mid-renames: begin completes it, under its own lock. */
  fresh_dir();
  write_version(&fs, 0);
  make_decoys();
  assert_int_equal(child_commit(&fs, 1, 6), 10);
  mpk_txn *t;
  mpk_error err;
  mpk_txn_outcome o;
  assert_int_equal(mpk_txn_begin(dir, TXN, &o, &t, &err), 0);
  assert_int_equal(o.action, MPK_TXN_ROLLED_FORWARD);
  assert_int_equal(o.files, fs.n);
  assert_int_equal(o.renamed, fs.n - 1);
  mpk_txn_abort(t);
  assert_int_equal(dir_state(&fs, true), 1);
  /* Not committed: begin rolls back. */
  fresh_dir();
  write_version(&fs, 0);
  make_decoys();
  assert_int_equal(child_commit(&fs, 1, 2), 10);
  assert_int_equal(mpk_txn_begin(dir, TXN, &o, &t, &err), 0);
  assert_int_equal(o.action, MPK_TXN_ROLLED_BACK);
  assert_int_equal(o.removed, fs.n + 1);
  mpk_txn_abort(t);
  assert_int_equal(dir_state(&fs, true), 0);
  /* Recovery of one name leaves another name's leftovers alone. */
  assert_int_equal(child_commit(&fs, 1, 1), 10);
  assert_int_equal(mpk_txn_recover(dir, "build", &o, &err), 0);
  assert_int_equal(o.action, MPK_TXN_NOTHING);
  mpk_txn_state st;
  assert_int_equal(mpk_txn_inspect(dir, TXN, &st, &err), 0);
  assert_int_equal(st.temps, fs.n);
  fileset_free(&fs);
}

/* ---------------------------------------------------------------- the writer's own paths */

static void test_abort_and_errors(void **state) {
  (void)state;
  fileset fs;
  small_set(&fs);
  fresh_dir();
  write_version(&fs, 0);
  make_decoys();
  mpk_txn *t = NULL;
  mpk_error err;
  /* Abort: the temporaries go, the targets stay. */
  assert_int_equal(mpk_txn_begin(dir, TXN, NULL, &t, &err), 0);
  assert_int_equal(stage_all(t, &fs, 1), 0);
  mpk_txn_abort(t);
  mpk_txn_abort(NULL);
  assert_int_equal(dir_state(&fs, true), 0);

  /* Names. */
  const char *bad_txn[] = {"", "a/b", "a b", ".merge", "012345678901234567890123456789012", NULL};
  for (const char **b = bad_txn; *b; b++) {
    assert_int_equal(mpk_txn_begin(dir, *b, NULL, &t, &err), MPK_EINVAL);
    assert_int_equal(mpk_txn_recover(dir, *b, NULL, &err), MPK_EINVAL);
  }
  assert_int_equal(mpk_txn_begin(dir, NULL, NULL, &t, &err), MPK_EINVAL);
  char missing[600];
  snprintf(missing, sizeof missing, "%s/nope", dir);
  assert_int_equal(mpk_txn_begin(missing, TXN, NULL, &t, &err), MPK_ENOTFOUND);
  assert_int_equal(mpk_txn_recover(missing, TXN, NULL, &err), MPK_ENOTFOUND);

  assert_int_equal(mpk_txn_begin(dir, TXN, NULL, &t, &err), 0);
  char longname[300];
  memset(longname, 'x', 250);
  longname[250] = '\0';
  const char *bad_final[] = {"", "a/b", "..", ".", "/abs", JOURNAL, JOURNAL_TMP, "w0.bin.merge-txn.ABCDEF",
                             longname, "\xff\xfe", NULL};
  int fd;
  for (const char **b = bad_final; *b; b++) {
    assert_int_equal(mpk_txn_stage(t, *b, &fd, &err), MPK_EINVAL);
    assert_int_equal(fd, -1);
  }
  assert_int_equal(mpk_txn_stage_bytes(t, "w0.bin", "x", 1, &err), 0);
  assert_int_equal(mpk_txn_stage(t, "w0.bin", &fd, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "already staged"));
  assert_int_equal(mpk_txn_stage_done(t, "w0.bin", NULL, &err), MPK_EINVAL);
  assert_int_equal(mpk_txn_stage_done(t, "w9.bin", NULL, &err), MPK_EINVAL);
  assert_int_equal(mpk_txn_stage(t, "w1.bin", &fd, &err), 0);
  assert_int_equal(mpk_txn_stage_done(t, "w1.bin", "ABC", &err), MPK_EINVAL);
  mpk_txn_abort(t);
  assert_int_equal(dir_state(&fs, true), 0);

  /* A target that cannot be replaced is refused before the commit point: nothing changes. */
  assert_int_equal(mkdir(path_of("sub"), 0755), 0);
  assert_int_equal(mpk_txn_begin(dir, TXN, NULL, &t, &err), 0);
  assert_int_equal(stage_all(t, &fs, 1), 0);
  assert_int_equal(mpk_txn_stage_bytes(t, "sub", "x", 1, &err), 0);
  assert_int_equal(mpk_txn_commit(t, &err), MPK_EINVAL);
  assert_non_null(strstr(err.file, "/sub"));
  assert_int_equal(rmdir(path_of("sub")), 0);
  assert_int_equal(dir_state(&fs, true), 0);

  /* An empty transaction commits to nothing. */
  assert_int_equal(mpk_txn_begin(dir, TXN, NULL, &t, &err), 0);
  assert_int_equal(mpk_txn_commit(t, &err), 0);
  assert_int_equal(dir_state(&fs, true), 0);
  fileset_free(&fs);
}

static bool contains(const uint8_t *p, size_t len, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(p + i, needle, n) == 0) return true;
  return false;
}

/* The journal on disk is the documented one (docs/transactions.md), and the new file keeps the mode
   of the one it replaces. */
static void test_journal_format_and_mode(void **state) {
  (void)state;
  fileset fs;
  memset(&fs, 0, sizeof fs);
  add_file(&fs, "a.bin", (uint8_t *)strdup("old"), 3, (uint8_t *)strdup("new"), 3);
  fresh_dir();
  write_version(&fs, 0);
  assert_int_equal(chmod(path_of("a.bin"), 0640), 0);
  assert_int_equal(child_commit(&fs, 1, 5), 10);
  size_t len;
  uint8_t *j = slurp(JOURNAL, &len);
  assert_non_null(j);
  char want[800], temp[256] = "";
  DIR *d = opendir(dir);
  struct dirent *e;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, "a.bin.merge-txn.", 16)) snprintf(temp, sizeof temp, "%s", e->d_name);
  closedir(d);
  snprintf(want, sizeof want,
           "{\"entries\":[{\"final\":\"a.bin\",\"sha256\":\"sha256:%s\",\"size\":3,\"temp\":\"%s\"}],"
           "\"format\":\"modelpkg-txn-journal\",\"name\":\"merge\",\"version\":1}\n",
           fs.hex[1][0], temp);
  size_t wl = strlen(want);
  assert_int_equal(len, wl + 72);
  assert_memory_equal(j, want, wl);
  char hex[65];
  hex_of(want, wl, hex);
  assert_true(contains(j + wl, 72, hex));
  assert_memory_equal(j + wl, "sha256:", 7);
  free(j);
  mpk_error err;
  assert_int_equal(mpk_txn_recover(dir, TXN, NULL, &err), 0);
  assert_int_equal(dir_state(&fs, false), 1);
  struct stat st;
  assert_int_equal(stat(path_of("a.bin"), &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  fileset_free(&fs);
}

static size_t open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  assert_non_null(d);
  size_t n = 0;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

/* Many files: finished files are synced in batches, so few descriptors stay open, and all land. */
static void test_many_files(void **state) {
  (void)state;
  fresh_dir();
  fileset fs;
  memset(&fs, 0, sizeof fs);
  mpk_txn *t;
  mpk_error err;
  size_t base = open_fds();
  assert_int_equal(mpk_txn_begin(dir, TXN, NULL, &t, &err), 0);
  char name[32], text[32];
  for (int i = 0; i < 300; i++) {
    snprintf(name, sizeof name, "f%03d", i);
    snprintf(text, sizeof text, "new %d", i);
    if (i % 2) {
      assert_int_equal(mpk_txn_stage_bytes(t, name, text, strlen(text), &err), 0);
    } else {
      int fd;
      put(name, "old", 3);
      assert_int_equal(mpk_txn_stage(t, name, &fd, &err), 0);
      assert_int_equal(mpk_write_all(fd, text, strlen(text)), 0);
      assert_int_equal(mpk_txn_stage_done(t, name, NULL, &err), 0);
    }
    assert_true(open_fds() <= base + 1 + 64 + 1);
  }
  assert_int_equal(mpk_txn_commit(t, &err), 0);
  assert_int_equal(open_fds(), base);
  for (int i = 0; i < 300; i++) {
    snprintf(name, sizeof name, "f%03d", i);
    snprintf(text, sizeof text, "new %d", i);
    size_t len;
    uint8_t *p = slurp(name, &len);
    assert_non_null(p);
    assert_int_equal(len, strlen(text));
    assert_memory_equal(p, text, len);
    free(p);
  }
  mpk_txn_state st;
  assert_int_equal(mpk_txn_inspect(dir, TXN, &st, &err), 0);
  assert_int_equal(st.pending, MPK_TXN_NOTHING);
}

/* A staging step that fails (here: a write beyond RLIMIT_FSIZE) poisons the transaction: the
   commit is refused and nothing changes. */
static void test_failed_stage_refuses_commit(void **state) {
  (void)state;
  fresh_dir();
  put("a.bin", "old", 3);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {.rlim_cur = 1000, .rlim_max = 1000};
    if (setrlimit(RLIMIT_FSIZE, &rl)) _exit(5);
    static uint8_t big[5000];
    mpk_txn *t;
    mpk_error e;
    if (mpk_txn_begin(dir, TXN, NULL, &t, &e)) _exit(3);
    if (mpk_txn_stage_bytes(t, "b.bin", "fine", 4, &e)) _exit(6);
    int rc = mpk_txn_stage_bytes(t, "a.bin", big, sizeof big, &e);
    if (rc != MPK_EIO || !strstr(e.file, "a.bin.merge-txn.") || !strstr(e.message, "cannot write the new a.bin"))
      _exit(7);
    rc = mpk_txn_commit(t, &e);
    _exit(rc == MPK_EINVAL && strstr(e.message, "cannot be committed") ? 0 : 8);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  fileset fs;
  memset(&fs, 0, sizeof fs);
  add_file(&fs, "a.bin", (uint8_t *)strdup("old"), 3, (uint8_t *)strdup("new"), 3);
  assert_int_equal(dir_state(&fs, false), 0); /* no temporary left, a.bin untouched, no b.bin */
  fileset_free(&fs);
}

/* The SIGKILL loop runs as its own ctest entry (test_core_txn_sigkill): `test_core_txn --sigkill`. */
int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crash_after_every_commit_step),
      cmocka_unit_test(test_crash_during_recovery),
      cmocka_unit_test(test_damaged_journal),
      cmocka_unit_test(test_changed_after_commit),
      cmocka_unit_test(test_lock),
      cmocka_unit_test(test_begin_recovers),
      cmocka_unit_test(test_abort_and_errors),
      cmocka_unit_test(test_journal_format_and_mode),
      cmocka_unit_test(test_many_files),
      cmocka_unit_test(test_failed_stage_refuses_commit),
  };
  const struct CMUnitTest kill_tests[] = {
      cmocka_unit_test(test_sigkill_loop),
  };
  if (argc > 1 && strcmp(argv[1], "--sigkill") == 0) return cmocka_run_group_tests(kill_tests, setup, teardown);
  return cmocka_run_group_tests(tests, setup, teardown);
}
