/* modelpkg mt list --cache DIR [--json]; mt remove --cache DIR --repo-id ID [--wait] [--json];
   mt gc --cache DIR [--dry-run] [--json]: the installed cache as a whole (docs/mt-cache.md). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void iso_ms(int64_t ms, char out[40]) {
  if (ms <= 0) {
    snprintf(out, 40, "-");
    return;
  }
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, 40, "%s.%03dZ", base, (int)(ms % 1000));
}

/* ---------------------------------------------------------------- mt list */

static const char *const list_keys[] = {"cache", "models", NULL};

int mpk_cmd_mt_list(int argc, char **argv) {
  const char *cache = NULL;
  bool json = false;
  const mpk_cli_opt opts[] = {{"--cache", 0, "DIR", "the cache root", .str = &cache},
                              {"--json", 0, NULL, "the list as one JSON document on stdout", .flag = &json},
                              {0}};
  const mpk_cli_spec spec = {
      .name = "mt list",
      .usage = "--cache DIR [--json]",
      .about = "The models installed in the cache: one row per directory (dot names such as .staging are\n"
               "skipped, as the reference runtime's cache index does) with its repo id (from the install\n"
               "record, modelpkg's or the reference's install_record.json; else the directory name with\n"
               "\"__\" as \"/\"), the installed variant, its bytes and when it was installed.\n",
      .opts = opts,
      .more = "exit status: 0 listed (also when empty), 1 the cache cannot be read, 2 usage error\n",
      .json_keys = list_keys};
  mpk_cli_args a;
  int status = mpk_cli_parse(&spec, argc, argv, &a);
  if (status != MPK_CLI_GO_ON) return status;
  json = a.json;
  if (!cache) return mpk_cli_usage(&spec, json, "--cache is required");
  mpk_mt_cache_listing *l = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_mt_cache_list(cache, &l, &err)) {
    if (json) mpk_cli_json_refuse("mt list", list_keys, &err);
    mpk_cli_error(&err);
    return MPK_EXIT_FAIL;
  }
  if (json) {
    json_t *root = mpk_cli_json_begin("mt list", true);
    json_object_set_new(root, "cache", json_string(cache));
    json_t *arr = json_array();
    for (size_t i = 0; i < l->n; i++) {
      const mpk_mt_cache_entry *e = &l->entries[i];
      char when[40];
      iso_ms(e->installed_at_ms, when);
      json_t *o = json_object();
      json_object_set_new(o, "name", mpk_cli_json_str(e->name));
      json_object_set_new(o, "repo_id", mpk_cli_json_str(e->repo_id));
      json_object_set_new(o, "record", mpk_cli_json_str(e->record));
      json_object_set_new(o, "variant", mpk_cli_json_str(e->variant));
      json_object_set_new(o, "features", mpk_cli_json_strings((const char *const *)e->features, e->n_features));
      json_object_set_new(o, "bytes", json_integer((json_int_t)e->bytes));
      json_object_set_new(o, "disk_bytes", json_integer((json_int_t)e->disk_bytes));
      json_object_set_new(o, "installed_at_ms", e->installed_at_ms ? json_integer(e->installed_at_ms) : json_null());
      json_object_set_new(o, "installed_at", e->installed_at_ms ? json_string(when) : json_null());
      json_object_set_new(o, "has_manifest", json_boolean(e->has_manifest));
      json_object_set_new(o, "adapters", mpk_cli_json_strings((const char *const *)e->adapters, e->n_adapters));
      char vwhen[40];
      iso_ms(e->verified_at_ms, vwhen);
      json_object_set_new(o, "verified_at_ms", e->verified_at_ms ? json_integer(e->verified_at_ms) : json_null());
      json_object_set_new(o, "verified_at", e->verified_at_ms ? json_string(vwhen) : json_null());
      json_object_set_new(o, "verified_files", json_integer((json_int_t)e->verified_files));
      json_array_append_new(arr, o);
    }
    json_object_set_new(root, "models", arr);
    mpk_cli_json_end(root, NULL, 0, (const char *const *)l->notes, l->n_notes);
  } else {
    if (!l->n) printf("no models installed in %s\n", cache);
    else
      printf("%-36s %-16s %14s  %-24s %-8s %-24s\n", "REPO ID", "VARIANT", "BYTES", "INSTALLED AT (UTC)", "ADAPTERS",
             "LAST VERIFIED (UTC)");
    for (size_t i = 0; i < l->n; i++) {
      const mpk_mt_cache_entry *e = &l->entries[i];
      char when[40], vwhen[40];
      iso_ms(e->installed_at_ms, when);
      iso_ms(e->verified_at_ms, vwhen);
      printf("%-36s %-16s %14" PRIu64 "  %-24s %-8zu %-24s%s\n", e->repo_id, e->variant ? e->variant : "-", e->bytes,
             when, e->n_adapters, e->verified_at_ms ? vwhen : "never", e->record ? "" : "  (no install record)");
      for (size_t k = 0; k < e->n_adapters; k++) printf("    adapter sha256 %s\n", e->adapters[k]);
    }
    for (size_t i = 0; i < l->n_notes; i++) printf("note: %s\n", l->notes[i]);
  }
  mpk_mt_cache_listing_free(l);
  return MPK_EXIT_OK;
}

