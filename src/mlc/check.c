/* `modelpkg check`: every check of a package directory, its weights, a library and a device,
   collected into one report instead of stopping at the first problem. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlc/mlc.h"

struct mpk_mlc_report_priv {
  mpk_findings found;
  mpk_mlc_package *package;
  mpk_mlc_metadata *metadata; /* the _metadata when read on its own (a JSON file, or no library reader) */
  mpk_mlc_library *library;   /* the library read as a whole: its function table, its _metadata */
  const mpk_mlc_metadata *md; /* the one in use: metadata, or library's */
  mpk_mlc_tensor_cache *tensor_cache;
  mpk_mlc_params *weights;     /* parameters the tensor cache holds */
  mpk_mlc_named_dim *dims;     /* model_config of the chat config */
  json_t *chat_config;         /* the chat config, when it is a JSON object */
  size_t n_dims;
  char *dir, *lib_path, *tensor_cache_path, *chat_config_path, *manifest_path;
  bool lib_params_checked;     /* the weights were compared through the library's params */
  /* The binding's functions name logical documents; the files they are (mpk_mlc_check). */
  mpk_findings_doc docs[5];
};

static void add_problem(mpk_mlc_report *r, const mpk_error *e) { mpk_findings_problem(&r->priv_->found, e); }

/* A problem from the library's or the binding's checks, filed under the real file. */
static void add_library_problem(mpk_mlc_report *r, const mpk_error *e) {
  mpk_findings_problem_in(&r->priv_->found, e, r->priv_->docs);
}

static void problem_cb(void *ctx, const mpk_error *e) { add_problem(ctx, e); }

#define add_note(r, ...) mpk_findings_note(&(r)->priv_->found, __VA_ARGS__)

/* The chat config: present (a missing one is an error), a regular file inside the package, a
   JSON object; its model_config gives the named dimensions. */
static void check_chat_config(mpk_mlc_report *r, const char *rel) {
  struct mpk_mlc_report_priv *p = r->priv_;
  mpk_error e;
  mpk_error_clear(&e);
  json_t *v = NULL;
  if (mpk_mlc_pkg_lstat(r->dir, rel) == MPK_MLC_PKG_ABSENT) {
    mpk_fail(&e, MPK_ENOTFOUND, p->chat_config_path, NULL, "required file is missing");
  } else if (mpk_mlc_pkg_load_json(r->dir, rel, &v, &e) == 0) {
    if (!json_is_object(v)) mpk_fail(&e, MPK_EMALFORMED, p->chat_config_path, "", "expected a JSON object");
    else if (json_object_get(v, "model_config"))
      mpk_mlc_named_dims_from_json(v, p->chat_config_path, &p->dims, &p->n_dims, NULL);
  }
  if (e.code) add_problem(r, &e);
  if (json_is_object(v)) p->chat_config = v;
  else json_decref(v);
}

static void check_manifest(mpk_mlc_report *r) {
  struct mpk_mlc_report_priv *p = r->priv_;
  const char *manifest = p->manifest_path;
  /* Only a name that does not exist is "no contract": a directory, a FIFO or a dangling link in
     its place is a broken package, not a legacy one. */
  r->has_manifest = mpk_mlc_pkg_lstat(r->dir, MPK_MLC_MANIFEST_FILENAME) == MPK_MLC_PKG_PRESENT;
  mpk_error e;
  mpk_error_clear(&e);
  if (r->has_manifest && manifest) {
    /* Parse without the self-check, then run it here: the recomputed id is reported either way. */
    mpk_mapped m;
    if (mpk_mlc_pkg_map(r->dir, MPK_MLC_MANIFEST_FILENAME, MPK_JSON_DEFAULT_MAX_BYTES, &m, &e) == 0) {
      mpk_mlc_package *pkg = NULL;
      if (mpk_mlc_package_parse(m.data, m.size, manifest, 1, &pkg, &e) == 0) {
        if (mpk_mlc_package_verify_interface_id(pkg, manifest, r->computed_interface_id, &e) == 0)
          r->package = p->package = pkg;
        else
          mpk_mlc_package_free(pkg);
      }
      mpk_unmap_file(&m);
    }
    if (e.code) add_problem(r, &e);
  } else {
    add_note(r, "no artifact contract declared (mlc-model-manifest.json is absent): "
                "checking only the files that exist");
  }
}

