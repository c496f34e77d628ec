/* MobileTransformers documents for the JS package (parseMtManifest, mtPlanFiles): the manifest read
   by the library (its version gate and schema), handed back as the reference exporter writes it. */
#include <stdbool.h>
#include <stdlib.h>

#include "api.h"

/* The manifest's exporter JSON as a value. */
static json_t *manifest_value(const mpk_mt_manifest *m, mpk_error *err) {
  char *text = NULL;
  size_t n = 0;
  if (mpk_mt_manifest_json(m, &text, &n, err)) return NULL;
  json_t *v = json_loadb(text, n, 0, NULL);
  mpk_free(text);
  return v ? v : mpkjs_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory reading the manifest");
}

json_t *mpkjs_op_mt_manifest_parse(const json_t *args, const void *data, size_t len, mpk_error *err) {
  mpk_mt_manifest *m = NULL;
  if (mpk_mt_manifest_parse(data, len, json_string_value(json_object_get(args, "file")), &m, err)) return NULL;
  json_t *r = manifest_value(m, err);
  mpk_mt_manifest_free(m);
  return r;
}

/* args {variant (NULL: the default), groups (NULL: all)}: [{path, size, sha256}] the plan selects. */
json_t *mpkjs_op_mt_plan_files(const json_t *args, const void *data, size_t len, mpk_error *err) {
  mpk_mt_manifest *m = NULL;
  if (mpk_mt_manifest_parse(data, len, json_string_value(json_object_get(args, "file")), &m, err)) return NULL;
  const json_t *g = json_object_get(args, "groups");
  size_t n_groups = json_is_array(g) ? json_array_size(g) : 0;
  const char **groups = calloc(n_groups ? n_groups : 1, sizeof *groups);
  json_t *r = NULL;
  if (!groups) {
    mpkjs_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  } else {
    bool ok = true;
    for (size_t i = 0; ok && i < n_groups; i++) {
      groups[i] = json_string_value(json_array_get(g, i));
      if (!groups[i]) {
        mpkjs_fail(err, MPK_EINVAL, "options", "/groups", "a group is a string");
        ok = false;
      }
    }
    /* no variant named: the manifest's defaultVariant */
    const char *variant = json_string_value(json_object_get(args, "variant"));
    const mpk_mt_file **files = NULL;
    size_t n = 0;
    if (ok && mpk_mt_plan_files(m, variant ? variant : m->default_variant, n_groups ? groups : NULL, n_groups, &files,
                                &n, err) == 0) {
      r = json_array();
      for (size_t i = 0; r && i < n; i++)
        json_array_append_new(r, json_pack("{s:s, s:o, s:o}", "path", files[i]->path, "size",
                                           files[i]->has_size ? json_integer((json_int_t)files[i]->size) : json_null(),
                                           "sha256", files[i]->sha256 ? json_string(files[i]->sha256) : json_null()));
      mpk_free((void *)files);
    }
  }
  free(groups);
  mpk_mt_manifest_free(m);
  return r;
}

/* args {schema_version, min_reader_version, reader}: the shared version gate; true when readable. */
json_t *mpkjs_op_mt_check_versions(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)data, (void)len;
  const char *reader = json_string_value(json_object_get(args, "reader"));
  if (mpk_doc_version_check(json_string_value(json_object_get(args, "schema_version")),
                            json_string_value(json_object_get(args, "min_reader_version")), reader ? reader : "1.0",
                            err))
    return NULL;
  return json_true();
}

/* args {repo_id}: the cache directory name of a hub repo id. */
json_t *mpkjs_op_mt_sanitize_repo_id(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)data, (void)len;
  char out[MPK_MT_REPO_DIR_MAX + 1];
  if (mpk_mt_sanitize_repo_id(json_string_value(json_object_get(args, "repo_id")), out, sizeof out, err)) return NULL;
  return json_string(out);
}
