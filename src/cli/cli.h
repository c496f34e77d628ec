/* The modelpkg command-line tool: shared declarations. */
#ifndef MPK_CLI_H
#define MPK_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "modelpkg.h"

/* Exit statuses, documented in docs/CLI.md. */
enum { MPK_EXIT_OK = 0, MPK_EXIT_FAIL = 1, MPK_EXIT_USAGE = 2 };

int mpk_cmd_check(int argc, char **argv);
int mpk_cmd_fit(int argc, char **argv);
int mpk_cmd_mlc(int argc, char **argv);
int mpk_cmd_mlc_build(int argc, char **argv);

/* Print a report for people / as one JSON document. */
void mpk_cli_report_text(FILE *out, const mpk_mlc_report *r);
int mpk_cli_report_json(FILE *out, const mpk_mlc_report *r);

/* Progress bar on stderr, drawn only when stderr is a terminal. */
typedef struct mpk_cli_bar {
  const char *label;
  double last_draw;
  bool drawn, enabled;
} mpk_cli_bar;
void mpk_cli_bar_init(mpk_cli_bar *bar, const char *label);
int mpk_cli_progress(void *bar, uint64_t done, uint64_t total); /* an mpk_progress_fn */
void mpk_cli_bar_done(mpk_cli_bar *bar);

/* --device-features / --max-binding-size as an mpk_mlc_device (do not move the struct: the
   device points into it). Returns MPK_EXIT_OK, or an exit status after printing why. */
#define MPK_CLI_MAX_FEATURES 64
typedef struct mpk_cli_device {
  mpk_mlc_device dev;
  const char *names[MPK_CLI_MAX_FEATURES];
  char *copy;
  bool given; /* either option was given */
} mpk_cli_device;
int mpk_cli_device_init(mpk_cli_device *d, const char *cmd, const char *features, long long max_binding);
void mpk_cli_device_free(mpk_cli_device *d);

/* "modelpkg: FILE: POINTER: MESSAGE" on stderr. */
void mpk_cli_error(const mpk_error *err);
/* Usage error on stderr; returns MPK_EXIT_USAGE. */
int mpk_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool mpk_cli_is_help(const char *arg);

#endif
