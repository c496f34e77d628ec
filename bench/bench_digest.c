/* bench_digest — time mpk_digest_files() over shard files and report throughput and peak RSS.
 *
 *   bench_digest [--algo md5|sha256] [--workers N] [--repeat R] [--sizes] [--quiet] FILE...
 *
 * Runs mpk_digest_files() R times (default 1) over all FILEs with N workers (default 1) and
 * prints, per run, the wall time and MB/s (MB = 10^6 bytes), then one machine-readable line:
 *
 *   RESULT algo=md5 workers=1 files=4 bytes=1073741824 runs=1 median_s=1.234567 mbps=869.9
 *          cpu_s=1.230000 cpu_per_wall=1.00 rss_before_kib=4321 maxrss_kib=6543
 *
 * cpu_s is user+system CPU time per run (mean) and cpu_per_wall its ratio to the wall time:
 * close to the worker count when every worker had a core to itself. rss_before_kib is the
 * process's peak RSS before the first hash (program, libc, libcrypto); maxrss_kib is
 * getrusage(RUSAGE_SELF).ru_maxrss after the last one, so the difference is what hashing added.
 * With --sizes each job's expected_size is set from stat(), as modelpkg's callers do, so the pool
 * hands the files out largest first; without it every expected_size is 0 and the files go out in
 * the order given (the pool's behaviour before largest-first; used by run_mt.sh to compare both).
 * Unless --quiet, each file's digest follows as "DIGEST <hex>  <path>" (the md5sum/sha256sum
 * layout) so a driver script can check the peers agree.
 *
 * A benchmark, not a test: it only fails when a file cannot be hashed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "modelpkg.h"
#include "bench_util.h"

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static long maxrss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss; /* KiB on Linux */
}

static void usage(void) {
  fprintf(stderr, "usage: bench_digest [--algo md5|sha256] [--workers N] [--repeat R] [--sizes] [--quiet] FILE...\n");
  exit(2);
}

int main(int argc, char **argv) {
  mpk_digest_algo algo = MPK_DIGEST_MD5;
  unsigned workers = 1;
  int repeat = 1, quiet = 0, sizes = 0, i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--") == 0) { i++; break; }
    if (strcmp(argv[i], "--quiet") == 0) { quiet = 1; continue; }
    if (strcmp(argv[i], "--sizes") == 0) { sizes = 1; continue; }
    if (i + 1 >= argc) usage();
    if (strcmp(argv[i], "--algo") == 0) {
      const char *a = argv[++i];
      if (strcmp(a, "md5") == 0) algo = MPK_DIGEST_MD5;
      else if (strcmp(a, "sha256") == 0) algo = MPK_DIGEST_SHA256;
      else usage();
    } else if (strcmp(argv[i], "--workers") == 0) {
      workers = (unsigned)strtoul(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--repeat") == 0) {
      repeat = atoi(argv[++i]);
      if (repeat < 1) usage();
    } else {
      usage();
    }
  }
  size_t n = (size_t)(argc - i);
  if (n == 0) usage();

  mpk_digest_job *jobs = calloc(n, sizeof *jobs);
  double *secs = calloc((size_t)repeat, sizeof *secs);
  if (!jobs || !secs) return 1;
  long rss_before = maxrss_kib();
  double cpu0 = cpu_s();

  uint64_t bytes = 0;
  for (int r = 0; r < repeat; r++) {
    memset(jobs, 0, n * sizeof *jobs);
    for (size_t k = 0; k < n; k++) {
      jobs[k].path = argv[i + (int)k];
      jobs[k].algo = algo;
      struct stat st;
      if (sizes && stat(jobs[k].path, &st) == 0) jobs[k].expected_size = (uint64_t)st.st_size;
    }
    mpk_error err;
    mpk_error_clear(&err);
    double t0 = now_s();
    int rc = mpk_digest_files(jobs, n, workers, NULL, NULL, &err);
    double t1 = now_s();
    bytes = 0;
    for (size_t k = 0; k < n; k++) {
      if (rc == 0 && jobs[k].code) rc = jobs[k].code;
      bytes += jobs[k].size;
    }
    if (rc) {
      char line[2048];
      mpk_error_format(&err, line, sizeof line);
      fprintf(stderr, "bench_digest: %s (%s)\n", line, mpk_code_name(rc));
      return 1;
    }
    secs[r] = t1 - t0;
    if (!quiet)
      printf("run %d: %.6f s  %.1f MB/s\n", r + 1, secs[r], (double)bytes / secs[r] / 1e6);
  }
  long rss_after = maxrss_kib();
  double cpu = (cpu_s() - cpu0) / repeat, wall = 0;
  for (int r = 0; r < repeat; r++) wall += secs[r];
  wall /= repeat;

  qsort(secs, (size_t)repeat, sizeof *secs, cmp_double);
  double med = repeat % 2 ? secs[repeat / 2] : (secs[repeat / 2 - 1] + secs[repeat / 2]) / 2;
  printf("RESULT algo=%s workers=%u files=%zu bytes=%llu runs=%d median_s=%.6f mbps=%.1f "
         "cpu_s=%.6f cpu_per_wall=%.2f rss_before_kib=%ld maxrss_kib=%ld\n",
         algo == MPK_DIGEST_MD5 ? "md5" : "sha256", workers, n, (unsigned long long)bytes, repeat,
         med, (double)bytes / med / 1e6, cpu, cpu / wall, rss_before, rss_after);
  if (!quiet)
    for (size_t k = 0; k < n; k++) printf("DIGEST %s  %s\n", jobs[k].hex, jobs[k].path);
  free(jobs);
  free(secs);
  return 0;
}
