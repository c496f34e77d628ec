/* Device fit: what a model needs of a device (parameters + KV cache + temporary workspace, the
   largest parameter, float16) and whether a device has it. The rule is MLC's (its model_metadata
   tool and WebLLM's vram_required_MB figures); docs/fit.md has the formula and the comparison. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

#define MD_FILE "_metadata"

/* Copy a name into a fixed buffer; a name that does not fit is cut and ends in "...". */
static void copy_name(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n < cap) {
    memcpy(dst, src, n + 1);
    return;
  }
  memcpy(dst, src, cap - 4);
  memcpy(dst + cap - 4, "...", 4);
}

/* *acc *= v within 2^53 (v >= 0); false on overflow. */
static bool mul_safe(int64_t *acc, int64_t v) {
  if (v && *acc > MPK_SAFE_INT_MAX / v) return false;
  *acc *= v;
  return true;
}

static bool add_safe(int64_t *acc, int64_t v) {
  if (v > MPK_SAFE_INT_MAX - *acc) return false;
  *acc += v;
  return true;
}

static const mpk_mlc_named_dim *find_dim(const mpk_mlc_named_dim *dims, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (dims[i].name && strcmp(dims[i].name, name) == 0) return &dims[i];
  return NULL;
}

/* ---------------------------------------------------------------- parameters */

