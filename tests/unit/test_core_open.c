/* core/open.c: files are opened beneath their root without a link leading out, FIFOs and other
   non-regular files are refused without blocking, sizes are bounded before any read. Every case
   runs twice: through openat2(RESOLVE_BENEATH) and through the portable walk. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "core/core.h"

static char root[512], outside[512];
static const char *self_argv0;

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int setup(void **state) {
  (void)state;
  const char *tmp = tu_tmpdir();
  snprintf(root, sizeof root, "%s/pkg", tmp);
  snprintf(outside, sizeof outside, "%s/outside.txt", tmp);
  tu_sh("rm -rf '%s' && mkdir -p '%s/sub/deeper'", root, root);
  char p[1024];
  snprintf(p, sizeof p, "%s/doc.json", root);
  write_text(p, "{}");
  snprintf(p, sizeof p, "%s/sub/deeper/w.bin", root);
  write_text(p, "0123456789");
  write_text(outside, "secret");
  tu_sh("cd '%s' && ln -s doc.json inside_link && ln -s sub/deeper deeplink && ln -s ../doc.json sub/up_ok"
        " && ln -s '%s' abs_out && ln -s ../outside.txt rel_out && ln -s nowhere dangling && mkfifo fifo"
        " && ln -s sub/../../outside.txt dotdot_out && ln -s loop1 loop2 && ln -s loop2 loop1",
        root, outside);
  return 0;
}

static int open_ok(const char *rel, uint64_t max, off_t want_size) {
  int fd;
  struct stat st;
  mpk_error err;
  int rc = mpk_open_read(root, rel, max, &fd, &st, &err);
  if (rc) {
    print_error("%s: %s\n", rel, tu_err(&err));
    return rc;
  }
  assert_int_equal(st.st_size, want_size);
  assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  close(fd);
  return 0;
}

static void expect_refused(const char *rel, int code, const char *fragment) {
  int fd = 12345;
  mpk_error err;
  alarm(5); /* a FIFO must never block: fail the test rather than hang */
  int rc = mpk_open_read(root, rel, 0, &fd, NULL, &err);
  alarm(0);
  if (rc != code || !strstr(err.message, fragment)) fail_msg("%s: got %d \"%s\", wanted %d with \"%s\"", rel, rc, err.message, code, fragment);
  assert_int_equal(fd, -1);
  assert_non_null(strstr(err.file, rel));
}

static void run_cases(void) {
  assert_int_equal(open_ok("doc.json", 0, 2), 0);
  assert_int_equal(open_ok("sub/deeper/w.bin", 10, 10), 0);
  assert_int_equal(open_ok("inside_link", 0, 2), 0);        /* a link that stays inside */
  assert_int_equal(open_ok("deeplink/w.bin", 0, 10), 0);    /* through a directory link */
  assert_int_equal(open_ok("sub/up_ok", 0, 2), 0);          /* ".." inside the root */
  expect_refused("abs_out", MPK_EMALFORMED, "resolves outside");
  expect_refused("rel_out", MPK_EMALFORMED, "resolves outside");
  expect_refused("dotdot_out", MPK_EMALFORMED, "resolves outside");
  expect_refused("../outside.txt", MPK_EMALFORMED, "resolves outside");
  expect_refused("dangling", MPK_ENOTFOUND, "not found");
  expect_refused("missing.json", MPK_ENOTFOUND, "not found");
  expect_refused("fifo", MPK_EMALFORMED, "is a FIFO, not a regular file");
  expect_refused("sub", MPK_EMALFORMED, "is a directory, not a regular file");
  expect_refused("loop1", MPK_EMALFORMED, "too many symbolic links");
  expect_refused("sub/deeper/w.bin/x", MPK_ENOTFOUND, "not found");
  int fd;
  mpk_error err;
  assert_int_equal(mpk_open_read(root, "sub/deeper/w.bin", 9, &fd, NULL, &err), MPK_ELIMIT);
  assert_non_null(strstr(err.message, "limit of 9 bytes"));
}

static void test_openat2(void **state) {
  (void)state;
  unsetenv("MPK_OPEN_FORCE_WALK");
  run_cases();
}

/* openat2 answers EAGAIN when a rename anywhere on the system races with the resolution of a ".."
   (seen: a few in a thousand opens of "a/../b" while another thread renames, under load). The race
   on demand: this program's own syscall() (the library's call binds to it) fails the next
   `openat2_eagain` openat2 calls with EAGAIN and passes everything else to the C library's. */
