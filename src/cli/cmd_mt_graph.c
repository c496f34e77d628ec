/* modelpkg mt graph DIR [--variant ID] [--json]
   modelpkg mt inspect DIR [--json]
   modelpkg mt handoff build DIR [--variant ID] [--peft METHOD] [--attention-module NAME] [--dry-run]
   The inference graph of a MobileTransformers variant: its initializers and what the handoff map says
   of each, the map checked against it, the measured precision against the declared one; per variant,
   the training quantization beside the measured inference precision; the map built from the graph. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char graph_about[] =
    "Read a variant's inference/model.onnx (default: an installed model's own, else defaultVariant) and list its\n"
    "initializers: dtype, dims, embedded or external (file, offset, length) and the handoff-map entry\n"
    "and role that claim each; then check the map against the graph (names, dtypes, dims, each role's\n"
    "own .bin at offset 0 with its full length, every other external initializer inside\n"
    "frozenBaseBlob, no initializer without data) and the measured precision against\n"
    "inference/optimum_config.json's inferenceGraphPrecision.\n";
static const char inspect_about[] =
    "Per variant: the training quantization (the variant's \"quantization\") beside the inference\n"
    "graph's measured precision and the declared one. Never read precision off the variant id:\n"
    "cpu-int4 may ship a float32 inference graph.\n";
static const char build_about[] =
    "Write the variant's inference/weight_handoff_map.json from train/training_config.json\n"
    "(peft_mapping, rank, alpha, trainable_tensor_specs) and the initializers model.onnx holds, as the\n"
    "reference codec does; a layer no initializer matches is refused. Reseal the package afterwards\n"
    "(modelpkg mt reseal DIR).\n";
static const char more[] =
    "External data: a location that is absolute, has a \"..\" segment or resolves outside the model's\n"
    "directory is refused without being opened.\n"
    "\n"
    "exit status: 0 every check holds (handoff build: written or unchanged), 1 problems or refused,\n"
    "2 usage error\n";

static void print_problems(const mpk_error *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char line[2048];
    mpk_error_format(&p[i], line, sizeof line);
    printf("error: %s [%s]\n", line, mpk_code_name(p[i].code));
  }
}

static void dims_text(const int64_t *d, size_t n, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < n && len < size; i++) len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (len < size) snprintf(buf + len, size - len, "]");
}

static json_t *dims_json(const int64_t *d, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(d[i]));
  return a;
}

/* ---------------------------------------------------------------- mt graph */

static int graph_text(const char *dir, const mpk_mt_graph_report *r) {
  printf("modelpkg mt graph %s (variant %s)\n", dir, r->variant);
  printf("  graph:      %s%s\n", r->graph_file ? r->graph_file : "(none)", r->graph_present ? "" : " (absent)");
  const mpk_mt_graph *g = r->graph;
  if (g) {
    printf("  model:      ir_version %lld, opset %lld, producer %s%s%s, %zu nodes\n", (long long)g->ir_version,
           (long long)g->opset, g->producer_name ? g->producer_name : "-", g->producer_version ? " " : "",
           g->producer_version ? g->producer_version : "", g->n_nodes);
    printf("  initializers: %zu (%zu external)\n", g->n_initializers, g->n_external);
    for (size_t i = 0; i < g->n_initializers; i++) {
      const mpk_mt_initializer *in = &g->initializers[i];
      char d[256], data[700], claim[400] = "frozen";
      dims_text(in->dims, in->ndim, d, sizeof d);
      if (in->external && in->has_length)
        snprintf(data, sizeof data, "external %s @%llu +%llu", in->location, (unsigned long long)in->offset,
                 (unsigned long long)in->length);
      else if (in->external)
        snprintf(data, sizeof data, "external %s @%llu", in->location, (unsigned long long)in->offset);
      else
        snprintf(data, sizeof data, "embedded %llu bytes", (unsigned long long)in->embedded_bytes);
      if (r->claim_entry && r->claim_entry[i] >= 0)
        snprintf(claim, sizeof claim, "entry %d role %s", r->claim_entry[i], mpk_mt_role_name((mpk_mt_role)r->claim_role[i]));
      printf("    %-44s %-8s %-14s %s  [%s]\n", in->name, in->dtype ? in->dtype : "?", d, data, claim);
    }
  }
  if (r->map) printf("  map:        %s (%zu entries)\n", r->map_file, r->map->n_entries);
  printf("  precision:  training quantization %s; inference graph measured %s, declared %s\n",
         r->quantization ? r->quantization : "null", r->measured ? r->measured : "-", r->declared ? r->declared : "-");
  for (size_t i = 0; i < r->n_notes; i++)
    if (strncmp(r->notes[i], "warning: ", 9) != 0) printf("  note: %s\n", r->notes[i]);
  for (size_t i = 0; i < r->n_notes; i++)
    if (strncmp(r->notes[i], "warning: ", 9) == 0) printf("%s\n", r->notes[i]);
  print_problems(r->problems, r->n_problems);
  if (r->n_problems) printf("FAILED: %zu problem%s\n", r->n_problems, r->n_problems == 1 ? "" : "s");
  else printf("OK: %s\n", r->graph_present ? "the map and the declared precision agree with the graph" : "no graph to check");
  return r->n_problems ? MPK_EXIT_FAIL : MPK_EXIT_OK;
}

