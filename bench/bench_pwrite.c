/* bench_pwrite: what writing 2 GiB into the page cache costs this machine, with and without the
   fetch engine's writeback kicks (sync_file_range every 8 MiB, src/fetch/source.c), per write size.
   Not a peer comparison: the evidence behind docs/PERFORMANCE.md section 11, "Piece owners".
   usage: bench_pwrite FILE [MiB]   (FILE is created, written, fsynced, removed) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double secs(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

static int run(const char *path, size_t bs, size_t total, int kick) {
  char *b = aligned_alloc(4096, bs);
  if (!b) return 1;
  memset(b, 7, bs);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return perror(path), free(b), 1;
  sync();
  struct rusage r0, r1;
  struct timespec t0, t1;
  getrusage(RUSAGE_SELF, &r0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  size_t kicked = 0;
  for (size_t off = 0; off < total; off += bs) {
    if (pwrite(fd, b, bs, (off_t)off) != (ssize_t)bs) return perror("pwrite"), close(fd), free(b), 1;
    if (kick && off + bs - kicked >= (8u << 20)) {
      sync_file_range(fd, (off_t)kicked, (off_t)(off + bs - kicked), SYNC_FILE_RANGE_WRITE);
      kicked = off + bs;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  getrusage(RUSAGE_SELF, &r1);
  printf("write %7zu KiB  kicks %-3s  wall %.2f s  sys %.2f s\n", bs >> 10, kick ? "yes" : "no",
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, secs(r1.ru_stime) - secs(r0.ru_stime));
  fsync(fd); /* outside the timing: the next run starts with a clean page cache */
  close(fd);
  unlink(path);
  free(b);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: bench_pwrite FILE [MiB]\n"), 2;
  size_t total = (size_t)(argc > 2 ? atoi(argv[2]) : 2048) << 20;
  size_t sizes[] = {16u << 10, 256u << 10, 1u << 20};
  for (int round = 0; round < 3; round++)
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
      for (int kick = 0; kick < 2; kick++)
        if (run(argv[1], sizes[i], total, kick)) return 1;
  return 0;
}
