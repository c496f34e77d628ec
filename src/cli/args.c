/* Numbers on the command line, read one way everywhere. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool mpk_cli_parse_int(const char *s, long long min, long long max, long long *out) {
  char *end;
  errno = 0;
  long long n = strtoll(s, &end, 10);
  if (errno || *end || end == s || n < min || n > max) return false;
  *out = n;
  return true;
}

int mpk_cli_parse_jobs(const char *cmd, const char *val, long long *jobs) {
  if (mpk_cli_parse_int(val, 1, 256, jobs)) return MPK_EXIT_OK;
  return mpk_cli_usage_error(cmd, "--jobs needs an integer from 1 to 256, not '%s'", val);
}

bool mpk_cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }
