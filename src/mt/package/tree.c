/* What a directory holds: a package (variants/<id>/...) or an installed model — the tree an
   installer writes, <cache>/<sanitized repo id>/{inference,train,embedding,tokenizer}/ with the
   manifest, checksums.json and the install records beside them (spec 001, "Package layout"). One
   notion for every command: the variant recorded at install, and where each package path of the
   manifest is in the tree (mpk_mt_tree_path). Rules: docs/mt-installed.md. */
#define _DEFAULT_SOURCE /* strptime, timegm */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mt/mt.h"

#define RECORD_MAX ((uint64_t)1 << 20) /* an install record is a few hundred bytes */

/* ---------------------------------------------------------------- installed paths */

static const char *const stages[] = {"embedding", "inference", "tokenizer", "train"};

/* The stage whose package directory holds `pkg`, and the rest of the path after it (NULL: none). */
static const char *stage_of(const mpk_mt_variant *v, const char *pkg, const char **rest) {
  for (size_t i = 0; i < sizeof stages / sizeof *stages; i++) {
    const char *dir = mpk_mt_variant_path(v, stages[i]);
    size_t dl = dir ? strlen(dir) : 0;
    if (dl && strncmp(pkg, dir, dl) == 0 && (pkg[dl] == '/' || pkg[dl] == '\0')) { /* a file in it, or itself */
      *rest = pkg + dl;
      return stages[i];
    }
  }
  return NULL;
}

int mpk_mt_installed_path(const mpk_mt_variant *v, const char *pkg, char **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (!v || !pkg) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  char ck[600];
  int n = snprintf(ck, sizeof ck, "variants/%s/" MPK_MT_CHECKSUMS_FILENAME, v->id);
  const char *rest = NULL, *stage = NULL;
  if (n > 0 && (size_t)n < sizeof ck && strcmp(pkg, ck) == 0) {
    *out = strdup(MPK_MT_CHECKSUMS_FILENAME);
  } else if ((stage = stage_of(v, pkg, &rest))) {
    size_t len = strlen(stage) + strlen(rest) + 1;
    if ((*out = malloc(len))) snprintf(*out, len, "%s%s", stage, rest);
  } else {
    *out = strdup(pkg);
  }
  return *out ? 0 : mpk_fail(err, MPK_ENOMEM, pkg, NULL, "out of memory");
}

char *mpk_mt_tree_path(const mpk_mt_tree *t, const mpk_mt_variant *v, const char *pkg) {
  if (!t || !t->installed || !v) return strdup(pkg);
  char *out = NULL;
  mpk_mt_installed_path(v, pkg, &out, NULL);
  return out;
}

bool mpk_mt_tree_holds(const mpk_mt_tree *t, const mpk_mt_variant *v, const char *pkg) {
  if (!t || !t->installed) return true;
  /* Another variant's files are not installed; neither is a stage the install did not plan, which
     the caller learns from the file system. */
  if (strncmp(pkg, "variants/", 9) == 0) {
    size_t n = strlen(v->id);
    const char *rest;
    return (strncmp(pkg + 9, v->id, n) == 0 && pkg[9 + n] == '/') || stage_of(v, pkg, &rest);
  }
  return true;
}

/* ---------------------------------------------------------------- the records */

void mpk_mt_tree_free(mpk_mt_tree *t) {
  if (!t) return;
  free(t->variant);
  free(t->repo_id);
  free(t->install_id);
  free(t->source);
  free(t->record_file);
  for (size_t i = 0; i < t->n_features; i++) free(t->features[i]);
  free(t->features);
  memset(t, 0, sizeof *t);
}

