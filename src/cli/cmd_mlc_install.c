/* modelpkg mlc install SRC --cache DIR [--name NAME] [--lib URL|FILE] [--connections N] [--wait]
   [--verify] [--retries N] [--retry-delay-ms MS] [--timeout S] [--low-speed B --low-speed-time S]
   [--cacert FILE] [--json]: install an MLC model into a cache, verified, resumable and atomic
   (docs/mlc-install.md). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char about[] =
    "Install the MLC model at SOURCE into <DIR>/<name>/: SOURCE is a model directory or a model URL,\n"
    "resolved as WebLLM 0.2.86 does (a hub URL gains resolve/main/). First mlc-model-manifest.json (if\n"
    "any), mlc-chat-config.json, tensor-cache.json, the tokenizer files and the library (--lib) are\n"
    "read and checked as modelpkg check checks them (the library bound to the manifest) - a problem\n"
    "refuses the install before any shard is fetched. Then every shard of tensor-cache.json, checked\n"
    "against its size and MD5 while it arrives (a shard without an MD5 is refused), several at once\n"
    "(--connections); an interrupted install, run again, resumes. The previous install stays whole\n"
    "until the new one is complete, then one rename swaps them; the tree holds the documents, the\n"
    "library and the record modelpkg_mlc_install.json, and passes modelpkg check as installed.\n"
    "The same model installed again is a no-op (nothing fetched); shards a changed model shares with\n"
    "the installed one are copied from it, re-hashed, not fetched. The name: --name, else from the\n"
    "source (a hub URL .../ORG/MODEL/resolve/REV/ is ORG__MODEL; a directory, its basename).\n";
static const char more[] =
    "Progress: a bar on a terminal (stderr); with --json, events {\"event\": ...} one per line.\n"
    "exit status: 0 installed (or already installed), 1 refused or failed (the cache holds what it held\n"
    "before), 2 usage error\n";

static int on_event(void *ctx, const mpk_fetch_event *ev) {
  mpk_cli_install_event e = {.file = ev->file, .file_done = ev->file_done, .file_size = ev->file_size,
                             .done = ev->done, .total = ev->total, .files = ev->files, .message = ev->message};
  switch (ev->kind) {
  case MPK_FETCH_FILE_START: e.kind = "file_start", e.start = true; break;
  case MPK_FETCH_FILE_DONE: e.kind = "file_done"; break;
  case MPK_FETCH_RETRY: e.kind = "retry", e.retry = true; break;
  case MPK_FETCH_BYTES: e.kind = "bytes", e.bytes = true; break;
  default: e.kind = "?";
  }
  mpk_cli_install_progress_event(ctx, &e);
  return 0;
}

static const char *const result_keys[] = {"tree", "model_url", "library", "has_manifest", "files", "bytes",
                                           "fetched_bytes", "reused_bytes", "copied_bytes", "retries", "restarts",
                                           "replaced", "unchanged", "seconds", NULL};

int mpk_cmd_mlc_install(int argc, char **argv) {
  const char *cmd = "mlc install";
  mpk_mlc_install_options o = MPK_MLC_INSTALL_OPTIONS_INIT;
  mpk_cli_install_progress c = {0};
  bool wait = false, verify = false;
  mpk_cli_bounded conns = {1, 64, &o.connections}, retries = {1, 100, &o.attempts}, delay = {1, 60000, &o.retry_delay_ms},
          timeout = {1, 604800, &o.timeout_secs}, low = {1, 1000000000, &o.low_speed_bytes},
          low_time = {1, 3600, &o.low_speed_secs};
  const mpk_cli_opt opts[] = {
      {"--cache", 0, "DIR", "the cache root (created when missing)", .str = &o.cache_dir, .once = true},
      {"--name", 0, "NAME", "the tree's name in the cache (default: from SOURCE, see above)", .str = &o.name,
       .once = true},
      {"--lib", 0, "URL|FILE", "the compiled model library: checked against the manifest before any shard\n"
                               "is fetched, installed into the tree under its file name (at most 256 MiB)",
       .str = &o.lib, .once = true},
      {"--connections", 0, "N", "HTTP transfers at once, ranges of one shard included (default 4, at most 64)",
       .fn = mpk_cli_parse_bounded, .ctx = &conns},
      {"--wait", 0, NULL, "wait for another installer of the same tree instead of failing", .flag = &wait},
      {"--verify", 0, NULL, "when the same model is installed already: re-hash its shards, and install\n"
                            "again what is wrong", .flag = &verify},
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
      {"--cacert", 0, "FILE", "PEM certificate authorities https is verified against (default: the system's)",
       .str = &o.ca_file, .once = true},
      {"--json", 0, NULL, "progress as JSON lines on stderr, the result (or the refusal) as one JSON\n"
                          "document on stdout", .flag = &c.json},
      {0}};
  const mpk_cli_spec spec = {.name = cmd,
                             .usage = "SOURCE --cache DIR [--name NAME] [--lib URL|FILE] [--connections N] [--wait]\n"
                                      "SOURCE --cache DIR [--verify] [--retries N] [--retry-delay-ms MS]\n"
                                      "SOURCE --cache DIR [--timeout SECONDS] [--low-speed BYTES_PER_S]\n"
                                      "SOURCE --cache DIR [--low-speed-time SECONDS] [--cacert FILE] [--json]",
                             .about = about, .opts = opts, .more = more, .json_keys = result_keys, .max_args = 1,
                             .extra = "one SOURCE only ('%s' and '%s')"};
  mpk_cli_args a;
  int status = mpk_cli_parse(&spec, argc, argv, &a);
  if (status != MPK_CLI_GO_ON) return status;
  c.json = a.json;
  o.wait_for_lock = wait;
  o.verify = verify;
  const char *source = a.n ? a.arg[0] : NULL;
  if (!source || !o.cache_dir) return mpk_cli_usage(&spec, c.json, "SOURCE and --cache are required");
  mpk_cli_install_progress_init(&c, cmd, c.json);
  o.on_event = on_event;
  o.ctx = &c;
  mpk_mlc_install_result r;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mlc_install(source, &o, &r, &err);
  mpk_cli_bar_done(&c.bar);
  double secs = mpk_cli_now() - c.started;
  if (c.json && rc == 0) {
    json_t *root = mpk_cli_json_begin(cmd, true);
    json_object_set_new(root, "tree", mpk_cli_json_str(r.tree));
    json_object_set_new(root, "model_url", mpk_cli_json_str(r.model_url));
    json_object_set_new(root, "library", mpk_cli_json_str(r.library));
    json_object_set_new(root, "has_manifest", json_boolean(r.has_manifest));
    json_object_set_new(root, "files", json_integer((json_int_t)r.files));
    json_object_set_new(root, "bytes", json_integer((json_int_t)r.total_bytes));
    json_object_set_new(root, "fetched_bytes", json_integer((json_int_t)r.fetched_bytes));
    json_object_set_new(root, "reused_bytes", json_integer((json_int_t)r.reused_bytes));
    json_object_set_new(root, "copied_bytes", json_integer((json_int_t)r.copied_bytes));
    json_object_set_new(root, "retries", json_integer((json_int_t)r.retries));
    json_object_set_new(root, "restarts", json_integer((json_int_t)r.restarts));
    json_object_set_new(root, "replaced", json_boolean(r.replaced));
    json_object_set_new(root, "unchanged", json_boolean(r.unchanged));
    json_object_set_new(root, "seconds", json_real(secs));
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
  } else if (c.json) {
    mpk_cli_json_refuse(cmd, result_keys, &err);
  } else if (rc == 0 && r.unchanged) {
    printf("OK: %s is installed already, unchanged (%zu shards, %llu bytes): nothing fetched\n", r.tree, r.files,
           (unsigned long long)r.total_bytes);
  } else if (rc == 0) {
    printf("OK: installed %s into %s (%zu shards, %llu bytes: %llu fetched, %llu resumed, %llu copied from the "
           "previous install)%s%s%s\n",
           r.model_url, r.tree, r.files, (unsigned long long)r.total_bytes, (unsigned long long)r.fetched_bytes,
           (unsigned long long)r.reused_bytes, (unsigned long long)r.copied_bytes,
           r.library ? ", library " : "", r.library ? r.library : "",
           r.replaced ? ", replacing the previous install" : "");
  }
  if (rc) mpk_cli_error(&err);
  mpk_mlc_install_result_free(&r);
  return rc ? MPK_EXIT_FAIL : MPK_EXIT_OK;
}
