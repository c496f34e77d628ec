/* mlc install, before any shard is fetched (docs/mlc-install.md, "The order, and why"): the source
   opened where WebLLM 0.2.86 finds the model (cleanModelUrl, resolveModelPackageResourceURLs), its
   documents read (each bounded), the tokenizer files and the library read, and all of them checked
   as `modelpkg check --no-weights [--lib]` checks them — the same code, on the very bytes that will
   be committed — then the plan: every shard of tensor-cache.json with its size and MD5. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlc/install.h"

static int is_http(const char *s) { return strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0; }

/* How a document of the source is named in messages: its URL, or its path. */
static void shown(const mpk_mlc_inst *s, const char *name, char *out, size_t cap) {
  size_t n = strlen(s->base);
  snprintf(out, cap, "%s%s%s", s->base, n && s->base[n - 1] == '/' ? "" : "/", name);
}

static mpk_fetch_source_options source_options(const mpk_mlc_install_options *o) {
  mpk_fetch_source_options so = MPK_FETCH_SOURCE_OPTIONS_INIT;
  so.attempts = o->attempts;
  so.retry_delay_ms = o->retry_delay_ms;
  so.timeout_secs = (long)o->timeout_secs;
  so.low_speed_bytes = (long)o->low_speed_bytes;
  so.low_speed_secs = (long)o->low_speed_secs;
  so.ca_file = o->ca_file;
  return so;
}

static int read_doc(mpk_mlc_inst *s, const char *name, size_t max, mpk_mlc_idoc *d, mpk_error *err) {
  if (!(d->name = strdup(name))) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  return mpk_fetch_source_read(s->src, name, max, &d->data, &d->len, err);
}

/* ---------------------------------------------------------------- the source */

