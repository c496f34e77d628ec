/* Shard files against their tensor cache: present, inside the package (opened beneath it, never
   through a link out of it), regular files, the declared size, the declared MD5. Shards are hashed
   in parallel (core/digest_pool.c). Problems of one kind are listed for the first
   MPK_LIST_MAX shards, then summed up in one line ("483 of 483 shards missing"). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlc/mlc.h"

enum { K_MISSING, K_UNREADABLE, K_SIZE, K_HASH, N_KINDS };
static const char *const kind_summary[N_KINDS] = {"missing", "not readable (see above)", "of the wrong size",
                                                  "with the wrong MD5"};

typedef struct sink {
  mpk_problem_fn fn;
  void *ctx;
  mpk_error *err;
  int first;
  mpk_tally count[N_KINDS];
  int code[N_KINDS];
} sink;

static void problem(sink *s, int kind, const mpk_error *e) {
  if (!s->first) {
    s->first = e->code;
    if (s->err) *s->err = *e;
  }
  if (kind >= 0) {
    s->code[kind] = e->code;
    if (!mpk_tally_keep(&s->count[kind])) return; /* summed up at the end */
  }
  if (s->fn) s->fn(s->ctx, e);
}

static void summaries(sink *s, const char *dir, size_t n) {
  for (int k = 0; k < N_KINDS; k++) {
    if (!mpk_tally_over(&s->count[k])) continue;
    mpk_error e;
    mpk_error_clear(&e);
    mpk_fail(&e, s->code[k], dir, NULL, "%zu of %zu shards %s (the first %d listed)", s->count[k].count, n,
             kind_summary[k], MPK_LIST_MAX);
    if (s->fn) s->fn(s->ctx, &e);
  }
}

int mpk_mlc_tensor_cache_verify(const mpk_mlc_tensor_cache *tc, const char *dir, unsigned workers,
                                mpk_progress_fn progress, void *progress_ctx, mpk_problem_fn on_problem,
                                void *problem_ctx, mpk_error *err) {
  if (!tc || !dir) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  size_t n = tc->n_shards;
  mpk_digest_job *jobs = calloc(n ? n : 1, sizeof *jobs);
  size_t *shard_of = calloc(n ? n : 1, sizeof *shard_of);
  if (!jobs || !shard_of) {
    free(jobs);
    free(shard_of);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  sink s = {.fn = on_problem, .ctx = problem_ctx, .err = err};
  size_t nj = 0;
  mpk_error e;
  for (size_t i = 0; i < n; i++) {
    const mpk_mlc_shard *sh = &tc->shards[i];
    mpk_error_clear(&e);
    int kind = -1;
    if (mpk_mlc_pkg_lstat(dir, sh->data_path) == MPK_MLC_PKG_ABSENT) {
      char *path = mpk_path_join(dir, sh->data_path);
      mpk_fail(&e, MPK_ENOTFOUND, path ? path : sh->data_path, NULL, "shard %zu (%s) is missing", i, sh->data_path);
      free(path);
      kind = K_MISSING;
    } else {
      /* Opened as the hash will open it: beneath the package, a regular file. */
      int fd;
      struct stat st;
      if (mpk_mlc_pkg_open(dir, sh->data_path, 0, &fd, &st, &e) != 0) {
        char msg[sizeof e.message];
        snprintf(msg, sizeof msg, "%s", e.message);
        snprintf(e.message, sizeof e.message, "shard %zu %.400s", i, msg);
        kind = K_UNREADABLE;
      } else {
        close(fd);
        if ((uint64_t)st.st_size != sh->nbytes) {
          char *path = mpk_path_join(dir, sh->data_path);
          mpk_fail(&e, MPK_EMISMATCH, path ? path : sh->data_path, NULL,
                   "shard %zu is %lld bytes, the tensor cache says %llu%s", i, (long long)st.st_size,
                   (unsigned long long)sh->nbytes, (uint64_t)st.st_size < sh->nbytes ? " (truncated)" : "");
          free(path);
          kind = K_SIZE;
        } else if (sh->md5sum) {
          jobs[nj] = (mpk_digest_job){.path = sh->data_path, .algo = MPK_DIGEST_MD5, .expected_size = sh->nbytes};
          shard_of[nj++] = i;
        }
      }
    }
    if (e.code) problem(&s, kind, &e);
  }
  mpk_error_clear(&e);
  int rc = mpk_digest_files_beneath(dir, jobs, nj, workers, progress, progress_ctx, &e);
  if (rc) {
    problem(&s, -1, &e);
  } else {
    for (size_t j = 0; j < nj; j++) {
      const mpk_mlc_shard *sh = &tc->shards[shard_of[j]];
      mpk_error_clear(&e);
      char *path = mpk_path_join(dir, jobs[j].path);
      const char *shown = path ? path : jobs[j].path;
      int kind = K_HASH;
      if (jobs[j].code) {
        mpk_fail(&e, jobs[j].code, shown, NULL, "cannot hash shard %zu", shard_of[j]);
        kind = K_UNREADABLE;
      } else if (jobs[j].size != sh->nbytes) {
        mpk_fail(&e, MPK_EMISMATCH, shown, NULL, "shard %zu changed size while it was hashed", shard_of[j]);
        kind = K_SIZE;
      } else if (strcmp(jobs[j].hex, sh->md5sum) != 0) {
        mpk_fail(&e, MPK_EMISMATCH, shown, NULL, "MD5 %s does not equal md5sum %s of shard %zu in the tensor cache",
                 jobs[j].hex, sh->md5sum, shard_of[j]);
      }
      free(path);
      if (e.code) problem(&s, kind, &e);
    }
  }
  summaries(&s, dir, n);
  free(jobs);
  free(shard_of);
  return s.first;
}
