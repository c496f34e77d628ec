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

static const char about[] =
    "Install a MobileTransformers package variant into <DIR>/<sanitized repo id>/ in the installed\n"
    "layout (inference/, train/, embedding/, tokenizer/, the manifest, checksums.json, and the\n"
    "install record modelpkg_install.json). SOURCE is a package directory or an http(s) base URL;\n"
    "files are fetched as <SOURCE>/<package path>. Every file is checked against the manifest's size\n"
    "and SHA-256 while it arrives; an interrupted install, run again, resumes (HTTP Range); the\n"
    "previous install stays usable until the new one is complete, then one rename swaps them.\n"
    "The manifest's own rules (as modelpkg check applies them) are checked before a byte is fetched.\n"
    "Without --variant: with device options, the variant is selected for that device (as modelpkg\n"
    "mt select; the storage default is the cache's free space); without them, the default rule of\n"
    "check and merge: the variant this cache's install of the repo records, else defaultVariant.\n";
static const char more[] =
    "Progress: a bar on a terminal (stderr); with --json, events {\"event\": ...} one per line.\n"
    "exit status: 0 installed, 1 refused or failed (the cache holds what it held before), 2 usage error\n";

static int on_event(void *ctx, const mpk_mt_install_event *ev) {
  mpk_cli_install_event e = {.file = ev->file, .file_done = ev->file_done, .file_size = ev->file_size,
                             .done = ev->done, .total = ev->total, .files = ev->files, .message = ev->message};
  switch (ev->kind) {
  case MPK_MT_INSTALL_PLANNED: e.kind = "planned"; break;
  case MPK_MT_INSTALL_FILE_START: e.kind = "file_start", e.start = true; break;
  case MPK_MT_INSTALL_FILE_DONE: e.kind = "file_done"; break;
  case MPK_MT_INSTALL_RETRY: e.kind = "retry", e.retry = true; break;
  case MPK_MT_INSTALL_BYTES: e.kind = "bytes", e.bytes = true; break;
  case MPK_MT_INSTALL_COMMITTED: e.kind = "committed"; break;
  default: e.kind = "?";
  }
  mpk_cli_install_progress_event(ctx, &e);
  return 0;
}

static const char *const result_keys[] = {"repo_dir", "variant", "files", "bytes", "reused_bytes", "retries",
                                           "restarts", "replaced", "adapters", "seconds", NULL};

