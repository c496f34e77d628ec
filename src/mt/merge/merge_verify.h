/* Internal: the merge's post-merge check (merge_verify.c; docs/mt-numeric.md, "The post-merge
   check"). The probe's cross-entropy before the merge (the inference graph with the current handoff
   tensors) and after it (the same graph with the merged tensors the transaction staged, before its
   commit point), so that merge.c can commit or roll back on the ratio. */
#ifndef MPK_MT_MERGE_VERIFY_H
#define MPK_MT_MERGE_VERIFY_H

#include "mt/merge/merge.h"
#include "mt/numeric/numeric.h"

#define MPK_MT_MERGE_DEFAULT_MAX_RATIO 2.0

typedef struct merge_verify {
  bool active;                /* opts->probe was given */
  mpk_ort *ort;
  bool own_ort;               /* opened here (opts->ort NULL): closed by mpk_merge_verify_free */
  mpk_mtn_probe *probe;
  size_t n_items;
  mpk_tensor_view *staged;    /* n_items * MPK_MT_ROLE_COUNT: the merged tensors, mapped from the staged files */
  double ce_before, ce_after, ratio, max_ratio;
  int64_t vocab;
  bool exceeded;              /* ratio > max_ratio, or a cross-entropy that is not a number */
  char verdict[600];
} merge_verify;

/* Before anything is locked or computed: the options' bound (a max_ratio that is not a positive
   finite number is MPK_EINVAL), the probe read (refused as its reader says), ONNX Runtime opened when
   the caller gave none (MPK_EUNSUPPORTED "ONNX Runtime not available: ..."). Without a probe: inactive,
   0. */
int mpk_merge_verify_prepare(const merge_plan *p, const mpk_mt_merge_options *o, merge_verify *v, mpk_error *err);
/* The probe through the graph with the current tensors (each map entry's roles, mapped beneath the
   inference directory's handle, handed over without a copy): ce_before. */
int mpk_merge_verify_before(const merge_plan *p, merge_verify *v, mpk_error *err);
/* Keep a view of item `i`'s role `role` as computed into the staged file `fd` (the fd stays the
   caller's; a duplicate is mapped read-only). */
int mpk_merge_verify_keep(const merge_plan *p, merge_verify *v, size_t i, mpk_mt_role role, int fd, mpk_error *err);
/* The probe through the graph with the kept (merged) tensors in place of the current ones: ce_after,
   ratio, exceeded and the verdict sentence (`force`: what happens when exceeded). */
int mpk_merge_verify_after(const merge_plan *p, merge_verify *v, bool force, bool dry_run, mpk_error *err);
void mpk_merge_verify_free(merge_verify *v);

#endif