/* ---------------------------------------------------------------- mt remove */

static const char *const remove_keys[] = {"repo_dir", "removed", "retired", "retired_path", "bytes", NULL};

int mpk_cmd_mt_remove(int argc, char **argv) {
  const char *cache = NULL, *repo = NULL;
  bool json = false, wait = false;
  const mpk_cli_opt opts[] = {
      {"--cache", 0, "DIR", "the cache root", .str = &cache},
      {"--repo-id", 0, "ID", "the Hub repo id of the install to remove", .str = &repo},
      {"--wait", 0, NULL, "wait for an installer of the same repo id instead of failing", .flag = &wait},
      {"--json", 0, NULL, "the result (or the refusal) as one JSON document on stdout", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {
      .name = "mt remove",
      .usage = "--cache DIR --repo-id ORG/NAME [--wait] [--json]",
      .about = "Remove an installed model, under its installer lock: the tree is moved out of place in one\n"
               "rename (no reader ever sees half of it), then deleted. When a reader holds it (the load\n"
               "gate, a merge), it is kept retired under .staging/ and 'modelpkg mt gc' deletes it once\n"
               "the reader has let go.\n",
      .opts = opts,
      .more = "exit status: 0 removed (or retired), 1 not installed or refused, 2 usage error\n",
      .json_keys = remove_keys};
  mpk_cli_args a;
  int status = mpk_cli_parse(&spec, argc, argv, &a);
  if (status != MPK_CLI_GO_ON) return status;
  json = a.json;
  if (!cache || !repo) return mpk_cli_usage(&spec, json, "--cache and --repo-id are required");
  mpk_mt_cache_remove_options o = MPK_MT_CACHE_REMOVE_OPTIONS_INIT;
  o.wait_for_lock = wait;
  mpk_mt_cache_remove_result r;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_mt_cache_remove(cache, repo, &o, &r, &err)) {
    if (json) mpk_cli_json_refuse("mt remove", remove_keys, &err);
    mpk_cli_error(&err);
    return MPK_EXIT_FAIL;
  }
  const char *note = "a reader holds the tree: it was moved out of place and kept retired; 'modelpkg mt gc' "
                     "removes it once the reader has let go";
  if (json) {
    json_t *root = mpk_cli_json_begin("mt remove", true);
    json_object_set_new(root, "repo_dir", mpk_cli_json_str(r.repo_dir));
    json_object_set_new(root, "removed", json_boolean(!r.held));
    json_object_set_new(root, "retired", json_boolean(r.held));
    json_object_set_new(root, "retired_path", mpk_cli_json_str(r.retired_path));
    json_object_set_new(root, "bytes", json_integer((json_int_t)r.bytes));
    mpk_cli_json_end(root, NULL, 0, r.held ? &note : NULL, r.held ? 1 : 0);
  } else if (r.held) {
    printf("OK: removed %s from %s (%" PRIu64 " bytes); a reader holds it: kept retired at %s until 'modelpkg mt "
           "gc' finds it free\n",
           repo, r.repo_dir, r.bytes, r.retired_path ? r.retired_path : "?");
  } else {
    printf("OK: removed %s (%s, %" PRIu64 " bytes)\n", repo, r.repo_dir, r.bytes);
  }
  mpk_mt_cache_remove_result_free(&r);
  return MPK_EXIT_OK;
}

/* ---------------------------------------------------------------- mt gc */

static const char *const gc_keys[] = {"cache", "dry_run", "removed", "kept", "bytes_removed", NULL};

int mpk_cmd_mt_gc(int argc, char **argv) {
  const char *cache = NULL;
  bool json = false, dry = false;
  const mpk_cli_opt opts[] = {
      {"--cache", 0, "DIR", "the cache root", .str = &cache},
      {"--dry-run", 0, NULL, "say what would be removed, change nothing", .flag = &dry},
      {"--json", 0, NULL, "what was removed and kept as one JSON document on stdout", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {
      .name = "mt gc",
      .usage = "--cache DIR [--dry-run] [--json]",
      .about = "Collect the cache's garbage under .staging/: for every repo no installer is running for (its\n"
               "lock taken without waiting), an interrupted commit is finished first, then partial\n"
               "downloads, retired trees no reader holds, leftover temporaries and orphaned locks are\n"
               "removed. Never anything a live installer or reader holds, never an installed model.\n",
      .opts = opts,
      .more = "exit status: 0 done (also when there was nothing to do), 1 the cache cannot be read, 2 usage error\n",
      .json_keys = gc_keys};
  mpk_cli_args a;
  int status = mpk_cli_parse(&spec, argc, argv, &a);
  if (status != MPK_CLI_GO_ON) return status;
  json = a.json;
  if (!cache) return mpk_cli_usage(&spec, json, "--cache is required");
  mpk_mt_cache_gc_options o = MPK_MT_CACHE_GC_OPTIONS_INIT;
  o.dry_run = dry;
  mpk_fetch_gc_result *r = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_mt_cache_gc(cache, &o, &r, &err)) {
    if (json) mpk_cli_json_refuse("mt gc", gc_keys, &err);
    mpk_cli_error(&err);
    return MPK_EXIT_FAIL;
  }
  if (json) {
    json_t *root = mpk_cli_json_begin("mt gc", true);
    json_object_set_new(root, "cache", json_string(cache));
    json_object_set_new(root, "dry_run", json_boolean(dry));
    json_t *rem = json_array(), *kept = json_array();
    for (size_t i = 0; i < r->n; i++) {
      const mpk_fetch_gc_item *it = &r->items[i];
      json_t *o2 = json_object();
      json_object_set_new(o2, "path", json_string(it->path));
      json_object_set_new(o2, "bytes", json_integer((json_int_t)it->bytes));
      json_object_set_new(o2, "reason", json_string(it->reason));
      json_array_append_new(it->removed ? rem : kept, o2);
    }
    json_object_set_new(root, "removed", rem);
    json_object_set_new(root, "kept", kept);
    json_object_set_new(root, "bytes_removed", json_integer((json_int_t)r->bytes_removed));
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
  } else {
    if (!r->n) printf("nothing to collect in %s\n", cache);
    for (size_t i = 0; i < r->n; i++) {
      const mpk_fetch_gc_item *it = &r->items[i];
      printf("%s %s (%" PRIu64 " bytes): %s\n", it->removed ? (dry ? "would remove" : "removed") : "kept", it->path,
             it->bytes, it->reason);
    }
    if (r->n) printf("%s %" PRIu64 " bytes\n", dry ? "would free" : "freed", r->bytes_removed);
  }
  mpk_fetch_gc_result_free(r);
  return MPK_EXIT_OK;
}