static int open_source(mpk_mlc_inst *s, mpk_error *err) {
  int rc;
  s->http = is_http(s->source);
  if (s->http) {
    /* WebLLM: cleanModelUrl, then the documents and the tensor cache's base relative to it. The
       manifest's chat_config and weights.manifest are literals ("mlc-chat-config.json",
       "tensor-cache.json"), so every document sits at the base: one source serves them all. */
    if ((rc = mpk_mlc_clean_model_url(s->source, &s->model_url, err))) return rc;
    mpk_mlc_resource_urls u;
    if ((rc = mpk_mlc_resource_urls_resolve(s->model_url, NULL, &u, err))) return rc;
    s->base = strdup(u.tensor_cache_base_url);
    mpk_mlc_resource_urls_free(&u);
    if (!s->base) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    if (strpbrk(s->base, "?#"))
      return mpk_fail(err, MPK_EUNSUPPORTED, s->source, NULL,
                      "the model's files would be at %s, a URL with a query or fragment: the installer fetches "
                      "<base>/<file>, so give the model URL without one",
                      s->base);
  } else {
    if (!(s->model_url = strdup(s->source)) || !(s->base = strdup(s->source)))
      return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  if ((rc = mpk_mlc_install_tree_name(s->o.name, s->model_url, s->http, s->name, err))) return rc;
  mpk_fetch_source_options so = source_options(&s->o);
  return mpk_fetch_source_open(s->base, &so, &s->src, err);
}

/* ---------------------------------------------------------------- the tokenizer files */

/* The names the installer itself writes at the top of the tree. */
static int reserved_name(const char *n) {
  return strcmp(n, MPK_MLC_MANIFEST_FILENAME) == 0 || strcmp(n, MPK_MLC_CHAT_CONFIG_FILENAME) == 0 ||
         strcmp(n, MPK_MLC_TENSOR_CACHE_FILENAME) == 0 || strcmp(n, MPK_MLC_INSTALL_RECORD) == 0;
}

static int plain_name(const char *n) {
  return n[0] && strcmp(n, ".") != 0 && strcmp(n, "..") != 0 && !strchr(n, '/') && !strchr(n, '\\');
}

/* WebLLM 0.2.86 (asyncLoadTokenizer) loads tokenizer.json when the chat config's tokenizer_files lists
   it, else tokenizer.model, from the model URL: that one is required. The other files the list names
   (tokenizer_config.json, vocab.json, ...: what native MLC runtimes read) are fetched when the source
   has them. Each is a file beside the chat config, at most 64 MiB, written into the tree at the commit. */
static int read_tokenizer(mpk_mlc_inst *s, const json_t *chat, mpk_error *err) {
  char file[600];
  shown(s, MPK_MLC_CHAT_CONFIG_FILENAME, file, sizeof file);
  const json_t *list = json_object_get(chat, "tokenizer_files");
  if (!list) return 0;
  if (!json_is_array(list))
    return mpk_fail(err, MPK_EMALFORMED, file, "/tokenizer_files", "expected an array of file names");
  const char *required = NULL;
  size_t i;
  const json_t *v;
  json_array_foreach(list, i, v) {
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/tokenizer_files/%zu", i);
    const char *n = json_string_value(v);
    if (!n) return mpk_fail(err, MPK_EMALFORMED, file, ptr, "expected a file name (a string)");
    if (!plain_name(n) || reserved_name(n))
      return mpk_fail(err, MPK_EMALFORMED, file, ptr,
                      "\"%s\" is not a tokenizer file beside the chat config (one file name, not one of the "
                      "installer's documents): refused, nothing was fetched",
                      n);
    if (strcmp(n, "tokenizer.json") == 0) required = n;
    else if (!required && strcmp(n, "tokenizer.model") == 0) required = n;
  }
  json_array_foreach(list, i, v) {
    const char *n = json_string_value(v);
    int dup = 0;
    for (size_t k = 0; k < s->n_tokenizer; k++) dup |= strcmp(s->tokenizer[k].name, n) == 0;
    if (dup) continue;
    if (s->n_tokenizer == MPK_MLC_INSTALL_MAX_TOKENIZER)
      return mpk_fail(err, MPK_ELIMIT, file, "/tokenizer_files", "more than %d tokenizer files",
                      MPK_MLC_INSTALL_MAX_TOKENIZER);
    mpk_mlc_idoc *d = &s->tokenizer[s->n_tokenizer];
    mpk_error e;
    mpk_error_clear(&e);
    int rc = read_doc(s, n, MPK_MLC_INSTALL_TOKENIZER_MAX, d, &e);
    if (rc == MPK_ENOTFOUND && strcmp(n, required ? required : "") != 0) { /* optional: skipped */
      free(d->name);
      memset(d, 0, sizeof *d);
      continue;
    }
    s->n_tokenizer++;
    if (rc) {
      if (err) *err = e;
      if (rc == MPK_ENOTFOUND)
        return mpk_fail(err, MPK_ENOTFOUND, e.file[0] ? e.file : n, NULL,
                        "the chat config's tokenizer_files lists %s, the tokenizer WebLLM loads, but the source has "
                        "no such file: refused, nothing was fetched",
                        n);
      return rc;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- the library */

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The library: an http(s) URL (fetched with the installer's retry options) or a file; at most 256 MiB
   (it is held in memory until the commit writes it into the tree under its file name). */
static int read_library(mpk_mlc_inst *s, mpk_error *err) {
  const char *lib = s->o.lib;
  const char *slash = strrchr(lib, '/');
  const char *base = slash ? slash + 1 : lib;
  char name[256];
  size_t w = 0;
  int rc;
  if (is_http(lib)) {
    if (strpbrk(lib, "?#"))
      return mpk_fail(err, MPK_EUNSUPPORTED, lib, NULL,
                      "a library URL with a query or fragment is not supported: give its plain URL, or download it and "
                      "give the file");
    for (const char *p = base; *p && w + 1 < sizeof name; p++) { /* the file name, percent-decoded */
      if (*p == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
        name[w++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
        p += 2;
      } else {
        name[w++] = *p;
      }
    }
    name[w] = '\0';
  } else {
    snprintf(name, sizeof name, "%s", base);
  }
  if (!plain_name(name) || reserved_name(name) || strlen(base) >= sizeof name)
    return mpk_fail(err, MPK_EINVAL, lib, NULL,
                    "the library's file name \"%s\" cannot be a file of the installed tree (one name, not one of the "
                    "installer's documents)",
                    name);
  for (size_t k = 0; k < s->n_tokenizer; k++)
    if (strcmp(s->tokenizer[k].name, name) == 0)
      return mpk_fail(err, MPK_EINVAL, lib, NULL, "the library's file name %s is also a tokenizer file's", name);
  if (!(s->lib.name = strdup(name))) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (is_http(lib)) {
    char *dir = strndup(lib, (size_t)(base - lib));
    if (!dir) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    mpk_fetch_source_options so = source_options(&s->o);
    mpk_fetch_source *src = NULL;
    rc = mpk_fetch_source_open(dir, &so, &src, err);
    if (!rc) rc = mpk_fetch_source_read(src, name, MPK_MLC_INSTALL_LIB_MAX, &s->lib.data, &s->lib.len, err);
    mpk_fetch_source_free(src);
    free(dir);
  } else {
    int fd;
    struct stat st;
    rc = mpk_open_read(NULL, lib, MPK_MLC_INSTALL_LIB_MAX, &fd, &st, err);
    if (rc) return rc;
    size_t n = (size_t)st.st_size, got = 0;
    if (!(s->lib.data = malloc(n + 1))) rc = mpk_fail(err, MPK_ENOMEM, lib, NULL, "out of memory");
    while (!rc && got < n) {
      ssize_t r = pread(fd, s->lib.data + got, n - got, (off_t)got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) rc = mpk_fail(err, MPK_EIO, lib, NULL, "cannot read: %s", r ? strerror(errno) : "it got shorter");
      else got += (size_t)r;
    }
    close(fd);
    s->lib.len = got;
  }
  if (rc) return rc;
  uint8_t d[MPK_SHA256_LEN];
  if (mpk_sha256(s->lib.data, s->lib.len, d)) return mpk_fail(err, MPK_EIO, lib, NULL, "SHA-256 failed");
  for (size_t i = 0; i < MPK_SHA256_LEN; i++) snprintf(s->lib_sha256 + 2 * i, 3, "%02x", d[i]);
  return 0;
}

/* ---------------------------------------------------------------- check, before any shard */

/* Replace every `from` in `text` (of capacity cap) by `to`. */
static void replace_all(char *text, size_t cap, const char *from, const char *to) {
  size_t fl = strlen(from), tl = strlen(to);
  if (!fl) return;
  char buf[2048];
  size_t w = 0;
  for (const char *p = text; *p && w + 1 < sizeof buf;) {
    if (strncmp(p, from, fl) == 0) {
      size_t k = tl < sizeof buf - 1 - w ? tl : sizeof buf - 1 - w;
      memcpy(buf + w, to, k);
      w += k;
      p += fl;
    } else {
      buf[w++] = *p++;
    }
  }
  if (w >= cap) w = cap - 1;
  memcpy(text, buf, w);
  text[w] = '\0';
}

static int write_file(const char *dir, const char *name, const void *data, size_t len) {
  char *path = mpk_path_join(dir, name);
  int fd = path ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
  free(path);
  if (fd < 0) return -1;
  int rc = mpk_write_all(fd, data, len);
  if (close(fd) != 0) rc = -1;
  return rc;
}

static void remove_file(const char *dir, const char *name) {
  char *path = mpk_path_join(dir, name);
  if (path) unlink(path);
  free(path);
}

/* `modelpkg check --no-weights [--lib LIB]` on the documents as read (copies in a private temporary
   directory), so install refuses exactly what check refuses, by the same code. Its first problem is
   the error, naming the source's file (not the copy), with the count of the others. */
static int check_documents(mpk_mlc_inst *s, mpk_error *err) {
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/modelpkg-mlc-install-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return mpk_fail(err, MPK_EIO, dir, NULL, "cannot create a temporary directory to check the documents: %s",
                    strerror(errno));
  const mpk_mlc_idoc *docs[] = {&s->manifest, &s->chat, &s->tc_doc, &s->lib};
  int rc = 0;
  for (size_t i = 0; i < 4 && !rc; i++)
    if (docs[i]->name && docs[i]->data && write_file(dir, docs[i]->name, docs[i]->data, docs[i]->len) != 0)
      rc = mpk_fail(err, MPK_EIO, dir, NULL, "cannot write %s to check it: %s", docs[i]->name, strerror(errno));
  char *lib_path = s->lib.name ? mpk_path_join(dir, s->lib.name) : NULL;
  mpk_mlc_report *r = NULL;
  if (!rc) {
    mpk_mlc_check_options co = MPK_MLC_CHECK_OPTIONS_INIT;
    co.no_weights = 1;
    co.lib_path = lib_path;
    rc = mpk_mlc_check(dir, &co, &r, err);
  }
  if (!rc && r->n_problems) {
    mpk_error e = r->problems[0];
    char more[128] = "";
    if (r->n_problems > 1)
      snprintf(more, sizeof more, " (and %zu more problem%s)", r->n_problems - 1, r->n_problems == 2 ? "" : "s");
    char base[1024];
    shown(s, "", base, sizeof base);
    if (lib_path) {
      replace_all(e.file, sizeof e.file, lib_path, s->o.lib);
      replace_all(e.message, sizeof e.message, lib_path, s->o.lib);
    }
    char prefix[4200];
    snprintf(prefix, sizeof prefix, "%s/", dir);
    replace_all(e.file, sizeof e.file, prefix, base);
    replace_all(e.message, sizeof e.message, prefix, base);
    replace_all(e.message, sizeof e.message, dir, s->base);
    rc = mpk_fail(err, e.code ? e.code : MPK_EMALFORMED, e.file, e.pointer[0] ? e.pointer : NULL,
                  "%s%s; nothing was fetched (modelpkg check refuses it too)", e.message, more);
  }
  mpk_mlc_report_free(r);
  for (size_t i = 0; i < 4; i++)
    if (docs[i]->name && docs[i]->data) remove_file(dir, docs[i]->name);
  rmdir(dir);
  free(lib_path);
  return rc;
}

/* ---------------------------------------------------------------- entry points */

int mpk_mlc_install_read(mpk_mlc_inst *s, mpk_error *err) {
  int rc = open_source(s, err);
  if (rc) return rc;
  char file[1200];
  /* 1. The manifest: optional (a legacy model has none), bounded, parsed with WebLLM's rules. */
  mpk_error e;
  mpk_error_clear(&e);
  rc = read_doc(s, MPK_MLC_MANIFEST_FILENAME, MPK_MLC_INSTALL_DOC_MAX, &s->manifest, &e);
  if (rc == MPK_ENOTFOUND) {
    free(s->manifest.name);
    memset(&s->manifest, 0, sizeof s->manifest);
  } else if (rc) {
    if (err) *err = e;
    return rc;
  } else {
    shown(s, MPK_MLC_MANIFEST_FILENAME, file, sizeof file);
    if ((rc = mpk_mlc_package_parse(s->manifest.data, s->manifest.len, file, 0, &s->pkg, err))) return rc;
    if (s->http) { /* where WebLLM finds the documents once the manifest is known: the same base */
      mpk_mlc_resource_urls u;
      if ((rc = mpk_mlc_resource_urls_resolve(s->model_url, s->pkg, &u, err))) return rc;
      int same = strcmp(u.tensor_cache_base_url, s->base) == 0;
      mpk_mlc_resource_urls_free(&u);
      if (!same) return mpk_fail(err, MPK_EUNSUPPORTED, file, "/weights/manifest", "the tensor cache is not beside the model");
    }
  }
  /* 2. The chat config: bounded, a JSON object. */
  if ((rc = read_doc(s, MPK_MLC_CHAT_CONFIG_FILENAME, MPK_MLC_INSTALL_DOC_MAX, &s->chat, err))) return rc;
  shown(s, MPK_MLC_CHAT_CONFIG_FILENAME, file, sizeof file);
  json_t *chat = NULL;
  if ((rc = mpk_json_parse(s->chat.data, s->chat.len, NULL, file, &chat, err))) return rc;
  if (!json_is_object(chat)) rc = mpk_fail(err, MPK_EMALFORMED, file, "", "expected a JSON object");
  /* 3. tensor-cache.json: bounded (64 MiB, check's bound), parsed and checked (shard paths confined). */
  if (!rc) rc = read_doc(s, MPK_MLC_TENSOR_CACHE_FILENAME, MPK_MLC_INSTALL_TC_MAX, &s->tc_doc, err);
  shown(s, MPK_MLC_TENSOR_CACHE_FILENAME, file, sizeof file);
  if (!rc) rc = mpk_mlc_tensor_cache_parse(s->tc_doc.data, s->tc_doc.len, file, &s->tc, err);
  /* 4. The tokenizer files; the library. */
  if (!rc) rc = read_tokenizer(s, chat, err);
  json_decref(chat);
  if (!rc && s->o.lib) rc = read_library(s, err);
  /* 5. All of it as check sees it: the manifest's parameter_schema_id against the weights (or the
     library's parameters), the library's _metadata bound to the manifest, model_type, quantization. */
  if (!rc) rc = check_documents(s, err);
  return rc;
}

int mpk_mlc_install_plan(mpk_mlc_inst *s, mpk_error *err) {
  char file[1200];
  shown(s, MPK_MLC_TENSOR_CACHE_FILENAME, file, sizeof file);
  const mpk_mlc_tensor_cache *tc = s->tc;
  if (!(s->files = calloc(tc->n_shards ? tc->n_shards : 1, sizeof *s->files)))
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  for (size_t i = 0; i < tc->n_shards; i++) {
    const mpk_mlc_shard *sh = &tc->shards[i];
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/records/%zu/md5sum", i);
    if (!sh->md5sum) /* fail closed: a shard that cannot be verified while it arrives is never installed */
      return mpk_fail(err, MPK_EMALFORMED, file, ptr,
                      "shard %s has no md5sum: it cannot be verified while it arrives, so the model is refused "
                      "before any shard is fetched",
                      sh->data_path);
    s->files[i] = (mpk_fetch_file){.path = sh->data_path, .size = sh->nbytes, .algo = MPK_DIGEST_MD5,
                                   .digest = sh->md5sum};
    s->total += sh->nbytes;
  }
  s->n = tc->n_shards;
  const char *reserved[4 + MPK_MLC_INSTALL_MAX_TOKENIZER + 1];
  size_t nr = 0;
  reserved[nr++] = MPK_MLC_MANIFEST_FILENAME;
  reserved[nr++] = MPK_MLC_CHAT_CONFIG_FILENAME;
  reserved[nr++] = MPK_MLC_TENSOR_CACHE_FILENAME;
  reserved[nr++] = MPK_MLC_INSTALL_RECORD;
  for (size_t k = 0; k < s->n_tokenizer; k++) reserved[nr++] = s->tokenizer[k].name;
  if (s->lib.name) reserved[nr++] = s->lib.name;
  /* A dataPath that would leave the base (tensor_cache_parse refuses it first), two shards at one
     path, a shard where the installer writes a document: refused, nothing fetched. */
  int rc = mpk_fetch_plan_check(s->files, s->n, file, reserved, nr, err);
  if (rc && err)
    snprintf(err->message + strlen(err->message), sizeof err->message - strlen(err->message),
             " (shards are fetched relative to %s and must stay beneath it); nothing was fetched", s->base);
  return rc;
}

static void free_doc(mpk_mlc_idoc *d) {
  free(d->name);
  mpk_free(d->data);
  memset(d, 0, sizeof *d);
}

void mpk_mlc_install_inst_free(mpk_mlc_inst *s) {
  free_doc(&s->manifest);
  free_doc(&s->chat);
  free_doc(&s->tc_doc);
  for (size_t k = 0; k < s->n_tokenizer; k++) free_doc(&s->tokenizer[k]);
  free(s->lib.name);
  free(s->lib.data); /* malloc'ed here, or by the source (mpk_free is free) */
  mpk_mlc_package_free(s->pkg);
  mpk_mlc_tensor_cache_free(s->tc);
  free(s->files);
  mpk_fetch_source_free(s->src);
  free(s->model_url);
  free(s->base);
}