static int openat2_eagain, openat2_calls;
long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long); /* as the C library's wrapper reads them */
  va_end(ap);
#ifdef SYS_openat2
  if (number == SYS_openat2) {
    openat2_calls++;
    if (openat2_eagain > 0) {
      openat2_eagain--;
      errno = EAGAIN;
      return -1;
    }
  }
#endif
  static long (*real)(long, ...);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "syscall");
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* A raced open is retried, never reported; still racing after the retries, the portable walk
   answers: the file opens, and a path leading out is refused as leading out. */
static void test_openat2_eagain(void **state) {
  (void)state;
  unsetenv("MPK_OPEN_FORCE_WALK");
  openat2_calls = 0;
  assert_int_equal(open_ok("sub/deeper/w.bin", 0, 10), 0);
  if (openat2_calls == 0) skip(); /* built without SYS_openat2: the walk answers every open */
  for (int n = 1; n <= 40; n += 13) { /* 1: the retry opens it; 14, 27, 40: every try races, the walk answers */
    openat2_eagain = n;
    assert_int_equal(open_ok("sub/up_ok", 0, 2), 0);
    openat2_eagain = n;
    expect_refused("dotdot_out", MPK_EMALFORMED, "resolves outside");
    openat2_eagain = 0;
  }
}

/* The walk is chosen once per process: run it in a child with the variable set. */
static void test_portable_walk(void **state) {
  (void)state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("MPK_OPEN_FORCE_WALK", "1", 1);
    /* Under the emulator /proc/self/exe may name the target's dynamic loader that runs this
       program (s390x), so there the path this program was started with. */
    char self[4096];
    if (mpk_test_emulator()) {
      snprintf(self, sizeof self, "%s", self_argv0);
    } else {
      ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
      if (n < 0) _exit(3);
      self[n] = 0;
    }
    char *args[] = {self, "--walk-only", NULL};
    mpk_test_execv(self, args);
    _exit(4);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_user_named_paths(void **state) {
  (void)state;
  char p[1024];
  int fd;
  mpk_error err;
  snprintf(p, sizeof p, "%s/fifo", root);
  alarm(5);
  assert_int_equal(mpk_open_read(NULL, p, 0, &fd, NULL, &err), MPK_EMALFORMED);
  alarm(0);
  assert_non_null(strstr(err.message, "FIFO"));
  snprintf(p, sizeof p, "%s/abs_out", root); /* a link the user names is the user's choice */
  assert_int_equal(mpk_open_read(NULL, p, 0, &fd, NULL, &err), 0);
  close(fd);
  assert_int_equal(mpk_open_read(NULL, "/dev/null", 0, &fd, NULL, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "character device"));
  mpk_mapped m;
  snprintf(p, sizeof p, "%s/sub/deeper/w.bin", root);
  assert_int_equal(mpk_map_file(p, 0, &m, &err), 0);
  assert_int_equal(m.size, 10);
  assert_memory_equal(m.data, "0123456789", 10);
  mpk_unmap_file(&m);
  assert_int_equal(mpk_map_beneath(root, "rel_out", 0, &m, &err), MPK_EMALFORMED);
}

static void test_writer_dirs(void **state) {
  (void)state;
  int dfd, fd;
  mpk_error err;
  assert_int_equal(mpk_open_dir_at(AT_FDCWD, NULL, root, &dfd, &err), 0);
  assert_int_equal(mpk_open_dir_at(dfd, root, "sub/deeper", &fd, &err), 0);
  close(fd);
  assert_int_equal(mpk_open_dir_at(dfd, root, "deeplink", &fd, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "symbolic link"));
  assert_int_equal(mpk_open_dir_at(dfd, root, "sub/../sub", &fd, &err), MPK_EMALFORMED);
  assert_int_equal(mpk_open_dir_at(dfd, root, "doc.json", &fd, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "not a directory"));
  assert_int_equal(mpk_open_dir_at(dfd, root, "absent", &fd, &err), MPK_ENOTFOUND);
  close(dfd);
}

int main(int argc, char **argv) {
  self_argv0 = argv[0];
  if (argc > 1 && strcmp(argv[1], "--walk-only") == 0) {
    setup(NULL);
    run_cases(); /* cmocka's asserts print and exit non-zero on failure */
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_openat2),
      cmocka_unit_test(test_openat2_eagain),
      cmocka_unit_test(test_portable_walk),
      cmocka_unit_test(test_user_named_paths),
      cmocka_unit_test(test_writer_dirs),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
