/* Choosing what to download: a variant's sized download plan (which listed files its feature
   groups select, with sizes and digests), and the variant a device should get — hard filters, then
   a ranked preference, then the storage budget. Rules: docs/mt-select.md. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mt/mt.h"

#define MF MPK_MT_MANIFEST_FILENAME
/* A refused plan keeps this many problems for display; n_unverifiable counts them all. */
#define MAX_PLAN_PROBLEMS 64
/* Lists quoted inside one-line reasons are cut to this many bytes. */
#define LIST_TEXT_MAX 160

struct mpk_mt_download_plan_priv {
  mpk_arena *arena;
};

struct mpk_mt_selection_priv {
  mpk_arena *arena;
};

static int nomem(mpk_error *err) { return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory"); }

/* printf into the arena; NULL when out of memory. */
static char *afmt(mpk_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *afmt(mpk_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = mpk_arena_alloc(a, (size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

/* "a, b, c" into buf, cut with "..." when it does not fit. */
static const char *join(char *buf, size_t size, const char *const *list, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    size_t need = strlen(list[i]) + (i ? 2 : 0);
    if (len + need + 4 > size) {
      snprintf(buf + len, size - len, "%s...", i ? ", " : "");
      break;
    }
    len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", list[i]);
  }
  return buf;
}

static bool in_list(const char *s, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(s, list[i]) == 0) return true;
  return false;
}

static bool always_group(const char *s) { return strcmp(s, "core") == 0 || strcmp(s, "checksums") == 0; }

/* ---------------------------------------------------------------- requested features → groups */

typedef struct request {
  const char **features;
  size_t n_features;
  const char **groups; /* "core", "checksums", then the features */
  size_t n_groups;
} request;

/* The features as used: NULL/0 → {"inference"}; "core" and "checksums" (always planned) and
   repeats dropped; an empty or NULL name refused. Lists live in `a`. */
static int resolve_request(mpk_arena *a, const char *const *features, size_t n, request *rq, mpk_error *err) {
  static const char *const dflt[] = {"inference"};
  if (!features || n == 0) {
    features = dflt;
    n = 1;
  }
  rq->features = mpk_arena_array(a, n, sizeof *rq->features);
  rq->groups = mpk_arena_array(a, n + 2, sizeof *rq->groups);
  if (!rq->features || !rq->groups) return nomem(err);
  rq->n_features = 0;
  rq->groups[0] = "core";
  rq->groups[1] = "checksums";
  rq->n_groups = 2;
  for (size_t i = 0; i < n; i++) {
    if (!features[i] || !*features[i])
      return mpk_fail(err, MPK_EINVAL, NULL, NULL, "features: feature %zu is empty", i);
    if (always_group(features[i]) || in_list(features[i], rq->features, rq->n_features)) continue;
    rq->features[rq->n_features++] = features[i];
    rq->groups[rq->n_groups++] = features[i];
  }
  return 0;
}

/* ---------------------------------------------------------------- the download plan */

static size_t variant_index(const mpk_mt_manifest *m, const mpk_mt_variant *v) { return (size_t)(v - m->variants); }

/* Plan into `a` (which the plan's strings and arrays then live in). */
static int plan_into(mpk_arena *a, const mpk_mt_manifest *m, const char *variant, const request *rq,
                     bool allow_unverifiable, mpk_mt_download_plan *p, mpk_error *err) {
  mpk_path pp;
  const mpk_mt_variant *v = mpk_mt_manifest_variant(m, variant);
  if (!v) return mpk_fail(err, MPK_ENOTFOUND, MF, "/variants", "no variant \"%s\"", variant);
  p->variant = v->id;
  p->features = rq->features;
  p->n_features = rq->n_features;
  p->groups = rq->groups;
  p->n_groups = rq->n_groups;
  for (size_t i = 0; i < rq->n_features; i++)
    if (!in_list(rq->features[i], v->features, v->n_features)) {
      char list[LIST_TEXT_MAX];
      mpk_path_init(&pp);
      mpk_path_push_key(&pp, "variants");
      mpk_path_push_index(&pp, variant_index(m, v));
      mpk_path_push_key(&pp, "features");
      return mpk_fail(err, MPK_ENOTFOUND, MF, pp.buf, "variant \"%s\" does not declare feature \"%s\" (its features: %s)",
                      v->id, rq->features[i], join(list, sizeof list, v->features, v->n_features));
    }
  const mpk_mt_plan *plan = mpk_mt_manifest_plan(m, v->id);
  if (!plan) return mpk_fail(err, MPK_ENOTFOUND, MF, "/downloadPlan", "variant \"%s\" has no download plan", v->id);
  const mpk_mt_group **g = mpk_arena_array(a, rq->n_groups, sizeof *g);
  if (!g) return nomem(err);
  mpk_path_init(&pp);
  mpk_path_push_key(&pp, "downloadPlan");
  mpk_path_push_key(&pp, v->id);
  for (size_t i = 0; i < rq->n_groups; i++)
    if (!(g[i] = mpk_mt_plan_group(plan, rq->groups[i])))
      return mpk_fail(err, MPK_ENOTFOUND, MF, pp.buf, "the download plan of variant \"%s\" has no group \"%s\"", v->id,
                      rq->groups[i]);

  /* Patterns that select nothing are notes (the exporter writes the core patterns whether or not
     the model has, e.g., a chat template); the manifest's own name is a flag. */
  size_t n_notes = 0, cap_notes = 0;
  for (size_t i = 0; i < rq->n_groups; i++) cap_notes += g[i]->n_patterns;
  const char **notes = mpk_arena_array(a, cap_notes ? cap_notes : 1, sizeof *notes);
  if (!notes) return nomem(err);
  for (size_t i = 0; i < rq->n_groups; i++)
    for (size_t k = 0; k < g[i]->n_patterns; k++) {
      const char *pat = g[i]->patterns[k];
      if (strcmp(pat, MF) == 0) {
        p->includes_manifest = 1;
        continue;
      }
      size_t lo, hi;
      mpk_mt_pattern_range(m, pat, &lo, &hi); /* one binary search, not a pass over the files */
      if (lo < hi) continue;
      size_t n = strlen(pat);
      bool glob = n > 3 && strcmp(pat + n - 3, "/**") == 0;
      if (!(notes[n_notes++] = afmt(a, "warning: download pattern \"%s\" (group \"%s\") %s", pat, rq->groups[i],
                                    glob ? "selects no file the manifest lists" : "names a file the manifest does not list")))
        return nomem(err);
    }
  p->notes = notes;
  p->n_notes = n_notes;

  /* m->files is sorted by path, so the plan is too; each file once, under its first group. */
  mpk_mt_planned_file *files = mpk_arena_array(a, m->n_files ? m->n_files : 1, sizeof *files);
  /* Problems are kept only for display; otherwise the first one is the error. */
  mpk_error *problems = allow_unverifiable ? mpk_arena_array(a, MAX_PLAN_PROBLEMS, sizeof *problems) : NULL;
  if (!files || (allow_unverifiable && !problems)) return nomem(err);
  size_t n = 0, n_problems = 0;
  uint64_t total = 0;
  /* Each file's first group: every pattern selects a run of the sorted files (plan.c), marked per
     group in a difference array — O(groups x files + patterns x log files), not files x patterns. */
  size_t *first = mpk_arena_array(a, m->n_files ? m->n_files : 1, sizeof *first);
  int32_t *diff = mpk_arena_array(a, m->n_files + 1, sizeof *diff);
  if (!first || !diff) return nomem(err);
  for (size_t f = 0; f < m->n_files; f++) first[f] = rq->n_groups;
  for (size_t gi = rq->n_groups; gi-- > 0;) { /* the last group first: an earlier one overwrites */
    memset(diff, 0, (m->n_files + 1) * sizeof *diff);
    for (size_t k = 0; k < g[gi]->n_patterns; k++) {
      size_t lo, hi;
      mpk_mt_pattern_range(m, g[gi]->patterns[k], &lo, &hi);
      if (lo < hi) diff[lo]++, diff[hi]--;
    }
    int64_t depth = 0;
    for (size_t f = 0; f < m->n_files; f++)
      if ((depth += diff[f]) > 0) first[f] = gi;
  }
  for (size_t f = 0; f < m->n_files; f++) {
    const mpk_mt_file *lf = &m->files[f];
    size_t gi = first[f];
    if (gi == rq->n_groups) continue;
    files[n] = (mpk_mt_planned_file){.path = lf->path, .group = rq->groups[gi], .has_size = lf->has_size,
                                     .size = lf->has_size ? lf->size : 0, .sha256 = lf->sha256};
    if (total > UINT64_MAX - files[n].size)
      return mpk_fail(err, MPK_ELIMIT, MF, "/fileSizes", "the planned files of variant \"%s\" add up to more than %" PRIu64 " bytes",
                      v->id, UINT64_MAX);
    total += files[n].size;
    for (int missing = 0; missing < 2; missing++) {
      if (missing == 0 ? lf->has_size : lf->sha256 != NULL) continue;
      if (missing == 0 || lf->has_size) p->n_unverifiable++;
      mpk_error e;
      mpk_path_init(&pp);
      mpk_path_push_key(&pp, missing == 0 ? "fileSizes" : "sha256");
      mpk_path_push_key(&pp, lf->path);
      mpk_fail(&e, MPK_EMALFORMED, MF, pp.buf,
               missing == 0 ? "planned file \"%s\" (variant \"%s\", group \"%s\") has no fileSizes entry: the installer "
                              "refuses a file whose size it cannot check"
                            : "planned file \"%s\" (variant \"%s\", group \"%s\") has no sha256 digest: the installer "
                              "refuses a file it cannot verify",
               lf->path, v->id, rq->groups[gi]);
      if (!allow_unverifiable) {
        if (err) *err = e;
        return MPK_EMALFORMED;
      }
      if (n_problems < MAX_PLAN_PROBLEMS) problems[n_problems++] = e;
    }
    n++;
  }
  p->files = files;
  p->n_files = n;
  p->total_bytes = total;
  p->problems = problems;
  p->n_problems = n_problems;
  return 0;
}

int mpk_mt_plan_download(const mpk_mt_manifest *m, const char *variant, const mpk_mt_plan_options *opts,
                         mpk_mt_download_plan **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (!m || !variant) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_arena *a = mpk_arena_new();
  mpk_mt_download_plan *p = a ? mpk_arena_alloc(a, sizeof *p) : NULL;
  struct mpk_mt_download_plan_priv *priv = p ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  if (!priv) {
    mpk_arena_free(a);
    return nomem(err);
  }
  priv->arena = a;
  p->priv_ = priv;
  request rq;
  mpk_mt_plan_options o;
  int rc = MPK_OPTIONS_READ(mpk_mt_plan_options, &o, opts, err);
  if (!rc) rc = resolve_request(a, o.features, o.n_features, &rq, err);
  if (!rc) rc = plan_into(a, m, variant, &rq, o.allow_unverifiable, p, err);
  if (rc) {
    mpk_arena_free(a);
    return rc;
  }
  *out = p;
  return 0;
}

void mpk_mt_download_plan_free(mpk_mt_download_plan *p) {
  if (p) mpk_arena_free(p->priv_->arena); /* p itself lives in the arena */
}

/* ---------------------------------------------------------------- storage */

uint64_t mpk_mt_storage_budget(uint64_t free_bytes) {
  /* floor(free * 9 / 10) without overflow: free = 10q + r, so the budget is 9q + floor(9r / 10). */
  return free_bytes / 10 * 9 + free_bytes % 10 * 9 / 10;
}

/* ---------------------------------------------------------------- selection */

const char *mpk_mt_filter_name(mpk_mt_filter f) {
  switch (f) {
    case MPK_MT_FILTER_NONE: return "none";
    case MPK_MT_FILTER_ABI: return "abi";
    case MPK_MT_FILTER_EXECUTION_PROVIDER: return "executionProvider";
    case MPK_MT_FILTER_QUANTIZATION: return "quantization";
    case MPK_MT_FILTER_ENGINE: return "engine";
    case MPK_MT_FILTER_FEATURES: return "features";
    case MPK_MT_FILTER_MEMORY: return "recommendedDeviceMemoryMb";
    case MPK_MT_FILTER_API_LEVEL: return "minimumAndroidApi";
    case MPK_MT_FILTER_PLAN: return "downloadPlan";
    case MPK_MT_FILTER_STORAGE: return "storage";
  }
  return "unknown";
}

/* A candidate while ranking (the public struct plus the sort key). */
typedef struct cand {
  mpk_mt_candidate *c;
  size_t quant_rank; /* index in the preference list; n_prefer when unlisted or null */
  bool is_default;
} cand;

static int key_cmp(const cand *x, const cand *y) {
  if (x->quant_rank != y->quant_rank) return x->quant_rank < y->quant_rank ? -1 : 1;
  if (x->c->download_bytes != y->c->download_bytes) return x->c->download_bytes < y->c->download_bytes ? -1 : 1;
  if (x->is_default != y->is_default) return x->is_default ? -1 : 1;
  return strcmp(x->c->variant->id, y->c->variant->id); /* ids are unique: a total order */
}

static int cand_qsort_cmp(const void *a, const void *b) { return key_cmp(a, b); }

/* The first filter `v` fails, with the reason in `a`; MPK_MT_FILTER_NONE when it passes. */
static mpk_mt_filter hard_filter(mpk_arena *a, const mpk_mt_variant *v, const mpk_mt_select_options *o,
                                 const request *rq, const char **why) {
  char l1[LIST_TEXT_MAX], l2[LIST_TEXT_MAX];
  *why = NULL;
  if (!v->abi_any && v->n_abi == 0) {
    *why = "abi is an empty list: it runs on no device";
    return MPK_MT_FILTER_ABI;
  }
  if (!v->abi_any && o->n_abis) {
    bool shared = false;
    for (size_t i = 0; i < o->n_abis && !shared; i++) shared = in_list(o->abis[i], v->abi, v->n_abi);
    if (!shared) {
      *why = afmt(a, "abi [%s] shares no ABI with the device (%s)", join(l1, sizeof l1, v->abi, v->n_abi),
                  join(l2, sizeof l2, o->abis, o->n_abis));
      return MPK_MT_FILTER_ABI;
    }
  }
  if (o->execution_provider && strcmp(v->execution_provider, o->execution_provider) != 0) {
    *why = afmt(a, "executionProvider \"%s\" is not the requested \"%s\"", v->execution_provider, o->execution_provider);
    return MPK_MT_FILTER_EXECUTION_PROVIDER;
  }
  if (o->quantization && (!v->quantization || strcmp(v->quantization, o->quantization) != 0)) {
    *why = v->quantization ? afmt(a, "quantization \"%s\" is not the requested \"%s\"", v->quantization, o->quantization)
                           : afmt(a, "quantization is null, not the requested \"%s\"", o->quantization);
    return MPK_MT_FILTER_QUANTIZATION;
  }
  if (o->engine && !in_list(o->engine, v->supported_engines, v->n_supported_engines)) {
    *why = afmt(a, "supportedEngines [%s] does not include the requested \"%s\"",
                join(l1, sizeof l1, v->supported_engines, v->n_supported_engines), o->engine);
    return MPK_MT_FILTER_ENGINE;
  }
  for (size_t i = 0; i < rq->n_features; i++)
    if (!in_list(rq->features[i], v->features, v->n_features)) {
      *why = afmt(a, "features [%s] lack the requested \"%s\"", join(l1, sizeof l1, v->features, v->n_features),
                  rq->features[i]);
      return MPK_MT_FILTER_FEATURES;
    }
  if (o->memory_mb.present && v->recommended_device_memory_mb.present &&
      v->recommended_device_memory_mb.value > o->memory_mb.value) {
    *why = afmt(a, "recommendedDeviceMemoryMb %" PRId64 " exceeds the device memory of %" PRId64 " MB",
                v->recommended_device_memory_mb.value, o->memory_mb.value);
    return MPK_MT_FILTER_MEMORY;
  }
  if (o->api_level.present && v->minimum_android_api.present && v->minimum_android_api.value > o->api_level.value) {
    *why = afmt(a, "minimumAndroidApi %" PRId64 " exceeds the device API level %" PRId64, v->minimum_android_api.value,
                o->api_level.value);
    return MPK_MT_FILTER_API_LEVEL;
  }
  return MPK_MT_FILTER_NONE;
}

/* Why `better` ranks above `worse`, as the first key that differs. `winner` words it for `better`. */
static char *rank_reason(mpk_arena *a, const mpk_mt_manifest *m, const mpk_mt_select_options *o, const cand *better,
                         const cand *worse, bool winner) {
  const char *bq = better->c->variant->quantization, *wq = worse->c->variant->quantization;
  if (better->quant_rank != worse->quant_rank) {
    if (winner) return afmt(a, "its quantization \"%s\" is the most preferred among the candidates", bq);
    if (!wq) return afmt(a, "it declares no quantization; \"%s\" is preferred", bq);
    if (worse->quant_rank == o->n_prefer_quant)
      return afmt(a, "its quantization \"%s\" is not in the preference list; \"%s\" is", wq, bq);
    return afmt(a, "its quantization \"%s\" comes after \"%s\" in the preference list", wq, bq);
  }
  uint64_t bb = better->c->download_bytes, wb = worse->c->download_bytes;
  if (bb != wb)
    return winner ? afmt(a, "the smallest download (%" PRIu64 " < %" PRIu64 " bytes)", bb, wb)
                  : afmt(a, "its download is larger (%" PRIu64 " > %" PRIu64 " bytes)", wb, bb);
  if (better->is_default != worse->is_default)
    return winner ? afmt(a, "preference and size tie; it is the defaultVariant")
                  : afmt(a, "preference and size tie; \"%s\" is the defaultVariant", m->default_variant);
  return afmt(a, "preference and size tie, neither is the defaultVariant, and \"%s\" sorts before \"%s\"",
              better->c->variant->id, worse->c->variant->id);
}

static int check_list(const char *what, const char *const *list, size_t n, mpk_error *err) {
  if (n && !list) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "%s: NULL list of %zu", what, n);
  for (size_t i = 0; i < n; i++)
    if (!list[i] || !*list[i]) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "%s: entry %zu is empty", what, i);
  return 0;
}

static int check_options(const mpk_mt_select_options *o, mpk_error *err) {
  int rc = check_list("abis", o->abis, o->n_abis, err);
  if (!rc) rc = check_list("prefer_quant", o->prefer_quant, o->n_prefer_quant, err);
  if (rc) return rc;
  const char *const strs[] = {o->execution_provider, o->quantization, o->engine};
  const char *const names[] = {"execution_provider", "quantization", "engine"};
  for (size_t i = 0; i < 3; i++)
    if (strs[i] && !*strs[i]) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "%s is empty: give NULL for any", names[i]);
  const mpk_opt_int *ints[] = {&o->memory_mb, &o->api_level, &o->free_bytes};
  const char *const inames[] = {"memory_mb", "api_level", "free_bytes"};
  for (size_t i = 0; i < 3; i++)
    if (ints[i]->present && ints[i]->value < 0)
      return mpk_fail(err, MPK_EINVAL, NULL, NULL, "%s is negative (%" PRId64 ")", inames[i], ints[i]->value);
  return 0;
}

