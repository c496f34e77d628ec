/* modelpkg mt build DIR --describe BUILD.json [--jobs N] [--dry-run]
   modelpkg mt reseal DIR [--jobs N] [--dry-run]
   modelpkg mt handoff fmt FILE
   (mt tensors, mt merge, mt select/plan, mt install, and mt graph / mt inspect / mt handoff build
   live in their own files) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char build_about[] =
    "Seal a MobileTransformers package: write DIR/mobiletransformers_manifest.json and each\n"
    "variants/<id>/checksums.json, byte-identical to the reference exporter for the same tree and\n"
    "the same descriptive inputs (docs/mt-build.md).\n"
    "\n"
    "  build    a new package: the descriptive inputs (provenance and the variant descriptors, in\n"
    "           order) come from BUILD.json\n"
    "  reseal   an existing package whose files changed: the descriptive inputs come from its\n"
    "           manifest\n"
    "\n"
    "Everything else is derived from the tree: every regular file (but any named\n"
    "mobiletransformers_manifest.json) with its size and SHA-256, hashed once in parallel; each\n"
    "variant's paths, weightHandoff and download plan; requiredFiles; the checksums files. Each\n"
    "document is replaced atomically, and only when its bytes change: checksums first, the manifest\n"
    "last. Refused: a symbolic link or special file in the tree, a variant without its\n"
    "variants/<id>/ directory, a missing required file, invalid BUILD.json fields.\n"
    "\n"
    "--parity runs the train/inference parity gate (modelpkg mt parity; docs/mt-numeric.md) on the\n"
    "default variant as it is about to be sealed, after every other check: a gate that fails (or\n"
    "cannot run, e.g. without ONNX Runtime) refuses the build and nothing is written.\n";
static const char build_more[] = "exit status: 0 sealed (or nothing to change), 1 refused or failed, 2 usage error\n";
static const char fmt_about[] =
    "Read a weight_handoff_map.json (version gate, every invariant) and rewrite it atomically in\n"
    "canonical form: the reference to_json() bytes (sorted keys and entries, indent 2, ASCII\n"
    "escapes); unchanged bytes are not rewritten. Fields the map lacked are added with the reference\n"
    "reader's defaults, and said on stderr.\n";
static const char fmt_more[] = "exit status: 0 canonical (rewritten or already), 1 refused, 2 usage error\n";

/* The document-level fields the canonical form holds that FILE (before rewriting) did not: an older
   map leaves them to HandoffMap.from_dict()'s defaults, which to_json() writes out. Said on stderr,
   so that a rewrite never adds fields silently. */
static void added_fields_note(const char *file, const char *text, size_t len) {
  mpk_mapped old = {0};
  json_t *before = NULL, *after = NULL;
  if (mpk_map_file(file, MPK_DOCUMENT_MAX_BYTES, &old, NULL) == 0) {
    before = json_loadb((const char *)old.data, old.size, JSON_REJECT_DUPLICATES, NULL);
    mpk_unmap_file(&old);
  }
  after = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
  if (json_is_object(before) && json_is_object(after)) {
    char keys[512] = "";
    size_t n = 0, at = 0;
    const char *k;
    json_t *v;
    json_object_foreach(after, k, v) {
      if (json_object_get(before, k) || at >= sizeof keys) continue;
      at += (size_t)snprintf(keys + at, sizeof keys - at, "%s%s", n ? ", " : "", k);
      n++;
    }
    /* Entry fields: every canonical entry has each default; an entry of FILE lacking one got it. */
    const json_t *eb = json_object_get(before, "entries"), *ea = json_array_get(json_object_get(after, "entries"), 0);
    char ekeys[512] = "";
    size_t ne = 0, eat = 0;
    json_object_foreach((json_t *)ea, k, v) {
      size_t lacking = 0;
      for (size_t i = 0; i < json_array_size(eb); i++) lacking += !json_object_get(json_array_get(eb, i), k);
      if (!lacking || eat >= sizeof ekeys) continue;
      eat += (size_t)snprintf(ekeys + eat, sizeof ekeys - eat, "%s%s (%zu of %zu entries)", ne ? ", " : "", k, lacking,
                              json_array_size(eb));
      ne++;
    }
    if (n)
      fprintf(stderr,
              "note: %s: added %zu field%s the map did not have, with the reference reader's defaults "
              "(HandoffMap.from_dict): %s\n",
              file, n, n == 1 ? "" : "s", keys);
    if (ne)
      fprintf(stderr,
              "note: %s: added %zu entry field%s the map did not have, with the reference reader's defaults "
              "(empty maps, shape [], transposePolicy no_transpose): %s\n",
              file, ne, ne == 1 ? "" : "s", ekeys);
  }
  json_decref(before);
  json_decref(after);
}

