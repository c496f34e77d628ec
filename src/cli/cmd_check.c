/* modelpkg check DIR [--lib FILE] [--device-features F,...] [--max-binding-size N] [--json] */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: modelpkg check DIR [--lib FILE] [--device-features F,...] [--max-binding-size N] [--json]\n"
    "\n"
    "Check an MLC model package directory: its mlc-model-manifest.json (WebLLM 0.2.86's rules and\n"
    "the interface_id self-check), the files it names, and - with --lib - the compiled model\n"
    "library's _metadata.artifact: identities, roles, adapters, dtypes and kv_state_kind, exactly as\n"
    "WebLLM binds them. A package without a manifest is reported as declaring no contract, and only\n"
    "the files that exist are checked.\n"
    "\n"
    "options:\n"
    "  --lib FILE               compiled model library (.wasm, .so, .dylib, .dll, .tar) or a JSON file\n"
    "                           with its _metadata (or the artifact object alone)\n"
    "  --device-features F,...  the WebGPU features the device offers (e.g. shader-f16; 'f16' is\n"
    "                           accepted for shader-f16); an empty string means none. Every\n"
    "                           required_features entry must be offered.\n"
    "  --max-binding-size N     the device's maxStorageBufferBindingSize in bytes\n"
    "  --json                   print one JSON report (schema: docs/check-report.md)\n"
    "  -h, --help               show this help\n"
    "\n"
    "Each problem is one line: FILE: JSON-POINTER: RULE.\n"
    "exit status: 0 all checks hold, 1 a check failed, 2 usage error\n";

#define MAX_FEATURES 64

int mpk_cmd_check(int argc, char **argv) {
  const char *dir = NULL, *lib = NULL, *features = NULL;
  bool json = false;
  long long binding = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--lib") == 0 || strcmp(a, "--device-features") == 0 ||
               strcmp(a, "--max-binding-size") == 0) {
      if (i + 1 >= argc) return mpk_cli_usage_error("check", "%s needs a value", a);
      const char *val = argv[++i];
      if (strcmp(a, "--lib") == 0) {
        lib = val;
      } else if (strcmp(a, "--device-features") == 0) {
        features = val;
      } else {
        char *end;
        errno = 0;
        binding = strtoll(val, &end, 10);
        if (errno || *end || end == val || binding < 0)
          return mpk_cli_usage_error("check", "--max-binding-size needs a non-negative integer, not '%s'", val);
      }
    } else if (a[0] == '-' && a[1]) {
      return mpk_cli_usage_error("check", "unknown option '%s'", a);
    } else if (!dir) {
      dir = a;
    } else {
      return mpk_cli_usage_error("check", "unexpected argument '%s'", a);
    }
  }
  if (!dir) return mpk_cli_usage_error("check", "missing the package directory");

  /* Split the feature list in place of a copy; "f16" is shorthand for "shader-f16". */
  const char *feat[MAX_FEATURES];
  char *copy = NULL;
  mpk_mlc_device dev = {.features = feat, .max_storage_buffer_binding_size = binding};
  if (features) {
    dev.has_features = 1;
    copy = strdup(features);
    if (!copy) return MPK_EXIT_FAIL;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      while (*tok == ' ') tok++;
      if (!*tok) continue;
      if (dev.n_features == MAX_FEATURES) {
        free(copy);
        return mpk_cli_usage_error("check", "more than %d device features", MAX_FEATURES);
      }
      feat[dev.n_features++] = strcmp(tok, "f16") == 0 ? "shader-f16" : tok;
    }
  }
  mpk_mlc_check_options opts = {.lib_path = lib,
                                .device = (features || binding >= 0) ? &dev : NULL};
  mpk_mlc_report *r = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mlc_check(dir, &opts, &r, &err);
  if (rc) {
    mpk_cli_error(&err);
    free(copy);
    return MPK_EXIT_FAIL;
  }
  if (json) mpk_cli_report_json(stdout, r);
  else mpk_cli_report_text(stdout, r);
  int status = r->n_problems ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  mpk_mlc_report_free(r);
  free(copy);
  return status;
}
