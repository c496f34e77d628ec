/* Reading model.onnx: the pre-scan (onnx_wire.c), then protobuf-c's generated decoder under an
   allocator that refuses to go past the same memory bound, then the main graph's initializers copied
   into an arena — name, data type, dims, embedded or external data, and for external data its
   location (a confined relative path), offset and length. The decoded message is freed at once:
   only what the contract needs is kept. Rules: docs/mt-graph.md. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <protobuf-c/protobuf-c.h>

#include "mt/graph/graph.h"
#include "onnx.pb-c.h"

struct mpk_mt_graph_priv {
  mpk_arena *arena;
  const mpk_mt_initializer **by_name; /* sorted by name, for mpk_mt_graph_find */
};

/* ---------------------------------------------------------------- data types */

/* TensorProto data types are a column of core's dtype registry; the name is numpy's
   (onnx.helper.tensor_dtype_to_np_dtype), as the reference codec records it. */
const char *mpk_mt_onnx_dtype_name(int32_t t) { return mpk_dtype_onnx_name(mpk_dtype_by_onnx(t)); }

/* ---------------------------------------------------------------- a capped allocator */

typedef struct capped {
  uint64_t used, cap;
  bool exceeded;
} capped;

static void *capped_alloc(void *data, size_t size) {
  capped *c = data;
  if (size > c->cap - c->used || c->used > c->cap) {
    c->exceeded = true;
    return NULL;
  }
  c->used += size;
  return malloc(size ? size : 1);
}

static void capped_free(void *data, void *p) {
  (void)data;
  free(p);
}

/* ---------------------------------------------------------------- helpers */

