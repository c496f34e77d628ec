/* Fuzz target: the mobiletransformers_manifest.json reader, then everything a caller does with a
   manifest it accepted: look variants, plans and files up, and write it back. */
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  mpk_mt_manifest *m = NULL;
  if (mpk_mt_manifest_parse(data, size, NULL, &m, &err) != 0) return 0;
  for (size_t i = 0; i < m->n_variants; i++) {
    const mpk_mt_variant *v = mpk_mt_manifest_variant(m, m->variants[i].id);
    const mpk_mt_plan *p = v ? mpk_mt_manifest_plan(m, v->id) : NULL;
    if (v && v->weight_handoff) mpk_mt_manifest_file(m, v->weight_handoff);
    for (size_t g = 0; p && g < p->n_groups; g++)
      for (size_t k = 0; k < p->groups[g].n_patterns; k++)
        for (size_t f = 0; f < m->n_files && f < 64; f++) mpk_pattern_matches(p->groups[g].patterns[k], m->files[f].path);
  }
  /* A plan's files (binary searches over the sorted files) are exactly those a pattern matches. */
  for (size_t i = 0; i < m->n_plans; i++) {
    const mpk_mt_file **sel = NULL;
    size_t n = 0, k = 0;
    if (mpk_mt_plan_files(m, m->plans[i].variant, NULL, 0, &sel, &n, &err) == 0) {
      for (size_t f = 0; f < m->n_files; f++) {
        int any = 0;
        for (size_t g = 0; g < m->plans[i].n_groups && !any; g++)
          for (size_t p = 0; p < m->plans[i].groups[g].n_patterns && !any; p++)
            any = mpk_pattern_matches(m->plans[i].groups[g].patterns[p], m->files[f].path);
        if (any && (k >= n || sel[k++] != &m->files[f])) __builtin_trap();
      }
      if (k != n) __builtin_trap();
    }
    mpk_free(sel);
  }
  mpk_mt_manifest_variant(m, m->default_variant);
  for (size_t i = 0; i < m->n_required_files; i++) mpk_mt_manifest_file(m, m->required_files[i]);
  char *text = NULL;
  size_t len = 0;
  if (mpk_mt_manifest_json(m, &text, &len, &err) == 0) {
    /* What was written back reads back. */
    mpk_mt_manifest *again = NULL;
    if (mpk_mt_manifest_parse(text, len, NULL, &again, &err) != 0) __builtin_trap();
    mpk_mt_manifest_free(again);
  }
  mpk_free(text);
  mpk_mt_manifest_free(m);
  return 0;
}
