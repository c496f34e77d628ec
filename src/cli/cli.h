/* The modelpkg command-line tool: shared declarations. */
#ifndef MPK_CLI_H
#define MPK_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <modelpkg.h>

/* Exit statuses, documented in docs/CLI.md. */
enum { MPK_EXIT_OK = 0, MPK_EXIT_FAIL = 1, MPK_EXIT_USAGE = 2 };

/* The commands (main.c's table). Each takes argv[0] = its own last word ("tensors" for mt tensors). */
int mpk_cmd_check(int argc, char **argv);        /* check (cmd_check.c, cmd_check_mt.c) */
int mpk_cmd_fit(int argc, char **argv);          /* fit (cmd_fit.c) */
int mpk_cmd_mlc_id(int argc, char **argv);       /* mlc id (cmd_mlc.c) */
int mpk_cmd_mlc_metadata(int argc, char **argv); /* mlc metadata (cmd_mlc.c) */
int mpk_cmd_mlc_build(int argc, char **argv);    /* mlc build (cmd_mlc_build.c) */
int mpk_cmd_mlc_plan(int argc, char **argv);     /* mlc plan (cmd_mlc_plan.c) */
int mpk_cmd_mlc_install(int argc, char **argv);  /* mlc install (cmd_mlc_install.c) */
int mpk_cmd_mlc_urls(int argc, char **argv);     /* mlc urls (cmd_mlc_urls.c) */
int mpk_cmd_mlc_functions(int argc, char **argv); /* mlc functions (cmd_mlc_functions.c) */
int mpk_cmd_mlc_compat(int argc, char **argv);   /* mlc compat (cmd_mlc_compat.c) */
int mpk_cmd_mlc_embed(int argc, char **argv);    /* mlc embed (cmd_mlc_embed.c) */
int mpk_cmd_mt_build(int argc, char **argv);     /* mt build, mt reseal (cmd_mt.c) */
int mpk_cmd_mt_handoff(int argc, char **argv);   /* mt handoff: the group (main.c) */
int mpk_cmd_mt_handoff_fmt(int argc, char **argv);   /* mt handoff fmt (cmd_mt.c) */
int mpk_cmd_mt_handoff_build(int argc, char **argv); /* mt handoff build (cmd_mt_graph.c) */
int mpk_cmd_mt_graph(int argc, char **argv);     /* mt graph (cmd_mt_graph.c) */
int mpk_cmd_mt_inspect(int argc, char **argv);   /* mt inspect (cmd_mt_graph.c) */
int mpk_cmd_mt_tensors(int argc, char **argv);   /* mt tensors (cmd_mt_tensors.c) */
int mpk_cmd_mt_merge(int argc, char **argv);     /* mt merge (cmd_mt_merge.c) */
int mpk_cmd_mt_restore(int argc, char **argv);   /* mt restore (cmd_mt_restore.c) */
int mpk_cmd_mt_parity(int argc, char **argv);    /* mt parity (cmd_mt_parity.c) */
int mpk_cmd_mt_select(int argc, char **argv);    /* mt select (cmd_mt_select.c) */
int mpk_cmd_mt_plan(int argc, char **argv);      /* mt plan (cmd_mt_select.c) */
int mpk_cmd_mt_install(int argc, char **argv);   /* mt install (cmd_mt_install.c) */
int mpk_cmd_mt_list(int argc, char **argv);      /* mt list (cmd_mt_cache.c) */
int mpk_cmd_mt_remove(int argc, char **argv);    /* mt remove (cmd_mt_cache.c) */
int mpk_cmd_mt_gc(int argc, char **argv);        /* mt gc (cmd_mt_cache.c) */
int mpk_cmd_audio(int argc, char **argv);        /* audio (cmd_audio.c) */
int mpk_cmd_image(int argc, char **argv);        /* image (cmd_image.c) */

/* Print a report for people / as one JSON document. */
void mpk_cli_report_text(FILE *out, const mpk_mlc_report *r);
int mpk_cli_report_json(FILE *out, const mpk_mlc_report *r);

/* `modelpkg check` on a MobileTransformers package (cmd_check_mt.c): the exit status. Its --json
   refusal keys: mpk_cli_check_mt_keys. */
