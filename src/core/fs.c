/* Files: whole-file read-only views (mmap, so multi-gigabyte libraries are never copied) and
   path helpers. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"

int mpk_map_fd(int fd, const char *shown, size_t size, mpk_mapped *out, mpk_error *err) {
  memset(out, 0, sizeof *out);
  if (size == 0) {
    close(fd);
    static const uint8_t empty[1];
    out->data = empty;
    return 0;
  }
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return mpk_fail(err, MPK_EIO, shown, NULL, "cannot map: %s", strerror(e));
  out->data = p;
  out->size = size;
  out->mapped = true;
  return 0;
}

int mpk_map_beneath(const char *root, const char *rel, size_t max_size, mpk_mapped *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!rel || !out) return mpk_fail(err, MPK_EINVAL, root, NULL, "NULL argument");
  int fd;
  struct stat st;
  int rc = mpk_open_read(root, rel, max_size, &fd, &st, err);
  if (rc) return rc;
  char *shown = root ? mpk_path_join(root, rel) : NULL;
  rc = mpk_map_fd(fd, shown ? shown : rel, (size_t)st.st_size, out, err);
  free(shown);
  return rc;
}

int mpk_map_file(const char *path, size_t max_size, mpk_mapped *out, mpk_error *err) {
  return mpk_map_beneath(NULL, path, max_size, out, err);
}

int mpk_map_document(const char *path, const char *default_name, char **file, mpk_mapped *out, mpk_error *err) {
  bool dir = mpk_is_dir(path);
  *file = dir ? mpk_path_join(path, default_name) : strdup(path);
  if (!*file) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  /* The document inside a package directory stays inside it; a file the user named is theirs. */
  int rc = dir ? mpk_map_beneath(path, default_name, MPK_JSON_DEFAULT_MAX_BYTES, out, err)
               : mpk_map_file(*file, MPK_JSON_DEFAULT_MAX_BYTES, out, err);
  if (rc) {
    free(*file);
    *file = NULL;
  }
  return rc;
}

void mpk_unmap_file(mpk_mapped *m) {
  if (m && m->mapped) munmap((void *)m->data, m->size);
  if (m) memset(m, 0, sizeof *m);
}

bool mpk_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool mpk_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *mpk_path_join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  bool slash = a > 0 && dir[a - 1] != '/';
  char *p = malloc(a + b + 2);
  if (!p) return NULL;
  memcpy(p, dir, a);
  if (slash) p[a++] = '/';
  memcpy(p + a, name, b + 1);
  return p;
}

bool mpk_path_is_confined(const char *rel, const char **why) {
  const char *w = NULL;
  if (!rel || !*rel) w = "is empty";
  else if (rel[0] == '/') w = "is absolute";
  else if (strchr(rel, '\\')) w = "contains a backslash";
  else if (((rel[0] | 0x20) >= 'a' && (rel[0] | 0x20) <= 'z') && rel[1] == ':') w = "starts with a drive letter";
  for (const char *seg = rel; !w && seg && *seg;) {
    const char *end = strchr(seg, '/');
    size_t n = end ? (size_t)(end - seg) : strlen(seg);
    if (n == 0) w = "has an empty segment";
    else if (n == 1 && seg[0] == '.') w = "has a \".\" segment";
    else if (n == 2 && seg[0] == '.' && seg[1] == '.') w = "leaves the package (\"..\")";
    seg = end ? end + 1 : NULL;
    if (end && !*seg) w = "ends with a slash";
  }
  if (why) *why = w;
  return w == NULL;
}

bool mpk_path_resolves_inside(const char *dir, const char *path) {
  char *rd = realpath(dir, NULL), *rp = realpath(path, NULL);
  bool inside = false;
  if (rd && rp) {
    size_t n = strlen(rd);
    inside = strncmp(rp, rd, n) == 0 && (rp[n] == '/' || (n == 1 && rd[0] == '/'));
  }
  free(rd);
  free(rp);
  return inside;
}

/* DIR/name is an entry (a dangling symbolic link counts: the check says what is wrong with it). */
static int has_entry(const char *dir, const char *name, bool *out) {
  char *p = mpk_path_join(dir, name);
  if (!p) return MPK_ENOMEM;
  struct stat st;
  *out = lstat(p, &st) == 0;
  free(p);
  return 0;
}

int mpk_package_kind(const char *dir, enum mpk_package_kind *out, mpk_error *err) {
  if (out) *out = MPK_PACKAGE_NONE;
  if (!dir || !out) return mpk_fail(err, MPK_EINVAL, dir ? dir : "package", NULL, "no directory or no place for its kind");
  if (!mpk_is_dir(dir)) return 0;
  bool mt = false, mlc = false;
  if (has_entry(dir, MPK_MT_MANIFEST_FILENAME, &mt) || has_entry(dir, MPK_MLC_MANIFEST_FILENAME, &mlc))
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  if (mt && mlc)
    return mpk_fail(err, MPK_EMALFORMED, dir, NULL,
                    "holds both %s and %s: a package directory is one kind or the other, so neither is checked",
                    MPK_MLC_MANIFEST_FILENAME, MPK_MT_MANIFEST_FILENAME);
  *out = mt ? MPK_PACKAGE_MT : mlc ? MPK_PACKAGE_MLC : MPK_PACKAGE_NONE;
  return 0;
}
