/* Loading MobileTransformers tensors from their declaration (session_cache.h::load_tensor_raw) and
   the load gate (HandoffPrecondition.loadMergedWeightsReady): a .bin has no header, so the dtype and
   shape come from the handoff map and the file size must be exactly what they imply; a tensor is
   ready when its bytes are the shipped ones (the map's sha256[role]) — or, for a tensor merged on
   device, the post-merge digest modelpkg's own merge record lists for it — and its sidecar
   <file>.bin.sha256, when one exists, agrees. Every file is opened beneath the inference directory's
   handle, never through a symbolic link out of it and never blocking on a FIFO. Rules: docs/mt.md. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pool.h"
#include "core/txn.h"
#include "mt/mt.h"

/* "[4, 3]" */
static const char *shape_str(const int64_t *shape, size_t ndim, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < ndim && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (len < size) snprintf(buf + len, size - len, "]");
  return buf;
}

/* ---------------------------------------------------------------- tensor views */

int mpk_mt_tensor_open_file_at(int dfd, const char *inference_dir, const mpk_mt_handoff_entry *e, mpk_mt_role role,
                               mpk_tensor_view *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (dfd < 0 || !inference_dir || !e || !out || (unsigned)role >= MPK_MT_ROLE_COUNT)
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
  int fd;
  struct stat st;
  if (!(rc = mpk_open_read_at(dfd, inference_dir, loc, 0, "the inference directory", &fd, &st, &sub)))
    rc = mpk_map_fd(fd, path, (size_t)st.st_size, m, &sub);
  if (rc) {
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
  mpk_tensor_view_fill(out, m, dtype, shape, ndim, numel);
done:
  free(path);
  return rc;
}

int mpk_mt_tensor_open_at(int dfd, const char *inference_dir, const mpk_mt_handoff_entry *e, mpk_mt_role role,
                          mpk_tensor_view *out, mpk_error *err) {
  int rc = mpk_mt_tensor_open_file_at(dfd, inference_dir, e, role, out, err);
  if (rc) return rc;
  return mpk_tensor_view_to_host(out, e->external_data_location[role], err);
}

int mpk_mt_tensor_open(const char *inference_dir, const mpk_mt_handoff_entry *e, mpk_mt_role role,
                       mpk_tensor_view *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!inference_dir) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "invalid argument");
  int dfd = open(inference_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return mpk_fail(err, errno == ENOENT ? MPK_ENOTFOUND : MPK_EIO, inference_dir, NULL,
                    "cannot open the inference directory: %s", strerror(errno));
  int rc = mpk_mt_tensor_open_at(dfd, inference_dir, e, role, out, err);
  close(dfd);
  return rc;
}


/* ---------------------------------------------------------------- the load gate */

struct mpk_mt_gate_priv {
  mpk_findings found;
  mpk_mt_gate_tensor *tensors;
  mpk_mt_gate_hashing *hashing; /* parallel to tensors */
  char **files;
  int hold; /* the inference directory held against merges while the report lives (-1: none) */
  char stamp_why[600]; /* why the stamp was ignored (report->stamp_ignored) */
};

const char *mpk_mt_authority_name(mpk_mt_authority a) {
  switch (a) {
    case MPK_MT_AUTH_SIDECAR: return "sidecar";
    case MPK_MT_AUTH_MAP: return "map";
    case MPK_MT_AUTH_RECORD: return "merge record";
    default: return "none";
  }
}