static int count_params(const mpk_mlc_params *p, bool from_md, const mpk_mlc_named_dim *dims,
                        size_t n_dims, mpk_mlc_fit *out, mpk_error *err) {
  const char *file = from_md ? MD_FILE : NULL;
  /* Every named dimension must have a value: say which, and where it is used. */
  for (size_t i = 0; i < p->n; i++) {
    const mpk_mlc_param *x = &p->items[i];
    for (size_t d = 0; d < x->ndim; d++) {
      if (!x->shape[d].name || find_dim(dims, n_dims, x->shape[d].name)) continue;
      char ptr[64];
      snprintf(ptr, sizeof ptr, "/params/%zu/shape/%zu", i, d);
      return mpk_fail(err, MPK_ENOTFOUND, file, from_md ? ptr : NULL,
                      "parameter %s: named dimension \"%s\" has no value (model_config gives none "
                      "and none was set)",
                      x->name, x->shape[d].name);
    }
  }
  mpk_mlc_resources res;
  int rc = mpk_mlc_params_resources(p, dims, n_dims, &res, err);
  if (rc) {
    if (err && !err->file[0] && file) snprintf(err->file, sizeof err->file, "%s", file);
    return rc;
  }
  out->parameter_bytes = res.estimated_device_memory_bytes;
  out->max_binding_bytes = res.max_storage_buffer_binding_size;
  for (size_t i = 0; i < p->n; i++) {
    const mpk_mlc_param *x = &p->items[i];
    if (mpk_dtype_is(x->dtype, MPK_DT_FLOAT16)) out->uses_float16 = 1;
    if (!out->max_binding_parameter[0]) {
      /* The first parameter of the largest size: a one-item view of the same list. */
      mpk_mlc_params one = {.items = x, .n = 1};
      if (mpk_mlc_params_resources(&one, dims, n_dims, &res, NULL) == 0 &&
          res.estimated_device_memory_bytes == out->max_binding_bytes)
        copy_name(out->max_binding_parameter, sizeof out->max_binding_parameter, x->name);
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- the library's _metadata */

/* An optional integer member: absent leaves *out; present must be a safe integer. */
static int opt_integer(const json_t *obj, const char *key, const char *ptr, int64_t *out, mpk_error *err) {
  const json_t *v = json_object_get(obj, key);
  if (!v) return 0;
  if (!mpk_json_safe_integer(v, out)) return mpk_fail(err, MPK_EMALFORMED, MD_FILE, ptr, "expected an integer");
  return 0;
}

/* The context a library states: context_window_size when positive, else sliding_window_size when
   positive (as WebLLM sizes its KV cache); 0 when neither. */
static int library_context(const json_t *root, int64_t *ctx, const char **field, mpk_error *err) {
  int64_t cw = -1, sw = -1;
  int rc = opt_integer(root, "context_window_size", "/context_window_size", &cw, err);
  if (!rc) rc = opt_integer(root, "sliding_window_size", "/sliding_window_size", &sw, err);
  if (rc) return rc;
  *ctx = 0;
  *field = NULL;
  if (cw > 0) {
    *ctx = cw;
    *field = "context_window_size";
  } else if (sw > 0) {
    *ctx = sw;
    *field = "sliding_window_size";
  }
  return 0;
}

/* The KV cache element type, read from the quantization name as MLC's model_metadata tool does:
   "f32" anywhere means float32, else "bf16" bfloat16, else "f16" float16. */
static const char *kv_dtype_of(const char *quantization) {
  if (strstr(quantization, "f32")) return mpk_dtype_name(MPK_DT_FLOAT32);
  if (strstr(quantization, "bf16")) return mpk_dtype_name(MPK_DT_BFLOAT16);
  if (strstr(quantization, "f16")) return mpk_dtype_name(MPK_DT_FLOAT16);
  return NULL;
}

static int kv_member(const json_t *kv, const char *key, int64_t *out, mpk_error *err) {
  char ptr[64];
  snprintf(ptr, sizeof ptr, "/kv_cache/%s", key);
  const json_t *v = json_object_get(kv, key);
  if (!v)
    return mpk_fail(err, MPK_ENOTFOUND, MD_FILE, ptr, "missing: the KV cache size needs %s", key);
  if (!mpk_json_safe_integer(v, out) || *out < 1)
    return mpk_fail(err, MPK_EMALFORMED, MD_FILE, ptr, "expected an integer >= 1");
  return 0;
}

static int count_kv_cache(const json_t *root, int64_t context, mpk_mlc_fit *out, mpk_error *err) {
  const json_t *q = json_object_get(root, "quantization");
  if (!q)
    return mpk_fail(err, MPK_ENOTFOUND, MD_FILE, "/quantization",
                    "missing: the KV cache element type is read from the quantization");
  if (!json_is_string(q)) return mpk_fail(err, MPK_EMALFORMED, MD_FILE, "/quantization", "expected a string");
  copy_name(out->quantization, sizeof out->quantization, json_string_value(q));
  out->kv_dtype = kv_dtype_of(json_string_value(q));
  if (!out->kv_dtype)
    return mpk_fail(err, MPK_EUNSUPPORTED, MD_FILE, "/quantization",
                    "quantization \"%s\" names no f16, bf16 or f32 compute type: the KV cache element "
                    "size is unknown",
                    json_string_value(q));

  const json_t *kv = json_object_get(root, "kv_cache");
  if (!kv)
    return mpk_fail(err, MPK_ENOTFOUND, MD_FILE, "/kv_cache",
                    "missing: the KV cache size needs _metadata.kv_cache (num_hidden_layers, "
                    "num_key_value_heads, head_dim)");
  if (!json_is_object(kv)) return mpk_fail(err, MPK_EMALFORMED, MD_FILE, "/kv_cache", "expected an object");
  /* A member this rule does not know could change the layout (e.g. compressed latent caches):
     refuse rather than guess. */
  static const char *const known[] = {"num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim"};
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)kv, key, val) {
    bool ok = false;
    for (size_t i = 0; i < sizeof known / sizeof known[0] && !ok; i++) ok = strcmp(key, known[i]) == 0;
    if (!ok) {
      mpk_path p;
      mpk_path_init(&p);
      mpk_path_push_key(&p, "kv_cache");
      mpk_path_push_key(&p, key);
      return mpk_fail(err, MPK_EUNSUPPORTED, MD_FILE, p.buf,
                      "unknown kv_cache member: the KV cache size rule knows num_hidden_layers, "
                      "num_attention_heads, num_key_value_heads and head_dim");
    }
  }
  int64_t heads;
  int rc = kv_member(kv, "num_hidden_layers", &out->kv_layers, err);
  if (!rc && json_object_get(kv, "num_attention_heads")) rc = kv_member(kv, "num_attention_heads", &heads, err);
  if (!rc) rc = kv_member(kv, "num_key_value_heads", &out->kv_heads, err);
  if (!rc) rc = kv_member(kv, "head_dim", &out->kv_head_dim, err);
  if (rc) return rc;

  if (context > 0) {
    out->context = context;
    out->context_source = MPK_MLC_FIT_CONTEXT_GIVEN;
  } else {
    if ((rc = library_context(root, &out->context, &out->context_field, err))) return rc;
    if (!out->context)
      return mpk_fail(err, MPK_ENOTFOUND, MD_FILE, "/context_window_size",
                      "the library states no context length (context_window_size and "
                      "sliding_window_size are absent or -1): give one");
    out->context_source = MPK_MLC_FIT_CONTEXT_LIBRARY;
  }
  int64_t per_token = 2; /* K and V */
  bool ok = mul_safe(&per_token, out->kv_layers) && mul_safe(&per_token, out->kv_heads) &&
            mul_safe(&per_token, out->kv_head_dim) && mul_safe(&per_token, mpk_dtype_bits(out->kv_dtype) / 8);
  int64_t bytes = per_token;
  if (!ok || !mul_safe(&bytes, out->context))
    return mpk_fail(err, MPK_ELIMIT, MD_FILE, "/kv_cache", "the KV cache size exceeds 2^53 bytes");
  out->kv_bytes_per_token = per_token;
  out->kv_cache_bytes = bytes;
  return 0;
}

static int count_workspace(const json_t *root, mpk_mlc_fit *out, mpk_error *err) {
  const json_t *mu = json_object_get(root, "memory_usage");
  if (!mu)
    return mpk_fail(err, MPK_ENOTFOUND, MD_FILE, "/memory_usage",
                    "missing: the temporary workspace size needs _metadata.memory_usage");
  if (!json_is_object(mu)) return mpk_fail(err, MPK_EMALFORMED, MD_FILE, "/memory_usage", "expected an object");
  const char *key, *best = NULL;
  json_t *val;
  int64_t max = 0;
  json_object_foreach((json_t *)mu, key, val) {
    int64_t v;
    if (!mpk_json_safe_integer(val, &v) || v < 0) {
      mpk_path p;
      mpk_path_init(&p);
      mpk_path_push_key(&p, "memory_usage");
      mpk_path_push_key(&p, key);
      return mpk_fail(err, MPK_EMALFORMED, MD_FILE, p.buf, "expected a non-negative integer (bytes)");
    }
    if (!best || v > max || (v == max && strcmp(key, best) < 0)) {
      best = key;
      max = v;
    }
  }
  out->workspace_bytes = max;
  if (best) copy_name(out->workspace_function, sizeof out->workspace_function, best);
  return 0;
}

/* An encoder (an embedding model, WebLLM's ModelType.embedding): _metadata has no kv_cache and the
   library no function that decodes or creates a KV cache (memory_usage lists every function). */
static bool is_embedding(const json_t *root) {
  if (json_object_get(root, "kv_cache")) return false;
  const json_t *mu = json_object_get(root, "memory_usage");
  if (!json_is_object(mu)) return false;
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)mu, key, val) {
    if (strstr(key, "decode") || strstr(key, "kv_cache") || strstr(key, "verify")) return false;
  }
  return true;
}