static const char *const fmt_keys[] = {"file", "entries", "rewritten", NULL};

/* modelpkg mt handoff fmt FILE [--json] */
int mpk_cmd_mt_handoff_fmt(int argc, char **argv) {
  bool json = false;
  const mpk_cli_opt opts[] = {{"--json", 0, NULL, "print one JSON document (docs/CLI.md)", .flag = &json}, {0}};
  const mpk_cli_spec spec = {.name = "mt handoff fmt", .usage = "FILE [--json]", .about = fmt_about, .opts = opts,
                             .more = fmt_more, .json_keys = fmt_keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  json = a.json;
  if (!a.n) return mpk_cli_usage(&spec, json, "missing the map FILE");
  const char *file = a.arg[0];
  if (mpk_cli_is_dir(file)) return mpk_cli_usage(&spec, json, "'%s' is a directory, not a map file", file);
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_handoff *map = NULL;
  char *text = NULL;
  size_t len = 0;
  mpk_mapped old = {0};
  int rc = mpk_mt_handoff_load(file, &map, &err);
  if (!rc) rc = mpk_mt_handoff_json(map, &text, &len, &err);
  bool same = false;
  if (!rc && mpk_map_file(file, MPK_DOCUMENT_MAX_BYTES, &old, NULL) == 0) {
    same = old.size == len && memcmp(old.data, text, len) == 0;
    mpk_unmap_file(&old);
  }
  if (!rc && !same) added_fields_note(file, text, len); /* read FILE before it is replaced */
  if (!rc && !same) rc = mpk_write_file_atomic(file, text, len, &err);
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("mt handoff fmt", fmt_keys, &err);
  } else if (json) {
    json_t *root = mpk_cli_json_begin("mt handoff fmt", true);
    json_object_set_new(root, "file", json_string(file));
    json_object_set_new(root, "entries", json_integer((json_int_t)map->n_entries));
    json_object_set_new(root, "rewritten", json_boolean(!same));
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
  } else if (same) printf("OK: %s is already canonical (%zu entries)\n", file, map->n_entries);
  else printf("OK: rewrote %s in canonical form (%zu entries)\n", file, map->n_entries);
  mpk_free(text);
  mpk_mt_handoff_free(map);
  return rc ? MPK_EXIT_FAIL : MPK_EXIT_OK;
}

static const char *const kind_names[] = {"added", "removed", "changed"};

static const char *const build_keys[] = {"dir",     "dry_run", "files",  "bytes", "had_manifest",
                                         "changes", "written", "parity", NULL};

/* --parity: the gate's numbers (human) / its JSON object. */
static void parity_text(const mpk_mt_parity_report *p) {
  printf("  parity:  variant %s, %zu tokens: training-side %.6f nats, inference %.6f nats, difference %.6f "
         "(bound %g), uniform floor %.6f\n",
         p->variant, p->n_tokens, p->ce_train, p->ce_inference, p->diff, p->max_diff, p->uniform_floor);
  printf("           %s\n", p->verdict);
}
static json_t *parity_json(const mpk_mt_parity_report *p) {
  if (!p) return json_null();
  return json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:b, s:s}", "variant", p->variant, "train_graph",
                   p->train_graph, "inference_graph", p->inference_graph, "n_tokens", (json_int_t)p->n_tokens, "vocab",
                   (json_int_t)p->vocab, "ce_train", p->ce_train, "ce_inference", p->ce_inference, "diff", p->diff,
                   "uniform_floor", p->uniform_floor, "max_diff", p->max_diff, "pass", p->pass, "verdict", p->verdict);
}

