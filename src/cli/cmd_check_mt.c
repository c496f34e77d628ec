/* modelpkg check DIR [--variant ID | --all-variants] [--no-hash] [--no-graph] [--jobs N] [--json], when DIR holds
   a MobileTransformers package (mobiletransformers_manifest.json); cmd_check.c parses and dispatches. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The MT check report's own keys (docs/check-report.md), null on a refusal. */
const char *const mpk_cli_check_mt_keys[] = {"format", "dir", "manifest", "checked", "files", "tensors", "unlisted",
                                             NULL};

/* The MT check of `dir` (the options parsed by cmd_check.c); the exit status. */
int mpk_cli_check_mt(const char *dir, const mpk_mt_check_options *given, bool json) {
  mpk_cli_bar bar;
  mpk_cli_bar_init(&bar, "hashing files");
  mpk_mt_check_options opts = *given;
  opts.progress = bar.enabled ? mpk_cli_progress : NULL;
  opts.progress_ctx = &bar;
  mpk_mt_report *r = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mt_check(dir, &opts, &r, &err);
  mpk_cli_bar_done(&bar);
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("check", mpk_cli_check_mt_keys, &err);
    return MPK_EXIT_FAIL;
  }
  if (json) mpk_cli_mt_report_json(stdout, r);
  else mpk_cli_mt_report_text(stdout, r);
  int status = r->n_problems ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  mpk_mt_report_free(r);
  return status;
}