/* The tensor cache: structure always; the shard files unless told not to. */
static void check_weights(mpk_mlc_report *r, const mpk_mlc_check_options *o) {
  struct mpk_mlc_report_priv *p = r->priv_;
  const char *name = MPK_MLC_TENSOR_CACHE_FILENAME;
  if (!r->has_manifest && mpk_mlc_pkg_lstat(r->dir, MPK_MLC_TENSOR_CACHE_FILENAME) == MPK_MLC_PKG_ABSENT)
    name = "ndarray-cache.json";
  p->tensor_cache_path = mpk_path_join(r->dir, name);
  if (!p->tensor_cache_path) return;
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_mlc_pkg_lstat(r->dir, name) == MPK_MLC_PKG_ABSENT) {
    if (r->has_manifest) {
      mpk_fail(&e, MPK_ENOTFOUND, p->tensor_cache_path, NULL, "required file is missing");
      add_problem(r, &e);
    }
    return;
  }
  r->tensor_cache_path = p->tensor_cache_path;
  if (mpk_mlc_tensor_cache_load_beneath(r->dir, name, &p->tensor_cache, &e)) {
    add_problem(r, &e);
    return;
  }
  r->tensor_cache = p->tensor_cache;
  if (mpk_mlc_params_from_tensor_cache(p->tensor_cache, &p->weights, &e) == 0) {
    if (mpk_mlc_parameter_schema_id(p->weights, r->weights_parameter_schema_id, &e))
      r->weights_parameter_schema_id[0] = '\0';
    r->has_weights_resources = mpk_mlc_params_resources(p->weights, NULL, 0, &r->weights_resources, &e) == 0;
  }
  if (o && o->no_weights) {
    add_note(r, "shard files not read (--no-weights)");
    return;
  }
  size_t before = r->n_problems;
  mpk_mlc_tensor_cache_verify(p->tensor_cache, r->dir, o ? o->workers : 0, o ? o->progress : NULL,
                              o ? o->progress_ctx : NULL, problem_cb, r, &e);
  r->weights_verified = r->n_problems == before;
}

/* A cross-check problem: an unknown dimension name has no file yet; it is the chat config's. */
static void cross_problem(void *ctx, const mpk_error *e) {
  mpk_mlc_report *r = ctx;
  mpk_error copy = *e;
  if (!copy.file[0]) snprintf(copy.file, sizeof copy.file, "%s", r->priv_->chat_config_path);
  add_problem(r, &copy);
}

static bool has_f16(const mpk_mlc_params *p) {
  for (size_t i = 0; p && i < p->n; i++)
    if (mpk_dtype_is(p->items[i].dtype, MPK_DT_FLOAT16)) return true;
  return false;
}

