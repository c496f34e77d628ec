/* modelpkg fit DIR [--lib FILE] [--context N] [--device-memory BYTES] [--max-binding-size N]
                    [--device-features F,...] [--set NAME=VALUE ...] [--json] */
#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char about[] =
    "Report what an MLC model needs of a device next to what the device has, and fail when it does\n"
    "not fit. Needed memory = parameters + KV cache + the largest temporary workspace:\n"
    "  parameters  the library's _metadata.params (named dimensions such as vocab_size take their\n"
    "              values from --set, else from model_config in the package's mlc-chat-config.json);\n"
    "              without --lib, the package's tensor cache\n"
    "  KV cache    _metadata.kv_cache: num_hidden_layers x 2 x num_key_value_heads x head_dim x\n"
    "              context x element size; the element type follows _metadata.quantization\n"
    "              (q4f16_1, q0f16: float16 = 2 bytes; q4f32_1, q0f32: float32 = 4 bytes)\n"
    "  workspace   the largest entry of _metadata.memory_usage\n"
    "The KV cache and workspace come only from a library: without --lib they are not counted, and a\n"
    "--device-memory check cannot pass. A library whose _metadata lacks kv_cache or memory_usage is\n"
    "an error naming the field, except an embedding model (no kv_cache and no decode function):\n"
    "parameters + workspace, no KV cache. A library that is not the package's (model_type,\n"
    "quantization or parameters differ from the chat config's and the tensor cache's, as `check`\n"
    "finds) is refused with every difference. Details and WebLLM's figures: docs/fit.md.\n";
static const char more[] =
    "Without --device-memory, --max-binding-size or --device-features only the needs are reported.\n"
    "exit status: 0 it fits (or no device was given), 1 it does not fit or an input is invalid,\n"
    "2 usage error\n";

#define MAX_SETS 64

/* The command's own keys in its --json document (docs/CLI.md), null on a refusal. */
static const char *const fit_keys[] = {"dir", "library", "chat_config", "tensor_cache", "fits", "needs", "device", NULL};

static bool parse_int(const char *s, long long *out) { return mpk_cli_parse_int(s, 0, LLONG_MAX, out); }

