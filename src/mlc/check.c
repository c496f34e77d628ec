/* `modelpkg check`: every check of a package directory, a library and a device, collected into
   one report instead of stopping at the first problem. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc.h"

struct mpk_mlc_report_priv {
  mpk_error *problems;
  size_t n_problems, cap_problems;
  char **notes;
  size_t n_notes;
  mpk_mlc_package *package;
  mpk_mlc_metadata *metadata;
  char *dir, *lib_path;
};

static void add_problem(mpk_mlc_report *r, const mpk_error *e) {
  struct mpk_mlc_report_priv *p = r->priv_;
  if (p->n_problems == p->cap_problems) {
    size_t cap = p->cap_problems ? p->cap_problems * 2 : 8;
    mpk_error *np = realloc(p->problems, cap * sizeof *np);
    if (!np) return; /* keep what we have; the report is still fail-closed via earlier entries */
    p->problems = np;
    p->cap_problems = cap;
  }
  p->problems[p->n_problems++] = *e;
  r->problems = p->problems;
  r->n_problems = p->n_problems;
}

static void add_note(mpk_mlc_report *r, const char *note) {
  struct mpk_mlc_report_priv *p = r->priv_;
  char **nn = realloc(p->notes, (p->n_notes + 1) * sizeof *nn);
  if (!nn) return;
  p->notes = nn;
  if (!(nn[p->n_notes] = strdup(note))) return;
  p->n_notes++;
  r->notes = (const char *const *)p->notes;
  r->n_notes = p->n_notes;
}

/* A file the package needs: present, a regular file, a JSON object. */
static void check_json_file(mpk_mlc_report *r, const char *name, bool required) {
  char *path = mpk_path_join(r->dir, name);
  mpk_error e;
  mpk_error_clear(&e);
  if (!path) return;
  if (!mpk_file_exists(path)) {
    if (required) {
      mpk_fail(&e, MPK_ENOTFOUND, path, NULL, "required file is missing");
      add_problem(r, &e);
    }
    free(path);
    return;
  }
  mpk_mapped m;
  json_t *v = NULL;
  if (mpk_map_file(path, MPK_JSON_DEFAULT_MAX_BYTES, &m, &e) == 0) {
    if (mpk_json_parse(m.data, m.size, NULL, path, &v, &e) == 0 && !json_is_object(v))
      mpk_fail(&e, MPK_EMALFORMED, path, "", "expected a JSON object");
    mpk_unmap_file(&m);
  }
  if (e.code) add_problem(r, &e);
  json_decref(v);
  free(path);
}

/* Errors from the binding name logical documents; point them at the real files. */
static void relocate(const mpk_mlc_report *r, mpk_error *e) {
  char ptr[sizeof e->pointer + 16];
  if (strcmp(e->file, MPK_MLC_MANIFEST_FILENAME) == 0) {
    char *path = mpk_path_join(r->dir, MPK_MLC_MANIFEST_FILENAME);
    if (path) snprintf(e->file, sizeof e->file, "%s", path);
    free(path);
  } else if (strcmp(e->file, "_metadata.artifact") == 0 || strcmp(e->file, "_metadata") == 0) {
    snprintf(ptr, sizeof ptr, "%s%s", e->file[9] ? "/artifact" : "", e->pointer);
    snprintf(e->pointer, sizeof e->pointer, "%.*s", (int)sizeof e->pointer - 1, ptr);
    snprintf(e->file, sizeof e->file, "%s", r->lib_path);
  }
}