/* Rank the eligible candidates, apply the budget, word every reason. Returns the chosen one or NULL. */
static const cand *decide(mpk_arena *a, const mpk_mt_manifest *m, const mpk_mt_select_options *o, mpk_mt_selection *s,
                          cand *el, size_t n_el, bool *oom) {
  mpk_sort(el, n_el, sizeof *el, cand_qsort_cmp);
  for (size_t i = 0; i < n_el; i++) el[i].c->rank = i + 1;
  if (n_el && el[0].quant_rank < o->n_prefer_quant) s->preferred_quant = o->prefer_quant[el[0].quant_rank];
  const cand *win = NULL;
  for (size_t i = 0; i < n_el; i++) {
    mpk_mt_candidate *c = el[i].c;
    if (s->has_budget && c->download_bytes > s->budget_bytes) {
      c->excluded_by = MPK_MT_FILTER_STORAGE;
      c->reason = afmt(a, "its download of %" PRIu64 " bytes exceeds the storage budget of %" PRIu64
                          " bytes (90%% of %" PRIu64 " free, rounded down)",
                       c->download_bytes, s->budget_bytes, s->free_bytes);
      if (!c->reason) *oom = true;
    } else if (!win) {
      win = &el[i];
      c->chosen = 1;
    }
  }
  if (!win) return NULL;
  size_t wi = (size_t)(win - el);
  s->fell_back = wi > 0;
  if (wi > 0)
    win->c->reason = afmt(a, "the best-ranked variant whose download fits the storage budget (%" PRIu64 " of %" PRIu64
                             " bytes); %s ranks above it but does not fit",
                          win->c->download_bytes, s->budget_bytes, el[0].c->variant->id);
  else if (n_el == 1)
    win->c->reason = afmt(a, "the only variant that passes every filter");
  else
    win->c->reason = rank_reason(a, m, o, &el[0], &el[1], true);
  if (!win->c->reason) *oom = true;
  for (size_t i = wi + 1; i < n_el; i++) {
    mpk_mt_candidate *c = el[i].c;
    if (c->excluded_by == MPK_MT_FILTER_STORAGE) continue;
    char *r = rank_reason(a, m, o, win, &el[i], false);
    c->reason = r ? afmt(a, "ranks below %s: %s", win->c->variant->id, r) : NULL;
    if (!c->reason) *oom = true;
  }
  return win;
}

