/* Internal: the LoRA merge's plan (merge_plan.c) and its execution (merge.c). */
#ifndef MPK_MT_MERGE_H
#define MPK_MT_MERGE_H

#include "mt/mt.h"
#include "core/txn.h"
#include "modelpkg/fetch.h"

/* One handoff entry to merge: its factors, scale, on-disk layout and observed orientation. */
typedef struct merge_item {
  const mpk_mt_handoff_entry *e;
  const mpk_safetensors_tensor *a, *b;   /* the adapter's factors */
  const mpk_safetensors_tensor *frozen;  /* the adapter's frozen base weight, or NULL */
  float *A, *B;                 /* float32 copies: A [rank, in], B [out, rank] */
  int64_t out, in, rank;
  mpk_mt_role role;             /* the weight-like role: weight, or weight_quantized */
  const char *dtype;            /* its on-disk dtype */
  int64_t rows, cols;           /* its on-disk (logical) shape */
  mpk_mt_orientation observed;  /* UNDECIDED: square */
  double scale;
  char scale_source[200];
} merge_item;

/* What a merge re-applying a recorded adapter (an update, src/mt/install/install.c) sets beyond the
   public options. */
typedef struct merge_internal {
  const json_t *recorded;  /* the adapter's membership object (members.c): its per-entry scales */
  bool ignore_frozen;      /* the new shipped base, never the adapter's frozen (old) weight */
} merge_internal;

typedef struct merge_plan {
  mpk_mt_located loc;
  bool borrowed_manifest;       /* loc.manifest belongs to the caller (mpk_merge_plan_at) */
  const merge_internal *in;     /* NULL: an ordinary merge */
  mpk_mapped adapter_bytes;     /* the adapter file, mapped once: parsed, hashed and copied from it */
  int inference_fd;             /* the inference directory, opened confined (locate.c); -1: none */
  mpk_mt_handoff *map;
  mpk_safetensors *adapter;
  merge_item *items;
  size_t n_items;
  mpk_mt_orientation orientation;
  char evidence[400];
  mpk_findings notes;           /* only notes are used: problems stop the plan */
} merge_plan;

/* Read the package, the map and the adapter; find each entry's factors and scale; decide the
   orientation. Nothing is written. */
int mpk_merge_plan(const char *dir, const mpk_mt_merge_options *o, merge_plan *p, mpk_error *err);
/* The same on an inference directory the caller opened (`inference_fd`, owned by the plan from here
   on, also on failure) of `variant` of manifest `m` (borrowed), with its map at `map_path`: the
   update's re-application into the staged new tree, which has no manifest yet. */
int mpk_merge_plan_at(const mpk_mt_manifest *m, const mpk_mt_variant *variant, int inference_fd,
                      const char *inference_shown, const char *map_path, const mpk_mt_merge_options *o,
                      const merge_internal *in, merge_plan *p, mpk_error *err);
void mpk_merge_plan_free(merge_plan *p);
/* Gate the bases, compute, and commit the merge of a plan (merge.c): what mpk_mt_merge does after
   planning. `keep_base`: keep the shipped tensors it replaces (members.c). */
int mpk_merge_execute(merge_plan *p, const mpk_mt_merge_options *o, mpk_mt_merge_report **out, mpk_error *err);

/* restore.c: the stage lock of the tree `dir` (<parent>/.staging/<base name>/lock, the lock every
   writer of an installed repo holds: install, merge, restore, remove), taken before any transaction
   lock of the tree. Close with mpk_fetch_stage_close(). */
int mpk_mt_tree_lock(const char *dir, int wait_for_lock, mpk_fetch_stage **out, mpk_error *err);

/* restore.c, for the crash tests: stop as a crash would — 0..99: the transaction's commit stopped
   after that durable step (mpk_txn_commit_until); 100 + k: after the commit, the cleanup stopped
   after k removals. Returns MPK_TXN_STOPPED then; the caller is a forked child that _exit()s. -1:
   never (mpk_mt_restore). */
int mpk_mt_restore_until(const char *dir, const mpk_mt_restore_options *o, int stop_after, mpk_mt_restore_report **out,
                         mpk_error *err);

/* ---------------------------------------------------------------- membership (members.c) */

/* The adapters merged into an inference directory, the copies of their bytes and the kept shipped
   tensors: MPK_MT_MEMBERS, written only inside the merge transaction (docs/mt-merge.md,
   "Membership"). Absent: *out NULL, 0. Refused unless exactly its shape. */
int mpk_mt_members_load(int dfd, const char *shown, json_t **out, mpk_error *err);
int mpk_mt_members_parse(const void *data, size_t len, const char *file, json_t **out, mpk_error *err);
/* "<prefix><sha256>.safetensors": the name of the copy of an adapter. */
void mpk_mt_adapter_copy_name(const char *sha256, char out[128]);
/* Stage, in the merge's transaction, the copy of the adapter, the kept shipped tensors (keep_base)
   and the new membership document replacing `old`: every tensor this merge rewrote (digests) is
   now the adapter's. */
int mpk_merge_stage_members(merge_plan *p, const mpk_mt_merge_options *o, const json_t *old_members,
                            const json_t *record, char (*digests)[MPK_MT_ROLE_COUNT][65], mpk_txn *txn,
                            mpk_error *err);
/* After a committed merge or restore: remove the adapter copies and kept tensors that the membership
   now in place (NULL: none) no longer names. Best effort; a crash before it only leaves files the
   next merge or restore removes. */
void mpk_mt_members_sweep(int dfd, const json_t *members);
/* Stage `target` in `txn` as a copy of `name` of the directory `dfd` (its SHA-256 into hex). */
int mpk_mt_stage_copy_of(int dfd, const char *shown, const char *name, const char *target, mpk_txn *txn, char hex[65],
                         mpk_error *err);

#endif
