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
#include "core/core.h"

static const char help[] =
    "usage: modelpkg mt graph DIR [--variant ID] [--json]\n"
    "       modelpkg mt inspect DIR [--json]\n"
    "       modelpkg mt handoff build DIR [--variant ID] [--peft METHOD] [--attention-module NAME] [--dry-run]\n"
    "\n"
    "  graph    read a variant's inference/model.onnx (default: the manifest's defaultVariant) and list\n"
    "           its initializers: dtype, dims, embedded or external (file, offset, length) and the\n"
    "           handoff-map entry and role that claim each; then check the map against the graph\n"
    "           (names, dtypes, dims, each role's own .bin at offset 0 with its full length, every\n"
    "           other external initializer inside frozenBaseBlob, no initializer without data) and\n"
    "           the measured precision against inference/optimum_config.json's inferenceGraphPrecision\n"
    "  inspect  per variant: the training quantization (the variant's \"quantization\") beside the\n"
    "           inference graph's measured precision and the declared one. Never read precision off\n"
    "           the variant id: cpu-int4 may ship a float32 inference graph\n"
    "  handoff build  write the variant's inference/weight_handoff_map.json from\n"
    "           train/training_config.json (peft_mapping, rank, alpha, trainable_tensor_specs) and the\n"
    "           initializers model.onnx holds, as the reference codec does; a layer no initializer\n"
    "           matches is refused. Reseal the package afterwards (modelpkg mt reseal DIR)\n"
    "\n"
    "options:\n"
    "  --variant ID             the variant (default: defaultVariant)\n"
    "  --peft METHOD            lora, lora-xs, mars, all, nolora (default: the manifest's peftMethods)\n"
    "  --attention-module NAME  the architecture's attention module (default: self_attn)\n"
    "  --dry-run                build and check the map, write nothing\n"
    "  --json                   one JSON document on stdout\n"
    "  -h, --help               show this help\n"
    "\n"
    "external data: a location that is absolute, has a \"..\" segment or resolves outside the model's\n"
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

/* The last usage error said, for the --json refusal document. */
static char last_usage[512];

__attribute__((format(printf, 2, 3))) static int usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_usage, sizeof last_usage, fmt, ap);
  va_end(ap);
  return mpk_cli_usage_error(cmd, "%s", last_usage);
}

/* --json anywhere on the command line (seen before parsing: a usage error found first still gets its
   document). */
static bool wants_json(int argc, char **argv, int start) {
  for (int i = start; i < argc; i++)
    if (strcmp(argv[i], "--json") == 0) return true;
  return false;
}

/* The refusal document of `cmd` for one error (or the last usage error when err is NULL). */
static void refuse_json(const char *cmd, const char *const *keys, const mpk_error *err) {
  mpk_error u;
  if (!err) {
    mpk_error_clear(&u);
    mpk_fail(&u, MPK_EINVAL, NULL, NULL, "usage: %s", last_usage);
    err = &u;
  }
  mpk_cli_json_refuse(cmd, keys, err);
}

typedef struct args {
  const char *dir, *variant, *peft, *attn;
  bool json, dry_run;
} args;

/* Options shared by the three verbs; `allowed` lists which apply. */
static int parse(const char *cmd, int argc, char **argv, int start, const char *allowed, args *a, bool *help_shown) {
  for (int i = start; i < argc; i++) {
    const char *s = argv[i];
    if (mpk_cli_is_help(s)) {
      fputs(help, stdout);
      *help_shown = true;
      return MPK_EXIT_OK;
    }
    bool value = strcmp(s, "--variant") == 0 || strcmp(s, "--peft") == 0 || strcmp(s, "--attention-module") == 0;
    bool flag = strcmp(s, "--json") == 0 || strcmp(s, "--dry-run") == 0;
    if ((value || flag) && !strstr(allowed, s)) return usage(cmd, "%s does not apply to %s", s, cmd);
    if (value) {
      if (i + 1 >= argc) return usage(cmd, "%s needs a value", s);
      const char **slot = strcmp(s, "--variant") == 0 ? &a->variant : strcmp(s, "--peft") == 0 ? &a->peft : &a->attn;
      if (*slot) return usage(cmd, "%s is given twice", s);
      *slot = argv[++i];
    } else if (strcmp(s, "--json") == 0) {
      a->json = true;
    } else if (strcmp(s, "--dry-run") == 0) {
      a->dry_run = true;
    } else if (s[0] == '-' && s[1]) {
      return usage(cmd, "unknown option '%s'", s);
    } else if (!a->dir) {
      a->dir = s;
    } else {
      return usage(cmd, "unexpected argument '%s'", s);
    }
  }
  if (!a->dir) return usage(cmd, "missing the package directory");
  return MPK_EXIT_OK;
}

