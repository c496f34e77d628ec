/* bench_chunk — an experiment, not a peer: how fast would mpk_digest_files() be with another
 * read size?
 *
 *   bench_chunk --algo md5|sha256 --chunk-kib K [--workers N] FILE...
 *   bench_chunk --algo md5|sha256 --library [--workers N] FILE...
 *   bench_chunk --algo none --chunk-kib K [--workers N] FILE...
 *   bench_chunk --algo ... --chunk-kib K --thp [--workers N] FILE...
 *   bench_chunk --algo ... --mmap-kib K [--workers N] FILE...
 *
 * With --chunk-kib it runs a copy of src/core/digest_pool.c's loop (open, POSIX_FADV_SEQUENTIAL,
 * read() into one malloc'ed buffer of K KiB per worker, EVP_DigestUpdate, N threads taking the
 * next file from a shared counter) so that read sizes can be compared without touching src/.
 * With --algo none the same loop only reads (the cost of read() alone: the copy out of the page
 * cache). With --library it calls mpk_digest_files() itself, as the control (its CHUNK is 1 MiB).
 * Two more ways to feed the hash, for docs/PERFORMANCE.md section 1: --thp reads into a buffer
 * that is 2 MiB-aligned and madvise(MADV_HUGEPAGE)'d (fewer TLB misses in the copy), and
 * --mmap-kib maps the file K KiB at a time, populates the window with
 * madvise(MADV_POPULATE_READ) and hashes the page cache in place (no copy; page-table work
 * instead), then unmaps it.
 * run_chunk.sh interleaves all of them with the library. Prints one line:
 *
 *   RESULT variant=chunk-128k algo=sha256 workers=1 bytes=... wall_s=... cpu_s=... mbps=...
 *          mbps_cpu=... maxrss_kib=...
 *
 * This file is a copy of the library's loop for measurement only; the library keeps one hash
 * loop (src/core/digest_pool.c), and any change belongs there. */
#define _GNU_SOURCE /* madvise(), MADV_HUGEPAGE */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "modelpkg.h"
#include "bench_util.h"

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

static const EVP_MD *g_md;
static size_t g_chunk, g_map;
static int g_thp;
static char **g_files;
static size_t g_n;
static atomic_size_t g_next;
static atomic_ullong g_bytes;

static volatile unsigned char buf_sink;

