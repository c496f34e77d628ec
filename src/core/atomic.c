/* Replacing a file so that a crash at any instant leaves the old bytes or the new bytes: write a
   temporary file in the same directory, fsync it, rename it over the target, fsync the directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/txn.h" /* the helpers below, shared with txn.c */

int mpk_write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO; /* write() makes no progress: report it rather than spin */
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Like mkstemp(), but created 0666 so that the kernel applies the umask: a written document gets
   the usual 0644, and no thread has to read the process-wide umask by changing it (umask(0) and
   back would let another thread create a file world-writable in between). O_EXCL makes any name
   safe to try; the names only need to differ between tries, processes and threads. */
int mpk_temp_open(char *template_path) { return mpk_temp_open_at(AT_FDCWD, template_path); }

int mpk_temp_open_at(int dfd, char *template_path) {
  static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  static _Atomic uint64_t counter;
  size_t n = strlen(template_path);
  if (n < 6 || strcmp(template_path + n - 6, "XXXXXX") != 0) {
    errno = EINVAL;
    return -1;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
               (uint64_t)(uintptr_t)&ts;
  for (int attempt = 0; attempt < 1000; attempt++) {
    uint64_t v = x + 0x9E3779B97F4A7C15ull * (atomic_fetch_add(&counter, 1) + 1); /* splitmix64 */
    v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
    v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
    v ^= v >> 31;
    for (int i = 0; i < 6; i++, v /= 62) template_path[n - 6 + i] = chars[v % 62];
    int fd = openat(dfd, template_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

int mpk_fsync_dir(int dfd) {
  if (fsync(dfd) == 0) return 0;
  /* Some file systems cannot sync a directory (EINVAL): their renames are as durable as they get. */
  return errno == EINVAL ? 0 : -1;
}

int mpk_write_file_atomic(const char *path, const void *data, size_t len, mpk_error *err) {
  if (!path || (!data && len)) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  char *dir_copy = strdup(path), *base_copy = strdup(path);
  if (!dir_copy || !base_copy) {
    free(dir_copy);
    free(base_copy);
    return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  }
  int rc;
  int dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot create a temporary file beside it: %s", strerror(errno));
  else {
    rc = mpk_write_file_atomic_at(dfd, path, basename(base_copy), data, len, err);
    close(dfd);
  }
  free(dir_copy);
  free(base_copy);
  return rc;
}

int mpk_write_file_atomic_at(int dfd, const char *shown, const char *name, const void *data, size_t len,
                             mpk_error *err) {
  if (!shown) shown = name;
  if (dfd < 0 || !name || !*name || strchr(name, '/') || (!data && len))
    return mpk_fail(err, MPK_EINVAL, shown, NULL, "invalid argument");
  /* A document replaces a regular file (or a link, which the rename replaces, never follows). A
     FIFO, socket, device or directory where a document belongs is refused: renaming over it would
     replace a node that is not ours (as root, /dev/null), and opening it could block. Data
     outputs that may be devices go through core/output.c instead. */
  struct stat st;
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    return mpk_fail(err, MPK_EIO, shown, NULL, "is %s, not a regular file: a document is never written into one",
                    mpk_file_type_name(st.st_mode));
  size_t n = strlen(name);
  char *tmp = malloc(n + 16);
  if (!tmp) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  snprintf(tmp, n + 16, "%s.tmp.XXXXXX", name);
  int rc = 0;
  int fd = mpk_temp_open_at(dfd, tmp);
  if (fd < 0) {
    rc = mpk_fail(err, MPK_EIO, shown, NULL, "cannot create a temporary file beside it: %s", strerror(errno));
    goto out;
  }
  if (mpk_write_all(fd, data, len) != 0 || fsync(fd) != 0) {
    rc = mpk_fail(err, MPK_EIO, shown, NULL, "cannot write: %s", strerror(errno));
    close(fd);
    unlinkat(dfd, tmp, 0);
    goto out;
  }
  if (close(fd) != 0 || renameat(dfd, tmp, dfd, name) != 0) {
    rc = mpk_fail(err, MPK_EIO, shown, NULL, "cannot replace: %s", strerror(errno));
    unlinkat(dfd, tmp, 0);
    goto out;
  }
  mpk_fsync_dir(dfd); /* the rename is durable only once its directory is */
out:
  free(tmp);
  return rc;
}

/* mkstemp's suffix: six characters from [A-Za-z0-9]. */
bool mpk_is_temp_suffix(const char *s) {
  for (int i = 0; i < 6; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9'))) return false;
  return s[6] == '\0';
}

int mpk_atomic_cleanup(const char *path, size_t *removed, mpk_error *err) {
  if (removed) *removed = 0;
  char *dir_copy = strdup(path), *base_copy = strdup(path);
  if (!dir_copy || !base_copy) {
    free(dir_copy);
    free(base_copy);
    return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  }
  const char *dir = dirname(dir_copy), *base = basename(base_copy);
  size_t bl = strlen(base);
  int rc = 0;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno != ENOENT) rc = mpk_fail(err, MPK_EIO, dir, NULL, "cannot list: %s", strerror(errno));
    goto out;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    /* Only our own leftovers: "<base>.tmp.XXXXXX", a regular file. */
    if (strncmp(e->d_name, base, bl) != 0 || strncmp(e->d_name + bl, ".tmp.", 5) != 0 ||
        !mpk_is_temp_suffix(e->d_name + bl + 5))
      continue;
    char *full = mpk_path_join(dir, e->d_name);
    struct stat st;
    if (full && lstat(full, &st) == 0 && S_ISREG(st.st_mode)) {
      if (unlink(full) == 0) {
        if (removed) (*removed)++;
      } else {
        rc = mpk_fail(err, MPK_EIO, full, NULL, "cannot remove a stale temporary file: %s", strerror(errno));
      }
    }
    free(full);
    if (rc) break;
  }
  closedir(d);
out:
  free(dir_copy);
  free(base_copy);
  return rc;
}
