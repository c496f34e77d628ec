/* bench_merge — time the LoRA merge kernels (src/mt/merge_kernel.c) against the memory floor.
 *
 *   bench_merge gen  --dir D [--rows R --cols C --rank K --dtype f16 --transposed --seed S]
 *   bench_merge run  --dir D --mode buf|fd|memcpy|copyfd [--rows .. --cols .. --rank .. --dtype ..
 *                    --transposed --scale S --threads T --iters N --impl auto|portable|avx2|avx512
 *                    --block-rows N --save FILE]
 *   bench_merge model --dir D --mode merge|copy [--layers 16 --rank 16 --dtype f16 --threads T
 *                    --iters N --transposed]
 *   bench_merge bw   [--mib 512 --iters N]
 *
 * gen writes the inputs run reads, and that the numpy peer reads too (bench/run_merge.sh):
 * D/base.bin (W, rows × cols of dtype, values uniform in [-1, 1)), D/A.bin ([rank, in] float32)
 * and D/B.bin ([out, rank] float32), from a fixed seed.
 *
 * run maps D/base.bin (read once first, so it is in memory) and times N iterations (after one
 * untimed) of one of:
 *   buf     mpk_merge_dense_to_buf() into a buffer allocated and written once before timing
 *   fd      mpk_merge_dense_to_fd() into D/out.bin, truncated before every iteration (untimed):
 *           what the merge command does, minus the fsync
 *   memcpy  memcpy(out, base, bytes): reading the base and writing the result once at this
 *           machine's memory bandwidth — the floor for buf
 *   copyfd  one pwrite() of the whole base into D/copy.bin, truncated before every iteration —
 *           the floor for fd (the same page-cache writes, no arithmetic)
 * and prints one line per iteration and
 *   RESULT mode=.. impl=.. threads=.. rows=.. cols=.. rank=.. dtype=.. bytes=.. iters=..
 *          median_s=.. min_s=.. gbps=.. cpu_s=.. maxrss_kib=..
 * where bytes is the size of W, gbps = 2·bytes / median_s / 1e9 (bytes read plus bytes written)
 * and cpu_s the median CPU time of an iteration (all threads). --save writes the last result to FILE.
 *
 * model merges every attention and MLP projection of LAYERS layers of a 1B-parameter-class
 * decoder (Llama-3.2-1B's shapes: hidden 2048, 8 KV heads of 64, MLP 8192; q, k, v, o, gate, up,
 * down; [out, in] float16, or [in, out] with --transposed) with rank-RANK adapters: each base tensor
 * lives in memory (layer 0 random, copied into the others), each result
 * goes through mpk_merge_dense_to_fd() into its own file in D, closed and removed after it.
 * --mode copy writes the base tensors instead (one pwrite each): the floor.
 *   RESULT mode=model-merge|model-copy threads=.. layers=.. tensors=.. params=.. bytes=.. iters=..
 *          median_s=.. min_s=.. gbps=.. cpu_s=.. maxrss_kib=..
 *
 * bw times memcpy() between two resident buffers of MIB MiB (far larger than any cache): the
 * sustained memory bandwidth of one core, beside the 32 MiB copy of run --mode memcpy.
 *   RESULT mode=bw bytes=.. iters=.. median_s=.. min_s=.. gbps=..   (gbps counts read + write)
 *
 * A benchmark, not a test: it fails only when something cannot be read or written. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "modelpkg.h"
#include "mt/merge/merge_kernel.h"
#include "bench_util.h"

/* CPU time of the process, all threads (precise, unlike getrusage's tick-split figures). */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long maxrss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "bench_merge: ");
  fprintf(stderr, fmt, arg);
  fputc('\n', stderr);
  exit(1);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) {
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static float uni(void) { return (float)((rnd() >> 40) * 0x1p-24) * 2.0f - 1.0f; }

static void fill(void *p, size_t n, mpk_mk_dtype dt) {
  for (size_t k = 0; k < n; k++) {
    float v = uni();
    if (dt == MPK_MK_F16) ((uint16_t *)p)[k] = mpk_mk_f32_to_f16(v);
    else if (dt == MPK_MK_BF16) ((uint16_t *)p)[k] = mpk_mk_f32_to_bf16(v);
    else ((float *)p)[k] = v;
  }
}

static void write_all(int fd, const void *p, size_t n, const char *what) {
  const char *b = p;
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w <= 0) die("cannot write %s", what);
    b += w;
    n -= (size_t)w;
  }
}

