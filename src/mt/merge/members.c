/* Adapters as members of the merged model (docs/mt-merge.md, "Membership"): the document naming
   each adapter merged into an inference directory — its content digest, a copy of its bytes, the
   scale and orientation it was merged with and their evidence, when, and which entries — and the
   shipped tensors a --keep-base merge kept for mt restore. Written only inside the merge's (or the
   restore's) transaction, together with the tensors and the merge record. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/hash.h"
#include "mt/merge/merge.h"

#define MEMBERS_FORMAT "modelpkg-adapters"
#define MEMBERS_MAX_BYTES ((uint64_t)16 * 1024 * 1024)

void mpk_mt_adapter_copy_name(const char *sha256, char out[128]) {
  snprintf(out, 128, "%s%.64s.safetensors", MPK_MT_ADAPTER_PREFIX, sha256);
}

static bool hex64(const char *s) {
  if (!s || strlen(s) != 64) return false;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

static bool plain_name(const char *s) {
  return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && strlen(s) < 200;
}

static bool exact_keys(const json_t *o, const char *const *keys) {
  if (!json_is_object(o)) return false;
  size_t n = 0;
  for (; keys[n]; n++)
    if (!json_object_get(o, keys[n])) return false;
  return json_object_size(o) == n;
}

#define BAD(ptr, ...) mpk_fail(err, MPK_EMALFORMED, file, ptr, __VA_ARGS__)

static int parse_entry(const json_t *e, const char *file, const char *ptr, mpk_error *err) {
  static const char *const keys[] = {"dtype", "layer", "quantized", "scale", "scale_source", "shape", "tensors", NULL};
  if (!exact_keys(e, keys))
    return BAD(ptr, "an entry is an object of exactly dtype, layer, quantized, scale, scale_source, shape, tensors");
  const json_t *shape = json_object_get(e, "shape"), *ts = json_object_get(e, "tensors"), *v;
  if (!json_is_string(json_object_get(e, "dtype")) || !json_is_string(json_object_get(e, "layer")) ||
      !json_is_boolean(json_object_get(e, "quantized")) || !json_is_number(json_object_get(e, "scale")) ||
      !isfinite(json_number_value(json_object_get(e, "scale"))) ||
      !json_is_string(json_object_get(e, "scale_source")) || !json_is_array(shape) || !json_is_array(ts) ||
      !json_array_size(ts))
    return BAD(ptr, "an entry's dtype, layer and scale_source are strings, quantized a boolean, scale a finite number, "
                    "shape an array of integers and tensors a non-empty array of file names");
  size_t k;
  json_array_foreach(shape, k, v) if (!json_is_integer(v) || json_integer_value(v) < 0) return BAD(ptr, "shape: integers >= 0");
  json_array_foreach(ts, k, v) if (!plain_name(json_string_value(v)))
    return BAD(ptr, "tensors: plain file names of the inference directory");
  return 0;
}

int mpk_mt_members_parse(const void *data, size_t len, const char *file, json_t **out, mpk_error *err) {
  *out = NULL;
  if (!file) file = MPK_MT_MEMBERS;
  if (len > MEMBERS_MAX_BYTES)
    return mpk_fail(err, MPK_ELIMIT, file, NULL, "the adapter membership is %zu bytes, over its limit of %llu", len,
                    (unsigned long long)MEMBERS_MAX_BYTES);
  json_t *root = NULL;
  int rc = mpk_json_parse(data, len, NULL, file, &root, err);
  if (rc) return rc;
  static const char *const keys[] = {"adapters", "format", "kept_base", "version", NULL};
  static const char *const akeys[] = {"entries", "evidence", "file", "merged_at", "orientation", "sha256", "size", NULL};
  static const char *const kkeys[] = {"file", "sha256", "sidecar", NULL};
  const json_t *fmt = json_object_get(root, "format"), *ver = json_object_get(root, "version");
  if (!exact_keys(root, keys)) rc = BAD("", "expected exactly adapters, format, kept_base, version");
  else if (!json_is_string(fmt) || strcmp(json_string_value(fmt), MEMBERS_FORMAT) != 0)
    rc = BAD("/format", "expected \"" MEMBERS_FORMAT "\"");
  else if (!json_is_integer(ver) || json_integer_value(ver) != 1)
    rc = mpk_fail(err, MPK_EVERSION, file, "/version", "adapter membership version is not supported (this is 1)");
  const json_t *as = json_object_get(root, "adapters"), *a;
  if (!rc && !json_is_array(as)) rc = BAD("/adapters", "expected an array");
  size_t i;
  char ptr[96];
  if (!rc) json_array_foreach(as, i, a) {
      snprintf(ptr, sizeof ptr, "/adapters/%zu", i);
      const char *sha = json_string_value(json_object_get(a, "sha256")), *f = json_string_value(json_object_get(a, "file"));
      const char *orient = json_string_value(json_object_get(a, "orientation"));
      char want[128];
      if (!exact_keys(a, akeys)) {
        rc = BAD(ptr, "an adapter is an object of exactly entries, evidence, file, merged_at, orientation, sha256, size");
        break;
      }
      if (hex64(sha)) mpk_mt_adapter_copy_name(sha, want);
      if (!hex64(sha) || !f || strcmp(f, want) != 0 || !json_is_integer(json_object_get(a, "size")) ||
          json_integer_value(json_object_get(a, "size")) < 0 || !json_is_string(json_object_get(a, "evidence")) ||
          !json_is_string(json_object_get(a, "merged_at")) || !orient ||
          (strcmp(orient, "no_transpose") != 0 && strcmp(orient, "already_transposed_for_inference") != 0) ||
          !json_is_array(json_object_get(a, "entries"))) {
        rc = BAD(ptr, "sha256 is 64 lowercase hex digits, file \"" MPK_MT_ADAPTER_PREFIX "<sha256>.safetensors\", size "
                      "an integer, orientation no_transpose or already_transposed_for_inference, entries an array");
        break;
      }
      size_t k;
      const json_t *e;
      json_array_foreach(json_object_get(a, "entries"), k, e) {
        char eptr[128];
        snprintf(eptr, sizeof eptr, "%s/entries/%zu", ptr, k);
        if ((rc = parse_entry(e, file, eptr, err))) break;
      }
      if (rc) break;
    }
  const json_t *kept = json_object_get(root, "kept_base"), *kv;
  const char *name;
  if (!rc && !json_is_object(kept)) rc = BAD("/kept_base", "expected an object");
  if (!rc) json_object_foreach((json_t *)kept, name, kv) {
      char want[300], side[300];
      snprintf(want, sizeof want, "%s" MPK_MT_KEPT_SUFFIX, name);
      snprintf(side, sizeof side, "%s.sha256" MPK_MT_KEPT_SUFFIX, name);
      const json_t *sc = json_object_get(kv, "sidecar");
      const char *f = json_string_value(json_object_get(kv, "file"));
      if (!plain_name(name) || !exact_keys(kv, kkeys) || !f || strcmp(f, want) != 0 ||
          !hex64(json_string_value(json_object_get(kv, "sha256"))) ||
          !(json_is_null(sc) || (json_is_string(sc) && strcmp(json_string_value(sc), side) == 0))) {
        rc = BAD("/kept_base", "kept tensor \"%.200s\": {file: \"<tensor>" MPK_MT_KEPT_SUFFIX "\", sha256: 64 hex "
                               "digits, sidecar: null or \"<tensor>.sha256" MPK_MT_KEPT_SUFFIX "\"}",
                 name);
        break;
      }
    }
  if (rc) {
    json_decref(root);
    return rc;
  }
  *out = root;
  return 0;
}

int mpk_mt_members_load(int dfd, const char *shown, json_t **out, mpk_error *err) {
  *out = NULL;
  char file[1024];
  snprintf(file, sizeof file, "%s/%s", shown, MPK_MT_MEMBERS);
  int fd;
  struct stat st;
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_open_read_at(dfd, shown, MPK_MT_MEMBERS, MEMBERS_MAX_BYTES, "the inference directory", &fd, &st, &e);
  if (rc == MPK_ENOTFOUND) return 0;
  if (rc) return mpk_fail(err, rc, file, NULL, "the adapter membership cannot be read: %s", e.message);
  mpk_mapped m;
  if ((rc = mpk_map_fd(fd, file, (size_t)st.st_size, &m, err))) return rc;
  rc = mpk_mt_members_parse(m.data, m.size, file, out, err);
  mpk_unmap_file(&m);
  return rc;
}

/* ---------------------------------------------------------------- staging */

