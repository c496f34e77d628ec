/* mt install: the MobileTransformers client of the fetch engine (src/fetch/, docs/fetch.md). What
   is MT's is here: the manifest read from the source and checked, the variant selected, the device
   files refused, the installed layout (mpk_mt_installed_path), the install record and the cache's
   naming (<cache>/<sanitized repo id>/). The engine does the rest: the staging area and its lock, the
   verified and resumable download, the commit and its crash recovery (docs/mt-install.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "mt/mt.h"
#include "mt/install/install.h"
#include "fetch/engine.h"
#include "fetch/source.h"

#define MAX_JOBS MPK_FETCH_MAX_JOBS

/* ---------------------------------------------------------------- documents read back */

bool mpk_mt_install_parse_ids(const void *data, size_t len, char id[65], char *repo_id, size_t repo_cap) {
  return mpk_fetch_parse_ids(data, len, id, repo_id, repo_cap);
}

uint64_t mpk_mt_install_parse_part(const void *data, size_t len, const char *sha256, uint64_t size, const char *source,
                                   uint64_t have, char validator[256]) {
  return mpk_fetch_parse_part(data, len, MPK_DIGEST_SHA256, sha256, size, source, have, validator);
}

/* ---------------------------------------------------------------- plan */

/* The merge's journal, temporaries and record are written only on the device, inside modelpkg's own merge
   transaction, and so is the load gate's verification stamp: a package that lists either (as any file's last segment) is refused before anything
   is fetched — never installed, so never replayed or trusted (docs/SECURITY.md). */
static const char *device_file_kind(const char *base) {
  return strcmp(base, MPK_MT_MERGE_RECORD) == 0                                  ? "a merge record"
         : strcmp(base, MPK_MT_REFERENCE_INSTALL_RECORD) == 0                    ? "an install record"
         : strncmp(base, MPK_MT_STAMP_FILE, sizeof MPK_MT_STAMP_FILE - 1) == 0 ? "a verification stamp"
                                                                                : "a merge transaction file";
}

static int refuse_device_files(const mpk_mt_manifest *m, mpk_error *err) {
  for (size_t i = 0; i < m->n_files; i++) {
    const char *p = m->files[i].path, *slash = strrchr(p, '/'), *base = slash ? slash + 1 : p;
    if (!mpk_mt_is_device_file(base)) continue;
    mpk_path ptr;
    mpk_path_init(&ptr);
    mpk_path_push_key(&ptr, m->files[i].has_size ? "fileSizes" : "sha256");
    mpk_path_push_key(&ptr, p);
    return mpk_fail(err, MPK_EMALFORMED, MPK_MT_MANIFEST_FILENAME, ptr.buf,
                    "lists %s, %s: those are written only on the device by modelpkg (its merge, its load gate or "
                    "its installer), never shipped in a package; an install source carrying one is refused",
                    p, device_file_kind(base));
  }
  for (size_t i = 0; i < m->n_required_files; i++) {
    const char *p = m->required_files[i], *slash = strrchr(p, '/'), *base = slash ? slash + 1 : p;
    if (!mpk_mt_is_device_file(base)) continue;
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/requiredFiles/%zu", i);
    return mpk_fail(err, MPK_EMALFORMED, MPK_MT_MANIFEST_FILENAME, ptr,
                    "lists %s, %s, written only on the device by modelpkg, never shipped in a package; an "
                    "install source carrying one is refused",
                    p, device_file_kind(base));
  }
  return 0;
}


typedef struct inst {
  const mpk_mt_install_options *o;
  mpk_mt_download_plan *plan;
  mpk_fetch_file *files; /* the engine's plan: package path, installed path, size, SHA-256 */
  size_t n;
  uint64_t total;
} inst;

