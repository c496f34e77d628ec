/* The WebAssembly module's function entry (js/src/module.js calls it; docs/wasm.md): one call, JSON
   in, JSON out, so the JavaScript side needs no knowledge of C structs. A client of the public API
   (include/modelpkg.h) and of jansson, like the CLI, whose main() is in the same module for the
   commands with a --json document (check, fit, mlc plan): those documents are the CLI's, byte for byte.

   char *mpkjs_call(const char *op, const char *args, const void *data, size_t len)
     op: what to do (the table at the end); args: a JSON object of options (may be NULL);
     data/len: the input bytes (a document, a library). Returns {"result": ...} or
     {"error": {"code", "code_value", "file", "pointer", "message", "offset"}} (the --json problem
     form), always a string (out of memory included): the caller frees it with mpkjs_free. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <emscripten/emscripten.h>

#include "api.h"

/* ---- results */

/* The error's texts unchecked: a message cut at its buffer's size may end inside a UTF-8 sequence
   (JavaScript's decoder then shows U+FFFD rather than the error being lost). */
static json_t *error_json(const mpk_error *e) {
  json_t *o = json_pack("{s:s, s:i, s:o, s:o, s:o}", "code", mpk_code_name(e->code), "code_value", e->code,
                        "file", json_string_nocheck(e->file), "pointer", json_string_nocheck(e->pointer), "message",
                        json_string_nocheck(e->message));
  if (o) json_object_set_new(o, "offset", e->offset >= 0 ? json_integer(e->offset) : json_null());
  return o;
}

json_t *mpkjs_fail(mpk_error *err, int code, const char *file, const char *pointer, const char *message) {
  mpk_error_clear(err);
  err->code = code;
  snprintf(err->file, sizeof err->file, "%s", file ? file : "");
  snprintf(err->pointer, sizeof err->pointer, "%s", pointer ? pointer : "");
  snprintf(err->message, sizeof err->message, "%s", message);
  return NULL;
}

static json_t *fail(mpk_error *err, int code, const char *message) { return mpkjs_fail(err, code, NULL, NULL, message); }

/* ---- inputs */

static const char *arg_str(const json_t *args, const char *key) {
  return json_string_value(json_object_get(args, key));
}

static bool arg_bool(const json_t *args, const char *key) { return json_is_true(json_object_get(args, key)); }

/* A document passed as a string argument (the package beside an artifact). */
static int arg_package(const json_t *args, const char *key, bool skip_id_check, mpk_mlc_package **out,
                       mpk_error *err) {
  const json_t *v = json_object_get(args, key);
  *out = NULL;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v)) {
    fail(err, MPK_EINVAL, "the package must be the text of mlc-model-manifest.json");
    return MPK_EINVAL;
  }
  return mpk_mlc_package_parse(json_string_value(v), json_string_length(v), arg_str(args, "package_file"),
                               skip_id_check, out, err);
}

/* ---- WebLLM's shapes (what parseModelPackageManifest, parseCompiledProgramArtifact and
   resolveChatCompletionArtifact return): the reference consumer's objects, so a web app sees what
   WebLLM would. Written by the library (mpk_mlc_package_json, mpk_mlc_artifact_json,
   mpk_mlc_binding_json), the Python binding's too. */

typedef int (*json_writer)(const void *obj, char **out, size_t *out_len, mpk_error *err);

/* The library's JSON text of `obj` as a jansson value. */
static json_t *library_json(json_writer write, const void *obj, mpk_error *err) {
  char *text = NULL;
  size_t n = 0;
  if (write(obj, &text, &n, err)) return NULL;
  json_t *v = json_loadb(text, n, 0, NULL);
  mpk_free(text);
  return v ? v : fail(err, MPK_ENOMEM, "out of memory reading the library's JSON");
}

static int package_writer(const void *o, char **out, size_t *n, mpk_error *err) {
  return mpk_mlc_package_json(o, out, n, err);
}
static int artifact_writer(const void *o, char **out, size_t *n, mpk_error *err) {
  return mpk_mlc_artifact_json(o, out, n, err);
}
static int binding_writer(const void *o, char **out, size_t *n, mpk_error *err) {
  return mpk_mlc_binding_json(o, out, n, err);
}

/* ---- the operations */

static json_t *op_version(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)args, (void)data, (void)len, (void)err;
  return json_pack("{s:s, s:s, s:s}", "version", mpk_version(), "components", mpk_components(),
                   "hash_implementation", mpk_hash_implementation());
}