const char *mpk_mt_tensor_status_name(mpk_mt_tensor_status s) {
  static const char *const names[] = {"verified",    "present",  "missing",   "no checksum",
                                      "bad sidecar", "mismatch", "unreadable"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

int mpk_mt_read_sidecar_at(int dfd, const char *shown, const char *name, char hex[65], char *why, size_t why_cap) {
  hex[0] = '\0';
  int fd;
  struct stat st;
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_open_read_at(dfd, shown, name, 4096, "the inference directory", &fd, &st, &e);
  if (rc == MPK_ENOTFOUND) return 0;
  if (rc) {
    snprintf(why, why_cap, "cannot be read: %s", e.message);
    return -1;
  }
  char data[4096];
  size_t len = 0;
  while (len < (size_t)st.st_size && len < sizeof data) {
    ssize_t r = read(fd, data + len, sizeof data - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
  }
  close(fd);
  size_t a = 0, b = 0;
  while (b < len && data[b] != '\n') b++;
  while (a < b && isspace((unsigned char)data[a])) a++;
  while (b > a && isspace((unsigned char)data[b - 1])) b--;
  rc = 1;
  if (b - a != 64) rc = -1;
  for (size_t i = 0; rc == 1 && i < 64; i++) {
    int c = (unsigned char)data[a + i];
    if (!isxdigit(c)) rc = -1;
    else hex[i] = (char)tolower(c);
  }
  hex[rc == 1 ? 64 : 0] = '\0';
  if (rc < 0) snprintf(why, why_cap, "its first line is not 64 hex digits");
  return rc;
}

/* ---------------------------------------------------------------- hashing beneath a handle */

typedef struct hash_ctx {
  int dfd;
  const char *shown;
  mpk_mt_hash_job *jobs;
} hash_ctx;

static int hash_task(mpk_pool *pool, void *ctx, size_t i, void *scratch, mpk_error *err) {
  (void)pool, (void)scratch, (void)err; /* each job keeps its own result */
  hash_ctx *h = ctx;
  mpk_mt_hash_job *j = &h->jobs[i];
  int fd;
  struct stat st;
  mpk_error_clear(&j->err);
  j->code = mpk_open_read_at(h->dfd, h->shown, j->name, 0, "the inference directory", &fd, &st, &j->err);
  if (j->code) return 0;
  j->st = st;
  j->stable = false;
  if (mpk_sha256_fd(fd, j->hex)) {
    j->code = mpk_fail(&j->err, MPK_EIO, j->name, NULL, "cannot read it: %s", strerror(errno));
  } else {
    struct stat after;
    j->size = (uint64_t)st.st_size;
    j->hashed_at_ms = mpk_mt_stamp_now_ns() / 1000000;
    if (fstat(fd, &after) == 0 && after.st_size != st.st_size)
      j->code = mpk_fail(&j->err, MPK_EIO, j->name, NULL, "it changed size while it was hashed");
    /* Only bytes that held still while they were read may be vouched for by the stamp. */
    j->stable = !j->code && after.st_ino == st.st_ino && after.st_dev == st.st_dev &&
                after.st_mtim.tv_sec == st.st_mtim.tv_sec && after.st_mtim.tv_nsec == st.st_mtim.tv_nsec &&
                after.st_ctim.tv_sec == st.st_ctim.tv_sec && after.st_ctim.tv_nsec == st.st_ctim.tv_nsec;
  }
  close(fd);
  return 0;
}

int mpk_mt_hash_at(int dfd, const char *shown, mpk_mt_hash_job *jobs, size_t n, unsigned workers) {
  if (!workers) workers = mpk_online_cpus() > 8 ? 8 : mpk_online_cpus();
  hash_ctx h = {.dfd = dfd, .shown = shown, .jobs = jobs};
  return mpk_pool_run(n, &(mpk_pool_opts){.workers = workers, .keep_going = true}, hash_task, &h, NULL, NULL);
}

/* ---------------------------------------------------------------- the merge record */

#define RECORD_FORMAT "modelpkg-merge-record"

static bool is_hex64(const char *s) {
  if (!s || strlen(s) != 64) return false;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}
#define RECORD_MAX_BYTES ((uint64_t)16 * 1024 * 1024)

int mpk_mt_record_load(int dfd, const char *shown, json_t **out, mpk_error *err) {
  *out = NULL;
  int fd;
  struct stat st;
  char file[1024];
  snprintf(file, sizeof file, "%s/%s", shown, MPK_MT_MERGE_RECORD);
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_open_read_at(dfd, shown, MPK_MT_MERGE_RECORD, RECORD_MAX_BYTES, "the inference directory", &fd, &st, &e);
  if (rc == MPK_ENOTFOUND) return 0;
  if (rc) return mpk_fail(err, rc, file, NULL, "the merge record cannot be read: %s", e.message);
  mpk_mapped m;
  if ((rc = mpk_map_fd(fd, file, (size_t)st.st_size, &m, err))) return rc;
  rc = mpk_mt_record_parse(m.data, m.size, file, out, err);
  mpk_unmap_file(&m);
  return rc;
}

int mpk_mt_record_parse(const void *data, size_t len, const char *file, json_t **out, mpk_error *err) {
  *out = NULL;
  if (!file) file = MPK_MT_MERGE_RECORD;
  if (len > RECORD_MAX_BYTES)
    return mpk_fail(err, MPK_ELIMIT, file, NULL, "the merge record is %zu bytes, over its limit of %llu", len,
                    (unsigned long long)RECORD_MAX_BYTES);
  json_t *root = NULL;
  int rc = mpk_json_parse(data, len, NULL, file, &root, err);
  if (rc) return rc;
  mpk_jv v = {.file = file, .err = err};
  mpk_path_init(&v.path);
  static const char *const keys[] = {"format", "tensors", "version", NULL};
  static const char *const tkeys[] = {"sha256", "shipped_sha256", NULL};
  rc = mpk_jv_object(&v, root);
  if (!rc) rc = mpk_jv_exact_keys(&v, root, keys, keys);
  int64_t version = 0;
  if (!rc) {
    size_t prev = mpk_path_push_key(&v.path, "format");
    rc = mpk_jv_literal(&v, json_object_get(root, "format"), RECORD_FORMAT);
    mpk_path_pop(&v.path, prev);
  }
  if (!rc) {
    size_t prev = mpk_path_push_key(&v.path, "version");
    rc = mpk_jv_integer(&v, json_object_get(root, "version"), 1, &version);
    if (!rc && version != 1)
      rc = mpk_jv_fail(&v, MPK_EVERSION, "merge record version %lld is not supported (this is 1)", (long long)version);
    mpk_path_pop(&v.path, prev);
  }
  const json_t *ts = json_object_get(root, "tensors");
  if (!rc) {
    size_t prev = mpk_path_push_key(&v.path, "tensors");
    rc = mpk_jv_object(&v, ts);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)ts, name, o) {
      if (rc) break;
      size_t p2 = mpk_path_push_key(&v.path, name);
      const char *why = NULL;
      if (!mpk_path_is_confined(name, &why) || strchr(name, '/'))
        rc = mpk_jv_fail(&v, MPK_EMALFORMED, "a tensor of the record is a plain file name of the inference directory");
      if (!rc) rc = mpk_jv_object(&v, o);
      if (!rc) rc = mpk_jv_exact_keys(&v, o, tkeys, tkeys);
      for (int k = 0; !rc && k < 2; k++) {
        const json_t *d = json_object_get(o, tkeys[k]);
        size_t p3 = mpk_path_push_key(&v.path, tkeys[k]);
        if (!(k == 1 && json_is_null(d)) && !(json_is_string(d) && is_hex64(json_string_value(d))))
          rc = mpk_jv_fail(&v, MPK_EMALFORMED, "expected 64 lowercase hex digits%s", k == 1 ? " or null" : "");
        mpk_path_pop(&v.path, p3);
      }
      mpk_path_pop(&v.path, p2);
    }
    mpk_path_pop(&v.path, prev);
  }
  if (rc) {
    json_decref(root);
    return rc;
  }
  *out = root;
  return 0;
}

bool mpk_mt_record_find(const json_t *record, const char *name, const char **shipped, const char **merged) {
  const json_t *o = record ? json_object_get(json_object_get(record, "tensors"), name) : NULL;
  if (!o) return false;
  *shipped = json_string_value(json_object_get(o, "shipped_sha256")); /* NULL: none */
  *merged = json_string_value(json_object_get(o, "sha256"));
  return true;
}

#define gate_problem(f, code, file, ...) mpk_findings_fail((f), (code), (file), NULL, __VA_ARGS__)


/* The rule every refusal cites. */
#define SHIPPED_RULE                                                                                        \
  "a tensor must hold the shipped bytes (the map's sha256) unless modelpkg's own merge record (" \
  MPK_MT_MERGE_RECORD ", written by mt merge) names it with these bytes (docs/mt.md, \"Shipped bytes\")"

/* Judge one tensor from its digest (`actual`, "" with presence_only), its sidecar and the record. */
static void judge(struct mpk_mt_gate_priv *p, mpk_mt_gate_report *r, mpk_mt_gate_tensor *t, const json_t *record,
                  const char *loc, bool presence_only) {
  const char *rn = mpk_mt_role_name(t->role);
  const char *shipped = t->map_sha256[0] ? t->map_sha256 : NULL;
  const char *rec_shipped = NULL, *rec_merged = NULL;
  bool in_record = mpk_mt_record_find(record, loc, &rec_shipped, &rec_merged);
  const char *side = t->sidecar[0] ? t->sidecar : NULL;
  /* The record applies only to the shipped weights it names. */
  bool foreign = in_record && shipped && rec_shipped && strcmp(rec_shipped, shipped) != 0;
  const char *a = presence_only ? side : t->actual; /* without hashing, the sidecar stands for the bytes */
  if (foreign && a && strcmp(a, shipped) != 0) {
    t->status = MPK_MT_TENSOR_MISMATCH;
    t->authority = MPK_MT_AUTH_RECORD;
    gate_problem(&p->found, MPK_EMISMATCH, t->file,
                 "layer \"%.150s\" role \"%s\": the merge record's shipped digest %s is not the map's sha256 %s: the "
                 "record is not about these shipped weights; %s",
                 t->layer, rn, rec_shipped, shipped, SHIPPED_RULE);
    return;
  }
  if (presence_only) { /* nothing hashed: the sidecar (a few bytes) must still be shipped or recorded */
    t->status = MPK_MT_TENSOR_PRESENT;
    if (!side) return;
    if (in_record && strcmp(side, rec_merged) != 0 && (!shipped || strcmp(side, shipped) != 0)) {
      t->status = MPK_MT_TENSOR_MISMATCH;
      gate_problem(&p->found, MPK_EMISMATCH, t->file,
                   "layer \"%.150s\" role \"%s\": its sidecar says %s, but the merge record lists %s after the merge",
                   t->layer, rn, side, rec_merged);
    } else if (!in_record && shipped && strcmp(side, shipped) != 0) {
      t->status = MPK_MT_TENSOR_MISMATCH;
      gate_problem(&p->found, MPK_EMISMATCH, t->file,
                   "layer \"%.150s\" role \"%s\": its sidecar says %s, not the shipped digest %s (the map's sha256), "
                   "and no merge record names it: %s",
                   t->layer, rn, side, shipped, SHIPPED_RULE);
    }
    return;
  }
  if (shipped && strcmp(a, shipped) == 0) {
    t->authority = MPK_MT_AUTH_MAP;
    if (side && strcmp(side, a) != 0) {
      t->status = MPK_MT_TENSOR_MISMATCH;
      t->authority = MPK_MT_AUTH_SIDECAR;
      gate_problem(&p->found, MPK_EMISMATCH, t->file,
                   "layer \"%.150s\" role \"%s\": SHA-256 %s does not equal its sidecar's %s (the map's sha256 "
                   "matches, but a sidecar must agree with the bytes: a stale sidecar fails)",
                   t->layer, rn, a, side);
      return;
    }
  } else if (in_record) {
    t->authority = MPK_MT_AUTH_RECORD;
    if (strcmp(a, rec_merged) != 0 || (side && strcmp(side, a) != 0)) {
      t->status = MPK_MT_TENSOR_MISMATCH;
      gate_problem(&p->found, MPK_EMISMATCH, t->file,
                   "layer \"%.150s\" role \"%s\": SHA-256 %s does not equal the post-merge digest %s that the merge "
                   "record lists for it%s%s%s",
                   t->layer, rn, a, rec_merged, side ? " (its sidecar says " : "", side ? side : "", side ? ")" : "");
      return;
    }
    t->merged = 1;
  } else if (!shipped) {
    if (!side) {
      t->status = MPK_MT_TENSOR_NO_CHECKSUM;
      gate_problem(&p->found, MPK_ENOTFOUND, t->file,
                   "no checksum for layer \"%.150s\" role \"%s\": no sidecar %s.sha256 and no sha256 in the map",
                   t->layer, rn, loc);
      return;
    }
    t->authority = MPK_MT_AUTH_SIDECAR; /* the map has no digest: the shipped sidecar is the shipped digest */
    if (strcmp(a, side) != 0) {
      t->status = MPK_MT_TENSOR_MISMATCH;
      gate_problem(&p->found, MPK_EMISMATCH, t->file,
                   "layer \"%.150s\" role \"%s\": SHA-256 %s does not equal its sidecar's %s (the map has no sha256)",
                   t->layer, rn, a, side);
      return;
    }
  } else {
    t->status = MPK_MT_TENSOR_MISMATCH;
    t->authority = MPK_MT_AUTH_MAP;
    gate_problem(&p->found, MPK_EMISMATCH, t->file,
                 "layer \"%.150s\" role \"%s\": SHA-256 %s does not equal the shipped digest %s (the map's sha256)%s%s; "
                 "%s",
                 t->layer, rn, a, shipped,
                 !side                  ? " (no sidecar)"
                 : strcmp(side, a) == 0 ? ": its sidecar agrees with the bytes, which does not make them shipped"
                                        : " nor its sidecar's ",
                 side && strcmp(side, a) != 0 ? side : "", SHIPPED_RULE);
    return;
  }
  t->status = MPK_MT_TENSOR_VERIFIED;
  r->n_verified++;
}

int mpk_mt_gate_options_read(mpk_mt_gate_options *local, const mpk_mt_gate_options *given, mpk_error *err) {
  /* The 0.1 layout (struct_size 0) ended before the stamp's fields. */
  return MPK_OPTIONS_READ_GROWN(mpk_mt_gate_options, use_stamp, local, given, err);
}

int mpk_mt_load_gate_at(int dfd, const char *inference_dir, const mpk_mt_handoff *map, const mpk_mt_gate_options *given,
                        const mpk_mt_gate_ctx *ctx, mpk_mt_gate_report **out, mpk_error *err) {
  if (!inference_dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  mpk_mt_gate_options opt;
  int grc = mpk_mt_gate_options_read(&opt, given, err);
  if (grc) return grc;
  const mpk_mt_gate_options *opts = &opt;
  static const mpk_mt_gate_ctx no_ctx = {0};
  if (!ctx) ctx = &no_ctx;
  mpk_mt_gate_report *r = calloc(1, sizeof *r);
  struct mpk_mt_gate_priv *p = r ? calloc(1, sizeof *p) : NULL;
  if (!p) {
    free(r);
    return mpk_fail(err, MPK_ENOMEM, inference_dir, NULL, "out of memory");
  }
  r->priv_ = p;
  mpk_findings_publish(&p->found, &r->problems, &r->n_problems, NULL, NULL);
  p->hold = -1;
  size_t n = 0;
  for (size_t i = 0; map && i < map->n_entries; i++)
    for (int role = 0; role < MPK_MT_ROLE_COUNT; role++) n += map->entries[i].external_data_location[role] != NULL;
  json_t *record = NULL;
  if (dfd >= 0 && ctx->read_only && !ctx->shipped_txn) {
    /* check never writes: an interrupted merge is reported, with what finishes it. */
    mpk_txn_state st;
    mpk_error e;
    mpk_error_clear(&e);
    char jfile[1024];
    snprintf(jfile, sizeof jfile, "%s/%s", inference_dir, MPK_MT_MERGE_JOURNAL);
    if (mpk_txn_inspect_at(dfd, inference_dir, MPK_MT_MERGE_TXN, &st, &e))
      mpk_findings_problem(&p->found, &e);
    else if (st.busy)
      gate_problem(&p->found, MPK_EIO, inference_dir, "a merge is in progress in this directory: check again when it has finished");
    else if (st.pending == MPK_TXN_ROLLED_FORWARD)
      gate_problem(&p->found, MPK_EIO, jfile,
                   "an interrupted merge transaction is pending (committed, %zu files to put in place); check never "
                   "writes: %s finishes it, then check again",
                   st.files, ctx->next_step ? ctx->next_step : "the load gate (modelpkg mt tensors DIR)");
    else if (st.pending == MPK_TXN_ROLLED_BACK)
      gate_problem(&p->found, MPK_EIO, inference_dir,
                   "an interrupted merge transaction left %zu temporary file%s (it had not committed); check never "
                   "writes: %s undoes it, then check again",
                   st.temps + st.journal_tmp, st.temps + st.journal_tmp == 1 ? "" : "s",
                   ctx->next_step ? ctx->next_step : "the load gate (modelpkg mt tensors DIR)");
  } else if (dfd >= 0 && !ctx->read_only && !ctx->shipped_txn) {
    /* An interrupted merge is finished or undone before anything is judged, and the directory is
       then held (a shared lock) until the report is freed: no merge can begin while the gate reads
       the tensors or the caller opens them, so neither sees some tensors merged and others not. */
    mpk_txn_outcome o;
    int rrc = mpk_txn_hold_at(dfd, inference_dir, MPK_MT_MERGE_TXN, &p->hold, &o, err);
    if (rrc) {
      mpk_mt_gate_report_free(r);
      return rrc;
    }
    r->recovery = o.action == MPK_TXN_ROLLED_FORWARD ? MPK_MT_RECOVERY_ROLLED_FORWARD
                  : o.action == MPK_TXN_ROLLED_BACK  ? MPK_MT_RECOVERY_ROLLED_BACK
                                                     : MPK_MT_RECOVERY_NONE;
    r->recovery_files = o.action == MPK_TXN_ROLLED_FORWARD ? o.files : o.removed;
  }
  if (dfd >= 0 && !ctx->shipped_txn) {
    mpk_error e;
    mpk_error_clear(&e);
    if (mpk_mt_record_load(dfd, inference_dir, &record, &e)) mpk_findings_problem(&p->found, &e);
  }
  if (!map || map->n_entries == 0 || n == 0) {
    json_decref(record);
    r->no_merged_weights = 1;
    r->ready = r->n_problems == 0;
    *out = r;
    return 0;
  }
  /* The stamp (stamp.c): written and trusted only where the gate may write — never by check, never
     from a package that ships device files, and never without hashing (presence_only). */
  bool stamping = (opts->use_stamp || opts->rehash) && dfd >= 0 && !ctx->read_only && !ctx->shipped_txn &&
                  !opts->presence_only;
  mpk_mt_stamp stamp = {0};
  if (stamping && !opts->rehash &&
      mpk_mt_stamp_load(dfd, inference_dir, &stamp, p->stamp_why, sizeof p->stamp_why) < 0)
    r->stamp_ignored = p->stamp_why;
  json_t *fresh = stamping ? json_object() : NULL; /* the next stamp's files */
  p->tensors = calloc(n, sizeof *p->tensors);
  p->hashing = calloc(n, sizeof *p->hashing);
  p->files = calloc(n, sizeof *p->files);
  mpk_mt_hash_job *jobs = calloc(n, sizeof *jobs);
  size_t *job_of = calloc(n, sizeof *job_of);
  int rc = 0;
  if (!p->tensors || !p->hashing || !p->files || !jobs || !job_of || (stamping && !fresh)) rc = MPK_ENOMEM;
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
      const char *rn = mpk_mt_role_name(t->role);
      /* Opened as it will be loaded: beneath the directory's handle, regular files only. */
      int fd = -1;
      struct stat st;
      mpk_error oe;
      mpk_error_clear(&oe);
      int orc = dfd < 0 ? MPK_ENOTFOUND
                        : mpk_open_read_at(dfd, inference_dir, loc, 0, "the inference directory", &fd, &st, &oe);
      if (orc == MPK_ENOTFOUND) {
        t->status = MPK_MT_TENSOR_MISSING;
        gate_problem(&p->found, MPK_ENOTFOUND, t->file, "merged weight of layer \"%.150s\" role \"%s\" is missing: %s",
                     t->layer, rn, loc);
        continue;
      }
      if (orc) {
        t->status = MPK_MT_TENSOR_UNREADABLE;
        gate_problem(&p->found, orc, t->file, "merged weight of layer \"%.150s\" role \"%s\" is refused: %s", t->layer,
                     rn, oe.message);
        continue;
      }
      close(fd);
      t->size = (uint64_t)st.st_size;
      t->size_ok = t->declared_bytes && t->size == t->declared_bytes;
      char side[4096], why[700];
      snprintf(side, sizeof side, "%s.sha256", loc);
      int s = mpk_mt_read_sidecar_at(dfd, inference_dir, side, t->sidecar, why, sizeof why);
      if (s < 0) {
        t->status = MPK_MT_TENSOR_BAD_SIDECAR;
        t->authority = MPK_MT_AUTH_SIDECAR;
        char sf[4200];
        snprintf(sf, sizeof sf, "%s.sha256", t->file);
        gate_problem(&p->found, MPK_EMALFORMED, sf, "the checksum sidecar of layer \"%.150s\" role \"%s\" %s", t->layer,
                     rn, why);
        continue;
      }
      if (opts->presence_only) {
        judge(p, r, t, record, loc, true);
        continue;
      }
      /* Unchanged since the stamp vouched for it: its digest, judged exactly as a computed one. */
      mpk_mt_gate_hashing *h = &p->hashing[k - 1];
      if (stamp.files && mpk_mt_stamp_lookup(&stamp, loc, &st, t->actual, &h->hashed_at_ms)) {
        h->from_stamp = 1;
        r->n_from_stamp++;
        if (mpk_mt_stamp_add(fresh, loc, t->actual, &st, h->hashed_at_ms)) rc = MPK_ENOMEM;
        judge(p, r, t, record, loc, false);
        continue;
      }
      jobs[nj].name = loc;
      job_of[nj++] = k - 1;
    }
  }
  if (!rc && mpk_mt_hash_at(dfd, inference_dir, jobs, nj, opts->workers)) rc = MPK_ENOMEM;
  bool stamp_dirty = false;
  for (size_t j = 0; !rc && j < nj; j++) {
    mpk_mt_gate_tensor *t = &p->tensors[job_of[j]];
    if (jobs[j].code) {
      t->status = MPK_MT_TENSOR_UNREADABLE;
      gate_problem(&p->found, jobs[j].code, t->file,
                   "merged weight of layer \"%.150s\" role \"%s\" could not be read: %s", t->layer,
                   mpk_mt_role_name(t->role), jobs[j].err.message);
      continue;
    }
    memcpy(t->actual, jobs[j].hex, sizeof t->actual);
    p->hashing[job_of[j]].hashed_at_ms = jobs[j].hashed_at_ms;
    r->n_hashed++;
    if (fresh && jobs[j].stable) {
      if (mpk_mt_stamp_add(fresh, jobs[j].name, jobs[j].hex, &jobs[j].st, jobs[j].hashed_at_ms)) rc = MPK_ENOMEM;
      stamp_dirty = true;
    }
    judge(p, r, t, record, jobs[j].name, false);
  }
  /* Anything hashed now is remembered. Still under the shared hold: no merge runs in between. A
     directory the gate cannot write to (read-only media) just has no stamp. */
  if (!rc && stamp_dirty) {
    mpk_error we;
    mpk_error_clear(&we);
    r->stamp_written = mpk_mt_stamp_write(dfd, inference_dir, fresh, NULL, &we) == 0;
  }
  json_decref(fresh);
  mpk_mt_stamp_free(&stamp);
  json_decref(record);
  free(jobs);
  free(job_of);
  r->tensors = p->tensors;
  r->hashing = p->hashing;
  r->n_tensors = k;
  if (!rc && p->found.oom) rc = MPK_ENOMEM;
  if (rc) {
    mpk_mt_gate_report_free(r);
    return mpk_fail(err, rc, inference_dir, NULL, rc == MPK_ENOMEM ? "out of memory" : "the load gate could not run");
  }
  r->ready = r->n_problems == 0;
  *out = r;
  return 0;
}

int mpk_mt_load_gate(const char *inference_dir, const mpk_mt_handoff *map, const mpk_mt_gate_options *opts,
                     mpk_mt_gate_report **out, mpk_error *err) {
  if (!inference_dir || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  /* A directory the caller named (its own path: links in it are the caller's); every file beneath
     it is then opened relative to this handle. */
  int dfd = open(inference_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc = mpk_mt_load_gate_at(dfd, inference_dir, map, opts, NULL, out, err);
  if (dfd >= 0) close(dfd);
  return rc;
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
    free(p->hashing);
    free(p);
  }
  free(r);
}