static int count_library(const json_t *root, const mpk_mlc_metadata *md, int64_t context, mpk_mlc_fit *out,
                         mpk_error *err) {
  /* One device holds everything only when the library is not split over several. */
  static const char *const split[] = {"tensor_parallel_shards", "pipeline_parallel_stages"};
  for (size_t i = 0; i < 2; i++) {
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", split[i]);
    int64_t n = 1;
    int rc = opt_integer(root, split[i], ptr, &n, err);
    if (rc) return rc;
    if (n != 1)
      return mpk_fail(err, MPK_EUNSUPPORTED, MD_FILE, ptr,
                      "%s is %lld: the per-device memory of a library split over several devices is "
                      "not computed",
                      split[i], (long long)n);
  }
  mpk_mlc_kv_state_kind kind;
  int rc = mpk_mlc_kv_state_kind_parse(md->kv_state_kind, &kind, err);
  if (rc) return rc;
  if (kind == MPK_MLC_KV_RNN_STATE || kind == MPK_MLC_KV_HYBRID)
    return mpk_fail(err, MPK_EUNSUPPORTED, MD_FILE, "/kv_state_kind",
                    "kv_state_kind \"%s\": the size of an RNN state is not computed",
                    mpk_mlc_kv_state_kind_name(kind));
  if (kind == MPK_MLC_KV_NONE || is_embedding(root)) {
    const json_t *q = json_object_get(root, "quantization");
    if (json_is_string(q)) copy_name(out->quantization, sizeof out->quantization, json_string_value(q));
    out->kv_cache_bytes = 0;
    out->kv_none_reason = kind == MPK_MLC_KV_NONE ? "kv_state_kind none" : "embedding model";
  } else if ((rc = count_kv_cache(root, context, out, err))) {
    return rc;
  }
  if ((rc = count_workspace(root, out, err))) return rc;
  if (mpk_dtype_is(out->kv_dtype, MPK_DT_FLOAT16)) out->uses_float16 = 1;
  int64_t total = out->parameter_bytes;
  if (!add_safe(&total, out->kv_cache_bytes) || !add_safe(&total, out->workspace_bytes))
    return mpk_fail(err, MPK_ELIMIT, MD_FILE, NULL, "the total size exceeds 2^53 bytes");
  out->total_bytes = total;
  out->complete = 1;
  return 0;
}

