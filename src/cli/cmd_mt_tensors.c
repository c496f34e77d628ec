/* modelpkg mt tensors DIR [--variant ID] [--jobs N]: each handoff-map entry's roles with the
   declared dtype, shape and bytes (the load rule), the file, and its checksum status (the load
   gate: the shipped digest, or the merge record's for a tensor merged on device). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "mt/mt.h"

static const char help[] =
    "usage: modelpkg mt tensors DIR [--variant ID] [--jobs N]\n"
    "\n"
    "List the merged-weight tensors of a MobileTransformers package variant (default: the\n"
    "manifest's defaultVariant): for each weight_handoff_map.json entry and role, the declared dtype\n"
    "and shape, the exact byte size they imply, the .bin file, whether its size matches, and its\n"
    "checksum status under the load gate: the bytes must be the shipped ones (the map's sha256[role])\n"
    "or, for a tensor merged on device, those modelpkg's merge record lists; a sidecar <file>.bin.sha256\n"
    "must agree. Files are read beneath the package (no link out, no FIFO). An interrupted merge is\n"
    "finished or undone first.\n"
    "\n"
    "exit status: 0 every tensor verified and loadable (or no merged weights), 1 otherwise,\n"
    "2 usage error\n";

static int list(const char *dir, const char *variant, unsigned jobs) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_located loc;
  mpk_mt_handoff *map = NULL;
  mpk_mt_gate_report *g = NULL;
  int status = MPK_EXIT_FAIL, inf_fd = -1;
  if (mpk_mt_locate(dir, variant, &loc, &err)) {
    mpk_cli_error(&err);
    return status;
  }
  const char *id = loc.variant->id;
  if (!loc.map_file) {
    mpk_fail(&err, MPK_EMALFORMED, loc.manifest_file, NULL, "variant \"%s\" has no weightHandoff", id);
    goto out;
  }
  printf("modelpkg mt tensors %s (variant %s)\n", dir, id);
  /* The map, the tensors and their sidecars are read beneath the package: the inference directory
     is opened with no link in its path, and a package shipping a merge journal or record is
     refused before the gate would replay or trust it. */
  int rc = mpk_mt_load_map(dir, &loc, &map, &err);
  if (rc == MPK_ENOTFOUND && map == NULL && err.code == MPK_ENOTFOUND && strstr(err.message, "not found")) {
    printf("  no merged weights: %s is absent: use the base weights\n", loc.variant->weight_handoff);
    mpk_error_clear(&err);
    status = MPK_EXIT_OK;
    goto out;
  }
  if (rc) goto out;
  if (mpk_mt_open_inference(dir, &loc, &inf_fd, &err)) goto out;
  mpk_mt_gate_options go = {.struct_size = sizeof go, .workers = jobs};
  if (mpk_mt_load_gate_at(inf_fd, loc.inference_dir, map, &go, NULL, &g, &err)) goto out;
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
    printf("    %-16s %-8s %-14s %10llu bytes  %s  %s  checksum %s\n", mpk_mt_role_name(t->role),
           t->dtype && !t->layout_code ? t->dtype : "?", shape, (unsigned long long)t->declared_bytes, base, size, sum);
  }
  for (size_t i = 0; i < g->n_problems; i++) mpk_cli_error(&g->problems[i]);
  if (ok) printf("OK: %zu tensor%s verified and loadable\n", g->n_tensors, g->n_tensors == 1 ? "" : "s");
  else printf("FAILED: %zu of %zu tensors verified%s\n", g->n_verified, g->n_tensors, g->ready ? " (a size or layout does not match its declaration)" : "");
  status = ok ? MPK_EXIT_OK : MPK_EXIT_FAIL;
out:
  if (err.code) mpk_cli_error(&err);
  mpk_mt_gate_report_free(g);
  if (inf_fd >= 0) close(inf_fd);
  mpk_mt_handoff_free(map);
  mpk_mt_located_free(&loc);
  return status;
}

int mpk_cmd_mt_tensors(int argc, char **argv) {
  const char *cmd = "mt tensors", *dir = NULL, *variant = NULL;
  long long jobs = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    } else if (strcmp(a, "--variant") == 0 || strcmp(a, "--jobs") == 0) {
      if (i + 1 >= argc) return mpk_cli_usage_error(cmd, "%s needs a value", a);
      const char *val = argv[++i];
      if (a[2] == 'v') {
        variant = val;
        continue;
      }
      int st = mpk_cli_parse_jobs(cmd, val, &jobs);
      if (st) return st;
    } else if (a[0] == '-' && a[1]) {
      return mpk_cli_usage_error(cmd, "unknown option '%s'", a);
    } else if (!dir) {
      dir = a;
    } else {
      return mpk_cli_usage_error(cmd, "unexpected argument '%s'", a);
    }
  }
  if (!dir) return mpk_cli_usage_error(cmd, "missing the package directory");
  if (!mpk_is_dir(dir)) return mpk_cli_usage_error(cmd, "'%s' is not a directory", dir);
  return list(dir, variant, (unsigned)jobs);
}