static json_t *report_json(const mpk_mt_graph_report *r, bool initializers) {
  json_t *o = json_object();
  json_object_set_new(o, "variant", json_string(r->variant));
  json_object_set_new(o, "quantization", mpk_cli_json_str(r->quantization));
  json_object_set_new(o, "graph", mpk_cli_json_str(r->graph_file));
  json_object_set_new(o, "graph_present", json_boolean(r->graph_present));
  json_object_set_new(o, "measured_precision", mpk_cli_json_str(r->measured));
  json_object_set_new(o, "declared_precision", mpk_cli_json_str(r->declared));
  json_object_set_new(o, "optimum_config", mpk_cli_json_str(r->optimum_config_file));
  json_object_set_new(o, "precision_matches",
                      r->measured && r->declared ? json_boolean(strcmp(r->measured, r->declared) == 0) : json_null());
  json_object_set_new(o, "map", mpk_cli_json_str(r->map_file));
  const mpk_mt_graph *g = r->graph;
  if (initializers && g) {
    json_t *list = json_array();
    for (size_t i = 0; i < g->n_initializers; i++) {
      const mpk_mt_initializer *in = &g->initializers[i];
      json_t *x = json_pack("{s:s, s:i, s:o, s:o, s:I, s:o, s:b}", "name", in->name, "data_type", (int)in->data_type,
                            "dtype", mpk_cli_json_str(in->dtype), "dims", dims_json(in->dims, in->ndim), "numel",
                            (json_int_t)in->numel, "nbytes", in->has_nbytes ? json_integer((json_int_t)in->nbytes) : json_null(),
                            "external", in->external);
      if (in->external) {
        json_object_set_new(x, "location", json_string(in->location));
        json_object_set_new(x, "offset", json_integer((json_int_t)in->offset));
        json_object_set_new(x, "length", in->has_length ? json_integer((json_int_t)in->length) : json_null());
      } else {
        json_object_set_new(x, "embedded_bytes", json_integer((json_int_t)in->embedded_bytes));
      }
      bool claimed = r->claim_entry && r->claim_entry[i] >= 0;
      json_object_set_new(x, "entry", claimed ? json_integer(r->claim_entry[i]) : json_null());
      json_object_set_new(x, "role", claimed ? json_string(mpk_mt_role_name((mpk_mt_role)r->claim_role[i])) : json_null());
      json_array_append_new(list, x);
    }
    json_object_set_new(o, "initializers", list);
    json_object_set_new(o, "model", json_pack("{s:I, s:I, s:o, s:I}", "ir_version", (json_int_t)g->ir_version, "opset",
                                              (json_int_t)g->opset, "producer", mpk_cli_json_str(g->producer_name),
                                              "nodes", (json_int_t)g->n_nodes));
  }
  json_object_set_new(o, "ok", json_boolean(r->n_problems == 0));
  json_object_set_new(o, "problems", mpk_cli_json_problems(r->problems, r->n_problems));
  json_object_set_new(o, "notes", mpk_cli_json_strings(r->notes, r->n_notes));
  return o;
}

typedef struct args {
  const char *dir, *variant, *peft, *attn;
  bool json, dry_run;
} args;


/* The options of the three verbs, from one table; `allowed` lists which apply to this one (the
   others "do not apply"). MPK_CLI_GO_ON, or the exit status. */