static void check_library(mpk_mlc_report *r, const mpk_mlc_device *dev) {
  struct mpk_mlc_report_priv *p = r->priv_;
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_mlc_metadata_load(r->lib_path, &p->metadata, &e) != 0) {
    relocate(r, &e);
    add_problem(r, &e);
    return;
  }
  r->metadata = p->metadata;
  const mpk_mlc_artifact *art = p->metadata->artifact;
  if (!r->package) {
    if (!r->has_manifest && art)
      add_note(r, "the library declares _metadata.artifact, but the package has no "
                  "mlc-model-manifest.json: WebLLM ignores the library's contract");
    return; /* nothing to bind: a missing or broken manifest is already reported */
  }
  if (!art) {
    mpk_fail(&e, MPK_EMISMATCH, r->lib_path, "/artifact",
             "mlc-model-manifest.json is present, but _metadata.artifact is missing");
    add_problem(r, &e);
    return;
  }
  if (mpk_mlc_resolve(r->package, art, &r->binding, &e) != 0) {
    relocate(r, &e);
    add_problem(r, &e);
    return;
  }
  r->resolved = 1;
  if (mpk_mlc_check_kv_state(&r->binding, p->metadata, &e) != 0) {
    relocate(r, &e);
    add_problem(r, &e);
  }
  mpk_error_clear(&e);
  if (dev && mpk_mlc_check_device(art, dev, &e) != 0) {
    relocate(r, &e);
    add_problem(r, &e);
  }
}

int mpk_mlc_check(const char *dir, const mpk_mlc_check_options *opts, mpk_mlc_report **out,
                  mpk_error *err) {
  if (!dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (!mpk_is_dir(dir)) return mpk_fail(err, MPK_ENOTFOUND, dir, NULL, "not a directory");
  mpk_mlc_report *r = calloc(1, sizeof *r);
  struct mpk_mlc_report_priv *p = r ? calloc(1, sizeof *p) : NULL;
  if (!p) {
    free(r);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  r->priv_ = p;
  r->dir = p->dir = strdup(dir);
  if (opts && opts->lib_path) r->lib_path = p->lib_path = strdup(opts->lib_path);
  if (!r->dir || (opts && opts->lib_path && !r->lib_path)) {
    mpk_mlc_report_free(r);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }

  char *manifest = mpk_path_join(dir, MPK_MLC_MANIFEST_FILENAME);
  r->has_manifest = manifest && mpk_file_exists(manifest);
  mpk_error e;
  mpk_error_clear(&e);
  if (r->has_manifest) {
    /* Parse first without the self-check so the recomputed id can be reported either way. */
    mpk_mapped m;
    if (mpk_map_file(manifest, MPK_JSON_DEFAULT_MAX_BYTES, &m, &e) == 0) {
      mpk_mlc_package *pkg = NULL;
      if (mpk_mlc_package_parse(m.data, m.size, manifest, 1, &pkg, &e) == 0) {
        mpk_mlc_package_interface_id(pkg, r->computed_interface_id, &e);
        mpk_mlc_package_free(pkg);
        if (mpk_mlc_package_parse(m.data, m.size, manifest, 0, &p->package, &e) == 0)
          r->package = p->package;
      }
      mpk_unmap_file(&m);
    }
    if (e.code) add_problem(r, &e);
  } else {
    add_note(r, "no artifact contract declared (mlc-model-manifest.json is absent): "
                "checking only the files that exist");
  }
  free(manifest);

  check_json_file(r, r->package ? r->package->chat_config : MPK_MLC_CHAT_CONFIG_FILENAME, true);
  if (r->has_manifest) {
    check_json_file(r, MPK_MLC_TENSOR_CACHE_FILENAME, true);
  } else {
    char *tc = mpk_path_join(dir, MPK_MLC_TENSOR_CACHE_FILENAME);
    bool has_new = tc && mpk_file_exists(tc);
    free(tc);
    check_json_file(r, has_new ? MPK_MLC_TENSOR_CACHE_FILENAME : "ndarray-cache.json", false);
  }
  if (r->lib_path) check_library(r, opts->device);
  else if (r->package) add_note(r, "no library given (--lib): the package was not bound to a compiled program");
  *out = r;
  return 0;
}

void mpk_mlc_report_free(mpk_mlc_report *r) {
  if (!r) return;
  struct mpk_mlc_report_priv *p = r->priv_;
  if (p) {
    free(p->problems);
    for (size_t i = 0; i < p->n_notes; i++) free(p->notes[i]);
    free(p->notes);
    mpk_mlc_package_free(p->package);
    mpk_mlc_metadata_free(p->metadata);
    free(p->dir);
    free(p->lib_path);
    free(p);
  }
  free(r);
}
