/* The one output contract of the commands that write data (image -o/--png, audio -o, mlc build -o),
   docs/CLI.md "Output files":

   - "-" is standard output;
   - a path that names the file standard output already is (`-o /dev/stdout > t.raw`, through any
     link) is standard output too: the data go through descriptor 1, never a replacement of the path;
   - an existing character device, FIFO or socket (`/dev/null`, a pipe, `/dev/stdout` on a terminal)
     is opened and written through, never replaced (as root, a rename would turn /dev/null into a
     regular file);
   - anything else is written atomically: a temporary file beside the target, fsync, rename, fsync of
     the directory. A symbolic link to a regular file stays a link: its target is replaced.
   - a directory or a block device is refused before anything is written.
   When the data go to standard output, the caller prints its human report on standard error
   (mpk_output.to_stdout says so). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"

struct mpk_output {
  int fd;
  char *path;      /* as named */
  char *tmp;       /* the temporary file (atomic replacement), else NULL */
  char *target;    /* what the temporary file is renamed over */
  bool to_stdout;  /* the data go to standard output */
  bool through;    /* written through (standard output, device, FIFO, socket) */
  uint64_t written;
};

static bool same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Standard output is `st` (the file the path resolves to). */
static bool is_stdout(const struct stat *st) {
  struct stat so;
  return fstat(STDOUT_FILENO, &so) == 0 && same_file(&so, st);
}

static int use_stdout(mpk_output *o, const char *shown, mpk_error *err) {
  o->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (o->fd < 0)
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot write to standard output: %s", strerror(errno));
  o->to_stdout = true;
  o->through = true;
  return 0;
}

int mpk_output_is_stdout(const char *path) {
  if (!path) return 0;
  if (strcmp(path, "-") == 0) return 1;
  struct stat st;
  return stat(path, &st) == 0 && is_stdout(&st);
}

static void release(mpk_output *o);

static int open_output(const char *path, mpk_output *o, mpk_error *err) {
  o->fd = -1;
  if (!path || !*path) return mpk_fail(err, MPK_EINVAL, "output", NULL, "no output path");
  if (!(o->path = strdup(path))) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  if (strcmp(path, "-") == 0) return use_stdout(o, "standard output", err);
  struct stat st;
  if (stat(path, &st) == 0) { /* follows links: what the data would reach */
    if (is_stdout(&st)) return use_stdout(o, path, err);
    if (S_ISDIR(st.st_mode)) return mpk_fail(err, MPK_EIO, path, NULL, "is a directory, not an output file");
    if (S_ISBLK(st.st_mode))
      return mpk_fail(err, MPK_EIO, path, NULL,
                      "is a block device; an output is a file, a character device, a FIFO, a socket or - "
                      "(standard output)");
    if (!S_ISREG(st.st_mode)) { /* character device, FIFO, socket: written through */
      /* A FIFO waits for its reader here, as any writer's open does. */
      o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (o->fd < 0) return mpk_fail(err, MPK_EIO, path, NULL, "cannot open %s: %s", mpk_file_type_name(st.st_mode), strerror(errno));
      o->through = true;
      return 0;
    }
  } else if (errno != ENOENT) {
    return mpk_fail(err, MPK_EIO, path, NULL, "cannot write: %s", strerror(errno));
  }
  /* A regular file (or a new one): replaced atomically. A link to one keeps being a link: the file
     it resolves to is the one replaced, beside itself. */
  struct stat lst;
  char *target = NULL;
  if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
    target = realpath(path, NULL);
    if (!target) return mpk_fail(err, MPK_EIO, path, NULL, "cannot resolve the link: %s", strerror(errno));
  } else if (!(target = strdup(path))) {
    return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  }
  o->target = target;
  size_t n = strlen(target);
  if (!(o->tmp = malloc(n + 16))) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  snprintf(o->tmp, n + 16, "%s.tmp.XXXXXX", target);
  o->fd = mpk_temp_open(o->tmp);
  if (o->fd < 0) {
    int e = errno;
    free(o->tmp);
    o->tmp = NULL;
    return mpk_fail(err, MPK_EIO, path, NULL, "cannot create a temporary file beside it: %s", strerror(e));
  }
  return 0;
}

int mpk_output_write(mpk_output *o, const void *data, size_t len, mpk_error *err) {
  if (!o || (len && !data)) return mpk_fail(err, MPK_EINVAL, o ? o->path : NULL, NULL, "NULL argument");
  if (!o || o->fd < 0) return mpk_fail(err, MPK_EIO, o && o->path ? o->path : "output", NULL, "output is not open");
  if (mpk_write_all(o->fd, data, len) != 0)
    return mpk_fail(err, MPK_EIO, o->to_stdout && strcmp(o->path, "-") == 0 ? "standard output" : o->path, NULL,
                    "cannot write: %s", strerror(errno));
  o->written += len;
  return 0;
}

int mpk_output_open(const char *path, mpk_output **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, "output", NULL, "no place for the output");
  *out = NULL;
  mpk_output *o = calloc(1, sizeof *o);
  if (!o) return mpk_fail(err, MPK_ENOMEM, path ? path : "output", NULL, "out of memory");
  int rc = open_output(path, o, err);
  if (rc) { /* every failure comes before a descriptor is kept */
    if (o->fd >= 0) close(o->fd);
    release(o);
    return rc;
  }
  *out = o;
  return 0;
}

int mpk_output_to_stdout(const mpk_output *o) { return o && o->to_stdout; }

static void release(mpk_output *o) {
  free(o->path);
  free(o->tmp);
  free(o->target);
  free(o);
}

int mpk_output_commit(mpk_output *o, mpk_error *err) {
  if (!o) return mpk_fail(err, MPK_EINVAL, "output", NULL, "output is not open");
  const char *shown = o->path ? o->path : "output";
  int rc = 0;
  if (o->fd < 0) {
    rc = mpk_fail(err, MPK_EIO, shown, NULL, "output is not open");
  } else if (o->through) {
    if (close(o->fd) != 0 && errno != EINTR) rc = mpk_fail(err, MPK_EIO, shown, NULL, "cannot write: %s", strerror(errno));
  } else if (fsync(o->fd) != 0) {
    rc = mpk_fail(err, MPK_EIO, shown, NULL, "cannot write: %s", strerror(errno));
    close(o->fd);
    unlink(o->tmp);
  } else if (close(o->fd) != 0 || rename(o->tmp, o->target) != 0) {
    rc = mpk_fail(err, MPK_EIO, shown, NULL, "cannot replace: %s", strerror(errno));
    unlink(o->tmp);
  } else {
    char *dir_copy = strdup(o->target);
    int dfd = dir_copy ? open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
      mpk_fsync_dir(dfd); /* the rename is durable only once its directory is */
      close(dfd);
    }
    free(dir_copy);
  }
  release(o);
  return rc;
}

void mpk_output_abort(mpk_output *o) {
  if (!o) return;
  if (o->fd >= 0) {
    close(o->fd);
    if (o->tmp) unlink(o->tmp);
  }
  release(o);
}

int mpk_output_file(const char *path, const void *data, size_t len, mpk_error *err) {
  mpk_output *o = NULL;
  int rc = mpk_output_open(path, &o, err);
  if (!rc) rc = mpk_output_write(o, data, len, err);
  if (rc) {
    mpk_output_abort(o);
    return rc;
  }
  return mpk_output_commit(o, err);
}