static int plan(inst *s, const mpk_mt_manifest *m, const mpk_mt_variant *v, mpk_error *err) {
  /* core + checksums + the features (default inference), each file with its size and digest: a
     file that cannot be verified fails the plan, before anything is fetched. */
  int rc = refuse_device_files(m, err);
  if (rc) return rc;
  mpk_mt_plan_options po = {.features = s->o->features, .n_features = s->o->n_features};
  rc = mpk_mt_plan_download(m, v->id, &po, &s->plan, err);
  if (rc) return rc;
  const mpk_mt_download_plan *p = s->plan;
  if (!(s->files = calloc(p->n_files ? p->n_files : 1, sizeof *s->files)))
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  for (size_t i = 0; i < p->n_files && !rc; i++) {
    const mpk_mt_planned_file *f = &p->files[i];
    if (!f->has_size || !f->sha256) /* the plan refuses these already; never trust one anyway */
      return mpk_fail(err, MPK_EMALFORMED, MPK_MT_MANIFEST_FILENAME, NULL, "planned file %s cannot be verified", f->path);
    char *dest = NULL;
    s->n = i + 1;
    rc = mpk_mt_installed_path(v, f->path, &dest, err);
    s->files[i] = (mpk_fetch_file){.path = f->path, .dest = dest, .size = f->size, .algo = MPK_DIGEST_SHA256,
                                   .digest = f->sha256};
  }
  s->total = p->total_bytes;
  if (rc) return rc;
  /* Two files at one installed path, a file where another needs a directory, or one where the
     installer writes its own documents: refused. */
  static const char *const reserved[] = {MPK_MT_MANIFEST_FILENAME, MPK_MT_INSTALL_RECORD,
                                         MPK_MT_REFERENCE_INSTALL_RECORD};
  return mpk_fetch_plan_check(s->files, s->n, MPK_MT_MANIFEST_FILENAME, reserved, 3, err);
}

/* ---------------------------------------------------------------- events and the record */

static int emit(const inst *s, mpk_mt_install_event_kind kind, uint64_t done) {
  if (!s->o->on_event) return 0;
  mpk_mt_install_event ev = {.kind = kind, .done = done, .total = s->total, .files = s->n};
  return s->o->on_event(s->o->ctx, &ev);
}

/* The engine's events, as mt install's. */
static int on_fetch_event(void *ctx, const mpk_fetch_event *e) {
  const inst *s = ctx;
  mpk_mt_install_event_kind kind = e->kind == MPK_FETCH_FILE_START  ? MPK_MT_INSTALL_FILE_START
                                   : e->kind == MPK_FETCH_FILE_DONE ? MPK_MT_INSTALL_FILE_DONE
                                   : e->kind == MPK_FETCH_RETRY     ? MPK_MT_INSTALL_RETRY
                                                                    : MPK_MT_INSTALL_BYTES;
  mpk_mt_install_event ev = {.kind = kind, .file = e->file, .file_done = e->file_done, .file_size = e->file_size,
                             .done = e->done, .total = e->total, .files = e->files, .message = e->message};
  return s->o->on_event(s->o->ctx, &ev);
}

/* The install record's bytes (malloc'ed). `now_ms`: the install's time, the same in both records. */
static int make_record(const inst *s, const mpk_mt_variant *v, const char *id, const char *source, int64_t now_ms,
                       char **text, size_t *len, mpk_error *err) {
  char when[32];
  time_t now = (time_t)(now_ms / 1000);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  json_t *feat = json_array();
  for (size_t i = 0; i < s->plan->n_features; i++) json_array_append_new(feat, json_string(s->plan->features[i]));
  json_t *doc = json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:I, s:I, s:s}", "installId", id, "repoId", s->o->repo_id,
                          "variant", v->id, "features", feat, "installedAt", when, "source", source, "files",
                          (json_int_t)s->n, "bytes", (json_int_t)s->total, "installer", "modelpkg " MPK_VERSION_STRING);
  int rc = doc ? mpk_json_write_document(doc, true, text, len, err)
               : mpk_fail(err, MPK_ENOMEM, MPK_MT_INSTALL_RECORD, NULL, "out of memory");
  json_decref(doc);
  return rc;
}

/* ---------------------------------------------------------------- the variant and the manifest's rules */