static int ifail(mpk_error *err, const char *file, const mpk_mt_initializer *in, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int ifail(mpk_error *err, const char *file, const mpk_mt_initializer *in, int code, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (in->name) return mpk_fail(err, code, file, NULL, "initializer %zu \"%.200s\": %s", in->index, in->name, msg);
  return mpk_fail(err, code, file, NULL, "initializer %zu: %s", in->index, msg);
}

/* A decimal integer within int64, digits only ("offset"/"length" values as onnx writes them). */
static bool decimal(const char *s, uint64_t *out) {
  if (!s || !*s) return false;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    if (v > (uint64_t)(INT64_MAX - (*s - '0')) / 10) return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return true;
}

static int cmp_name(const void *a, const void *b) {
  const mpk_mt_initializer *x = *(const mpk_mt_initializer *const *)a, *y = *(const mpk_mt_initializer *const *)b;
  int d = strcmp(x->name, y->name);
  return d ? d : (x->index > y->index) - (x->index < y->index);
}

/* ---------------------------------------------------------------- one initializer */

static int external(const Onnx__TensorProto *t, mpk_mt_initializer *in, mpk_arena *a, const char *file, mpk_error *err) {
  bool seen[4] = {false, false, false, false};
  static const char *const keys[4] = {"location", "offset", "length", "checksum"};
  for (size_t k = 0; k < t->n_external_data; k++) {
    const Onnx__StringStringEntryProto *e = t->external_data[k];
    const char *key = e->key ? e->key : "", *value = e->value ? e->value : "";
    int which = -1;
    for (int j = 0; j < 4; j++)
      if (strcmp(key, keys[j]) == 0) which = j;
    if (which < 0)
      return ifail(err, file, in, MPK_EMALFORMED,
                   "external data key \"%.60s\" is unknown (allowed: location, offset, length, checksum)", key);
    if (seen[which]) return ifail(err, file, in, MPK_EMALFORMED, "external data key \"%s\" is given twice", key);
    seen[which] = true;
    if (which == 0) {
      const char *why;
      if (!mpk_path_is_confined(value, &why))
        return ifail(err, file, in, MPK_EMALFORMED,
                     "external data location \"%.200s\" %s: it must be a relative path inside the model's directory",
                     value, why);
      if (!(in->location = mpk_arena_strdup(a, value))) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
    } else if (which == 1 || which == 2) {
      uint64_t v;
      if (!decimal(value, &v))
        return ifail(err, file, in, MPK_EMALFORMED, "external data %s \"%.60s\" is not a decimal integer", key, value);
      if (which == 1) in->offset = v;
      else {
        in->length = v;
        in->has_length = 1;
      }
    }
  }
  if (!seen[0]) return ifail(err, file, in, MPK_EMALFORMED, "external data has no location");
  return 0;
}

static int initializer(const Onnx__TensorProto *t, size_t index, mpk_arena *a, const char *file, mpk_mt_initializer *in,
                       mpk_error *err) {
  in->index = index;
  if (t->name && *t->name && !(in->name = mpk_arena_strdup(a, t->name)))
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  if (!in->name) return ifail(err, file, in, MPK_EMALFORMED, "an initializer must have a name");
  in->data_type = t->has_data_type ? t->data_type : 0;
  in->dtype = mpk_mt_onnx_dtype_name(in->data_type);
  if (t->n_dims > MPK_MT_GRAPH_MAX_DIMS)
    return ifail(err, file, in, MPK_ELIMIT, "%zu dimensions (at most %d)", t->n_dims, MPK_MT_GRAPH_MAX_DIMS);
  int64_t *dims = mpk_arena_array(a, t->n_dims ? t->n_dims : 1, sizeof *dims);
  if (!dims) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  uint64_t numel = 1;
  for (size_t d = 0; d < t->n_dims; d++) {
    if (t->dims[d] < 0) return ifail(err, file, in, MPK_EMALFORMED, "dimension %zu is negative (%lld)", d, (long long)t->dims[d]);
    uint64_t v = (uint64_t)t->dims[d];
    if (v && numel > UINT64_MAX / v)
      return ifail(err, file, in, MPK_ELIMIT, "its dimensions multiply past 64 bits");
    numel *= v;
    dims[d] = t->dims[d];
  }
  in->dims = dims;
  in->ndim = t->n_dims;
  in->numel = numel;
  const mpk_dtype *dt = mpk_dtype_by_onnx(in->data_type);
  if (dt && dt->bits) {
    if (!mpk_dtype_packed_bytes(dt, numel, &in->nbytes))
      return ifail(err, file, in, MPK_ELIMIT, "its byte length does not fit 64 bits");
    in->has_nbytes = 1;
  }

  /* Embedded data: raw_data, or exactly one typed field holding every element. */
  size_t typed[6] = {t->n_float_data, t->n_int32_data, t->n_string_data, t->n_int64_data, t->n_double_data, t->n_uint64_data};
  size_t sources = t->has_raw_data ? 1 : 0;
  uint64_t values = 0;
  for (int k = 0; k < 6; k++)
    if (typed[k]) {
      sources++;
      values = typed[k];
    }
  in->has_embedded_data = sources > 0;
  if (t->has_raw_data) {
    in->embedded_bytes = t->raw_data.len;
    in->embedded_complete = sources == 1 && in->has_nbytes && t->raw_data.len == in->nbytes;
  } else if (sources == 1) {
    uint64_t want = in->data_type == 14 || in->data_type == 15 ? 2 * numel
                    : dt && dt->bits == 4                        ? in->nbytes /* packed: two to a value */
                                                                 : numel;
    in->embedded_complete = values == want;
    in->embedded_bytes = in->has_nbytes ? in->nbytes : 0;
  } else if (sources == 0) {
    in->embedded_complete = numel == 0;
  }

  bool ext = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (t->has_data_location && !ext && t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
    return ifail(err, file, in, MPK_EMALFORMED, "data_location %d is neither DEFAULT (0) nor EXTERNAL (1)",
                 (int)t->data_location);
  if (!ext && t->n_external_data)
    return ifail(err, file, in, MPK_EMALFORMED, "external_data is given but data_location is not EXTERNAL");
  if (ext) {
    if (in->has_embedded_data) return ifail(err, file, in, MPK_EMALFORMED, "data is both embedded and external");
    in->external = 1;
    int rc = external(t, in, a, file, err);
    if (rc) return rc;
  }
  return 0;
}

/* ---------------------------------------------------------------- the model */

static int resolve_opts(const mpk_mt_graph_options *opts, size_t len, mpk_mt_graph_options *o, mpk_error *err) {
  int rc = MPK_OPTIONS_READ(mpk_mt_graph_options, o, opts, err);
  if (rc) return rc;
  if (!o->max_bytes) o->max_bytes = MPK_MT_GRAPH_DEFAULT_MAX_BYTES;
  if (!o->max_initializers) o->max_initializers = MPK_MT_GRAPH_DEFAULT_MAX_INITIALIZERS;
  if (!o->max_decoded_bytes) o->max_decoded_bytes = ((uint64_t)64 << 20) + 4 * (uint64_t)len;
  return 0;
}

static int extract(const Onnx__ModelProto *m, mpk_mt_graph *g, mpk_arena *a, const char *file, mpk_error *err) {
  g->ir_version = m->has_ir_version ? m->ir_version : 0;
  if (m->producer_name && !(g->producer_name = mpk_arena_strdup(a, m->producer_name))) goto oom;
  if (m->producer_version && !(g->producer_version = mpk_arena_strdup(a, m->producer_version))) goto oom;
  g->opset = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const char *d = m->opset_import[i]->domain;
    if ((!d || !*d || strcmp(d, "ai.onnx") == 0) && m->opset_import[i]->has_version) g->opset = m->opset_import[i]->version;
  }
  const Onnx__GraphProto *gp = m->graph;
  if (!gp) return mpk_fail(err, MPK_EMALFORMED, file, NULL, "not an ONNX model: the ModelProto has no graph");
  g->n_nodes = gp->n_node;
  g->n_sparse_initializers = gp->n_sparse_initializer;
  size_t n = gp->n_initializer;
  mpk_mt_initializer *ins = mpk_arena_array(a, n ? n : 1, sizeof *ins);
  const mpk_mt_initializer **idx = mpk_arena_array(a, n ? n : 1, sizeof *idx);
  if (!ins || !idx) goto oom;
  for (size_t i = 0; i < n; i++) {
    int rc = initializer(gp->initializer[i], i, a, file, &ins[i], err);
    if (rc) return rc;
    g->n_external += ins[i].external ? 1 : 0;
    idx[i] = &ins[i];
  }
  mpk_sort(idx, n, sizeof *idx, cmp_name);
  for (size_t i = 1; i < n; i++)
    if (strcmp(idx[i]->name, idx[i - 1]->name) == 0)
      return mpk_fail(err, MPK_EMALFORMED, file, NULL, "initializer name \"%.200s\" is used twice (initializers %zu and %zu)",
                      idx[i]->name, idx[i - 1]->index, idx[i]->index);
  g->initializers = ins;
  g->n_initializers = n;
  g->priv_->by_name = idx;
  return 0;
oom:
  return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
}

/* Whether a file the protobuf pre-scan refused reads as text: its first bytes (up to 256) are
   printable ASCII, tab, CR, LF, or well-formed UTF-8 sequences. An ONNX ModelProto opens with field
   tags and small varints (0x08 ir_version, lengths < 0x20, continuation bytes 0x80-0xff) that text
   does not hold. */
static bool looks_like_text(const uint8_t *p, size_t len) {
  size_t n = len < 256 ? len : 256;
  for (size_t i = 0; i < n;) {
    uint8_t c = p[i];
    if (c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c < 0x7f)) {
      i++;
      continue;
    }
    size_t k = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
    if (!k) return false;
    for (size_t j = 1; j <= k; j++)
      if (i + j < len && (i + j >= n + 3 || (p[i + j] & 0xc0) != 0x80)) return false;
    if (i + k >= len) return false; /* a sequence cut by the end of the file */
    i += k + 1;
  }
  return n > 0;
}

