/* modelpkg mt restore DIR [--variant ID] [--source DIR|URL] [--wait] [--json]: every tensor a merge
   replaced back to the shipped bytes, verified before anything is replaced, as one transaction. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char about[] =
    "Return every tensor modelpkg's merge record names to its shipped bytes: from the base a\n"
    "mt merge --keep-base kept in the tree, else re-fetched from the install source (the install\n"
    "record's \"source\", or --source) through the installer's verified download. Every file is\n"
    "checked against the shipped digest (the map's sha256) before anything is replaced; then the\n"
    "tensors, their sidecars, the merge record and the adapter membership change in one transaction.\n"
    "A failure leaves the merged model as it was. An installed tree <cache>/<name> is locked as its\n"
    "installer locks it. A tree with no merged tensor is left alone (exit 0, \"nothing to restore\").\n";
static const char more[] = "exit status: 0 restored (or nothing to restore), 1 refused or failed (nothing changed),\n"
                           "2 usage error\n";

static const char *const json_keys[] = {"variant", "inference_dir", "was_merged", "written", "files", "adapters", NULL};

static int print_json(const mpk_mt_restore_report *r) {
  json_t *root = mpk_cli_json_begin("mt restore", true), *files = json_array(), *adapters = json_array();
  json_object_set_new(root, "variant", mpk_cli_json_str(r->variant));
  json_object_set_new(root, "inference_dir", mpk_cli_json_str(r->inference_dir));
  json_object_set_new(root, "was_merged", json_boolean(r->was_merged));
  json_object_set_new(root, "written", json_boolean(r->written));
  for (size_t i = 0; i < r->n_files; i++)
    json_array_append_new(files, json_pack("{s:o, s:o, s:o}", "name", mpk_cli_json_str(r->files[i].name), "sha256",
                                           mpk_cli_json_str(r->files[i].sha256), "from",
                                           mpk_cli_json_str(r->files[i].from)));
  for (size_t i = 0; i < r->n_adapters; i++) json_array_append_new(adapters, mpk_cli_json_str(r->adapters[i]));
  json_object_set_new(root, "files", files);
  json_object_set_new(root, "adapters", adapters);
  return mpk_cli_json_end(root, NULL, 0, r->notes, r->n_notes);
}

static void print_text(const mpk_mt_restore_report *r) {
  printf("modelpkg mt restore: variant %s, %s\n", r->variant, r->inference_dir);
  for (size_t i = 0; i < r->n_files; i++) printf("  %s  sha256 %s  (%s)\n", r->files[i].name, r->files[i].sha256, r->files[i].from);
  for (size_t i = 0; i < r->n_adapters; i++) printf("  adapter %s: no longer a member\n", r->adapters[i]);
  for (size_t i = 0; i < r->n_notes; i++) printf("  note: %s\n", r->notes[i]);
  if (r->was_merged) printf("OK: restored %zu file%s to the shipped bytes\n", r->n_files, r->n_files == 1 ? "" : "s");
  else printf("OK: nothing to restore (no merged tensor)\n");
}

int mpk_cmd_mt_restore(int argc, char **argv) {
  const char *cmd = "mt restore";
  mpk_mt_restore_options o = MPK_MT_RESTORE_OPTIONS_INIT;
  bool wait = false, json_flag = false;
  const mpk_cli_opt opts[] = {
      {"--variant", 0, "ID", "the variant (default: the installed one; a package: its defaultVariant)",
       .str = &o.variant},
      {"--source", 0, "DIR|URL", "re-fetch from this package source (default: the install record's source)",
       .str = &o.source},
      {"--wait", 0, NULL, "wait for another writer of the installed tree instead of failing", .flag = &wait},
      {"--json", 0, NULL, "the report as one JSON document on stdout", .flag = &json_flag},
      {0}};
  const mpk_cli_spec spec = {.name = cmd, .usage = "DIR [--variant ID] [--source DIR|URL] [--wait] [--json]",
                             .about = about, .opts = opts, .more = more, .json_keys = json_keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  bool json = a.json;
  if (!a.n) return mpk_cli_usage(&spec, json, "missing the package or installed directory");
  const char *dir = a.arg[0];
  if (!mpk_cli_is_dir(dir)) return mpk_cli_usage(&spec, json, "'%s' is not a directory", dir);
  o.wait_for_lock = wait;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_restore_report *r = NULL;
  if (mpk_mt_restore(dir, &o, &r, &err)) {
    if (json) mpk_cli_json_refuse(cmd, json_keys, &err);
    mpk_cli_error(&err);
    fprintf(stderr, "modelpkg: mt restore: nothing was changed\n");
    return MPK_EXIT_FAIL;
  }
  st = MPK_EXIT_OK;
  if (json) st = print_json(r) ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  else print_text(r);
  mpk_mt_restore_report_free(r);
  return st;
}
