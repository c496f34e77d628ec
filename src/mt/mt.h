/* Internal declarations shared by the MobileTransformers contract module. */
#ifndef MPK_MT_INTERNAL_H
#define MPK_MT_INTERNAL_H

#include "../core/core.h"

struct mpk_mt_manifest_priv {
  mpk_arena *arena;
  json_t *root; /* the document as read: unknown fields are kept for writing it back */
};

/* The parsed document (borrowed; valid while the manifest lives). */
const json_t *mpk_mt_manifest_root(const mpk_mt_manifest *m);

/* plan.c: a plan's group by name (NULL when absent), and whether a group's patterns select a path. */
const mpk_mt_group *mpk_mt_plan_group(const mpk_mt_plan *plan, const char *name);
bool mpk_mt_group_selects(const mpk_mt_group *g, const char *path);
/* The files a download pattern selects are the run m->files[*lo, *hi) (the files are sorted by path;
   an invalid pattern selects none): whether it selects any file is one binary search, not a pass
   over the files. */
void mpk_mt_pattern_range(const mpk_mt_manifest *m, const char *pattern, size_t *lo, size_t *hi);

/* locate.c: a variant's feature path by key (NULL when absent); its inference directory relative to
   the package (the "inference" path, else the weightHandoff map's directory; malloc'ed, NULL when
   neither exists or out of memory). */
const char *mpk_mt_variant_path(const mpk_mt_variant *v, const char *key);
char *mpk_mt_inference_rel(const mpk_mt_variant *v);

/* The manifest of package `dir`, the variant (NULL: defaultVariant) and its directories as absolute
   paths (map_file NULL without weightHandoff; train_dir NULL without a "train" path). */
typedef struct mpk_mt_located {
  mpk_mt_manifest *manifest;
  const mpk_mt_variant *variant;
  char *manifest_file, *map_file, *inference_dir, *train_dir;
} mpk_mt_located;
int mpk_mt_locate(const char *dir, const char *variant, mpk_mt_located *out, mpk_error *err);
void mpk_mt_located_free(mpk_mt_located *l);

/* tensor.c: a checksum sidecar's digest — its first line, trimmed, 64 hex digits in any case
   (lowercased into hex) — read as `name` beneath the inference directory's handle `dfd` (`shown`
   names it). 1 when valid, 0 when there is no sidecar, -1 when unusable (why says). */
int mpk_mt_read_sidecar_at(int dfd, const char *shown, const char *name, char hex[65], char *why, size_t why_cap);

/* mpk_mt_tensor_open on the inference directory's handle. */
int mpk_mt_tensor_open_at(int dfd, const char *inference_dir, const mpk_mt_handoff_entry *e, mpk_mt_role role,
                          mpk_tensor_view *out, mpk_error *err);

/* Hash files named beneath a directory handle (mpk_open_read_at: no link out, no FIFO), in
   parallel. Each job's code/err/size/hex; returns non-zero only when the pool could not run. */
typedef struct mpk_mt_hash_job {
  const char *name;
  int code;
  mpk_error err;
  uint64_t size;
  char hex[65];
} mpk_mt_hash_job;
int mpk_mt_hash_at(int dfd, const char *shown, mpk_mt_hash_job *jobs, size_t n, unsigned workers);

/* The merge record of an inference directory (MPK_MT_MERGE_RECORD; schema in docs/mt-merge.md),
   read beneath its handle and checked strictly. *out NULL when there is none. */
int mpk_mt_record_load(int dfd, const char *shown, json_t **out, mpk_error *err);
/* The same on bytes in memory (`file` names them in errors; the fuzz target's entry point). */
int mpk_mt_record_parse(const void *data, size_t len, const char *file, json_t **out, mpk_error *err);
/* Whether the record names `name` (an externalDataLocation); its shipped digest (NULL: unknown)
   and post-merge digest. */
bool mpk_mt_record_find(const json_t *record, const char *name, const char **shipped, const char **merged);

/* How a caller runs the load gate (tensor.c). */
typedef struct mpk_mt_gate_ctx {
  bool read_only;        /* check: no recovery and no hold; a pending merge transaction is a problem */
  bool shipped_txn;      /* the manifest lists a merge journal or record: neither is read or replayed */
  const char *next_step; /* read_only: the command that finishes a pending transaction */
} mpk_mt_gate_ctx;
/* The load gate over the inference directory's handle `dfd` (-1: absent; `inference_dir` names it). */
int mpk_mt_load_gate_at(int dfd, const char *inference_dir, const mpk_mt_handoff *map, const mpk_mt_gate_options *opts,
                        const mpk_mt_gate_ctx *ctx, mpk_mt_gate_report **out, mpk_error *err);

/* locate.c: the variant's inference directory opened from the package root with mpk_open_dir_at
   (no component may be a link), after refusing a merge journal or record that the manifest lists
   (shipped inside the package: never replayed, never trusted). *fd -1 when the variant has no
   inference directory. */
int mpk_mt_open_inference(const char *dir, const mpk_mt_located *loc, int *fd, mpk_error *err);
/* The variant's weight handoff map, read beneath the package root (MPK_ENOTFOUND when absent). */
int mpk_mt_load_map(const char *dir, const mpk_mt_located *loc, mpk_mt_handoff **out, mpk_error *err);
/* The first file the manifest lists that only modelpkg may write into inference directory
   `inference_rel` (its merge journal, its temporaries, the merge record), or NULL. */
const char *mpk_mt_listed_txn_file(const mpk_mt_manifest *m, const char *inference_rel);

/* The merge's transaction name in an inference directory (merge.c writes, the load gate holds). */
#define MPK_MT_MERGE_TXN "merge"
/* Files only modelpkg itself writes into an inference directory, inside the merge transaction: the
   transaction's journal (".merge.txn-journal", core/txn.c names it) and the merge record naming each
   tensor a device merge replaced with its post-merge digest — the one authority for "merged on
   device" (docs/SECURITY.md). A package or an install source carrying either is refused. */
#define MPK_MT_MERGE_JOURNAL "." MPK_MT_MERGE_TXN ".txn-journal"
#define MPK_MT_MERGE_RECORD ".modelpkg-merge-record.json"
/* A file name (last segment) only modelpkg writes into an inference directory, inside its merge
   transaction: the journal (and its .tmp), the record, a staged "<final>.merge-txn.XXXXXX" (locate.c). */
bool mpk_mt_is_device_file(const char *base);

#endif
