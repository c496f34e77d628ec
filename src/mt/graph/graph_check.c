/* The weight handoff map checked against the inference graph it claims to describe: every role's
   initializer exists with the declared dtype and dims and reads its own .bin from offset 0 for its
   full length; every other external initializer lives inside frozenBaseBlob; nothing is left
   without data. Nothing on the device checked this claim before. Files are examined with stat only. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mt/graph/graph.h"

typedef struct ck {
  const mpk_mt_graph *g;
  const mpk_mt_handoff *map;
  const char *map_file, *dir;
  mpk_problem_fn fn;
  void *ctx;
  size_t n;
} ck;

static void problem(ck *c, int code, const char *file, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void problem(ck *c, int code, const char *file, const char *pointer, const char *fmt, ...) {
  char msg[480];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mpk_error e;
  mpk_error_clear(&e);
  mpk_fail(&e, code, file, pointer, "%s", msg);
  c->n++;
  if (c->fn) c->fn(c->ctx, &e);
}

static const char *ptr(mpk_path *p, size_t entry, const char *key, const char *role) {
  mpk_path_init(p);
  mpk_path_push_key(p, "entries");
  mpk_path_push_index(p, entry);
  if (key) mpk_path_push_key(p, key);
  if (role) mpk_path_push_key(p, role);
  return p->buf;
}

static void dims_text(const int64_t *d, size_t n, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < n && len < size; i++) len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (len < size) snprintf(buf + len, size - len, "]");
}

/* Size of DIR/name: 1 found (regular file), 0 missing, -1 something else (*why). */
static int file_size(ck *c, const char *name, uint64_t *size, const char **why) {
  char *f = mpk_path_join(c->dir, name);
  if (!f) {
    *why = "out of memory";
    return -1;
  }
  struct stat st;
  int r;
  if (stat(f, &st) != 0) {
    r = errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    *why = strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    r = -1;
    *why = "it is not a regular file";
  } else {
    *size = (uint64_t)st.st_size;
    r = 1;
  }
  free(f);
  return r;
}