static int cmd_graph(int argc, char **argv) {
  args a = {0};
  bool shown = false;
  static const char *const keys[] = {"dir", "variant", "quantization", "graph", "graph_present", "measured_precision",
                                     "declared_precision", "optimum_config", "precision_matches", "map", "initializers",
                                     "model", NULL};
  bool json = wants_json(argc, argv, 2);
  int st = parse("mt graph", argc, argv, 2, "--variant --json", &a, &shown);
  if (st && json) refuse_json("mt graph", keys, NULL);
  if (st || shown) return st;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_graph_report *r = NULL;
  if (mpk_mt_graph_report_open(a.dir, a.variant, NULL, &r, &err)) {
    mpk_cli_error(&err);
    if (json) refuse_json("mt graph", keys, &err);
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

static int cmd_inspect(int argc, char **argv) {
  args a = {0};
  bool shown = false;
  static const char *const keys[] = {"dir", "variants", NULL};
  bool json = wants_json(argc, argv, 2);
  int st = parse("mt inspect", argc, argv, 2, "--json", &a, &shown);
  if (st && json) refuse_json("mt inspect", keys, NULL);
  if (st || shown) return st;
  mpk_findings found = {0}; /* every variant's problems, for the --json envelope */
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
    if (json) refuse_json("mt inspect", keys, &err);
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
      mpk_findings_problem(&found, &err);
      problems++;
      continue;
    }
    problems += r->n_problems;
    for (size_t k = 0; k < r->n_problems; k++) mpk_findings_problem(&found, &r->problems[k]);
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
    mpk_cli_json_end(root, found.problems, found.n_problems, NULL, 0);
  } else {
    json_decref(rows);
    printf("%s\n", problems ? "FAILED: a variant's graph does not agree with its package (errors above)"
                            : "OK: precision is read from each graph, never from the variant id");
  }
  mpk_findings_free(&found);
  mpk_mt_manifest_free(m);
  return problems ? MPK_EXIT_FAIL : MPK_EXIT_OK;
}

/* ---------------------------------------------------------------- mt handoff build */

static int cmd_handoff_build(int argc, char **argv) {
  args a = {0};
  bool shown = false;
  int st = parse("mt handoff build", argc, argv, 3, "--variant --peft --attention-module --dry-run", &a, &shown);
  if (st || shown) return st;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_handoff_build_options o = {.struct_size = sizeof o, .variant = a.variant, .peft_method = a.peft, .attention_module = a.attn,
                                    .dry_run = a.dry_run};
  mpk_mt_handoff_build_result res;
  if (mpk_mt_handoff_build(a.dir, &o, &res, &err)) {
    mpk_cli_error(&err);
    return MPK_EXIT_FAIL;
  }
  printf("modelpkg mt handoff build %s\n", a.dir);
  printf("  map:      %s (%zu entr%s, transposePolicy %s)\n", res.path, res.n_entries, res.n_entries == 1 ? "y" : "ies",
         res.policy == MPK_MT_ALREADY_TRANSPOSED_FOR_INFERENCE ? "already_transposed_for_inference" : "no_transpose");
  if (!res.changed) printf("OK: unchanged, nothing written\n");
  else if (a.dry_run) printf("DRY RUN: the map would be written\n");
  else printf("OK: wrote the map; reseal the package (modelpkg mt reseal %s)\n", a.dir);
  mpk_mt_handoff_build_result_free(&res);
  return MPK_EXIT_OK;
}

int mpk_cmd_mt_graph(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "graph") == 0) return cmd_graph(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "inspect") == 0) return cmd_inspect(argc, argv);
  if (argc >= 3 && strcmp(argv[1], "handoff") == 0 && strcmp(argv[2], "build") == 0) return cmd_handoff_build(argc, argv);
  return mpk_cli_usage_error("mt", "unknown subcommand");
}
