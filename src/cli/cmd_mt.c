/* modelpkg mt build DIR --describe BUILD.json [--jobs N] [--dry-run]
   modelpkg mt reseal DIR [--jobs N] [--dry-run]
   modelpkg mt handoff fmt FILE
   (mt tensors, mt merge, mt select/plan, mt install, and mt graph / mt inspect / mt handoff build
   live in their own files) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: modelpkg mt build DIR --describe BUILD.json [--jobs N] [--dry-run]\n"
    "       modelpkg mt reseal DIR [--jobs N] [--dry-run]\n"
    "       modelpkg mt handoff fmt FILE\n"
    "       modelpkg mt handoff build DIR [--variant ID] [--peft METHOD] [--dry-run]\n"
    "       modelpkg mt graph DIR [--variant ID] [--json]\n"
    "       modelpkg mt inspect DIR [--json]\n"
    "       modelpkg mt tensors DIR [--variant ID] [--jobs N]\n"
    "       modelpkg mt merge DIR --adapter ADAPTER.safetensors [options]\n"
    "       modelpkg mt select DIR [device options] [--json]\n"
    "       modelpkg mt plan DIR --variant ID [--features F,...] [--json]\n"
    "       modelpkg mt install SOURCE --repo-id ORG/NAME --cache DIR [options]\n"
    "\n"
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
    "options:\n"
    "  --describe FILE   BUILD.json (build only)\n"
    "  --jobs N          threads hashing files (default: one per CPU, at most 8)\n"
    "  --dry-run         compute everything and tell what would change; write nothing\n"
    "  -h, --help        show this help\n"
    "\n"
    "  handoff fmt FILE  read a weight_handoff_map.json (version gate, every invariant) and\n"
    "           rewrite it atomically in canonical form: the reference to_json() bytes (sorted keys\n"
    "           and entries, indent 2, ASCII escapes); unchanged bytes are not rewritten\n"
    "  handoff build DIR  write a variant's inference/weight_handoff_map.json from its\n"
    "           train/training_config.json and the initializers of inference/model.onnx, as the\n"
    "           reference codec does (modelpkg mt graph --help)\n"
    "  graph DIR    list a variant's inference graph initializers and check the handoff map and the\n"
    "           declared inferenceGraphPrecision against them (modelpkg mt graph --help)\n"
    "  inspect DIR  per variant: training quantization beside the measured inference precision\n"
    "  tensors DIR  list each merged-weight tensor of a variant: dtype, shape, bytes, file, size\n"
    "           and checksum status under the load gate (modelpkg mt tensors --help)\n"
    "  merge DIR    merge a trained LoRA adapter into a variant's weights, as one crash-safe\n"
    "           transaction (modelpkg mt merge --help)\n"
    "  select DIR   choose the variant for a device (ABI, memory, API level, storage, ...) and\n"
    "           explain the choice (modelpkg mt select --help)\n"
    "  plan DIR     the exact files and bytes to download for a variant (modelpkg mt plan --help)\n"
    "  install SOURCE  install a variant from a directory or an http(s) base URL into a device\n"
    "           cache: verified, resumable, atomic (modelpkg mt install --help)\n"
    "\n"
    "exit status: 0 sealed (or nothing to change), 1 refused or failed, 2 usage error\n";

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

/* modelpkg mt handoff fmt FILE */
static int handoff_fmt(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[2], "build") == 0) return mpk_cmd_mt_graph(argc, argv);
  if (argc < 3 || strcmp(argv[2], "fmt") != 0) {
    if (argc >= 3 && mpk_cli_is_help(argv[2])) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    }
    if (argc < 3) return mpk_cli_usage_error("mt handoff", "missing the subcommand (fmt or build)");
    return mpk_cli_usage_error("mt handoff", "unknown subcommand '%s'", argv[2]);
  }
  const char *file = NULL;
  for (int i = 3; i < argc; i++) {
    if (mpk_cli_is_help(argv[i])) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return mpk_cli_usage_error("mt handoff fmt", "unknown option '%s'", argv[i]);
    } else if (!file) {
      file = argv[i];
    } else {
      return mpk_cli_usage_error("mt handoff fmt", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!file) return mpk_cli_usage_error("mt handoff fmt", "missing the map FILE");
  if (mpk_cli_is_dir(file)) return mpk_cli_usage_error("mt handoff fmt", "'%s' is a directory, not a map file", file);
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
  if (rc) mpk_cli_error(&err);
  else if (same) printf("OK: %s is already canonical (%zu entries)\n", file, map->n_entries);
  else printf("OK: rewrote %s in canonical form (%zu entries)\n", file, map->n_entries);
  mpk_free(text);
  mpk_mt_handoff_free(map);
  return rc ? MPK_EXIT_FAIL : MPK_EXIT_OK;
}