static int default_variant(const char *cache_dir, const char *name, const mpk_mt_manifest *m, const mpk_mt_variant **v,
                           mpk_error *err) {
  char *target = mpk_path_join(cache_dir, name);
  if (!target) return mpk_fail(err, MPK_ENOMEM, cache_dir, NULL, "out of memory");
  mpk_mt_tree t = {0};
  int rc = 0;
  if (mpk_is_dir(target)) rc = mpk_mt_tree_open(target, &t, err);
  if (!rc) rc = mpk_mt_tree_variant(&t, m, NULL, MPK_MT_MANIFEST_FILENAME, v, err);
  if (rc == MPK_EMALFORMED && t.installed && t.variant)
    rc = mpk_fail(err, MPK_ENOTFOUND, MPK_MT_MANIFEST_FILENAME, "/variants",
                  "the installed variant \"%s\" (%s) is not among this package's variants: name one with --variant",
                  t.variant, t.record_file ? t.record_file : target);
  mpk_mt_tree_free(&t);
  free(target);
  return rc;
}

/* The manifest's own rules, as check applies them (mpk_mt_check_manifest), before a byte is
   fetched: install never accepts a package that check rejects for its manifest. */
static int validate(const mpk_mt_manifest *m, const mpk_mt_variant *v, mpk_error *err) {
  mpk_mt_check_options co = {.struct_size = sizeof co, .variant = v->id};
  mpk_mt_report *r = NULL;
  int rc = mpk_mt_check_manifest(m, MPK_MT_MANIFEST_FILENAME, &co, &r, err);
  if (rc) return rc;
  if (r->n_problems) {
    const mpk_error *e = &r->problems[0];
    char more[96] = "";
    if (r->n_problems > 1)
      snprintf(more, sizeof more, " (and %zu more problem%s: modelpkg check lists them)", r->n_problems - 1,
               r->n_problems == 2 ? "" : "s");
    rc = mpk_fail(err, e->code ? e->code : MPK_EMALFORMED, e->file, e->pointer[0] ? e->pointer : NULL,
                  "%s%s; nothing was fetched", e->message, more);
  }
  mpk_mt_report_free(r);
  return rc;
}

/* ---------------------------------------------------------------- entry points */

int mpk_mt_install_recover(const char *cache_dir, const char *repo_id, int *recovered, mpk_error *err) {
  if (recovered) *recovered = 0;
  if (!cache_dir || !repo_id) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  char name[MPK_MT_REPO_DIR_MAX + 1];
  int rc = mpk_mt_sanitize_repo_id(repo_id, name, sizeof name, err);
  if (rc) return rc;
  return mpk_fetch_recover(cache_dir, name, MPK_MT_INSTALL_RECORD, recovered, err);
}

