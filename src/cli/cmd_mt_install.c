/* modelpkg mt install SOURCE --repo-id ORG/NAME --cache DIR [--variant ID | device options]
   [--features A,B] [--jobs N] [--wait] [--retries N] [--retry-delay-ms MS] [--timeout S]
   [--low-speed B --low-speed-time S] [--json]: install a package variant into a device cache,
   resumable, verified and atomic (docs/mt-install.md). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "usage: modelpkg mt install SOURCE --repo-id ORG/NAME --cache DIR\n"
    "                           [--variant ID | [--abi A,B] [--ep E] [--quant Q] [--engine E]\n"
    "                            [--memory-mb N] [--api-level N] [--prefer-quant Q1,Q2]\n"
    "                            [--storage-bytes N]]\n"
    "                           [--features F1,F2,...] [--jobs N] [--wait] [--retries N]\n"
    "                           [--retry-delay-ms MS] [--timeout SECONDS]\n"
    "                           [--low-speed BYTES_PER_S] [--low-speed-time SECONDS] [--json]\n"
    "\n"
    "Install a MobileTransformers package variant into <DIR>/<sanitized repo id>/ in the installed\n"
    "layout (inference/, train/, embedding/, tokenizer/, the manifest, checksums.json, and the\n"
    "install record modelpkg_install.json). SOURCE is a package directory or an http(s) base URL;\n"
    "files are fetched as <SOURCE>/<package path>. Every file is checked against the manifest's size\n"
    "and SHA-256 while it arrives; an interrupted install, run again, resumes (HTTP Range); the\n"
    "previous install stays usable until the new one is complete, then one rename swaps them.\n"
    "\n"
    "  --repo-id ID        the Hub repo id the cache directory is named after\n"
    "  --cache DIR         the cache root (created when missing)\n"
    "  --variant ID        the variant to install; without it, the variant is selected for the\n"
    "                      device described by --abi --ep --quant --engine --memory-mb --api-level\n"
    "                      --prefer-quant --storage-bytes (as modelpkg mt select; the storage\n"
    "                      default is the cache's free space)\n"
    "  --features LIST     feature groups besides core and checksums (default: inference)\n"
    "  --jobs N            files fetched at once (default 4, at most 64)\n"
    "  --wait              wait for another installer of the same repo id instead of failing\n"
    "  --retries N         tries per transfer on network errors and 5xx (default 5)\n"
    "  --retry-delay-ms MS the first backoff, doubled per retry up to 8 s (default 250)\n"
    "  --timeout SECONDS   the deadline of each file over HTTP, every retry included (default 3600);\n"
    "                      a file not complete by then fails the install\n"
    "  --low-speed BYTES_PER_S, --low-speed-time SECONDS\n"
    "                      a transfer slower than BYTES_PER_S for SECONDS is a network error,\n"
    "                      retried within the deadline (default 1024 bytes/s for 30 s)\n"
    "  --json              progress as JSON lines on stderr, the result (or the refusal) as one JSON\n"
    "                      document on stdout\n"
    "\n"
    "Progress: a bar on a terminal (stderr); with --json, events {\"event\": ...} one per line.\n"
    "exit status: 0 installed, 1 refused or failed (the cache holds what it held before), 2 usage error\n";

typedef struct cli_state {
  bool json, tty;
  mpk_cli_bar bar;
  double started, last_json;
} cli_state;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *kind_name(mpk_mt_install_event_kind k) {
  switch (k) {
  case MPK_MT_INSTALL_PLANNED: return "planned";
  case MPK_MT_INSTALL_FILE_START: return "file_start";
  case MPK_MT_INSTALL_FILE_DONE: return "file_done";
  case MPK_MT_INSTALL_RETRY: return "retry";
  case MPK_MT_INSTALL_BYTES: return "bytes";
  case MPK_MT_INSTALL_COMMITTED: return "committed";
  }
  return "?";
}

static int on_event(void *ctx, const mpk_mt_install_event *ev) {
  cli_state *c = ctx;
  double t = now();
  double rate = t > c->started ? (double)ev->done / (t - c->started) : 0;
  if (c->json) {
    /* Byte events at most five times a second; the others always. */
    if (ev->kind == MPK_MT_INSTALL_BYTES && ev->done < ev->total && t - c->last_json < 0.2) return 0;
    if (ev->kind == MPK_MT_INSTALL_BYTES) c->last_json = t;
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string(kind_name(ev->kind)));
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
    return 0;
  }
  if (ev->kind == MPK_MT_INSTALL_RETRY) {
    mpk_cli_bar_done(&c->bar);
    fprintf(stderr, "modelpkg mt install: %s again: %s\n", ev->file, ev->message ? ev->message : "");
  }
  if (c->tty && (ev->kind == MPK_MT_INSTALL_BYTES || ev->kind == MPK_MT_INSTALL_FILE_START)) {
    /* The rate belongs to the bar: written once after each redraw (which starts with \r), then the
       rest of the line cleared, never appended to a line that was not redrawn. */
    double drawn = c->bar.last_draw;
    mpk_cli_progress(&c->bar, ev->done, ev->total);
    if (c->bar.last_draw != drawn) fprintf(stderr, " %.1f MiB/s\033[K", rate / 1048576.0);
  }
  return 0;
}

static const char *const result_keys[] = {"repo_dir", "variant", "files", "bytes", "reused_bytes", "retries",
                                           "restarts", "replaced", "seconds", NULL};

/* A usage error: said on stderr, and with --json also as the one refusal document on stdout. */
#define usage(json, cmd, ...) mpk_cli_usage_json((json), (cmd), result_keys, __VA_ARGS__)

