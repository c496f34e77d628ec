/* What every benchmark program times and sorts with (bench/bench_*.c): a monotonic clock in
   seconds, and a qsort comparator for doubles (medians of rounds). */
#ifndef MPK_BENCH_UTIL_H
#define MPK_BENCH_UTIL_H

#include <time.h>

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#endif