/* A record beneath the tree: *root NULL when absent (0), else the parsed object. */
static int read_record(int dfd, const char *dir, const char *name, json_t **root, char **file, mpk_error *err) {
  *root = NULL;
  int fd = -1;
  struct stat st;
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_open_read_at(dfd, dir, name, RECORD_MAX, "the installed tree", &fd, &st, &e);
  if (rc == MPK_ENOTFOUND) return 0;
  if (!(*file = mpk_path_join(dir, name))) rc = MPK_ENOMEM;
  if (rc) {
    if (fd >= 0) close(fd);
    if (err) *err = e;
    return rc == MPK_ENOMEM ? mpk_fail(err, rc, dir, NULL, "out of memory") : rc;
  }
  mpk_mapped m;
  if ((rc = mpk_map_fd(fd, *file, (size_t)st.st_size, &m, err))) return rc;
  rc = mpk_json_parse(m.data, m.size, NULL, *file, root, err);
  mpk_unmap_file(&m);
  if (!rc && !json_is_object(*root)) {
    json_decref(*root);
    *root = NULL;
    rc = mpk_fail(err, MPK_EMALFORMED, *file, "", "an install record is a JSON object");
  }
  return rc;
}

/* A string member: absent is NULL; present, it must be a string. */
static int member_string(const json_t *o, const char *key, const char *file, char **out, mpk_error *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) return 0;
  char ptr[64];
  snprintf(ptr, sizeof ptr, "/%s", key);
  if (!json_is_string(v)) return mpk_fail(err, MPK_EMALFORMED, file, ptr, "must be a string");
  if (!(*out = strdup(json_string_value(v)))) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  return 0;
}

static int member_features(const json_t *o, const char *file, mpk_mt_tree *t, mpk_error *err) {
  const json_t *a = json_object_get(o, "features");
  if (!a || json_is_null(a)) return 0;
  if (!json_is_array(a)) return mpk_fail(err, MPK_EMALFORMED, file, "/features", "must be an array of strings");
  size_t n = json_array_size(a);
  if (!(t->features = calloc(n ? n : 1, sizeof *t->features))) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const json_t *s = json_array_get(a, i);
    if (!json_is_string(s)) return mpk_fail(err, MPK_EMALFORMED, file, "/features", "item %zu is not a string", i);
    if (!(t->features[i] = strdup(json_string_value(s)))) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
    t->n_features = i + 1;
  }
  return 0;
}

/* "2026-12-02T01:33:20Z" → epoch ms (0 when it is not that shape). */
static int64_t iso_ms(const char *s) {
  struct tm tm = {0};
  const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
  if (!end || *end) return 0;
  time_t t = timegm(&tm);
  return t < 0 ? 0 : (int64_t)t * 1000;
}

/* modelpkg's record: installId, repoId, variant, features, installedAt, source, ... */
static int parse_modelpkg(const json_t *o, const char *file, mpk_mt_tree *t, mpk_error *err) {
  char *when = NULL;
  int rc = member_string(o, "installId", file, &t->install_id, err);
  if (!rc) rc = member_string(o, "repoId", file, &t->repo_id, err);
  if (!rc) rc = member_string(o, "variant", file, &t->variant, err);
  if (!rc) rc = member_string(o, "source", file, &t->source, err);
  if (!rc) rc = member_string(o, "installedAt", file, &when, err);
  if (!rc) rc = member_features(o, file, t, err);
  if (!rc) t->installed_at_ms = iso_ms(when);
  free(when);
  if (!rc && (!t->variant || !*t->variant))
    rc = mpk_fail(err, MPK_EMALFORMED, file, "/variant", "the install record names no variant");
  return rc;
}

/* The reference runtime's record (InstallRecord.kt, written by Gson): repoId, variantId, features,
   installedAtEpochMs; a record with a blank repoId is no record there (InstallRecord.read). */
