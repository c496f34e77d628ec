/* The command line, read one way for every command: each command declares its options in a table
   (mpk_cli_opt) and its usage in a spec (mpk_cli_spec); unknown options, missing values, --help
   and -h, and the usage message are handled here, once. Numbers are read one way too. */
#include <errno.h>
#include <stdarg.h>
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

int mpk_cli_parse_jobs(const mpk_cli_spec *s, bool json, const char *val, long long *jobs) {
  *jobs = 0;
  if (!val || mpk_cli_parse_int(val, 1, 256, jobs)) return MPK_EXIT_OK;
  return mpk_cli_usage(s, json, "--jobs needs an integer from 1 to 256, not '%s'", val);
}

bool mpk_cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

static const mpk_cli_opt *find(const mpk_cli_opt *opts, const char *a) {
  for (const mpk_cli_opt *o = opts; o && o->name; o++) {
    if (strcmp(o->name, a) == 0) return o;
    if (o->short_name && a[0] == '-' && a[1] == o->short_name && !a[2]) return o;
  }
  return NULL;
}

bool mpk_cli_spec_has(const mpk_cli_spec *s, const char *name) { return find(s->opts, name) != NULL; }

int mpk_cli_usage(const mpk_cli_spec *s, bool json, const char *fmt, ...) {
  char msg[sizeof ((mpk_error *)0)->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mpk_cli_usage_json(json && s->json_keys, s->name, s->json_keys, "%s", msg);
}

/* One option's line(s): "  -o, --output FILE        text", continuation lines aligned. */
static void help_option(FILE *out, const char *left, const char *text) {
  enum { COL = 25 };
  int n = fprintf(out, "  %s", left);
  if (n > COL + 1) {
    fputc('\n', out);
    n = 0;
  }
  for (const char *t = text; *t;) {
    const char *nl = strchr(t, '\n');
    size_t len = nl ? (size_t)(nl - t) : strlen(t);
    fprintf(out, "%*s%.*s\n", COL + 2 - n, "", (int)len, t);
    n = 0;
    t += len + (nl != NULL);
  }
}

void mpk_cli_help(const mpk_cli_spec *s, FILE *out) {
  /* usage: one line per form, each naming the command */
  const char *u = s->usage;
  for (int first = 1; u;) {
    const char *nl = strchr(u, '\n');
    size_t len = nl ? (size_t)(nl - u) : strlen(u);
    fprintf(out, "%s modelpkg %s%s%.*s\n", first ? "usage:" : "      ", s->name, len ? " " : "", (int)len, u);
    first = 0;
    u = nl ? nl + 1 : NULL;
  }
  if (s->about) fprintf(out, "\n%s", s->about);
  fputs("\noptions:\n", out);
  for (const mpk_cli_opt *o = s->opts; o && o->name; o++) {
    char left[128];
    size_t at = 0;
    if (o->short_name) at = (size_t)snprintf(left, sizeof left, "-%c, ", o->short_name);
    snprintf(left + at, sizeof left - at, "%s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
    help_option(out, left, o->help);
  }
  help_option(out, "-h, --help", "show this help");
  if (s->more) fprintf(out, "\n%s", s->more);
}

int mpk_cli_parse(const mpk_cli_spec *s, int argc, char **argv, mpk_cli_args *out) {
  memset(out, 0, sizeof *out);
  /* --json anywhere: a usage error found before it is still answered with a document */
  if (s->json_keys && mpk_cli_spec_has(s, "--json"))
    for (int i = 1; i < argc; i++)
      if (strcmp(argv[i], "--json") == 0) out->json = true;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) {
      mpk_cli_help(s, stdout);
      return MPK_EXIT_OK;
    }
    const mpk_cli_opt *o = a[0] == '-' && a[1] ? find(s->opts, a) : NULL;
    if (o) {
      const char *val = NULL;
      if (o->value) {
        if (i + 1 >= argc) return mpk_cli_usage(s, out->json, "%s needs a value", a);
        val = argv[++i];
      }
      if (o->fn) {
        int st = o->fn(o->ctx, s, out->json, a, val);
        if (st != MPK_EXIT_OK) return st;
      } else if (o->value) {
        if (o->once && *o->str) return mpk_cli_usage(s, out->json, "%s given twice", a);
        *o->str = val;
      } else {
        *o->flag = true;
      }
    } else if (a[0] == '-' && a[1]) {
      for (size_t k = 0; s->not_here && s->not_here[k]; k++)
        if (strcmp(s->not_here[k], a) == 0) return mpk_cli_usage(s, out->json, "%s does not apply to %s", a, s->name);
      return mpk_cli_usage(s, out->json, "unknown option '%s'", a);
    } else if (out->n < s->max_args && out->n < MPK_CLI_MAX_ARGS) {
      out->arg[out->n++] = a;
    } else if (s->extra) {
      return mpk_cli_usage(s, out->json, s->extra, out->arg[0], a);
    } else {
      return mpk_cli_usage(s, out->json, "unexpected argument '%s'", a);
    }
  }
  return MPK_CLI_GO_ON;
}
