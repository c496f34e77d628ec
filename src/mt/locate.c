/* Where a variant's files are: its feature paths, its weight handoff map and its inference
   directory. One definition for every command that works on a variant (check, tensors, merge). */
#include <stdlib.h>
#include <string.h>

#include "mt.h"

const char *mpk_mt_variant_path(const mpk_mt_variant *v, const char *key) {
  for (size_t i = 0; i < v->n_paths; i++)
    if (strcmp(v->paths[i].key, key) == 0) return v->paths[i].value;
  return NULL;
}

char *mpk_mt_inference_rel(const mpk_mt_variant *v) {
  const char *inf = mpk_mt_variant_path(v, "inference");
  if (inf) return strdup(inf);
  if (!v->weight_handoff) return NULL;
  /* The files live beside the map when the variant names no inference path (as the reference). */
  const char *slash = strrchr(v->weight_handoff, '/');
  return strndup(v->weight_handoff, slash ? (size_t)(slash - v->weight_handoff) : 0);
}

void mpk_mt_located_free(mpk_mt_located *l) {
  if (!l) return;
  mpk_mt_manifest_free(l->manifest);
  free(l->manifest_file);
  free(l->map_file);
  free(l->inference_dir);
  free(l->train_dir);
  memset(l, 0, sizeof *l);
}

int mpk_mt_locate(const char *dir, const char *variant, mpk_mt_located *out, mpk_error *err) {
  memset(out, 0, sizeof *out);
  if (!(out->manifest_file = mpk_path_join(dir, MPK_MT_MANIFEST_FILENAME)))
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  int rc = mpk_mt_manifest_load(out->manifest_file, &out->manifest, err);
  if (rc) goto fail;
  const char *id = variant ? variant : out->manifest->default_variant;
  const char *mf = out->manifest_file;
  if (!id) {
    rc = mpk_fail(err, MPK_ENOTFOUND, mf, "/defaultVariant", "no variant given and the manifest has no defaultVariant");
    goto fail;
  }
  if (!(out->variant = mpk_mt_manifest_variant(out->manifest, id))) {
    rc = mpk_fail(err, MPK_ENOTFOUND, mf, "/variants", "variant \"%s\" is not among the variants", id);
    goto fail;
  }
  const mpk_mt_variant *v = out->variant;
  const char *why = NULL;
  if (v->weight_handoff) {
    if (!mpk_path_is_confined(v->weight_handoff, &why)) {
      rc = mpk_fail(err, MPK_EMALFORMED, mf, NULL, "variant \"%s\": weightHandoff \"%s\" %s", id, v->weight_handoff, why);
      goto fail;
    }
    if (!(out->map_file = mpk_path_join(dir, v->weight_handoff))) goto oom;
  }
  char *inf = mpk_mt_inference_rel(v);
  if (inf) {
    out->inference_dir = mpk_path_join(dir, inf);
    free(inf);
    if (!out->inference_dir) goto oom;
  }
  const char *train = mpk_mt_variant_path(v, "train");
  if (train && !(out->train_dir = mpk_path_join(dir, train))) goto oom;
  return 0;
oom:
  rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
fail:
  mpk_mt_located_free(out);
  return rc;
}