/* Copy the open file `in` into the staged `out`, hashing what was copied. */
static int copy_hash(int in, int out, char hex[65], const char *shown, mpk_error *err) {
  mpk_hasher hs, *h = &hs;
  memset(h, 0, sizeof *h);
  if (mpk_hasher_init(h, MPK_DIGEST_SHA256)) {
    mpk_hasher_free(h);
    return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  }
  enum { CHUNK = 1 << 20 };
  uint8_t *buf = malloc(CHUNK);
  int rc = buf ? 0 : mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  for (;;) {
    if (rc) break;
    ssize_t n = read(in, buf, CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = mpk_fail(err, MPK_EIO, shown, NULL, "cannot read: %s", strerror(errno));
      break;
    }
    if (n == 0) break;
    mpk_hasher_update(h, buf, (size_t)n);
    if (mpk_write_all(out, buf, (size_t)n)) rc = mpk_fail(err, MPK_EIO, shown, NULL, "cannot write: %s", strerror(errno));
  }
  free(buf);
  char dig[MPK_HASH_HEX_SIZE];
  if (mpk_hasher_final_hex(h, dig) && !rc) rc = mpk_fail(err, MPK_ENOMEM, shown, NULL, "cannot hash");
  mpk_hasher_free(h);
  snprintf(hex, 65, "%s", dig);
  return rc;
}

