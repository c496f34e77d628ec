/* Replacing a file so that a crash at any instant leaves the old bytes or the new bytes: write a
   temporary file in the same directory, fsync it, rename it over the target, fsync the directory. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int mpk_write_file_atomic(const char *path, const void *data, size_t len, mpk_error *err) {
  if (!path || (!data && len)) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  size_t n = strlen(path);
  char *tmp = malloc(n + 16), *dir_copy = strdup(path);
  if (!tmp || !dir_copy) {
    free(tmp);
    free(dir_copy);
    return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  }
  snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
  int rc = 0;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot create a temporary file beside it: %s", strerror(errno));
    goto out;
  }
  /* mkstemp makes the file 0600; a written document gets the usual 0644 (less the umask). */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
    rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot write: %s", strerror(errno));
    close(fd);
    unlink(tmp);
    goto out;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot replace: %s", strerror(errno));
    unlink(tmp);
    goto out;
  }
  int dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd); /* the rename is durable only once its directory is */
    close(dfd);
  }
out:
  free(tmp);
  free(dir_copy);
  return rc;
}
