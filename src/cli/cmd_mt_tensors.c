/* modelpkg mt tensors DIR [--variant ID] [--jobs N] [--stamp] [--rehash]: each handoff-map entry's
   roles with the declared dtype, shape and bytes (the load rule), the file, its checksum status (the
   load gate: the shipped digest, or the merge record's for a tensor merged on device), and whether
   it was hashed now or accepted by the gate's verification stamp. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char about[] =
    "List the merged-weight tensors of a MobileTransformers package or installed model variant (an\n"
    "installed model's own, else defaultVariant: docs/mt-installed.md): for each weight_handoff_map.json entry and role, the declared dtype\n"
    "and shape, the exact byte size they imply, the .bin file, whether its size matches, and its\n"
    "checksum status under the load gate: the bytes must be the shipped ones (the map's sha256[role])\n"
    "or, for a tensor merged on device, those modelpkg's merge record lists; a sidecar <file>.bin.sha256\n"
    "must agree. Files are read beneath the package (no link out, no FIFO). An interrupted merge is\n"
    "finished or undone first. With the verification stamp (on for an installed model, --stamp\n"
    "elsewhere) a file unchanged since it was hashed (device, inode, size, mtime, ctime) is accepted\n"
    "without hashing; each file says \"hashed now\" or \"accepted by stamp (hashed at ...)\".\n"
    "--rehash hashes every file and rewrites the stamp (a full pass: docs/mt.md).\n";
static const char more[] =
    "exit status: 0 every tensor verified and loadable (or no merged weights), 1 otherwise,\n"
    "2 usage error\n";
/* The command's own keys in its --json document (docs/CLI.md), null on a refusal. */
static const char *const tensors_keys[] = {"dir",    "variant",           "merged_weights", "tensors",
                                           "verified", "hashed_now", "accepted_by_stamp", "stamp_written", NULL};

/* "2026-12-02T01:46:55.123Z" */
static const char *iso_ms(int64_t ms, char *buf, size_t cap) {
  time_t sec = (time_t)(ms / 1000);
  struct tm tm;
  if (ms <= 0 || !gmtime_r(&sec, &tm)) {
    snprintf(buf, cap, "?");
    return buf;
  }
  size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, cap - n, ".%03dZ", (int)(ms % 1000));
  return buf;
}

/* "hashed now", "accepted by stamp (hashed at ...)", "" when the file was not hashed. */
static const char *how_verified(const mpk_mt_gate_hashing *h, char *buf, size_t cap) {
  char at[48];
  if (h->from_stamp) snprintf(buf, cap, "accepted by stamp (hashed at %s)", iso_ms(h->hashed_at_ms, at, sizeof at));
  else if (h->hashed_at_ms) snprintf(buf, cap, "hashed now");
  else buf[0] = '\0';
  return buf;
}

