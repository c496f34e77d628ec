/* mlc install: the MLC client of the fetch engine (docs/mlc-install.md, docs/fetch.md). What is MLC's
   is here and in install_read.c / install_name.c: where WebLLM finds the model, which documents are
   read and checked before any shard (as check checks them), the plan (every shard of
   tensor-cache.json with its size and MD5), the tree's name, the record, the no-op rule and the
   reuse of the installed tree's unchanged shards. The engine does the rest through its public API:
   the staging area and its lock, the verified and resumable download, the atomic commit and its
   crash recovery. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mlc/install.h"

#define MAX_CONNECTIONS 64

/* ---------------------------------------------------------------- the record */

static int make_record(const mpk_mlc_inst *s, const char *id, char **text, size_t *len, mpk_error *err) {
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  json_t *tok = json_array();
  for (size_t k = 0; k < s->n_tokenizer; k++) json_array_append_new(tok, json_string(s->tokenizer[k].name));
  json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:o, s:I, s:I, s:s}", "installId", id, "source", s->source,
                          "modelUrl", s->model_url, "name", s->name, "installedAt", when, "hasManifest",
                          s->manifest.data != NULL, "tokenizerFiles", tok, "files", (json_int_t)s->n, "bytes",
                          (json_int_t)s->total, "installer", "modelpkg " MPK_VERSION_STRING);
  if (doc) {
    json_object_set_new(doc, "library", s->lib.name ? json_string(s->lib.name) : json_null());
    json_object_set_new(doc, "librarySha256", s->lib.name ? json_string(s->lib_sha256) : json_null());
    json_object_set_new(doc, "librarySource", s->lib.name ? json_string(s->o.lib) : json_null());
  }
  int rc = doc ? mpk_json_write_document(doc, true, text, len, err)
               : mpk_fail(err, MPK_ENOMEM, MPK_MLC_INSTALL_RECORD, NULL, "out of memory");
  json_decref(doc);
  return rc;
}

/* ---------------------------------------------------------------- the installed tree */

/* The installed document `name` holds exactly these bytes. */
static int same_doc(const char *tree, const mpk_mlc_idoc *d, size_t max) {
  mpk_mapped m;
  if (mpk_map_beneath(tree, d->name, max, &m, NULL) != 0) return 0;
  int same = m.size == d->len && (d->len == 0 || memcmp(m.data, d->data, d->len) == 0);
  mpk_unmap_file(&m);
  return same;
}

static int same_string(const json_t *rec, const char *key, const char *want) {
  const json_t *v = json_object_get(rec, key);
  return want ? json_is_string(v) && strcmp(json_string_value(v), want) == 0 : json_is_null(v);
}

/* The installed tree is this model: its record names the same library (name and SHA-256), tokenizer
   files and manifest presence, and its documents are the source's, byte for byte. Nothing is hashed
   but the library, and that only with `verify`. */
static int installed_same(mpk_mlc_inst *s, mpk_fetch_stage *st, mpk_error *err) {
  uint8_t *rec = NULL;
  size_t len = 0;
  int rc = mpk_fetch_stage_read_installed(st, MPK_MLC_INSTALL_RECORD, &rec, &len, err);
  if (rc || !rec) return rc ? -1 : 0;
  json_t *r = NULL; /* core's strict parser: unreadable is simply not the same */
  mpk_error ignored;
  if (mpk_json_parse(rec, len, NULL, MPK_MLC_INSTALL_RECORD, &r, &ignored)) r = NULL;
  mpk_free(rec);
  const char *tree = mpk_fetch_stage_target(st);
  int same = json_is_object(r) && same_string(r, "library", s->lib.name) &&
             same_string(r, "librarySha256", s->lib.name ? s->lib_sha256 : NULL) &&
             json_is_true(json_object_get(r, "hasManifest")) == (s->manifest.data != NULL);
  const json_t *tok = json_object_get(r, "tokenizerFiles");
  same = same && json_is_array(tok) && json_array_size(tok) == s->n_tokenizer;
  for (size_t k = 0; same && k < s->n_tokenizer; k++)
    same = json_is_string(json_array_get(tok, k)) &&
           strcmp(json_string_value(json_array_get(tok, k)), s->tokenizer[k].name) == 0;
  json_decref(r);
  if (same && s->manifest.data) same = same_doc(tree, &s->manifest, MPK_MLC_INSTALL_DOC_MAX);
  if (same && !s->manifest.data) {
    char *p = mpk_path_join(tree, MPK_MLC_MANIFEST_FILENAME);
    struct stat sb;
    same = p && lstat(p, &sb) != 0;
    free(p);
  }
  if (same) same = same_doc(tree, &s->chat, MPK_MLC_INSTALL_DOC_MAX);
  if (same) same = same_doc(tree, &s->tc_doc, MPK_MLC_INSTALL_TC_MAX);
  for (size_t k = 0; same && k < s->n_tokenizer; k++)
    same = same_doc(tree, &s->tokenizer[k], MPK_MLC_INSTALL_TOKENIZER_MAX);
  if (same && s->lib.name) { /* present; its bytes re-hashed only when verifying */
    if (s->o.verify) same = same_doc(tree, &s->lib, MPK_MLC_INSTALL_LIB_MAX);
    else {
      char *p = mpk_path_join(tree, s->lib.name);
      struct stat sb;
      same = p && lstat(p, &sb) == 0 && S_ISREG(sb.st_mode) && (size_t)sb.st_size == s->lib.len;
      free(p);
    }
  }
  return same;
}

/* Shards of the installed tree that failed verification (by data path). */
typedef struct bad_list {
  char **paths;
  size_t n, cap;
} bad_list;

static void on_bad_shard(void *ctx, const mpk_error *e) {
  bad_list *b = ctx;
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 8;
    char **p = realloc(b->paths, cap * sizeof *p);
    if (!p) return;
    b->paths = p;
    b->cap = cap;
  }
  char *copy = strdup(e->file[0] ? e->file : e->message);
  if (copy) b->paths[b->n++] = copy;
}

/* A problem names the shard's path (TREE/DATA_PATH); a summary line names none of them. */
static int listed_bad(const bad_list *b, const char *data_path) {
  size_t dl = strlen(data_path);
  for (size_t i = 0; i < b->n; i++) {
    size_t pl = strlen(b->paths[i]);
    if (pl >= dl + 1 && strcmp(b->paths[i] + pl - dl, data_path) == 0 && b->paths[i][pl - dl - 1] == '/') return 1;
  }
  return 0;
}

/* Re-hash the installed shards against the source's tensor-cache.json (verify). */
static int verify_installed(mpk_mlc_inst *s, const char *tree, bad_list *bad) {
  mpk_error e;
  mpk_error_clear(&e);
  mpk_mlc_tensor_cache_verify(s->tc, tree, 0, NULL, NULL, on_bad_shard, bad, &e);
  return bad->n == 0 && e.code == 0;
}

/* ---------------------------------------------------------------- reusing the installed shards */

/* The stage holds an interrupted download (staging records in parts/): resuming it wins over
   copying the installed tree's shards (the engine removes staged files outside a plan). */
static int stage_has_parts(const char *cache_dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/.staging/%s/parts", cache_dir, name);
  DIR *d = opendir(path);
  if (!d) return 0;
  int any = 0;
  struct dirent *de;
  while (!any && (de = readdir(d))) any = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
  closedir(d);
  return any;
}

/* A changed model (or a repair): the shards the installed tree already holds with the same data
   path, size and MD5 are copied from it into the stage first — through the engine, from the tree as
   a directory source, each re-hashed while copied — so the download that follows finds them staged
   (re-hashed again, never trusted) and fetches only the others. Best effort: a failure here only
   means more is fetched. Returns the bytes copied. */
