/* The one way a reader opens a file (docs/SECURITY.md, "Opening files").

   A file named inside a package is resolved beneath the package root and never through a symbolic
   link that leaves it: openat2(RESOLVE_BENEATH) where the kernel has it, else a walk of our own
   that opens one component at a time without following links and resolves each link it meets by
   the same rules. Every file is opened non-blocking (a FIFO without a writer cannot hang the
   reader), checked with fstat to be a regular file before the first read, and its size checked
   against the reader's budget before anything is mapped or allocated. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/openat2.h>
#endif

#include "core/core.h"

#define MAX_LINKS 40 /* as the kernel's own limit on links in one resolution */
#define MAX_DEPTH 256

static _Atomic int force_walk = -1; /* tests: MPK_OPEN_FORCE_WALK=1 exercises the portable walk */

const char *mpk_file_type_name(unsigned mode) {
  switch (mode & S_IFMT) {
  case S_IFREG: return "a regular file";
  case S_IFDIR: return "a directory";
  case S_IFIFO: return "a FIFO";
  case S_IFSOCK: return "a socket";
  case S_IFCHR: return "a character device";
  case S_IFBLK: return "a block device";
  case S_IFLNK: return "a symbolic link";
  default: return "not a regular file";
  }
}

/* A message names the path as the caller knows it: root/rel, or rel alone. */
static void show_path(char *buf, size_t cap, const char *root, const char *rel) {
  if (root && *root && strcmp(root, ".") != 0) {
    size_t n = strlen(root);
    snprintf(buf, cap, "%s%s%s", root, n && root[n - 1] == '/' ? "" : "/", rel);
  } else {
    snprintf(buf, cap, "%s", rel);
  }
}

static int escape_error(mpk_error *err, const char *shown, const char *root_label) {
  return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "resolves outside %s (through a symbolic link or \"..\")",
                  root_label ? root_label : "its directory");
}

static int open_errno(mpk_error *err, int e, const char *shown) {
  if (e == ENOENT) return mpk_fail(err, MPK_ENOTFOUND, shown, NULL, "not found (or a dangling symbolic link)");
  if (e == ELOOP) return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "too many symbolic links");
  if (e == ENOTDIR) return mpk_fail(err, MPK_ENOTFOUND, shown, NULL, "not found (a path component is not a directory)");
  return mpk_fail(err, MPK_EIO, shown, NULL, "cannot open: %s", strerror(e));
}

/* The portable walk: resolve `rel` beneath dirfd one component at a time, links by the same rules
   (an absolute link, or ".." above the root, escapes). Returns an O_PATH-less fd opened with
   `final_flags` or -1 with errno; EXDEV means "escapes". */
typedef struct walk_state {
  int fds[MAX_DEPTH + 1]; /* fds[0] is the root (borrowed); each later one a directory we opened */
  int depth;
  int links;
} walk_state;

static void walk_close(walk_state *w) {
  for (int i = 1; i <= w->depth; i++) close(w->fds[i]);
  w->depth = 0;
}

static int walk_path(walk_state *w, const char *path, int final_flags, bool last_is_final, int *out_fd);

/* One component `name` (not "." or ".."): a directory to descend into, the final file, or a link. */
static int walk_component(walk_state *w, const char *name, bool is_last, int final_flags, int *out_fd) {
  int cur = w->fds[w->depth];
  struct stat st;
  if (fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
  if (S_ISLNK(st.st_mode)) {
    if (++w->links > MAX_LINKS) {
      errno = ELOOP;
      return -1;
    }
    char *target = malloc(PATH_MAX);
    if (!target) return -1;
    ssize_t n = readlinkat(cur, name, target, PATH_MAX - 1);
    if (n >= 0) target[n] = 0;
    if (n < 0 || target[0] == '/') {
      if (n >= 0) errno = EXDEV; /* an absolute link leaves the root */
      free(target);
      return -1;
    }
    int rc = walk_path(w, target, final_flags, is_last, out_fd);
    int e = errno;
    free(target);
    errno = e;
    return rc;
  }
  if (is_last) {
    int fd = openat(cur, name, final_flags | O_NOFOLLOW);
    if (fd < 0) return -1;
    *out_fd = fd;
    return 0;
  }
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  if (w->depth >= MAX_DEPTH) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  w->fds[++w->depth] = fd;
  return 0;
}

static int walk_names(walk_state *w, char **names, size_t n, int final_flags, bool last_is_final, int *out_fd);

static int walk_path(walk_state *w, const char *path, int final_flags, bool last_is_final, int *out_fd) {
  /* The components, split in a heap copy: a link's target recurses, so the frame stays small. */
  size_t len = strlen(path);
  if (len >= PATH_MAX) {
    errno = ENAMETOOLONG;
    return -1;
  }
  char *buf = strdup(path);
  char **names = malloc((len / 2 + 1) * sizeof *names); /* at most one name per two bytes */
  if (!buf || !names) {
    free(buf);
    free(names);
    errno = ENOMEM;
    return -1;
  }
  size_t n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) names[n++] = tok;
  int rc = walk_names(w, names, n, final_flags, last_is_final, out_fd);
  int e = errno;
  free(names);
  free(buf);
  errno = e;
  return rc;
}

