/* Issue 22: the built-in SHA-256 and MD5 against OpenSSL on the same in-memory buffer, through the
   one hasher (core/hash.c: mpk_hasher_init_impl), fed in 1 MiB updates like the digest pool.
   Rounds are interleaved and the order of the implementations rotates every round; each ratio
   (built-in speed / OpenSSL speed) is the median of per-round ratios. Run by bench/run_hash.sh.

     bench_hash [SIZE_MIB [ROUNDS]]     defaults 1024 and 5

   Prints one line per measurement (wall and this thread's CPU time), then the medians, the ratios
   (wall and CPU) and the verdicts (on the wall ratio) for issue 22's targets (SHA-256 with SHA-NI and MD5 ≥ 0.9 × OpenSSL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "core/core.h"
#include "core/hash.h"

static const char *const impls[] = {"openssl", "builtin-shani", "builtin-armv8", "builtin-c"};
enum { NIMPL = 4, MAXR = 64, UPDATE = 1 << 20 };

/* This thread's CPU seconds: on a shared machine, wall time also counts the time other processes
   held the core; CPU time does not (the ratio is given both ways). */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double run(const char *impl, mpk_digest_algo algo, const uint8_t *buf, size_t n, char *hex, double *cpu) {
  mpk_hasher h;
  double t0 = now_s(), c0 = cpu_s();
  if (mpk_hasher_init_impl(&h, algo, impl)) return -1;
  for (size_t at = 0; at < n; at += UPDATE) mpk_hasher_update(&h, buf + at, n - at < UPDATE ? n - at : UPDATE);
  mpk_hasher_final_hex(&h, hex);
  mpk_hasher_free(&h);
  *cpu = cpu_s() - c0;
  return now_s() - t0;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
  int rounds = argc > 2 ? atoi(argv[2]) : 5;
  if (!mib || rounds < 1 || rounds > MAXR) {
    fprintf(stderr, "usage: bench_hash [SIZE_MIB [ROUNDS (1..%d)]]\n", MAXR);
    return 2;
  }
  size_t n = mib << 20;
  uint8_t *buf = malloc(n);
  if (!buf) {
    fprintf(stderr, "bench_hash: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  uint64_t s = 22; /* splitmix64: incompressible, and every page touched before timing */
  for (size_t i = 0; i < n; i += 8) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    memcpy(buf + i, &z, n - i < 8 ? n - i : 8);
  }
  int on[NIMPL];
  for (int i = 0; i < NIMPL; i++) {
    mpk_hasher h;
    on[i] = mpk_hasher_init_impl(&h, MPK_DIGEST_SHA256, impls[i]) == 0;
    mpk_hasher_free(&h);
  }
  printf("buffer: %zu MiB in memory   rounds: %d   process default: %s\n", mib, rounds, mpk_hash_implementation());
  printf("implementations here:");
  for (int i = 0; i < NIMPL; i++)
    if (on[i]) printf(" %s", impls[i]);
  printf("\n");
  if (!on[0]) {
    fprintf(stderr, "bench_hash: OpenSSL (libcrypto) is not available in this build; nothing to compare with\n");
    return 2;
  }
  int status = 0;
  for (int a = 0; a < 2; a++) {
    mpk_digest_algo algo = a ? MPK_DIGEST_MD5 : MPK_DIGEST_SHA256;
    const char *an = a ? "md5" : "sha256";
    double t[NIMPL][MAXR], c[NIMPL][MAXR], ratio[NIMPL][MAXR], cratio[NIMPL][MAXR];
    char ref[MPK_HASH_HEX_SIZE] = "", hex[MPK_HASH_HEX_SIZE];
    /* MD5 has one built-in implementation (portable C) whatever the SHA-256 path */
    int use[NIMPL];
    for (int i = 0; i < NIMPL; i++) use[i] = on[i] && (!a || i == 0 || i == 3);
    for (int r = 0; r < rounds; r++) {
      for (int k = 0; k < NIMPL; k++) {
        int i = (k + r) % NIMPL;
        if (!use[i]) continue;
        t[i][r] = run(impls[i], algo, buf, n, hex, &c[i][r]);
        printf("R %s %s %d wall %.4f s %.0f MB/s cpu %.4f s %.0f MB/cpu-s\n", an, impls[i], r, t[i][r],
               (double)n / t[i][r] / 1e6, c[i][r], (double)n / c[i][r] / 1e6);
        if (!ref[0]) memcpy(ref, hex, sizeof ref);
        else if (strcmp(ref, hex)) {
          printf("DIFFERENT DIGEST: %s %s %s, first %s\n", an, impls[i], hex, ref);
          status = 1;
        }
      }
      for (int i = 1; i < NIMPL; i++)
        if (use[i]) ratio[i][r] = t[0][r] / t[i][r], cratio[i][r] = c[0][r] / c[i][r];
    }
    printf("\n%s (%s)\n%-15s %9s %8s %11s %10s %24s %24s\n", an, ref, "implementation", "median s", "MB/s", "median cpu", "MB/cpu-s",
           "speed/OpenSSL wall", "speed/OpenSSL cpu");
    double med_ratio[NIMPL] = {0}, med_cratio[NIMPL] = {0};
    for (int i = 0; i < NIMPL; i++) {
      if (!use[i]) continue;
      double tt[MAXR], cc[MAXR];
      memcpy(tt, t[i], sizeof(double) * (size_t)rounds);
      memcpy(cc, c[i], sizeof(double) * (size_t)rounds);
      double m = median(tt, rounds), mc = median(cc, rounds);
      printf("%-15s %9.4f %8.0f %11.4f %10.0f", impls[i], m, (double)n / m / 1e6, mc, (double)n / mc / 1e6);
      if (i) {
        double *rs[2] = {ratio[i], cratio[i]}, *meds[2] = {&med_ratio[i], &med_cratio[i]};
        for (int w = 0; w < 2; w++) {
          double rr[MAXR];
          memcpy(rr, rs[w], sizeof(double) * (size_t)rounds);
          *meds[w] = median(rr, rounds);
          printf(" %10.3f (%.3f-%.3f)", *meds[w], rr[0], rr[rounds - 1]); /* sorted: min, max */
        }
      }
      printf("\n");
    }
    if (!a) {
      int best = use[1] ? 1 : use[2] ? 2 : 3;
      printf("VERDICT sha256: %s / openssl = %.3f wall, %.3f cpu; target >= 0.9: %s\n", impls[best], med_ratio[best],
             med_cratio[best], med_ratio[best] >= 0.9 ? "met" : "NOT MET");
    } else {
      printf("VERDICT md5: builtin-c / openssl = %.3f wall, %.3f cpu; target >= 0.9: %s\n", med_ratio[3], med_cratio[3],
             med_ratio[3] >= 0.9 ? "met" : "NOT MET");
    }
  }
  free(buf);
  return status;
}
