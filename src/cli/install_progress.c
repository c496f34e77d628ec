/* The progress of an install on stderr — mt install's and mlc install's, one display: a bar on a
   terminal, or with --json one {"event": ...} line per event (byte events at most five a second). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"

double mpk_cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void mpk_cli_install_progress_init(mpk_cli_install_progress *p, const char *cmd, bool json) {
  p->cmd = cmd;
  p->json = json;
  p->tty = !json && isatty(STDERR_FILENO);
  mpk_cli_bar_init(&p->bar, "install");
  p->started = mpk_cli_now();
  p->last_json = 0;
}

void mpk_cli_install_progress_event(mpk_cli_install_progress *p, const mpk_cli_install_event *ev) {
  double t = mpk_cli_now();
  double rate = t > p->started ? (double)ev->done / (t - p->started) : 0;
  if (p->json) {
    if (ev->bytes && ev->done < ev->total && t - p->last_json < 0.2) return;
    if (ev->bytes) p->last_json = t;
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string(ev->kind));
    if (ev->file) {
      json_object_set_new(o, "file", mpk_cli_json_str(ev->file));
      json_object_set_new(o, "file_done", json_integer((json_int_t)ev->file_done));
      json_object_set_new(o, "file_size", json_integer((json_int_t)ev->file_size));
    }
    json_object_set_new(o, "done", json_integer((json_int_t)ev->done));
    json_object_set_new(o, "total", json_integer((json_int_t)ev->total));
    json_object_set_new(o, "files", json_integer((json_int_t)ev->files));
    json_object_set_new(o, "bytes_per_second", json_integer((json_int_t)rate));
    if (ev->message) json_object_set_new(o, "message", json_string(ev->message));
    char *line = json_dumps(o, JSON_COMPACT);
    if (line) fprintf(stderr, "%s\n", line);
    free(line);
    json_decref(o);
    return;
  }
  if (ev->retry) {
    mpk_cli_bar_done(&p->bar);
    fprintf(stderr, "modelpkg %s: %s again: %s\n", p->cmd, ev->file, ev->message ? ev->message : "");
  }
  if (p->tty && (ev->bytes || ev->start)) {
    /* The rate belongs to the bar: written once after each redraw (which starts with \r), then the
       rest of the line cleared, never appended to a line that was not redrawn. */
    double drawn = p->bar.last_draw;
    mpk_cli_progress(&p->bar, ev->done, ev->total);
    if (p->bar.last_draw != drawn) fprintf(stderr, " %.1f MiB/s\033[K", rate / 1048576.0);
  }
}

int mpk_cli_parse_bounded(void *ctx, const mpk_cli_spec *s, bool json, const char *opt, const char *val) {
  const mpk_cli_bounded *b = ctx;
  long long v;
  if (!mpk_cli_parse_int(val, b->lo, b->hi, &v))
    return mpk_cli_usage(s, json, "%s needs an integer from %lld to %lld, not '%s'", opt, b->lo, b->hi, val);
  *b->out = (unsigned)v;
  return MPK_EXIT_OK;
}
