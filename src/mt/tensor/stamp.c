/* The load gate's verification stamp ("verified once, gated always"): what the gate hashed, per file
   its SHA-256 with the file's st_dev, st_ino, size, mtime and ctime (nanoseconds) and when it was
   hashed, in MPK_MT_STAMP_FILE inside the inference directory. On a later load a file whose five
   values are all unchanged, and which is not "racy" (its mtime or ctime falls in the second the stamp
   was written, or later: a change made then could leave them equal — git's rule), is accepted with
   the stamp's digest instead of being hashed; the gate then judges that digest exactly as a computed
   one (tensor.c). The document carries a SHA-256 over its own body: a torn, truncated or edited
   stamp is ignored (everything is hashed again), never trusted. Rules and limits: docs/mt.md
   ("The verification stamp").

   The file: {"checksum":"<64 hex>","stamp":<body>}\n where the checksum is the SHA-256 of the body's
   bytes exactly as written, and the body is compact JSON with sorted keys:
   {"files":{"<externalDataLocation>":{"ctime_ns":..,"dev":..,"hashed_at_ms":..,"ino":..,
   "mtime_ns":..,"sha256":"..","size":..}},"format":"modelpkg-verified","version":1,"written_at_ns":..} */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mt/mt.h"

#define STAMP_FORMAT "modelpkg-verified"
#define STAMP_MAX_BYTES ((uint64_t)16 * 1024 * 1024)
static const char prefix[] = "{\"checksum\":\"";
static const char middle[] = "\",\"stamp\":";
static const char suffix[] = "}\n";

int64_t mpk_mt_stamp_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t ns_of(struct timespec ts) { return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec; }

/* Floor division of nanoseconds into seconds (also for times before 1970). */
static int64_t sec_of(int64_t ns) { return ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000); }

void mpk_mt_stamp_free(mpk_mt_stamp *s) {
  if (!s) return;
  json_decref(s->root);
  memset(s, 0, sizeof *s);
}

