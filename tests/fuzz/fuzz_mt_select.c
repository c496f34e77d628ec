/* Fuzz target: what an installer does with a manifest it fetched — select a variant for several
   devices and plan every variant's download — and the repo-id sanitize rule (its own UTF-8
   decoder) on the same bytes. Invariants are checked, not just crashes. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "modelpkg.h"

static bool safe_dir_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

static void sanitize(const uint8_t *data, size_t size) {
  char id[1024], out[MPK_MT_REPO_DIR_MAX + 1];
  size_t n = size < sizeof id - 1 ? size : sizeof id - 1;
  memcpy(id, data, n);
  id[n] = '\0';
  mpk_error err;
  int rc = mpk_mt_sanitize_repo_id(id, out, sizeof out, &err);
  size_t len = strlen(out);
  if (rc) {
    if (len) __builtin_trap(); /* a refusal leaves nothing behind */
    return;
  }
  /* A single directory name: safe characters only, never "." or "..", never empty, bounded. */
  if (!len || len > MPK_MT_REPO_DIR_MAX || !strcmp(out, ".") || !strcmp(out, "..")) __builtin_trap();
  for (size_t i = 0; i < len; i++)
    if (!safe_dir_char(out[i])) __builtin_trap();
  /* One or two output bytes per code point; ASCII-only safe input maps to itself. */
  size_t cps = 0;
  bool plain = true;
  for (size_t i = 0; id[i]; i++) {
    unsigned char c = (unsigned char)id[i];
    if ((c & 0xC0) != 0x80) cps++;
    if (!safe_dir_char(id[i])) plain = false;
  }
  if (len < cps || len > 2 * cps) __builtin_trap();
  if (plain && strcmp(out, id) != 0) __builtin_trap();
}

static void check_selection(const mpk_mt_manifest *m, const mpk_mt_select_options *o) {
  mpk_error err;
  mpk_mt_selection *s = NULL;
  int rc = mpk_mt_select(m, o, &s, &err);
  if (rc != 0 && rc != MPK_ENOVARIANT) {
    if (s) __builtin_trap();
    return;
  }
  if (!s || (rc == 0) != (s->chosen != NULL) || s->n_candidates != m->n_variants) __builtin_trap();
  size_t chosen = 0;
  for (size_t i = 0; i < s->n_candidates; i++) {
    const mpk_mt_candidate *c = &s->candidates[i];
    if (!c->reason) __builtin_trap();
    if (c->chosen) {
      chosen++;
      if (c->variant != s->chosen || c->excluded_by != MPK_MT_FILTER_NONE || !c->has_bytes) __builtin_trap();
      if (s->has_budget && c->download_bytes > s->budget_bytes) __builtin_trap();
    }
    if (c->rank && (c->excluded_by != MPK_MT_FILTER_NONE && c->excluded_by != MPK_MT_FILTER_STORAGE)) __builtin_trap();
  }
  if (chosen != (s->chosen ? 1u : 0u)) __builtin_trap();
  mpk_mt_selection_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sanitize(data, size);
  mpk_error err;
  mpk_mt_manifest *m = NULL;
  if (mpk_mt_manifest_parse(data, size, NULL, &m, &err) != 0) return 0;

  static const char *const abis[] = {"arm64-v8a", "x86_64"};
  static const char *const features[] = {"train", "rag", "genai", "inference"};
  static const char *const prefer[] = {"QInt8", "fp16", "int4"};
  mpk_mt_select_options opts[] = {
      {0},
      {.abis = abis, .n_abis = 1, .memory_mb = {1, 4096}, .api_level = {1, 30}, .free_bytes = {1, 3000}},
      {.abis = abis, .n_abis = 2, .engine = "genai", .features = features, .n_features = 4, .prefer_quant = prefer,
       .n_prefer_quant = 3, .free_bytes = {1, INT64_MAX}},
      {.quantization = "int4", .execution_provider = "cpu", .prefer_quant = prefer, .n_prefer_quant = 0,
       .free_bytes = {1, 0}},
  };
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) check_selection(m, &opts[i]);

  for (size_t i = 0; i < m->n_variants && i < 16; i++)
    for (int allow = 0; allow < 2; allow++) {
      mpk_mt_plan_options po = {.features = features, .n_features = allow ? 4 : 0, .allow_unverifiable = allow};
      mpk_mt_download_plan *p = NULL;
      int rc = mpk_mt_plan_download(m, m->variants[i].id, &po, &p, &err);
      if (rc) {
        if (p) __builtin_trap();
        continue;
      }
      uint64_t total = 0;
      for (size_t f = 0; f < p->n_files; f++) {
        total += p->files[f].size;
        if (f && strcmp(p->files[f - 1].path, p->files[f].path) >= 0) __builtin_trap(); /* sorted, once each */
        if (!allow && (!p->files[f].has_size || !p->files[f].sha256)) __builtin_trap();
      }
      if (total != p->total_bytes) __builtin_trap();
      /* Exactly the listed files some requested group's pattern matches, each under the first such
         group (a brute-force pass over every file and pattern). */
      const mpk_mt_plan *plan = mpk_mt_manifest_plan(m, m->variants[i].id);
      size_t k = 0;
      for (size_t f = 0; plan && f < m->n_files; f++) {
        const char *group = NULL;
        for (size_t gi = 0; gi < p->n_groups && !group; gi++)
          for (size_t pg = 0; pg < plan->n_groups && !group; pg++) {
            if (strcmp(plan->groups[pg].name, p->groups[gi])) continue;
            for (size_t q = 0; q < plan->groups[pg].n_patterns && !group; q++)
              if (mpk_pattern_matches(plan->groups[pg].patterns[q], m->files[f].path)) group = p->groups[gi];
          }
        if (!group) continue;
        if (k >= p->n_files || strcmp(p->files[k].path, m->files[f].path) || strcmp(p->files[k].group, group))
          __builtin_trap();
        k++;
      }
      if (plan && k != p->n_files) __builtin_trap();
      mpk_mt_download_plan_free(p);
    }
  mpk_mt_manifest_free(m);
  return 0;
}
