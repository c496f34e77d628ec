/* Files: whole-file read-only views (mmap, so multi-gigabyte libraries are never copied) and
   path helpers. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

int mpk_map_file(const char *path, size_t max_size, mpk_mapped *out, mpk_error *err) {
  memset(out, 0, sizeof *out);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return mpk_fail(err, errno == ENOENT ? MPK_ENOTFOUND : MPK_EIO, path, NULL,
                    "cannot open: %s", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return mpk_fail(err, MPK_EIO, path, NULL, "cannot stat: %s", strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return mpk_fail(err, MPK_EIO, path, NULL, "not a regular file");
  }
  if (max_size && (uint64_t)st.st_size > max_size) {
    close(fd);
    return mpk_fail(err, MPK_ELIMIT, path, NULL, "file of %lld bytes exceeds the limit of %zu bytes",
                    (long long)st.st_size, max_size);
  }
  size_t size = (size_t)st.st_size;
  if (size == 0) {
    close(fd);
    static const uint8_t empty[1];
    out->data = empty;
    return 0;
  }
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return mpk_fail(err, MPK_EIO, path, NULL, "cannot map: %s", strerror(errno));
  out->data = p;
  out->size = size;
  out->mapped = true;
  return 0;
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
