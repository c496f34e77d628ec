/* Internal declarations shared by the MLC contract module. */
#ifndef MPK_MLC_INTERNAL_H
#define MPK_MLC_INTERNAL_H

#include "core/core.h"

struct mpk_mlc_package_priv {
  mpk_arena *arena;
};
struct mpk_mlc_artifact_priv {
  mpk_arena *arena;
};

/* Context of mpk_jv_each_member callbacks that parse member `index` of a map into element
   `index` of an arena array. */
typedef struct mpk_mlc_members {
  mpk_arena *arena;
  void *list;
} mpk_mlc_members;

/* Parse a `tasks` object (at v->path) into arena-owned tasks, with WebLLM's rules. */
int mpk_mlc_parse_tasks(mpk_jv *v, const json_t *value, mpk_arena *arena, mpk_mlc_task **tasks,
                        size_t *n_tasks);
/* The normalized tasks as JSON (what interface_id hashes). New reference. */
json_t *mpk_mlc_tasks_json(const mpk_mlc_task *tasks, size_t n);
/* One input of them: {processor, adapter?, prompt?}. New reference. */
json_t *mpk_mlc_input_json(const mpk_mlc_input *in);
/* interface_id of parsed (normalized) tasks. */
int mpk_mlc_tasks_interface_id(const mpk_mlc_task *tasks, size_t n, char out[MPK_SHA256_ID_SIZE],
                               mpk_error *err);
/* The self-check: recompute the interface_id into `computed` and compare it with the declared one
   (MPK_EMISMATCH naming `file` when they differ). */
int mpk_mlc_package_verify_interface_id(const mpk_mlc_package *pkg, const char *file,
                                        char computed[MPK_SHA256_ID_SIZE], mpk_error *err);
/* Parse an artifact object already read as JSON. `file` names it in errors. */
int mpk_mlc_artifact_from_json(const json_t *value, const char *file, mpk_mlc_artifact **out,
                               mpk_error *err);

/* Read a tensor cache without a JSON tree into `tc`, its arrays in `arena` (tensor_cache_scan.c):
   0 when the document is one it is sure of (every field read, not yet checked across records),
   nonzero when the tree path must read it. */
int mpk_mlc_tensor_cache_scan(const void *data, size_t len, mpk_arena *arena, mpk_mlc_tensor_cache *tc);

/* tensor_cache.c: a record's nbytes, elements x ceil(bits/8); false on uint64 overflow. */
bool mpk_mlc_record_bytes(const int64_t *shape, size_t ndim, int bits, uint64_t *out);

/* The library's _metadata as a JSON tree, parsed once when it was loaded (library.c): *root is
   borrowed from md and lives as long as it. A struct built by hand (no priv_) is parsed here into
   *owned (file names it in errors); the caller json_decref()s *owned either way (NULL when
   borrowed). */
/* library.c: a _metadata from its JSON text (copied byte-exact; MPK_EMALFORMED when it is no object
   with "model_type" and "params"), its source_offset as given. */
int mpk_mlc_metadata_from_text(const uint8_t *text, size_t len, int64_t source_offset, const char *file,
                               mpk_mlc_metadata **out, mpk_error *err);
/* library.c: does the text parse as a _metadata object (strict JSON, "model_type" and "params")? */
bool mpk_mlc_is_metadata_text(const uint8_t *text, size_t len);
/* library.c: the whole-bytes scan (u64 length + a _metadata object; exactly one distinct), built;
   source_offset is the text's offset in d. */
int mpk_mlc_metadata_scan(const uint8_t *d, size_t size, const char *file, mpk_mlc_metadata **out, mpk_error *err);
/* lib_open.c: mpk_mlc_library_open over bytes the caller keeps alive while the library is used
   (the library's metadata is a copy). */
int mpk_mlc_library_from_bytes(const void *data, size_t size, const char *file, mpk_mlc_library **out,
                               mpk_error *err);
/* lib_open.c: the library read from a container already split into objects (objfile); the
   library copies what it keeps (`f` may be freed after). */
struct mpk_obj_file;
int mpk_mlc_library_from_obj(const struct mpk_obj_file *f, mpk_mlc_library **out, mpk_error *err);
/* lib_open.c: move the library's _metadata out of it into *out (the caller frees it); when it has
   none, the error it had (its code and message, e.g. MPK_ENOTFOUND from the scan). */