/* One role of one entry against its initializer. */
static void check_role(ck *c, const mpk_mt_handoff_entry *e, int role, const mpk_mt_initializer *in) {
  const char *rn = mpk_mt_role_name((mpk_mt_role)role), *layer = e->training_base_layer_name;
  mpk_path p;
  const char *dtype;
  const int64_t *shape;
  size_t ndim;
  mpk_error le;
  bool per_role = e->tensor_dtypes[role] && e->tensor_shapes[role].present;
  if (mpk_mt_handoff_role_layout(e, (mpk_mt_role)role, &dtype, &shape, &ndim, &le)) {
    problem(c, MPK_EMALFORMED, c->map_file, ptr(&p, e->index, "tensorDtypes", NULL),
            "entry \"%.150s\" role \"%s\": the map declares no dtype/shape for it (tensorDtypes/tensorShapes), so the "
            "graph's initializer \"%.150s\" cannot be checked",
            layer, rn, in->name);
  } else {
    if (!in->dtype || strcmp(in->dtype, dtype) != 0)
      problem(c, MPK_EMISMATCH, c->map_file, per_role ? ptr(&p, e->index, "tensorDtypes", rn) : ptr(&p, e->index, "dtype", NULL),
              "entry \"%.150s\" role \"%s\": the graph's initializer \"%.150s\" is %s (ONNX data type %d), the map "
              "declares %s",
              layer, rn, in->name, in->dtype ? in->dtype : "of an unknown type", (int)in->data_type, dtype);
    bool same = ndim == in->ndim;
    for (size_t k = 0; same && k < ndim; k++) same = shape[k] == in->dims[k];
    if (!same) {
      char a[200], b[200];
      dims_text(in->dims, in->ndim, a, sizeof a);
      dims_text(shape, ndim, b, sizeof b);
      problem(c, MPK_EMISMATCH, c->map_file, per_role ? ptr(&p, e->index, "tensorShapes", rn) : ptr(&p, e->index, "shape", NULL),
              "entry \"%.150s\" role \"%s\": the graph's initializer \"%.150s\" has dims %s, the map declares %s", layer,
              rn, in->name, a, b);
    }
  }
  const char *loc = e->external_data_location[role];
  if (!in->external) {
    problem(c, MPK_EMISMATCH, c->map_file, ptr(&p, e->index, "externalDataLocation", loc ? rn : NULL),
            "entry \"%.150s\" role \"%s\": the graph embeds initializer \"%.150s\" in model.onnx; the external-initializer "
            "handoff needs it in its own file%s%s",
            layer, rn, in->name, loc ? " " : "", loc ? loc : "");
    return;
  }
  if (!loc) {
    problem(c, MPK_EMALFORMED, c->map_file, ptr(&p, e->index, "externalDataLocation", NULL),
            "entry \"%.150s\" role \"%s\": no externalDataLocation, but the graph reads initializer \"%.150s\" from "
            "\"%.150s\"",
            layer, rn, in->name, in->location);
    return;
  }
  if (strcmp(loc, in->location) != 0) {
    problem(c, MPK_EMISMATCH, c->map_file, ptr(&p, e->index, "externalDataLocation", rn),
            "entry \"%.150s\" role \"%s\": externalDataLocation is \"%.150s\", but the graph reads initializer "
            "\"%.150s\" from \"%.150s\"",
            layer, rn, loc, in->name, in->location);
    return;
  }
  if (in->offset != 0)
    problem(c, MPK_EMISMATCH, c->map_file, ptr(&p, e->index, "externalDataLocation", rn),
            "entry \"%.150s\" role \"%s\": the graph reads initializer \"%.150s\" at offset %llu of \"%.150s\"; a "
            "one_file_per_tensor file holds its tensor alone, at offset 0",
            layer, rn, in->name, (unsigned long long)in->offset, loc);
  if (!in->has_nbytes) {
    problem(c, MPK_EUNSUPPORTED, c->g->file, NULL,
            "initializer \"%.150s\" (entry \"%.150s\" role \"%s\"): ONNX data type %d has no fixed width, so it cannot "
            "be a raw external tensor",
            in->name, layer, rn, (int)in->data_type);
    return;
  }
  if (in->has_length && in->length != in->nbytes)
    problem(c, MPK_EMISMATCH, c->map_file, ptr(&p, e->index, "externalDataLocation", rn),
            "entry \"%.150s\" role \"%s\": the graph reads %llu bytes of \"%.150s\" for initializer \"%.150s\", not its "
            "full length of %llu bytes (%s)",
            layer, rn, (unsigned long long)in->length, loc, in->name, (unsigned long long)in->nbytes,
            in->dtype ? in->dtype : "?");
  uint64_t size = 0;
  const char *why = NULL;
  int r = file_size(c, loc, &size, &why);
  if (r == 0) {
    problem(c, MPK_ENOTFOUND, c->g->file, NULL,
            "initializer \"%.150s\" (entry \"%.150s\" role \"%s\") is left without data: its external file \"%.150s\" "
            "is missing",
            in->name, layer, rn, loc);
  } else if (r < 0) {
    problem(c, MPK_EIO, c->g->file, NULL, "initializer \"%.150s\": its external file \"%.150s\" cannot be examined: %s",
            in->name, loc, why);
  } else if (in->offset == 0 && !in->has_length && size != in->nbytes) {
    problem(c, MPK_EMISMATCH, c->map_file, ptr(&p, e->index, "externalDataLocation", rn),
            "entry \"%.150s\" role \"%s\": \"%.150s\" is %llu bytes, but initializer \"%.150s\" (%s, %llu elements) is "
            "%llu bytes and the graph reads the whole file",
            layer, rn, loc, (unsigned long long)size, in->name, in->dtype ? in->dtype : "?", (unsigned long long)in->numel,
            (unsigned long long)in->nbytes);
  } else if (in->has_length && (in->offset > size || in->length > size - in->offset)) {
    problem(c, MPK_EMISMATCH, c->g->file, NULL,
            "initializer \"%.150s\": bytes [%llu, %llu + %llu) lie beyond the end of \"%.150s\" (%llu bytes)", in->name,
            (unsigned long long)in->offset, (unsigned long long)in->offset, (unsigned long long)in->length, loc,
            (unsigned long long)size);
  }
}