static void pwrite_all(int fd, const void *p, size_t n, const char *what) {
  const char *b = p;
  off_t off = 0;
  while (n) {
    ssize_t w = pwrite(fd, b, n, off);
    if (w <= 0) die("cannot write %s", what);
    b += w;
    off += w;
    n -= (size_t)w;
  }
}

static void save(const char *path, const void *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("cannot create %s", path);
  write_all(fd, p, n, path);
  close(fd);
}

static const void *map_file(const char *path, size_t want) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) die("cannot open %s (run gen first)", path);
  struct stat st;
  if (fstat(fd, &st) || (size_t)st.st_size != want) die("%s has the wrong size for these options", path);
  void *p = mmap(NULL, want, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) die("cannot map %s", path);
  volatile uint8_t sink = 0;
  for (size_t k = 0; k < want; k += 4096) sink ^= ((const uint8_t *)p)[k];
  (void)sink;
  return p;
}

static char *join(const char *dir, const char *name) {
  char *s = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(s, "%s/%s", dir, name);
  return s;
}

static void fail_err(const mpk_error *e) {
  char buf[1024];
  mpk_error_format(e, buf, sizeof buf);
  die("%s", buf);
}

typedef struct opts {
  const char *cmd, *dir, *mode, *save;
  int64_t rows, cols, rank, block_rows;
  int transposed, threads, iters, layers, mib;
  mpk_mk_dtype dt;
  mpk_mk_impl impl;
  float scale;
  uint64_t seed;
} opts;

static void result_line(const char *mode, const opts *o, size_t bytes, double *t, int n, double cpu) {
  double min = t[0];
  for (int i = 1; i < n; i++)
    if (t[i] < min) min = t[i];
  double med = median(t, n);
  printf("RESULT mode=%s impl=%s threads=%d rows=%lld cols=%lld rank=%lld dtype=%s transposed=%d bytes=%zu iters=%d "
         "median_s=%.6f min_s=%.6f gbps=%.3f cpu_s=%.6f maxrss_kib=%ld\n",
         mode, mpk_mk_impl_name(o->impl), o->threads, (long long)o->rows, (long long)o->cols, (long long)o->rank,
         o->dt == MPK_MK_F32 ? "float32" : o->dt == MPK_MK_F16 ? "float16" : "bfloat16", o->transposed, bytes, n, med,
         min, 2.0 * (double)bytes / med / 1e9, cpu, maxrss_kib());
}

static void cmd_gen(const opts *o) {
  size_t n = (size_t)(o->rows * o->cols), es = mpk_mk_dtype_size(o->dt);
  int64_t out = o->transposed ? o->cols : o->rows, in = o->transposed ? o->rows : o->cols;
  rng ^= o->seed;
  void *w = malloc(n * es);
  float *A = malloc((size_t)(o->rank * in) * 4), *B = malloc((size_t)(out * o->rank) * 4);
  if (!w || !A || !B) die("%s", "out of memory");
  fill(w, n, o->dt);
  fill(A, (size_t)(o->rank * in), MPK_MK_F32);
  fill(B, (size_t)(out * o->rank), MPK_MK_F32);
  char *pw = join(o->dir, "base.bin"), *pa = join(o->dir, "A.bin"), *pb = join(o->dir, "B.bin");
  save(pw, w, n * es);
  save(pa, A, (size_t)(o->rank * in) * 4);
  save(pb, B, (size_t)(out * o->rank) * 4);
  printf("GEN rows=%lld cols=%lld rank=%lld bytes=%zu\n", (long long)o->rows, (long long)o->cols, (long long)o->rank,
         n * es);
  free(w), free(A), free(B), free(pw), free(pa), free(pb);
}

