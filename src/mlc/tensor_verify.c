/* Shard files against their tensor cache: present, inside the package, the declared size, the
   declared MD5. Shards are hashed in parallel (core/digest_pool.c). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mlc.h"

static void problem(mpk_problem_fn fn, void *ctx, const mpk_error *e, int *first, mpk_error *err) {
  if (fn) fn(ctx, e);
  if (!*first) {
    *first = e->code;
    if (err) *err = *e;
  }
}

int mpk_mlc_tensor_cache_verify(const mpk_mlc_tensor_cache *tc, const char *dir, unsigned workers,
                                mpk_progress_fn progress, void *progress_ctx, mpk_problem_fn on_problem,
                                void *problem_ctx, mpk_error *err) {
  if (!tc || !dir) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  size_t n = tc->n_shards;
  mpk_digest_job *jobs = calloc(n ? n : 1, sizeof *jobs);
  char **paths = calloc(n ? n : 1, sizeof *paths);
  size_t *shard_of = calloc(n ? n : 1, sizeof *shard_of);
  if (!jobs || !paths || !shard_of) {
    free(jobs);
    free(paths);
    free(shard_of);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  int first = 0;
  size_t nj = 0;
  mpk_error e;
  for (size_t i = 0; i < n; i++) {
    const mpk_mlc_shard *sh = &tc->shards[i];
    mpk_error_clear(&e);
    paths[i] = mpk_path_join(dir, sh->data_path);
    struct stat st;
    if (!paths[i]) {
      mpk_fail(&e, MPK_ENOMEM, dir, NULL, "out of memory");
    } else if (stat(paths[i], &st) != 0 || !S_ISREG(st.st_mode)) {
      mpk_fail(&e, MPK_ENOTFOUND, paths[i], NULL, "shard %zu (%s) is missing", i, sh->data_path);
    } else if (!mpk_path_resolves_inside(dir, paths[i])) {
      mpk_fail(&e, MPK_EMALFORMED, paths[i], NULL, "shard %zu resolves outside the package directory", i);
    } else if ((uint64_t)st.st_size != sh->nbytes) {
      mpk_fail(&e, MPK_EMISMATCH, paths[i], NULL, "shard is %lld bytes, the tensor cache says %llu%s",
               (long long)st.st_size, (unsigned long long)sh->nbytes,
               (uint64_t)st.st_size < sh->nbytes ? " (truncated)" : "");
    } else if (sh->md5sum) {
      jobs[nj] = (mpk_digest_job){.path = paths[i], .algo = MPK_DIGEST_MD5, .expected_size = sh->nbytes};
      shard_of[nj++] = i;
    }
    if (e.code) problem(on_problem, problem_ctx, &e, &first, err);
  }
  mpk_error_clear(&e);
  int rc = mpk_digest_files(jobs, nj, workers, progress, progress_ctx, &e);
  if (rc) {
    problem(on_problem, problem_ctx, &e, &first, err);
  } else {
    for (size_t j = 0; j < nj; j++) {
      const mpk_mlc_shard *sh = &tc->shards[shard_of[j]];
      mpk_error_clear(&e);
      if (jobs[j].code)
        mpk_fail(&e, jobs[j].code, jobs[j].path, NULL, "cannot hash shard %zu", shard_of[j]);
      else if (jobs[j].size != sh->nbytes)
        mpk_fail(&e, MPK_EMISMATCH, jobs[j].path, NULL, "shard changed size while it was hashed");
      else if (strcmp(jobs[j].hex, sh->md5sum) != 0)
        mpk_fail(&e, MPK_EMISMATCH, jobs[j].path, NULL,
                 "MD5 %s does not equal md5sum %s of shard %zu in the tensor cache", jobs[j].hex,
                 sh->md5sum, shard_of[j]);
      if (e.code) problem(on_problem, problem_ctx, &e, &first, err);
    }
  }
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
  free(jobs);
  free(shard_of);
  return first;
}
