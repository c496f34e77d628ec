/* The initializers an ONNX model declares (name, data type, dims), read from the model file's
   protobuf wire format — only what mpk_ort_session_open needs to check caller-supplied
   initializers before handing them over: ONNX Runtime's AddInitializer (the one way it uses the
   caller's memory as the initializer itself) silently ignores a name the graph does not have, and
   does not compare the layout. The ort module may include only core, so this is a small reader of
   its own: ModelProto.graph (7) -> GraphProto.initializer (5) -> TensorProto dims (1), data_type
   (2), name (8). The raw data is skipped, never read. */
#include <stdlib.h>
#include <string.h>

#include "ort/ort_internal.h"

typedef struct rd {
  const uint8_t *p, *end;
} rd;

static int varint(rd *r, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
    uint8_t b = *r->p++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

/* One field: its number and wire type; LEN fields give their bytes in *sub. */
static int field(rd *r, uint32_t *num, int *wt, uint64_t *val, rd *sub) {
  uint64_t key;
  if (varint(r, &key)) return -1;
  *num = (uint32_t)(key >> 3);
  *wt = (int)(key & 7);
  switch (*wt) {
  case 0: return varint(r, val);
  case 1: if (r->end - r->p < 8) return -1; r->p += 8; return 0;
  case 5: if (r->end - r->p < 4) return -1; r->p += 4; return 0;
  case 2:
    if (varint(r, val) || *val > (uint64_t)(r->end - r->p)) return -1;
    sub->p = r->p;
    sub->end = r->p + *val;
    r->p += *val;
    return 0;
  default: return -1;
  }
}

static int tensor(rd t, mpk_ort_graph_init *out) {
  uint32_t num;
  int wt;
  uint64_t v;
  rd sub;
  memset(out, 0, sizeof *out);
  while (t.p < t.end) {
    if (field(&t, &num, &wt, &v, &sub)) return -1;
    if (num == 1 && wt == 0) {
      if (out->ndim < MPK_TENSOR_MAX_DIMS) out->dims[out->ndim] = (int64_t)v;
      out->ndim++;
    } else if (num == 1 && wt == 2) {
      while (sub.p < sub.end) {
        if (varint(&sub, &v)) return -1;
        if (out->ndim < MPK_TENSOR_MAX_DIMS) out->dims[out->ndim] = (int64_t)v;
        out->ndim++;
      }
    } else if (num == 2 && wt == 0) {
      out->data_type = (int32_t)v;
    } else if (num == 8 && wt == 2) {
      out->name = (const char *)sub.p;
      out->name_len = (size_t)(sub.end - sub.p);
    }
  }
  return 0;
}

int mpk_ort_graph_inits(const mpk_mapped *m, mpk_ort_graph_init **out, size_t *n) {
  *out = NULL;
  *n = 0;
  rd model = {m->data, m->data + m->size};
  uint32_t num;
  int wt;
  uint64_t v;
  rd graph = {0}, sub;
  int have_graph = 0;
  while (model.p < model.end) {
    if (field(&model, &num, &wt, &v, &sub)) return -1;
    if (num == 7 && wt == 2) graph = sub, have_graph = 1;
  }
  if (!have_graph) return -1;
  size_t cap = 0;
  while (graph.p < graph.end) {
    if (field(&graph, &num, &wt, &v, &sub)) goto bad;
    if (num != 5 || wt != 2) continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      mpk_ort_graph_init *g = realloc(*out, cap * sizeof *g);
      if (!g) goto bad;
      *out = g;
    }
    if (tensor(sub, &(*out)[*n])) goto bad;
    (*n)++;
  }
  return 0;
bad:
  free(*out);
  *out = NULL;
  *n = 0;
  return -1;
}
