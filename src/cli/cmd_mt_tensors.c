/* modelpkg mt tensors DIR [--variant ID] [--jobs N]: each handoff-map entry's roles with the
   declared dtype, shape and bytes (the load rule), the file, and its checksum status (the load
   gate: sidecar first, then the map's sha256). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"

static const char help[] =
    "usage: modelpkg mt tensors DIR [--variant ID] [--jobs N]\n"
    "\n"
    "List the merged-weight tensors of a MobileTransformers package variant (default: the\n"
    "manifest's defaultVariant): for each weight_handoff_map.json entry and role, the declared dtype\n"
    "and shape, the exact byte size they imply, the .bin file, whether its size matches, and its\n"
    "checksum status under the load gate (the sidecar <file>.bin.sha256 wins; without one the map's\n"
    "sha256[role]; with neither the tensor is refused).\n"
    "\n"
    "exit status: 0 every tensor verified and loadable (or no merged weights), 1 otherwise,\n"
    "2 usage error\n";

static const char *variant_path(const mpk_mt_variant *v, const char *key) {
  for (size_t i = 0; i < v->n_paths; i++)
    if (strcmp(v->paths[i].key, key) == 0) return v->paths[i].value;
  return NULL;
}

static int list(const char *dir, const char *variant, unsigned jobs) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_manifest *m = NULL;
  mpk_mt_handoff *map = NULL;
  mpk_mt_gate_report *g = NULL;
  char *mpath = mpk_path_join(dir, MPK_MT_MANIFEST_FILENAME), *mapfile = NULL, *inf = NULL;
  int status = MPK_EXIT_FAIL;
  if (!mpath || mpk_mt_manifest_load(mpath, &m, &err)) goto out;
  const char *id = variant ? variant : m->default_variant;
  const mpk_mt_variant *v = mpk_mt_manifest_variant(m, id);
  if (!v) {
    mpk_fail(&err, MPK_ENOTFOUND, mpath, "/variants", "variant \"%s\" is not among the variants", id);
    goto out;
  }
  if (!v->weight_handoff) {
    mpk_fail(&err, MPK_EMALFORMED, mpath, NULL, "variant \"%s\" has no weightHandoff", id);
    goto out;
  }
  if (!mpk_path_is_confined(v->weight_handoff, NULL)) {
    mpk_fail(&err, MPK_EMALFORMED, mpath, NULL, "variant \"%s\": weightHandoff leaves the package", id);
    goto out;
  }
  if (!(mapfile = mpk_path_join(dir, v->weight_handoff))) goto out;
  printf("modelpkg mt tensors %s (variant %s)\n", dir, id);
  if (!mpk_file_exists(mapfile)) {
    printf("  no merged weights: %s is absent: use the base weights\n", v->weight_handoff);
    status = MPK_EXIT_OK;
    goto out;
  }
  if (mpk_mt_handoff_load(mapfile, &map, &err)) goto out;
  const char *rel = variant_path(v, "inference");
  if (rel) inf = mpk_path_join(dir, rel);
  else {
    inf = strdup(mapfile);
    if (inf) *strrchr(inf, '/') = '\0';
  }
  if (!inf) goto out;
  mpk_mt_gate_options go = {.workers = jobs};
  if (mpk_mt_load_gate(inf, map, &go, &g, &err)) goto out;
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
  mpk_mt_handoff_free(map);
  mpk_mt_manifest_free(m);
  free(mpath);
  free(mapfile);
  free(inf);
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