static int walk_names(walk_state *w, char **names, size_t n, int final_flags, bool last_is_final, int *out_fd) {
  if (n == 0) { /* "" or "/"-only: the current directory itself */
    if (!last_is_final) return 0;
    int fd = openat(w->fds[w->depth], ".", final_flags);
    if (fd < 0) return -1;
    *out_fd = fd;
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    bool last = last_is_final && i + 1 == n;
    if (strcmp(names[i], ".") == 0) {
      if (last) {
        int fd = openat(w->fds[w->depth], ".", final_flags);
        if (fd < 0) return -1;
        *out_fd = fd;
        return 0;
      }
      continue;
    }
    if (strcmp(names[i], "..") == 0) {
      if (w->depth == 0) {
        errno = EXDEV;
        return -1;
      }
      close(w->fds[w->depth--]);
      if (last) {
        int fd = openat(w->fds[w->depth], ".", final_flags);
        if (fd < 0) return -1;
        *out_fd = fd;
        return 0;
      }
      continue;
    }
    if (walk_component(w, names[i], last, final_flags, out_fd) != 0) return -1;
  }
  return 0;
}

static int open_beneath(int dirfd, const char *rel, int flags) {
  if (force_walk < 0) {
    const char *e = getenv("MPK_OPEN_FORCE_WALK");
    force_walk = e && *e == '1';
  }
#if defined(__linux__) && defined(SYS_openat2)
  if (!force_walk) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)flags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    /* EAGAIN: a rename or a mount anywhere on the system raced with the resolution of a ".." and
       the kernel could not prove the path stayed beneath (openat2(2): "the caller may choose to
       retry"); seen here in up to a few of a thousand such opens under load. Retried; still racing, the walk
       below decides. */
    long fd = -1;
    for (int tries = 0; tries < 8; tries++) {
      fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
      if (fd >= 0 || errno != EAGAIN) break;
    }
    if (fd >= 0) return (int)fd;
    if (errno != ENOSYS && errno != EPERM && errno != EAGAIN) return -1; /* EPERM: a seccomp filter without openat2 */
  }
#endif
  walk_state w = {.depth = 0, .links = 0};
  w.fds[0] = dirfd;
  int out = -1;
  int rc = walk_path(&w, rel, flags, true, &out);
  int e = errno;
  walk_close(&w);
  errno = e;
  return rc == 0 ? out : -1;
}

int mpk_open_read_at(int dirfd, const char *root_shown, const char *rel, uint64_t max_size, const char *root_label,
                     int *fd_out, struct stat *st_out, mpk_error *err) {
  char shown[1024];
  show_path(shown, sizeof shown, root_shown, rel);
  *fd_out = -1;
  if (!rel || !*rel) return mpk_fail(err, MPK_EINVAL, shown, NULL, "empty path");
  if (rel[0] == '/') return escape_error(err, shown, root_label);
  int fd = open_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == EXDEV) return escape_error(err, shown, root_label);
    return open_errno(err, errno, shown);
  }
  return mpk_open_finish(fd, shown, max_size, fd_out, st_out, err);
}

int mpk_open_read(const char *root, const char *rel, uint64_t max_size, int *fd_out, struct stat *st_out,
                  mpk_error *err) {
  *fd_out = -1;
  if (!root) {
    /* A path the user named: links are the user's to choose; the file must still be regular. */
    int fd = open(rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return open_errno(err, errno, rel);
    return mpk_open_finish(fd, rel, max_size, fd_out, st_out, err);
  }
  int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return open_errno(err, errno, root);
  int rc = mpk_open_read_at(dfd, root, rel, max_size, "the package directory", fd_out, st_out, err);
  close(dfd);
  return rc;
}

int mpk_open_finish(int fd, const char *shown, uint64_t max_size, int *fd_out, struct stat *st_out, mpk_error *err) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot stat: %s", strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "is %s, not a regular file", mpk_file_type_name(st.st_mode));
  }
  if (max_size && (uint64_t)st.st_size > max_size) {
    close(fd);
    return mpk_fail(err, MPK_ELIMIT, shown, NULL, "file of %llu bytes exceeds the reader's limit of %llu bytes",
                    (unsigned long long)st.st_size, (unsigned long long)max_size);
  }
  /* Reads of a regular file never block; clear the flag so callers see an ordinary descriptor. */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *fd_out = fd;
  if (st_out) *st_out = st;
  return 0;
}

int mpk_open_dir_at(int dirfd, const char *root_shown, const char *rel, int *fd_out, mpk_error *err) {
  char shown[1024];
  show_path(shown, sizeof shown, root_shown, rel);
  *fd_out = -1;
  /* Writers never pass through a link: each component is opened O_NOFOLLOW. */
  char buf[PATH_MAX];
  size_t len = strlen(rel);
  if (len >= sizeof buf) return mpk_fail(err, MPK_ELIMIT, shown, NULL, "path too long");
  memcpy(buf, rel, len + 1);
  /* An absolute path (allowed from AT_FDCWD only: a caller's own path) starts at "/". */
  if (rel[0] == '/' && dirfd != AT_FDCWD) {
    return escape_error(err, shown, NULL);
  }
  int cur = rel[0] == '/'          ? open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            : dirfd == AT_FDCWD ? open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                                : fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (cur < 0) return mpk_fail(err, MPK_EIO, shown, NULL, "cannot open: %s", strerror(errno));
  char *save = NULL;
  for (char *tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
    if (strcmp(tok, ".") == 0) continue;
    if (strcmp(tok, "..") == 0) {
      close(cur);
      return escape_error(err, shown, NULL);
    }
    int next = openat(cur, tok, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    if (next < 0) {
      struct stat st;
      bool link = fstatat(cur, tok, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      close(cur);
      if (link) return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "\"%s\" is a symbolic link: refused (never followed by a writer)", tok);
      if (e == ENOTDIR) return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "\"%s\" is not a directory", tok);
      return open_errno(err, e, shown);
    }
    close(cur);
    cur = next;
  }
  *fd_out = cur;
  return 0;
}