static void *worker(void *arg) {
  (void)arg;
  unsigned char *buf = NULL;
  if (g_thp) {
    size_t sz = (g_chunk + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    if (posix_memalign((void **)&buf, 2u << 20, sz)) exit(1);
    madvise(buf, sz, MADV_HUGEPAGE);
  } else if (!g_map) {
    buf = malloc(g_chunk);
  }
  if (!buf && !g_map) exit(1);
  for (;;) {
    size_t i = atomic_fetch_add(&g_next, 1);
    if (i >= g_n) break;
    int fd = open(g_files[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0) { perror(g_files[i]); exit(1); }
#ifdef POSIX_FADV_SEQUENTIAL
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    EVP_MD_CTX *ctx = g_md ? EVP_MD_CTX_new() : NULL;
    if (g_md && (!ctx || !EVP_DigestInit_ex(ctx, g_md, NULL))) exit(1);
    struct stat st;
    if (g_map && fstat(fd, &st)) { perror(g_files[i]); exit(1); }
    for (off_t at = 0; g_map && at < st.st_size;) {
      size_t n = (size_t)(st.st_size - at) < g_map ? (size_t)(st.st_size - at) : g_map;
      unsigned char *p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, at);
      if (p == MAP_FAILED || madvise(p, n, MADV_POPULATE_READ)) { perror(g_files[i]); exit(1); }
      if (g_md) EVP_DigestUpdate(ctx, p, n);
      else for (size_t k = 0; k < n; k += 4096) buf_sink ^= p[k];
      munmap(p, n);
      at += (off_t)n;
      atomic_fetch_add(&g_bytes, (unsigned long long)n);
    }
    for (; !g_map;) {
      ssize_t got = read(fd, buf, g_chunk);
      if (got < 0) { perror(g_files[i]); exit(1); }
      if (got == 0) break;
      if (g_md) EVP_DigestUpdate(ctx, buf, (size_t)got);
      atomic_fetch_add(&g_bytes, (unsigned long long)got);
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (g_md) EVP_DigestFinal_ex(ctx, d, &len);
    EVP_MD_CTX_free(ctx);
    close(fd);
  }
  free(buf);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: bench_chunk --algo md5|sha256|none (--chunk-kib K [--thp] | --mmap-kib K | --library) "
                  "[--workers N] FILE...\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *algo = "md5";
  unsigned workers = 1;
  int library = 0, i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--library") == 0) { library = 1; continue; }
    if (strcmp(argv[i], "--thp") == 0) { g_thp = 1; continue; }
    if (i + 1 >= argc) usage();
    if (strcmp(argv[i], "--algo") == 0) algo = argv[++i];
    else if (strcmp(argv[i], "--chunk-kib") == 0) g_chunk = strtoul(argv[++i], NULL, 10) << 10;
    else if (strcmp(argv[i], "--mmap-kib") == 0) g_map = strtoul(argv[++i], NULL, 10) << 10;
    else if (strcmp(argv[i], "--workers") == 0) workers = (unsigned)strtoul(argv[++i], NULL, 10);
    else usage();
  }
  if (strcmp(algo, "md5") && strcmp(algo, "sha256") && strcmp(algo, "none")) usage();
  if (i >= argc || workers < 1 || (!library && !g_chunk && !g_map) || (library && !strcmp(algo, "none")) ||
      (g_map && (g_chunk || g_thp || library)) || (g_map & 4095))
    usage();
  g_files = argv + i;
  g_n = (size_t)(argc - i);
  g_md = strcmp(algo, "md5") == 0 ? EVP_md5() : strcmp(algo, "sha256") == 0 ? EVP_sha256() : NULL;

  char variant[64];
  double c0 = cpu_s(), t0 = now_s();
  if (library) {
    snprintf(variant, sizeof variant, "library");
    mpk_digest_job *jobs = calloc(g_n, sizeof *jobs);
    if (!jobs) return 1;
    for (size_t k = 0; k < g_n; k++) {
      jobs[k].path = g_files[k];
      jobs[k].algo = strcmp(algo, "md5") == 0 ? MPK_DIGEST_MD5 : MPK_DIGEST_SHA256;
    }
    mpk_error err;
    if (mpk_digest_files(jobs, g_n, workers, NULL, NULL, &err)) return 1;
    for (size_t k = 0; k < g_n; k++) {
      if (jobs[k].code) return 1;
      g_bytes += jobs[k].size;
    }
    free(jobs);
  } else {
    if (g_map) snprintf(variant, sizeof variant, "mmap-%zuk", g_map >> 10);
    else snprintf(variant, sizeof variant, "chunk-%zuk%s", g_chunk >> 10, g_thp ? "-thp" : "");
    pthread_t th[64];
    if (workers > 64) workers = 64;
    for (unsigned t = 1; t < workers; t++) pthread_create(&th[t], NULL, worker, NULL);
    worker(NULL);
    for (unsigned t = 1; t < workers; t++) pthread_join(th[t], NULL);
  }
  double wall = now_s() - t0, cpu = cpu_s() - c0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  unsigned long long bytes = atomic_load(&g_bytes);
  printf("RESULT variant=%s algo=%s workers=%u bytes=%llu wall_s=%.6f cpu_s=%.6f mbps=%.1f "
         "mbps_cpu=%.1f maxrss_kib=%ld\n",
         variant, algo, workers, bytes, wall, cpu, (double)bytes / wall / 1e6,
         (double)bytes / cpu / 1e6, ru.ru_maxrss);
  return 0;
}
