/* What the CLI says when something fails: an error on stderr, a usage error; the problems a
   command keeps for its --json report. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void mpk_cli_error(const mpk_error *err) {
  char line[2048];
  mpk_error_format(err, line, sizeof line);
  fprintf(stderr, "modelpkg: %s\n", line);
}

int mpk_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "modelpkg %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry 'modelpkg %s --help'.\n", cmd);
  va_end(ap);
  return MPK_EXIT_USAGE;
}

void mpk_cli_problems_add(mpk_cli_problems *p, const mpk_error *e) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 8;
    mpk_error *grown = realloc(p->items, cap * sizeof *grown);
    if (!grown) {
      p->oom = true;
      return;
    }
    p->items = grown;
    p->cap = cap;
  }
  p->items[p->n++] = *e;
}

void mpk_cli_problems_free(mpk_cli_problems *p) {
  free(p->items);
  memset(p, 0, sizeof *p);
}
