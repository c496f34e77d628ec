/* Path helpers of the CLI (plain libc): reading files goes through the library's mpk_map_file /
   mpk_map_beneath, writing data through its output contract (mpk_output_*). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

bool mpk_cli_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool mpk_cli_is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

char *mpk_cli_path_join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  bool slash = a > 0 && dir[a - 1] != '/';
  char *p = malloc(a + slash + b + 1);
  if (!p) return NULL;
  memcpy(p, dir, a);
  if (slash) p[a] = '/';
  memcpy(p + a + slash, name, b + 1);
  return p;
}
