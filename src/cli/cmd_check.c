/* modelpkg check DIR [--lib FILE] [--device-features F,...] [--max-binding-size N] [--json] */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char about[] =
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
    "A MobileTransformers package: the manifest's version gate and fields, a defaultVariant among\n"
    "its variants; for the variant checked, its feature paths, the inference/ group, its\n"
    "weight_handoff_map.json and every externalDataLocation file; every requiredFiles entry; then\n"
    "every file of the variant's download groups and the package-wide files must be inside the\n"
    "package with its fileSizes size (all sizes first) and its sha256 digest (hashed in parallel).\n"
    "Files on disk the manifest does not list are warnings. Rules: docs/mt.md.\n";

static const char more[] =
    "Each problem is one line: FILE: JSON-POINTER: RULE. Of one kind (missing shards, differing\n"
    "parameters) the first 10 are listed, then one line with the count. Every file of an MLC package\n"
    "is read beneath DIR: a link out of it, a FIFO or a directory in a file's place is an error.\n"
    "exit status: 0 all checks hold, 1 a check failed, 2 usage error\n";

/* The check report's own keys (docs/check-report.md), null on a refusal. */
static const char *const check_keys[] = {"dir", "contract", "interface_id", "library", "weights", "binding", NULL};

/* The options of one kind of package, for "--lib applies to an MLC package" and its twin. */
static bool is_mlc_option(const char *a) {
  return strcmp(a, "--lib") == 0 || strcmp(a, "--device-features") == 0 || strcmp(a, "--max-binding-size") == 0 ||
         strcmp(a, "--no-weights") == 0;
}
static bool is_mt_option(const char *a) {
  return strcmp(a, "--variant") == 0 || strcmp(a, "--all-variants") == 0 || strcmp(a, "--no-hash") == 0 ||
         strcmp(a, "--no-graph") == 0;
}

/* The first option of a kind on the command line (values skipped), or NULL. */
static const char *first_option(const mpk_cli_spec *s, int argc, char **argv, bool (*of_kind)(const char *)) {
  for (int i = 1; i < argc; i++) {
    if (of_kind(argv[i])) return argv[i];
    for (const mpk_cli_opt *o = s->opts; o->name; o++)
      if (o->value && strcmp(o->name, argv[i]) == 0) i++;
  }
  return NULL;
}

int mpk_cmd_check(int argc, char **argv) {
  const char *lib = NULL, *features = NULL, *binding_s = NULL, *jobs_s = NULL, *variant = NULL;
  bool json = false, no_weights = false, all = false, no_hash = false, no_graph = false;
  const mpk_cli_opt opts[] = {
      {"--lib", 0, "FILE", "compiled model library (.wasm, .so, .dylib, .dll, .tar) or a JSON file\n"
                           "with its _metadata (or the artifact object alone)", .str = &lib},
      {"--device-features", 0, "F,...", "the WebGPU features the device offers (e.g. shader-f16; 'f16' is\n"
                                        "accepted for shader-f16); an empty string means none. Every\n"
                                        "required_features entry must be offered.", .str = &features},
      {"--max-binding-size", 0, "N", "the device's maxStorageBufferBindingSize in bytes", .str = &binding_s},
      {"--no-weights", 0, NULL, "do not read the shard files (the tensor cache is still checked)", .flag = &no_weights},
      {"--variant", 0, "ID", "check this variant (default: an installed model's own, else defaultVariant) (MT packages)",
       .str = &variant, .once = true},
      {"--all-variants", 0, NULL, "check every variant and every file the manifest lists (MT packages)",
       .flag = &all},
      {"--no-hash", 0, NULL, "presence, confinement and sizes only; no digests (MT packages)",
       .flag = &no_hash},
      {"--no-graph", 0, NULL, "do not read inference/model.onnx (no map-vs-graph,\n"
                              "precision checks) (MT packages)", .flag = &no_graph},
      {"--jobs", 0, "N", "threads hashing files (default: one per CPU, at most 8)", .str = &jobs_s},
      {"--json", 0, NULL, "print one JSON report (schema: docs/check-report.md)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {
      .name = "check",
      .usage = "DIR [--lib FILE] [--device-features F,...] [--max-binding-size N] [--no-weights] [--jobs N] [--json]\n"
               "DIR [--variant ID | --all-variants] [--no-hash] [--no-graph] [--jobs N] [--json]",
      .about = about, .opts = opts, .more = more, .json_keys = check_keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  json = a.json;
  if (!a.n) return mpk_cli_usage(&spec, json, "missing the package directory");
  const char *dir = a.arg[0];
  long long jobs = 0, binding = -1;
  if ((st = mpk_cli_parse_jobs(&spec, json, jobs_s, &jobs))) return st;

  /* The kind of package decides which check runs (the library tells it from the manifests). */
  enum mpk_package_kind kind;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_package_kind(dir, &kind, &err)) { /* both manifests: neither kind is checked */
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("check", check_keys, &err);
    return MPK_EXIT_FAIL;
  }
  const char *mt_option = first_option(&spec, argc, argv, is_mt_option);
  if (kind == MPK_PACKAGE_MT || (mt_option && !mpk_cli_is_dir(dir))) { /* the MT check says "not a directory" */
    const char *mlc_option = first_option(&spec, argc, argv, is_mlc_option);
    if (mlc_option)
      return mpk_cli_usage(&spec, json, "%s applies to an MLC package; %s is a MobileTransformers package", mlc_option,
                           dir);
    if (variant && all) return mpk_cli_usage(&spec, json, "give --variant ID or --all-variants, not both");
    mpk_mt_check_options o = {.struct_size = sizeof o, .variant = variant, .all_variants = all, .no_hash = no_hash, .no_graph = no_graph,
                              .workers = (unsigned)jobs};
    return mpk_cli_check_mt(dir, &o, json);
  }
  if (mt_option)
    return mpk_cli_usage(&spec, json, "%s applies to a MobileTransformers package; %s has no %s", mt_option, dir,
                         MPK_MT_MANIFEST_FILENAME);
  if (binding_s && !mpk_cli_parse_int(binding_s, 0, LLONG_MAX, &binding))
    return mpk_cli_usage(&spec, json, "--max-binding-size needs a non-negative integer, not '%s'", binding_s);

  mpk_cli_device dev;
  st = mpk_cli_device_init(&dev, "check", features, binding, json, check_keys);
  if (st) {
    mpk_cli_device_free(&dev);
    return st;
  }
  mpk_cli_bar bar;
  mpk_cli_bar_init(&bar, "hashing shards");
  mpk_mlc_check_options mo = {.struct_size = sizeof mo, .lib_path = lib,
                                .device = dev.given ? &dev.dev : NULL,
                                .no_weights = no_weights,
                                .workers = (unsigned)jobs,
                                .progress = bar.enabled ? mpk_cli_progress : NULL,
                                .progress_ctx = &bar};
  mpk_mlc_report *r = NULL;
  mpk_error_clear(&err);
  int rc = mpk_mlc_check(dir, &mo, &r, &err);
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
