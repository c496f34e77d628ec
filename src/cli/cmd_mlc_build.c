/* modelpkg mlc build DIR --tasks TASKS.json [--lib FILE | --params PARAMS.json] [--programs FILE]
   [--required-features F,...] [-o ARTIFACT.json] */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char about[] =
    "Produce the manifest pair: write DIR/mlc-model-manifest.json (atomically; byte-identical to MLC's\n"
    "Python writer) and print the `artifact` object to embed in the compiled library's _metadata\n"
    "(or write it with -o).\n";
static const char more[] =
    "Named dimensions (e.g. vocab_size) take their values from DIR's mlc-chat-config.json model_config.\n"
    "Refused when a task names an executor or adapter the programs do not declare.\n"
    "exit status: 0 written, 1 refused (the reason on stderr), 2 usage error\n";

typedef struct args {
  const char *dir, *tasks, *lib, *params, *programs, *features, *output;
} args;

static int read_all(const char *path, uint8_t **data, size_t *len, mpk_error *err) {
  mpk_mapped m;
  int rc = mpk_map_file(path, MPK_DOCUMENT_MAX_BYTES, &m, err);
  if (rc) return rc;
  *data = malloc(m.size ? m.size : 1);
  if (*data) memcpy(*data, m.data, m.size);
  *len = m.size;
  mpk_unmap_file(&m);
  return *data ? 0 : mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
}

static const char *const build_keys[] = {"manifest", "interface_id", "parameter_schema_id", "artifact", NULL};

static int parse_args(int argc, char **argv, args *a, bool *json) {
  const mpk_cli_opt opts[] = {
      {"--tasks", 0, "FILE", "the task description: the `tasks` object, or {\"tasks\": ..., \"programs\": ...}",
       .str = &a->tasks},
      {"--lib", 0, "FILE", "take the parameters (and, if it has an artifact, the programs) from a\n"
                           "compiled library or its _metadata JSON", .str = &a->lib},
      {"--params", 0, "FILE", "take the parameters from a JSON list of {name, shape, dtype}\n"
                              "(default, without --lib or --params: DIR's tensor cache)", .str = &a->params},
      {"--programs", 0, "FILE", "the `programs` object (default: beside the tasks, else the library's)",
       .str = &a->programs},
      {"--required-features", 0, "F,...", "WebGPU features the library needs (sorted, de-duplicated)",
       .str = &a->features},
      {"-o", 0, "FILE", "write the artifact there (atomically; - is standard output, a device\n"
                        "or FIFO is written through) instead of stdout", .str = &a->output},
      {"--json", 0, NULL, "print one JSON document (docs/CLI.md): the manifest written, its ids and\n"
                          "the artifact (not with -o -)", .flag = json},
      {0}};
  const mpk_cli_spec spec = {.name = "mlc build",
                             .usage = "DIR --tasks TASKS.json [--lib FILE | --params PARAMS.json]\n"
                                      "DIR --tasks TASKS.json [--programs PROGRAMS.json] [--required-features F,...]\n"
                                      "DIR --tasks TASKS.json [-o ARTIFACT.json] [--json]",
                             .about = about, .opts = opts, .more = more, .json_keys = build_keys, .max_args = 1};
  mpk_cli_args p;
  int st = mpk_cli_parse(&spec, argc, argv, &p);
  if (st != MPK_CLI_GO_ON) return st;
  *json = p.json;
  a->dir = p.arg[0];
  if (!a->dir) return mpk_cli_usage(&spec, *json, "missing the package directory");
  if (!a->tasks) return mpk_cli_usage(&spec, *json, "missing --tasks");
  if (a->lib && a->params) return mpk_cli_usage(&spec, *json, "give --lib or --params, not both");
  if (!mpk_cli_is_dir(a->dir)) return mpk_cli_usage(&spec, *json, "'%s' is not a directory", a->dir);
  if (*json && a->output && mpk_output_is_stdout(a->output))
    return mpk_cli_usage(&spec, *json, "--json prints its document on standard output, which -o writes the artifact "
                                       "to; write the artifact to a file, or drop --json");
  return MPK_CLI_GO_ON;
}

/* The parameters: from the library, a params file, or the package's tensor cache. */
static int load_params(const args *a, mpk_mlc_metadata **md, mpk_mlc_params **params, mpk_error *err) {
  if (a->lib) {
    int rc = mpk_mlc_metadata_load(a->lib, md, err);
    if (!rc) rc = mpk_mlc_params_from_metadata(*md, params, err);
    if (rc && !err->file[0]) snprintf(err->file, sizeof err->file, "%s", a->lib);
    return rc;
  }
  if (a->params) {
    uint8_t *data;
    size_t len;
    int rc = read_all(a->params, &data, &len, err);
    if (rc) return rc;
    rc = mpk_mlc_params_parse(data, len, a->params, params, err);
    free(data);
    return rc;
  }
  char *path = mpk_cli_path_join(a->dir, MPK_MLC_TENSOR_CACHE_FILENAME);
  mpk_mlc_tensor_cache *tc = NULL;
  int rc = path ? mpk_mlc_tensor_cache_load(path, &tc, err) : MPK_ENOMEM;
  if (!rc) rc = mpk_mlc_params_from_tensor_cache(tc, params, err);
  mpk_mlc_tensor_cache_free(tc);
  free(path);
  return rc;
}