static int parse(const char *cmd, const char *usage_line, const char *about, int argc, char **argv,
                 const char *allowed, const char *const *keys, args *a) {
  const mpk_cli_opt all[] = {
      {"--variant", 0, "ID", "the variant (default: an installed model's own, else defaultVariant)", .str = &a->variant, .once = true},
      {"--peft", 0, "METHOD", "lora, lora-xs, mars, all, nolora (default: the manifest's peftMethods)",
       .str = &a->peft, .once = true},
      {"--attention-module", 0, "NAME", "the architecture's attention module (default: self_attn)", .str = &a->attn,
       .once = true},
      {"--dry-run", 0, NULL, "build and check the map, write nothing", .flag = &a->dry_run},
      {"--json", 0, NULL, "one JSON document on stdout (docs/CLI.md)", .flag = &a->json},
  };
  mpk_cli_opt opts[6] = {{0}};
  const char *others[6] = {0};
  size_t n = 0, m = 0;
  for (size_t i = 0; i < 5; i++) {
    if (strstr(allowed, all[i].name)) opts[n++] = all[i];
    else others[m++] = all[i].name;
  }
  const mpk_cli_spec spec = {.name = cmd, .usage = usage_line, .about = about, .opts = opts, .more = more,
                             .json_keys = keys, .max_args = 1, .not_here = others};
  mpk_cli_args p;
  int st = mpk_cli_parse(&spec, argc, argv, &p);
  if (st != MPK_CLI_GO_ON) return st;
  a->json = p.json;
  if (!p.n) return mpk_cli_usage(&spec, p.json, "missing the package directory");
  a->dir = p.arg[0];
  return MPK_CLI_GO_ON;
}

int mpk_cmd_mt_graph(int argc, char **argv) {
  args a = {0};
  static const char *const keys[] = {"dir", "variant", "quantization", "graph", "graph_present", "measured_precision",
                                     "declared_precision", "optimum_config", "precision_matches", "map", "initializers",
                                     "model", NULL};
  int st = parse("mt graph", "DIR [--variant ID] [--json]", graph_about, argc, argv, "--variant --json", keys, &a);
  if (st != MPK_CLI_GO_ON) return st;
  bool json = a.json;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_graph_report *r = NULL;
  if (mpk_mt_graph_report_open(a.dir, a.variant, NULL, &r, &err)) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("mt graph", keys, &err);
    return MPK_EXIT_FAIL;
  }
  int status = r->n_problems ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  if (a.json) {
    json_t *o = report_json(r, true), *root = mpk_cli_json_begin("mt graph", r->n_problems == 0);
    json_object_set_new(root, "dir", json_string(a.dir));
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
      if (strcmp(k, "ok") && strcmp(k, "problems") && strcmp(k, "notes")) json_object_set(root, k, v);
    }
    json_decref(o);
    mpk_cli_json_end(root, r->problems, r->n_problems, r->notes, r->n_notes);
  } else {
    graph_text(a.dir, r);
  }
  mpk_mt_graph_report_free(r);
  return status;
}

/* ---------------------------------------------------------------- mt inspect */