/* A bounded integer option, or the usage status. */
static int parse_bounded(bool json, const char *cmd, const char *opt, const char *val, long long lo, long long hi,
                         unsigned *out) {
  long long v;
  if (!mpk_cli_parse_int(val, lo, hi, &v))
    return usage(json, cmd, "%s needs an integer from %lld to %lld, not '%s'", opt, lo, hi, val);
  *out = (unsigned)v;
  return MPK_EXIT_OK;
}

int mpk_cmd_mt_install(int argc, char **argv) {
  const char *cmd = "mt install";
  const char *source = NULL;
  mpk_mt_install_options o = MPK_MT_INSTALL_OPTIONS_INIT;
  mpk_cli_select sel = {0};
  cli_state c = {0};
  int status = MPK_EXIT_OK;
  c.json = mpk_cli_json_wanted(argc, argv); /* once --json is given, every outcome is a document on stdout */
  for (int i = 2; i < argc && status == MPK_EXIT_OK; i++) {
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) {
      fputs(help, stdout);
      mpk_cli_select_free(&sel);
      return MPK_EXIT_OK;
    }
    if (strcmp(a, "--json") == 0) {
      c.json = true;
    } else if (strcmp(a, "--wait") == 0) {
      o.wait_for_lock = 1;
    } else if (a[0] == '-' && a[1]) {
      static const char *const own[] = {"--repo-id", "--cache",   "--variant",   "--jobs",          "--retries",
                                        "--retry-delay-ms", "--timeout", "--low-speed", "--low-speed-time"};
      size_t k = 0;
      while (k < sizeof own / sizeof own[0] && strcmp(a, own[k]) != 0) k++;
      if (k == sizeof own / sizeof own[0] && !mpk_cli_is_select_option(a)) {
        status = usage(c.json, cmd, "unknown option '%s'", a);
      } else if (i + 1 >= argc) {
        status = usage(c.json, cmd, "%s needs a value", a);
      } else {
        const char *val = argv[++i];
        if (k == 0) o.repo_id = val;
        else if (k == 1) o.cache_dir = val;
        else if (k == 2) o.variant = val;
        else if (k == 3) status = parse_bounded(c.json, cmd, a, val, 1, 64, &o.jobs);
        else if (k == 4) status = parse_bounded(c.json, cmd, a, val, 1, 100, &o.attempts);
        else if (k == 5) status = parse_bounded(c.json, cmd, a, val, 1, 60000, &o.retry_delay_ms);
        else if (k == 6) status = parse_bounded(c.json, cmd, a, val, 1, 604800, &o.timeout_secs);
        else if (k == 7) status = parse_bounded(c.json, cmd, a, val, 1, 1000000000, &o.low_speed_bytes);
        else if (k == 8) status = parse_bounded(c.json, cmd, a, val, 1, 3600, &o.low_speed_secs);
        else {
          status = mpk_cli_select_option(cmd, a, val, &sel);
          if (status && c.json) {
            mpk_error e;
            mpk_error_clear(&e);
            mpk_fail(&e, MPK_EINVAL, NULL, NULL, "usage: %s %s is not valid (see the message on stderr)", a, val);
            mpk_cli_json_refuse("mt install", result_keys, &e);
          }
        }
      }
    } else if (source) {
      status = usage(c.json, cmd, "one SOURCE only ('%s' and '%s')", source, a);
    } else {
      source = a;
    }
  }
  if (status) {
    mpk_cli_select_free(&sel);
    return status;
  }
  mpk_cli_select_finish(&sel);
  mpk_mt_select_options so = sel.o;
  o.features = so.features; /* the groups to install, and what selection must offer */
  o.n_features = so.n_features;
  bool selecting = sel.device_given;
  if (!source || !o.repo_id || !o.cache_dir)
    status = usage(c.json, cmd, "SOURCE, --repo-id and --cache are required");
  else if (o.variant && selecting)
    status = usage(c.json, cmd, "--variant names the variant: device options select one; not both");
  if (status) {
    mpk_cli_select_free(&sel);
    return status;
  }
  o.select = &so;
  c.tty = !c.json && isatty(STDERR_FILENO);
  mpk_cli_bar_init(&c.bar, "install");
  c.started = now();
  o.on_event = on_event;
  o.ctx = &c;
  mpk_mt_install_result r;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mt_install(source, &o, &r, &err);
  mpk_cli_bar_done(&c.bar);
  double secs = now() - c.started;
  if (c.json && rc == 0) {
    json_t *root = mpk_cli_json_begin("mt install", true);
    json_object_set_new(root, "repo_dir", mpk_cli_json_str(r.repo_dir));
    json_object_set_new(root, "variant", mpk_cli_json_str(r.variant));
    json_object_set_new(root, "files", json_integer((json_int_t)r.files));
    json_object_set_new(root, "bytes", json_integer((json_int_t)r.total_bytes));
    json_object_set_new(root, "reused_bytes", json_integer((json_int_t)r.reused_bytes));
    json_object_set_new(root, "retries", json_integer((json_int_t)r.retries));
    json_object_set_new(root, "restarts", json_integer((json_int_t)r.restarts));
    json_object_set_new(root, "replaced", json_boolean(r.replaced));
    json_object_set_new(root, "seconds", json_real(secs));
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
  } else if (c.json) {
    mpk_cli_json_refuse("mt install", result_keys, &err);
  } else if (rc == 0) {
    printf("OK: installed %s (%zu files, %llu bytes, %llu resumed) into %s%s\n", r.variant, r.files,
           (unsigned long long)r.total_bytes, (unsigned long long)r.reused_bytes, r.repo_dir,
           r.replaced ? ", replacing the previous install" : "");
  }
  if (rc) mpk_cli_error(&err);
  mpk_mt_install_result_free(&r);
  mpk_cli_select_free(&sel);
  return rc ? MPK_EXIT_FAIL : MPK_EXIT_OK;
}
