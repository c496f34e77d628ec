/* Internal declarations shared by the MLC contract module. */
#ifndef MPK_MLC_INTERNAL_H
#define MPK_MLC_INTERNAL_H

#include "../core/core.h"

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

#endif