int mpk_cmd_mlc_build(int argc, char **argv) {
  args a = {0};
  bool json = false;
  int rc = parse_args(argc, argv, &a, &json);
  if (rc != MPK_CLI_GO_ON) return rc;

  mpk_error err;
  mpk_error_clear(&err);
  uint8_t *tasks = NULL, *programs = NULL;
  size_t tasks_len = 0, programs_len = 0;
  mpk_mlc_metadata *md = NULL;
  mpk_mlc_params *params = NULL;
  mpk_mlc_named_dim *dims = NULL;
  size_t n_dims = 0;
  char *features = a.features ? strdup(a.features) : NULL;
  const char *feat[64];
  size_t n_feat = 0;
  mpk_mlc_build_result out = {0};
  char *manifest_path = mpk_cli_path_join(a.dir, MPK_MLC_MANIFEST_FILENAME);
  int status = MPK_EXIT_FAIL;

  if ((rc = read_all(a.tasks, &tasks, &tasks_len, &err))) goto fail;
  if (a.programs && (rc = read_all(a.programs, &programs, &programs_len, &err))) goto fail;
  if ((rc = load_params(&a, &md, &params, &err))) goto fail;
  char *chat = mpk_cli_path_join(a.dir, MPK_MLC_CHAT_CONFIG_FILENAME);
  if (chat && mpk_cli_is_file(chat) && (rc = mpk_mlc_named_dims_from_chat_config(chat, &dims, &n_dims, &err))) {
    free(chat);
    goto fail;
  }
  free(chat);
  for (char *save = NULL, *tok = features ? strtok_r(features, ",", &save) : NULL; tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (n_feat == 64) {
      status = mpk_cli_usage_json(json, "mlc build", build_keys, "more than 64 required features");
      goto done;
    }
    feat[n_feat++] = tok;
  }
  mpk_mlc_build_input in = {.tasks_json = (const char *)tasks, .tasks_len = tasks_len,
                            .programs_json = (const char *)programs, .programs_len = programs_len,
                            .programs_from = md ? md->artifact : NULL, .params = params, .dims = dims,
                            .n_dims = n_dims, .required_features = feat, .n_required_features = n_feat};
  if ((rc = mpk_mlc_build(&in, &out, &err))) {
    if (strcmp(err.file, "tasks") == 0) snprintf(err.file, sizeof err.file, "%s", a.tasks);
    goto fail;
  }
  if ((rc = mpk_write_file_atomic(manifest_path, out.manifest, out.manifest_len, &err))) goto fail;
  /* The artifact goes to -o (the output contract, docs/CLI.md "Output files"; - is standard output)
     or, without -o, to standard output; the summary always goes to standard error. */
  if (json) {
    if (a.output && (rc = mpk_output_file(a.output, out.artifact, out.artifact_len, &err))) goto fail;
    json_t *root = mpk_cli_json_begin("mlc build", true);
    json_object_set_new(root, "manifest", json_string(manifest_path));
    json_object_set_new(root, "interface_id", json_string(out.interface_id));
    json_object_set_new(root, "parameter_schema_id", json_string(out.parameter_schema_id));
    json_t *artifact = json_loadb(out.artifact, out.artifact_len, 0, NULL);
    json_object_set_new(root, "artifact", artifact ? artifact : json_null());
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
  } else if ((rc = mpk_output_file(a.output ? a.output : "-", out.artifact, out.artifact_len, &err))) {
    goto fail;
  }
  if (out.f16_without_shader_f16)
    fprintf(stderr, "modelpkg: warning: float16 parameters, but shader-f16 is not among the required features\n");
  fprintf(stderr, "modelpkg: wrote %s (interface_id %s, parameter_schema_id %s)%s%s\n", manifest_path,
          out.interface_id, out.parameter_schema_id, a.output && strcmp(a.output, "-") != 0 ? " and " : "",
          a.output && strcmp(a.output, "-") != 0 ? a.output : "");
  status = MPK_EXIT_OK;
  goto done;
fail:
  mpk_cli_error(&err);
  if (json) mpk_cli_json_refuse("mlc build", build_keys, &err);
done:
  mpk_mlc_build_result_free(&out);
  free(manifest_path);
  free(tasks);
  free(programs);
  free(features);
  mpk_free(dims);
  mpk_mlc_params_free(params);
  mpk_mlc_metadata_free(md);
  return status;
}