int mpk_cli_check_mt(const char *dir, const mpk_mt_check_options *opts, bool json);
extern const char *const mpk_cli_check_mt_keys[];
void mpk_cli_mt_report_text(FILE *out, const mpk_mt_report *r);
int mpk_cli_mt_report_json(FILE *out, const mpk_mt_report *r);

/* Progress bar on stderr, drawn only when stderr is a terminal. */
typedef struct mpk_cli_bar {
  const char *label;
  const char *unit; /* what is counted ("weights"); NULL: bytes, shown in MiB */
  double last_draw;
  bool drawn, enabled;
} mpk_cli_bar;
void mpk_cli_bar_init(mpk_cli_bar *bar, const char *label);
int mpk_cli_progress(void *bar, uint64_t done, uint64_t total); /* an mpk_progress_fn */
void mpk_cli_bar_done(mpk_cli_bar *bar);

/* The progress of an install (install_progress.c: mt install, mlc install): a bar on a terminal, or
   with --json one {"event": ...} line per event on stderr. Each command turns its API's event into
   an mpk_cli_install_event. */
typedef struct mpk_cli_install_event {
  const char *kind;        /* the JSON "event": "file_start", "bytes", ... */
  bool start, bytes, retry; /* which of these it is (the display's decisions) */
  const char *file;        /* NULL: not a file's event */
  uint64_t file_done, file_size, done, total;
  size_t files;
  const char *message;
} mpk_cli_install_event;
typedef struct mpk_cli_install_progress {
  const char *cmd; /* "mt install": in the retry lines */
  bool json, tty;
  mpk_cli_bar bar;
  double started, last_json;
} mpk_cli_install_progress;
double mpk_cli_now(void); /* seconds, monotonic */
void mpk_cli_install_progress_init(mpk_cli_install_progress *p, const char *cmd, bool json);
void mpk_cli_install_progress_event(mpk_cli_install_progress *p, const mpk_cli_install_event *ev);

/* ---- args.c: the one option parser. A command declares its options in a table ending with {0}
   and its usage in a spec; mpk_cli_parse reads argv[1..] (argv[0] is the command's last word):
   options in any order among the positional arguments, "-h"/"--help" prints the help made from the
   spec and table, and every usage error is "modelpkg CMD: MESSAGE\nTry 'modelpkg CMD --help'."
   (plus, once --json was seen, the refusal document on stdout), exit status 2. */
