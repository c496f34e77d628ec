/* A crash-safe transaction over several files of one directory D (docs/transactions.md).

   Writer: lock D; stage every new file as a temporary "<final>.<name>-txn.XXXXXX" in D; commit:
   fsync the temporaries, write the plan (temp -> final, size, SHA-256) to a checksummed journal
   ".<name>.txn-journal.tmp", fsync it, rename it to ".<name>.txn-journal", fsync D — the commit
   point — then rename every temporary onto its final name, fsync D, remove the journal, fsync D.

   Recovery: a journal means the transaction happened: verify every entry's new bytes (still in
   its temporary, or already in place) against the journal, rename what is left, remove the
   journal. No journal means it did not: remove this name's temporaries and partial journal. Every
   step of both is idempotent, so a crash during recovery is recovered by running it again. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/pool.h"
#include "core/txn.h"

#define TXN_NAME_MAX 32
#define JOURNAL_FORMAT "modelpkg-txn-journal"
#define JOURNAL_VERSION 1
#define JOURNAL_MAX_BYTES ((size_t)64 * 1024 * 1024)
#define JOURNAL_MAX_ENTRIES 1000000
#define TRAILER_LEN 72 /* "sha256:" + 64 hex + "\n" */
#define FILE_NAME_MAX 255
/* Finished files wait, open, until this many can be synced together: fsyncs issued in parallel
   share the file system's journal commits (20 files: ~25 ms instead of ~150 ms on ext4 here), and
   a batch bounds the descriptors a transaction over thousands of files keeps open. */
#define SYNC_BATCH 64
#define SYNC_WORKERS 8

typedef struct entry {
  char *final; /* plain file name in the directory */
  char *temp;  /* "<final>.<name>-txn.XXXXXX" */
  int fd;      /* open while the caller writes and until synced; -1 once synced and closed */
  bool written; /* the caller finished writing: to be synced with the next batch */
  bool have_digest;
  uint64_t size;
  char hex[65];
} entry;

/* The reserved names of one transaction name. */
typedef struct names {
  char journal[TXN_NAME_MAX + 16];
  char journal_tmp[TXN_NAME_MAX + 20];
  char suffix[TXN_NAME_MAX + 8]; /* ".<name>-txn." — a temporary is <final><suffix>XXXXXX */
} names;

struct mpk_txn {
  char *dir;
  char name[TXN_NAME_MAX + 1];
  names nm;
  int dfd; /* the directory, open and flock'ed for the transaction's life */
  entry *e;
  size_t n, cap;
  size_t unsynced; /* entries written but not yet synced */
  bool failed;     /* a staging step failed: a staged file may be incomplete, so no commit */
};

/* ---------------------------------------------------------------- names */

static bool valid_txn_name(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n > TXN_NAME_MAX) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  }
  return true;
}

static void make_names(const char *name, names *nm) {
  snprintf(nm->journal, sizeof nm->journal, ".%s.txn-journal", name);
  snprintf(nm->journal_tmp, sizeof nm->journal_tmp, ".%s.txn-journal.tmp", name);
  snprintf(nm->suffix, sizeof nm->suffix, ".%s-txn.", name);
}

/* The length of the final name `file` is a temporary of, or 0 when it is not one. */
static size_t temp_final_len(const names *nm, const char *file) {
  size_t fl = strlen(file), sl = strlen(nm->suffix);
  if (fl <= sl + 6) return 0;
  size_t at = fl - sl - 6;
  if (memcmp(file + at, nm->suffix, sl) != 0 || !mpk_is_temp_suffix(file + fl - 6)) return 0;
  return at;
}

/* A name the transaction may replace: one confined path segment, not a reserved name, short
   enough to carry the temporary suffix, and representable in the journal (UTF-8). */
static bool valid_final(const names *nm, const char *final, const char **why) {
  const char *w = NULL;
  if (!mpk_path_is_confined(final, &w)) {
    /* w says which rule */
  } else if (strchr(final, '/')) {
    w = "is not a plain file name (it has a \"/\")";
  } else if (strcmp(final, nm->journal) == 0 || strcmp(final, nm->journal_tmp) == 0) {
    w = "is the transaction's journal";
  } else if (temp_final_len(nm, final)) {
    w = "is named like one of the transaction's temporary files";
  } else if (strlen(final) + strlen(nm->suffix) + 6 > FILE_NAME_MAX) {
    w = "is too long to carry the temporary-file suffix";
  } else {
    json_t *s = json_string(final);
    if (!s) w = "is not valid UTF-8";
    json_decref(s);
  }
  if (why) *why = w;
  return w == NULL;
}

/* "dir/name" for messages (mpk_error keeps 511 characters anyway). */
static const char *where(char *buf, size_t cap, const char *dir, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
  return buf;
}

static bool is_lower_hex64(const char *s) {
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return s[64] == '\0';
}

/* ---------------------------------------------------------------- the lock */

static int open_dir(const char *dir, int *dfd, mpk_error *err) {
  *dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*dfd < 0)
    return mpk_fail(err, errno == ENOENT ? MPK_ENOTFOUND : MPK_EIO, dir, NULL, "cannot open the directory: %s",
                    strerror(errno));
  return 0;
}

/* A fresh open file description of the directory behind `dirfd` (its own flock, its own
   lifetime): "." beneath the handle, so nothing is resolved by name again. */
static int reopen_dir(int dirfd, const char *dir, int *dfd, mpk_error *err) {
  *dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*dfd < 0) return mpk_fail(err, MPK_EIO, dir, NULL, "cannot open the directory: %s", strerror(errno));
  return 0;
}

/* Hash the regular file `name` of the directory, never through a link and never blocking on a
   FIFO. 0, or an errno value. */
static int hash_at(int dfd, const char *name, uint64_t *size, char hex[65]) {
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return errno == ELOOP ? EMLINK : errno;
  struct stat st;
  int e = 0;
  if (fstat(fd, &st) != 0) e = errno;
  else if (!S_ISREG(st.st_mode)) e = EINVAL;
  else if (mpk_sha256_fd(fd, hex)) e = errno ? errno : EIO;
  else *size = (uint64_t)st.st_size;
  close(fd);
  return e;
}

typedef struct hash_pool {
  int dfd;
  const char **names;
  uint64_t *sizes;
  char (*hex)[65];
  int *errs;
} hash_pool;

static int hash_task(mpk_pool *pool, void *ctx, size_t i, void *scratch, mpk_error *err) {
  (void)pool, (void)scratch, (void)err; /* each file keeps its own result */
  hash_pool *p = ctx;
  p->errs[i] = hash_at(p->dfd, p->names[i], &p->sizes[i], p->hex[i]);
  return 0;
}

static const char *hash_error(int e) {
  return e == EMLINK ? "it is a symbolic link (never followed)" : e == EINVAL ? "it is not a regular file" : strerror(e);
}

/* Hash n files of the directory in parallel; per-file results in the arrays (errs: 0 or errno). */
static int hash_files_at(int dfd, const char **files, size_t n, uint64_t *sizes, char (*hex)[65],
                         int *errs, mpk_error *err) {
  hash_pool p = {.dfd = dfd, .names = files, .sizes = sizes, .hex = hex, .errs = errs};
  unsigned w = mpk_online_cpus();
  if (w > 8) w = 8;
  return mpk_pool_run(n, &(mpk_pool_opts){.workers = w, .keep_going = true}, hash_task, &p, NULL, err);
}

/* flock on the directory itself: no lock file to leave behind in a package (where `check` would
   report it as unlisted), released by the kernel when the holder dies, and per open file
   description, so a second begin in the same process is refused too. */
static int open_locked(int dirfd, const char *dir, const char *name, int *dfd, mpk_error *err) {
  int rc = reopen_dir(dirfd, dir, dfd, err);
  if (rc) return rc;
  if (flock(*dfd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    close(*dfd);
    *dfd = -1;
    if (e == EWOULDBLOCK)
      return mpk_fail(err, MPK_EIO, dir, NULL,
                      "another %s transaction is in progress in this directory, or a reader holds it (the lock is taken)",
                      name);
    return mpk_fail(err, MPK_EIO, dir, NULL, "cannot lock the directory: %s", strerror(e));
  }
  return 0;
}

/* ---------------------------------------------------------------- scanning */

typedef struct scan {
  bool journal, journal_tmp;
  char **temps;
  size_t n_temps, cap_temps;
} scan;

static void scan_free(scan *s) {
  for (size_t i = 0; i < s->n_temps; i++) free(s->temps[i]);
  free(s->temps);
  memset(s, 0, sizeof *s);
}

static bool is_regular_at(int dfd, const char *file) {
  struct stat st;
  return fstatat(dfd, file, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* What this transaction name left in the directory. Only regular files count: a directory or a
   link that happens to match a pattern is not ours and is never touched. */
static int scan_dir(const char *dir, int dfd, const names *nm, scan *s, mpk_error *err) {
  memset(s, 0, sizeof *s);
  int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    int e = errno;
    if (fd >= 0) close(fd);
    return mpk_fail(err, MPK_EIO, dir, NULL, "cannot list the directory: %s", strerror(e));
  }
  int rc = 0;
  struct dirent *de;
  char buf[1024];
  while ((de = readdir(d))) {
    const char *f = de->d_name;
    if (strcmp(f, nm->journal) == 0) {
      struct stat st;
      if (fstatat(dfd, f, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
        rc = mpk_fail(err, MPK_EMALFORMED, where(buf, sizeof buf, dir, f), NULL,
                      "the transaction journal is not a regular file");
        break;
      }
      s->journal = true;
    } else if (strcmp(f, nm->journal_tmp) == 0) {
      if (is_regular_at(dfd, f)) s->journal_tmp = true;
    } else if (temp_final_len(nm, f) && is_regular_at(dfd, f)) {
      if (s->n_temps == s->cap_temps) {
        size_t nc = s->cap_temps ? 2 * s->cap_temps : 16;
        char **nt = realloc(s->temps, nc * sizeof *nt);
        if (!nt) {
          rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
          break;
        }
        s->temps = nt;
        s->cap_temps = nc;
      }
      if (!(s->temps[s->n_temps] = strdup(f))) {
        rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
        break;
      }
      s->n_temps++;
    }
  }
  closedir(d);
  if (rc) scan_free(s);
  return rc;
}

/* ---------------------------------------------------------------- the journal

   BODY TRAILER, where BODY is the canonical JSON of
     {"entries":[{"final":F,"sha256":"sha256:<hex>","size":N,"temp":T},...],
      "format":"modelpkg-txn-journal","name":NAME,"version":1}
   followed by "\n", and TRAILER is "sha256:<hex of SHA-256(BODY)>\n". */

static void entries_free(entry *e, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(e[i].final);
    free(e[i].temp);
  }
  free(e);
}

static int journal_build(const mpk_txn *t, char **out, size_t *out_len, mpk_error *err) {
  json_t *root = json_object(), *arr = json_array();
  int rc = 0;
  if (!root || !arr || json_object_set_new(root, "entries", arr)) {
    if (root) json_decref(root);
    else json_decref(arr);
    return mpk_fail(err, MPK_ENOMEM, t->dir, NULL, "out of memory");
  }
  /* A field lost to a failed allocation would make a journal recovery refuses: check each. */
  if (json_object_set_new(root, "format", json_string(JOURNAL_FORMAT)) ||
      json_object_set_new(root, "name", json_string(t->name)) ||
      json_object_set_new(root, "version", json_integer(JOURNAL_VERSION))) {
    json_decref(root);
    return mpk_fail(err, MPK_ENOMEM, t->dir, NULL, "out of memory");
  }
  for (size_t i = 0; i < t->n; i++) {
    char id[MPK_SHA256_ID_SIZE];
    snprintf(id, sizeof id, "sha256:%s", t->e[i].hex);
    json_t *o = json_object();
    if (!o || json_array_append_new(arr, o) || json_object_set_new(o, "final", json_string(t->e[i].final)) ||
        json_object_set_new(o, "temp", json_string(t->e[i].temp)) ||
        json_object_set_new(o, "size", json_integer((json_int_t)t->e[i].size)) ||
        json_object_set_new(o, "sha256", json_string(id))) {
      json_decref(root);
      return mpk_fail(err, MPK_ENOMEM, t->dir, NULL, "out of memory");
    }
  }
  char *canon = NULL;
  size_t clen = 0;
  rc = mpk_canonical_dump(root, &canon, &clen, err);
  json_decref(root);
  if (rc) return rc;
  mpk_buf b = {0};
  mpk_buf_put(&b, canon, clen);
  mpk_buf_putc(&b, '\n');
  free(canon);
  uint8_t d[MPK_SHA256_LEN];
  char hex[65];
  if (b.oom || mpk_sha256(b.data, b.len, d)) {
    mpk_buf_free(&b);
    return mpk_fail(err, MPK_ENOMEM, t->dir, NULL, "cannot checksum the journal");
  }
  mpk_hex(d, sizeof d, hex);
  mpk_buf_printf(&b, "sha256:%s\n", hex);
  *out = mpk_buf_take(&b, out_len);
  if (!*out) return mpk_fail(err, MPK_ENOMEM, t->dir, NULL, "out of memory");
  return 0;
}

static int journal_entry(mpk_jv *v, const names *nm, const json_t *o, entry *e) {
  static const char *const keys[] = {"final", "sha256", "size", "temp", NULL};
  const char *final, *temp, *id, *why = NULL;
  int64_t size;
  int rc = mpk_jv_object(v, o);
  if (!rc) rc = mpk_jv_exact_keys(v, o, keys, keys);
  if (rc) return rc;
  MPK_JV_AT(v, "final", mpk_jv_string(v, json_object_get(o, "final"), &final));
  MPK_JV_AT(v, "final", valid_final(nm, final, &why) ? 0 : mpk_jv_fail(v, MPK_EMALFORMED, "the file name %s", why));
  MPK_JV_AT(v, "temp", mpk_jv_string(v, json_object_get(o, "temp"), &temp));
  /* Recovery renames and deletes only what it can prove is this transaction's temporary of this
     very final name: a journal cannot point it at any other file. */
  size_t fl = temp_final_len(nm, temp);
  MPK_JV_AT(v, "temp",
            fl == strlen(final) && strncmp(temp, final, fl) == 0
                ? 0
                : mpk_jv_fail(v, MPK_EMALFORMED, "expected \"%s%sXXXXXX\" (a temporary of \"final\")", final,
                              nm->suffix));
  MPK_JV_AT(v, "size", mpk_jv_integer(v, json_object_get(o, "size"), 0, &size));
  MPK_JV_AT(v, "sha256", mpk_jv_sha256_id(v, json_object_get(o, "sha256"), &id));
  e->final = strdup(final);
  e->temp = strdup(temp);
  e->fd = -1;
  e->size = (uint64_t)size;
  e->have_digest = true;
  memcpy(e->hex, id + 7, 65);
  if (!e->final || !e->temp) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  return 0;
}

static int journal_parse(const char *file, const char *name, const names *nm, const uint8_t *data, size_t len,
                         entry **out, size_t *n_out, mpk_error *err) {
  /* The checksum first: a torn or damaged journal is refused whole, before any field is read. */
  if (len < TRAILER_LEN + 3 || data[len - TRAILER_LEN - 1] != '\n' ||
      memcmp(data + len - TRAILER_LEN, "sha256:", 7) != 0 || data[len - 1] != '\n')
    return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)len,
                       "the transaction journal is truncated or damaged: it does not end with its checksum line");
  uint8_t d[MPK_SHA256_LEN];
  char hex[65];
  if (mpk_sha256(data, len - TRAILER_LEN, d)) return mpk_fail(err, MPK_EIO, file, NULL, "cannot checksum");
  mpk_hex(d, sizeof d, hex);
  if (memcmp(data + len - TRAILER_LEN + 7, hex, 64) != 0)
    return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)(len - TRAILER_LEN),
                       "the transaction journal is damaged: its checksum does not match its contents");

  json_t *root = NULL;
  mpk_json_opts opts = {.max_bytes = JOURNAL_MAX_BYTES, .max_depth = 8};
  int rc = mpk_json_parse(data, len - TRAILER_LEN, &opts, file, &root, err);
  if (rc) return rc;
  mpk_jv v = {.file = file, .err = err};
  mpk_path_init(&v.path);
  static const char *const keys[] = {"entries", "format", "name", "version", NULL};
  entry *es = NULL;
  size_t n = 0;
  int64_t version;
  const json_t *arr = json_object_get(root, "entries");
  rc = mpk_jv_object(&v, root);
  if (!rc) rc = mpk_jv_exact_keys(&v, root, keys, keys);
  if (rc) goto out;