typedef struct parity_args {
  bool on;
  const char *tokens, *library;
} parity_args;

static int run(const char *verb, const char *dir, const char *describe, long long jobs, bool dry_run, bool json,
               const parity_args *pa) {
  char cmd[32];
  snprintf(cmd, sizeof cmd, "mt %s", verb);
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mapped desc = {0};
  mpk_ort *ort = NULL;
  int64_t *ids = NULL;
  size_t n_ids = 0;
  int rc = describe ? mpk_map_file(describe, MPK_DOCUMENT_MAX_BYTES, &desc, &err) : 0;
  /* --parity: ONNX Runtime and the tokens before anything is hashed. */
  mpk_mt_parity_options po = MPK_MT_PARITY_OPTIONS_INIT;
  if (!rc && pa->on) {
    mpk_ort_options oo = MPK_ORT_OPTIONS_INIT;
    oo.library = pa->library;
    if (pa->tokens) rc = mpk_mt_parity_tokens_load(pa->tokens, &ids, &n_ids, &err);
    if (!rc) rc = mpk_ort_open(&oo, &ort, &err);
    po.ort = ort;
    po.tokens = ids;
    po.n_tokens = n_ids;
  }
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse(cmd, build_keys, &err);
    mpk_unmap_file(&desc);
    mpk_free(ids);
    mpk_ort_close(ort);
    return MPK_EXIT_FAIL;
  }
  mpk_cli_bar bar;
  mpk_cli_bar_init(&bar, "hashing files");
  mpk_mt_build_input in = {.describe = describe ? (const char *)desc.data : NULL,
                           .describe_len = desc.size,
                           .describe_file = describe,
                           .workers = (unsigned)jobs,
                           .progress = bar.enabled ? mpk_cli_progress : NULL,
                           .progress_ctx = &bar,
                           .dry_run = dry_run,
                           .parity = pa->on ? &po : NULL};
  mpk_mt_build_result res;
  rc = mpk_mt_build(dir, &in, &res, &err);
  mpk_cli_bar_done(&bar);
  mpk_unmap_file(&desc);
  mpk_free(ids);
  if (rc) {
    if (res.parity && !json) parity_text(res.parity);
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse(cmd, build_keys, &err);
    mpk_mt_build_result_free(&res);
    mpk_ort_close(ort);
    return MPK_EXIT_FAIL;
  }
  if (json) {
    json_t *root = mpk_cli_json_begin(cmd, true), *changes = json_array();
    json_object_set_new(root, "dir", json_string(dir));
    json_object_set_new(root, "dry_run", json_boolean(dry_run));
    json_object_set_new(root, "files", json_integer((json_int_t)res.n_files));
    json_object_set_new(root, "bytes", json_integer((json_int_t)res.total_bytes));
    json_object_set_new(root, "had_manifest", json_boolean(res.had_manifest));
    for (size_t i = 0; i < res.n_changes; i++)
      json_array_append_new(changes, json_pack("{s:s, s:s}", "kind", kind_names[res.changes[i].kind], "path",
                                               res.changes[i].path));
    json_object_set_new(root, "changes", res.had_manifest ? changes : (json_decref(changes), json_null()));
    json_object_set_new(root, "written", mpk_cli_json_strings((const char *const *)res.written, res.n_written));
    json_object_set_new(root, "parity", parity_json(res.parity));
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
    mpk_mt_build_result_free(&res);
    mpk_ort_close(ort);
    return MPK_EXIT_OK;
  }
  printf("modelpkg mt %s %s\n", verb, dir);
  printf("  files:   %zu listed, %llu bytes\n", res.n_files, (unsigned long long)res.total_bytes);
  if (!res.had_manifest) {
    printf("  changes: no previous manifest\n");
  } else if (res.n_changes == 0) {
    printf("  changes: none since the previous manifest\n");
  } else {
    for (size_t i = 0; i < res.n_changes; i++)
      printf("  %-8s %s\n", kind_names[res.changes[i].kind], res.changes[i].path);
  }
  if (res.parity) parity_text(res.parity);
  for (size_t i = 0; i < res.n_written; i++) printf("  %-8s %s\n", dry_run ? "would write" : "wrote", res.written[i]);
  if (res.n_written == 0) printf("OK: already sealed, nothing written\n");
  else if (dry_run) printf("DRY RUN: %zu document%s would be written\n", res.n_written, res.n_written == 1 ? "" : "s");
  else printf("OK: sealed (%zu document%s written)\n", res.n_written, res.n_written == 1 ? "" : "s");
  mpk_mt_build_result_free(&res);
  mpk_ort_close(ort);
  return MPK_EXIT_OK;
}