/* The library's parameters against the declared identity, its resources, and the weights. */
static void check_library_params(mpk_mlc_report *r) {
  struct mpk_mlc_report_priv *p = r->priv_;
  const mpk_mlc_artifact *art = p->md->artifact;
  mpk_mlc_params *lp = NULL;
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_mlc_params_from_metadata(p->md, &lp, &e)) {
    add_library_problem(r, &e);
    return;
  }
  char id[MPK_SHA256_ID_SIZE];
  if (r->package && mpk_mlc_parameter_schema_id(lp, id, &e) == 0 && strcmp(id, r->package->parameter_schema_id) != 0) {
    mpk_fail(&e, MPK_EMISMATCH, r->lib_path, "/params",
             "the library's parameters have parameter_schema_id %s, but the package declares %s", id,
             r->package->parameter_schema_id);
    add_problem(r, &e);
  }
  mpk_error_clear(&e);
  if (art) {
    mpk_mlc_resources res;
    if (mpk_mlc_params_resources(lp, p->dims, p->n_dims, &res, &e) == 0) {
      if (res.max_storage_buffer_binding_size != art->max_storage_buffer_binding_size ||
          res.estimated_device_memory_bytes != art->estimated_device_memory_bytes) {
        mpk_fail(&e, MPK_EMISMATCH, r->lib_path, "/artifact/resources",
                 "resources must be computed from the parameter shapes: they give "
                 "max_storage_buffer_binding_size %lld and estimated_device_memory_bytes %lld, the "
                 "artifact says %lld and %lld",
                 (long long)res.max_storage_buffer_binding_size, (long long)res.estimated_device_memory_bytes,
                 (long long)art->max_storage_buffer_binding_size, (long long)art->estimated_device_memory_bytes);
        add_problem(r, &e);
      }
    } else {
      snprintf(e.file, sizeof e.file, "%s", r->lib_path);
      add_problem(r, &e);
    }
    bool f16_required = false;
    for (size_t i = 0; i < art->n_required_features; i++)
      f16_required |= strcmp(art->required_features[i], "shader-f16") == 0;
    if (!f16_required && (has_f16(lp) || has_f16(p->weights)))
      add_note(r, "warning: %s has float16 parameters, but its artifact does not require shader-f16",
               r->lib_path);
  }
  p->lib_params_checked = true;
  mpk_mlc_cross c = {.md = p->md, .lib_path = r->lib_path, .lib_params = lp, .chat_config = p->chat_config,
                     .chat_config_path = p->chat_config_path, .weights = p->weights, .tc = p->tensor_cache,
                     .tc_path = r->tensor_cache_path, .dims = p->dims, .n_dims = p->n_dims};
  mpk_mlc_cross_check(&c, cross_problem, r);
  mpk_mlc_params_free(lp);
}

/* The library's functions (issue 20): with an artifact, every role and adapter against the function
   table; without a manifest, the legacy ABI WebLLM would use instead. Nothing when the library was
   not read as a whole (a _metadata JSON file) or has no function table. */
static void check_library_functions(mpk_mlc_report *r) {
  struct mpk_mlc_report_priv *p = r->priv_;
  const mpk_mlc_library *lib = p->library;
  if (!lib) return;
  const mpk_mlc_artifact *art = p->md ? p->md->artifact : NULL;
  if (!lib->vm_type_key && lib->n_functions == 0) {
    add_note(r, "warning: no Relax VM function table found in %s: its functions were not checked%s", r->lib_path,
             art ? " against _metadata.artifact's roles" : "");
    return;
  }
  if (art) mpk_mlc_check_functions_each(lib, art, problem_cb, r);
  if (r->has_manifest) return; /* WebLLM binds by role: the legacy names are not looked up */
  mpk_mlc_legacy_abi abi;
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_mlc_legacy_abi_of(lib, &abi, &e) == 0) add_note(r, "legacy ABI (no manifest): %s", abi.summary);
  else add_problem(r, &e);
}

/* Read the library: as a whole (its container, _metadata and function table) when it is one
   modelpkg reads, else its _metadata alone, as before (a _metadata or artifact JSON file, or any
   file holding the length-prefixed JSON). 0 when a _metadata is in p->md. */
static int read_library(mpk_mlc_report *r) {
  struct mpk_mlc_report_priv *p = r->priv_;
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_mlc_library_open(r->lib_path, &p->library, &e);
  if (rc == 0 && p->library->metadata) {
    p->md = p->library->metadata;
    return 0;
  }
  if (rc == 0) {
    mpk_fail(&e, MPK_ENOTFOUND, r->lib_path, NULL, "%s",
             p->library->metadata_problem ? p->library->metadata_problem : "no _metadata found in the library");
    add_library_problem(r, &e);
    return -1;
  }
  mpk_error lib_err = e;
  mpk_error_clear(&e);
  if (mpk_mlc_metadata_load(r->lib_path, &p->metadata, &e) == 0) {
    /* A container modelpkg could not read, although a scan finds its _metadata: the binding is
       checked, the functions cannot be (a warning, not a problem: synthetic libraries such as the
       bundled examples' are only the length-prefixed JSON in filler bytes). */
    if (rc != MPK_EUNSUPPORTED) {
      char line[sizeof lib_err.message + sizeof lib_err.file + 16];
      mpk_error_format(&lib_err, line, sizeof line);
      add_note(r, "warning: the library cannot be read as a whole (%s); its _metadata was found by a scan of "
                  "its bytes, and its functions were not checked", line);
    }
    p->md = p->metadata;
    return 0;
  }
  add_library_problem(r, rc == MPK_EUNSUPPORTED ? &e : &lib_err);
  return -1;
}

