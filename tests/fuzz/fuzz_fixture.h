/* A fuzz target's scratch package: a private copy of one of examples/ (MPK_SOURCE_DIR) made once per
   process under $TMPDIR, so that a target can put its input where a package-level reader looks for
   it. Never the source tree itself. */
#ifndef MPK_FUZZ_FIXTURE_H
#define MPK_FUZZ_FIXTURE_H

#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline int fuzz_copy_tree(const char *from, const char *to) {
  DIR *d = opendir(from);
  if (!d) return -1;
  struct dirent *e;
  int rc = 0;
  while (!rc && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char a[8192], b[8192];
    snprintf(a, sizeof a, "%s/%s", from, e->d_name);
    snprintf(b, sizeof b, "%s/%s", to, e->d_name);
    struct stat st;
    if (lstat(a, &st)) rc = -1;
    else if (S_ISDIR(st.st_mode)) rc = mkdir(b, 0755) || fuzz_copy_tree(a, b);
    else if (S_ISREG(st.st_mode)) {
      int in = open(a, O_RDONLY), out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      char buf[65536];
      ssize_t n;
      while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n) rc = -1;
      if (in < 0 || out < 0) rc = -1;
      if (in >= 0) close(in);
      if (out >= 0) close(out);
    }
  }
  closedir(d);
  return rc;
}

static char fuzz_scratch_[4096];

static inline int fuzz_rm_(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* Remove the scratch directory at exit (a crash leaves it for the reproducer). */
static inline void fuzz_cleanup_(void) {
  if (fuzz_scratch_[0]) nftw(fuzz_scratch_, fuzz_rm_, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh scratch directory under $TMPDIR, removed at exit (aborts when it cannot be made). */
static inline const char *fuzz_scratch(void) {
  if (fuzz_scratch_[0]) return fuzz_scratch_;
  const char *tmp = getenv("TMPDIR");
  snprintf(fuzz_scratch_, sizeof fuzz_scratch_, "%s/mpk-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(fuzz_scratch_)) abort();
  atexit(fuzz_cleanup_);
  return fuzz_scratch_;
}

/* The copy of examples/<name> (made on the first call; aborts when it cannot be made). */
static inline const char *fuzz_fixture(const char *name) {
  static const char *dir;
  if (dir) return dir;
  char src[4096];
  dir = fuzz_scratch();
  snprintf(src, sizeof src, "%s/examples/%s", MPK_SOURCE_DIR, name);
  if (fuzz_copy_tree(src, dir)) {
    fprintf(stderr, "fuzz fixture: cannot copy %s to %s\n", src, dir);
    abort();
  }
  return dir;
}

/* Replace DIR/rel with the fuzz input (0 or -1). */
static inline int fuzz_put(const char *dir, const char *rel, const void *data, size_t size) {
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  int rc = write(fd, data, size) == (ssize_t)size ? 0 : -1;
  close(fd);
  return rc;
}

#endif
