/* A planner for a package directory and its library: the contract from the binding, the window
   from where WebLLM 0.2.86 reads it (prefill_chunk_size from the library's _metadata,
   context_window_size / sliding_window_size and conv_template.system_prefix_token_ids from the
   chat config). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

/* Errors from the binding name logical documents; point them at the real files (as check.c). */
static void relocate(mpk_error *e, const char *manifest, const char *lib) {
  if (!e) return;
  if (strcmp(e->file, MPK_MLC_MANIFEST_FILENAME) == 0) {
    snprintf(e->file, sizeof e->file, "%s", manifest);
  } else if (strcmp(e->file, "_metadata.artifact") == 0 || strcmp(e->file, "_metadata") == 0) {
    char ptr[sizeof e->pointer];
    snprintf(ptr, sizeof ptr, "%s%.*s", e->file[9] ? "/artifact" : "", (int)sizeof ptr - 16, e->pointer);
    snprintf(e->pointer, sizeof e->pointer, "%s", ptr);
    snprintf(e->file, sizeof e->file, "%s", lib);
  }
}

/* An optional integer member: absent (or null) leaves *out as it is. */
static int opt_int(const json_t *obj, const char *key, const char *file, int64_t *out, bool *found, mpk_error *err) {
  const json_t *v = json_object_get(obj, key);
  if (found) *found = false;
  if (!v || json_is_null(v)) return 0;
  char ptr[64];
  snprintf(ptr, sizeof ptr, "/%s", key);
  if (!mpk_json_safe_integer(v, out)) return mpk_fail(err, MPK_EMALFORMED, file, ptr, "expected an integer");
  if (found) *found = true;
  return 0;
}

typedef struct window {
  int64_t chunk, context, sliding;
  const char *chunk_from;
  int64_t *prefix;
  size_t n_prefix;
} window;

static int read_chat_config(const char *dir, const char *rel, const char *path, window *w, mpk_error *err) {
  json_t *root = NULL;
  int rc = mpk_mlc_pkg_load_json(dir, rel, &root, err);
  if (rc) return rc;
  if (!json_is_object(root)) {
    json_decref(root);
    return mpk_fail(err, MPK_EMALFORMED, path, "", "expected a JSON object");
  }
  /* Absent windows are -1, MLC's default: then "neither" is the error WebLLM gives. */
  w->context = w->sliding = -1;
  int64_t chunk = 0;
  bool has_chunk = false;
  rc = opt_int(root, "context_window_size", path, &w->context, NULL, err);
  if (!rc) rc = opt_int(root, "sliding_window_size", path, &w->sliding, NULL, err);
  if (!rc) rc = opt_int(root, "prefill_chunk_size", path, &chunk, &has_chunk, err);
  if (!rc && !w->chunk_from && has_chunk) {
    w->chunk = chunk;
    w->chunk_from = "chat_config";
    if (chunk <= 0) rc = mpk_fail(err, MPK_EMALFORMED, path, "/prefill_chunk_size", "Make sure `prefill_chunk_size` > 0.");
  }
  const json_t *conv = json_object_get(root, "conv_template");
  const json_t *ids = json_is_object(conv) ? json_object_get(conv, "system_prefix_token_ids") : NULL;
  if (!rc && conv && !json_is_object(conv))
    rc = mpk_fail(err, MPK_EMALFORMED, path, "/conv_template", "expected an object (the conversation template)");
  if (!rc && ids && !json_is_null(ids)) {
    if (!json_is_array(ids)) {
      rc = mpk_fail(err, MPK_EMALFORMED, path, "/conv_template/system_prefix_token_ids", "expected an array of token ids");
    } else if ((w->n_prefix = json_array_size(ids)) > 0) {
      if (!(w->prefix = calloc(w->n_prefix, sizeof *w->prefix))) rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
      for (size_t i = 0; !rc && i < w->n_prefix; i++) {
        int64_t v;
        if (!mpk_json_safe_integer(json_array_get(ids, i), &v) || v < 0 || v > INT32_MAX) {
          char ptr[96];
          snprintf(ptr, sizeof ptr, "/conv_template/system_prefix_token_ids/%zu", i);
          rc = mpk_fail(err, MPK_EMALFORMED, path, ptr, "expected a token id (an integer in 0..2147483647)");
        }
        w->prefix[i] = v;
      }
    }
  }
  if (!rc && !w->chunk_from)
    rc = mpk_fail(err, MPK_ENOTFOUND, path, "/prefill_chunk_size",
                  "neither the library's _metadata nor the chat config states prefill_chunk_size");
  json_decref(root);
  return rc;
}