static uint64_t reuse_installed(mpk_mlc_inst *s, mpk_fetch_stage *st, const bad_list *bad) {
  const char *tree = mpk_fetch_stage_target(st);
  struct stat sb;
  if (lstat(tree, &sb) != 0 || !S_ISDIR(sb.st_mode) || stage_has_parts(s->o.cache_dir, s->name)) return 0;
  mpk_mapped m;
  if (mpk_map_beneath(tree, MPK_MLC_TENSOR_CACHE_FILENAME, MPK_MLC_INSTALL_TC_MAX, &m, NULL) != 0) return 0;
  mpk_mlc_tensor_cache *old = NULL;
  int rc = mpk_mlc_tensor_cache_parse(m.data, m.size, MPK_MLC_TENSOR_CACHE_FILENAME, &old, NULL);
  mpk_unmap_file(&m);
  if (rc) return 0;
  mpk_fetch_file *keep = calloc(s->n ? s->n : 1, sizeof *keep);
  size_t nk = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; keep && i < s->n; i++)
    for (size_t j = 0; j < old->n_shards; j++) {
      const mpk_mlc_shard *o = &old->shards[j];
      if (o->md5sum && strcmp(o->data_path, s->files[i].path) == 0 && o->nbytes == s->files[i].size &&
          strcmp(o->md5sum, s->files[i].digest) == 0 && !listed_bad(bad, o->data_path)) {
        keep[nk++] = s->files[i];
        bytes += s->files[i].size;
        break;
      }
    }
  mpk_fetch_source *local = NULL;
  if (nk && mpk_fetch_source_open(tree, NULL, &local, NULL) == 0) {
    mpk_fetch_options fo = MPK_FETCH_OPTIONS_INIT;
    fo.connections = s->o.connections;
    fo.digest_attempts = 1;
    fo.plan_name = "the installed tensor-cache.json";
    fo.on_event = s->o.on_event;
    fo.ctx = s->o.ctx;
    if (mpk_fetch_download(st, local, keep, nk, &fo, NULL, NULL) != 0) bytes = 0;
  } else {
    bytes = 0;
  }
  mpk_fetch_source_free(local);
  free(keep);
  mpk_mlc_tensor_cache_free(old);
  return bytes;
}

/* ---------------------------------------------------------------- entry points */

static int dup_out(char **dst, const char *src, mpk_error *err) {
  if (!src) return 0;
  if (!(*dst = strdup(src))) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  return 0;
}