int mpk_mt_graph_parse(const void *data, size_t len, const char *file, const mpk_mt_graph_options *opts,
                       mpk_mt_graph **out, mpk_error *err) {
  if (!out || (!data && len)) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  if (!file) file = MPK_MT_GRAPH_FILENAME;
  static const uint8_t nothing[1];
  if (!len) data = nothing; /* no arithmetic on a NULL pointer */
  mpk_mt_graph_options o;
  int rc = resolve_opts(opts, len, &o, err);
  if (rc) return rc;
  if ((uint64_t)len > o.max_bytes)
    return mpk_fail(err, MPK_ELIMIT, file, NULL, "%zu bytes exceed the limit of %llu bytes", len,
                    (unsigned long long)o.max_bytes);
  if (!len)
    return mpk_fail_at(err, MPK_EMALFORMED, file, 0,
                    "is not an ONNX protobuf (it is empty: a placeholder?): export the model into it, or check the "
                    "rest of the package without the graph (modelpkg check --no-graph)");
  mpk_onnx_scan scan;
  rc = mpk_onnx_prescan(&onnx__model_proto__descriptor, data, len, file, &o, &scan, err);
  if (rc == MPK_EMALFORMED && looks_like_text(data, len))
    return mpk_fail_at(err, MPK_EMALFORMED, file, 0,
                    "is not an ONNX protobuf (it looks like text: a placeholder?): export the model into it, or "
                    "check the rest of the package without the graph (modelpkg check --no-graph)");
  if (rc) return rc;
  capped cap = {.cap = o.max_decoded_bytes};
  ProtobufCAllocator alloc = {.alloc = capped_alloc, .free = capped_free, .allocator_data = &cap};
  Onnx__ModelProto *m = onnx__model_proto__unpack(&alloc, len, data);
  if (!m) {
    if (cap.exceeded)
      return mpk_fail(err, MPK_ELIMIT, file, NULL, "decoding this model would take more than %llu bytes of memory (the limit)",
                      (unsigned long long)o.max_decoded_bytes);
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "not an ONNX ModelProto: the protobuf decoder refused it");
  }
  mpk_arena *a = mpk_arena_new();
  mpk_mt_graph *g = a ? mpk_arena_alloc(a, sizeof *g) : NULL;
  struct mpk_mt_graph_priv *p = g ? mpk_arena_alloc(a, sizeof *p) : NULL;
  if (!p || !(g->file = mpk_arena_strdup(a, file))) {
    onnx__model_proto__free_unpacked(m, &alloc);
    mpk_arena_free(a);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  p->arena = a;
  g->priv_ = p;
  rc = extract(m, g, a, file, err);
  onnx__model_proto__free_unpacked(m, &alloc);
  if (rc) {
    mpk_arena_free(a);
    return rc;
  }
  *out = g;
  return 0;
}