static void fit_init(mpk_mlc_fit *out) {
  memset(out, 0, sizeof *out);
  out->kv_cache_bytes = out->workspace_bytes = out->total_bytes = -1;
  out->context_source = MPK_MLC_FIT_CONTEXT_NONE;
}

int mpk_mlc_fit_compute(const mpk_mlc_metadata *md, const mpk_mlc_params *weights,
                        const mpk_mlc_named_dim *dims, size_t n_dims, int64_t context, mpk_mlc_fit *out,
                        mpk_error *err) {
  if (!out || (!md && !weights) || (n_dims && !dims))
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (context < 0) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "context must be >= 0, not %lld", (long long)context);
  fit_init(out);
  if (md && md->artifact_only)
    return mpk_fail(err, MPK_ENOTFOUND, MD_FILE, "",
                    "only the artifact object was given: the fit needs the whole _metadata (params, "
                    "kv_cache, memory_usage)");
  const json_t *root = NULL;
  json_t *owned = NULL;
  int rc = 0;
  if (md && (rc = mpk_mlc_metadata_tree(md, MD_FILE, &root, &owned, err))) return rc;
  mpk_mlc_params *owned_params = NULL;
  const mpk_mlc_params *p = weights;
  if (!p && !(rc = mpk_mlc_params_from_metadata(md, &owned_params, err))) p = owned_params;
  if (!rc) rc = count_params(p, !weights, dims, n_dims, out, err);
  if (!rc && md) rc = count_library(root, md, context, out, err);
  mpk_mlc_params_free(owned_params);
  json_decref(owned);
  if (rc) {
    fit_init(out);
    return rc;
  }
  return 0;
}

/* ---------------------------------------------------------------- against a device */

typedef struct reasons {
  mpk_problem_fn fn;
  void *ctx;
  mpk_error *err;
  int first;
} reasons;

static void reason(reasons *r, const mpk_error *e) {
  if (!r->first) {
    r->first = e->code;
    if (r->err) *r->err = *e;
  }
  if (r->fn) r->fn(r->ctx, e);
}

