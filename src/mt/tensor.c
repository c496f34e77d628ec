/* Loading MobileTransformers tensors from their declaration (session_cache.h::load_tensor_raw) and
   the load gate (HandoffPrecondition.loadMergedWeightsReady): a .bin has no header, so the dtype and
   shape come from the handoff map and the file size must be exactly what they imply; a tensor is
   ready when its bytes hash to its authority's digest — the sidecar <file>.bin.sha256 when one
   exists, else the map's sha256[role], else refused. Rules: docs/mt.md. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <dlpack/dlpack.h>

#include "../core/txn.h"
#include "mt.h"

_Static_assert(sizeof(DLDataType) == 4, "DLDataType layout");

/* ---------------------------------------------------------------- dtypes and the size rule */

typedef struct dtype_info {
  const char *name;
  uint8_t code, bits;
} dtype_info;

static const dtype_info dtypes[] = {
    {"float32", kDLFloat, 32}, {"float16", kDLFloat, 16}, {"bfloat16", kDLBfloat, 16},
    {"int8", kDLInt, 8},       {"uint8", kDLUInt, 8},     {"int4", kDLInt, 4},
    {"uint4", kDLUInt, 4},     {"int32", kDLInt, 32},     {"int64", kDLInt, 64},
};

static const dtype_info *dtype_find(const char *name) {
  for (size_t i = 0; name && i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (strcmp(dtypes[i].name, name) == 0) return &dtypes[i];
  return NULL;
}

int mpk_tensor_nbytes(const char *dtype, const int64_t *shape, size_t ndim, uint64_t *numel, uint64_t *nbytes,
                      mpk_error *err) {
  if (!dtype || (ndim && !shape) || !nbytes) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "invalid argument");
  const dtype_info *d = dtype_find(dtype);
  if (!d) return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL, "dtype \"%.40s\" cannot be loaded", dtype);
  uint64_t n = 1;
  for (size_t i = 0; i < ndim; i++) {
    if (shape[i] < 1)
      return mpk_fail(err, MPK_EMALFORMED, NULL, NULL, "dimension %zu is %lld: every dimension must be at least 1", i,
                      (long long)shape[i]);
    if (__builtin_mul_overflow(n, (uint64_t)shape[i], &n))
      return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "the element count overflows 64 bits");
  }
  uint64_t bytes;
  if (d->bits == 4) bytes = n / 2 + (n & 1);
  else if (__builtin_mul_overflow(n, (uint64_t)(d->bits / 8), &bytes))
    return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "%llu elements of %s overflow 64 bits of bytes",
                    (unsigned long long)n, dtype);
  if (numel) *numel = n;
  *nbytes = bytes;
  return 0;
}

/* "[4, 3]" */
static const char *shape_str(const int64_t *shape, size_t ndim, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < ndim && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (len < size) snprintf(buf + len, size - len, "]");
  return buf;
}

/* ---------------------------------------------------------------- tensor views */