/* Stage `<name><suffix>` as a copy of `name` of the inference directory; its digest into hex. */
int mpk_mt_stage_copy_of(int dfd, const char *shown, const char *name, const char *target, mpk_txn *txn, char hex[65],
                         mpk_error *err) {
  int in;
  int rc = mpk_open_read_at(dfd, shown, name, 0, "the inference directory", &in, NULL, err);
  if (rc) return rc;
  int out;
  if (!(rc = mpk_txn_stage(txn, target, &out, err))) {
    char file[1024];
    snprintf(file, sizeof file, "%s/%s", shown, name);
    rc = copy_hash(in, out, hex, file, err);
    if (!rc) rc = mpk_txn_stage_done(txn, target, hex, err);
  }
  close(in);
  return rc;
}

static void utc_now(char out[32]) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Keep the shipped `loc` (and its sidecar) as <loc>.modelpkg-base: only bytes proven shipped. */
static int keep_one(merge_plan *p, const char *loc, const char *shipped, bool proven, json_t *kept, mpk_txn *txn,
                    mpk_error *err) {
  int dfd = p->inference_fd;
  const char *inf = p->loc.inference_dir;
  char target[300], side[300], side_target[320], hex[65];
  snprintf(target, sizeof target, "%s" MPK_MT_KEPT_SUFFIX, loc);
  snprintf(side, sizeof side, "%s.sha256", loc);
  snprintf(side_target, sizeof side_target, "%s" MPK_MT_KEPT_SUFFIX, side);
  if (!proven) {
    /* a frozen-base merge did not prove the file shipped: hash it first, keep it only when it is */
    int fd;
    if (mpk_open_read_at(dfd, inf, loc, 0, "the inference directory", &fd, NULL, NULL) != 0) return 0;
    int hrc = mpk_sha256_fd(fd, hex);
    close(fd);
    if (hrc || strcmp(hex, shipped) != 0) {
      mpk_findings_note(&p->notes, "%s: not kept (its bytes are not the shipped ones): mt restore re-fetches it", loc);
      return 0;
    }
  }
  int rc = mpk_mt_stage_copy_of(dfd, inf, loc, target, txn, hex, err);
  if (rc) return rc;
  if (strcmp(hex, shipped) != 0) /* changed since it was proven */
    return mpk_fail(err, MPK_EMISMATCH, loc, NULL, "the base changed while it was kept (sha256 %s, shipped %s)", hex,
                    shipped);
  int sfd;
  bool has_side = mpk_open_read_at(dfd, inf, side, 4096, "the inference directory", &sfd, NULL, NULL) == 0;
  if (has_side) {
    close(sfd);
    if ((rc = mpk_mt_stage_copy_of(dfd, inf, side, side_target, txn, hex, err))) return rc;
  }
  json_t *o = json_pack("{s:s, s:s, s:o}", "file", target, "sha256", shipped, "sidecar",
                        has_side ? json_string(side_target) : json_null());
  if (!o || json_object_set_new(kept, loc, o)) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  return 0;
}