int mpk_mt_select(const mpk_mt_manifest *m, const mpk_mt_select_options *opts, mpk_mt_selection **out,
                  mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  if (!m) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  static const char *const default_prefer[] = {MPK_MT_DEFAULT_PREFER_QUANT};
  mpk_mt_select_options o;
  int rc = MPK_OPTIONS_READ(mpk_mt_select_options, &o, opts, err);
  if (!rc) rc = check_options(&o, err);
  if (rc) return rc;
  if (!o.prefer_quant) {
    o.prefer_quant = default_prefer;
    o.n_prefer_quant = 1;
  }
  mpk_arena *a = mpk_arena_new();
  mpk_mt_selection *s = a ? mpk_arena_alloc(a, sizeof *s) : NULL;
  struct mpk_mt_selection_priv *priv = s ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  mpk_mt_candidate *cs = priv ? mpk_arena_array(a, m->n_variants ? m->n_variants : 1, sizeof *cs) : NULL;
  cand *el = cs ? calloc(m->n_variants ? m->n_variants : 1, sizeof *el) : NULL;
  if (!el) {
    mpk_arena_free(a);
    return nomem(err);
  }
  priv->arena = a;
  s->priv_ = priv;
  request rq;
  if ((rc = resolve_request(a, o.features, o.n_features, &rq, err))) goto fail;
  s->features = rq.features;
  s->n_features = rq.n_features;
  s->groups = rq.groups;
  s->n_groups = rq.n_groups;
  s->prefer_quant = o.prefer_quant;
  s->n_prefer_quant = o.n_prefer_quant;
  s->candidates = cs;
  s->n_candidates = m->n_variants;
  s->has_budget = o.free_bytes.present;
  if (s->has_budget) {
    s->free_bytes = (uint64_t)o.free_bytes.value;
    s->budget_bytes = mpk_mt_storage_budget(s->free_bytes);
  }

  size_t n_el = 0;
  for (size_t i = 0; i < m->n_variants; i++) {
    mpk_mt_candidate *c = &cs[i];
    c->variant = &m->variants[i];
    /* Every variant's size is shown, eligible or not, when its plan can be computed. */
    mpk_arena *scratch = mpk_arena_new();
    if (!scratch) {
      rc = nomem(err);
      goto fail;
    }
    mpk_mt_download_plan plan = {0};
    mpk_error perr;
    mpk_error_clear(&perr);
    int prc = plan_into(scratch, m, c->variant->id, &rq, false, &plan, &perr);
    mpk_arena_free(scratch);
    if (prc == MPK_ENOMEM) {
      rc = nomem(err);
      goto fail;
    }
    c->has_bytes = prc == 0;
    c->download_bytes = prc == 0 ? plan.total_bytes : 0;
    c->excluded_by = hard_filter(a, c->variant, &o, &rq, &c->reason);
    if (c->excluded_by == MPK_MT_FILTER_NONE && prc) {
      c->excluded_by = MPK_MT_FILTER_PLAN;
      c->reason = afmt(a, "%s", perr.message);
    }
    if (c->excluded_by != MPK_MT_FILTER_NONE && !c->reason) {
      rc = nomem(err);
      goto fail;
    }
    if (c->excluded_by != MPK_MT_FILTER_NONE) continue;
    size_t qr = o.n_prefer_quant;
    for (size_t k = 0; c->variant->quantization && k < o.n_prefer_quant && qr == o.n_prefer_quant; k++)
      if (strcmp(c->variant->quantization, o.prefer_quant[k]) == 0) qr = k;
    el[n_el++] = (cand){.c = c, .quant_rank = qr,
                        .is_default = m->default_variant && strcmp(m->default_variant, c->variant->id) == 0};
  }
  bool oom = false;
  const cand *win = decide(a, m, &o, s, el, n_el, &oom);
  if (oom) {
    rc = nomem(err);
    goto fail;
  }
  if (win) {
    s->chosen = win->c->variant;
    s->summary = afmt(a, "chose %s: %s", s->chosen->id, win->c->reason);
    if (!s->summary) {
      rc = nomem(err);
      goto fail;
    }
    free(el);
    *out = s;
    return 0;
  }
  /* Nothing fits: one line naming every variant and the first filter that excluded it. */
  size_t cap = 64;
  for (size_t i = 0; i < m->n_variants; i++) cap += strlen(cs[i].variant->id) + strlen(cs[i].reason) + 4;
  char *sum = mpk_arena_alloc(a, cap);
  if (!sum) {
    rc = nomem(err);
    goto fail;
  }
  size_t len = (size_t)snprintf(sum, cap, "no variant fits%s", m->n_variants ? ": " : " (the manifest declares none)");
  for (size_t i = 0; i < m->n_variants; i++)
    len += (size_t)snprintf(sum + len, cap - len, "%s%s: %s", i ? "; " : "", cs[i].variant->id, cs[i].reason);
  s->summary = sum;
  free(el);
  *out = s;
  return mpk_fail(err, MPK_ENOVARIANT, MF, "/variants", "%s", sum);
fail:
  free(el);
  mpk_arena_free(a);
  return rc;
}

void mpk_mt_selection_free(mpk_mt_selection *s) {
  if (s) mpk_arena_free(s->priv_->arena);
}