int mpk_mt_tensor_open(const char *inference_dir, const mpk_mt_handoff_entry *e, mpk_mt_role role,
                       mpk_tensor_view *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!inference_dir || !e || !out || (unsigned)role >= MPK_MT_ROLE_COUNT)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "invalid argument");
  const char *layer = e->training_base_layer_name ? e->training_base_layer_name : "?";
  const char *rname = mpk_mt_role_name(role);
  const char *loc = e->external_data_location[role];
  if (!loc)
    return mpk_fail(err, MPK_ENOTFOUND, NULL, NULL, "entry \"%.150s\": role \"%s\" has no externalDataLocation",
                    layer, rname);
  char *path = mpk_path_join(inference_dir, loc);
  if (!path) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  const char *dtype;
  const int64_t *shape;
  size_t ndim;
  uint64_t numel = 0, nbytes = 0;
  mpk_error sub;
  mpk_error_clear(&sub);
  int rc = mpk_mt_handoff_role_layout(e, role, &dtype, &shape, &ndim, &sub);
  char dims[256];
  if (rc) {
    rc = mpk_fail(err, rc, path, NULL, "%s", sub.message);
    goto done;
  }
  if (ndim > MPK_TENSOR_MAX_DIMS) {
    rc = mpk_fail(err, MPK_ELIMIT, path, NULL, "entry \"%.150s\" role \"%s\": %zu dimensions (at most %d)", layer,
                  rname, ndim, MPK_TENSOR_MAX_DIMS);
    goto done;
  }
  if ((rc = mpk_tensor_nbytes(dtype, shape, ndim, &numel, &nbytes, &sub))) {
    rc = mpk_fail(err, rc, path, NULL, "entry \"%.150s\" role \"%s\" (%s %s): %s", layer, rname, dtype,
                  shape_str(shape, ndim, dims, sizeof dims), sub.message);
    goto done;
  }
  if (nbytes > SIZE_MAX) {
    rc = mpk_fail(err, MPK_ELIMIT, path, NULL, "entry \"%.150s\" role \"%s\": %llu bytes cannot be mapped", layer,
                  rname, (unsigned long long)nbytes);
    goto done;
  }
  mpk_mapped *m = calloc(1, sizeof *m);
  if (!m) {
    rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
    goto done;
  }
  mpk_error_clear(&sub);
  if ((rc = mpk_map_file(path, 0, m, &sub))) {
    free(m);
    rc = mpk_fail(err, rc, path, NULL, "entry \"%.150s\" role \"%s\": %s", layer, rname, sub.message);
    goto done;
  }
  if ((uint64_t)m->size != nbytes) {
    rc = mpk_fail(err, MPK_EMISMATCH, path, NULL,
                  "entry \"%.150s\" role \"%s\": the file is %zu bytes, but %s %s is exactly %llu bytes", layer, rname,
                  m->size, dtype, shape_str(shape, ndim, dims, sizeof dims), (unsigned long long)nbytes);
    mpk_unmap_file(m);
    free(m);
    goto done;
  }
  const dtype_info *d = dtype_find(dtype);
  out->data = m->data;
  snprintf(out->dtype, sizeof out->dtype, "%s", d->name);
  out->dl_code = d->code;
  out->dl_bits = d->bits;
  out->dl_lanes = 1;
  out->ndim = (int32_t)ndim;
  int64_t stride = 1;
  for (size_t i = ndim; i-- > 0;) {
    out->shape[i] = shape[i];
    out->strides[i] = stride;
    stride *= shape[i]; /* <= numel: no overflow */
  }
  out->numel = numel;
  out->nbytes = nbytes;
  out->priv_ = m;
done:
  free(path);
  return rc;
}

void mpk_tensor_view_close(mpk_tensor_view *v) {
  if (!v) return;
  if (v->priv_) {
    mpk_unmap_file(v->priv_);
    free(v->priv_);
  }
  memset(v, 0, sizeof *v);
}

int mpk_tensor_view_dltensor(const mpk_tensor_view *v, void *dltensor_out) {
  if (!v || !dltensor_out || !v->priv_) return MPK_EINVAL;
  DLTensor *t = dltensor_out;
  memset(t, 0, sizeof *t);
  t->data = (void *)v->data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = v->ndim;
  t->dtype.code = v->dl_code;
  t->dtype.bits = v->dl_bits;
  t->dtype.lanes = v->dl_lanes;
  t->shape = (int64_t *)v->shape;
  t->strides = (int64_t *)v->strides;
  t->byte_offset = 0;
  return 0;
}

/* ---------------------------------------------------------------- the load gate */

struct mpk_mt_gate_priv {
  mpk_findings found;
  mpk_mt_gate_tensor *tensors;
  char **files;
  int hold; /* the inference directory held against merges while the report lives (-1: none) */
};

const char *mpk_mt_authority_name(mpk_mt_authority a) {
  switch (a) {
    case MPK_MT_AUTH_SIDECAR: return "sidecar";
    case MPK_MT_AUTH_MAP: return "map";
    default: return "none";
  }
}

