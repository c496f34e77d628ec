/* A progress bar on stderr when it is a terminal, nothing otherwise. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int mpk_cli_progress(void *ctx, uint64_t done, uint64_t total) {
  mpk_cli_bar *bar = ctx;
  double t = now();
  /* Redraw at most ten times a second, and always at the end. */
  if (done < total && t - bar->last_draw < 0.1) return 0;
  bar->last_draw = t;
  int pct = total ? (int)(done * 100 / total) : 100;
  int width = 30, fill = pct * width / 100;
  fprintf(stderr, "\r%s [", bar->label);
  for (int i = 0; i < width; i++) fputc(i < fill ? '#' : ' ', stderr);
  if (bar->unit)
    fprintf(stderr, "] %3d%% %llu/%llu %s", pct, (unsigned long long)done, (unsigned long long)total, bar->unit);
  else
    fprintf(stderr, "] %3d%% %.1f/%.1f MiB", pct, (double)done / 1048576.0, (double)total / 1048576.0);
  bar->drawn = true;
  return 0;
}

void mpk_cli_bar_init(mpk_cli_bar *bar, const char *label) {
  bar->label = label;
  bar->unit = NULL;
  bar->last_draw = 0;
  bar->drawn = false;
  bar->enabled = isatty(STDERR_FILENO);
}

void mpk_cli_bar_done(mpk_cli_bar *bar) {
  if (bar->drawn) fputs("\r\033[K", stderr); /* clear the line: the report follows */
}