static void reason_fail(reasons *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void reason_fail(reasons *r, int code, const char *fmt, ...) {
  mpk_error e;
  mpk_error_clear(&e);
  va_list ap;
  va_start(ap, fmt);
  mpk_vfail(&e, code, NULL, NULL, fmt, ap);
  va_end(ap);
  reason(r, &e);
}

int mpk_mlc_fit_check(const mpk_mlc_fit *fit, const mpk_mlc_artifact *art, const mpk_mlc_device *dev,
                      int64_t memory, mpk_problem_fn on_problem, void *problem_ctx, mpk_error *err) {
  if (!fit) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  reasons r = {on_problem, problem_ctx, err, 0};
  if (memory >= 0) {
    if (fit->complete && fit->total_bytes > memory)
      reason_fail(&r, MPK_EMISMATCH,
                  "device memory: the model needs %lld bytes (parameters %lld + KV cache %lld + "
                  "workspace %lld), but the device has %lld",
                  (long long)fit->total_bytes, (long long)fit->parameter_bytes, (long long)fit->kv_cache_bytes,
                  (long long)fit->workspace_bytes, (long long)memory);
    else if (!fit->complete && fit->parameter_bytes > memory)
      reason_fail(&r, MPK_EMISMATCH,
                  "device memory: the parameters alone need %lld bytes, but the device has %lld",
                  (long long)fit->parameter_bytes, (long long)memory);
    else if (!fit->complete)
      reason_fail(&r, MPK_ENOTFOUND,
                  "device memory: cannot tell whether %lld bytes suffice: the parameters need %lld, "
                  "and the KV cache and workspace are unknown without the library's _metadata",
                  (long long)memory, (long long)fit->parameter_bytes);
  }
  if (dev && dev->max_storage_buffer_binding_size >= 0) {
    /* The artifact's declared figure (WebLLM's check), then the computed one when it differs. */
    if (art) {
      mpk_mlc_device only = {.max_storage_buffer_binding_size = dev->max_storage_buffer_binding_size};
      mpk_error e;
      mpk_error_clear(&e);
      if (mpk_mlc_check_device(art, &only, &e)) reason(&r, &e);
    }
    if ((!art || art->max_storage_buffer_binding_size != fit->max_binding_bytes) &&
        fit->max_binding_bytes > dev->max_storage_buffer_binding_size)
      reason_fail(&r, MPK_EMISMATCH,
                  "binding size: parameter %s is %lld bytes, but the device's "
                  "maxStorageBufferBindingSize is %lld",
                  fit->max_binding_parameter, (long long)fit->max_binding_bytes,
                  (long long)dev->max_storage_buffer_binding_size);
  }
  if (dev && dev->has_features) {
    if (art) {
      mpk_mlc_device only = *dev;
      only.max_storage_buffer_binding_size = -1;
      mpk_error e;
      mpk_error_clear(&e);
      if (mpk_mlc_check_device(art, &only, &e)) reason(&r, &e);
    } else if (fit->uses_float16) {
      bool offered = false;
      for (size_t i = 0; i < dev->n_features && !offered; i++)
        offered = dev->features[i] && strcmp(dev->features[i], "shader-f16") == 0;
      if (!offered)
        reason_fail(&r, MPK_EMISMATCH,
                    "features: the model computes in float16 (%s), which needs the WebGPU feature "
                    "\"shader-f16\"; the device does not offer it",
                    mpk_dtype_is(fit->kv_dtype, MPK_DT_FLOAT16) ? "its KV cache" : "its parameters");
    }
  }
  return r.first;
}

/* ---------------------------------------------------------------- a package directory */

struct mpk_mlc_fit_report_priv {
  mpk_findings found;
  char *dir, *lib_path, *chat_config_path, *weights_path;
};

/* Errors about the artifact name the library file, pointing into its _metadata. */
static void add_problem(void *ctx, const mpk_error *e) {
  mpk_mlc_fit_report *r = ctx;
  const mpk_findings_doc docs[] = {{"_metadata.artifact", r->lib_path, "/artifact"}, {NULL, NULL, NULL}};
  mpk_findings_problem_in(&r->priv_->found, e, docs);
}

#define add_note(r, ...) mpk_findings_note(&(r)->priv_->found, __VA_ARGS__)

void mpk_mlc_fit_report_free(mpk_mlc_fit_report *r) {
  if (!r) return;
  struct mpk_mlc_fit_report_priv *p = r->priv_;
  if (p) {
    mpk_findings_free(&p->found);
    free(p->dir);
    free(p->lib_path);
    free(p->chat_config_path);
    free(p->weights_path);
    free(p);
  }
  free(r);
}

/* Errors from the computation name "_metadata": point them at the library file. */
static int at_library(const mpk_mlc_fit_report *r, int rc, mpk_error *err) {
  if (rc && err && r->lib_path && strcmp(err->file, MD_FILE) == 0)
    snprintf(err->file, sizeof err->file, "%s", r->lib_path);
  return rc;
}

/* The chat config's own context (top level, as WebLLM reads it): positive context_window_size,
   else positive sliding_window_size; 0 when neither. */
static int chat_config_context(const json_t *root, const char *path, int64_t *ctx, const char **field,
                               mpk_error *err) {
  *ctx = 0;
  *field = NULL;
  int64_t cw = -1, sw = -1;
  const json_t *v;
  if ((v = json_object_get(root, "context_window_size")) && !mpk_json_safe_integer(v, &cw))
    return mpk_fail(err, MPK_EMALFORMED, path, "/context_window_size", "expected an integer");
  if ((v = json_object_get(root, "sliding_window_size")) && !mpk_json_safe_integer(v, &sw))
    return mpk_fail(err, MPK_EMALFORMED, path, "/sliding_window_size", "expected an integer");
  if (cw > 0) {
    *ctx = cw;
    *field = "context_window_size";
  } else if (sw > 0) {
    *ctx = sw;
    *field = "sliding_window_size";
  }
  return 0;
}

/* The library's stated context, for the default and for notes; parse errors surface later. */
static void md_context(const mpk_mlc_metadata *md, int64_t *ctx, const char **field) {
  *ctx = 0;
  *field = NULL;
  const json_t *root;
  json_t *owned;
  if (mpk_mlc_metadata_tree(md, MD_FILE, &root, &owned, NULL) == 0) library_context(root, ctx, field, NULL);
  json_decref(owned);
}

/* Every name the caller set must be one the parameters use: a typo must not pass silently. */
static int check_set_dims(const mpk_mlc_fit_report *r, const mpk_mlc_params *lp, const mpk_mlc_fit_options *o,
                          mpk_error *err) {
  for (size_t k = 0; k < o->n_dims; k++) {
    const mpk_mlc_named_dim *d = &o->dims[k];
    if (!d->name || !d->name[0]) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "a named dimension needs a name");
    if (d->value < 1)
      return mpk_fail(err, MPK_EINVAL, NULL, NULL, "named dimension \"%s\" must be a positive integer, not %lld",
                      d->name, (long long)d->value);
    bool used = false;
    for (size_t i = 0; lp && i < lp->n && !used; i++)
      for (size_t j = 0; j < lp->items[i].ndim && !used; j++)
        used = lp->items[i].shape[j].name && strcmp(lp->items[i].shape[j].name, d->name) == 0;
    if (!used)
      return mpk_fail(err, MPK_EINVAL, lp ? r->lib_path : r->weights_path, NULL,
                      lp ? "no parameter of the library uses a named dimension \"%s\""
                         : "named dimension \"%s\" was set, but the tensor cache's shapes are all "
                           "numbers: named dimensions come with a library",
                      d->name);
  }
  return 0;
}

