/* The modelpkg command-line tool: shared declarations. */
#ifndef MPK_CLI_H
#define MPK_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <modelpkg.h>

/* Exit statuses, documented in docs/CLI.md. */
enum { MPK_EXIT_OK = 0, MPK_EXIT_FAIL = 1, MPK_EXIT_USAGE = 2 };

int mpk_cmd_check(int argc, char **argv);
int mpk_cmd_fit(int argc, char **argv);
int mpk_cmd_mlc(int argc, char **argv);
int mpk_cmd_mlc_build(int argc, char **argv);
int mpk_cmd_mt(int argc, char **argv); /* mt build / mt reseal (cmd_mt.c) */
int mpk_cmd_mt_tensors(int argc, char **argv); /* mt tensors (cmd_mt_tensors.c) */
int mpk_cmd_mt_merge(int argc, char **argv);   /* mt merge (cmd_mt_merge.c) */
int mpk_cmd_mt_select(int argc, char **argv);  /* mt select (cmd_mt_select.c) */
int mpk_cmd_mt_plan(int argc, char **argv);    /* mt plan (cmd_mt_select.c) */
int mpk_cmd_mt_install(int argc, char **argv); /* mt install (cmd_mt_install.c) */
int mpk_cmd_audio(int argc, char **argv);      /* audio (cmd_audio.c) */
int mpk_cmd_image(int argc, char **argv);      /* image (cmd_image.c) */
int mpk_cmd_mlc_plan(int argc, char **argv);   /* mlc plan (cmd_mlc_plan.c) */
int mpk_cmd_mt_graph(int argc, char **argv);   /* mt graph, mt inspect, mt handoff build (cmd_mt_graph.c) */

/* Print a report for people / as one JSON document. */
void mpk_cli_report_text(FILE *out, const mpk_mlc_report *r);
int mpk_cli_report_json(FILE *out, const mpk_mlc_report *r);

/* `modelpkg check` on a MobileTransformers package (cmd_check_mt.c): run first by mpk_cmd_check,
   it returns -1 when DIR is not one (the MLC check runs), else the exit status. */
int mpk_cmd_check_mt_dispatch(int argc, char **argv);
void mpk_cli_mt_report_text(FILE *out, const mpk_mt_report *r);
int mpk_cli_mt_report_json(FILE *out, const mpk_mt_report *r);

/* Progress bar on stderr, drawn only when stderr is a terminal. */
typedef struct mpk_cli_bar {
  const char *label;
  double last_draw;
  bool drawn, enabled;
} mpk_cli_bar;
void mpk_cli_bar_init(mpk_cli_bar *bar, const char *label);
int mpk_cli_progress(void *bar, uint64_t done, uint64_t total); /* an mpk_progress_fn */
void mpk_cli_bar_done(mpk_cli_bar *bar);

/* A decimal integer in [min, max] and nothing else (args.c); --jobs N in 1..256 (returns
   MPK_EXIT_OK or the usage status after saying why). */
bool mpk_cli_parse_int(const char *s, long long min, long long max, long long *out);
int mpk_cli_parse_jobs(const char *cmd, const char *val, long long *jobs);

/* Selection options (select_args.c), shared by mt select and mt install: --abi --ep --quant --engine
   --memory-mb --api-level --features --prefer-quant --storage-bytes. Lists are comma-separated (no
   empty item); each option at most once. */
#define MPK_CLI_MAX_LIST 64
#define MPK_CLI_SAFE_INT_MAX 9007199254740991LL
typedef struct mpk_cli_list {
  char *copy;
  const char *items[MPK_CLI_MAX_LIST];
  size_t n;
  bool given;
} mpk_cli_list;
typedef struct mpk_cli_select {
  mpk_mt_select_options o; /* filled by mpk_cli_select_finish(); strings borrow argv */
  mpk_cli_list abis, features, prefer;
  bool device_given;       /* a selection option other than --features was given */
} mpk_cli_select;
/* Parse `opt val` when `opt` is a selection option: MPK_EXIT_OK or the usage status (said why);
   -1 when `opt` is not one. */
