/* The precision a graph's weights are stored in, measured from its initializers, as the reference's
   describe_graph_precision (artifacts/parameter_budget.py) reports it. A variant id names the
   training-side quantization; this is the inference half, so nobody reads precision off the id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mt/graph/graph.h"

/* Element totals can pass 64 bits (Python's ints do not overflow): a 128-bit pair. */
typedef struct u128 {
  uint64_t hi, lo;
} u128;

static void add(u128 *x, uint64_t v) {
  uint64_t lo = x->lo + v;
  x->hi += lo < x->lo;
  x->lo = lo;
}

static int cmp(const u128 *a, const u128 *b) {
  if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
  return (a->lo > b->lo) - (a->lo < b->lo);
}

static const char *precision_name(int32_t t, char *buf, size_t size) {
  switch (t) { /* the types the reference names (FLOAT, UINT8, INT8, FLOAT16, BFLOAT16, UINT4, INT4) */
    case 1: case 2: case 3: case 10: case 16: case 21: case 22: return mpk_dtype_by_onnx(t)->name;
    default: snprintf(buf, size, "elem_type=%d", (int)t); return buf;
  }
}

int mpk_mt_graph_precision(const mpk_mt_graph *g, char *out, size_t size, size_t *needed) {
  if (needed) *needed = 0;
  if (!out && size) return MPK_EINVAL;
  /* Per data type in first-seen order: Python's dict keeps insertion order and its sort is stable. */
  size_t cap = g && g->n_initializers ? g->n_initializers : 1;
  int32_t *types = malloc(cap * sizeof *types);
  u128 *counts = malloc(cap * sizeof *counts);
  if (!types || !counts) {
    free(types);
    free(counts);
    if (size) out[0] = '\0';
    return MPK_ENOMEM;
  }
  size_t n = 0;
  for (size_t i = 0; g && i < g->n_initializers; i++) {
    const mpk_mt_initializer *in = &g->initializers[i];
    if (in->data_type == 6 || in->data_type == 7 || in->data_type == 9) continue; /* INT32, INT64, BOOL */
    size_t k = 0;
    while (k < n && types[k] != in->data_type) k++;
    if (k == n) {
      types[n] = in->data_type;
      counts[n] = (u128){0, 0};
      n++;
    }
    add(&counts[k], in->numel);
  }
  /* Stable insertion sort, descending by count. */
  for (size_t i = 1; i < n; i++) {
    int32_t t = types[i];
    u128 c = counts[i];
    size_t j = i;
    while (j > 0 && cmp(&counts[j - 1], &c) < 0) {
      types[j] = types[j - 1];
      counts[j] = counts[j - 1];
      j--;
    }
    types[j] = t;
    counts[j] = c;
  }
  /* Written piece by piece, counting what would be written past `size` (snprintf's contract). */
  size_t len = 0;
  char buf[32];
#define PUT(s_)                                                         \
  do {                                                                  \
    const char *s__ = (s_);                                             \
    size_t k__ = strlen(s__);                                           \
    if (len < size) memcpy(out + len, s__, len + k__ < size ? k__ : size - len); \
    len += k__;                                                         \
  } while (0)
  if (n == 0) PUT("unknown");
  else if (n == 1) PUT(precision_name(types[0], buf, sizeof buf));
  else {
    PUT("mixed(");
    for (size_t i = 0; i < n; i++) {
      if (i) PUT("/");
      PUT(precision_name(types[i], buf, sizeof buf));
    }
    PUT(")");
  }
#undef PUT
  if (size) out[len < size ? len : size - 1] = '\0';
  free(types);
  free(counts);
  if (needed) *needed = len;
  return len < size ? 0 : MPK_ELIMIT;
}