/* The package's chat config and tensor cache names (relative to the package), from the manifest
   when there is one. Every file is read beneath the package directory (mlc/pkgfile.c). */
static int package_files(mpk_mlc_fit_report *r, mpk_mlc_package **pkg, const char **cc, const char **tc,
                         mpk_error *err) {
  struct mpk_mlc_fit_report_priv *p = r->priv_;
  *pkg = NULL;
  *cc = MPK_MLC_CHAT_CONFIG_FILENAME;
  *tc = NULL;
  if (mpk_mlc_pkg_lstat(p->dir, MPK_MLC_MANIFEST_FILENAME) == MPK_MLC_PKG_PRESENT) {
    mpk_mapped m;
    char *manifest = mpk_path_join(p->dir, MPK_MLC_MANIFEST_FILENAME);
    if (!manifest) return mpk_fail(err, MPK_ENOMEM, p->dir, NULL, "out of memory");
    /* Only the file names are needed: the identity self-check is `check`'s business. */
    int rc = mpk_mlc_pkg_map(p->dir, MPK_MLC_MANIFEST_FILENAME, MPK_JSON_DEFAULT_MAX_BYTES, &m, err);
    if (!rc) {
      rc = mpk_mlc_package_parse(m.data, m.size, manifest, 1, pkg, err);
      mpk_unmap_file(&m);
    }
    free(manifest);
    if (rc) return rc;
    *cc = (*pkg)->chat_config;
    *tc = (*pkg)->weights_manifest;
  }
  if (!*tc)
    *tc = mpk_mlc_pkg_lstat(p->dir, MPK_MLC_TENSOR_CACHE_FILENAME) == MPK_MLC_PKG_ABSENT ? "ndarray-cache.json"
                                                                                        : MPK_MLC_TENSOR_CACHE_FILENAME;
  return 0;
}

static void cross_problem(void *ctx, const mpk_error *e) {
  mpk_mlc_fit_report *r = ctx;
  mpk_error copy = *e;
  if (!copy.file[0] && r->chat_config_path) snprintf(copy.file, sizeof copy.file, "%s", r->chat_config_path);
  add_problem(r, &copy);
}