static void cmd_run(opts *o) {
  size_t n = (size_t)(o->rows * o->cols), es = mpk_mk_dtype_size(o->dt), bytes = n * es;
  int64_t out = o->transposed ? o->cols : o->rows, in = o->transposed ? o->rows : o->cols;
  char *pw = join(o->dir, "base.bin"), *pa = join(o->dir, "A.bin"), *pb = join(o->dir, "B.bin");
  const void *base = map_file(pw, bytes);
  const float *A = map_file(pa, (size_t)(o->rank * in) * 4), *B = map_file(pb, (size_t)(out * o->rank) * 4);
  mpk_merge_dense m = {.name = "base.bin", .base = base, .base_len = bytes, .dtype = o->dt, .rows = o->rows,
                       .cols = o->cols, .transposed = o->transposed, .A = A, .B = B, .rank = o->rank,
                       .scale = o->scale, .impl = o->impl, .block_rows = o->block_rows};
  if (o->impl == MPK_MK_AUTO) o->impl = mpk_mk_impl_best();
  mpk_error e;
  mpk_error_clear(&e);
  uint8_t *buf = NULL;
  int fd = -1;
  const char *mode = o->mode;
  if (!strcmp(mode, "buf") || !strcmp(mode, "memcpy")) {
    buf = malloc(bytes);
    if (!buf) die("%s", "out of memory");
    memset(buf, 0x5a, bytes); /* fault the pages in before timing (not 0: malloc+memset(0) is calloc) */
  } else if (!strcmp(mode, "fd") || !strcmp(mode, "copyfd")) {
    char *path = join(o->dir, !strcmp(mode, "fd") ? "out.bin" : "copy.bin");
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("cannot create %s", path);
    free(path);
  } else {
    die("unknown mode %s", mode);
  }
  double *t = calloc((size_t)o->iters, sizeof(double)), *cpu = calloc((size_t)o->iters, sizeof(double));
  for (int it = -1; it < o->iters; it++) { /* iteration -1 warms up, untimed */
    if (fd >= 0 && ftruncate(fd, 0)) die("%s", "cannot truncate the output");
    double c0 = cpu_s(), t0 = now_s();
    if (!strcmp(mode, "buf")) {
      if (mpk_merge_dense_to_buf(&m, o->threads, buf, &e)) fail_err(&e);
    } else if (!strcmp(mode, "memcpy")) {
      memcpy(buf, base, bytes);
    } else if (!strcmp(mode, "fd")) {
      if (mpk_merge_dense_to_fd(&m, o->threads, fd, &e)) fail_err(&e);
    } else {
      pwrite_all(fd, base, bytes, "copy.bin");
    }
    if (it < 0) continue;
    t[it] = now_s() - t0;
    cpu[it] = cpu_s() - c0;
    printf("ITER %d %.6f\n", it, t[it]);
  }
  result_line(mode, o, bytes, t, o->iters, median(cpu, o->iters));
  if (o->save) {
    if (buf && !strcmp(mode, "buf")) {
      save(o->save, buf, bytes);
    } else if (fd >= 0 && !strcmp(mode, "fd")) {
      void *p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) die("%s", "cannot map the output");
      save(o->save, p, bytes);
      munmap(p, bytes);
    }
  }
  if (fd >= 0) close(fd);
  free(buf), free(t), free(cpu), free(pw), free(pa), free(pb);
}

/* Llama-3.2-1B's projections, [out, in]. */
static const struct {
  const char *name;
  int64_t out, in;
} LAYER[] = {{"q_proj", 2048, 2048}, {"k_proj", 512, 2048},  {"v_proj", 512, 2048}, {"o_proj", 2048, 2048},
             {"gate_proj", 8192, 2048}, {"up_proj", 8192, 2048}, {"down_proj", 2048, 8192}};