int mpk_cmd_mt_inspect(int argc, char **argv) {
  args a = {0};
  static const char *const keys[] = {"dir", "variants", NULL};
  int st = parse("mt inspect", "DIR [--json]", inspect_about, argc, argv, "--json", keys, &a);
  if (st != MPK_CLI_GO_ON) return st;
  bool json = a.json;
  mpk_cli_problems found = {0}; /* every variant's problems, for the --json envelope */
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_manifest *m = NULL;
  char *mf = malloc(strlen(a.dir) + sizeof MPK_MT_MANIFEST_FILENAME + 2);
  if (!mf) return MPK_EXIT_FAIL;
  sprintf(mf, "%s/%s", a.dir, MPK_MT_MANIFEST_FILENAME);
  int rc = mpk_mt_manifest_load(mf, &m, &err);
  free(mf);
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("mt inspect", keys, &err);
    return MPK_EXIT_FAIL;
  }
  json_t *rows = json_array();
  size_t problems = 0;
  if (!a.json) {
    printf("modelpkg mt inspect %s\n", a.dir);
    printf("  %-16s %-14s %-28s %-28s %s\n", "variant", "training", "inference (measured)", "declared", "status");
  }
  for (size_t i = 0; i < m->n_variants; i++) {
    mpk_mt_graph_report *r = NULL;
    mpk_error_clear(&err);
    if (mpk_mt_graph_report_open(a.dir, m->variants[i].id, NULL, &r, &err)) {
      mpk_cli_error(&err);
      if (err.code == MPK_EUNSUPPORTED && !mpk_has_component("onnx")) { /* no graph reader: no variant can be read */
        if (json) mpk_cli_json_refuse("mt inspect", keys, &err);
        json_decref(rows);
        mpk_cli_problems_free(&found);
        mpk_mt_manifest_free(m);
        return MPK_EXIT_FAIL;
      }
      mpk_cli_problems_add(&found, &err);
      problems++;
      continue;
    }
    problems += r->n_problems;
    for (size_t k = 0; k < r->n_problems; k++) mpk_cli_problems_add(&found, &r->problems[k]);
    if (a.json) {
      json_array_append_new(rows, report_json(r, false));
    } else {
      const char *status = r->n_problems ? "PROBLEMS" : !r->graph_present ? "no graph" : !r->declared ? "undeclared" : "ok";
      printf("  %-16s %-14s %-28s %-28s %s\n", r->variant, r->quantization ? r->quantization : "null",
             r->measured ? r->measured : "-", r->declared ? r->declared : "-", status);
      print_problems(r->problems, r->n_problems);
    }
    mpk_mt_graph_report_free(r);
  }
  if (a.json) {
    json_t *root = mpk_cli_json_begin("mt inspect", problems == 0);
    json_object_set_new(root, "dir", json_string(a.dir));
    json_object_set_new(root, "variants", rows);
    if (found.oom) json_object_set_new(root, "ok", json_false());
    mpk_cli_json_end(root, found.items, found.n, NULL, 0);
  } else {
    json_decref(rows);
    printf("%s\n", problems ? "FAILED: a variant's graph does not agree with its package (errors above)"
                            : "OK: precision is read from each graph, never from the variant id");
  }
  mpk_cli_problems_free(&found);
  mpk_mt_manifest_free(m);
  return problems ? MPK_EXIT_FAIL : MPK_EXIT_OK;
}

/* ---------------------------------------------------------------- mt handoff build */

int mpk_cmd_mt_handoff_build(int argc, char **argv) {
  args a = {0};
  static const char *const keys[] = {"dir", "map", "entries", "transpose_policy", "changed", "dry_run", NULL};
  int st = parse("mt handoff build", "DIR [--variant ID] [--peft METHOD] [--attention-module NAME] [--dry-run] [--json]",
                 build_about, argc, argv, "--variant --peft --attention-module --dry-run --json", keys, &a);
  if (st != MPK_CLI_GO_ON) return st;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_handoff_build_options o = {.struct_size = sizeof o, .variant = a.variant, .peft_method = a.peft, .attention_module = a.attn,
                                    .dry_run = a.dry_run};
  mpk_mt_handoff_build_result res;
  if (mpk_mt_handoff_build(a.dir, &o, &res, &err)) {
    mpk_cli_error(&err);
    if (a.json) mpk_cli_json_refuse("mt handoff build", keys, &err);
    return MPK_EXIT_FAIL;
  }
  const char *policy =
      res.policy == MPK_MT_ALREADY_TRANSPOSED_FOR_INFERENCE ? "already_transposed_for_inference" : "no_transpose";
  if (a.json) {
    json_t *root = mpk_cli_json_begin("mt handoff build", true);
    json_object_set_new(root, "dir", json_string(a.dir));
    json_object_set_new(root, "map", json_string(res.path));
    json_object_set_new(root, "entries", json_integer((json_int_t)res.n_entries));
    json_object_set_new(root, "transpose_policy", json_string(policy));
    json_object_set_new(root, "changed", json_boolean(res.changed));
    json_object_set_new(root, "dry_run", json_boolean(a.dry_run));
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
    mpk_mt_handoff_build_result_free(&res);
    return MPK_EXIT_OK;
  }
  printf("modelpkg mt handoff build %s\n", a.dir);
  printf("  map:      %s (%zu entr%s, transposePolicy %s)\n", res.path, res.n_entries, res.n_entries == 1 ? "y" : "ies",
         policy);
  if (!res.changed) printf("OK: unchanged, nothing written\n");
  else if (a.dry_run) printf("DRY RUN: the map would be written\n");
  else printf("OK: wrote the map; reseal the package (modelpkg mt reseal %s)\n", a.dir);
  mpk_mt_handoff_build_result_free(&res);
  return MPK_EXIT_OK;
}

