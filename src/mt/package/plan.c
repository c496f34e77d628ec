/* Download plans: which files the manifest lists that a variant's groups select. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mt/mt.h"

const mpk_mt_group *mpk_mt_plan_group(const mpk_mt_plan *plan, const char *name) {
  for (size_t i = 0; plan && name && i < plan->n_groups; i++)
    if (strcmp(plan->groups[i].name, name) == 0) return &plan->groups[i];
  return NULL;
}

/* The first index in m->files whose path compares >= key over n bytes (n 0: whole strings), or
   > key when `after`. */
static size_t bound(const mpk_mt_manifest *m, const char *key, size_t n, bool after) {
  size_t lo = 0, hi = m->n_files;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = n ? strncmp(m->files[mid].path, key, n) : strcmp(m->files[mid].path, key);
    if (c < 0 || (after && c == 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

void mpk_mt_pattern_range(const mpk_mt_manifest *m, const char *pattern, size_t *lo, size_t *hi) {
  *lo = *hi = 0;
  if (!m || !mpk_pattern_valid(pattern)) return;
  size_t n = strlen(pattern);
  if (n > 3 && strcmp(pattern + n - 3, "/**") == 0) { /* "dir/" then at least one byte: a path never ends in '/' */
    *lo = bound(m, pattern, n - 2, false);
    *hi = bound(m, pattern, n - 2, true);
  } else {
    *lo = bound(m, pattern, 0, false);
    *hi = bound(m, pattern, 0, true);
  }
}

/* A group of a parsed manifest holds only valid patterns (manifest.c checked each one): matched here
   without validating them again, as mpk_pattern_matches() would on every call. */
bool mpk_mt_group_selects(const mpk_mt_group *g, const char *path) {
  for (size_t i = 0; path && i < g->n_patterns; i++) {
    const char *p = g->patterns[i];
    size_t n = strlen(p);
    if (n > 3 && p[n - 1] == '*' && p[n - 2] == '*' && p[n - 3] == '/') {
      if (strncmp(path, p, n - 2) == 0 && path[n - 2] != '\0') return true;
    } else if (strcmp(path, p) == 0) {
      return true;
    }
  }
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
  /* Each pattern selects a contiguous run of the sorted files (one file, or every path under a
     directory): mark the runs in a difference array, then collect in order. O(patterns x log files
     + files), not patterns x files. */
  int32_t *diff = calloc(m->n_files + 1, sizeof *diff);
  if (!diff) {
    free(sel);
    free(files);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  for (size_t i = 0; i < ng; i++)
    for (size_t k = 0; k < sel[i]->n_patterns; k++) {
      size_t lo, hi;
      mpk_mt_pattern_range(m, sel[i]->patterns[k], &lo, &hi);
      if (lo < hi) diff[lo]++, diff[hi]--;
    }
  size_t count = 0;
  int64_t depth = 0;
  for (size_t f = 0; f < m->n_files; f++) /* m->files is sorted by path: so is the result */
    if ((depth += diff[f]) > 0) files[count++] = &m->files[f];
  free(diff);
  free(sel);
  *out = files;
  *n = count;
  return 0;
}