static void check_library(mpk_mlc_report *r, const mpk_mlc_device *dev) {
  struct mpk_mlc_report_priv *p = r->priv_;
  mpk_error e;
  mpk_error_clear(&e);
  if (read_library(r) != 0) {
    if (!r->has_manifest) check_library_functions(r); /* the legacy ABI needs no _metadata */
    return;
  }
  r->metadata = p->md;
  const mpk_mlc_artifact *art = p->md->artifact;
  if (!p->md->artifact_only) check_library_params(r); /* a bare artifact has no params */
  check_library_functions(r);
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
    add_library_problem(r, &e);
    return;
  }
  r->resolved = 1;
  if (mpk_mlc_check_kv_state(&r->binding, p->md, &e) != 0) {
    add_library_problem(r, &e);
  }
  mpk_error_clear(&e);
  if (dev && mpk_mlc_check_device(art, dev, &e) != 0) {
    add_library_problem(r, &e);
  }
}

/* A tree installed by mlc install (docs/mlc-install.md) holds its record, naming the library installed
   with the model: without --lib that library is bound, and its bytes must still be the ones the
   record's librarySha256 names. A record that is not what mlc install writes is a problem. Returns
   the library's path (malloc'ed) or NULL. */
static char *installed_library(mpk_mlc_report *r) {
  if (mpk_mlc_pkg_lstat(r->dir, MPK_MLC_INSTALL_RECORD) == MPK_MLC_PKG_ABSENT) return NULL;
  char *rec = mpk_path_join(r->dir, MPK_MLC_INSTALL_RECORD);
  json_t *v = NULL;
  mpk_error e;
  mpk_error_clear(&e);
  char *lib = NULL;
  if (mpk_mlc_pkg_load_json(r->dir, MPK_MLC_INSTALL_RECORD, &v, &e) == 0) {
    const json_t *name = json_is_object(v) ? json_object_get(v, "library") : NULL;
    const json_t *sha = json_is_object(v) ? json_object_get(v, "librarySha256") : NULL;
    const char *n = json_string_value(name);
    if (!json_is_object(v))
      mpk_fail(&e, MPK_EMALFORMED, rec, "", "expected a JSON object (the record mlc install writes)");
    else if (name && !json_is_null(name) && (!n || !n[0] || strchr(n, '/') || strcmp(n, ".") == 0 || strcmp(n, "..") == 0))
      mpk_fail(&e, MPK_EMALFORMED, rec, "/library", "expected null or a file name in the installed tree");
    else if (n && !json_is_string(sha))
      mpk_fail(&e, MPK_EMALFORMED, rec, "/librarySha256", "expected the library's SHA-256 (64 lowercase hex digits)");
    else if (n) {
      lib = mpk_path_join(r->dir, n);
      int fd;
      char hex[65];
      if (lib && mpk_mlc_pkg_open(r->dir, n, 0, &fd, NULL, &e) == 0) {
        int hrc = mpk_sha256_fd(fd, hex);
        close(fd);
        if (hrc) mpk_fail(&e, MPK_EIO, lib, NULL, "cannot read the installed library");
        else if (strcmp(hex, json_string_value(sha)) != 0)
          mpk_fail(&e, MPK_EMISMATCH, lib, NULL,
                   "the installed library's SHA-256 is %s, but %s records %s: it changed after the install", hex,
                   MPK_MLC_INSTALL_RECORD, json_string_value(sha));
      }
      if (!e.code) add_note(r, "the library installed with the model is bound: %s (named by %s)", n, MPK_MLC_INSTALL_RECORD);
    }
  }
  if (e.code) add_problem(r, &e);
  json_decref(v);
  free(rec);
  if (e.code) {
    free(lib);
    return NULL;
  }
  return lib;
}

