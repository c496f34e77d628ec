/* modelpkg mlc build DIR --tasks TASKS.json [--lib FILE | --params PARAMS.json] [--programs FILE]
   [--required-features F,...] [-o ARTIFACT.json] */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"

static const char help[] =
    "usage: modelpkg mlc build DIR --tasks TASKS.json [--lib FILE | --params PARAMS.json]\n"
    "                          [--programs PROGRAMS.json] [--required-features F,...] [-o ARTIFACT.json]\n"
    "\n"
    "Produce the manifest pair: write DIR/mlc-model-manifest.json (atomically; byte-identical to MLC's\n"
    "Python writer) and print the `artifact` object to embed in the compiled library's _metadata\n"
    "(or write it with -o).\n"
    "\n"
    "  --tasks FILE              the task description: the `tasks` object, or {\"tasks\": ..., \"programs\": ...}\n"
    "  --lib FILE                take the parameters (and, if it has an artifact, the programs) from a\n"
    "                            compiled library or its _metadata JSON\n"
    "  --params FILE             take the parameters from a JSON list of {name, shape, dtype}\n"
    "                            (default, without --lib or --params: DIR's tensor cache)\n"
    "  --programs FILE           the `programs` object (default: beside the tasks, else the library's)\n"
    "  --required-features F,... WebGPU features the library needs (sorted, de-duplicated)\n"
    "  -o FILE                   write the artifact there (atomically; - is standard output, a device\n"
    "                            or FIFO is written through) instead of stdout\n"
    "  -h, --help                show this help\n"
    "\n"
    "Named dimensions (e.g. vocab_size) take their values from DIR's mlc-chat-config.json model_config.\n"
    "Refused when a task names an executor or adapter the programs do not declare.\n";

typedef struct args {
  const char *dir, *tasks, *lib, *params, *programs, *features, *output;
} args;

static int read_all(const char *path, uint8_t **data, size_t *len, mpk_error *err) {
  mpk_mapped m;
  int rc = mpk_map_file(path, MPK_JSON_DEFAULT_MAX_BYTES, &m, err);
  if (rc) return rc;
  *data = malloc(m.size ? m.size : 1);
  if (*data) memcpy(*data, m.data, m.size);
  *len = m.size;
  mpk_unmap_file(&m);
  return *data ? 0 : mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
}

static int parse_args(int argc, char **argv, args *a) {
  for (int i = 2; i < argc; i++) {
    const char *s = argv[i];
    const char **slot = strcmp(s, "--tasks") == 0 ? &a->tasks
                        : strcmp(s, "--lib") == 0 ? &a->lib
                        : strcmp(s, "--params") == 0 ? &a->params
                        : strcmp(s, "--programs") == 0 ? &a->programs
                        : strcmp(s, "--required-features") == 0 ? &a->features
                        : strcmp(s, "-o") == 0 ? &a->output
                                                : NULL;
    if (slot) {
      if (i + 1 >= argc) return mpk_cli_usage_error("mlc build", "%s needs a value", s);
      *slot = argv[++i];
    } else if (s[0] == '-' && s[1]) {
      return mpk_cli_usage_error("mlc build", "unknown option '%s'", s);
    } else if (!a->dir) {
      a->dir = s;
    } else {
      return mpk_cli_usage_error("mlc build", "unexpected argument '%s'", s);
    }
  }
  if (!a->dir) return mpk_cli_usage_error("mlc build", "missing the package directory");
  if (!a->tasks) return mpk_cli_usage_error("mlc build", "missing --tasks");
  if (a->lib && a->params) return mpk_cli_usage_error("mlc build", "give --lib or --params, not both");
  return 0;
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
  char *path = mpk_path_join(a->dir, MPK_MLC_TENSOR_CACHE_FILENAME);
  mpk_mlc_tensor_cache *tc = NULL;
  int rc = path ? mpk_mlc_tensor_cache_load(path, &tc, err) : MPK_ENOMEM;
  if (!rc) rc = mpk_mlc_params_from_tensor_cache(tc, params, err);
  mpk_mlc_tensor_cache_free(tc);
  free(path);
  return rc;
}

int mpk_cmd_mlc_build(int argc, char **argv) {
  for (int i = 2; i < argc; i++)
    if (mpk_cli_is_help(argv[i])) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    }
  args a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  if (!mpk_is_dir(a.dir)) return mpk_cli_usage_error("mlc build", "'%s' is not a directory", a.dir);

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
  char *manifest_path = mpk_path_join(a.dir, MPK_MLC_MANIFEST_FILENAME);
  int status = MPK_EXIT_FAIL;

  if ((rc = read_all(a.tasks, &tasks, &tasks_len, &err))) goto fail;
  if (a.programs && (rc = read_all(a.programs, &programs, &programs_len, &err))) goto fail;
  if ((rc = load_params(&a, &md, &params, &err))) goto fail;
  char *chat = mpk_path_join(a.dir, MPK_MLC_CHAT_CONFIG_FILENAME);
  if (chat && mpk_file_exists(chat) && (rc = mpk_mlc_named_dims_from_chat_config(chat, &dims, &n_dims, &err))) {
    free(chat);
    goto fail;
  }
  free(chat);
  for (char *save = NULL, *tok = features ? strtok_r(features, ",", &save) : NULL; tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (n_feat == 64) {
      status = mpk_cli_usage_error("mlc build", "more than 64 required features");
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
  if ((rc = mpk_output_file(a.output ? a.output : "-", out.artifact, out.artifact_len, &err))) goto fail;
  bool f16 = false, f16_required = false;
  for (size_t i = 0; i < params->n; i++) f16 |= strcmp(params->items[i].dtype, "float16") == 0;
  for (size_t i = 0; i < n_feat; i++) f16_required |= strcmp(feat[i], "shader-f16") == 0;
  if (f16 && !f16_required)
    fprintf(stderr, "modelpkg: warning: float16 parameters, but shader-f16 is not among the required features\n");
  fprintf(stderr, "modelpkg: wrote %s (interface_id %s, parameter_schema_id %s)%s%s\n", manifest_path,
          out.interface_id, out.parameter_schema_id, a.output && strcmp(a.output, "-") != 0 ? " and " : "",
          a.output && strcmp(a.output, "-") != 0 ? a.output : "");
  status = MPK_EXIT_OK;
  goto done;
fail:
  mpk_cli_error(&err);
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
