/* modelpkg mt install SOURCE --repo-id ORG/NAME --cache DIR [--variant ID | device options]
   [--features A,B] [--jobs N] [--wait] [--retries N] [--retry-delay-ms MS] [--json]: install a
   package variant into a device cache, resumable, verified and atomic (docs/mt-install.md). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"

static const char help[] =
    "usage: modelpkg mt install SOURCE --repo-id ORG/NAME --cache DIR\n"
    "                           [--variant ID | [--abi A,B] [--ep E] [--quant Q] [--engine E]\n"
    "                            [--memory-mb N] [--api-level N] [--prefer-quant Q1,Q2]\n"
    "                            [--storage-bytes N]]\n"
    "                           [--features F1,F2,...] [--jobs N] [--wait] [--retries N]\n"
    "                           [--retry-delay-ms MS] [--json]\n"
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
    "  --json              progress as JSON lines on stderr, the result as one JSON document on stdout\n"
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
    mpk_cli_progress(&c->bar, ev->done, ev->total);
    fprintf(stderr, " %.1f MiB/s", rate / 1048576.0);
  }
  return 0;
}

/* A bounded integer option, or the usage status. */
static int parse_bounded(const char *cmd, const char *opt, const char *val, long long lo, long long hi, unsigned *out) {
  long long v;
  if (!mpk_cli_parse_int(val, lo, hi, &v))
    return mpk_cli_usage_error(cmd, "%s needs an integer from %lld to %lld, not '%s'", opt, lo, hi, val);
  *out = (unsigned)v;
  return MPK_EXIT_OK;
}

int mpk_cmd_mt_install(int argc, char **argv) {
  const char *cmd = "mt install";
  const char *source = NULL;
  mpk_mt_install_options o = {0};
  mpk_cli_select sel = {0};
  cli_state c = {0};
  int status = MPK_EXIT_OK;
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
      static const char *const own[] = {"--repo-id", "--cache", "--variant", "--jobs", "--retries", "--retry-delay-ms"};
      size_t k = 0;
      while (k < sizeof own / sizeof own[0] && strcmp(a, own[k]) != 0) k++;
      if (k == sizeof own / sizeof own[0] && !mpk_cli_is_select_option(a)) {
        status = mpk_cli_usage_error(cmd, "unknown option '%s'", a);
      } else if (i + 1 >= argc) {
        status = mpk_cli_usage_error(cmd, "%s needs a value", a);
      } else {
        const char *val = argv[++i];
        if (k == 0) o.repo_id = val;
        else if (k == 1) o.cache_dir = val;
        else if (k == 2) o.variant = val;
        else if (k == 3) status = parse_bounded(cmd, a, val, 1, 64, &o.jobs);
        else if (k == 4) status = parse_bounded(cmd, a, val, 1, 100, &o.attempts);
        else if (k == 5) status = parse_bounded(cmd, a, val, 1, 60000, &o.retry_delay_ms);
        else status = mpk_cli_select_option(cmd, a, val, &sel);
      }
    } else if (source) {
      status = mpk_cli_usage_error(cmd, "one SOURCE only ('%s' and '%s')", source, a);
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
    status = mpk_cli_usage_error(cmd, "SOURCE, --repo-id and --cache are required");
  else if (o.variant && selecting)
    status = mpk_cli_usage_error(cmd, "--variant names the variant: device options select one; not both");
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
  if (c.json) {
    json_t *root = json_object();
    json_object_set_new(root, "ok", json_boolean(rc == 0));
    if (rc == 0) {
      json_object_set_new(root, "repo_dir", mpk_cli_json_str(r.repo_dir));
      json_object_set_new(root, "variant", mpk_cli_json_str(r.variant));
      json_object_set_new(root, "files", json_integer((json_int_t)r.files));
      json_object_set_new(root, "bytes", json_integer((json_int_t)r.total_bytes));
      json_object_set_new(root, "reused_bytes", json_integer((json_int_t)r.reused_bytes));
      json_object_set_new(root, "retries", json_integer((json_int_t)r.retries));
      json_object_set_new(root, "restarts", json_integer((json_int_t)r.restarts));
      json_object_set_new(root, "replaced", json_boolean(r.replaced));
      json_object_set_new(root, "seconds", json_real(secs));
    } else {
      json_object_set_new(root, "problems", mpk_cli_json_problems(&err, 1));
    }
    mpk_cli_json_print(stdout, root);
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
