/* One variant's inference graph, its handoff map and its declared precision, read and checked
   together: what `modelpkg mt graph` prints, what `mt inspect` tabulates per variant, and what
   `modelpkg check` adds to a MobileTransformers package check when the graph is present. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mt/graph/graph.h"

struct mpk_mt_graph_report_priv {
  mpk_findings found;
  mpk_mt_located loc; /* open(): the manifest the variant's strings come from */
  mpk_mt_graph *graph;
  mpk_mt_handoff *map;
  char *graph_file, *map_file, *oc_file, *measured, *declared;
  int *claim_entry, *claim_role;
};

/* The report's problems and notes are its findings' (published when the report is made). */
static void on_problem(void *ctx, const mpk_error *e) {
  mpk_mt_graph_report *r = ctx;
  mpk_findings_problem(&r->priv_->found, e);
}

#define PROBLEM(r, ...) mpk_findings_fail(&(r)->priv_->found, __VA_ARGS__)
#define NOTE(r, ...) mpk_findings_note(&(r)->priv_->found, __VA_ARGS__)

/* inference/optimum_config.json's inferenceGraphPrecision against the measured precision. */
static void check_precision(mpk_mt_graph_report *r, const char *inf_dir) {
  struct mpk_mt_graph_report_priv *p = r->priv_;
  if (!(p->oc_file = mpk_path_join(inf_dir, MPK_MT_OPTIMUM_CONFIG_FILENAME))) {
    p->found.oom = true;
    return;
  }
  struct stat st;
  if (stat(p->oc_file, &st) != 0) {
    free(p->oc_file);
    p->oc_file = NULL;
    if (r->measured)
      NOTE(r, "variant \"%s\": no inference/%s declares inferenceGraphPrecision (measured: %s)", r->variant,
           MPK_MT_OPTIMUM_CONFIG_FILENAME, r->measured);
    return;
  }
  r->optimum_config_file = p->oc_file;
  json_t *root = NULL;
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_json_load_file(p->oc_file, NULL, &root, &e)) {
    mpk_findings_problem(&p->found, &e);
    return;
  }
  const json_t *v = json_is_object(root) ? json_object_get(root, "inferenceGraphPrecision") : NULL;
  if (!json_is_object(root)) {
    PROBLEM(r, MPK_EMALFORMED, p->oc_file, "", "expected an object");
  } else if (!v || json_is_null(v)) {
    if (r->measured)
      NOTE(r, "variant \"%s\": %s does not declare inferenceGraphPrecision (measured: %s)", r->variant, p->oc_file,
           r->measured);
  } else if (!json_is_string(v) || !json_string_value(v)[0]) {
    PROBLEM(r, MPK_EMALFORMED, p->oc_file, "/inferenceGraphPrecision", "inferenceGraphPrecision must be a non-empty string");
  } else if (!(p->declared = strdup(json_string_value(v)))) {
    p->found.oom = true;
  } else {
    r->declared = p->declared;
    if (r->measured && strcmp(r->measured, r->declared) != 0)
      PROBLEM(r, MPK_EMISMATCH, p->oc_file, "/inferenceGraphPrecision",
              "inferenceGraphPrecision is \"%.100s\", but the initializers of %s measure \"%.200s\" (describe_graph_precision: "
              "read precision from the graph, never from the variant id)",
              r->declared, r->graph_file, r->measured);
  }
  json_decref(root);
}

static void claims(mpk_mt_graph_report *r) {
  struct mpk_mt_graph_report_priv *p = r->priv_;
  size_t n = p->graph->n_initializers;
  p->claim_entry = malloc((n ? n : 1) * sizeof *p->claim_entry);
  p->claim_role = malloc((n ? n : 1) * sizeof *p->claim_role);
  if (!p->claim_entry || !p->claim_role) {
    p->found.oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) p->claim_entry[i] = p->claim_role[i] = -1;
  for (size_t i = 0; p->map && i < p->map->n_entries; i++)
    for (int role = 0; role < MPK_MT_ROLE_COUNT; role++) {
      const mpk_mt_initializer *in = mpk_mt_graph_find(p->graph, p->map->entries[i].inference_initializer_names[role]);
      if (in && p->claim_entry[in->index] < 0) {
        p->claim_entry[in->index] = (int)i;
        p->claim_role[in->index] = role;
      }
    }
  r->claim_entry = p->claim_entry;
  r->claim_role = p->claim_role;
}