/* modelpkg mt build DIR --describe BUILD.json | mt reseal DIR (argv[0] says which) */
int mpk_cmd_mt_build(int argc, char **argv) {
  const char *verb = argv[0], *describe = NULL, *jobs_s = NULL;
  bool build = strcmp(verb, "build") == 0, dry_run = false, json = false;
  parity_args pa = {0};
  const mpk_cli_opt opts[] = {
      {"--describe", 0, "FILE", "BUILD.json: the descriptive inputs (build only)", .str = &describe, .once = true},
      {"--jobs", 0, "N", "threads hashing files (default: one per CPU, at most 8)", .str = &jobs_s},
      {"--dry-run", 0, NULL, "compute everything and tell what would change; write nothing", .flag = &dry_run},
      {"--parity", 0, NULL, "run the train/inference parity gate (mt parity) on the default variant\n"
                            "before anything is written: a failing gate writes nothing", .flag = &pa.on},
      {"--parity-tokens", 0, "TOKENS.json", "the gate's token ids (default: 64 drawn from seed 0)", .str = &pa.tokens,
       .once = true},
      {"--ort-library", 0, "PATH", "ONNX Runtime's library for --parity (default: $MPK_ORT_LIBRARY, else\n"
                                   "libonnxruntime.so.1)", .str = &pa.library, .once = true},
      {"--json", 0, NULL, "print one JSON document (docs/CLI.md)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = build ? "mt build" : "mt reseal",
                             .usage = build ? "DIR --describe BUILD.json [--jobs N] [--dry-run] [--parity [--parity-tokens TOKENS.json]\n"
                                              "[--ort-library PATH]] [--json]"
                                            : "DIR [--jobs N] [--dry-run] [--parity [--parity-tokens TOKENS.json]\n"
                                              "[--ort-library PATH]] [--json]",
                             .about = build_about, .opts = opts, .more = build_more,
                             .json_keys = build_keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  json = a.json;
  long long jobs = 0;
  if (!a.n) return mpk_cli_usage(&spec, json, "missing the package directory");
  if (build && !describe) return mpk_cli_usage(&spec, json, "missing --describe BUILD.json");
  if (!build && describe) return mpk_cli_usage(&spec, json, "--describe is for mt build: reseal reads the manifest");
  if ((st = mpk_cli_parse_jobs(&spec, json, jobs_s, &jobs))) return st;
  if (!mpk_cli_is_dir(a.arg[0])) return mpk_cli_usage(&spec, json, "'%s' is not a directory", a.arg[0]);
  if ((pa.tokens || pa.library) && !pa.on)
    return mpk_cli_usage(&spec, json, "--%s is for --parity", pa.tokens ? "parity-tokens" : "ort-library");
  return run(verb, a.arg[0], describe, jobs, dry_run, json, &pa);
}
