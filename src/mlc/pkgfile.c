/* Files inside an MLC package: every one (the manifest, the chat config, the tensor cache, each
   shard) is opened beneath the package directory with core/open.c's rules, so a symbolic link out
   of the package, a FIFO, a directory or a dangling link is an error naming the file. Only a name
   that does not exist at all is "absent". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlc/mlc.h"

int mpk_mlc_pkg_lstat(const char *dir, const char *rel) {
  char *path = mpk_path_join(dir, rel);
  if (!path) return MPK_MLC_PKG_PRESENT; /* let the open say what is wrong */
  struct stat st;
  int rc = lstat(path, &st);
  int e = errno;
  free(path);
  if (rc != 0 && (e == ENOENT || e == ENOTDIR)) return MPK_MLC_PKG_ABSENT;
  return MPK_MLC_PKG_PRESENT;
}

/* A "not found" from the open, though lstat saw a name: a dangling symbolic link. */
static int refine(const char *dir, const char *rel, int rc, mpk_error *err) {
  if (rc != MPK_ENOTFOUND || mpk_mlc_pkg_lstat(dir, rel) == MPK_MLC_PKG_ABSENT) return rc;
  char *path = mpk_path_join(dir, rel);
  struct stat st;
  if (path && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
    rc = mpk_fail(err, MPK_EMALFORMED, path, NULL, "is a dangling symbolic link (its target does not exist)");
  free(path);
  return rc;
}

int mpk_mlc_pkg_open(const char *dir, const char *rel, uint64_t max_size, int *fd, struct stat *st,
                     mpk_error *err) {
  return refine(dir, rel, mpk_open_read(dir, rel, max_size, fd, st, err), err);
}

int mpk_mlc_pkg_map(const char *dir, const char *rel, size_t max_size, mpk_mapped *m, mpk_error *err) {
  return refine(dir, rel, mpk_map_beneath(dir, rel, max_size, m, err), err);
}

int mpk_mlc_pkg_load_json(const char *dir, const char *rel, json_t **out, mpk_error *err) {
  *out = NULL;
  mpk_mapped m;
  int rc = mpk_mlc_pkg_map(dir, rel, MPK_JSON_DEFAULT_MAX_BYTES, &m, err);
  if (rc) return rc;
  char *path = mpk_path_join(dir, rel);
  rc = mpk_json_parse(m.data, m.size, NULL, path ? path : rel, out, err);
  free(path);
  mpk_unmap_file(&m);
  return rc;
}