static void run(mpk_mt_graph_report *r, const char *dir, const mpk_mt_tree *tree, const mpk_mt_variant *v,
                const mpk_mt_graph_options *opts) {
  struct mpk_mt_graph_report_priv *p = r->priv_;
  char *pkg_rel = mpk_mt_inference_rel(v), *rel = pkg_rel ? mpk_mt_tree_path(tree, v, pkg_rel) : NULL;
  free(pkg_rel);
  if (!rel) {
    if (v->weight_handoff || mpk_mt_variant_path(v, "inference")) p->found.oom = true;
    else NOTE(r, "variant \"%s\" has no inference directory: no graph to check", v->id);
    return;
  }
  char *inf = mpk_path_join(dir, rel);
  free(rel);
  if (!inf || !(p->graph_file = mpk_path_join(inf, MPK_MT_GRAPH_FILENAME))) {
    free(inf);
    p->found.oom = true;
    return;
  }
  r->graph_file = p->graph_file;
  struct stat st;
  if (lstat(p->graph_file, &st) != 0) {
    NOTE(r, "variant \"%s\": no inference/%s: no graph to check", v->id, MPK_MT_GRAPH_FILENAME);
    free(inf);
    return;
  }
  r->graph_present = 1;
  mpk_error e;
  mpk_error_clear(&e);
  if (!mpk_path_resolves_inside(dir, p->graph_file)) {
    PROBLEM(r, MPK_EMALFORMED, p->graph_file, NULL, "the inference graph resolves outside the package directory");
  } else if (mpk_mt_graph_load(p->graph_file, opts, &p->graph, &e)) {
    if (e.code == MPK_ENOMEM) p->found.oom = true;
    else on_problem(r, &e);
  } else {
    r->graph = p->graph;
    size_t need = 0;
    int prc = mpk_mt_graph_precision(p->graph, NULL, 0, &need);
    if ((prc && prc != MPK_ELIMIT) || !(p->measured = malloc(need + 1))) p->found.oom = true;
    else if (mpk_mt_graph_precision(p->graph, p->measured, need + 1, NULL)) p->found.oom = true;
    r->measured = p->measured;
  }
  if (v->weight_handoff) {
    char *map_rel = mpk_mt_tree_path(tree, v, v->weight_handoff);
    if (!map_rel || !(p->map_file = mpk_path_join(dir, map_rel))) p->found.oom = true;
    free(map_rel);
    r->map_file = p->map_file;
    mpk_error_clear(&e);
    if (p->map_file && mpk_mt_handoff_load(p->map_file, &p->map, &e)) on_problem(r, &e);
    r->map = p->map;
  } else {
    PROBLEM(r, MPK_ENOTFOUND, NULL, NULL, "variant \"%s\" has no weightHandoff: the graph has no map to check", v->id);
  }
  if (p->graph) {
    claims(r);
    if (p->map) {
      mpk_error_clear(&e);
      if (mpk_mt_graph_check(p->graph, p->map, p->map_file, inf, on_problem, r, NULL, &e)) p->found.oom = true;
    }
    NOTE(r, "variant \"%s\": %s: %zu initializer%s (%zu external), precision %s", v->id, MPK_MT_GRAPH_FILENAME,
         p->graph->n_initializers, p->graph->n_initializers == 1 ? "" : "s", p->graph->n_external,
         p->measured ? p->measured : "?");
    if (p->graph->n_sparse_initializers)
      NOTE(r, "warning: variant \"%s\": %s has %zu sparse initializer%s, which the handoff contract does not describe",
           v->id, MPK_MT_GRAPH_FILENAME, p->graph->n_sparse_initializers, p->graph->n_sparse_initializers == 1 ? "" : "s");
  }
  check_precision(r, inf);
  free(inf);
}

static int make(mpk_mt_graph_report **out, mpk_error *err) {
  mpk_mt_graph_report *r = calloc(1, sizeof *r);
  struct mpk_mt_graph_report_priv *p = r ? calloc(1, sizeof *p) : NULL;
  if (!p) {
    free(r);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  r->priv_ = p;
  MPK_FINDINGS_PUBLISH(&p->found, r);
  *out = r;
  return 0;
}

int mpk_mt_graph_report_variant(const char *dir, const mpk_mt_tree *tree, const mpk_mt_variant *v,
                                const mpk_mt_graph_options *opts, mpk_mt_graph_report **out, mpk_error *err) {
  *out = NULL;
  mpk_mt_graph_report *r = NULL;
  int rc = make(&r, err);
  if (rc) return rc;
  r->variant = v->id;
  r->quantization = v->quantization;
  run(r, dir, tree, v, opts);
  if (r->priv_->found.oom) {
    mpk_mt_graph_report_free(r);
    return mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
  }
  *out = r;
  return 0;
}

int mpk_mt_graph_report_open(const char *dir, const char *variant, const mpk_mt_graph_options *given,
                             mpk_mt_graph_report **out, mpk_error *err) {
  if (!dir || !out) return mpk_fail(err, MPK_EINVAL, dir, NULL, "NULL argument");
  *out = NULL;
  mpk_mt_graph_options opt;
  int rc = MPK_OPTIONS_READ(mpk_mt_graph_options, &opt, given, err);
  if (rc) return rc;
  const mpk_mt_graph_options *opts = &opt;
  mpk_mt_located loc;
  rc = mpk_mt_locate(dir, variant, &loc, err);
  if (rc) return rc;
  mpk_mt_graph_report *r = NULL;
  if ((rc = mpk_mt_graph_report_variant(dir, &loc.tree, loc.variant, opts, &r, err))) {
    mpk_mt_located_free(&loc);
    return rc;
  }
  r->priv_->loc = loc;
  *out = r;
  return 0;
}

void mpk_mt_graph_report_free(mpk_mt_graph_report *r) {
  if (!r) return;
  struct mpk_mt_graph_report_priv *p = r->priv_;
  mpk_findings_free(&p->found);
  mpk_mt_graph_free(p->graph);
  mpk_mt_handoff_free(p->map);
  mpk_mt_located_free(&p->loc);
  free(p->graph_file);
  free(p->map_file);
  free(p->oc_file);
  free(p->measured);
  free(p->declared);
  free(p->claim_entry);
  free(p->claim_role);
  free(p);
  free(r);
}
