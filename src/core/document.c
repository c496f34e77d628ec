/* The one skeleton every JSON document loader stands on (docs/API.md, "Conventions"):
   loading takes a file, or a directory holding the document under its default name (the same rule
   for every document type); the file is opened by open.c's rules (beneath the directory when one
   was given, never blocking, regular files only) within the library's size budget, parsed strictly
   under the JSON limits of json.c, and handed to the type's validate callback with a fresh arena.
   Every error names the file. */
#include <stdlib.h>

#include "core/core.h"

int mpk_document_parse(const mpk_document *d, const void *data, size_t len, const char *file, mpk_error *err) {
  if (!data && len) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  if (!file) file = d->name;
  int rc;
  if (d->prescan && (rc = d->prescan(d->ctx, data, len, file, err))) return rc;
  json_t *root;
  if ((rc = mpk_json_parse(data, len, NULL, file, &root, err))) return rc;
  mpk_arena *a = mpk_arena_new();
  if (!a) {
    json_decref(root);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  mpk_jv v = {.file = file, .err = err};
  mpk_path_init(&v.path);
  /* On success the result owns the arena, and the root too when it keeps it. */
  rc = d->validate(d->ctx, &v, root, a);
  if (rc || !d->keep_root) json_decref(root);
  if (rc) mpk_arena_free(a);
  return rc;
}

int mpk_document_load(const mpk_document *d, const char *path, mpk_error *err) {
  if (!path) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  char *file;
  mpk_mapped mp;
  int rc = mpk_map_document(path, d->name, &file, &mp, err);
  if (rc) return rc;
  rc = d->parse ? d->parse(d->ctx, mp.data, mp.size, file, err) : mpk_document_parse(d, mp.data, mp.size, file, err);
  mpk_unmap_file(&mp);
  free(file);
  return rc;
}