int mpk_cmd_mt_install(int argc, char **argv) {
  const char *cmd = "mt install";
  mpk_mt_install_options o = MPK_MT_INSTALL_OPTIONS_INIT;
  mpk_cli_select sel = {0};
  mpk_cli_install_progress c = {0};
  bool wait = false;
  mpk_cli_bounded jobs = {1, 64, &o.jobs}, conns = {1, 64, &o.connections}, retries = {1, 100, &o.attempts}, delay = {1, 60000, &o.retry_delay_ms},
          timeout = {1, 604800, &o.timeout_secs}, low = {1, 1000000000, &o.low_speed_bytes},
          low_time = {1, 3600, &o.low_speed_secs};
  const mpk_cli_opt opts[] = {
      {"--repo-id", 0, "ID", "the Hub repo id the cache directory is named after", .str = &o.repo_id},
      {"--cache", 0, "DIR", "the cache root (created when missing)", .str = &o.cache_dir},
      {"--variant", 0, "ID", "the variant to install (else selected by the device options below, else the default rule)", .str = &o.variant},
      MPK_CLI_SELECT_OPTIONS(&sel),
      {"--jobs", 0, "N", "files fetched at once (default 4, at most 64); over HTTP the default of --connections",
       .fn = mpk_cli_parse_bounded, .ctx = &jobs},
      {"--connections", 0, "N", "HTTP transfers at once, whole files and the ranges a file larger than 16 MiB\n"
                                "is split into (default: --jobs, else 4; at most 64)",
       .fn = mpk_cli_parse_bounded, .ctx = &conns},
      {"--cacert", 0, "FILE", "PEM certificate authorities https sources are verified against (default: the\n"
                              "system's)", .str = &o.ca_file},
      {"--wait", 0, NULL, "wait for another installer of the same repo id instead of failing", .flag = &wait},
      {"--retries", 0, "N", "tries per transfer on network errors and 5xx (default 5)", .fn = mpk_cli_parse_bounded,
       .ctx = &retries},
      {"--retry-delay-ms", 0, "MS", "the first backoff, doubled per retry up to 8 s (default 250)",
       .fn = mpk_cli_parse_bounded, .ctx = &delay},
      {"--timeout", 0, "SECONDS", "the deadline of each file over HTTP, every retry included (default 3600);\n"
                                  "a file not complete by then fails the install",
       .fn = mpk_cli_parse_bounded, .ctx = &timeout},
      {"--low-speed", 0, "BYTES_PER_S", "with --low-speed-time: a transfer slower than BYTES_PER_S for SECONDS\n"
                                        "is a network error, retried within the deadline (default 1024 bytes/s)",
       .fn = mpk_cli_parse_bounded, .ctx = &low},
      {"--low-speed-time", 0, "SECONDS", "see --low-speed (default 30 s)", .fn = mpk_cli_parse_bounded, .ctx = &low_time},
      {"--json", 0, NULL, "progress as JSON lines on stderr, the result (or the refusal) as one JSON\n"
                          "document on stdout", .flag = &c.json},
      {0}};
  const mpk_cli_spec spec = {.name = cmd,
                             .usage = "SOURCE --repo-id ORG/NAME --cache DIR [--variant ID | selection options]\n"
                                      "SOURCE --repo-id ORG/NAME --cache DIR [--features F1,F2,...] [--jobs N] [--wait]\n"
                                      "SOURCE --repo-id ORG/NAME --cache DIR [--connections N] [--cacert FILE]\n"
                                      "SOURCE --repo-id ORG/NAME --cache DIR [--retries N] [--retry-delay-ms MS]\n"
                                      "SOURCE --repo-id ORG/NAME --cache DIR [--timeout SECONDS] [--low-speed BYTES_PER_S]\n"
                                      "SOURCE --repo-id ORG/NAME --cache DIR [--low-speed-time SECONDS] [--json]",
                             .about = about, .opts = opts, .more = more, .json_keys = result_keys, .max_args = 1,
                             .extra = "one SOURCE only ('%s' and '%s')"};
  mpk_cli_args a;
  int status = mpk_cli_parse(&spec, argc, argv, &a);
  if (status != MPK_CLI_GO_ON) {
    mpk_cli_select_free(&sel);
    return status;
  }
  status = MPK_EXIT_OK;
  c.json = a.json; /* once --json is given, every outcome is a document on stdout */
  o.wait_for_lock = wait;
  const char *source = a.n ? a.arg[0] : NULL;
  mpk_cli_select_finish(&sel);
  mpk_mt_select_options so = sel.o;
  o.features = so.features; /* the groups to install, and what selection must offer */
  o.n_features = so.n_features;
  bool selecting = sel.device_given;
  if (!source || !o.repo_id || !o.cache_dir)
    status = mpk_cli_usage(&spec, c.json, "SOURCE, --repo-id and --cache are required");
  else if (o.variant && selecting)
    status = mpk_cli_usage(&spec, c.json, "--variant names the variant: device options select one; not both");
  if (status) {
    mpk_cli_select_free(&sel);
    return status;
  }
  o.select = selecting ? &so : NULL; /* no device described: the default variant rule */
  mpk_cli_install_progress_init(&c, cmd, c.json);
  o.on_event = on_event;
  o.ctx = &c;
  mpk_mt_install_result r;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mt_install(source, &o, &r, &err);
  mpk_cli_bar_done(&c.bar);
  double secs = mpk_cli_now() - c.started;
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
    json_t *adapters = json_array();
    for (size_t i = 0; i < r.n_adapters; i++)
      json_array_append_new(adapters, json_pack("{s:o, s:b, s:o}", "sha256", mpk_cli_json_str(r.adapters[i].sha256),
                                                "reapplied", r.adapters[i].reapplied, "reason",
                                                r.adapters[i].reason ? mpk_cli_json_str(r.adapters[i].reason) : json_null()));
    json_object_set_new(root, "adapters", adapters);
    json_object_set_new(root, "seconds", json_real(secs));
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
  } else if (c.json) {
    mpk_cli_json_refuse("mt install", result_keys, &err);
  } else if (rc == 0) {
    printf("OK: installed %s (%zu files, %llu bytes, %llu resumed) into %s%s\n", r.variant, r.files,
           (unsigned long long)r.total_bytes, (unsigned long long)r.reused_bytes, r.repo_dir,
           r.replaced ? ", replacing the previous install" : "");
    for (size_t i = 0; i < r.n_adapters; i++) {
      if (r.adapters[i].reapplied) printf("  adapter %s: re-applied to the new version\n", r.adapters[i].sha256);
      else printf("  adapter %s: dropped: %s\n", r.adapters[i].sha256[0] ? r.adapters[i].sha256 : "(unrecorded)",
                  r.adapters[i].reason);
    }
  }
  if (rc) mpk_cli_error(&err);
  mpk_mt_install_result_free(&r);
  mpk_cli_select_free(&sel);
  return rc ? MPK_EXIT_FAIL : MPK_EXIT_OK;
}