/* An initializer no entry claims: frozen base, inside frozenBaseBlob, or embedded with its data. */
static void check_frozen(ck *c, const mpk_mt_initializer *in, int *blob_state, uint64_t *blob_size) {
  const char *blob = c->map->frozen_base_blob;
  if (!in->external) {
    if (!in->has_embedded_data && in->numel)
      problem(c, MPK_EMALFORMED, c->g->file, NULL,
              "initializer \"%.150s\" is left without data: it is neither external nor embedded", in->name);
    else if (!in->embedded_complete)
      problem(c, MPK_EMALFORMED, c->g->file, NULL,
              "initializer \"%.150s\": its embedded data (%llu bytes) does not hold its %llu elements of %s", in->name,
              (unsigned long long)in->embedded_bytes, (unsigned long long)in->numel, in->dtype ? in->dtype : "an unknown type");
    return;
  }
  if (strcmp(in->location, blob) != 0) {
    problem(c, MPK_EMISMATCH, c->g->file, NULL,
            "initializer \"%.150s\" reads external data from \"%.150s\", but no map entry claims it: every other external "
            "initializer must live in frozenBaseBlob \"%.150s\"",
            in->name, in->location, blob);
    return;
  }
  if (*blob_state == 2) { /* not yet examined */
    const char *why = NULL;
    *blob_state = file_size(c, blob, blob_size, &why);
    if (*blob_state == 0)
      problem(c, MPK_ENOTFOUND, c->g->file, NULL,
              "frozenBaseBlob \"%.150s\" is missing: initializer \"%.150s\" and every other frozen initializer reading "
              "from it are left without data",
              blob, in->name);
    else if (*blob_state < 0)
      problem(c, MPK_EIO, c->g->file, NULL, "frozenBaseBlob \"%.150s\" cannot be examined: %s", blob, why);
  }
  if (*blob_state != 1) return;
  if (!in->has_nbytes) {
    problem(c, MPK_EUNSUPPORTED, c->g->file, NULL,
            "initializer \"%.150s\": ONNX data type %d has no fixed width, so its bytes in \"%.150s\" cannot be bounded",
            in->name, (int)in->data_type, blob);
    return;
  }
  if (in->has_length && in->length != in->nbytes) {
    problem(c, MPK_EMISMATCH, c->g->file, NULL,
            "initializer \"%.150s\": its external length %llu is not its full length of %llu bytes", in->name,
            (unsigned long long)in->length, (unsigned long long)in->nbytes);
    return;
  }
  uint64_t end = in->offset + in->nbytes;
  bool beyond = end < in->offset || end > *blob_size || (!in->has_length && *blob_size - in->offset != in->nbytes);
  if (beyond)
    problem(c, MPK_EMISMATCH, c->g->file, NULL,
            "initializer \"%.150s\": bytes [%llu, %llu + %llu) %s \"%.150s\" (%llu bytes)", in->name,
            (unsigned long long)in->offset, (unsigned long long)in->offset, (unsigned long long)in->nbytes,
            in->has_length ? "lie beyond the end of" : "(no length: to the end of the file) do not fit",
            blob, (unsigned long long)*blob_size);
}

int mpk_mt_graph_check(const mpk_mt_graph *g, const mpk_mt_handoff *map, const char *map_file, const char *model_dir,
                       mpk_problem_fn on_problem, void *problem_ctx, size_t *n_problems, mpk_error *err) {
  if (n_problems) *n_problems = 0;
  if (!g || !map || !model_dir) return mpk_fail(err, MPK_EINVAL, map_file, NULL, "NULL argument");
  ck c = {.g = g, .map = map, .map_file = map_file ? map_file : MPK_MT_HANDOFF_FILENAME, .dir = model_dir,
          .fn = on_problem, .ctx = problem_ctx};
  bool *claimed = calloc(g->n_initializers ? g->n_initializers : 1, sizeof *claimed);
  if (!claimed) return mpk_fail(err, MPK_ENOMEM, g->file, NULL, "out of memory");
  for (size_t i = 0; i < map->n_entries; i++) {
    const mpk_mt_handoff_entry *e = &map->entries[i];
    for (int r = 0; r < MPK_MT_ROLE_COUNT; r++) {
      const char *name = e->inference_initializer_names[r];
      if (!name) continue;
      const mpk_mt_initializer *in = mpk_mt_graph_find(g, name);
      mpk_path p;
      if (!in) {
        problem(&c, MPK_EMISMATCH, c.map_file, ptr(&p, e->index, "inferenceInitializerNames", mpk_mt_role_name((mpk_mt_role)r)),
                "entry \"%.150s\" role \"%s\": inferenceInitializerNames names \"%.150s\", which is not an initializer "
                "of %s",
                e->training_base_layer_name, mpk_mt_role_name((mpk_mt_role)r), name, g->file);
        continue;
      }
      claimed[in->index] = true;
      check_role(&c, e, r, in);
    }
  }
  int blob_state = 2;
  uint64_t blob_size = 0;
  for (size_t i = 0; i < g->n_initializers; i++)
    if (!claimed[i]) check_frozen(&c, &g->initializers[i], &blob_state, &blob_size);
  free(claimed);
  if (n_problems) *n_problems = c.n;
  return 0;
}