static int fit_package(mpk_mlc_fit_report *r, const mpk_mlc_fit_options *o, mpk_error *err) {
  struct mpk_mlc_fit_report_priv *p = r->priv_;
  mpk_mlc_package *pkg = NULL;
  const char *cc_rel, *tc_rel;
  int rc = package_files(r, &pkg, &cc_rel, &tc_rel, err);
  if (rc) return rc;

  /* Named dimensions: the caller's first (they win), then model_config (a legacy chat config may
     have none: then only the caller's). */
  mpk_mlc_named_dim *cc_dims = NULL, *dims = NULL;
  size_t n_cc = 0;
  int64_t cc_ctx = 0;
  const char *cc_field = NULL;
  json_t *cc_root = NULL;
  if (mpk_mlc_pkg_lstat(p->dir, cc_rel) == MPK_MLC_PKG_PRESENT) {
    if (!(r->chat_config_path = p->chat_config_path = mpk_path_join(p->dir, cc_rel)))
      rc = mpk_fail(err, MPK_ENOMEM, p->dir, NULL, "out of memory");
    if (!rc) rc = mpk_mlc_pkg_load_json(p->dir, cc_rel, &cc_root, err);
    if (!rc && !json_is_object(cc_root))
      rc = mpk_fail(err, MPK_EMALFORMED, r->chat_config_path, "", "expected a JSON object");
    if (!rc && json_object_get(cc_root, "model_config"))
      rc = mpk_mlc_named_dims_from_json(cc_root, r->chat_config_path, &cc_dims, &n_cc, err);
    if (!rc) rc = chat_config_context(cc_root, r->chat_config_path, &cc_ctx, &cc_field, err);
  }
  size_t n_dims = o->n_dims + n_cc;
  if (!rc && !(dims = malloc((n_dims ? n_dims : 1) * sizeof *dims)))
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (!rc) {
    if (o->n_dims) memcpy(dims, o->dims, o->n_dims * sizeof *dims);
    if (n_cc) memcpy(dims + o->n_dims, cc_dims, n_cc * sizeof *dims);
  }

  mpk_mlc_metadata *md = NULL;
  mpk_mlc_params *lp = NULL, *weights = NULL;
  mpk_mlc_tensor_cache *tc = NULL;
  bool has_tc = mpk_mlc_pkg_lstat(p->dir, tc_rel) == MPK_MLC_PKG_PRESENT;
  char *tc_path = mpk_path_join(p->dir, tc_rel);
  if (!rc && !tc_path) rc = mpk_fail(err, MPK_ENOMEM, p->dir, NULL, "out of memory");
  if (!rc && !r->lib_path && !has_tc)
    rc = mpk_fail(err, MPK_ENOTFOUND, p->dir, NULL, "no library and no tensor cache (%s): nothing to count", tc_path);
  /* The weights: what is counted without a library, what the library is checked against with one. */
  if (!rc && has_tc) {
    rc = mpk_mlc_tensor_cache_load_beneath(p->dir, tc_rel, &tc, err);
    if (!rc) rc = mpk_mlc_params_from_tensor_cache(tc, &weights, err);
  }
  if (!rc && r->lib_path) {
    rc = mpk_mlc_metadata_load(r->lib_path, &md, err);
    if (!rc && md->artifact_only)
      rc = mpk_fail(err, MPK_ENOTFOUND, r->lib_path, "",
                    "only the artifact object was given: the fit needs the library's whole _metadata "
                    "(params, kv_cache, memory_usage)");
    if (!rc) rc = at_library(r, mpk_mlc_params_from_metadata(md, &lp, err), err);
    if (!rc) {
      /* A library that is not the package's would give a confident figure for the wrong model:
         refused, as `check` refuses it (one cross-check, mlc/crosscheck.c). */
      mpk_mlc_cross c = {.md = md, .lib_path = r->lib_path, .lib_params = lp, .chat_config = cc_root,
                         .chat_config_path = r->chat_config_path, .weights = weights, .tc = tc,
                         .tc_path = tc_path, .dims = dims, .n_dims = n_dims};
      if (mpk_mlc_cross_check(&c, cross_problem, r)) r->refused = 1;
    }
  } else if (!rc) {
    r->weights_path = p->weights_path = tc_path;
    tc_path = NULL;
  }
  free(tc_path);
  if (!rc) rc = check_set_dims(r, lp, o, err);
  if (!rc && r->refused) goto out;

  /* The context: given, else the library's, else the chat config's. */
  int64_t lib_ctx = 0, context = o->context;
  const char *lib_field = NULL;
  bool from_cc = false;
  if (!rc && md) {
    md_context(md, &lib_ctx, &lib_field);
    if (!context && !lib_ctx && cc_ctx) {
      context = cc_ctx;
      from_cc = true;
    }
  }
  if (!rc) {
    rc = at_library(r, mpk_mlc_fit_compute(md, md ? NULL : weights, dims, n_dims, context, &r->fit, err), err);
    if (rc && err && !err->file[0] && r->weights_path) snprintf(err->file, sizeof err->file, "%s", r->weights_path);
    if (rc && err && !err->file[0] && r->chat_config_path && strstr(err->message, "named dimension"))
      snprintf(err->file, sizeof err->file, "%s", r->chat_config_path);
  }
  if (!rc && from_cc && r->fit.context_source == MPK_MLC_FIT_CONTEXT_GIVEN) {
    r->fit.context_source = MPK_MLC_FIT_CONTEXT_CHAT_CONFIG;
    r->fit.context_field = cc_field;
  }
  if (!rc && !md)
    add_note(r, "no library given: the KV cache and the temporary workspace are not counted (they "
                "come from the library's _metadata)");
  if (!rc && md && r->fit.kv_none_reason && strcmp(r->fit.kv_none_reason, "embedding model") == 0)
    add_note(r, "an embedding model (its _metadata has no kv_cache and no decode function): counted are the "
                "parameters and the workspace; there is no KV cache");
  if (!rc && md && r->fit.context_source == MPK_MLC_FIT_CONTEXT_LIBRARY && cc_ctx && cc_ctx != r->fit.context)
    add_note(r, "the chat config's %s is %lld, the library's %s %lld; WebLLM sizes its KV cache by "
                "the chat config (after overrides): give the context to count that",
             cc_field, (long long)cc_ctx, lib_field, (long long)lib_ctx);
  if (!rc && md && o->context && lib_ctx && o->context > lib_ctx)
    add_note(r, "the context %lld exceeds the library's %s %lld", (long long)o->context, lib_field,
             (long long)lib_ctx);

  if (!rc) {
    r->device_checked = o->has_device_memory || (o->device && (o->device->has_features ||
                                                               o->device->max_storage_buffer_binding_size >= 0));
    mpk_mlc_fit_check(&r->fit, md ? md->artifact : NULL, o->device, o->has_device_memory ? o->device_memory_bytes : -1,
                      add_problem, r, NULL);
  }
out:
  mpk_mlc_metadata_free(md);
  mpk_mlc_params_free(lp);
  mpk_mlc_params_free(weights);
  mpk_mlc_tensor_cache_free(tc);
  mpk_mlc_package_free(pkg);
  json_decref(cc_root);
  mpk_free(cc_dims);
  free(dims);
  return rc;
}

