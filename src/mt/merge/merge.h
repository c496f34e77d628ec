/* Internal: the LoRA merge's plan (merge_plan.c) and its execution (merge.c). */
#ifndef MPK_MT_MERGE_H
#define MPK_MT_MERGE_H

#include "mt/mt.h"

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

typedef struct merge_plan {
  mpk_mt_located loc;
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
void mpk_merge_plan_free(merge_plan *p);

#endif