static bool is_hex64(const char *s) {
  if (!s || strlen(s) != 64) return false;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

/* Check the body's shape; the checksum already vouched for its bytes, this guards the reader. */
static const char *body_invalid(const json_t *root) {
  static const char *const ints[] = {"ctime_ns", "dev", "hashed_at_ms", "ino", "mtime_ns", "size"};
  if (!json_is_object(root)) return "its body is not an object";
  const json_t *f = json_object_get(root, "format");
  if (!json_is_string(f) || strcmp(json_string_value(f), STAMP_FORMAT) != 0) return "its format is not " STAMP_FORMAT;
  const json_t *v = json_object_get(root, "version");
  if (!json_is_integer(v) || json_integer_value(v) != 1) return "its version is not 1";
  if (!json_is_integer(json_object_get(root, "written_at_ns"))) return "written_at_ns is not an integer";
  const json_t *files = json_object_get(root, "files");
  if (!json_is_object(files)) return "files is not an object";
  const char *name;
  const json_t *e;
  json_object_foreach((json_t *)files, name, e) {
    if (!json_is_object(e) || !is_hex64(json_string_value(json_object_get(e, "sha256"))))
      return "an entry has no sha256 of 64 lowercase hex digits";
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
      if (!json_is_integer(json_object_get(e, ints[i]))) return "an entry lacks an integer field";
  }
  return NULL;
}

int mpk_mt_stamp_parse(const void *bytes, size_t len, int64_t file_mtime_ns, mpk_mt_stamp *out, char *why,
                       size_t why_cap) {
  memset(out, 0, sizeof *out);
  if (why_cap) why[0] = '\0';
  const char *data = bytes, *bad = NULL;
  size_t np = sizeof prefix - 1, nm = sizeof middle - 1, ns = sizeof suffix - 1;
  if (!data || len < np + 64 + nm + ns || memcmp(data, prefix, np) != 0 || memcmp(data + np + 64, middle, nm) != 0 ||
      memcmp(data + len - ns, suffix, ns) != 0)
    bad = "it is not a stamp document (torn or edited)";
  const char *body = bad ? NULL : data + np + 64 + nm;
  size_t body_len = bad ? 0 : len - np - 64 - nm - ns;
  if (!bad) {
    uint8_t d[MPK_SHA256_LEN];
    char hex[65];
    mpk_sha256(body, body_len, d);
    mpk_hex(d, sizeof d, hex);
    if (memcmp(hex, data + np, 64) != 0) bad = "its checksum does not match its content (torn or edited)";
  }
  json_t *root = NULL;
  if (!bad) {
    mpk_error pe;
    mpk_error_clear(&pe);
    if (mpk_json_parse(body, body_len, NULL, MPK_MT_STAMP_FILE, &root, &pe)) bad = "its body is not valid JSON";
    else bad = body_invalid(root);
  }
  if (bad) {
    json_decref(root);
    snprintf(why, why_cap, "%s", bad);
    return -1;
  }
  out->root = root;
  out->files = json_object_get(root, "files");
  out->written_at_ns = json_integer_value(json_object_get(root, "written_at_ns"));
  /* The stamp's moment on the file system's clock (its own mtime) and on the writer's: the earlier. */
  int64_t cut = sec_of(out->written_at_ns), own = sec_of(file_mtime_ns);
  out->cut_sec = own < cut ? own : cut;
  return 1;
}

int mpk_mt_stamp_load(int dfd, const char *shown, mpk_mt_stamp *out, char *why, size_t why_cap) {
  memset(out, 0, sizeof *out);
  if (why_cap) why[0] = '\0';
  int fd;
  struct stat st;
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_open_read_at(dfd, shown, MPK_MT_STAMP_FILE, STAMP_MAX_BYTES, "the inference directory", &fd, &st, &e);
  if (rc == MPK_ENOTFOUND) return 0;
  if (rc) {
    snprintf(why, why_cap, "it cannot be read: %s", e.message);
    return -1;
  }
  size_t len = (size_t)st.st_size;
  char *data = malloc(len + 1);
  size_t got = 0;
  while (data && got < len) {
    ssize_t r = pread(fd, data + got, len - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (!data || got != len) {
    free(data);
    snprintf(why, why_cap, "%s", data ? "it could not be read whole" : "out of memory");
    return -1;
  }
  rc = mpk_mt_stamp_parse(data, len, ns_of(st.st_mtim), out, why, why_cap);
  free(data);
  return rc;
}

static uint64_t u64_of(const json_t *e, const char *key) {
  return (uint64_t)json_integer_value(json_object_get(e, key));
}
static int64_t i64_of(const json_t *e, const char *key) { return (int64_t)json_integer_value(json_object_get(e, key)); }

bool mpk_mt_stamp_lookup(const mpk_mt_stamp *s, const char *name, const struct stat *st, char hex[65],
                         int64_t *hashed_at_ms) {
  const json_t *e = s && s->files ? json_object_get(s->files, name) : NULL;
  if (!e) return false;
  int64_t mt = i64_of(e, "mtime_ns"), ct = i64_of(e, "ctime_ns");
  if (u64_of(e, "dev") != (uint64_t)st->st_dev || u64_of(e, "ino") != (uint64_t)st->st_ino ||
      u64_of(e, "size") != (uint64_t)st->st_size || mt != ns_of(st->st_mtim) || ct != ns_of(st->st_ctim))
    return false;
  /* Racy: changed in the stamp's second or later, a later change could leave every value equal. */
  if (sec_of(mt) >= s->cut_sec || sec_of(ct) >= s->cut_sec) return false;
  memcpy(hex, json_string_value(json_object_get(e, "sha256")), 65);
  *hashed_at_ms = i64_of(e, "hashed_at_ms");
  return true;
}

int mpk_mt_stamp_add(json_t *files, const char *name, const char hex[65], const struct stat *st, int64_t hashed_at_ms) {
  json_t *e = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "sha256", hex, "dev", (json_int_t)st->st_dev, "ino",
                        (json_int_t)st->st_ino, "size", (json_int_t)st->st_size, "mtime_ns",
                        (json_int_t)ns_of(st->st_mtim), "ctime_ns", (json_int_t)ns_of(st->st_ctim), "hashed_at_ms",
                        (json_int_t)hashed_at_ms);
  if (!e || json_object_set_new(files, name, e)) return MPK_ENOMEM;
  return 0;
}

int mpk_mt_stamp_write(int dfd, const char *shown, json_t *files, int64_t *written_at_ns, mpk_error *err) {
  char file[1024];
  snprintf(file, sizeof file, "%s/%s", shown, MPK_MT_STAMP_FILE);
  int64_t now = mpk_mt_stamp_now_ns();
  json_t *root = json_pack("{s:O, s:s, s:i, s:I}", "files", files, "format", STAMP_FORMAT, "version", 1,
                           "written_at_ns", (json_int_t)now);
  char *body = root ? json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(root);
  if (!body) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  size_t bl = strlen(body), np = sizeof prefix - 1, nm = sizeof middle - 1, ns = sizeof suffix - 1;
  size_t len = np + 64 + nm + bl + ns;
  char *doc = malloc(len + 1);
  int rc = 0;
  if (!doc) rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  else {
    uint8_t d[MPK_SHA256_LEN];
    char hex[65];
    mpk_sha256(body, bl, d);
    mpk_hex(d, sizeof d, hex);
    snprintf(doc, len + 1, "%s%s%s%s%s", prefix, hex, middle, body, suffix);
    rc = mpk_write_file_atomic_at(dfd, file, MPK_MT_STAMP_FILE, doc, len, err);
  }
  if (!rc && written_at_ns) *written_at_ns = now;
  free(doc);
  free(body);
  return rc;
}

int mpk_mt_stamp_info(const char *inference_dir, int64_t *written_at_ms, size_t *n_files, mpk_error *err) {
  if (written_at_ms) *written_at_ms = 0;
  if (n_files) *n_files = 0;
  if (!inference_dir || !written_at_ms || !n_files)
    return mpk_fail(err, MPK_EINVAL, inference_dir, NULL, "NULL argument");
  int dfd = open(inference_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return mpk_fail(err, errno == ENOENT ? MPK_ENOTFOUND : MPK_EIO, inference_dir, NULL,
                    "cannot open the inference directory: %s", strerror(errno));
  mpk_mt_stamp s;
  char why[600];
  int rc = mpk_mt_stamp_load(dfd, inference_dir, &s, why, sizeof why);
  close(dfd);
  char file[1024];
  snprintf(file, sizeof file, "%s/%s", inference_dir, MPK_MT_STAMP_FILE);
  if (rc == 0) return mpk_fail(err, MPK_ENOTFOUND, file, NULL, "no verification stamp: the load gate has not stamped this tree");
  if (rc < 0)
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "the verification stamp is ignored: %s (the next gate hashes every file)", why);
  *written_at_ms = s.written_at_ns / 1000000;
  *n_files = json_object_size(s.files);
  mpk_mt_stamp_free(&s);
  return 0;
}