static int parse_reference(const json_t *o, const char *file, mpk_mt_tree *t, mpk_error *err) {
  mpk_mt_tree r = {0};
  int rc = member_string(o, "repoId", file, &r.repo_id, err);
  if (!rc) rc = member_string(o, "variantId", file, &r.variant, err);
  if (!rc) rc = member_features(o, file, &r, err);
  const json_t *ms = json_object_get(o, "installedAtEpochMs");
  int64_t when = 0;
  if (!rc && ms && !json_is_null(ms) && (!mpk_json_safe_integer(ms, &when) || when < 0))
    rc = mpk_fail(err, MPK_EMALFORMED, file, "/installedAtEpochMs", "must be a non-negative integer (epoch milliseconds)");
  if (rc || !r.repo_id || r.repo_id[strspn(r.repo_id, " \t\n\v\f\r")] == '\0') { /* Kotlin's isNotBlank */
    mpk_mt_tree_free(&r);
    return rc;
  }
  if (r.variant && !*r.variant) { /* Gson's default "": not recorded */
    free(r.variant);
    r.variant = NULL;
  }
  r.installed_at_ms = when;
  if (!t->record) { /* the only record */
    *t = r;
    return 0;
  }
  /* Both records: modelpkg's is the authority; the two must not disagree. */
  if (r.variant && t->variant && strcmp(r.variant, t->variant) != 0)
    rc = mpk_fail(err, MPK_EMISMATCH, file, "/variantId",
                  "names variant \"%s\", but modelpkg's install record (" MPK_MT_INSTALL_RECORD ") names \"%s\": "
                  "the tree's two install records disagree",
                  r.variant, t->variant);
  else if (t->repo_id && strcmp(r.repo_id, t->repo_id) != 0)
    rc = mpk_fail(err, MPK_EMISMATCH, file, "/repoId",
                  "names repo \"%s\", but modelpkg's install record (" MPK_MT_INSTALL_RECORD ") names \"%s\": "
                  "the tree's two install records disagree",
                  r.repo_id, t->repo_id);
  mpk_mt_tree_free(&r);
  return rc;
}

