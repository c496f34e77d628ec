/* Crash safety of the merge (issue 6): a child process merges a multi-tensor package and is killed
   with SIGKILL at a random instant, over and over (at least 50 kills spread over the whole merge,
   its renames included). Every time, the load gate (which recovers first) must find the package
   ready and either entirely unmerged or entirely merged — byte for byte — and a following merge must
   do the right thing: merge an unmerged package to exactly the reference bytes, refuse a merged one. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/txn.h"
#include "mt_fixture.h"
#include "testutil.h"

#define N_ENTRIES 6
#define KILLS 60

static const fx_entry entries[N_ENTRIES] = {
    {"backbone.model.layers.0.q.base_layer", "float32", 128, 192, 128, 192, 8, NULL},
    {"backbone.model.layers.0.k.base_layer", "float16", 64, 192, 64, 192, 8, NULL},
    {"backbone.model.layers.0.v.base_layer", "float16", 64, 192, 64, 192, 8, NULL},
    {"backbone.model.layers.0.o.base_layer", "float32", 192, 128, 192, 128, 8, NULL},
    {"backbone.model.layers.1.q.base_layer", "bfloat16", 128, 192, 128, 192, 8, NULL},
    {"backbone.model.layers.1.up.base_layer", "float32", 256, 192, 256, 192, 8, NULL},
};

typedef struct snapshot {
  uint8_t *bin[N_ENTRIES];
  size_t len[N_ENTRIES];
} snapshot;

static void snap(const char *inf, snapshot *s) {
  char path[700];
  for (int i = 0; i < N_ENTRIES; i++) {
    snprintf(path, sizeof path, "%s/t%d.MatMul.weight.bin", inf, i);
    s->bin[i] = tu_read_file(path, &s->len[i]);
  }
}

static void snap_free(snapshot *s) {
  for (int i = 0; i < N_ENTRIES; i++) free(s->bin[i]);
}

static bool same(const snapshot *a, const snapshot *b, int i) {
  return a->len[i] == b->len[i] && memcmp(a->bin[i], b->bin[i], a->len[i]) == 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static mpk_mt_merge_options options(const char *root) {
  return (mpk_mt_merge_options){.adapter = fx_adapter(root), .workers = 2};
}

/* Fork a merge and kill it: after `delay` seconds, or — `at_journal` — `delay` seconds after its
   transaction's journal appears (the commit point; the renames follow). delay < 0: let it finish.
   Its exit status, or -1 when killed. */
static int child_merge(const char *root, double delay, bool at_journal) {
  char journal[700];
  snprintf(journal, sizeof journal, "%s/.merge.txn-journal", fx_inference(root));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    mpk_mt_merge_options o = options(root);
    mpk_mt_merge_report *r = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    _exit(mpk_mt_merge(fx_pkg(root), &o, &r, &err) ? 1 : 0);
  }
  int st;
  if (delay >= 0) {
    if (at_journal) /* watch for it; a merge that ends first is simply not killed */
      while (access(journal, F_OK) != 0) {
        if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        struct timespec poll = {0, 50000};
        nanosleep(&poll, NULL);
      }
    struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
  }
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The load gate over the inference directory: it recovers first, then must find every tensor ready.
   Ready means the shipped bytes, or merged bytes that modelpkg's merge record names: so this also
   proves the record is committed together with the tensors (a merged tensor without its record, or
   a record without its tensors, is refused). check never recovers: the gate (or mt merge) does. */
