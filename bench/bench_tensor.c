/* bench_tensor — time opening a MobileTransformers tensor as a view, and the load gate.
 *
 *   bench_tensor open [--iters N] [--touch | --populate] [--entry K] DIR
 *   bench_tensor gate [--workers N] [--repeat R] [--quiet] DIR
 *
 * DIR is a variant's inference directory: weight_handoff_map.json and the .bin files it names
 * (bench/tensor_package.py writes one).
 *
 * open: reads the map (timed once: map_us), then opens entry K's "weight" tensor
 * (mpk_mt_tensor_open: the declared dtype and shape, the exact-size check, a read-only mmap),
 * exports it as a DLPack DLTensor (mpk_tensor_view_dltensor, checked field by field) and closes
 * it. The first open+export+close of the process is timed alone (first_us: the process is cold,
 * and after drop_caches so are the inode and the file's pages); N more are timed one by one and
 * summarised (median, p10, p90, min, in microseconds). Proof that an open reads nothing: the
 * page faults (getrusage) per open, the resident set (/proc/self/statm) before the first open and
 * while the view is open, and how many of the file's pages are in the page cache right after the
 * first open (mincore; 0 after drop_caches means the open read nothing, -1 that mincore failed).
 * With --touch, one last view is opened and one byte of every 4 KiB page is read — the deferred
 * cost a runtime pays on first use of the data (touch_us, its faults, the resident set with every
 * page touched). With --populate (an experiment, not what the library does),
 * madvise(MADV_POPULATE_READ) prefaults the whole view in one call first (populate_us), then the
 * pages are touched.
 *
 *   RESULT mode=open bytes=.. iters=.. map_us=.. first_us=.. median_us=.. p10_us=.. p90_us=..
 *          min_us=.. minflt_per_open=.. majflt_per_open=.. first_minflt=.. first_majflt=..
 *          rss_before_kib=.. rss_open_kib=.. cached_pages_after_first=.. pages=..
 *   RESULT mode=touch|populate bytes=.. populate_us=.. populate_minflt=.. populate_majflt=..
 *          touch_us=.. minflt=.. majflt=.. rss_touched_kib=.. checksum=..
 *
 * gate: reads the map and runs mpk_mt_load_gate() with N workers (default 1) R times (default
 * 1); every run must find the map's every tensor verified (ready), else the program fails. Prints
 * the median wall time and MB/s (MB = 10^6 bytes) over the bytes of the tensors, CPU time and
 * peak RSS, then (unless --quiet) "DIGEST <hex>  <path>" per tensor, so a driver can compare
 * the digests with another peer's.
 *
 *   RESULT mode=gate workers=.. tensors=.. verified=.. bytes=.. runs=.. median_s=.. mbps=..
 *          cpu_s=.. maxrss_kib=..
 *
 * A benchmark, not a test: it fails only when something cannot be opened or verified. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <dlpack/dlpack.h>

#include "modelpkg.h"
#include "bench_util.h"

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
         (double)ru.ru_stime.tv_usec * 1e-6;
}

static void faults(long *minflt, long *majflt) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  *minflt = ru.ru_minflt;
  *majflt = ru.ru_majflt;
}

/* The current resident set in KiB (statm's second field is in pages). */
static long rss_kib(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The q-quantile of sorted v[0..n) (nearest rank). */
static double quantile(const double *v, size_t n, double q) {
  size_t k = (size_t)(q * (double)(n - 1) + 0.5);
  return v[k < n ? k : n - 1];
}

static double median(const double *v, size_t n) {
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(void) {
  fprintf(stderr,
          "usage: bench_tensor open [--iters N] [--touch | --populate] [--entry K] DIR\n"
          "       bench_tensor gate [--workers N] [--repeat R] [--quiet] DIR\n");
  exit(2);
}

static int fail(const char *what, int rc, const mpk_error *err) {
  char line[2048];
  mpk_error_format(err, line, sizeof line);
  fprintf(stderr, "bench_tensor: %s: %s (%s)\n", what, line, mpk_code_name(rc));
  return 1;
}

static mpk_mt_handoff *load_map(const char *dir, double *secs) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_handoff *map = NULL;
  double t0 = now_s();
  int rc = mpk_mt_handoff_load(dir, &map, &err);
  *secs = now_s() - t0;
  if (rc) {
    fail("the handoff map", rc, &err);
    return NULL;
  }
  return map;
}

/* One open + DLPack export + close, as a runtime would take a tensor; the export is checked so
   it cannot be optimised away and so a wrong view fails the benchmark. `keep` leaves it open. */
static int open_one(const char *dir, const mpk_mt_handoff_entry *e, mpk_tensor_view *v, int keep) {
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mt_tensor_open(dir, e, MPK_MT_ROLE_WEIGHT, v, &err);
  if (rc) return fail("mpk_mt_tensor_open", rc, &err);
  DLTensor t;
  if (mpk_tensor_view_dltensor(v, &t) != 0 || t.data != v->data || t.ndim != v->ndim ||
      t.device.device_type != kDLCPU || t.dtype.bits != v->dl_bits || t.dtype.code != v->dl_code ||
      (t.ndim > 0 && (t.shape[0] != v->shape[0] || t.strides[t.ndim - 1] != 1))) {
    fprintf(stderr, "bench_tensor: the DLTensor does not describe the view\n");
    return 1;
  }
  if (!keep) mpk_tensor_view_close(v);
  return 0;
}

/* Read one byte of every page: the first use of a view's data (each untouched page faults). */
static uint64_t touch_pages(const void *data, uint64_t nbytes, size_t pagesz, double *secs, long *minflt,
                            long *majflt) {
  const volatile uint8_t *p = data;
  uint64_t sum = 0;
  long mn0, mj0, mn1, mj1;
  faults(&mn0, &mj0);
  double t0 = now_s();
  for (uint64_t off = 0; off < nbytes; off += pagesz) sum += p[off];
  *secs = now_s() - t0;
  faults(&mn1, &mj1);
  *minflt = mn1 - mn0;
  *majflt = mj1 - mj0;
  return sum;
}

static int run_open(int argc, char **argv) {
  int iters = 1000, touch = 0, populate = 0, i = 0;
  size_t entry = 0;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--touch") == 0) { touch = 1; continue; }
    if (strcmp(argv[i], "--populate") == 0) { touch = populate = 1; continue; }
    if (i + 1 >= argc) usage();
    if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[++i]);
    else if (strcmp(argv[i], "--entry") == 0) entry = (size_t)strtoul(argv[++i], NULL, 10);
    else usage();
  }
  if (i + 1 != argc || iters < 0) usage();
  const char *dir = argv[i];
  double map_s;
  mpk_mt_handoff *map = load_map(dir, &map_s);
  if (!map) return 1;
  if (entry >= map->n_entries) {
    fprintf(stderr, "bench_tensor: the map has %zu entries\n", map->n_entries);
    return 1;
  }
  const mpk_mt_handoff_entry *e = &map->entries[entry];
  long pagesz = sysconf(_SC_PAGESIZE);

  /* The first open of the process, kept open to look at the resident set and the page cache. */
  mpk_tensor_view v;
  long mn0, mj0, mn1, mj1;
  long rss_before = rss_kib();
  faults(&mn0, &mj0);
  double t0 = now_s();
  if (open_one(dir, e, &v, 1)) return 1;
  double first_open_s = now_s() - t0;
  faults(&mn1, &mj1);
  long rss_open = rss_kib();
  size_t pages = (size_t)((v.nbytes + (uint64_t)pagesz - 1) / (uint64_t)pagesz);
  long cached = -1; /* -1: mincore failed — never read as "nothing cached" */
  unsigned char *vec = malloc(pages ? pages : 1);
  if (vec && mincore((void *)v.data, (size_t)v.nbytes, vec) == 0) {
    cached = 0;
    for (size_t p = 0; p < pages; p++) cached += vec[p] & 1;
  }
  free(vec);
  uint64_t nbytes = v.nbytes;
  t0 = now_s();
  mpk_tensor_view_close(&v);
  double first_s = first_open_s + (now_s() - t0);

  double *secs = calloc(iters ? (size_t)iters : 1, sizeof *secs);
  if (!secs) return 1;
  long mn2, mj2, mn3, mj3;
  faults(&mn2, &mj2);
  for (int k = 0; k < iters; k++) {
    t0 = now_s();
    if (open_one(dir, e, &v, 0)) return 1;
    secs[k] = now_s() - t0;
  }
  faults(&mn3, &mj3);
  qsort(secs, (size_t)iters, sizeof *secs, cmp_double);
  size_t n = (size_t)iters;
  printf("RESULT mode=open bytes=%llu iters=%d map_us=%.1f first_us=%.1f median_us=%.2f p10_us=%.2f p90_us=%.2f "
         "min_us=%.2f minflt_per_open=%.2f majflt_per_open=%.2f first_minflt=%ld first_majflt=%ld "
         "rss_before_kib=%ld rss_open_kib=%ld cached_pages_after_first=%ld pages=%zu\n",
         (unsigned long long)nbytes, iters, map_s * 1e6, first_s * 1e6, n ? median(secs, n) * 1e6 : -1,
         n ? quantile(secs, n, 0.10) * 1e6 : -1, n ? quantile(secs, n, 0.90) * 1e6 : -1, n ? secs[0] * 1e6 : -1,
         n ? (double)(mn3 - mn2) / (double)n : -1, n ? (double)(mj3 - mj2) / (double)n : -1, mn1 - mn0, mj1 - mj0,
         rss_before, rss_open, cached, pages);
  free(secs);

  if (touch) {
    if (open_one(dir, e, &v, 1)) return 1;
    double touch_s = 0, populate_s = 0;
    long tmn, tmj, pmn = 0, pmj = 0;
    if (populate) {
      /* The experiment: prefault the page tables in one call before the first use. */
      faults(&mn0, &mj0);
      t0 = now_s();
      if (madvise((void *)v.data, (size_t)v.nbytes, MADV_POPULATE_READ) != 0) {
        perror("bench_tensor: madvise(MADV_POPULATE_READ)");
        return 1;
      }
      populate_s = now_s() - t0;
      faults(&mn1, &mj1);
      pmn = mn1 - mn0;
      pmj = mj1 - mj0;
    }
    uint64_t sum = touch_pages(v.data, v.nbytes, (size_t)pagesz, &touch_s, &tmn, &tmj);
    printf("RESULT mode=%s bytes=%llu populate_us=%.1f populate_minflt=%ld populate_majflt=%ld touch_us=%.1f "
           "minflt=%ld majflt=%ld rss_touched_kib=%ld checksum=%llu\n",
           populate ? "populate" : "touch", (unsigned long long)v.nbytes, populate_s * 1e6, pmn, pmj, touch_s * 1e6,
           tmn, tmj, rss_kib(), (unsigned long long)sum);
    mpk_tensor_view_close(&v);
  }
  mpk_mt_handoff_free(map);
  return 0;
}