static bool is_dir_at(int dfd, const char *name) {
  struct stat st;
  return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

static bool exists_at(int dfd, const char *name) {
  struct stat st;
  return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int mpk_mt_tree_open(const char *dir, mpk_mt_tree *t, mpk_error *err) {
  memset(t, 0, sizeof *t);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return mpk_fail(err, errno == ENOENT || errno == ENOTDIR ? MPK_ENOTFOUND : MPK_EIO, dir, NULL,
                    "cannot open the directory: %s", strerror(errno));
  json_t *own = NULL, *ref = NULL;
  char *own_file = NULL, *ref_file = NULL;
  int rc = read_record(dfd, dir, MPK_MT_INSTALL_RECORD, &own, &own_file, err);
  if (!rc) rc = read_record(dfd, dir, MPK_MT_REFERENCE_INSTALL_RECORD, &ref, &ref_file, err);
  if (!rc && own) {
    t->installed = 1;
    if (!(rc = parse_modelpkg(own, own_file, t, err))) {
      t->record = MPK_MT_RECORD_MODELPKG;
      t->record_file = own_file;
      own_file = NULL;
    }
  }
  if (!rc && ref) {
    int had = t->record;
    if (!(rc = parse_reference(ref, ref_file, t, err)) && !had && t->repo_id) {
      t->installed = 1;
      t->record = MPK_MT_RECORD_REFERENCE;
      t->record_file = ref_file;
      ref_file = NULL;
    }
  }
  /* A tree with no record (hand-pushed, or installed before records existed, as the reference's
     CacheIndex tolerates): installed when it has the flattened stages and no variants/ directory. */
  if (!rc && !t->installed && !exists_at(dfd, "variants") && is_dir_at(dfd, "inference")) t->installed = 1;
  close(dfd);
  json_decref(own);
  json_decref(ref);
  free(own_file);
  free(ref_file);
  if (rc) mpk_mt_tree_free(t);
  return rc;
}

/* ---------------------------------------------------------------- the default variant */

const char *mpk_mt_tree_default_variant(const mpk_mt_tree *t, const mpk_mt_manifest *m) {
  if (t && t->installed && t->variant) return t->variant;
  return m ? m->default_variant : NULL;
}

const char *mpk_mt_default_variant(const mpk_mt_manifest *m, const mpk_mt_installed *installed) {
  return mpk_mt_tree_default_variant(installed && installed->priv_ ? (const mpk_mt_tree *)installed->priv_ : NULL, m);
}

int mpk_mt_tree_variant(const mpk_mt_tree *t, const mpk_mt_manifest *m, const char *requested, const char *manifest_file,
                        const mpk_mt_variant **out, mpk_error *err) {
  *out = NULL;
  const char *id = requested ? requested : mpk_mt_tree_default_variant(t, m);
  if (t && t->installed && t->variant && requested && strcmp(requested, t->variant) != 0)
    return mpk_fail(err, MPK_ENOTFOUND, t->record_file, t->record == MPK_MT_RECORD_REFERENCE ? "/variantId" : "/variant",
                    "the installed tree holds variant \"%s\", not \"%s\": an installed model has the one variant its "
                    "install record names (install another with mt install --variant %s)",
                    t->variant, requested, requested);
  if (!id)
    return mpk_fail(err, MPK_ENOTFOUND, manifest_file, "/defaultVariant",
                    "no variant given and the manifest has no defaultVariant");
  if (!(*out = mpk_mt_manifest_variant(m, id))) {
    if (t && t->installed && t->variant && !requested)
      return mpk_fail(err, MPK_EMALFORMED, t->record_file, t->record == MPK_MT_RECORD_REFERENCE ? "/variantId" : "/variant",
                      "the install record names variant \"%s\", which is not among the manifest's variants", id);
    return mpk_fail(err, MPK_ENOTFOUND, manifest_file, "/variants", "variant \"%s\" is not among the variants", id);
  }
  return 0;
}

/* ---------------------------------------------------------------- the public view */

char *mpk_mt_unsanitize_repo_dir(const char *name) {
  /* The reference's fallback for a tree without a record (InstallRecord.unsanitize): "__" → "/". */
  size_t n = strlen(name);
  char *out = malloc(n + 1), *w = out;
  for (const char *p = name; out && *p;) {
    if (p[0] == '_' && p[1] == '_') {
      *w++ = '/';
      p += 2;
    } else {
      *w++ = *p++;
    }
  }
  if (out) *w = '\0';
  return out;
}

/* The directory's own name: "a/b/org__Tiny/" → "org__Tiny" (malloc'ed). */
static char *base_name(const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  size_t start = n;
  while (start > 0 && dir[start - 1] != '/') start--;
  return strndup(dir + start, n - start);
}

int mpk_mt_installed_open(const char *dir, mpk_mt_installed **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, dir ? dir : "installed tree", NULL, "no place for the result");
  *out = NULL;
  if (!dir) return mpk_fail(err, MPK_EINVAL, "installed tree", NULL, "no directory");
  mpk_mt_installed *i = calloc(1, sizeof *i);
  mpk_mt_tree *t = i ? calloc(1, sizeof *t) : NULL;
  if (!t) {
    free(i);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  i->priv_ = (struct mpk_mt_installed_priv *)t;
  int rc = mpk_mt_tree_open(dir, t, err);
  if (!rc && !t->installed)
    rc = mpk_fail(err, MPK_ENOTFOUND, dir, NULL,
                  "not an installed model: no install record (" MPK_MT_INSTALL_RECORD " or " MPK_MT_REFERENCE_INSTALL_RECORD
                  ") and not the installed layout (inference/ without variants/)");
  char *base = rc || t->repo_id ? NULL : base_name(dir);
  if (!rc && !t->repo_id && (!base || !(t->repo_id = mpk_mt_unsanitize_repo_dir(base))))
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  free(base);
  if (rc) {
    mpk_mt_installed_free(i);
    return rc;
  }
  i->repo_id = t->repo_id;
  i->variant = t->variant;
  i->features = (const char *const *)t->features;
  i->n_features = t->n_features;
  i->installed_at_ms = t->installed_at_ms;
  i->install_id = t->install_id;
  i->source = t->source;
  i->record = t->record;
  *out = i;
  return 0;
}

void mpk_mt_installed_free(mpk_mt_installed *i) {
  if (!i) return;
  if (i->priv_) {
    mpk_mt_tree_free((mpk_mt_tree *)i->priv_);
    free(i->priv_);
  }
  free(i);
}