#define AT(k, expr)                                   \
  do {                                                \
    size_t prev_ = mpk_path_push_key(&v.path, k);     \
    rc = (expr);                                      \
    mpk_path_pop(&v.path, prev_);                     \
    if (rc) goto out;                                 \
  } while (0)
  AT("format", mpk_jv_literal(&v, json_object_get(root, "format"), JOURNAL_FORMAT));
  AT("version", mpk_jv_integer(&v, json_object_get(root, "version"), 1, &version));
  AT("version", version == JOURNAL_VERSION
                    ? 0
                    : mpk_jv_fail(&v, MPK_EVERSION, "journal version %lld is not supported (this is %d)",
                                  (long long)version, JOURNAL_VERSION));
  AT("name", mpk_jv_literal(&v, json_object_get(root, "name"), name));
  AT("entries", json_is_array(arr) && json_array_size(arr) >= 1 && json_array_size(arr) <= JOURNAL_MAX_ENTRIES
                    ? 0
                    : mpk_jv_fail(&v, MPK_EMALFORMED, "expected an array of 1 to %d entries", JOURNAL_MAX_ENTRIES));
  es = calloc(json_array_size(arr), sizeof *es);
  if (!es) {
    rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
    goto out;
  }
  size_t prev = mpk_path_push_key(&v.path, "entries");
  for (size_t i = 0; i < json_array_size(arr) && !rc; i++) {
    size_t p2 = mpk_path_push_index(&v.path, i);
    rc = journal_entry(&v, nm, json_array_get(arr, i), &es[n]);
    n++;
    /* Two entries for one file would make the outcome depend on the rename order. */
    for (size_t j = 0; !rc && j + 1 < n; j++)
      if (strcmp(es[j].final, es[n - 1].final) == 0) {
        size_t p3 = mpk_path_push_key(&v.path, "final");
        rc = mpk_jv_fail(&v, MPK_EMALFORMED, "\"%s\" is already entry %zu", es[n - 1].final, j);
        mpk_path_pop(&v.path, p3);
      }
    mpk_path_pop(&v.path, p2);
  }
  mpk_path_pop(&v.path, prev);
