/* bench_startup: whole processes timed side by side (issue 22, "Start-up"; run by run_startup.sh).
   Each peer is a command run with posix_spawn, stdout and stderr to /dev/null, timed from spawn to
   reaped exit with CLOCK_MONOTONIC; ROUNDS rounds, the peers interleaved in each round (so a busy
   spell of this shared machine falls on all of them), in an order rotated every round. Prints per
   peer the median and the 10th percentile in ms, and the median of its per-round ratios to the
   first peer (the baseline). A peer that exits non-zero stops the run.

     bench_startup ROUNDS -- NAME CMD ARGS... -- NAME CMD ARGS... ...
     bench_startup --floor    exits at once: a trivial C program (libc only), the floor
     bench_startup --floor-touch PAGES [populate]
                              maps PAGES fresh anonymous pages and writes one byte in each (with
                              `populate`: after one madvise(MADV_POPULATE_WRITE)); against --floor,
                              the cost of a first touch (docs/PERFORMANCE.md section 14)
     bench_startup --floor-dlopen SONAME
                              opens SONAME with dlopen(RTLD_NOW | RTLD_LOCAL), as core/dl.c does;
                              against --floor and a program linked with the library, what opening a
                              dependency on first use costs */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MADV_POPULATE_WRITE */
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_PEERS 16

typedef struct peer {
  const char *name;
  char **argv;
  double *ms;
  double *ratio;
} peer;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double quantile(double *v, int n, double q) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  double pos = q * (n - 1);
  int i = (int)pos;
  return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[i];
}

static double run_once(const peer *p, posix_spawn_file_actions_t *fa) {
  pid_t pid;
  double t0 = now_ms();
  int e = posix_spawnp(&pid, p->argv[0], fa, NULL, p->argv, environ);
  if (e) {
    fprintf(stderr, "bench_startup: %s: cannot run %s: %s\n", p->name, p->argv[0], strerror(e));
    exit(1);
  }
  int st;
  if (waitpid(pid, &st, 0) < 0) {
    perror("waitpid");
    exit(1);
  }
  double t = now_ms() - t0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench_startup: %s: %s exited with status %d\n", p->name, p->argv[0],
            WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    exit(1);
  }
  return t;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--floor") == 0) return 0;
  if ((argc == 3 || argc == 4) && strcmp(argv[1], "--floor-touch") == 0) {
    size_t n = (size_t)strtoul(argv[2], NULL, 10) * 4096;
    char *p = n ? mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
    if (n && p == MAP_FAILED) return 3;
#ifdef MADV_POPULATE_WRITE
    if (argc == 4 && strcmp(argv[3], "populate") == 0 && madvise(p, n, MADV_POPULATE_WRITE) != 0) return 4;
#else
    if (argc == 4) return 4; /* headers older than Linux 5.14's */
#endif
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "--floor-dlopen") == 0) return dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) ? 0 : 3;
  if (argc < 5 || strcmp(argv[2], "--") != 0) {
    fprintf(stderr, "usage: bench_startup ROUNDS -- NAME CMD ARGS... [-- NAME CMD ARGS...]...\n");
    return 2;
  }
  int rounds = atoi(argv[1]);
  if (rounds < 1) rounds = 1;
  peer peers[MAX_PEERS];
  int n = 0;
  for (int i = 2; i < argc;) { /* argv[i] is "--": NAME CMD ARGS... up to the next "--" */
    if (n == MAX_PEERS || i + 2 >= argc) {
      fprintf(stderr, "bench_startup: at most %d peers, each NAME CMD [ARGS...]\n", MAX_PEERS);
      return 2;
    }
    argv[i] = NULL; /* ends the previous peer's argv */
    peers[n].name = argv[i + 1];
    peers[n].argv = &argv[i + 2];
    peers[n].ms = calloc((size_t)rounds, sizeof(double));
    peers[n].ratio = calloc((size_t)rounds, sizeof(double));
    if (!peers[n].ms || !peers[n].ratio) return 1;
    n++;
    for (i += 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
    }
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  for (int w = 0; w < n; w++) run_once(&peers[w], &fa); /* warm the page cache: not counted */
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < n; k++) {
      int w = (k + r) % n;
      peers[w].ms[r] = run_once(&peers[w], &fa);
    }
  for (int w = 0; w < n; w++)
    for (int r = 0; r < rounds; r++) peers[w].ratio[r] = peers[w].ms[r] / peers[0].ms[r];
  printf("%-24s %10s %10s %12s\n", "peer", "median_ms", "p10_ms", "ratio_to_1st");
  for (int w = 0; w < n; w++) {
    double med = quantile(peers[w].ms, rounds, 0.5), p10 = quantile(peers[w].ms, rounds, 0.1);
    printf("%-24s %10.3f %10.3f %12.3f\n", peers[w].name, med, p10, quantile(peers[w].ratio, rounds, 0.5));
  }
  posix_spawn_file_actions_destroy(&fa);
  return 0;
}
