/* core/atomic.c: temporary files get the umask's mode without the process umask being touched,
   unique names under threads, and atomic replacement keeps that mode. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "core/core.h"

static char dir[] = "/tmp/mpk_atomic_XXXXXX";

static void *make_temps(void *arg) {
  int *fds = arg;
  for (int i = 0; i < 200; i++) {
    char p[256];
    snprintf(p, sizeof p, "%s/t.tmp.XXXXXX", dir);
    fds[i] = mpk_temp_open(p);
  }
  return NULL;
}

static void test_temp_names_and_mode(void **state) {
  (void)state;
  assert_non_null(mkdtemp(dir));
  mode_t old = umask(027);
  static int fds[4][200];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, make_temps, fds[i]), 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  assert_int_equal(umask(old), 027); /* never changed on the way */
  size_t files = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640); /* 0666 less the umask, not mkstemp's 0600 */
    assert_int_equal(strlen(e->d_name), strlen("t.tmp.XXXXXX"));
    unlink(p);
    files++;
  }
  closedir(d);
  assert_int_equal(files, 800); /* 800 opens, 800 distinct files */
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 200; j++) {
      assert_true(fds[i][j] >= 0);
      close(fds[i][j]);
    }
  char bad[] = "/tmp/no-placeholder";
  errno = 0;
  assert_int_equal(mpk_temp_open(bad), -1);
  assert_int_equal(errno, EINVAL);
}

static void test_write_file_atomic_mode(void **state) {
  (void)state;
  char p[512];
  snprintf(p, sizeof p, "%s/doc.json", dir);
  mode_t old = umask(022);
  mpk_error err;
  assert_int_equal(mpk_write_file_atomic(p, "{}\n", 3, &err), 0);
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0644);
  umask(077);
  assert_int_equal(mpk_write_file_atomic(p, "[]\n", 3, &err), 0);
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  umask(old);
  unlink(p);
  rmdir(dir);
}

/* A device, FIFO or directory where a document belongs is refused at once: never replaced by a
   renamed regular file (as root that would replace /dev/null), never opened (a FIFO would block). */
static void test_refuse_device_fifo_dir(void **state) {
  (void)state;
  mpk_error err;
  struct stat st;
  assert_int_equal(mpk_write_file_atomic("/dev/null", "x", 1, &err), MPK_EIO);
  assert_non_null(strstr(err.message, "is a character device, not a regular file"));
  assert_int_equal(stat("/dev/null", &st), 0);
  assert_true(S_ISCHR(st.st_mode)); /* still the device, whoever runs the test (root included) */
  char d[] = "/tmp/mpk_fifo_XXXXXX";
  assert_non_null(mkdtemp(d));
  char fifo[300];
  snprintf(fifo, sizeof fifo, "%s/out", d);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  alarm(5); /* no reader: a write through it would block */
  assert_int_equal(mpk_write_file_atomic(fifo, "x", 1, &err), MPK_EIO);
  alarm(0);
  assert_non_null(strstr(err.message, "is a FIFO"));
  assert_int_equal(stat(fifo, &st), 0);
  assert_true(S_ISFIFO(st.st_mode));
  assert_int_equal(mpk_write_file_atomic(d, "x", 1, &err), MPK_EIO);
  assert_non_null(strstr(err.message, "is a directory"));
  unlink(fifo);
  rmdir(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_temp_names_and_mode),
      cmocka_unit_test(test_write_file_atomic_mode),
      cmocka_unit_test(test_refuse_device_fifo_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