static const char *const kind_names[] = {"added", "removed", "changed"};

static int run(const char *verb, const char *dir, const char *describe, long long jobs, bool dry_run) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mapped desc = {0};
  int rc = describe ? mpk_map_file(describe, MPK_DOCUMENT_MAX_BYTES, &desc, &err) : 0;
  if (rc) {
    mpk_cli_error(&err);
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
                           .dry_run = dry_run};
  mpk_mt_build_result res;
  rc = mpk_mt_build(dir, &in, &res, &err);
  mpk_cli_bar_done(&bar);
  mpk_unmap_file(&desc);
  if (rc) {
    mpk_cli_error(&err);
    return MPK_EXIT_FAIL;
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
  for (size_t i = 0; i < res.n_written; i++) printf("  %-8s %s\n", dry_run ? "would write" : "wrote", res.written[i]);
  if (res.n_written == 0) printf("OK: already sealed, nothing written\n");
  else if (dry_run) printf("DRY RUN: %zu document%s would be written\n", res.n_written, res.n_written == 1 ? "" : "s");
  else printf("OK: sealed (%zu document%s written)\n", res.n_written, res.n_written == 1 ? "" : "s");
  mpk_mt_build_result_free(&res);
  return MPK_EXIT_OK;
}

int mpk_cmd_mt(int argc, char **argv) {
  if (argc < 2 || mpk_cli_is_help(argv[1])) {
    fputs(help, argc < 2 ? stderr : stdout);
    return argc < 2 ? MPK_EXIT_USAGE : MPK_EXIT_OK;
  }
  const char *verb = argv[1];
  if (strcmp(verb, "handoff") == 0) return handoff_fmt(argc, argv);
  if (strcmp(verb, "tensors") == 0) return mpk_cmd_mt_tensors(argc, argv);
  if (strcmp(verb, "graph") == 0 || strcmp(verb, "inspect") == 0) return mpk_cmd_mt_graph(argc, argv);
  if (strcmp(verb, "merge") == 0) return mpk_cmd_mt_merge(argc, argv);
  if (strcmp(verb, "select") == 0) return mpk_cmd_mt_select(argc, argv);
  if (strcmp(verb, "plan") == 0) return mpk_cmd_mt_plan(argc, argv);
  if (strcmp(verb, "install") == 0) return mpk_cmd_mt_install(argc, argv);
  bool build = strcmp(verb, "build") == 0;
  if (!build && strcmp(verb, "reseal") != 0) return mpk_cli_usage_error("mt", "unknown subcommand '%s'", verb);
  char cmd[32];
  snprintf(cmd, sizeof cmd, "mt %s", verb);
  const char *dir = NULL, *describe = NULL;
  long long jobs = 0;
  bool dry_run = false;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    } else if (strcmp(a, "--dry-run") == 0) {
      dry_run = true;
    } else if (strcmp(a, "--describe") == 0 || strcmp(a, "--jobs") == 0) {
      if (i + 1 >= argc) return mpk_cli_usage_error(cmd, "%s needs a value", a);
      const char *val = argv[++i];
      if (strcmp(a, "--describe") == 0) {
        if (!build) return mpk_cli_usage_error(cmd, "--describe is for mt build: reseal reads the manifest");
        describe = val;
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
  if (build && !describe) return mpk_cli_usage_error(cmd, "missing --describe BUILD.json");
  if (!mpk_cli_is_dir(dir)) return mpk_cli_usage_error(cmd, "'%s' is not a directory", dir);
  return run(verb, dir, describe, jobs, dry_run);
}
