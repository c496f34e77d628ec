/* A directory tree, walked deterministically: depth first, each directory's names in bytewise
   order, every entry that is not a directory reported with its type. Nothing is followed: a
   symbolic link is reported as one (MPK_WALK_LINK), so what a caller sees is exactly what lives
   inside the directory. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"

#define MAX_PATH_BYTES 4096 /* of a path relative to the walked directory */

typedef struct walker {
  char *path; /* dir + "/" + the relative path being visited */
  size_t cap;
  size_t root_len;
  mpk_walk_fn fn;
  void *ctx;
  mpk_error *err;
} walker;

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* The names in the directory w->path, sorted bytewise ("." and ".." left out). */
static int read_names(walker *w, char ***out, size_t *n_out) {
  *out = NULL;
  *n_out = 0;
  DIR *d = opendir(w->path);
  if (!d) return mpk_fail(w->err, MPK_EIO, w->path, NULL, "cannot read the directory: %s", strerror(errno));
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (;;) {
    errno = 0;
    struct dirent *e = readdir(d);
    if (!e) {
      if (errno) rc = mpk_fail(w->err, MPK_EIO, w->path, NULL, "cannot read the directory: %s", strerror(errno));
      break;
    }
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **p = realloc(names, cap * sizeof *p);
      if (!p) {
        rc = mpk_fail(w->err, MPK_ENOMEM, w->path, NULL, "out of memory");
        break;
      }
      names = p;
    }
    if (!(names[n] = strdup(e->d_name))) {
      rc = mpk_fail(w->err, MPK_ENOMEM, w->path, NULL, "out of memory");
      break;
    }
    n++;
  }
  closedir(d);
  if (rc) {
    free_names(names, n);
    return rc;
  }
  mpk_sort(names, n, sizeof *names, cmp_name);
  *out = names;
  *n_out = n;
  return 0;
}

/* Visit the directory whose full path is w->path[0, len). */
static int visit(walker *w, size_t len, int depth) {
  if (depth > MPK_WALK_MAX_DEPTH)
    return mpk_fail(w->err, MPK_ELIMIT, w->path, NULL, "directories nest deeper than %d levels", MPK_WALK_MAX_DEPTH);
  char **names;
  size_t n;
  int rc = read_names(w, &names, &n);
  if (rc) return rc;
  for (size_t i = 0; i < n && !rc; i++) {
    size_t k = strlen(names[i]), sub = len + 1 + k;
    if (sub - w->root_len - 1 > MAX_PATH_BYTES) {
      rc = mpk_fail(w->err, MPK_ELIMIT, w->path, NULL, "a path inside the directory is longer than %d bytes",
                    MAX_PATH_BYTES);
      break;
    }
    if (sub + 1 > w->cap) {
      size_t cap = sub + 1 > w->cap * 2 ? sub + 1 : w->cap * 2;
      char *p = realloc(w->path, cap);
      if (!p) {
        rc = mpk_fail(w->err, MPK_ENOMEM, w->path, NULL, "out of memory");
        break;
      }
      w->path = p;
      w->cap = cap;
    }
    w->path[len] = '/';
    memcpy(w->path + len + 1, names[i], k + 1);
    struct stat st;
    if (lstat(w->path, &st) != 0) {
      rc = mpk_fail(w->err, MPK_EIO, w->path, NULL, "cannot stat: %s", strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
      rc = visit(w, sub, depth + 1);
    } else {
      int type = S_ISREG(st.st_mode) ? MPK_WALK_FILE : S_ISLNK(st.st_mode) ? MPK_WALK_LINK : MPK_WALK_OTHER;
      rc = w->fn(w->ctx, w->path + w->root_len + 1, type, type == MPK_WALK_FILE ? (uint64_t)st.st_size : 0);
    }
    w->path[len] = '\0';
  }
  free_names(names, n);
  return rc;
}

int mpk_walk_files(const char *dir, mpk_walk_fn fn, void *ctx, mpk_error *err) {
  if (!dir || !fn) return mpk_fail(err, MPK_EINVAL, dir, NULL, "NULL argument");
  if (!mpk_is_dir(dir)) return mpk_fail(err, MPK_ENOTFOUND, dir, NULL, "not a directory");
  walker w = {.fn = fn, .ctx = ctx, .err = err};
  w.root_len = strlen(dir);
  while (w.root_len > 1 && dir[w.root_len - 1] == '/') w.root_len--; /* "pkg/" walks as "pkg" */
  w.cap = w.root_len + 256;
  if (!(w.path = malloc(w.cap))) return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  memcpy(w.path, dir, w.root_len);
  w.path[w.root_len] = '\0';
  int rc = visit(&w, w.root_len, 0);
  free(w.path);
  return rc;
}