typedef struct mpk_cli_spec mpk_cli_spec;
typedef struct mpk_cli_opt {
  const char *name;   /* "--variant"; NULL ends the table */
  char short_name;    /* 'o' for -o, or 0 */
  const char *value;  /* the value's name in the help ("ID"); NULL: a flag, no value */
  const char *help;   /* what it does; '\n' starts a continuation line */
  bool *flag;         /* a flag: set to true */
  const char **str;   /* a value: stored here (it borrows argv) */
  /* or: the command reads the value itself; returns MPK_EXIT_OK or the exit status (said why) */
  int (*fn)(void *ctx, const mpk_cli_spec *s, bool json, const char *opt, const char *val);
  void *ctx;
  bool once;          /* a value given twice is a usage error ("--variant given twice") */
} mpk_cli_opt;
struct mpk_cli_spec {
  const char *name;               /* "mt tensors": as in "usage: modelpkg mt tensors ..." */
  const char *usage;              /* the forms after the name, one per line */
  const char *about;              /* the text between the usage and the options (ends with \n) */
  const mpk_cli_opt *opts;        /* the options ({0}-terminated); -h/--help is added */
  const char *more;               /* the text after the options (exit status; ends with \n) */
  const char *const *json_keys;   /* its --json document's own keys: a usage error is a document too */
  size_t max_args;                /* positional arguments accepted */
  const char *extra;              /* the message for one too many (two %s: the first, the extra) */
  const char *const *not_here;    /* a sibling command's options: "--variant does not apply to mt inspect" */
};
#define MPK_CLI_MAX_ARGS 4
#define MPK_CLI_GO_ON (-1)
typedef struct mpk_cli_args {
  const char *arg[MPK_CLI_MAX_ARGS]; /* positional arguments, in order */
  size_t n;
  bool json;                          /* --json was given (the spec has it) */
} mpk_cli_args;
/* MPK_CLI_GO_ON when the command runs; else the exit status (0 after --help, 2 usage error). */
int mpk_cli_parse(const mpk_cli_spec *s, int argc, char **argv, mpk_cli_args *out);
void mpk_cli_help(const mpk_cli_spec *s, FILE *out);
bool mpk_cli_spec_has(const mpk_cli_spec *s, const char *name);
/* A usage error of the command (the document too when `json` and the command has --json). */
int mpk_cli_usage(const mpk_cli_spec *s, bool json, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A decimal integer in [min, max] and nothing else; --jobs N in 1..256 (NULL: 0, the default). */
bool mpk_cli_parse_int(const char *s, long long min, long long max, long long *out);
int mpk_cli_parse_jobs(const mpk_cli_spec *s, bool json, const char *val, long long *jobs);
bool mpk_cli_is_help(const char *arg);
/* A bounded integer option (an mpk_cli_opt fn, ctx an mpk_cli_bounded): "OPT needs an integer from
   LO to HI" otherwise. */
typedef struct mpk_cli_bounded {
  long long lo, hi;
  unsigned *out;
} mpk_cli_bounded;
int mpk_cli_parse_bounded(void *ctx, const mpk_cli_spec *s, bool json, const char *opt, const char *val);

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
/* A selection option's value (an mpk_cli_opt fn, ctx an mpk_cli_select); MPK_EXIT_OK or the usage
   status (said why). MPK_CLI_SELECT_OPTIONS(sel) is their table rows (the help says each). */
int mpk_cli_select_option(void *ctx, const mpk_cli_spec *s, bool json, const char *opt, const char *val);
#define MPK_CLI_SELECT_OPTIONS(sel)                                                                              \
  {"--abi", 0, "A[,B...]", "device ABIs: the variant's abi list must share one (abi null runs anywhere,\n"     \
                           "an empty list nowhere)", .fn = mpk_cli_select_option, .ctx = (sel)},               \
      {"--ep", 0, "E", "executionProvider must be E (cpu, xnnpack, nnapi)", .fn = mpk_cli_select_option,       \
       .ctx = (sel)},                                                                                          \
      {"--quant", 0, "Q", "quantization must be exactly Q", .fn = mpk_cli_select_option, .ctx = (sel)},       \
      {"--engine", 0, "E", "E must be in supportedEngines (native, genai)", .fn = mpk_cli_select_option,       \
       .ctx = (sel)},                                                                                          \
      {"--features", 0, "F[,F...]", "the feature groups wanted (default: inference); the variant must\n"       \
                                    "declare each. core and checksums are always downloaded",                 \
       .fn = mpk_cli_select_option, .ctx = (sel)},                                                             \
      {"--memory-mb", 0, "N", "recommendedDeviceMemoryMb must be at most N", .fn = mpk_cli_select_option,      \
       .ctx = (sel)},                                                                                          \
      {"--api-level", 0, "N", "minimumAndroidApi must be at most N", .fn = mpk_cli_select_option, .ctx = (sel)}, \
      {"--prefer-quant", 0, "Q1[,Q2...]", "rank by the earliest quantization listed (default: int4)",          \
       .fn = mpk_cli_select_option, .ctx = (sel)},                                                             \
      {"--storage-bytes", 0, "N", "free storage: the download must fit 90% of N (rounded down); the\n"         \
                                  "best-ranked variant that fits wins", .fn = mpk_cli_select_option,           \
       .ctx = (sel)}
/* One comma-separated list option into `l` (the value copied; free l->copy); as an mpk_cli_opt fn,
   mpk_cli_list_option with ctx the list. */
int mpk_cli_parse_list(const mpk_cli_spec *s, bool json, const char *opt, const char *val, mpk_cli_list *l);
int mpk_cli_list_option(void *ctx, const mpk_cli_spec *s, bool json, const char *opt, const char *val);
void mpk_cli_select_finish(mpk_cli_select *s);
void mpk_cli_select_free(mpk_cli_select *s);

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

#endif