int mpk_mt_graph_load(const char *path, const mpk_mt_graph_options *opts, mpk_mt_graph **out, mpk_error *err) {
  if (!path || !out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  mpk_mt_graph_options o;
  int orc = resolve_opts(opts, 0, &o, err);
  if (orc) return orc;
  /* Never open something that is not a regular file of a sane size (a FIFO would block). */
  struct stat st;
  if (stat(path, &st) != 0)
    return mpk_fail(err, errno == ENOENT ? MPK_ENOTFOUND : MPK_EIO, path, NULL, "cannot examine: %s", strerror(errno));
  if (!S_ISREG(st.st_mode)) return mpk_fail(err, MPK_EMALFORMED, path, NULL, "not a regular file");
  if ((uint64_t)st.st_size > o.max_bytes)
    return mpk_fail(err, MPK_ELIMIT, path, NULL, "file of %lld bytes exceeds the limit of %llu bytes",
                    (long long)st.st_size, (unsigned long long)o.max_bytes);
  mpk_mapped mp;
  int rc = mpk_map_file(path, (size_t)o.max_bytes, &mp, err);
  if (rc) return rc;
  mpk_mt_graph *g = NULL;
  rc = mpk_mt_graph_parse(mp.data, mp.size, path, opts, &g, err);
  mpk_unmap_file(&mp);
  if (rc) return rc;
  /* Every external file that exists must resolve inside the model's directory (lstat/readlink only). */
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
  for (size_t i = 0; dir && !rc && i < g->n_initializers; i++) {
    const mpk_mt_initializer *in = &g->initializers[i];
    if (!in->external) continue;
    char *f = mpk_path_join(dir, in->location);
    struct stat ls;
    if (!f) rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
    else if (lstat(f, &ls) == 0 && !mpk_path_resolves_inside(dir, f))
      rc = mpk_fail(err, MPK_EMALFORMED, path, NULL,
                    "initializer %zu \"%.200s\": external data location \"%.200s\" resolves outside the model's directory "
                    "(through a symbolic link)",
                    in->index, in->name, in->location);
    free(f);
  }
  if (!dir) rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  free(dir);
  if (rc) {
    mpk_mt_graph_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

void mpk_mt_graph_free(mpk_mt_graph *g) {
  if (g) mpk_arena_free(g->priv_->arena);
}

const mpk_mt_initializer *mpk_mt_graph_find(const mpk_mt_graph *g, const char *name) {
  if (!g || !name) return NULL;
  size_t lo = 0, hi = g->n_initializers;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int d = strcmp(g->priv_->by_name[mid]->name, name);
    if (d == 0) return g->priv_->by_name[mid];
    if (d < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}
