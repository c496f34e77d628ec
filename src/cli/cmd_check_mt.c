/* modelpkg check DIR [--variant ID | --all-variants] [--no-hash] [--no-graph] [--jobs N] [--json], when DIR holds
   a MobileTransformers package (mobiletransformers_manifest.json). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#define MLC_MANIFEST "mlc-model-manifest.json"

static bool is_value_option(const char *a) {
  return strcmp(a, "--lib") == 0 || strcmp(a, "--device-features") == 0 || strcmp(a, "--max-binding-size") == 0 ||
         strcmp(a, "--jobs") == 0 || strcmp(a, "--variant") == 0;
}

static bool is_mt_option(const char *a) {
  return strcmp(a, "--variant") == 0 || strcmp(a, "--all-variants") == 0 || strcmp(a, "--no-hash") == 0 ||
         strcmp(a, "--no-graph") == 0;
}

static bool is_mlc_option(const char *a) {
  return strcmp(a, "--lib") == 0 || strcmp(a, "--device-features") == 0 || strcmp(a, "--max-binding-size") == 0 ||
         strcmp(a, "--no-weights") == 0;
}

/* DIR/name exists (a dangling symbolic link counts: the check says what is wrong with it). */
static bool has_entry(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (!p) return false;
  snprintf(p, n, "%s/%s", dir, name);
  struct stat st;
  bool ok = lstat(p, &st) == 0;
  free(p);
  return ok;
}

/* `dir_hint`: DIR as the dispatcher found it, for messages about options given before it. */
static int run(int argc, char **argv, const char *dir_hint) {
  const char *dir = NULL, *variant = NULL;
  bool json = false, all = false, no_hash = false, no_graph = false;
  long long jobs = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--all-variants") == 0) {
      all = true;
    } else if (strcmp(a, "--no-hash") == 0) {
      no_hash = true;
    } else if (strcmp(a, "--no-graph") == 0) {
      no_graph = true;
    } else if (strcmp(a, "--variant") == 0 || strcmp(a, "--jobs") == 0) {
      if (i + 1 >= argc) return mpk_cli_usage_error("check", "%s needs a value", a);
      const char *val = argv[++i];
      if (strcmp(a, "--variant") == 0) {
        if (variant) return mpk_cli_usage_error("check", "--variant is given twice");
        variant = val;
        continue;
      }
      int st = mpk_cli_parse_jobs("check", val, &jobs);
      if (st) return st;
    } else if (is_mlc_option(a)) {
      return mpk_cli_usage_error("check", "%s applies to an MLC package; %s is a MobileTransformers package", a,
                                 dir_hint ? dir_hint : "DIR");
    } else if (a[0] == '-' && a[1]) {
      return mpk_cli_usage_error("check", "unknown option '%s'", a);
    } else if (!dir) {
      dir = a;
    } else {
      return mpk_cli_usage_error("check", "unexpected argument '%s'", a);
    }
  }
  if (!dir) return mpk_cli_usage_error("check", "missing the package directory");
  if (variant && all) return mpk_cli_usage_error("check", "give --variant ID or --all-variants, not both");

  mpk_cli_bar bar;
  mpk_cli_bar_init(&bar, "hashing files");
  mpk_mt_check_options opts = {.struct_size = sizeof opts, .variant = variant,
                               .all_variants = all,
                               .no_hash = no_hash,
                               .no_graph = no_graph,
                               .workers = (unsigned)jobs,
                               .progress = bar.enabled ? mpk_cli_progress : NULL,
                               .progress_ctx = &bar};
  mpk_mt_report *r = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mt_check(dir, &opts, &r, &err);
  mpk_cli_bar_done(&bar);
  if (rc) {
    mpk_cli_error(&err);
    return MPK_EXIT_FAIL;
  }
  if (json) mpk_cli_mt_report_json(stdout, r);
  else mpk_cli_mt_report_text(stdout, r);
  int status = r->n_problems ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  mpk_mt_report_free(r);
  return status;
}

int mpk_cmd_check_mt_dispatch(int argc, char **argv) {
  const char *dir = NULL, *mt_option = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) return -1; /* one help text covers both kinds */
    if (is_mt_option(a) && !mt_option) mt_option = a;
    if (is_value_option(a)) i++;
    else if ((a[0] != '-' || !a[1]) && !dir) dir = a;
  }
  if (!dir) return mt_option ? run(argc, argv, NULL) : -1; /* the usage error names what is missing */
  bool mt = has_entry(dir, MPK_MT_MANIFEST_FILENAME), mlc = has_entry(dir, MLC_MANIFEST);
  if (mt && mlc) {
    fprintf(stderr,
            "modelpkg: %s: holds both %s and %s: a package directory is one kind or the other, "
            "so neither is checked\n",
            dir, MLC_MANIFEST, MPK_MT_MANIFEST_FILENAME);
    return MPK_EXIT_FAIL;
  }
  if (mt) return run(argc, argv, dir);
  if (mt_option) {
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return run(argc, argv, dir); /* "not a directory" */
    return mpk_cli_usage_error("check", "%s applies to a MobileTransformers package; %s has no %s", mt_option, dir,
                               MPK_MT_MANIFEST_FILENAME);
  }
  return -1;
}