#define NPROJ (sizeof LAYER / sizeof LAYER[0])

static void cmd_model(opts *o) {
  const int copy = !strcmp(o->mode, "copy");
  if (!copy && strcmp(o->mode, "merge")) die("unknown model mode %s", o->mode);
  size_t es = mpk_mk_dtype_size(o->dt), ntensors = (size_t)o->layers * NPROJ, params = 0;
  void **base = calloc(ntensors, sizeof *base);
  float *A[NPROJ], *B[NPROJ];
  for (size_t p = 0; p < NPROJ; p++) { /* one adapter per projection kind, reused by every layer */
    A[p] = malloc((size_t)(o->rank * LAYER[p].in) * 4);
    B[p] = malloc((size_t)(LAYER[p].out * o->rank) * 4);
    if (!A[p] || !B[p]) die("%s", "out of memory");
    fill(A[p], (size_t)(o->rank * LAYER[p].in), MPK_MK_F32);
    fill(B[p], (size_t)(LAYER[p].out * o->rank), MPK_MK_F32);
  }
  for (size_t k = 0; k < ntensors; k++) { /* random layer 0, copied into the others (faster) */
    size_t n = (size_t)(LAYER[k % NPROJ].out * LAYER[k % NPROJ].in);
    if (!(base[k] = malloc(n * es))) die("%s", "out of memory for the model");
    if (k < NPROJ) fill(base[k], n, o->dt);
    else memcpy(base[k], base[k % NPROJ], n * es);
    params += n;
  }
  if (o->impl == MPK_MK_AUTO) o->impl = mpk_mk_impl_best();
  char *path = join(o->dir, "model-tensor.bin");
  double *t = calloc((size_t)o->iters, sizeof(double)), *cpu = calloc((size_t)o->iters, sizeof(double));
  mpk_error e;
  mpk_error_clear(&e);
  for (int it = 0; it < o->iters; it++) {
    double c0 = cpu_s(), t0 = now_s();
    for (size_t k = 0; k < ntensors; k++) {
      size_t p = k % NPROJ, n = (size_t)(LAYER[p].out * LAYER[p].in);
      int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) die("cannot create %s", path);
      if (copy) {
        pwrite_all(fd, base[k], n * es, path);
      } else {
        mpk_merge_dense m = {.name = LAYER[p].name, .base = base[k], .base_len = n * es, .dtype = o->dt,
                             .rows = o->transposed ? LAYER[p].in : LAYER[p].out,
                             .cols = o->transposed ? LAYER[p].out : LAYER[p].in, .transposed = o->transposed,
                             .A = A[p], .B = B[p], .rank = o->rank, .scale = o->scale, .impl = o->impl};
        if (mpk_merge_dense_to_fd(&m, o->threads, fd, &e)) fail_err(&e);
      }
      close(fd);
      unlink(path);
    }
    t[it] = now_s() - t0;
    cpu[it] = cpu_s() - c0;
    printf("ITER %d %.6f\n", it, t[it]);
  }
  double min = t[0];
  for (int i = 1; i < o->iters; i++)
    if (t[i] < min) min = t[i];
  double med = median(t, o->iters);
  printf("RESULT mode=model-%s impl=%s threads=%d layers=%d tensors=%zu params=%zu rank=%lld transposed=%d bytes=%zu "
         "iters=%d median_s=%.6f min_s=%.6f gbps=%.3f cpu_s=%.6f maxrss_kib=%ld\n",
         copy ? "copy" : "merge", mpk_mk_impl_name(o->impl), o->threads, o->layers, ntensors, params,
         (long long)o->rank, o->transposed, params * es, o->iters, med, min, 2.0 * (double)(params * es) / med / 1e9,
         median(cpu, o->iters), maxrss_kib());
  for (size_t k = 0; k < ntensors; k++) free(base[k]);
  for (size_t p = 0; p < NPROJ; p++) free(A[p]), free(B[p]);
  free(base), free(t), free(cpu), free(path);
}

static void cmd_bw(const opts *o) {
  size_t n = (size_t)o->mib << 20;
  uint8_t *a = malloc(n), *b = malloc(n);
  if (!a || !b) die("%s", "out of memory");
  memset(a, 0x5a, n);
  memset(b, 0xa5, n);
  double *t = calloc((size_t)o->iters, sizeof(double));
  for (int it = -1; it < o->iters; it++) {
    double t0 = now_s();
    memcpy(b, a, n);
    if (it >= 0) t[it] = now_s() - t0;
  }
  double min = t[0];
  for (int i = 1; i < o->iters; i++)
    if (t[i] < min) min = t[i];
  double med = median(t, o->iters);
  printf("RESULT mode=bw bytes=%zu iters=%d median_s=%.6f min_s=%.6f gbps=%.3f check=%d\n", n, o->iters, med, min,
         2.0 * (double)n / med / 1e9, b[n / 2]);
  free(a), free(b), free(t);
}

int main(int argc, char **argv) {
  opts o = {.rows = 4096, .cols = 4096, .rank = 16, .dt = MPK_MK_F16, .threads = 1, .iters = 5, .layers = 16,
            .scale = 2.0f, .impl = MPK_MK_AUTO, .mode = "buf", .mib = 512};
  if (argc < 2) die("%s", "usage: bench_merge gen|run|model --dir D [options] (see the source's header)");
  o.cmd = argv[1];
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--transposed")) {
      o.transposed = 1;
      continue;
    }
    if (!v) die("missing value for %s", a);
    i++;
    if (!strcmp(a, "--dir")) o.dir = v;
    else if (!strcmp(a, "--mode")) o.mode = v;
    else if (!strcmp(a, "--save")) o.save = v;
    else if (!strcmp(a, "--rows")) o.rows = atoll(v);
    else if (!strcmp(a, "--cols")) o.cols = atoll(v);
    else if (!strcmp(a, "--rank")) o.rank = atoll(v);
    else if (!strcmp(a, "--block-rows")) o.block_rows = atoll(v);
    else if (!strcmp(a, "--threads")) o.threads = atoi(v);
    else if (!strcmp(a, "--iters")) o.iters = atoi(v);
    else if (!strcmp(a, "--layers")) o.layers = atoi(v);
    else if (!strcmp(a, "--mib")) o.mib = atoi(v);
    else if (!strcmp(a, "--scale")) o.scale = strtof(v, NULL);
    else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--dtype")) {
      const char *names[] = {"f32", "f16", "bf16"};
      int k = 0;
      while (k < 3 && strcmp(v, names[k])) k++;
      if (k == 3 && mpk_mk_dtype_from_name(v, &o.dt)) die("unknown dtype %s", v);
      if (k < 3) o.dt = (mpk_mk_dtype)k;
    } else if (!strcmp(a, "--impl")) {
      const char *names[] = {"auto", "portable", "avx2", "avx512"};
      int k = 0;
      while (k < 4 && strcmp(v, names[k])) k++;
      if (k == 4) die("unknown implementation %s", v);
      o.impl = (mpk_mk_impl)k;
      if (!mpk_mk_impl_available(o.impl)) die("implementation %s is not available on this CPU", v);
    } else die("unknown option %s", a);
  }
  if (o.rows < 1 || o.cols < 1 || o.rank < 1 || o.iters < 1 || o.layers < 1 || o.mib < 1)
    die("%s", "sizes must be >= 1");
  if (!strcmp(o.cmd, "bw")) {
    cmd_bw(&o);
    return 0;
  }
  if (!o.dir) die("%s", "--dir is required");
  if (!strcmp(o.cmd, "gen")) cmd_gen(&o);
  else if (!strcmp(o.cmd, "run")) cmd_run(&o);
  else if (!strcmp(o.cmd, "model")) cmd_model(&o);
  else die("unknown command %s", o.cmd);
  return 0;
}