int mpk_mlc_install(const char *source, const mpk_mlc_install_options *given, mpk_mlc_install_result *out,
                    mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!source || !given) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_mlc_inst s;
  memset(&s, 0, sizeof s);
  int rc = MPK_OPTIONS_READ(mpk_mlc_install_options, &s.o, given, err);
  if (rc) return rc;
  if (!s.o.cache_dir) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the cache directory is required");
  if (s.o.connections > MAX_CONNECTIONS)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "at most %d connections", MAX_CONNECTIONS);
  s.source = source;
  mpk_fetch_stage *st = NULL;
  char *record = NULL;
  size_t rlen = 0;
  bad_list bad = {0};
  mpk_fetch_result fr;
  memset(&fr, 0, sizeof fr);
  int replaced = 0, unchanged = 0;
  uint64_t copied = 0;
  /* 1. Everything but the shards: read, bounded, checked as check checks it; the plan refused
     before any shard is fetched (docs/mlc-install.md, "The order, and why"). */
  if ((rc = mpk_mlc_install_read(&s, err))) goto out;
  if ((rc = mpk_mlc_install_plan(&s, err))) goto out;
  /* 2. The stage and its lock (an interrupted commit finished first). */
  mpk_fetch_stage_options so = MPK_FETCH_STAGE_OPTIONS_INIT;
  so.record_name = MPK_MLC_INSTALL_RECORD;
  so.wait_for_lock = s.o.wait_for_lock;
  if ((rc = mpk_fetch_stage_open(s.o.cache_dir, s.name, &so, &st, err))) goto out;
  /* 3. The same model installed already: nothing to do (with verify: unless a shard is wrong). */
  int same = installed_same(&s, st, err);
  if (same < 0) {
    rc = err && err->code ? err->code : MPK_EIO;
    goto out;
  }
  if (same && (!s.o.verify || verify_installed(&s, mpk_fetch_stage_target(st), &bad))) {
    unchanged = 1;
    goto done;
  }
  /* 4. The shards: those the installed tree holds unchanged copied from it, the others fetched,
     each verified by its size and MD5 while it arrives. */
  copied = reuse_installed(&s, st, &bad);
  mpk_fetch_options fo = MPK_FETCH_OPTIONS_INIT;
  fo.connections = s.o.connections;
  fo.digest_attempts = s.o.digest_attempts;
  fo.plan_name = "tensor-cache.json";
  fo.on_event = s.o.on_event;
  fo.ctx = s.o.ctx;
  if ((rc = mpk_fetch_download(st, s.src, s.files, s.n, &fo, &fr, err))) goto out;
  /* 5. The commit: the documents as read and checked, the library, the record; one swap. */
  char id[33];
  mpk_fetch_new_id(id);
  if ((rc = make_record(&s, id, &record, &rlen, err))) goto out;
  mpk_fetch_doc docs[5 + MPK_MLC_INSTALL_MAX_TOKENIZER];
  size_t nd = 0;
  if (s.manifest.data) docs[nd++] = (mpk_fetch_doc){s.manifest.name, s.manifest.data, s.manifest.len};
  docs[nd++] = (mpk_fetch_doc){s.chat.name, s.chat.data, s.chat.len};
  docs[nd++] = (mpk_fetch_doc){s.tc_doc.name, s.tc_doc.data, s.tc_doc.len};
  for (size_t k = 0; k < s.n_tokenizer; k++)
    docs[nd++] = (mpk_fetch_doc){s.tokenizer[k].name, s.tokenizer[k].data, s.tokenizer[k].len};
  if (s.lib.name) docs[nd++] = (mpk_fetch_doc){s.lib.name, s.lib.data, s.lib.len};
  docs[nd++] = (mpk_fetch_doc){MPK_MLC_INSTALL_RECORD, record, rlen};
  if ((rc = mpk_fetch_commit(st, id, docs, nd, &replaced, err))) goto out;
done:
  if (out) {
    if ((rc = dup_out(&out->tree, mpk_fetch_stage_target(st), err)) || (rc = dup_out(&out->model_url, s.model_url, err)) ||
        (rc = dup_out(&out->library, s.lib.name, err)))
      goto out;
    out->has_manifest = s.manifest.data != NULL;
    out->files = s.n;
    out->total_bytes = s.total;
    /* the copies from the installed tree are staged when the download starts: the engine counts
       them among its reused bytes */
    out->copied_bytes = unchanged ? 0 : copied;
    out->reused_bytes = unchanged || fr.reused_bytes < copied ? 0 : fr.reused_bytes - copied;
    out->fetched_bytes = unchanged ? 0 : fr.total_bytes - fr.reused_bytes;
    out->retries = fr.retries;
    out->restarts = fr.restarts;
    out->replaced = replaced;
    out->unchanged = unchanged;
  }
out:
  if (rc && out) mpk_mlc_install_result_free(out);
  mpk_fetch_stage_close(st); /* releases the lock, on every path */
  for (size_t i = 0; i < bad.n; i++) free(bad.paths[i]);
  free(bad.paths);
  mpk_free(record);
  mpk_mlc_install_inst_free(&s);
  return rc;
}

void mpk_mlc_install_result_free(mpk_mlc_install_result *r) {
  if (!r) return;
  free(r->tree);
  free(r->model_url);
  free(r->library);
  memset(r, 0, sizeof *r);
}