static json_t *tensor_json(const mpk_mt_gate_tensor *t, const mpk_mt_gate_hashing *h) {
  json_t *shape = json_null();
  if (!t->layout_code) {
    shape = json_array();
    for (size_t d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
  }
  json_t *o = json_object();
  json_object_set_new(o, "entry", json_integer((json_int_t)t->entry));
  json_object_set_new(o, "layer", mpk_cli_json_str(t->layer));
  json_object_set_new(o, "role", json_string(mpk_mt_role_name(t->role)));
  json_object_set_new(o, "dtype", t->layout_code ? json_null() : mpk_cli_json_str(t->dtype));
  json_object_set_new(o, "shape", shape);
  json_object_set_new(o, "declared_bytes", t->declared_bytes ? json_integer((json_int_t)t->declared_bytes) : json_null());
  json_object_set_new(o, "file", json_string(t->file));
  json_object_set_new(o, "size", json_integer((json_int_t)t->size));
  json_object_set_new(o, "size_ok", json_boolean(t->size_ok && !t->layout_code));
  json_object_set_new(o, "status", json_string(mpk_mt_tensor_status_name(t->status)));
  json_object_set_new(o, "authority",
                      t->authority != MPK_MT_AUTH_NONE ? json_string(mpk_mt_authority_name(t->authority)) : json_null());
  char how[96], at[48];
  json_object_set_new(o, "hashed", how_verified(h, how, sizeof how)[0] ? json_string(h->from_stamp ? "stamp" : "now")
                                                                        : json_null());
  json_object_set_new(o, "hashed_at", h->hashed_at_ms ? json_string(iso_ms(h->hashed_at_ms, at, sizeof at)) : json_null());
  json_object_set_new(o, "hashed_at_ms", h->hashed_at_ms ? json_integer((json_int_t)h->hashed_at_ms) : json_null());
  return o;
}

/* The --json document: every tensor, the verdict; the gate's problems (and a size or layout that
   does not match its declaration) in "problems". */
static int list_json(const char *dir, const mpk_mt_variant_gate *vg, bool ok) {
  const mpk_mt_gate_report *g = vg->report;
  bool merged = !vg->map_absent && !g->no_merged_weights;
  json_t *root = mpk_cli_json_begin("mt tensors", ok);
  json_object_set_new(root, "dir", json_string(dir));
  json_object_set_new(root, "variant", json_string(vg->variant));
  json_object_set_new(root, "merged_weights", json_boolean(merged));
  json_t *ts = json_array();
  for (size_t i = 0; merged && i < g->n_tensors; i++) json_array_append_new(ts, tensor_json(&g->tensors[i], &g->hashing[i]));
  json_object_set_new(root, "tensors", ts);
  json_object_set_new(root, "verified", json_integer(merged ? (json_int_t)g->n_verified : 0));
  json_object_set_new(root, "hashed_now", json_integer(merged ? (json_int_t)g->n_hashed : 0));
  json_object_set_new(root, "accepted_by_stamp", json_integer(merged ? (json_int_t)g->n_from_stamp : 0));
  json_object_set_new(root, "stamp_written", json_boolean(merged && g->stamp_written));
  mpk_cli_problems found = {0};
  for (size_t i = 0; merged && i < g->n_problems; i++) mpk_cli_problems_add(&found, &g->problems[i]);
  if (!ok && merged && g->ready) { /* verified, but a size or layout does not match its declaration */
    mpk_error e;
    mpk_fail(&e, MPK_EMISMATCH, dir, NULL, "%zu of %zu tensors verified (a size or layout does not match its declaration)",
             g->n_verified, g->n_tensors);
    mpk_cli_problems_add(&found, &e);
  }
  const char *notes[2];
  size_t nn = 0;
  if (vg->map_absent) notes[nn++] = "no merged weights: the map is absent: use the base weights";
  else if (!merged) notes[nn++] = "no merged weights: the map has no entries: use the base weights";
  char ignored[800];
  if (merged && g->stamp_ignored) {
    snprintf(ignored, sizeof ignored, "the verification stamp was ignored (%s): every file was hashed",
             g->stamp_ignored);
    notes[nn++] = ignored;
  }
  int rc = mpk_cli_json_end(root, found.items, found.n, notes, nn);
  if (found.oom) rc = -1;
  mpk_cli_problems_free(&found);
  return rc;
}

static int list(const char *dir, const char *variant, unsigned jobs, bool stamp, bool rehash, bool json) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_gate_options go = MPK_MT_GATE_OPTIONS_INIT;
  go.workers = jobs;
  go.use_stamp = stamp;
  go.rehash = rehash;
  mpk_mt_variant_gate *vg = NULL;
  const mpk_mt_gate_report *g = NULL;
  int status = MPK_EXIT_FAIL;
  /* The map, the tensors and their sidecars are read beneath the package (the library's rules). */
  if (mpk_mt_variant_gate_open(dir, variant, &go, &vg, &err)) {
    if (json) mpk_cli_json_refuse("mt tensors", tensors_keys, &err);
    goto out;
  }
  if (json) {
    bool ok = true;
    const mpk_mt_gate_report *r = vg->report;
    if (!vg->map_absent && !r->no_merged_weights) {
      ok = r->ready;
      for (size_t i = 0; i < r->n_tensors; i++) ok = ok && !r->tensors[i].layout_code && r->tensors[i].size_ok;
    }
    for (size_t i = 0; r && i < r->n_problems; i++) mpk_cli_error(&r->problems[i]);
    status = list_json(dir, vg, ok) == 0 && ok ? MPK_EXIT_OK : MPK_EXIT_FAIL;
    goto out;
  }
  printf("modelpkg mt tensors %s (variant %s)\n", dir, vg->variant);
  if (vg->map_absent) {
    printf("  no merged weights: %s is absent: use the base weights\n", vg->weight_handoff);
    status = MPK_EXIT_OK;
    goto out;
  }
  g = vg->report;
  if (g->no_merged_weights) {
    printf("  no merged weights: the map has no entries: use the base weights\n");
    status = MPK_EXIT_OK;
    goto out;
  }
  bool ok = g->ready;
  size_t last = (size_t)-1;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const mpk_mt_gate_tensor *t = &g->tensors[i];
    if (t->entry != last) printf("  entry %zu  %s\n", t->entry, t->layer);
    last = t->entry;
    char shape[256] = "?";
    if (!t->layout_code) {
      size_t len = (size_t)snprintf(shape, sizeof shape, "[");
      for (size_t d = 0; d < t->ndim && len < sizeof shape; d++)
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld", d ? "," : "", (long long)t->shape[d]);
      if (len < sizeof shape) snprintf(shape + len, sizeof shape - len, "]");
    }
    const char *base = strrchr(t->file, '/');
    base = base ? base + 1 : t->file;
    char size[96];
    if (t->status == MPK_MT_TENSOR_MISSING) snprintf(size, sizeof size, "missing");
    else if (t->layout_code || !t->declared_bytes) snprintf(size, sizeof size, "undeclared layout");
    else if (t->size_ok) snprintf(size, sizeof size, "size ok");
    else
      snprintf(size, sizeof size, "size MISMATCH (%llu on disk)", (unsigned long long)t->size);
    ok = ok && !t->layout_code && t->size_ok;
    char sum[96];
    if (t->authority != MPK_MT_AUTH_NONE)
      snprintf(sum, sizeof sum, "%s (%s)", mpk_mt_tensor_status_name(t->status), mpk_mt_authority_name(t->authority));
    else snprintf(sum, sizeof sum, "%s", mpk_mt_tensor_status_name(t->status));
    char how[96];
    how_verified(&g->hashing[i], how, sizeof how);
    printf("    %-16s %-8s %-14s %10llu bytes  %s  %s  checksum %s%s%s\n", mpk_mt_role_name(t->role),
           t->dtype && !t->layout_code ? t->dtype : "?", shape, (unsigned long long)t->declared_bytes, base, size, sum,
           how[0] ? "  " : "", how);
  }
  if (g->stamp_ignored) printf("  the verification stamp was ignored (%s): every file was hashed\n", g->stamp_ignored);
  if (g->n_from_stamp || g->stamp_written || g->stamp_ignored || stamp || rehash)
    printf("  %zu hashed now, %zu accepted by stamp%s\n", g->n_hashed, g->n_from_stamp,
           g->stamp_written ? "; stamp written" : "");
  for (size_t i = 0; i < g->n_problems; i++) mpk_cli_error(&g->problems[i]);
  if (ok) printf("OK: %zu tensor%s verified and loadable\n", g->n_tensors, g->n_tensors == 1 ? "" : "s");
  else printf("FAILED: %zu of %zu tensors verified%s\n", g->n_verified, g->n_tensors, g->ready ? " (a size or layout does not match its declaration)" : "");
  status = ok ? MPK_EXIT_OK : MPK_EXIT_FAIL;