/* Bytes, optionally with a binary suffix. */
static bool parse_bytes(const char *s, long long *out) {
  static const struct {
    const char *suffix;
    int shift;
  } units[] = {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
  char *end;
  errno = 0;
  long long n = strtoll(s, &end, 10);
  if (errno || end == s || n < 0) return false;
  int shift = 0;
  if (*end) {
    bool known = false;
    for (size_t i = 0; i < sizeof units / sizeof units[0] && !known; i++)
      if (strcmp(end, units[i].suffix) == 0) {
        known = true;
        shift = units[i].shift;
      }
    if (!known) return false;
  }
  if (n > (INT64_C(9007199254740991) >> shift)) return false;
  *out = n << shift;
  return true;
}

static double mib(int64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

static const char *context_from(const mpk_mlc_fit *f) {
  switch (f->context_source) {
    case MPK_MLC_FIT_CONTEXT_GIVEN: return "given";
    case MPK_MLC_FIT_CONTEXT_LIBRARY: return "library";
    case MPK_MLC_FIT_CONTEXT_CHAT_CONFIG: return "chat_config";
    default: return NULL;
  }
}

static void print_problems(const mpk_mlc_fit_report *r) {
  for (size_t i = 0; i < r->n_notes; i++) printf("  note: %s\n", r->notes[i]);
  for (size_t i = 0; i < r->n_problems; i++) {
    char line[2048];
    mpk_error_format(&r->problems[i], line, sizeof line);
    printf("error: %s [%s]\n", line, mpk_code_name(r->problems[i].code));
  }
}

static void print_text(const mpk_mlc_fit_report *r, const mpk_mlc_fit_options *o) {
  const mpk_mlc_fit *f = &r->fit;
  printf("modelpkg fit %s\n", r->dir);
  if (r->refused) {
    if (r->lib_path) printf("  library:     %s\n", r->lib_path);
    if (r->chat_config_path) printf("  chat config: %s\n", r->chat_config_path);
    print_problems(r);
    printf("REFUSED: the library is not this package's (%zu problem%s; `modelpkg check` reports the same)\n",
           r->n_problems, r->n_problems == 1 ? "" : "s");
    return;
  }
  if (r->lib_path)
    printf("  library:     %s (quantization %s)\n", r->lib_path, f->quantization[0] ? f->quantization : "?");
  if (r->chat_config_path) printf("  chat config: %s\n", r->chat_config_path);
  printf("  parameters:  %12lld bytes %10.2f MiB  from %s; largest %lld bytes (%s)\n",
         (long long)f->parameter_bytes, mib(f->parameter_bytes),
         r->weights_path ? r->weights_path : "the library's _metadata.params", (long long)f->max_binding_bytes,
         f->max_binding_parameter[0] ? f->max_binding_parameter : "none");
  if (f->complete) {
    if (f->kv_dtype) {
      char from[96];
      if (f->context_source == MPK_MLC_FIT_CONTEXT_GIVEN) snprintf(from, sizeof from, "--context");
      else snprintf(from, sizeof from, "the %s's %s",
                    f->context_source == MPK_MLC_FIT_CONTEXT_LIBRARY ? "library" : "chat config",
                    f->context_field ? f->context_field : "?");
      printf("  KV cache:    %12lld bytes %10.2f MiB  %lld layers x 2 x %lld KV heads x head_dim %lld x "
             "%lld tokens x %d bytes (%s); context from %s\n",
             (long long)f->kv_cache_bytes, mib(f->kv_cache_bytes), (long long)f->kv_layers, (long long)f->kv_heads,
             (long long)f->kv_head_dim, (long long)f->context, mpk_dtype_bits(f->kv_dtype) / 8, f->kv_dtype, from);
    }
    else
      printf("  KV cache:    %12lld bytes %10.2f MiB  (none: %s)\n", (long long)f->kv_cache_bytes,
             mib(f->kv_cache_bytes), f->kv_none_reason ? f->kv_none_reason : "kv_state_kind none");
    printf("  workspace:   %12lld bytes %10.2f MiB  %s\n", (long long)f->workspace_bytes, mib(f->workspace_bytes),
           f->workspace_function[0] ? f->workspace_function : "(no entries)");
    printf("  total:       %12lld bytes %10.2f MiB\n", (long long)f->total_bytes, mib(f->total_bytes));
  } else {
    printf("  KV cache:    not counted (needs --lib)\n");
    printf("  workspace:   not counted (needs --lib)\n");
  }
  if (r->device_checked) {
    printf("  device:     ");
    if (o->has_device_memory)
      printf(" memory %lld bytes (%.2f MiB)", (long long)o->device_memory_bytes, mib(o->device_memory_bytes));
    if (o->device && o->device->max_storage_buffer_binding_size >= 0)
      printf(" maxStorageBufferBindingSize %lld", (long long)o->device->max_storage_buffer_binding_size);
    if (o->device && o->device->has_features) {
      printf(" features [");
      for (size_t i = 0; i < o->device->n_features; i++) printf("%s%s", i ? ", " : "", o->device->features[i]);
      printf("]");
    }
    printf("\n");
  }
  print_problems(r);
  if (!r->device_checked) printf("NEEDS ONLY: no device given (--device-memory, --max-binding-size, --device-features)\n");
  else if (r->n_problems) printf("DOES NOT FIT: %zu reason%s\n", r->n_problems, r->n_problems == 1 ? "" : "s");
  else printf("FITS\n");
}

static json_t *int_or_null(bool known, int64_t v) { return known ? json_integer(v) : json_null(); }
/* Empty strings (unknown fields of the fit) are null too. */
static json_t *nonempty_or_null(const char *s) { return s && *s ? json_string(s) : json_null(); }

static void print_json(const mpk_mlc_fit_report *r, const mpk_mlc_fit_options *o) {
  const mpk_mlc_fit *f = &r->fit;
  bool c = f->complete, kv = c && f->kv_dtype;
  json_t *root = mpk_cli_json_begin("fit", r->n_problems == 0);
  json_object_set_new(root, "dir", json_string(r->dir));
  json_object_set_new(root, "library", nonempty_or_null(r->lib_path));
  json_object_set_new(root, "chat_config", nonempty_or_null(r->chat_config_path));
  json_object_set_new(root, "tensor_cache", nonempty_or_null(r->weights_path));
  json_object_set_new(root, "fits", r->device_checked && !r->refused ? json_boolean(r->n_problems == 0) : json_null());
  json_t *needs = json_object();
  json_object_set_new(needs, "complete", json_boolean(c));
  json_object_set_new(needs, "parameter_bytes", json_integer(f->parameter_bytes));
  json_object_set_new(needs, "kv_cache_bytes", int_or_null(c, f->kv_cache_bytes));
  json_object_set_new(needs, "workspace_bytes", int_or_null(c, f->workspace_bytes));
  json_object_set_new(needs, "total_bytes", int_or_null(c, f->total_bytes));
  json_object_set_new(needs, "max_binding_bytes", json_integer(f->max_binding_bytes));
  json_object_set_new(needs, "max_binding_parameter", nonempty_or_null(f->max_binding_parameter));
  json_object_set_new(needs, "workspace_function", nonempty_or_null(c ? f->workspace_function : NULL));
  json_object_set_new(needs, "quantization", nonempty_or_null(f->quantization));
  json_object_set_new(needs, "kv_dtype", nonempty_or_null(kv ? f->kv_dtype : NULL));
  json_object_set_new(needs, "kv_bytes_per_token", int_or_null(kv, f->kv_bytes_per_token));
  json_object_set_new(needs, "kv_cache",
                      kv ? json_pack("{s:I, s:I, s:I}", "num_hidden_layers", (json_int_t)f->kv_layers,
                                     "num_key_value_heads", (json_int_t)f->kv_heads, "head_dim",
                                     (json_int_t)f->kv_head_dim)
                         : json_null());
  json_object_set_new(needs, "context", int_or_null(kv, f->context));
  json_object_set_new(needs, "context_source", nonempty_or_null(kv ? context_from(f) : NULL));
  json_object_set_new(needs, "context_field", nonempty_or_null(kv ? f->context_field : NULL));
  json_object_set_new(needs, "uses_float16", json_boolean(f->uses_float16));
  json_object_set_new(needs, "kv_none_reason", nonempty_or_null(c ? f->kv_none_reason : NULL));
  json_object_set_new(root, "needs", r->refused ? json_null() : needs);
  if (r->refused) json_decref(needs);
  json_t *dev = json_object();
  const mpk_mlc_device *d = o->device;
  json_object_set_new(dev, "memory_bytes", int_or_null(o->has_device_memory, o->device_memory_bytes));
  json_object_set_new(dev, "max_storage_buffer_binding_size",
                      int_or_null(d && d->max_storage_buffer_binding_size >= 0, d ? d->max_storage_buffer_binding_size : 0));
  json_t *feats = json_null();
  if (d && d->has_features) {
    feats = json_array();
    for (size_t i = 0; i < d->n_features; i++) json_array_append_new(feats, json_string(d->features[i]));
  }
  json_object_set_new(dev, "features", feats);
  json_object_set_new(root, "device", dev);
  mpk_cli_json_end(root, r->problems, r->n_problems, r->notes, r->n_notes);
}

/* --set NAME=VALUE, repeatable (an mpk_cli_opt fn). */
typedef struct sets {
  mpk_mlc_named_dim dims[MAX_SETS];
  char *names[MAX_SETS];
  size_t n;
} sets;
static int set_option(void *ctx, const mpk_cli_spec *s, bool json, const char *opt, const char *val) {
  (void)opt;
  sets *ss = ctx;
  long long n;
  const char *eq = strchr(val, '=');
  if (!eq || eq == val || !parse_int(eq + 1, &n) || n < 1)
    return mpk_cli_usage(s, json,
                         "--set needs NAME=VALUE with a positive integer VALUE (a dimension of 0 sizes nothing), not '%s'",
                         val);
  if (ss->n == MAX_SETS) return mpk_cli_usage(s, json, "more than %d --set values", MAX_SETS);
  char *name = strndup(val, (size_t)(eq - val));
  if (!name) return MPK_EXIT_FAIL;
  for (size_t k = 0; k < ss->n; k++)
    if (strcmp(ss->names[k], name) == 0) {
      int st = mpk_cli_usage(s, json, "--set %s is given twice", name);
      free(name);
      return st;
    }
  ss->names[ss->n] = name;
  ss->dims[ss->n++] = (mpk_mlc_named_dim){name, n};
  return MPK_EXIT_OK;
}

int mpk_cmd_fit(int argc, char **argv) {
  const char *features = NULL, *context_s = NULL, *memory_s = NULL, *binding_s = NULL;
  bool json = false;
  long long binding = -1, n;
  mpk_mlc_fit_options opts = MPK_MLC_FIT_OPTIONS_INIT;
  sets ss = {0};
  int status = MPK_EXIT_USAGE;
  mpk_cli_device dev = {0};
  const mpk_cli_opt table[] = {
      {"--lib", 0, "FILE", "compiled model library (.wasm, .so, .dylib, .dll, .tar) or a JSON file\n"
                           "with its whole _metadata", .str = &opts.lib_path},
      {"--context", 0, "N", "tokens the KV cache holds (default: the library's context_window_size, else\n"
                            "its sliding_window_size, else the chat config's)", .str = &context_s},
      {"--set", 0, "NAME=VALUE", "value (a positive integer) of a named dimension used by the\n"
                                 "library's parameters; wins over model_config (repeatable)",
       .fn = set_option, .ctx = &ss},
      {"--device-memory", 0, "BYTES", "memory the device can give the model, in bytes; a KiB, MiB, GiB or\n"
                                      "TiB suffix multiplies by 2^10, 2^20, 2^30, 2^40", .str = &memory_s},
      {"--max-binding-size", 0, "N", "the device's maxStorageBufferBindingSize in bytes: the largest\n"
                                     "parameter must not exceed it", .str = &binding_s},
      {"--device-features", 0, "F,...", "the WebGPU features the device offers ('f16' = shader-f16; \"\" means\n"
                                        "none): the artifact's required_features must be offered; without an\n"
                                        "artifact, a float16 model needs shader-f16", .str = &features},
      {"--json", 0, NULL, "print one JSON document (schema: docs/CLI.md)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = "fit",
                             .usage = "DIR [--lib FILE] [--context N] [--device-memory BYTES] [--max-binding-size N]\n"
                                      "DIR [--device-features F,...] [--set NAME=VALUE ...] [--json]",
                             .about = about, .opts = table, .more = more, .json_keys = fit_keys, .max_args = 1};
  mpk_cli_args a;
  status = mpk_cli_parse(&spec, argc, argv, &a);
  if (status != MPK_CLI_GO_ON) goto done;
  status = MPK_EXIT_USAGE;
  json = a.json;
  const char *dir = a.arg[0];
  if (!a.n) {
    mpk_cli_usage(&spec, json, "missing the package directory");
    goto done;
  }
  if (context_s) {
    if (!parse_int(context_s, &n) || n < 1 || n > INT64_C(9007199254740991)) {
      mpk_cli_usage(&spec, json, "--context needs a positive integer, not '%s'", context_s);
      goto done;
    }
    opts.context = n;
  }
  if (memory_s) {
    if (!parse_bytes(memory_s, &n)) {
      mpk_cli_usage(&spec, json, "--device-memory needs a number of bytes (optionally with KiB, MiB, GiB or TiB), not '%s'",
                    memory_s);
      goto done;
    }
    opts.has_device_memory = 1;
    opts.device_memory_bytes = n;
  }
  if (binding_s) {
    if (!parse_int(binding_s, &n)) {
      mpk_cli_usage(&spec, json, "--max-binding-size needs a non-negative integer, not '%s'", binding_s);
      goto done;
    }
    binding = n;
  }

  if ((status = mpk_cli_device_init(&dev, "fit", features, binding, json, fit_keys)) != MPK_EXIT_OK) goto done;
  status = MPK_EXIT_FAIL;
  if (dev.given) opts.device = &dev.dev;
  opts.dims = ss.dims;
  opts.n_dims = ss.n;

  mpk_mlc_fit_report *r = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mlc_fit_package(dir, &opts, &r, &err);
  if (rc == MPK_EINVAL) { /* an argument the library refused, e.g. --set of a name nothing uses */
    char line[2048];
    mpk_error_format(&err, line, sizeof line);
    status = mpk_cli_usage_error("fit", "%s", line);
    if (json) mpk_cli_json_refuse("fit", fit_keys, &err);
    goto done;
  }
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("fit", fit_keys, &err);
    status = MPK_EXIT_FAIL;
    goto done;
  }
  if (json) print_json(r, &opts);
  else print_text(r, &opts);
  status = r->n_problems ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  mpk_mlc_fit_report_free(r);
done:
  for (size_t k = 0; k < ss.n; k++) free(ss.names[k]);
  mpk_cli_device_free(&dev);
  return status;
}