int mpk_cli_select_option(const char *cmd, const char *opt, const char *val, mpk_cli_select *s);
bool mpk_cli_is_select_option(const char *opt);
/* One comma-separated list option into `l` (the value copied; free l->copy). */
int mpk_cli_parse_list(const char *cmd, const char *opt, const char *val, mpk_cli_list *l);
void mpk_cli_select_finish(mpk_cli_select *s);
void mpk_cli_select_free(mpk_cli_select *s);
/* The message of the last usage error the selection options reported (for a --json refusal). */
const char *mpk_cli_select_usage(void);

/* --device-features / --max-binding-size as an mpk_mlc_device (do not move the struct: the
   device points into it). Returns MPK_EXIT_OK, or an exit status after printing why. */
#define MPK_CLI_MAX_FEATURES 64
typedef struct mpk_cli_device {
  mpk_mlc_device dev;
  const char *names[MPK_CLI_MAX_FEATURES];
  char *copy;
  bool given; /* either option was given */
} mpk_cli_device;
/* A name WebGPU does not define (a typo) is a usage error listing the accepted ones; with `json`
   the refusal document (json_keys null) is printed too. */
int mpk_cli_device_init(mpk_cli_device *d, const char *cmd, const char *features, long long max_binding, bool json,
                        const char *const *json_keys);
void mpk_cli_device_free(mpk_cli_device *d);

/* --json building blocks (json_out.c): a string or null, a list of strings, the problems list
   ({code, file, pointer, message, offset}), and printing (indent 2; frees root). */
#include <jansson.h>
json_t *mpk_cli_json_str(const char *s);
json_t *mpk_cli_json_strings(const char *const *list, size_t n);
json_t *mpk_cli_json_problems(const mpk_error *problems, size_t n);
int mpk_cli_json_print(FILE *out, json_t *root);
/* The one --json envelope (docs/CLI.md "JSON reports"): every command's document, on success and on
   refusal, starts {"modelpkg_version", "command", "ok"}, then the command's own keys (null where a
   refusal left them uncomputed), and ends with "problems" and "notes". begin/end build it; end
   prints it to stdout and frees it. refuse is a whole refusal document for one error (a usage
   error, a file that cannot be read): `keys` (may be NULL) are the command's keys, set to null. */
json_t *mpk_cli_json_begin(const char *command, bool ok);
int mpk_cli_json_end(json_t *root, const mpk_error *problems, size_t n_problems, const char *const *notes,
                     size_t n_notes);
int mpk_cli_json_refuse(const char *command, const char *const *keys, const mpk_error *err);
/* --json anywhere among argv[1..]: the command must answer with a document even for a usage error. */
bool mpk_cli_json_wanted(int argc, char **argv);
/* A usage error (mpk_cli_usage_error's text on stderr) that, with `json`, also prints the refusal
   document (code "invalid-argument", "usage: ..." message) on stdout. Returns MPK_EXIT_USAGE. */
int mpk_cli_usage_json(bool json, const char *cmd, const char *const *keys, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* errors.c: "modelpkg: FILE: POINTER: MESSAGE" on stderr. */
void mpk_cli_error(const mpk_error *err);
/* Usage error on stderr; returns MPK_EXIT_USAGE. */
int mpk_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Problems kept for a report (a growable list of errors; `oom`: one could not be kept). */
typedef struct mpk_cli_problems {
  mpk_error *items;
  size_t n, cap;
  bool oom;
} mpk_cli_problems;
void mpk_cli_problems_add(mpk_cli_problems *p, const mpk_error *e);
void mpk_cli_problems_free(mpk_cli_problems *p);

/* files.c: plain path helpers (files are read with mpk_map_file / mpk_map_beneath). */
bool mpk_cli_is_dir(const char *path);  /* a directory (links followed) */
bool mpk_cli_is_file(const char *path); /* a regular file (links followed) */
char *mpk_cli_path_join(const char *dir, const char *name); /* malloc'ed dir/name, NULL: no memory */

/* args.c */
bool mpk_cli_is_help(const char *arg);

#endif