static int run_gate(int argc, char **argv) {
  unsigned workers = 1;
  int repeat = 1, quiet = 0, i = 0;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--quiet") == 0) { quiet = 1; continue; }
    if (i + 1 >= argc) usage();
    if (strcmp(argv[i], "--workers") == 0) workers = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--repeat") == 0) repeat = atoi(argv[++i]);
    else usage();
  }
  if (i + 1 != argc || repeat < 1) usage();
  const char *dir = argv[i];
  double *secs = calloc((size_t)repeat, sizeof *secs);
  if (!secs) return 1;
  double cpu0 = cpu_s();
  mpk_mt_gate_report *r = NULL;
  mpk_mt_handoff *map = NULL; /* the report's layer and dtype point into it: freed with it */
  uint64_t bytes = 0;
  for (int k = 0; k < repeat; k++) {
    mpk_mt_gate_report_free(r);
    mpk_mt_handoff_free(map);
    r = NULL;
    /* Timed as a runtime would gate a package: read the map, then verify every tensor. */
    double t0 = now_s(), map_s;
    map = load_map(dir, &map_s);
    if (!map) return 1;
    mpk_error err;
    mpk_error_clear(&err);
    mpk_mt_gate_options opts = {.struct_size = sizeof opts, .presence_only = 0, .workers = workers};
    int rc = mpk_mt_load_gate(dir, map, &opts, &r, &err);
    secs[k] = now_s() - t0;
    if (rc) return fail("mpk_mt_load_gate", rc, &err);
    if (!r->ready || r->no_merged_weights || r->n_verified != r->n_tensors || r->n_tensors != map->n_entries) {
      fprintf(stderr, "bench_tensor: the gate is not ready: %zu of %zu tensors verified\n", r->n_verified,
              r->n_tensors);
      for (size_t p = 0; p < r->n_problems; p++) {
        char line[2048];
        mpk_error_format(&r->problems[p], line, sizeof line);
        fprintf(stderr, "  %s\n", line);
      }
      return 1;
    }
    bytes = 0;
    for (size_t t = 0; t < r->n_tensors; t++) bytes += r->tensors[t].size;
    if (!quiet) printf("run %d: %.6f s  %.1f MB/s\n", k + 1, secs[k], (double)bytes / secs[k] / 1e6);
  }
  double cpu = (cpu_s() - cpu0) / repeat;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  qsort(secs, (size_t)repeat, sizeof *secs, cmp_double);
  double med = median(secs, (size_t)repeat);
  printf("RESULT mode=gate workers=%u tensors=%zu verified=%zu bytes=%llu runs=%d median_s=%.6f mbps=%.1f "
         "cpu_s=%.6f maxrss_kib=%ld\n",
         workers, r->n_tensors, r->n_verified, (unsigned long long)bytes, repeat, med, (double)bytes / med / 1e6, cpu,
         ru.ru_maxrss);
  if (!quiet)
    for (size_t t = 0; t < r->n_tensors; t++) printf("DIGEST %s  %s\n", r->tensors[t].actual, r->tensors[t].file);
  mpk_mt_gate_report_free(r);
  mpk_mt_handoff_free(map);
  free(secs);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) usage();
  if (strcmp(argv[1], "open") == 0) return run_open(argc - 2, argv + 2);
  if (strcmp(argv[1], "gate") == 0) return run_gate(argc - 2, argv + 2);
  usage();
}
