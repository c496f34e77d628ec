/* modelpkg fit DIR [--lib FILE] [--context N] [--device-memory BYTES] [--max-binding-size N]
                    [--device-features F,...] [--set NAME=VALUE ...] [--json] */
#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: modelpkg fit DIR [--lib FILE] [--context N] [--device-memory BYTES]\n"
    "                    [--max-binding-size N] [--device-features F,...] [--set NAME=VALUE ...]\n"
    "                    [--json]\n"
    "\n"
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
    "finds) is refused with every difference. Details and WebLLM's figures: docs/fit.md.\n"
    "\n"
    "options:\n"
    "  --lib FILE               compiled model library (.wasm, .so, .dylib, .dll, .tar) or a JSON file\n"
    "                           with its whole _metadata\n"
    "  --context N              tokens the KV cache holds (default: the library's\n"
    "                           context_window_size, else its sliding_window_size, else the chat\n"
    "                           config's)\n"
    "  --set NAME=VALUE         value (a positive integer) of a named dimension used by the\n"
    "                           library's parameters; wins over model_config (repeatable)\n"
    "  --device-memory BYTES    memory the device can give the model, in bytes; a KiB, MiB, GiB or\n"
    "                           TiB suffix multiplies by 2^10, 2^20, 2^30, 2^40\n"
    "  --max-binding-size N     the device's maxStorageBufferBindingSize in bytes: the largest\n"
    "                           parameter must not exceed it\n"
    "  --device-features F,...  the WebGPU features the device offers ('f16' = shader-f16; \"\" means\n"
    "                           none): the artifact's required_features must be offered; without an\n"
    "                           artifact, a float16 model needs shader-f16\n"
    "  --json                   print one JSON document (schema: docs/CLI.md)\n"
    "  -h, --help               show this help\n"
    "\n"
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

int mpk_cmd_fit(int argc, char **argv) {
  const char *dir = NULL, *features = NULL;
  bool json = mpk_cli_json_wanted(argc, argv);
  long long binding = -1;
  mpk_mlc_fit_options opts = MPK_MLC_FIT_OPTIONS_INIT;
  mpk_mlc_named_dim sets[MAX_SETS];
  char *set_names[MAX_SETS];
  size_t n_sets = 0;
  int status = MPK_EXIT_USAGE;
  mpk_cli_device dev = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) {
      fputs(help, stdout);
      status = MPK_EXIT_OK;
      goto done;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--lib") == 0 || strcmp(a, "--context") == 0 || strcmp(a, "--device-memory") == 0 ||
               strcmp(a, "--max-binding-size") == 0 || strcmp(a, "--device-features") == 0 ||
               strcmp(a, "--set") == 0) {
      if (i + 1 >= argc) {
        mpk_cli_usage_json(json, "fit", fit_keys, "%s needs a value", a);
        goto done;
      }
      const char *val = argv[++i];
      long long n;
      if (strcmp(a, "--lib") == 0) {
        opts.lib_path = val;
      } else if (strcmp(a, "--device-features") == 0) {
        features = val;
      } else if (strcmp(a, "--context") == 0) {
        if (!parse_int(val, &n) || n < 1 || n > INT64_C(9007199254740991)) {
          mpk_cli_usage_json(json, "fit", fit_keys, "--context needs a positive integer, not '%s'", val);
          goto done;
        }
        opts.context = n;
      } else if (strcmp(a, "--device-memory") == 0) {
        if (!parse_bytes(val, &n)) {
          mpk_cli_usage_json(json, "fit", fit_keys, "--device-memory needs a number of bytes (optionally with KiB, MiB, GiB "
                                     "or TiB), not '%s'", val);
          goto done;
        }
        opts.has_device_memory = 1;
        opts.device_memory_bytes = n;
      } else if (strcmp(a, "--max-binding-size") == 0) {
        if (!parse_int(val, &n)) {
          mpk_cli_usage_json(json, "fit", fit_keys, "--max-binding-size needs a non-negative integer, not '%s'", val);
          goto done;
        }
        binding = n;
      } else { /* --set NAME=VALUE */
        const char *eq = strchr(val, '=');
        if (!eq || eq == val || !parse_int(eq + 1, &n) || n < 1) {
          mpk_cli_usage_json(json, "fit", fit_keys,
                             "--set needs NAME=VALUE with a positive integer VALUE (a dimension of 0 sizes "
                             "nothing), not '%s'", val);
          goto done;
        }
        if (n_sets == MAX_SETS) {
          mpk_cli_usage_json(json, "fit", fit_keys, "more than %d --set values", MAX_SETS);
          goto done;
        }
        char *name = strndup(val, (size_t)(eq - val));
        if (!name) {
          status = MPK_EXIT_FAIL;
          goto done;
        }
        for (size_t k = 0; k < n_sets; k++)
          if (strcmp(set_names[k], name) == 0) {
            mpk_cli_usage_json(json, "fit", fit_keys, "--set %s is given twice", name);
            free(name);
            goto done;
          }
        set_names[n_sets] = name;
        sets[n_sets++] = (mpk_mlc_named_dim){name, n};
      }
    } else if (a[0] == '-' && a[1]) {
      mpk_cli_usage_json(json, "fit", fit_keys, "unknown option '%s'", a);
      goto done;
    } else if (!dir) {
      dir = a;
    } else {
      mpk_cli_usage_json(json, "fit", fit_keys, "unexpected argument '%s'", a);
      goto done;
    }
  }
  if (!dir) {
    mpk_cli_usage_json(json, "fit", fit_keys, "missing the package directory");
    goto done;
  }

  if ((status = mpk_cli_device_init(&dev, "fit", features, binding, json, fit_keys)) != MPK_EXIT_OK) goto done;
  status = MPK_EXIT_FAIL;
  if (dev.given) opts.device = &dev.dev;
  opts.dims = sets;
  opts.n_dims = n_sets;

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
  for (size_t k = 0; k < n_sets; k++) free(set_names[k]);
  mpk_cli_device_free(&dev);
  return status;
}