int mpk_mlc_library_take_metadata(mpk_mlc_library *lib, mpk_mlc_metadata **out, mpk_error *err);

int mpk_mlc_metadata_tree(const mpk_mlc_metadata *md, const char *file, const json_t **root, json_t **owned,
                          mpk_error *err);


/* params.c: every difference between the library's parameters (`expected`) and the weights
   (`actual`), each through fn (the first MPK_LIST_MAX of a kind (core.h, mpk_tally), then a summary line with the
   count); with `tc` (the cache `actual` was read from) each points into it
   ("/records/S/records/R/shape"). Returns the number of differences (0: they match). */
size_t mpk_mlc_params_compare_each(const mpk_mlc_params *expected, const mpk_mlc_params *actual,
                                   const mpk_mlc_tensor_cache *tc, const mpk_mlc_named_dim *dims, size_t n_dims,
                                   const char *expected_file, const char *actual_file, mpk_problem_fn fn,
                                   void *ctx);

/* crosscheck.c: does the library belong to the package? model_type and quantization of _metadata
   against the chat config's (when both state them), the library's parameters against the tensor
   cache's. Any member may be NULL (that part is skipped). Every problem goes through fn; returns
   how many. `check` and `fit` both run it. */
typedef struct mpk_mlc_cross {
  const mpk_mlc_metadata *md;
  const char *lib_path;
  const mpk_mlc_params *lib_params;
  const json_t *chat_config;
  const char *chat_config_path;
  const mpk_mlc_params *weights;
  const mpk_mlc_tensor_cache *tc;
  const char *tc_path;
  const mpk_mlc_named_dim *dims;
  size_t n_dims;
} mpk_mlc_cross;
size_t mpk_mlc_cross_check(const mpk_mlc_cross *c, mpk_problem_fn fn, void *ctx);

/* pkgfile.c: files inside a package, opened beneath its directory (core/open.c's rules: no link
   out of it, regular files only, size bounded). mpk_mlc_pkg_lstat says whether the name exists at
   all (ABSENT only for lstat ENOENT: a FIFO, a directory or a dangling link is PRESENT, and
   opening it is then the error). The others are mpk_open_read / mpk_map_beneath beneath `dir`, a
   dangling link reported as such. Messages name DIR/REL. */
enum { MPK_MLC_PKG_ABSENT = 0, MPK_MLC_PKG_PRESENT = 1 };
int mpk_mlc_pkg_lstat(const char *dir, const char *rel);
struct stat;
int mpk_mlc_pkg_open(const char *dir, const char *rel, uint64_t max_size, int *fd, struct stat *st,
                     mpk_error *err);
int mpk_mlc_pkg_map(const char *dir, const char *rel, size_t max_size, mpk_mapped *m, mpk_error *err);
int mpk_mlc_pkg_load_json(const char *dir, const char *rel, json_t **out, mpk_error *err);

/* params.c: named dimensions from a parsed chat config (`file` names it in errors). */
int mpk_mlc_named_dims_from_json(const json_t *root, const char *file, mpk_mlc_named_dim **dims, size_t *n_dims,
                                 mpk_error *err);
/* tensor_cache.c: load DIR/REL beneath the package directory. */
int mpk_mlc_tensor_cache_load_beneath(const char *dir, const char *rel, mpk_mlc_tensor_cache **out,
                                      mpk_error *err);

/* roles.c: every role and adapter of every program of `art` against `lib`'s VM function table
   (mpk_mlc_check_functions' rules), each mismatch through fn (the first MPK_LIST_MAX, then one
   summary line with the count). Returns the number of mismatches (0: they all match). */
size_t mpk_mlc_check_functions_each(const mpk_mlc_library *lib, const mpk_mlc_artifact *art, mpk_problem_fn fn,
                                    void *ctx);
/* compat.c: a runtime description from bytes, with mpk_mlc_runtime_load's rules (`file` names it in
   errors; the fuzz target's entry). */
int mpk_mlc_runtime_parse(const void *data, size_t len, const char *file, mpk_mlc_runtime **out, mpk_error *err);

#endif