static json_t *op_canonical_json(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)args;
  char *out = NULL, id[MPK_SHA256_ID_SIZE];
  size_t n = 0;
  if (mpk_canonical_json(data, len, &out, &n, err)) return NULL;
  json_t *r = NULL;
  if (mpk_sha256_id(out, n, id) == 0) r = json_pack("{s:s%, s:s}", "text", out, n, "sha256", id);
  mpk_free(out);
  return r;
}

static json_t *op_sha256_id(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)args;
  char id[MPK_SHA256_ID_SIZE];
  int rc = mpk_sha256_id(data, len, id);
  return rc ? fail(err, rc, "SHA-256 failed") : json_string(id);
}

static json_t *op_interface_id(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)args;
  char id[MPK_SHA256_ID_SIZE];
  return mpk_mlc_interface_id(data, len, id, err) ? NULL : json_string(id);
}

static json_t *op_package_parse(const json_t *args, const void *data, size_t len, mpk_error *err) {
  mpk_mlc_package *pkg = NULL;
  if (mpk_mlc_package_parse(data, len, arg_str(args, "file"), arg_bool(args, "skip_interface_check"), &pkg, err))
    return NULL;
  json_t *r = library_json(package_writer, pkg, err);
  mpk_mlc_package_free(pkg);
  return r;
}

static json_t *op_artifact_parse(const json_t *args, const void *data, size_t len, mpk_error *err) {
  mpk_mlc_artifact *art = NULL;
  if (mpk_mlc_artifact_parse(data, len, arg_str(args, "file"), &art, err)) return NULL;
  json_t *r = library_json(artifact_writer, art, err);
  mpk_mlc_artifact_free(art);
  return r;
}

/* data: a compiled library (or a _metadata / artifact JSON file): {metadata: the _metadata object as
   stored, model_type, kv_state_kind, artifact: WebLLM's parsed artifact or null, artifact_only}. */
static json_t *op_metadata(const json_t *args, const void *data, size_t len, mpk_error *err) {
  mpk_mlc_metadata *md = NULL;
  if (mpk_mlc_metadata_from_bytes(data, len, arg_str(args, "file"), &md, err)) return NULL;
  json_t *art = md->artifact ? library_json(artifact_writer, md->artifact, err) : json_null();
  json_t *doc = art ? json_loadb(md->json, md->json_len, 0, NULL) : NULL;
  json_t *r = doc ? json_pack("{s:o, s:o, s:o, s:o, s:b}", "metadata", doc, "model_type",
                              md->model_type ? json_string(md->model_type) : json_null(), "kv_state_kind",
                              md->kv_state_kind ? json_string(md->kv_state_kind) : json_null(), "artifact", art,
                              "artifact_only", md->artifact_only)
                  : art ? fail(err, MPK_ENOMEM, "out of memory reading _metadata") : NULL;
  if (!doc) json_decref(art);
  mpk_mlc_metadata_free(md);
  return r;
}

/* data: the compiled program (_metadata.artifact JSON); args.package: the sidecar's text. */
static json_t *op_resolve(const json_t *args, const void *data, size_t len, mpk_error *err) {
  mpk_mlc_package *pkg = NULL;
  mpk_mlc_artifact *art = NULL;
  json_t *r = NULL;
  if (arg_package(args, "package", arg_bool(args, "skip_interface_check"), &pkg, err)) return NULL;
  if (!pkg) return fail(err, MPK_EINVAL, "resolve needs the package (mlc-model-manifest.json)");
  if (mpk_mlc_artifact_parse(data, len, arg_str(args, "file"), &art, err) == 0) {
    mpk_mlc_binding b;
    if (mpk_mlc_resolve(pkg, art, &b, err) == 0) r = library_json(binding_writer, &b, err);
  }
  mpk_mlc_artifact_free(art);
  mpk_mlc_package_free(pkg);
  return r;
}

static json_t *op_clean_model_url(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)data, (void)len;
  char *out = NULL;
  if (mpk_mlc_clean_model_url(arg_str(args, "url"), &out, err)) return NULL;
  json_t *r = json_string(out);
  mpk_free(out);
  return r;
}

static json_t *op_resource_urls(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)data, (void)len;
  mpk_mlc_package *pkg = NULL;
  if (arg_package(args, "package", true, &pkg, err)) return NULL;
  mpk_mlc_resource_urls u;
  json_t *r = NULL;
  if (mpk_mlc_resource_urls_resolve(arg_str(args, "url"), pkg, &u, err) == 0) {
    r = json_pack("{s:s, s:s, s:s}", "chatConfigUrl", u.chat_config_url, "tensorCacheBaseUrl",
                  u.tensor_cache_base_url, "tensorCacheManifestUrl", u.tensor_cache_manifest_url);
    mpk_mlc_resource_urls_free(&u);
  }
  mpk_mlc_package_free(pkg);
  return r;
}