#undef AT
out:
  json_decref(root);
  if (rc) {
    entries_free(es, n);
    return rc;
  }
  *out = es;
  *n_out = n;
  return 0;
}

static int journal_load(const char *dir, int dfd, const char *name, const names *nm, entry **out, size_t *n,
                        mpk_error *err) {
  char file[1024];
  where(file, sizeof file, dir, nm->journal);
  int fd = openat(dfd, nm->journal, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return mpk_fail(err, MPK_EIO, file, NULL, "cannot open the transaction journal: %s", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return mpk_fail(err, MPK_EIO, file, NULL, "cannot stat the transaction journal: %s", strerror(e));
  }
  if (!S_ISREG(st.st_mode)) { /* swapped for a FIFO since the scan: opened non-blocking, never waited on */
    close(fd);
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "the transaction journal is %s, not a regular file",
                    mpk_file_type_name(st.st_mode));
  }
  if ((uint64_t)st.st_size > JOURNAL_MAX_BYTES) {
    close(fd);
    return mpk_fail(err, MPK_ELIMIT, file, NULL, "the transaction journal is %lld bytes, more than the %zu allowed",
                    (long long)st.st_size, JOURNAL_MAX_BYTES);
  }
  size_t len = (size_t)st.st_size;
  uint8_t *data = malloc(len ? len : 1);
  if (!data) {
    close(fd);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  size_t got = 0;
  while (got < len) {
    ssize_t r = read(fd, data + got, len - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  int e = errno;
  close(fd);
  int rc = got == len ? journal_parse(file, name, nm, data, len, out, n, err)
                      : mpk_fail(err, MPK_EIO, file, NULL, "cannot read the transaction journal: %s",
                                 got < len ? strerror(e) : "short read");
  free(data);
  return rc;
}

/* ---------------------------------------------------------------- recovery */

/* A step counter for the crash tests: true when the run must stop here. */
typedef struct steps {
  int done, stop; /* stop < 0: never */
} steps;

static bool step(steps *s) { return ++s->done == s->stop; }

/* Every entry's new bytes — in its temporary when that still exists, else already under its final
   name — must be the journal's: a committed transaction is completed only with the bytes it
   committed, and a file that lost them is named, never accepted. */
static int verify_entries(const char *dir, int dfd, entry *es, size_t n, bool *temp_present, mpk_error *err) {
  const char **files = calloc(n, sizeof *files);
  uint64_t *sizes = calloc(n, sizeof *sizes);
  char (*hex)[65] = calloc(n, sizeof *hex);
  int *errs = calloc(n, sizeof *errs);
  int rc = 0;
  char buf[1024];
  if (!files || !sizes || !hex || !errs) {
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    temp_present[i] = is_regular_at(dfd, es[i].temp);
    const char *f = temp_present[i] ? es[i].temp : es[i].final;
    if (!temp_present[i] && !is_regular_at(dfd, f)) {
      rc = mpk_fail(err, MPK_EMISMATCH, where(buf, sizeof buf, dir, es[i].final), NULL,
                    "an interrupted transaction committed new contents for this file, but neither it nor its "
                    "temporary %s is a regular file: the new contents are lost",
                    es[i].temp);
      goto out;
    }
    files[i] = f;
  }
  rc = hash_files_at(dfd, files, n, sizes, hex, errs, err);
  for (size_t i = 0; !rc && i < n; i++) {
    where(buf, sizeof buf, dir, files[i]);
    if (errs[i]) {
      rc = mpk_fail(err, MPK_EIO, buf, NULL, "cannot read it to verify the interrupted transaction: %s",
                    hash_error(errs[i]));
    } else if (sizes[i] != es[i].size || strcmp(hex[i], es[i].hex) != 0) {
      rc = mpk_fail(err, MPK_EMISMATCH, buf, NULL,
                    "holds %llu bytes with SHA-256 %s, but the interrupted transaction's journal committed %llu "
                    "bytes with SHA-256 %s for %s: it was changed after the commit; nothing was rolled forward",
                    (unsigned long long)sizes[i], hex[i], (unsigned long long)es[i].size, es[i].hex, es[i].final);
    }
  }
out:
  free(files);
  free(sizes);
  free(hex);
  free(errs);
  return rc;
}

static int unlink_file(const char *dir, int dfd, const char *f, mpk_error *err) {
  char buf[1024];
  if (unlinkat(dfd, f, 0) != 0 && errno != ENOENT)
    return mpk_fail(err, MPK_EIO, where(buf, sizeof buf, dir, f), NULL, "cannot remove: %s", strerror(errno));
  return 0;
}

static int sync_dir(const char *dir, int dfd, mpk_error *err) {
  if (mpk_fsync_dir(dfd) != 0) return mpk_fail(err, MPK_EIO, dir, NULL, "cannot sync the directory: %s", strerror(errno));
  return 0;
}

#define STEP_OR_STOP(s)                  \
  do {                                   \
    if (step(s)) {                       \
      rc = MPK_TXN_STOPPED;              \
      goto out;                          \
    }                                    \
  } while (0)

/* Recovery with the lock held. */
static int recover_locked(const char *dir, int dfd, const char *name, steps *st, mpk_txn_outcome *o,
                          mpk_error *err) {
  names nm;
  make_names(name, &nm);
  memset(o, 0, sizeof *o);
  scan s;
  int rc = scan_dir(dir, dfd, &nm, &s, err);
  if (rc) return rc;
  entry *es = NULL;
  size_t n = 0;
  bool *present = NULL;
  char buf[1024];
  if (s.journal) {
    /* Committed: roll forward. */
    if ((rc = journal_load(dir, dfd, name, &nm, &es, &n, err))) goto out;
    if (!(present = calloc(n, sizeof *present))) {
      rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
      goto out;
    }
    if ((rc = verify_entries(dir, dfd, es, n, present, err))) goto out;
    o->action = MPK_TXN_ROLLED_FORWARD;
    o->files = n;
    for (size_t i = 0; i < n; i++) {
      if (!present[i]) continue;
      if (renameat(dfd, es[i].temp, dfd, es[i].final) != 0) {
        rc = mpk_fail(err, MPK_EIO, where(buf, sizeof buf, dir, es[i].final), NULL,
                      "cannot move the committed new contents into place (from %s): %s", es[i].temp, strerror(errno));
        goto out;
      }
      o->renamed++;
      STEP_OR_STOP(st);
    }
    /* Temporaries the journal does not list cannot belong to the committed transaction. */
    for (size_t i = 0; i < s.n_temps; i++) {
      bool listed = false;
      for (size_t j = 0; j < n && !listed; j++) listed = strcmp(s.temps[i], es[j].temp) == 0;
      if (listed) continue;
      if ((rc = unlink_file(dir, dfd, s.temps[i], err))) goto out;
      o->removed++;
      STEP_OR_STOP(st);
    }
    if (s.journal_tmp) {
      if ((rc = unlink_file(dir, dfd, nm.journal_tmp, err))) goto out;
      o->removed++;
      STEP_OR_STOP(st);
    }
    /* The renames must be durable before the journal that makes them redoable goes. */
    if ((rc = sync_dir(dir, dfd, err))) goto out;
    STEP_OR_STOP(st);
    if ((rc = unlink_file(dir, dfd, nm.journal, err))) goto out;
    STEP_OR_STOP(st);
    if ((rc = sync_dir(dir, dfd, err))) goto out;
    STEP_OR_STOP(st);
  } else if (s.n_temps || s.journal_tmp) {
    /* Not committed: roll back. The targets were never touched. */
    o->action = MPK_TXN_ROLLED_BACK;
    for (size_t i = 0; i < s.n_temps; i++) {
      if ((rc = unlink_file(dir, dfd, s.temps[i], err))) goto out;
      o->removed++;
      STEP_OR_STOP(st);
    }
    if (s.journal_tmp) {
      if ((rc = unlink_file(dir, dfd, nm.journal_tmp, err))) goto out;
      o->removed++;
      STEP_OR_STOP(st);
    }
    if ((rc = sync_dir(dir, dfd, err))) goto out;
    STEP_OR_STOP(st);
  }
out:
  free(present);
  entries_free(es, n);
  scan_free(&s);
  return rc;
}

static int recover_at(int dirfd, const char *dir, const char *name, int stop, mpk_txn_outcome *out,
                      mpk_error *err) {
  mpk_txn_outcome o;
  if (!out) out = &o;
  memset(out, 0, sizeof *out);
  if (!dir) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL directory");
  if (!valid_txn_name(name))
    return mpk_fail(err, MPK_EINVAL, dir, NULL, "a transaction name is 1 to %d characters of [A-Za-z0-9_-]",
                    TXN_NAME_MAX);
  int dfd;
  int rc = open_locked(dirfd, dir, name, &dfd, err);
  if (rc) return rc;
  steps st = {.stop = stop};
  rc = recover_locked(dir, dfd, name, &st, out, err);
  close(dfd); /* releases the lock */
  return rc;
}

/* The path forms open the directory the caller named and use the handle forms. */
#define WITH_DIR(dir, call)                    \
  do {                                         \
    if (!(dir)) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL directory"); \
    int dirfd_;                                \
    int rc_ = open_dir((dir), &dirfd_, err);   \
    if (rc_) return rc_;                       \
    rc_ = (call);                              \
    close(dirfd_);                             \
    return rc_;                                \
  } while (0)

int mpk_txn_recover_at(int dirfd, const char *shown, const char *name, mpk_txn_outcome *out, mpk_error *err) {
  return recover_at(dirfd, shown, name, -1, out, err);
}

int mpk_txn_recover(const char *dir, const char *name, mpk_txn_outcome *out, mpk_error *err) {
  WITH_DIR(dir, recover_at(dirfd_, dir, name, -1, out, err));
}

int mpk_txn_recover_until(const char *dir, const char *name, int stop_after, mpk_txn_outcome *out, mpk_error *err) {
  WITH_DIR(dir, recover_at(dirfd_, dir, name, stop_after, out, err));
}

int mpk_txn_inspect(const char *dir, const char *name, mpk_txn_state *out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, dir, NULL, "NULL argument");
  memset(out, 0, sizeof *out);
  WITH_DIR(dir, mpk_txn_inspect_at(dirfd_, dir, name, out, err));
}

int mpk_txn_inspect_at(int dirfd, const char *dir, const char *name, mpk_txn_state *out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, dir, NULL, "NULL argument");
  memset(out, 0, sizeof *out);
  if (!dir) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL directory");
  if (!valid_txn_name(name))
    return mpk_fail(err, MPK_EINVAL, dir, NULL, "a transaction name is 1 to %d characters of [A-Za-z0-9_-]",
                    TXN_NAME_MAX);
  names nm;
  make_names(name, &nm);
  int dfd;
  int rc = reopen_dir(dirfd, dir, &dfd, err);
  if (rc) return rc;
  scan s;
  if ((rc = scan_dir(dir, dfd, &nm, &s, err))) {
    close(dfd);
    return rc;
  }
  out->temps = s.n_temps;
  out->journal_tmp = s.journal_tmp;
  if (s.journal) {
    entry *es = NULL;
    size_t n = 0;
    rc = journal_load(dir, dfd, name, &nm, &es, &n, err);
    entries_free(es, n);
    if (rc) {
      scan_free(&s);
      close(dfd);
      return rc;
    }
    out->journal = true;
    out->files = n;
    out->pending = MPK_TXN_ROLLED_FORWARD;
  } else if (s.n_temps || s.journal_tmp) {
    out->pending = MPK_TXN_ROLLED_BACK;
  }
  /* Probe the lock only when something is there: a shared lock held for an instant could make a
     writer starting at that very instant fail as "in progress". */
  if (out->pending != MPK_TXN_NOTHING) {
    if (flock(dfd, LOCK_SH | LOCK_NB) == 0) flock(dfd, LOCK_UN);
    else if (errno == EWOULDBLOCK) out->busy = true;
  }
  scan_free(&s);
  close(dfd);
  return 0;
}

/* ---------------------------------------------------------------- readers */

int mpk_txn_hold(const char *dir, const char *name, int *fd, mpk_txn_outcome *recovered, mpk_error *err) {
  if (fd) *fd = -1;
  WITH_DIR(dir, mpk_txn_hold_at(dirfd_, dir, name, fd, recovered, err));
}

int mpk_txn_hold_at(int dirfd, const char *dir, const char *name, int *fd, mpk_txn_outcome *recovered,
                    mpk_error *err) {
  mpk_txn_outcome o;
  if (!recovered) recovered = &o;
  memset(recovered, 0, sizeof *recovered);
  if (!fd) return mpk_fail(err, MPK_EINVAL, dir, NULL, "NULL argument");
  *fd = -1;
  /* Recovery needs the lock exclusively, so it runs only when there is something to recover: two
     readers holding at once must not make each other fail. A writer that dies between the look and
     the shared lock leaves a journal or temporaries behind; the look after the lock catches it. */
  for (int round = 0; round < 3; round++) {
    mpk_txn_state st;
    int rc = mpk_txn_inspect_at(dirfd, dir, name, &st, err);
    if (rc) return rc;
    if (st.pending != MPK_TXN_NOTHING && !st.busy) {
      mpk_txn_outcome r;
      if ((rc = mpk_txn_recover_at(dirfd, dir, name, &r, err))) return rc;
      if (r.action != MPK_TXN_NOTHING) *recovered = r;
    }
    int dfd;
    if ((rc = reopen_dir(dirfd, dir, &dfd, err))) return rc;
    if (flock(dfd, LOCK_SH | LOCK_NB) != 0) {
      int e = errno;
      close(dfd);
      if (e == EWOULDBLOCK)
        return mpk_fail(err, MPK_EIO, dir, NULL, "a %s transaction is in progress in this directory; try again when it has finished",
                        name);
      return mpk_fail(err, MPK_EIO, dir, NULL, "cannot lock the directory: %s", strerror(e));
    }
    if ((rc = mpk_txn_inspect_at(dfd, dir, name, &st, err))) {
      close(dfd);
      return rc;
    }
    if (st.pending == MPK_TXN_NOTHING) {
      *fd = dfd;
      return 0;
    }
    close(dfd); /* left behind after our first look: recover it, then hold again */
  }
  return mpk_fail(err, MPK_EIO, dir, NULL, "the directory keeps changing (%s transactions); try again", name);
}

void mpk_txn_release(int fd) {
  if (fd >= 0) close(fd); /* closing the only descriptor of the open file releases the flock */
}

/* ---------------------------------------------------------------- the writer */

int mpk_txn_begin(const char *dir, const char *name, mpk_txn_outcome *recovered, mpk_txn **out, mpk_error *err) {
  if (out) *out = NULL;
  WITH_DIR(dir, mpk_txn_begin_at(dirfd_, dir, name, recovered, out, err));
}

int mpk_txn_begin_at(int dirfd, const char *dir, const char *name, mpk_txn_outcome *recovered, mpk_txn **out,
                     mpk_error *err) {
  mpk_txn_outcome o;
  if (!recovered) recovered = &o;
  memset(recovered, 0, sizeof *recovered);
  if (!out || !dir) return mpk_fail(err, MPK_EINVAL, dir, NULL, "NULL argument");
  *out = NULL;
  if (!valid_txn_name(name))
    return mpk_fail(err, MPK_EINVAL, dir, NULL, "a transaction name is 1 to %d characters of [A-Za-z0-9_-]",
                    TXN_NAME_MAX);
  mpk_txn *t = calloc(1, sizeof *t);
  if (!t || !(t->dir = strdup(dir))) {
    free(t);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  snprintf(t->name, sizeof t->name, "%s", name);
  make_names(name, &t->nm);
  int rc = open_locked(dirfd, dir, name, &t->dfd, err);
  if (!rc) {
    /* Recover under the same lock the new transaction keeps: nothing can start in between, and the
       caller reads the files it is about to replace only after they are consistent. */
    steps st = {.stop = -1};
    rc = recover_locked(dir, t->dfd, name, &st, recovered, err);
    if (rc) close(t->dfd);
  }
  if (rc) {
    free(t->dir);
    free(t);
    return rc;
  }
  *out = t;
  return 0;
}

static entry *find_entry(mpk_txn *t, const char *final) {
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->e[i].final, final) == 0) return &t->e[i];
  return NULL;
}

int mpk_txn_stage(mpk_txn *t, const char *final_name, int *fd, mpk_error *err) {
  if (fd) *fd = -1;
  if (!t || !final_name || !fd) return mpk_fail(err, MPK_EINVAL, t ? t->dir : NULL, NULL, "NULL argument");
  char buf[1024];
  const char *why;
  if (!valid_final(&t->nm, final_name, &why))
    return mpk_fail(err, MPK_EINVAL, where(buf, sizeof buf, t->dir, final_name), NULL,
                    "cannot be replaced by a transaction: the name %s", why);
  if (find_entry(t, final_name))
    return mpk_fail(err, MPK_EINVAL, where(buf, sizeof buf, t->dir, final_name), NULL,
                    "is already staged in this transaction");
  if (t->n == t->cap) {
    size_t nc = t->cap ? 2 * t->cap : 16;
    entry *ne = realloc(t->e, nc * sizeof *ne);
    if (!ne) return mpk_fail(err, MPK_ENOMEM, t->dir, NULL, "out of memory");
    t->e = ne;
    t->cap = nc;
  }
  size_t fl = strlen(final_name), sl = strlen(t->nm.suffix);
  char *tmpl = malloc(fl + sl + 7);
  entry *e = &t->e[t->n];
  memset(e, 0, sizeof *e);
  e->fd = -1;
  if (!tmpl || !(e->final = strdup(final_name))) {
    free(tmpl);
    free(e->final);
    return mpk_fail(err, MPK_ENOMEM, t->dir, NULL, "out of memory");
  }
  snprintf(tmpl, fl + sl + 7, "%s%sXXXXXX", final_name, t->nm.suffix);
  int f = mpk_temp_open_at(t->dfd, tmpl);
  if (f < 0) {
    int en = errno;
    free(tmpl);
    free(e->final);
    return mpk_fail(err, MPK_EIO, where(buf, sizeof buf, t->dir, final_name), NULL,
                    "cannot create a temporary file beside it: %s", strerror(en));
  }
  /* The new file keeps the permissions of the one it replaces. */
  struct stat st;
  if (fstatat(t->dfd, final_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) fchmod(f, st.st_mode & 07777);
  e->temp = tmpl;
  e->fd = f;
  t->n++;
  *fd = f;
  return 0;
}

/* fsync, measure and close a staged file the caller has finished writing. */
static int finish_entry(mpk_txn *t, entry *e, mpk_error *err) {
  char buf[1024];
  struct stat st;
  if (fsync(e->fd) != 0 || fstat(e->fd, &st) != 0)
    return mpk_fail(err, MPK_EIO, where(buf, sizeof buf, t->dir, e->temp), NULL, "cannot sync the new %s: %s",
                    e->final, strerror(errno));
  e->size = (uint64_t)st.st_size;
  int rc = close(e->fd);
  e->fd = -1;
  if (rc != 0)
    return mpk_fail(err, MPK_EIO, where(buf, sizeof buf, t->dir, e->temp), NULL, "cannot close the new %s: %s",
                    e->final, strerror(errno));
  return 0;
}

typedef struct sync_run {
  mpk_txn *t;
  size_t *which;
} sync_run;

static int sync_task(mpk_pool *pool, void *ctx, size_t k, void *scratch, mpk_error *err) {
  (void)pool, (void)scratch;
  sync_run *r = ctx;
  return finish_entry(r->t, &r->t->e[r->which[k]], err);
}

/* Sync and close every staged file still open that the caller finished (all of them when `all`),
   on a few threads at once. */
static int sync_pending(mpk_txn *t, bool all, mpk_error *err) {
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++) n += t->e[i].fd >= 0 && (all || t->e[i].written);
  if (!n) return 0;
  sync_run r = {.t = t, .which = calloc(n, sizeof *r.which)};
  if (!r.which) return mpk_fail(err, MPK_ENOMEM, t->dir, NULL, "out of memory");
  for (size_t i = 0, k = 0; i < t->n; i++)
    if (t->e[i].fd >= 0 && (all || t->e[i].written)) r.which[k++] = i;
  /* Every file is synced and closed even after one failed: keep_going. */
  int rc = mpk_pool_run(n, &(mpk_pool_opts){.workers = SYNC_WORKERS + 1, .keep_going = true}, sync_task, &r, NULL, err);
  t->unsynced = 0;
  for (size_t i = 0; i < t->n; i++) t->unsynced += t->e[i].fd >= 0 && t->e[i].written;
  free(r.which);
  return rc;
}

int mpk_txn_stage_done(mpk_txn *t, const char *final_name, const char *sha256_hex, mpk_error *err) {
  if (!t || !final_name) return mpk_fail(err, MPK_EINVAL, t ? t->dir : NULL, NULL, "NULL argument");
  char buf[1024];
  int rc = 0;
  entry *e = find_entry(t, final_name);
  if (!e || e->fd < 0 || e->written)
    return mpk_fail(err, MPK_EINVAL, where(buf, sizeof buf, t->dir, final_name), NULL,
                    e ? "is already finished in this transaction" : "is not staged in this transaction");
  if (sha256_hex && !is_lower_hex64(sha256_hex))
    return mpk_fail(err, MPK_EINVAL, where(buf, sizeof buf, t->dir, final_name), NULL,
                    "the SHA-256 given for it is not 64 lowercase hex digits");
  if (sha256_hex) {
    memcpy(e->hex, sha256_hex, 65);
    e->have_digest = true;
  }
  e->written = true;
  if (++t->unsynced >= SYNC_BATCH && (rc = sync_pending(t, false, err))) t->failed = true;
  return rc;
}

int mpk_txn_stage_bytes(mpk_txn *t, const char *final_name, const void *data, size_t len, mpk_error *err) {
  if (!t || (!data && len)) return mpk_fail(err, MPK_EINVAL, t ? t->dir : NULL, NULL, "NULL argument");
  uint8_t d[MPK_SHA256_LEN];
  char hex[65];
  if (mpk_sha256(data, len, d)) return mpk_fail(err, MPK_EIO, final_name, NULL, "cannot hash");
  mpk_hex(d, sizeof d, hex);
  int fd;
  int rc = mpk_txn_stage(t, final_name, &fd, err);
  if (rc) return rc;
  if (mpk_write_all(fd, data, len) != 0) {
    char buf[1024];
    t->failed = true;
    return mpk_fail(err, MPK_EIO, where(buf, sizeof buf, t->dir, t->e[t->n - 1].temp), NULL,
                    "cannot write the new %s: %s", final_name, strerror(errno));
  }
  return mpk_txn_stage_done(t, final_name, hex, err);
}

static void txn_free(mpk_txn *t) {
  for (size_t i = 0; i < t->n; i++)
    if (t->e[i].fd >= 0) close(t->e[i].fd);
  entries_free(t->e, t->n);
  if (t->dfd >= 0) close(t->dfd); /* releases the lock */
  free(t->dir);
  free(t);
}

/* Before the commit point every failure leaves the targets untouched: remove what was staged. */
static void discard(mpk_txn *t) {
  for (size_t i = 0; i < t->n; i++) {
    if (t->e[i].fd >= 0) close(t->e[i].fd);
    t->e[i].fd = -1;
    if (t->e[i].temp) unlinkat(t->dfd, t->e[i].temp, 0);
  }
  unlinkat(t->dfd, t->nm.journal_tmp, 0);
}

void mpk_txn_abort(mpk_txn *t) {
  if (!t) return;
  discard(t);
  txn_free(t);
}

/* Sync every staged file, hash the ones the caller gave no digest for, and check that every
   target can be renamed over: a failure after the commit point must be a real I/O failure, never
   something foreseeable. */
static int prepare(mpk_txn *t, mpk_error *err) {
  int rc = 0;
  char buf[1024];
  size_t n_jobs = 0;
  if ((rc = sync_pending(t, true, err))) return rc;
  for (size_t i = 0; i < t->n; i++) {
    entry *e = &t->e[i];
    if (!e->have_digest) n_jobs++;
    struct stat st;
    if (fstatat(t->dfd, e->final, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      return mpk_fail(err, MPK_EINVAL, where(buf, sizeof buf, t->dir, e->final), NULL,
                      "is not a regular file: a transaction replaces files only");
  }
  if (!n_jobs) return 0;
  const char **nms = calloc(n_jobs, sizeof *nms);
  size_t *which = calloc(n_jobs, sizeof *which);
  uint64_t *sizes = calloc(n_jobs, sizeof *sizes);
  char (*hex)[65] = calloc(n_jobs, sizeof *hex);
  int *errs = calloc(n_jobs, sizeof *errs);
  if (!nms || !which || !sizes || !hex || !errs) {
    rc = mpk_fail(err, MPK_ENOMEM, t->dir, NULL, "out of memory");
    goto out;
  }
  for (size_t i = 0, k = 0; i < t->n; i++) {
    if (t->e[i].have_digest) continue;
    nms[k] = t->e[i].temp;
    which[k++] = i;
  }
  if ((rc = hash_files_at(t->dfd, nms, n_jobs, sizes, hex, errs, err))) goto out;
  for (size_t k = 0; k < n_jobs; k++) {
    entry *e = &t->e[which[k]];
    if (errs[k]) {
      rc = mpk_fail(err, MPK_EIO, where(buf, sizeof buf, t->dir, e->temp), NULL, "cannot hash the new %s: %s", e->final,
                    hash_error(errs[k]));
      goto out;
    }
    e->size = sizes[k];
    memcpy(e->hex, hex[k], 65);
    e->have_digest = true;
  }
out:
  free(nms);
  free(which);
  free(sizes);
  free(hex);
  free(errs);
  return rc;
}

static int write_journal_tmp(mpk_txn *t, const char *data, size_t len, steps *st, mpk_error *err) {
  char file[1024];
  where(file, sizeof file, t->dir, t->nm.journal_tmp);
  int fd = openat(t->dfd, t->nm.journal_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return mpk_fail(err, MPK_EIO, file, NULL, "cannot create the transaction journal: %s", strerror(errno));
  size_t half = len / 2;
  if (mpk_write_all(fd, data, half) != 0) goto fail;
  if (step(st)) return MPK_TXN_STOPPED; /* a torn journal, as a crash mid-write leaves it */
  if (mpk_write_all(fd, data + half, len - half) != 0 || fsync(fd) != 0) goto fail;
  if (close(fd) != 0) {
    fd = -1;
    goto fail;
  }
  return 0;
fail:;
  int e = errno;
  if (fd >= 0) close(fd);
  return mpk_fail(err, MPK_EIO, file, NULL, "cannot write the transaction journal: %s", strerror(e));
}

/* A failure after the commit point: the transaction stands and recovery will finish it. */
static int fail_committed(mpk_txn *t, mpk_error *err, const char *file, const char *what, int e) {
  char buf[1024];
  int rc = mpk_fail(err, MPK_EIO, file ? where(buf, sizeof buf, t->dir, file) : t->dir, NULL,
                    "%s: %s; the %s transaction is committed and the next recovery (a begin, or a load gate) "
                    "completes it",
                    what, strerror(e), t->name);
  txn_free(t);
  return rc;
}

int mpk_txn_commit_until(mpk_txn *t, int stop_after, mpk_error *err) {
  if (!t) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL transaction");
  steps st = {.stop = stop_after};
  if (stop_after == 0) return MPK_TXN_STOPPED;
  char *journal = NULL;
  size_t jlen = 0;
  int rc = t->failed ? mpk_fail(err, MPK_EINVAL, t->dir, NULL,
                                "a staging step of this %s transaction failed: it cannot be committed", t->name)
                     : prepare(t, err);
  if (!rc && t->n == 0) {
    txn_free(t); /* nothing staged: nothing to do */
    return 0;
  }
  if (!rc && step(&st)) return MPK_TXN_STOPPED;
  if (!rc) rc = journal_build(t, &journal, &jlen, err);
  if (!rc) rc = write_journal_tmp(t, journal, jlen, &st, err);
  free(journal);
  if (rc == MPK_TXN_STOPPED || (!rc && step(&st))) return MPK_TXN_STOPPED;
  if (!rc && renameat(t->dfd, t->nm.journal_tmp, t->dfd, t->nm.journal) != 0) {
    char buf[1024];
    rc = mpk_fail(err, MPK_EIO, where(buf, sizeof buf, t->dir, t->nm.journal), NULL,
                  "cannot put the transaction journal in place: %s", strerror(errno));
  }
  if (rc) {
    discard(t);
    txn_free(t);
    return rc;
  }
  if (step(&st)) return MPK_TXN_STOPPED;
  /* The commit point: once the journal's name is durable the transaction will happen. */
  if (mpk_fsync_dir(t->dfd) != 0) return fail_committed(t, err, NULL, "cannot sync the directory", errno);
  if (step(&st)) return MPK_TXN_STOPPED;
  for (size_t i = 0; i < t->n; i++) {
    if (renameat(t->dfd, t->e[i].temp, t->dfd, t->e[i].final) != 0)
      return fail_committed(t, err, t->e[i].final, "cannot move the new contents into place", errno);
    if (step(&st)) return MPK_TXN_STOPPED;
  }
  /* The renames must be durable before the journal that makes them redoable goes. */
  if (mpk_fsync_dir(t->dfd) != 0) return fail_committed(t, err, NULL, "cannot sync the directory", errno);
  if (step(&st)) return MPK_TXN_STOPPED;
  if (unlinkat(t->dfd, t->nm.journal, 0) != 0)
    return fail_committed(t, err, t->nm.journal, "cannot remove the transaction journal", errno);
  if (step(&st)) return MPK_TXN_STOPPED;
  /* Every file is in place and durable; should this last sync fail and the journal reappear after a
     power cut, recovery finds every entry already in place and only removes it. */
  mpk_fsync_dir(t->dfd);
  if (step(&st)) return MPK_TXN_STOPPED;
  txn_free(t);
  return 0;
}

int mpk_txn_commit(mpk_txn *t, mpk_error *err) { return mpk_txn_commit_until(t, -1, err); }