int mpk_mlc_check(const char *dir, const mpk_mlc_check_options *given, mpk_mlc_report **out,
                  mpk_error *err) {
  if (!dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  mpk_mlc_check_options opt;
  int orc = MPK_OPTIONS_READ(mpk_mlc_check_options, &opt, given, err);
  if (orc) return orc;
  const mpk_mlc_check_options *opts = &opt;
  if (!mpk_is_dir(dir)) return mpk_fail(err, MPK_ENOTFOUND, dir, NULL, "not a directory");
  mpk_mlc_report *r = calloc(1, sizeof *r);
  struct mpk_mlc_report_priv *p = r ? calloc(1, sizeof *p) : NULL;
  if (!p) {
    free(r);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  r->priv_ = p;
  MPK_FINDINGS_PUBLISH(&p->found, r);
  r->dir = p->dir = strdup(dir);
  p->manifest_path = mpk_path_join(dir, MPK_MLC_MANIFEST_FILENAME);
  if (opts && opts->lib_path) r->lib_path = p->lib_path = strdup(opts->lib_path);
  else if (r->dir) r->lib_path = p->lib_path = installed_library(r);
  if (!r->dir || !p->manifest_path || (opts && opts->lib_path && !r->lib_path)) {
    mpk_mlc_report_free(r);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  /* What the binding's errors name, and where each is: the library's _metadata (its artifact
     at /artifact; an error naming no file is the library's), and the package's sidecar. */
  p->docs[0] = (mpk_findings_doc){MPK_MLC_MANIFEST_FILENAME, p->manifest_path, ""};
  p->docs[1] = (mpk_findings_doc){"_metadata.artifact", p->lib_path, "/artifact"};
  p->docs[2] = (mpk_findings_doc){"_metadata", p->lib_path, ""};
  p->docs[3] = (mpk_findings_doc){"", p->lib_path, ""};
  p->docs[4] = (mpk_findings_doc){NULL, NULL, NULL};

  check_manifest(r);
  const char *cc = r->package ? r->package->chat_config : MPK_MLC_CHAT_CONFIG_FILENAME;
  p->chat_config_path = mpk_path_join(dir, cc);
  if (p->chat_config_path) check_chat_config(r, cc);
  check_weights(r, opts);
  if (r->lib_path) check_library(r, opts->device);
  else if (r->package) add_note(r, "no library given (--lib): the package was not bound to a compiled program");
  if (r->package && !p->lib_params_checked) {
    /* Without the library's parameters, the weights themselves must carry the declared id. */
    mpk_error e;
    if (r->weights_parameter_schema_id[0] &&
        strcmp(r->weights_parameter_schema_id, r->package->parameter_schema_id) != 0) {
      mpk_fail(&e, MPK_EMISMATCH, r->tensor_cache_path, NULL,
               "the weights have parameter_schema_id %s, but the package declares %s (when the "
               "library names dimensions such as vocab_size, compare through its parameters: pass "
               "the compiled library or its whole _metadata with --lib)",
               r->weights_parameter_schema_id, r->package->parameter_schema_id);
      add_problem(r, &e);
    }
  }
  if (r->priv_->found.oom) { /* a problem was found but could not be kept: never report "all hold" */
    mpk_mlc_report_free(r);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  *out = r;
  return 0;
}

void mpk_mlc_report_free(mpk_mlc_report *r) {
  if (!r) return;
  struct mpk_mlc_report_priv *p = r->priv_;
  if (p) {
    mpk_findings_free(&p->found);
    mpk_mlc_package_free(p->package);
    mpk_mlc_metadata_free(p->metadata);
    mpk_mlc_library_free(p->library);
    mpk_mlc_tensor_cache_free(p->tensor_cache);
    mpk_mlc_params_free(p->weights);
    mpk_free(p->dims);
    json_decref(p->chat_config);
    free(p->dir);
    free(p->lib_path);
    free(p->tensor_cache_path);
    free(p->chat_config_path);
    free(p->manifest_path);
    free(p);
  }
  free(r);
}