int mpk_mt_manifest_open_source(const char *source, mpk_mt_manifest **out, mpk_error *err) {
  if (!source || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  mpk_src *src = NULL;
  uint8_t *data = NULL;
  size_t len = 0;
  int rc = mpk_src_open(source, NULL, &src, err);
  if (!rc) rc = mpk_src_read_small(src, MPK_MT_MANIFEST_FILENAME, MPK_MT_MANIFEST_MAX_BYTES, &data, &len, err);
  if (!rc) {
    char *url = mpk_src_url(src, MPK_MT_MANIFEST_FILENAME);
    rc = mpk_mt_manifest_parse(data, len, url ? url : MPK_MT_MANIFEST_FILENAME, out, err);
    free(url);
  }
  free(data);
  mpk_src_free(src);
  return rc;
}

int mpk_mt_install(const char *source, const mpk_mt_install_options *o, mpk_mt_install_result *out, mpk_error *err) {
  return mpk_mt_install_ex(source, o, NULL, out, err);
}

int mpk_mt_install_ex(const char *source, const mpk_mt_install_options *given, const mpk_mt_install_test *test,
                      mpk_mt_install_result *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!source) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the source and the options are required");
  mpk_mt_install_options opts;
  int rc = MPK_OPTIONS_READ_GROWN(mpk_mt_install_options, connections, &opts, given, err);
  if (rc) return rc;
  const mpk_mt_install_options *o = &opts;
  if (!o->repo_id || !o->cache_dir)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the source, repo id and cache directory are required");
  if (o->jobs > MAX_JOBS) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "at most %d jobs", MAX_JOBS);
  char name[MPK_MT_REPO_DIR_MAX + 1];
  rc = mpk_mt_sanitize_repo_id(o->repo_id, name, sizeof name, err);
  if (rc) return rc;
  if (strcmp(name, MPK_FETCH_STAGING_DIR) == 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "repo id %s would name the installer's staging directory", o->repo_id);

  inst s = {.o = o};
  mpk_src *src = NULL;
  mpk_fetch_stage *st = NULL;
  mpk_mt_manifest *m = NULL;
  mpk_mt_selection *sel = NULL;
  uint8_t *mdata = NULL, *trec = NULL;
  char *record = NULL, *refrec = NULL;
  size_t mlen = 0, tlen = 0, rlen = 0, refrec_len = 0;
  int replaced = 0;
  mpk_fetch_result fr;
  mpk_src_retry retry = {.attempts = o->attempts,
                         .base_ms = o->retry_delay_ms,
                         .deadline_secs = o->timeout_secs,
                         .low_speed_bytes = o->low_speed_bytes,
                         .low_speed_secs = o->low_speed_secs,
                         .ca_file = o->ca_file};
  /* 1. The manifest, bounded, version-gated and parsed; the plan, refused before any fetch. */
  if ((rc = mpk_src_open(source, &retry, &src, err))) goto out;
  if ((rc = mpk_src_read_small(src, MPK_MT_MANIFEST_FILENAME, MPK_MT_MANIFEST_MAX_BYTES, &mdata, &mlen, err))) goto out;
  char *murl = mpk_src_url(src, MPK_MT_MANIFEST_FILENAME);
  rc = mpk_mt_manifest_parse(mdata, mlen, murl ? murl : MPK_MT_MANIFEST_FILENAME, &m, err);
  free(murl);
  if (rc) goto out;
  const mpk_mt_variant *v = NULL;
  if (o->variant) {
    if (!(v = mpk_mt_manifest_variant(m, o->variant))) {
      rc = mpk_fail(err, MPK_ENOTFOUND, MPK_MT_MANIFEST_FILENAME, "/variants", "no variant %s", o->variant);
      goto out;
    }
  } else if (!o->select) {
    /* No variant and no device: the one default rule (check and merge use it too) — the variant
       the cache's install of this repo records, else the manifest's defaultVariant. */
    if ((rc = default_variant(o->cache_dir, name, m, &v, err))) goto out;
  } else {
    /* Selected for the device; the storage budget is the cache's free space unless given. */
    mpk_mt_select_options so;
    if ((rc = MPK_OPTIONS_READ(mpk_mt_select_options, &so, o->select, err))) goto out;
    so.features = o->features;
    so.n_features = o->n_features;
    if (!so.free_bytes.present) {
      struct statvfs vfs;
      char probe[4096];
      snprintf(probe, sizeof probe, "%s", o->cache_dir);
      while (statvfs(probe, &vfs) != 0) {
        char *slash = strrchr(probe, '/');
        if (!slash || slash == probe) {
          snprintf(probe, sizeof probe, "%s", slash == probe ? "/" : ".");
          if (statvfs(probe, &vfs) != 0) vfs.f_bavail = 0, vfs.f_frsize = 0;
          break;
        }
        *slash = '\0';
      }
      uint64_t avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
      if (vfs.f_frsize && avail <= (uint64_t)MPK_SAFE_INT_MAX) {
        so.free_bytes.present = 1;
        so.free_bytes.value = (int64_t)avail;
      }
    }
    if ((rc = mpk_mt_select(m, &so, &sel, err))) goto out;
    v = sel->chosen;
  }
  if (out && !(out->variant = strdup(v->id))) {
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    goto out;
  }
  if ((rc = validate(m, v, err))) goto out;
  if ((rc = plan(&s, m, v, err))) goto out;
  if (emit(&s, MPK_MT_INSTALL_PLANNED, 0)) {
    rc = mpk_fail(err, MPK_ECANCELLED, NULL, NULL, "cancelled");
    goto out;
  }
  /* 2. Staging area and the lock; what an interrupted install left is finished or kept. */
  mpk_fetch_stage_options so = {.struct_size = sizeof so, .record_name = MPK_MT_INSTALL_RECORD,
                                .wait_for_lock = o->wait_for_lock};
  if ((rc = mpk_fetch_stage_open(o->cache_dir, name, &so, &st, err))) goto out;
  if (test) mpk_fetch_stage_set_test(st, test->stop_after, test->no_exchange);
  if ((rc = mpk_fetch_stage_read_installed(st, MPK_MT_INSTALL_RECORD, &trec, &tlen, err))) goto out;
  {
    char other[1024], tid[65];
    mpk_mt_install_parse_ids(trec, tlen, tid, other, sizeof other);
    if (other[0] && strcmp(other, o->repo_id) != 0) {
      rc = mpk_fail(err, MPK_EMISMATCH, mpk_fetch_stage_target(st), NULL,
                    "holds repo %s, not %s (both sanitize to %s): refusing to replace it", other, o->repo_id, name);
      goto out;
    }
  }
  /* 3. The files, `jobs` at a time, verified against the manifest's SHA-256. */
  mpk_fetch_options fo = {.struct_size = sizeof fo, .jobs = o->jobs, .connections = o->connections, .digest_attempts = o->digest_attempts,
                          .plan_name = "the manifest", .on_event = o->on_event ? on_fetch_event : NULL, .ctx = &s};
  if ((rc = mpk_fetch_download(st, src, s.files, s.n, &fo, &fr, err))) goto out;
  /* 3b. An update over a merged install: its adapters re-applied to the new tree, or dropped. */
  if ((rc = mpk_mt_install_reapply(v, m, st, out, err))) goto out;
  /* 4. The commit: the manifest as read, the install record, then the engine's swap. */
  char id[33];
  mpk_fetch_new_id(id);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  if ((rc = make_record(&s, v, id, mpk_src_location(src), now_ms, &record, &rlen, err))) goto out;
  /* and the reference runtime's record, so its cache index sees the install (docs/mt-install.md) */
  if ((rc = mpk_mt_reference_record(o->repo_id, v->id, s.plan->features, s.plan->n_features, now_ms, &refrec,
                                    &refrec_len, err)))
    goto out;
  mpk_fetch_doc docs[] = {{MPK_MT_MANIFEST_FILENAME, mdata, mlen},
                          {MPK_MT_INSTALL_RECORD, record, rlen},
                          {MPK_MT_REFERENCE_INSTALL_RECORD, refrec, refrec_len}};
  rc = mpk_fetch_commit(st, id, docs, 3, &replaced, err);
  if (rc == MPK_FETCH_STOPPED) rc = MPK_MT_INSTALL_STOPPED;
  if (rc) goto out;
  emit(&s, MPK_MT_INSTALL_COMMITTED, s.total);
  if (out) {
    out->repo_dir = strdup(mpk_fetch_stage_target(st));
    out->files = s.n;
    out->total_bytes = s.total;
    out->reused_bytes = fr.reused_bytes;
    out->retries = fr.retries;
    out->restarts = fr.restarts;
    out->replaced = replaced;
  }
out:
  if (rc && out) mpk_mt_install_result_free(out);
  mpk_fetch_stage_close(st); /* releases the lock, on every path */
  for (size_t i = 0; i < s.n; i++) free((char *)s.files[i].dest);
  free(s.files);
  mpk_mt_download_plan_free(s.plan);
  mpk_mt_selection_free(sel);
  mpk_mt_manifest_free(m);
  free(mdata);
  free(trec);
  mpk_free(record);
  mpk_free(refrec);
  mpk_src_free(src);
  return rc;
}

void mpk_mt_install_result_free(mpk_mt_install_result *r) {
  if (!r) return;
  free(r->repo_dir);
  free(r->variant);
  for (size_t i = 0; i < r->n_adapters; i++) {
    free(r->adapters[i].sha256);
    free(r->adapters[i].reason);
  }
  free(r->adapters);
  memset(r, 0, sizeof *r);
}
