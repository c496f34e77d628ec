/* core/output.c, the output contract of image, audio and mlc build (docs/CLI.md "Output files"):
   "-" and a path that is standard output already write through descriptor 1; a character device,
   FIFO or socket is written through and stays what it is; a regular file is replaced atomically
   (a link to one stays a link); a directory or block device is refused with nothing written.
   Only private nodes in a temporary directory are used: never the system's /dev/stdout or /dev/null. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "testutil.h"
#include "core/core.h"

static char dir[] = "/tmp/mpk_output_XXXXXX";

static char *at(const char *name) {
  static char buf[4][512];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, 512, "%s/%s", dir, name);
  return b;
}

static size_t read_file(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static size_t count_entries(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
  FILE *p = popen(cmd, "r");
  size_t n = 0;
  assert_int_equal(fscanf(p, "%zu", &n), 1);
  pclose(p);
  return n;
}

/* Runs fn with descriptor 1 redirected to `file` (as `> file`), then restores it. */
static void with_stdout_to(const char *file, void (*fn)(void)) {
  fflush(stdout);
  int saved = dup(1), fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(saved >= 0 && fd >= 0);
  dup2(fd, 1);
  close(fd);
  fn();
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
}

static int rc_;
static mpk_error err_;
static void write_link_out(void) { rc_ = mpk_output_file(at("out"), "tensor", 6, &err_); }
static void write_dash(void) { rc_ = mpk_output_file("-", "dash", 4, &err_); }
static bool stdout_flag_;
static void probe_link(void) { stdout_flag_ = mpk_output_is_stdout(at("out")); }

static void test_stdout_through_a_link(void **state) {
  (void)state;
  /* -o /dev/stdout > t.raw, with a private link in place of /dev/stdout */
  assert_int_equal(symlink("/proc/self/fd/1", at("out")), 0);
  with_stdout_to(at("t.raw"), probe_link);
  assert_true(stdout_flag_);
  with_stdout_to(at("t.raw"), write_link_out);
  assert_int_equal(rc_, 0);
  struct stat st;
  assert_int_equal(lstat(at("out"), &st), 0);
  assert_true(S_ISLNK(st.st_mode)); /* the link is still a link */
  char buf[64];
  assert_int_equal(read_file(at("t.raw"), buf, sizeof buf), 6);
  assert_memory_equal(buf, "tensor", 6);
  with_stdout_to(at("t2.raw"), write_dash);
  assert_int_equal(rc_, 0);
  assert_int_equal(read_file(at("t2.raw"), buf, sizeof buf), 4);
  assert_memory_equal(buf, "dash", 4);
  assert_true(mpk_output_is_stdout("-"));
  assert_false(mpk_output_is_stdout(at("t2.raw"))); /* not while stdout is elsewhere */
}

static void *fifo_reader(void *arg) {
  static char got[64];
  int fd = open((const char *)arg, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, got, sizeof got - 1) : -1;
  if (n >= 0) got[n] = '\0';
  if (fd >= 0) close(fd);
  return got;
}

static void test_fifo_and_device_written_through(void **state) {
  (void)state;
  mpk_error err;
  assert_int_equal(mkfifo(at("fifo"), 0600), 0);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, fifo_reader, at("fifo")), 0);
  assert_int_equal(mpk_output_file(at("fifo"), "through", 7, &err), 0);
  void *got;
  pthread_join(t, &got);
  assert_string_equal((char *)got, "through");
  struct stat st;
  assert_int_equal(lstat(at("fifo"), &st), 0);
  assert_true(S_ISFIFO(st.st_mode)); /* still the FIFO */
  /* A private null device (c 1 3) */
  if (mknod(at("null"), S_IFCHR | 0600, makedev(1, 3)) == 0) {
    assert_int_equal(mpk_output_file(at("null"), "gone", 4, &err), 0);
    assert_int_equal(lstat(at("null"), &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* through a link to it too */
    assert_int_equal(symlink(at("null"), at("null-link")), 0);
    assert_int_equal(mpk_output_file(at("null-link"), "gone", 4, &err), 0);
    assert_int_equal(lstat(at("null-link"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(at("null-link"), &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* a block device is refused before anything is opened */
    if (mknod(at("blk"), S_IFBLK | 0600, makedev(7, 200)) == 0) {
      assert_int_equal(mpk_output_file(at("blk"), "x", 1, &err), MPK_EIO);
      assert_non_null(strstr(err.message, "block device"));
    }
  } else {
    print_message("(mknod refused: %s; device cases skipped)\n", strerror(errno));
  }
}

static void test_regular_files_atomic(void **state) {
  (void)state;
  mpk_error err;
  size_t before = count_entries();
  assert_int_equal(mpk_output_file(at("plain"), "one", 3, &err), 0);
  assert_int_equal(mpk_output_file(at("plain"), "two", 3, &err), 0);
  char buf[16];
  assert_int_equal(read_file(at("plain"), buf, sizeof buf), 3);
  assert_memory_equal(buf, "two", 3);
  /* a link to a regular file stays a link; its target gets the bytes */
  assert_int_equal(symlink("plain", at("plain-link")), 0);
  assert_int_equal(mpk_output_file(at("plain-link"), "three", 5, &err), 0);
  struct stat st;
  assert_int_equal(lstat(at("plain-link"), &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  assert_int_equal(read_file(at("plain"), buf, sizeof buf), 5);
  /* abort: nothing left behind, the old bytes kept */
  mpk_output *o = NULL;
  assert_int_equal(mpk_output_open(at("plain"), &o, &err), 0);
  assert_false(mpk_output_to_stdout(o));
  assert_int_equal(mpk_output_write(o, "partial", 7, &err), 0);
  mpk_output_abort(o);
  assert_int_equal(read_file(at("plain"), buf, sizeof buf), 5);
  assert_int_equal(count_entries(), before + 2);
  /* a directory is refused */
  assert_int_equal(mkdir(at("d"), 0700), 0);
  assert_int_equal(mpk_output_file(at("d"), "x", 1, &err), MPK_EIO);
  assert_non_null(strstr(err.message, "is a directory"));
  assert_int_equal(count_entries(), before + 3);
}

int main(void) {
  assert_non_null(mkdtemp(dir));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stdout_through_a_link),
      cmocka_unit_test(test_fifo_and_device_written_through),
      cmocka_unit_test(test_regular_files_atomic),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) rc = 1;
  return rc;
}
