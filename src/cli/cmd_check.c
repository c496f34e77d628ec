/* modelpkg check DIR [--lib FILE] [--device-features F,...] [--max-binding-size N] [--json] */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: modelpkg check DIR [--lib FILE] [--device-features F,...] [--max-binding-size N]\n"
    "                      [--no-weights] [--jobs N] [--json]\n"
    "       modelpkg check DIR [--variant ID | --all-variants] [--no-hash] [--no-graph] [--jobs N] [--json]\n"
    "\n"
    "DIR holding mobiletransformers_manifest.json is checked as a MobileTransformers package (second\n"
    "form, see below); otherwise as an MLC package. A directory holding both manifests is refused.\n"
    "\n"
    "Check an MLC model package directory: its mlc-model-manifest.json (WebLLM 0.2.86's rules and\n"
    "the interface_id self-check), the files it names, and - with --lib - the compiled model\n"
    "library's _metadata.artifact: identities, roles, adapters, dtypes and kv_state_kind, exactly as\n"
    "WebLLM binds them. The tensor cache is checked (records inside their shards, no overlaps, sizes,\n"
    "unique names, confined paths) and so are the shard files (size, MD5), hashed in parallel; the\n"
    "weights must match the library's parameters and the declared parameter_schema_id. A package\n"
    "without a manifest is reported as declaring no contract, and only what exists is checked.\n"
    "\n"
    "options:\n"
    "  --lib FILE               compiled model library (.wasm, .so, .dylib, .dll, .tar) or a JSON file\n"
    "                           with its _metadata (or the artifact object alone)\n"
    "  --device-features F,...  the WebGPU features the device offers (e.g. shader-f16; 'f16' is\n"
    "                           accepted for shader-f16); an empty string means none. Every\n"
    "                           required_features entry must be offered.\n"
    "  --max-binding-size N     the device's maxStorageBufferBindingSize in bytes\n"
    "  --no-weights             do not read the shard files (the tensor cache is still checked)\n"
    "  --jobs N                 threads hashing shards (default: one per CPU, at most 8)\n"
    "  --json                   print one JSON report (schema: docs/check-report.md)\n"
    "  -h, --help               show this help\n"
    "\n"
    "A MobileTransformers package: the manifest's version gate and fields, a defaultVariant among\n"
    "its variants; for the variant checked, its feature paths, the inference/ group, its\n"
    "weight_handoff_map.json and every externalDataLocation file; every requiredFiles entry; then\n"
    "every file of the variant's download groups and the package-wide files must be inside the\n"
    "package with its fileSizes size (all sizes first) and its sha256 digest (hashed in parallel).\n"
    "Files on disk the manifest does not list are warnings. Rules: docs/mt.md.\n"
    "  --variant ID             check this variant (default: the manifest's defaultVariant)\n"
    "  --all-variants           check every variant and every file the manifest lists\n"
    "  --no-hash                presence, confinement and sizes only; no digests\n"
    "  --no-graph               do not read inference/model.onnx (no map-vs-graph, precision checks)\n"
    "  --jobs N, --json         as above\n"
    "\n"
    "Each problem is one line: FILE: JSON-POINTER: RULE. Of one kind (missing shards, differing\n"
    "parameters) the first 10 are listed, then one line with the count. Every file of an MLC package\n"
    "is read beneath DIR: a link out of it, a FIFO or a directory in a file's place is an error.\n"
    "exit status: 0 all checks hold, 1 a check failed, 2 usage error\n";

/* The check report's own keys (docs/check-report.md), null on a refusal. */
static const char *const check_keys[] = {"dir", "contract", "interface_id", "library", "weights", "binding", NULL};

int mpk_cmd_check(int argc, char **argv) {
  int mt_status = mpk_cmd_check_mt_dispatch(argc, argv); /* a MobileTransformers package: cmd_check_mt.c */
  if (mt_status >= 0) return mt_status;
  const char *dir = NULL, *lib = NULL, *features = NULL;
  bool json = mpk_cli_json_wanted(argc, argv), no_weights = false;
  long long binding = -1, jobs = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--no-weights") == 0) {
      no_weights = true;
    } else if (strcmp(a, "--lib") == 0 || strcmp(a, "--device-features") == 0 ||
               strcmp(a, "--max-binding-size") == 0 || strcmp(a, "--jobs") == 0) {
      if (i + 1 >= argc) return mpk_cli_usage_json(json, "check", check_keys, "%s needs a value", a);
      const char *val = argv[++i];
      if (strcmp(a, "--lib") == 0) {
        lib = val;
      } else if (strcmp(a, "--device-features") == 0) {
        features = val;
      } else {
        if (strcmp(a, "--jobs") == 0) {
          if (!mpk_cli_parse_int(val, 1, 256, &jobs))
            return mpk_cli_usage_json(json, "check", check_keys, "--jobs needs an integer from 1 to 256, not '%s'", val);
        } else if (!mpk_cli_parse_int(val, 0, LLONG_MAX, &binding)) {
          return mpk_cli_usage_json(json, "check", check_keys, "%s needs a non-negative integer, not '%s'", a, val);
        }
      }
    } else if (a[0] == '-' && a[1]) {
      return mpk_cli_usage_json(json, "check", check_keys, "unknown option '%s'", a);
    } else if (!dir) {
      dir = a;
    } else {
      return mpk_cli_usage_json(json, "check", check_keys, "unexpected argument '%s'", a);
    }
  }
  if (!dir) return mpk_cli_usage_json(json, "check", check_keys, "missing the package directory");

  mpk_cli_device dev;
  int st = mpk_cli_device_init(&dev, "check", features, binding, json, check_keys);
  if (st) {
    mpk_cli_device_free(&dev);
    return st;
  }
  mpk_cli_bar bar;
  mpk_cli_bar_init(&bar, "hashing shards");
  mpk_mlc_check_options opts = {.struct_size = sizeof opts, .lib_path = lib,
                                .device = dev.given ? &dev.dev : NULL,
                                .no_weights = no_weights,
                                .workers = (unsigned)jobs,
                                .progress = bar.enabled ? mpk_cli_progress : NULL,
                                .progress_ctx = &bar};
  mpk_mlc_report *r = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mlc_check(dir, &opts, &r, &err);
  mpk_cli_bar_done(&bar);
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("check", check_keys, &err);
    mpk_cli_device_free(&dev);
    return MPK_EXIT_FAIL;
  }
  if (json) mpk_cli_report_json(stdout, r);
  else mpk_cli_report_text(stdout, r);
  int status = r->n_problems ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  mpk_mlc_report_free(r);
  mpk_cli_device_free(&dev);
  return status;
}