/* _metadata.prefill_chunk_size, the value WebLLM uses. */
static int read_metadata_chunk(const mpk_mlc_metadata *md, const char *lib, window *w, mpk_error *err) {
  if (md->artifact_only) return 0; /* an artifact alone states no window */
  const json_t *root;
  json_t *owned;
  int rc = mpk_mlc_metadata_tree(md, lib, &root, &owned, err);
  if (rc) return rc;
  bool found = false;
  rc = json_is_object(root) ? opt_int(root, "prefill_chunk_size", lib, &w->chunk, &found, err) : 0;
  if (!rc && found) {
    w->chunk_from = "_metadata";
    if (w->chunk <= 0) rc = mpk_fail(err, MPK_EMALFORMED, lib, "/prefill_chunk_size", "Make sure `prefill_chunk_size` > 0.");
  }
  json_decref(owned);
  return rc;
}

int mpk_mlc_planner_open(const char *dir, const char *lib_path, mpk_mlc_planner **out, mpk_error *err) {
  if (!dir || !lib_path || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (!mpk_is_dir(dir)) return mpk_fail(err, MPK_ENOTFOUND, dir, NULL, "not a directory");
  char *manifest = mpk_path_join(dir, MPK_MLC_MANIFEST_FILENAME), *chat = NULL;
  if (!manifest) return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  mpk_mlc_package *pkg = NULL;
  mpk_mlc_metadata *md = NULL;
  window w = {0};
  mpk_mlc_binding b;
  const char *why = NULL;
  int rc = 0;
  if (mpk_mlc_pkg_lstat(dir, MPK_MLC_MANIFEST_FILENAME) == MPK_MLC_PKG_ABSENT)
    rc = mpk_fail(err, MPK_ENOTFOUND, manifest, NULL,
                  "has no mlc-model-manifest.json (a legacy package: WebLLM feeds its prompt through the "
                  "legacy chunker, which --case plans): to declare its tasks, write one with `modelpkg mlc "
                  "build %s --tasks TASKS.json --lib LIB`",
                  dir);
  if (!rc) {
    mpk_mapped m;
    if (!(rc = mpk_mlc_pkg_map(dir, MPK_MLC_MANIFEST_FILENAME, MPK_JSON_DEFAULT_MAX_BYTES, &m, err))) {
      rc = mpk_mlc_package_parse(m.data, m.size, manifest, 0, &pkg, err);
      mpk_unmap_file(&m);
    }
  }
  if (!rc) rc = mpk_mlc_metadata_load(lib_path, &md, err);
  if (!rc && !md->artifact)
    rc = mpk_fail(err, MPK_EMISMATCH, lib_path, "/artifact",
                  "mlc-model-manifest.json is present, but _metadata.artifact is missing");
  if (!rc) {
    rc = mpk_mlc_resolve(pkg, md->artifact, &b, err);
    if (!rc) rc = mpk_mlc_check_kv_state(&b, md, err);
    if (rc) relocate(err, manifest, lib_path);
  }
  if (!rc && !mpk_path_is_confined(pkg->chat_config, &why))
    rc = mpk_fail(err, MPK_EMALFORMED, manifest, "/chat_config", "chat_config must stay inside the package: %s", why);
  if (!rc && !(chat = mpk_path_join(dir, pkg->chat_config))) rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  if (!rc) rc = read_metadata_chunk(md, lib_path, &w, err);
  if (!rc) rc = read_chat_config(dir, pkg->chat_config, chat, &w, err);
  if (!rc) {
    mpk_mlc_prefill_config cfg = {0};
    mpk_mlc_prefill_config_from_binding(&b, &cfg);
    cfg.prefill_chunk_size = w.chunk;
    cfg.context_window_size = w.context;
    cfg.sliding_window_size = w.sliding;
    cfg.system_prefix_token_ids = w.prefix;
    cfg.n_system_prefix_token_ids = w.n_prefix;
    rc = mpk_mlc_planner_new(&cfg, out, err);
    /* A bad token id in a media prompt is the manifest's; the rest is the chat config's window. */
    if (rc && err && !err->file[0])
      snprintf(err->file, sizeof err->file, "%s",
               strstr(err->message, " prompt ") && strncmp(err->message, "system", 6) ? manifest : chat);
    if (!rc) (*out)->prefill_chunk_size_from = w.chunk_from;
  }
  free(w.prefix);
  free(chat);
  free(manifest);
  mpk_mlc_metadata_free(md);
  mpk_mlc_package_free(pkg);
  return rc;
}