/* data: the request's JSON text (Float32Arrays marked); args: model_id, model_type, kinds (null:
   nothing declared, or an array of "audio" / "image"). The result is true. */
static json_t *op_request_check(const json_t *args, const void *data, size_t len, mpk_error *err) {
  mpk_mlc_request_model m = {.model_id = arg_str(args, "model_id"), .model_type = arg_str(args, "model_type")};
  const json_t *kinds = json_object_get(args, "kinds"), *k;
  size_t i;
  if (kinds && !json_is_null(kinds) && !json_is_array(kinds))
    return fail(err, MPK_EINVAL, "input kinds: an array of \"audio\" and \"image\", or undefined");
  if (json_is_array(kinds)) {
    m.kinds.declared = 1;
    json_array_foreach(kinds, i, k) {
      const char *s = json_string_value(k);
      if (s && strcmp(s, "audio") == 0) m.kinds.audio = 1;
      else if (s && strcmp(s, "image") == 0) m.kinds.image = 1;
      else return fail(err, MPK_EINVAL, "input kinds: only \"audio\" and \"image\"");
    }
  }
  if (mpk_mlc_request_check(data, len, arg_str(args, "file"), &m, err)) return NULL;
  return json_true();
}

static const struct {
  const char *name;
  mpkjs_op fn;
} OPS[] = {
    {"version", op_version},
    {"canonical_json", op_canonical_json},
    {"sha256_id", op_sha256_id},
    {"interface_id", op_interface_id},
    {"package_parse", op_package_parse},
    {"artifact_parse", op_artifact_parse},
    {"metadata", op_metadata},
    {"resolve", op_resolve},
    {"clean_model_url", op_clean_model_url},
    {"resource_urls", op_resource_urls},
    {"request_check", op_request_check},
    {"prefill_plan", mpkjs_op_prefill_plan},
    {"legacy_chunks", mpkjs_op_legacy_chunks},
    {"mt_manifest_parse", mpkjs_op_mt_manifest_parse},
    {"mt_plan_files", mpkjs_op_mt_plan_files},
    {"mt_check_versions", mpkjs_op_mt_check_versions},
    {"mt_sanitize_repo_id", mpkjs_op_mt_sanitize_repo_id},
    {"audio_decode", mpkjs_op_audio_decode},
    {"image_decode", mpkjs_op_image_decode},
    {"image_plan", mpkjs_op_image_plan},
};

/* The answer when building the answer ran out of memory: a static text the caller can always parse
   (mpkjs_free ignores it). */
static char oom_text[256];
static char *oom(void) {
  snprintf(oom_text, sizeof oom_text,
           "{\"error\":{\"code\":\"%s\",\"code_value\":%d,\"file\":\"\",\"pointer\":\"\",\"message\":"
           "\"out of memory\",\"offset\":null}}",
           mpk_code_name(MPK_ENOMEM), MPK_ENOMEM);
  return oom_text;
}

EMSCRIPTEN_KEEPALIVE char *mpkjs_call(const char *op, const char *args_text, const void *data, size_t len) {
  mpk_error err;
  mpk_error_clear(&err);
  json_t *args = NULL, *result = NULL;
  if (args_text && *args_text) {
    args = json_loads(args_text, 0, NULL);
    if (!json_is_object(args)) fail(&err, MPK_EINVAL, "mpkjs_call: the options are not a JSON object");
  }
  if (!err.code) {
    size_t i = 0;
    while (i < sizeof OPS / sizeof OPS[0] && strcmp(OPS[i].name, op ? op : "") != 0) i++;
    if (i == sizeof OPS / sizeof OPS[0]) fail(&err, MPK_EINVAL, "mpkjs_call: no such operation");
    else result = OPS[i].fn(args, data ? data : "", data ? len : 0, &err);
  }
  json_decref(args);
  if (!result && !err.code) fail(&err, MPK_ENOMEM, "out of memory");
  json_t *doc = result ? json_pack("{s:o}", "result", result) : json_pack("{s:o}", "error", error_json(&err));
  char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  json_decref(doc);
  return text ? text : oom();
}

EMSCRIPTEN_KEEPALIVE void mpkjs_free(char *p) {
  if (p != oom_text) free(p);
}
