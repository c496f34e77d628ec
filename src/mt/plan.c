/* Download plans: which files the manifest lists that a variant's groups select. */
#include <stdlib.h>
#include <string.h>

#include "mt.h"

const mpk_mt_group *mpk_mt_plan_group(const mpk_mt_plan *plan, const char *name) {
  for (size_t i = 0; plan && name && i < plan->n_groups; i++)
    if (strcmp(plan->groups[i].name, name) == 0) return &plan->groups[i];
  return NULL;
}

bool mpk_mt_group_selects(const mpk_mt_group *g, const char *path) {
  for (size_t i = 0; i < g->n_patterns; i++)
    if (mpk_pattern_matches(g->patterns[i], path)) return true;
  return false;
}

int mpk_mt_plan_files(const mpk_mt_manifest *m, const char *variant, const char *const *groups, size_t n_groups,
                      const mpk_mt_file ***out, size_t *n, mpk_error *err) {
  if (!m || !variant || !out || !n || (n_groups && !groups))
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  *n = 0;
  if (!mpk_mt_manifest_variant(m, variant))
    return mpk_fail(err, MPK_ENOTFOUND, MPK_MT_MANIFEST_FILENAME, "/variants", "no variant \"%s\"", variant);
  const mpk_mt_plan *plan = mpk_mt_manifest_plan(m, variant);
  if (!plan)
    return mpk_fail(err, MPK_ENOTFOUND, MPK_MT_MANIFEST_FILENAME, "/downloadPlan",
                    "variant \"%s\" has no download plan", variant);
  size_t ng = n_groups ? n_groups : plan->n_groups;
  const mpk_mt_group **sel = calloc(ng ? ng : 1, sizeof *sel);
  const mpk_mt_file **files = calloc(m->n_files ? m->n_files : 1, sizeof *files);
  if (!sel || !files) {
    free(sel);
    free(files);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  for (size_t i = 0; i < ng; i++) {
    sel[i] = n_groups ? mpk_mt_plan_group(plan, groups[i]) : &plan->groups[i];
    if (!sel[i]) {
      mpk_fail(err, MPK_ENOTFOUND, MPK_MT_MANIFEST_FILENAME, "/downloadPlan",
               "the download plan of variant \"%s\" has no group \"%s\"", variant, groups[i] ? groups[i] : "(null)");
      free(sel);
      free(files);
      return MPK_ENOTFOUND;
    }
  }
  size_t count = 0;
  for (size_t f = 0; f < m->n_files; f++) /* m->files is sorted by path: so is the result */
    for (size_t i = 0; i < ng; i++)
      if (mpk_mt_group_selects(sel[i], m->files[f].path)) {
        files[count++] = &m->files[f];
        break;
      }
  free(sel);
  *out = files;
  *n = count;
  return 0;
}