int mpk_merge_stage_members(merge_plan *p, const mpk_mt_merge_options *o, const json_t *old, const json_t *record,
                            char (*digests)[MPK_MT_ROLE_COUNT][65], mpk_txn *txn, mpk_error *err) {
  uint8_t d[32];
  char sha[65], copy[128], when[32];
  mpk_sha256(p->adapter_bytes.data, p->adapter_bytes.size, d);
  mpk_hex(d, 32, sha);
  mpk_mt_adapter_copy_name(sha, copy);
  utc_now(when);
  int rc = mpk_txn_stage_bytes(txn, copy, p->adapter_bytes.data, p->adapter_bytes.size, err);
  if (rc) return rc;
  json_t *entries = json_array();
  json_t *kept = old ? json_deep_copy(json_object_get(old, "kept_base")) : json_object();
  bool oom = !entries || !kept;
  for (size_t i = 0; !oom && !rc && i < p->n_items; i++) {
    const merge_item *it = &p->items[i];
    json_t *ts = json_array();
    oom = !ts;
    for (int r = 0; !oom && !rc && r < MPK_MT_ROLE_COUNT; r++) {
      const char *loc = it->e->external_data_location[r];
      if (!loc || !digests[i][r][0]) continue;
      oom = json_array_append_new(ts, json_string(loc)) != 0;
      if (oom || !o->keep_base || json_object_get(kept, loc)) continue;
      const char *shipped = NULL, *merged = NULL;
      if (!mpk_mt_record_find(record, loc, &shipped, &merged) || !shipped) shipped = it->e->sha256[r];
      if (!shipped) {
        mpk_findings_note(&p->notes, "%s: not kept (its shipped digest is unknown)", loc);
        continue;
      }
      /* gate_bases proved every non-frozen base shipped; a frozen-base merge did not look */
      rc = keep_one(p, loc, shipped, !it->frozen, kept, txn, err);
    }
    json_t *e = oom ? NULL
                    : json_pack("{s:s, s:s, s:b, s:f, s:s, s:[I,I], s:o}", "dtype", it->dtype, "layer",
                                it->e->training_base_layer_name, "quantized", it->e->quantized, "scale", it->scale,
                                "scale_source", it->scale_source, "shape", (json_int_t)it->rows, (json_int_t)it->cols,
                                "tensors", ts);
    if (!e) json_decref(ts);
    oom = oom || !e || json_array_append_new(entries, e);
  }
  if (rc || oom) {
    json_decref(entries);
    json_decref(kept);
    return rc ? rc : mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  /* Every map entry is merged by every merge, so this adapter supersedes any earlier one. */
  json_t *doc = json_pack("{s:[{s:o, s:s, s:s, s:s, s:s, s:s, s:I}], s:s, s:o, s:i}", "adapters", "entries", entries,
                          "evidence", p->evidence, "file", copy, "merged_at", when, "orientation",
                          mpk_mt_orientation_name(p->orientation), "sha256", sha, "size",
                          (json_int_t)p->adapter_bytes.size, "format", MEMBERS_FORMAT, "kept_base", kept, "version", 1);
  if (!doc) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  /* jansson, not the Python writer: the scale is a real, written with 17 digits (exact round trip) */
  char *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17));
  json_decref(doc);
  if (!text) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  size_t len = strlen(text);
  char *nl = realloc(text, len + 2);
  if (!nl) {
    free(text);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  nl[len++] = '\n';
  nl[len] = '\0';
  rc = mpk_txn_stage_bytes(txn, MPK_MT_MEMBERS, nl, len, err);
  free(nl);
  return rc;
}

/* ---------------------------------------------------------------- sweeping */

static bool named(const json_t *members, const char *name) {
  size_t i;
  const json_t *a, *k;
  const char *key;
  json_array_foreach(json_object_get(members, "adapters"), i, a) if (strcmp(json_string_value(json_object_get(a, "file")), name) == 0)
    return true;
  json_object_foreach((json_t *)json_object_get(members, "kept_base"), key, k) {
    const char *f = json_string_value(json_object_get(k, "file")), *s = json_string_value(json_object_get(k, "sidecar"));
    if ((f && strcmp(f, name) == 0) || (s && strcmp(s, name) == 0)) return true;
  }
  return false;
}

void mpk_mt_members_sweep(int dfd, const json_t *members) {
  int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  size_t kl = sizeof MPK_MT_KEPT_SUFFIX - 1;
  bool removed = false;
  for (struct dirent *e; (e = readdir(d));) {
    const char *n = e->d_name;
    size_t len = strlen(n);
    bool ours = strncmp(n, MPK_MT_ADAPTER_PREFIX, sizeof MPK_MT_ADAPTER_PREFIX - 1) == 0 ||
                (len > kl && strcmp(n + len - kl, MPK_MT_KEPT_SUFFIX) == 0);
    if (ours && !named(members, n) && unlinkat(dfd, n, 0) == 0) removed = true;
  }
  closedir(d);
  if (removed) fsync(dfd);
}