int mpk_mlc_fit_package(const char *dir, const mpk_mlc_fit_options *given, mpk_mlc_fit_report **out,
                        mpk_error *err) {
  if (!dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  mpk_mlc_fit_options opt;
  int orc = MPK_OPTIONS_READ(mpk_mlc_fit_options, &opt, given, err);
  if (orc) return orc;
  const mpk_mlc_fit_options *o = &opt;
  if (o->n_dims && !o->dims) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (o->context < 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "context must be >= 0, not %lld", (long long)o->context);
  if (o->has_device_memory && o->device_memory_bytes < 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "device memory must be >= 0 bytes");
  if (!mpk_is_dir(dir)) return mpk_fail(err, MPK_ENOTFOUND, dir, NULL, "not a directory");
  mpk_mlc_fit_report *r = calloc(1, sizeof *r);
  struct mpk_mlc_fit_report_priv *p = r ? calloc(1, sizeof *p) : NULL;
  if (!p) {
    free(r);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  r->priv_ = p;
  MPK_FINDINGS_PUBLISH(&p->found, r);
  r->dir = p->dir = strdup(dir);
  if (o->lib_path) r->lib_path = p->lib_path = strdup(o->lib_path);
  int rc = !r->dir || (o->lib_path && !r->lib_path) ? mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory")
                                                    : fit_package(r, o, err);
  if (rc) {
    mpk_mlc_fit_report_free(r);
    return rc;
  }
  if (r->priv_->found.oom) { /* a problem was found but could not be kept: never report "all hold" */
    mpk_mlc_fit_report_free(r);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  *out = r;
  return 0;
}