static void gate_ready(const char *root) {
  mpk_mt_handoff *map = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  char path[700];
  snprintf(path, sizeof path, "%s/weight_handoff_map.json", fx_inference(root));
  if (mpk_mt_handoff_load(path, &map, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_gate_report *g = NULL;
  if (mpk_mt_load_gate(fx_inference(root), map, NULL, &g, &err)) fail_msg("gate: %s", tu_err(&err));
  for (size_t i = 0; i < g->n_problems; i++) print_error("gate: %s\n", tu_err(&g->problems[i]));
  assert_true(g->ready);
  assert_int_equal(g->n_verified, N_ENTRIES);
  mpk_mt_gate_report_free(g);
  mpk_mt_handoff_free(map);
}

static void test_kill_anywhere(void **state) {
  (void)state;
  const char *root = strdup(tu_tmpdir());
  char pristine[600];
  snprintf(pristine, sizeof pristine, "%s/pristine", root);
  fx_options fo = {.alpha = 16, .rank = 8, .seed = 42};
  fx_build(root, entries, N_ENTRIES, &fo);
  tu_sh("cp -a '%s' '%s'", fx_pkg(root), pristine);
  snapshot old, merged;
  snap(fx_inference(root), &old);
  /* The reference result, and how long a whole merge takes here (median of three). */
  double t[3];
  for (int k = 0; k < 3; k++) {
    tu_sh("rm -rf '%s' && cp -a '%s' '%s'", fx_pkg(root), pristine, fx_pkg(root));
    double t0 = now();
    assert_int_equal(child_merge(root, -1, false), 0);
    t[k] = now() - t0;
  }
  double span = t[0] < t[1] ? (t[1] < t[2] ? t[1] : (t[0] < t[2] ? t[2] : t[0]))
                            : (t[0] < t[2] ? t[0] : (t[1] < t[2] ? t[2] : t[1]));
  snap(fx_inference(root), &merged);
  for (int i = 0; i < N_ENTRIES; i++) assert_false(same(&old, &merged, i));

  unsigned seed = 12345;
  int n_old = 0, n_new = 0, n_staging = 0, n_committed = 0;
  /* At least KILLS kills, and on until some landed both while staging and after the commit point
     (at most 3 × KILLS: the timing of a loaded machine varies). */
  int kill_i = 0;
  for (; kill_i < KILLS || ((n_staging == 0 || n_committed == 0) && kill_i < 3 * KILLS); kill_i++) {
    tu_sh("rm -rf '%s' && cp -a '%s' '%s'", fx_pkg(root), pristine, fx_pkg(root));
    /* Half at a uniform instant over the whole merge and a little past it; half within 2 ms of the
       moment its journal appears, i.e. during the renames and the cleanup of the commit. */
    double u = (double)(rand_r(&seed) % 10000) / 10000.0;
    double delay = kill_i % 2 ? 0.002 * u : span * 1.1 * u;
    child_merge(root, delay, kill_i % 2);
    /* Where the kill landed, from what it left (read-only): a journal means after the commit point
       (renames or cleanup pending), temporaries without one mean while staging. */
    mpk_txn_state st;
    mpk_error ierr;
    mpk_error_clear(&ierr);
    if (mpk_txn_inspect(fx_inference(root), "merge", &st, &ierr)) fail_msg("inspect: %s", tu_err(&ierr));
    n_committed += st.journal;
    n_staging += !st.journal && (st.temps > 0 || st.journal_tmp);
    gate_ready(root);
    snapshot now_s;
    snap(fx_inference(root), &now_s);
    bool all_old = true, all_new = true;
    for (int i = 0; i < N_ENTRIES; i++) {
      all_old &= same(&now_s, &old, i);
      all_new &= same(&now_s, &merged, i);
    }
    if (!all_old && !all_new) fail_msg("kill %d after %.4f s: some tensors merged and others not", kill_i, delay);
    n_old += all_old;
    n_new += all_new;
    snap_free(&now_s);
    /* no temporary file or journal is left behind */
    tu_sh("! ls -a '%s' | grep -q -e 'txn' -e 'journal'", fx_inference(root));
    /* and the next merge does the right thing */
    mpk_mt_merge_options o = options(root);
    mpk_mt_merge_report *r = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_mt_merge(fx_pkg(root), &o, &r, &err);
    if (all_new) {
      assert_int_equal(rc, MPK_EMISMATCH);
      assert_non_null(strstr(err.message, "already merged"));
    } else {
      if (rc) fail_msg("merge after an uncommitted kill: %s", tu_err(&err));
      snapshot again;
      snap(fx_inference(root), &again);
      for (int i = 0; i < N_ENTRIES; i++) assert_true(same(&again, &merged, i));
      snap_free(&again);
    }
    mpk_mt_merge_report_free(r);
  }
  print_message("%d kills over %.1f ms merges: %d left the package unmerged, %d merged; %d while staging, %d after "
                "the commit point with renames or cleanup pending\n",
                kill_i, span * 1e3, n_old, n_new, n_staging, n_committed);
  /* the kills landed on both sides of the commit point, and inside the commit itself */
  assert_true(n_old > 0 && n_new > 0);
  assert_true(n_staging > 0 && n_committed > 0);
  snap_free(&old);
  snap_free(&merged);
  tu_sh("rm -rf '%s'", root);
  free((char *)root);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_kill_anywhere)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