out:
  if (err.code) mpk_cli_error(&err);
  mpk_mt_variant_gate_free(vg);
  return status;
}

int mpk_cmd_mt_tensors(int argc, char **argv) {
  const char *variant = NULL, *jobs_s = NULL;
  bool json = false, stamp = false, rehash = false;
  const mpk_cli_opt opts[] = {
      {"--variant", 0, "ID", "the variant (default: an installed model's own, else defaultVariant)", .str = &variant, .once = true},
      {"--jobs", 0, "N", "threads hashing tensors (default: one per CPU, at most 8)", .str = &jobs_s},
      {"--stamp", 0, NULL, "use and refresh the verification stamp (default on an installed model)", .flag = &stamp},
      {"--rehash", 0, NULL, "hash every file, ignoring the stamp, and write a fresh stamp", .flag = &rehash},
      {"--json", 0, NULL, "print one JSON document (docs/CLI.md)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = "mt tensors", .usage = "DIR [--variant ID] [--jobs N] [--stamp] [--rehash] [--json]", .about = about,
                             .opts = opts, .more = more, .json_keys = tensors_keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  long long jobs = 0;
  if (!a.n) return mpk_cli_usage(&spec, a.json, "missing the package directory");
  if ((st = mpk_cli_parse_jobs(&spec, a.json, jobs_s, &jobs))) return st;
  if (!mpk_cli_is_dir(a.arg[0])) return mpk_cli_usage(&spec, a.json, "'%s' is not a directory", a.arg[0]);
  return list(a.arg[0], variant, (unsigned)jobs, stamp, rehash, a.json);
}