const char *mpk_mt_tensor_status_name(mpk_mt_tensor_status s) {
  static const char *const names[] = {"verified",    "present",  "missing",   "no checksum",
                                      "bad sidecar", "mismatch", "unreadable"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

int mpk_mt_read_sidecar(const char *path, char hex[65], const char **why) {
  hex[0] = '\0';
  struct stat st;
  if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return 0;
  mpk_mapped m;
  if (mpk_map_file(path, 4096, &m, NULL)) {
    *why = "cannot be read (or is over 4096 bytes)";
    return -1;
  }
  size_t a = 0, b = 0;
  while (b < m.size && m.data[b] != '\n') b++;
  while (a < b && isspace(m.data[a])) a++;
  while (b > a && isspace(m.data[b - 1])) b--;
  int rc = 1;
  if (b - a != 64) rc = -1;
  for (size_t i = 0; rc == 1 && i < 64; i++) {
    int c = m.data[a + i];
    if (!isxdigit(c)) rc = -1;
    else hex[i] = (char)tolower(c);
  }
  mpk_unmap_file(&m);
  hex[rc == 1 ? 64 : 0] = '\0';
  if (rc < 0) *why = "its first line is not 64 hex digits";
  return rc;
}

#define gate_problem(f, code, file, ...) mpk_findings_fail((f), (code), (file), NULL, __VA_ARGS__)

static void sync_gate(mpk_mt_gate_report *r) {
  r->problems = r->priv_->found.problems;
  r->n_problems = r->priv_->found.n_problems;
}

int mpk_mt_load_gate(const char *inference_dir, const mpk_mt_handoff *map, const mpk_mt_gate_options *opts,
                     mpk_mt_gate_report **out, mpk_error *err) {
  if (!inference_dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  static const mpk_mt_gate_options defaults = {0};
  if (!opts) opts = &defaults;
  mpk_mt_gate_report *r = calloc(1, sizeof *r);
  struct mpk_mt_gate_priv *p = r ? calloc(1, sizeof *p) : NULL;
  if (!p) {
    free(r);
    return mpk_fail(err, MPK_ENOMEM, inference_dir, NULL, "out of memory");
  }
  r->priv_ = p;
  p->hold = -1;
  size_t n = 0;
  for (size_t i = 0; map && i < map->n_entries; i++)
    for (int role = 0; role < MPK_MT_ROLE_COUNT; role++) n += map->entries[i].external_data_location[role] != NULL;
  /* An interrupted merge is finished or undone before anything is judged, and the directory is
     then held (a shared lock) until the report is freed: no merge can begin while the gate reads
     the tensors or the caller opens them, so neither sees some tensors merged and others not. */
  if (mpk_is_dir(inference_dir)) {
    mpk_txn_outcome o;
    int rrc = mpk_txn_hold(inference_dir, MPK_MT_MERGE_TXN, &p->hold, &o, err);
    if (rrc) {
      mpk_mt_gate_report_free(r);
      return rrc;
    }
    r->recovery = o.action == MPK_TXN_ROLLED_FORWARD ? MPK_MT_RECOVERY_ROLLED_FORWARD
                  : o.action == MPK_TXN_ROLLED_BACK  ? MPK_MT_RECOVERY_ROLLED_BACK
                                                     : MPK_MT_RECOVERY_NONE;
    r->recovery_files = o.action == MPK_TXN_ROLLED_FORWARD ? o.files : o.removed;
  }
  if (!map || map->n_entries == 0 || n == 0) {
    r->no_merged_weights = 1;
    r->ready = 1;
    *out = r;
    return 0;
  }
  p->tensors = calloc(n, sizeof *p->tensors);
  p->files = calloc(n, sizeof *p->files);
  mpk_digest_job *jobs = calloc(n, sizeof *jobs);
  size_t *job_of = calloc(n, sizeof *job_of);
  int rc = 0;
  if (!p->tensors || !p->files || !jobs || !job_of) rc = MPK_ENOMEM;
  size_t k = 0, nj = 0;
  for (size_t i = 0; !rc && i < map->n_entries; i++) {
    const mpk_mt_handoff_entry *e = &map->entries[i];
    for (int role = 0; !rc && role < MPK_MT_ROLE_COUNT; role++) {
      const char *loc = e->external_data_location[role];
      if (!loc) continue;
      mpk_mt_gate_tensor *t = &p->tensors[k];
      if (!(p->files[k] = mpk_path_join(inference_dir, loc))) {
        rc = MPK_ENOMEM;
        break;
      }
      k++;
      t->entry = i;
      t->layer = e->training_base_layer_name;
      t->role = (mpk_mt_role)role;
      t->file = p->files[k - 1];
      if (e->sha256[role]) snprintf(t->map_sha256, sizeof t->map_sha256, "%s", e->sha256[role]);
      t->layout_code = mpk_mt_handoff_role_layout(e, t->role, &t->dtype, &t->shape, &t->ndim, NULL);
      if (!t->layout_code && mpk_tensor_nbytes(t->dtype, t->shape, t->ndim, NULL, &t->declared_bytes, NULL))
        t->declared_bytes = 0;
      struct stat st;
      const char *rn = mpk_mt_role_name(t->role);
      if (stat(t->file, &st) != 0 || !S_ISREG(st.st_mode)) {
        t->status = MPK_MT_TENSOR_MISSING;
        gate_problem(&p->found, MPK_ENOTFOUND, t->file, "merged weight of layer \"%.150s\" role \"%s\" is missing: %s",
                     t->layer, rn, loc);
        continue;
      }
      t->size = (uint64_t)st.st_size;
      t->size_ok = t->declared_bytes && t->size == t->declared_bytes;
      if (opts->presence_only) {
        t->status = MPK_MT_TENSOR_PRESENT;
        continue;
      }
      char *side = malloc(strlen(t->file) + 8);
      if (!side) {
        rc = MPK_ENOMEM;
        break;
      }
      sprintf(side, "%s.sha256", t->file);
      const char *why = NULL;
      int s = mpk_mt_read_sidecar(side, t->sidecar, &why);
      if (s < 0) {
        t->status = MPK_MT_TENSOR_BAD_SIDECAR;
        t->authority = MPK_MT_AUTH_SIDECAR;
        gate_problem(&p->found, MPK_EMALFORMED, side, "the checksum sidecar of layer \"%.150s\" role \"%s\" %s", t->layer,
                     rn, why);
      } else if (s == 0 && !t->map_sha256[0]) {
        t->status = MPK_MT_TENSOR_NO_CHECKSUM;
        gate_problem(&p->found, MPK_ENOTFOUND, t->file,
                     "no checksum for layer \"%.150s\" role \"%s\": no sidecar %s.sha256 and no sha256 in the map", t->layer,
                     rn, loc);
      } else {
        t->authority = s == 1 ? MPK_MT_AUTH_SIDECAR : MPK_MT_AUTH_MAP;
        jobs[nj] = (mpk_digest_job){.path = t->file, .algo = MPK_DIGEST_SHA256, .expected_size = t->size};
        job_of[nj++] = k - 1;
      }
      free(side);
    }
  }
  if (!rc) {
    mpk_error e;
    mpk_error_clear(&e);
    rc = mpk_digest_files(jobs, nj, opts->workers, NULL, NULL, &e);
  }
  for (size_t j = 0; !rc && j < nj; j++) {
    mpk_mt_gate_tensor *t = &p->tensors[job_of[j]];
    const char *rn = mpk_mt_role_name(t->role);
    if (jobs[j].code) {
      t->status = MPK_MT_TENSOR_UNREADABLE;
      gate_problem(&p->found, jobs[j].code, t->file, "merged weight of layer \"%.150s\" role \"%s\" could not be read",
                   t->layer, rn);
      continue;
    }
    memcpy(t->actual, jobs[j].hex, sizeof t->actual);
    bool side = t->authority == MPK_MT_AUTH_SIDECAR;
    const char *want = side ? t->sidecar : t->map_sha256;
    if (strcmp(t->actual, want) == 0) {
      t->status = MPK_MT_TENSOR_VERIFIED;
      r->n_verified++;
      continue;
    }
    t->status = MPK_MT_TENSOR_MISMATCH;
    if (side)
      gate_problem(&p->found, MPK_EMISMATCH, t->file,
                   "layer \"%.150s\" role \"%s\": SHA-256 %s does not equal its sidecar's %s%s", t->layer, rn, t->actual,
                   t->sidecar,
                   !t->map_sha256[0] ? ""
                   : strcmp(t->map_sha256, t->actual) == 0
                       ? " (the map's sha256 matches, but the sidecar wins: a stale sidecar fails)"
                       : " (nor the map's)");
    else
      gate_problem(&p->found, MPK_EMISMATCH, t->file,
                   "layer \"%.150s\" role \"%s\": SHA-256 %s does not equal the map's sha256 %s (no sidecar)", t->layer,
                   rn, t->actual, t->map_sha256);
  }
  free(jobs);
  free(job_of);
  r->tensors = p->tensors;
  r->n_tensors = k;
  sync_gate(r);
  if (!rc && p->found.oom) rc = MPK_ENOMEM;
  if (rc) {
    mpk_mt_gate_report_free(r);
    return mpk_fail(err, rc, inference_dir, NULL, rc == MPK_ENOMEM ? "out of memory" : "the load gate could not run");
  }
  r->ready = r->n_problems == 0;
  *out = r;
  return 0;
}

void mpk_mt_gate_report_free(mpk_mt_gate_report *r) {
  if (!r) return;
  struct mpk_mt_gate_priv *p = r->priv_;
  if (p) {
    mpk_txn_release(p->hold);
    mpk_findings_free(&p->found);
    for (size_t i = 0; p->files && i < r->n_tensors; i++) free(p->files[i]);
    /* files allocated past n_tensors on an early failure */
    free(p->files);
    free(p->tensors);
    free(p);
  }
  free(r);
}
