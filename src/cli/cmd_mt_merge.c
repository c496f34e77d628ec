/* modelpkg mt merge DIR --adapter FILE [--variant ID] [--scale S] [--orientation O] [--jobs N]
   [--dry-run] [--json] [--verify PROBE.json [--max-ratio R] [--force] [--ort-library PATH]]: merge a
   trained LoRA adapter into a variant's inference weights, as one crash-safe transaction, and say
   what was decided and why; with --verify, the post-merge check (docs/mt-numeric.md) inside it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "modelpkg/ort.h"

static const char about[] =
    "Merge a trained LoRA adapter into a MobileTransformers package or installed model (the variant:\n"
    "an installed model's own, else defaultVariant; docs/mt-installed.md): for every weight_handoff_map.json entry, merged = base + scale * (B @ A),\n"
    "written in the dtype the map declares, with a new <file>.bin.sha256 sidecar. All tensors are\n"
    "replaced as one transaction, with modelpkg's merge record (.modelpkg-merge-record.json: each\n"
    "replaced tensor, its shipped and its merged sha256), the only authority that lets check and the\n"
    "load gate accept merged bytes. An interrupted merge is finished or undone by the next merge or\n"
    "load (mt tensors); check reports it and never writes. The inference directory must have no\n"
    "symbolic link in its path, and a package that lists a merge journal or record is refused.\n"
    "The same transaction records the adapter as a member of the model (.modelpkg-adapters.json: its\n"
    "sha256, scale, orientation and evidence, when, which entries) with a copy of its bytes, so\n"
    "mt restore can undo the merge and an update (mt install) can re-apply it.\n";
static const char more[] =
    "Without a frozen base in the adapter, each shipped .bin must still hash to the map's sha256: a\n"
    "weight that was already merged is refused, so an adapter cannot be applied twice by accident.\n"
    "\n"
    "The post-merge check (--verify PROBE.json, docs/mt-numeric.md): the mean next-token cross-entropy\n"
    "of the probe's token sequences ({\"sequences\": [[ids...], ...]}) through the variant's inference\n"
    "graph in ONNX Runtime, before the merge and after it (the merged tensors as staged, before the\n"
    "commit point). Above --max-ratio times the pre-merge value the transaction is rolled back and\n"
    "the package is left byte-identical, unless --force. ONNX Runtime is libonnxruntime.so.1\n"
    "(--ort-library, else $MPK_ORT_LIBRARY, else the loader's search): without it the merge is\n"
    "refused before anything is read or written.\n"
    "\n"
    "exit status: 0 merged (or would merge, --dry-run), 1 refused, failed or rolled back by the\n"
    "post-merge check (nothing changed), 2 usage error\n";

static void print_text(const mpk_mt_merge_report *r, bool dry_run) {
  printf("modelpkg mt merge: variant %s, %s\n", r->variant, r->inference_dir);
  printf("  orientation: %s (%s)\n", mpk_mt_orientation_name(r->orientation), r->evidence);
  for (size_t i = 0; i < r->n_entries; i++) {
    const mpk_mt_merge_entry *e = &r->entries[i];
    printf("  entry %zu  %s\n", e->entry, e->layer);
    printf("    %s [%lld, %lld]%s; delta [%lld, %lld] rank %lld; observed %s\n", e->dtype, (long long)e->rows,
           (long long)e->cols, e->quantized ? " quantized" : "", (long long)e->out, (long long)e->in, (long long)e->rank,
           e->observed ? mpk_mt_orientation_name(e->observed) : "square (cannot tell)");
    printf("    scale %.9g (%s)\n", e->scale, e->scale_source);
    printf("    base: %s\n", e->base_source);
    for (int k = 0; k < MPK_MT_ROLE_COUNT; k++)
      if (e->digest[k][0]) printf("    %-16s sha256 %s\n", mpk_mt_role_name((mpk_mt_role)k), e->digest[k]);
  }
  for (size_t i = 0; i < r->n_notes; i++) printf("  note: %s\n", r->notes[i]);
  if (r->verified) {
    printf("  post-merge check: cross-entropy on the probe %.7g nats before, %.7g after; ratio %.4g (bound %g)\n",
           r->ce_before, r->ce_after, r->ratio, r->max_ratio);
    printf("    %s\n", r->verdict);
  }
  if (r->rolled_back && dry_run) printf("DRY RUN: above the bound: the merge would be rolled back (--force commits it)\n");
  else if (r->rolled_back) printf("ROLLED BACK: nothing was changed (--force commits it)\n");
  else if (dry_run) printf("DRY RUN: %zu entr%s would be merged\n", r->n_entries, r->n_entries == 1 ? "y" : "ies");
  else printf("OK: merged %zu entr%s\n", r->n_entries, r->n_entries == 1 ? "y" : "ies");
}

/* The command's own keys in its --json document (set to null on a refusal). */
static const char *const json_keys[] = {"variant", "inference_dir", "orientation", "evidence", "written", "entries",
                                        "verify", NULL};

/* A number, or null when it is not finite (JSON has no infinity). */
static json_t *real_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* The post-merge check: null without --verify. */
static json_t *verify_json(const mpk_mt_merge_report *r) {
  if (!r->verified) return json_null();
  json_t *o = json_object();
  json_object_set_new(o, "ce_before", real_or_null(r->ce_before));
  json_object_set_new(o, "ce_after", real_or_null(r->ce_after));
  json_object_set_new(o, "ratio", real_or_null(r->ratio));
  json_object_set_new(o, "max_ratio", json_real(r->max_ratio));
  json_object_set_new(o, "rolled_back", json_boolean(r->rolled_back));
  json_object_set_new(o, "verdict", mpk_cli_json_str(r->verdict));
  return o;
}

/* `problem`: the rollback's error (ok false), else NULL. */
static int print_json(const mpk_mt_merge_report *r, const mpk_error *problem) {
  json_t *root = mpk_cli_json_begin("mt merge", true), *entries = json_array();
  json_object_set_new(root, "variant", mpk_cli_json_str(r->variant));
  json_object_set_new(root, "inference_dir", mpk_cli_json_str(r->inference_dir));
  json_object_set_new(root, "orientation", mpk_cli_json_str(mpk_mt_orientation_name(r->orientation)));
  json_object_set_new(root, "evidence", mpk_cli_json_str(r->evidence));
  json_object_set_new(root, "written", json_boolean(r->written));
  for (size_t i = 0; i < r->n_entries; i++) {
    const mpk_mt_merge_entry *e = &r->entries[i];
    json_t *o = json_object(), *digests = json_object();
    json_object_set_new(o, "entry", json_integer((json_int_t)e->entry));
    json_object_set_new(o, "layer", mpk_cli_json_str(e->layer));
    json_object_set_new(o, "adapter_A", mpk_cli_json_str(e->adapter_a));
    json_object_set_new(o, "adapter_B", mpk_cli_json_str(e->adapter_b));
    json_object_set_new(o, "dtype", mpk_cli_json_str(e->dtype));
    json_object_set_new(o, "shape", json_pack("[II]", (json_int_t)e->rows, (json_int_t)e->cols));
    json_object_set_new(o, "delta_shape", json_pack("[II]", (json_int_t)e->out, (json_int_t)e->in));
    json_object_set_new(o, "rank", json_integer((json_int_t)e->rank));
    json_object_set_new(o, "quantized", json_boolean(e->quantized));
    json_object_set_new(o, "observed", e->observed ? mpk_cli_json_str(mpk_mt_orientation_name(e->observed)) : json_null());
    json_object_set_new(o, "scale", json_real(e->scale));
    json_object_set_new(o, "scale_source", mpk_cli_json_str(e->scale_source));
    json_object_set_new(o, "base", mpk_cli_json_str(e->base_source));
    for (int k = 0; k < MPK_MT_ROLE_COUNT; k++)
      if (e->digest[k][0]) json_object_set_new(digests, mpk_mt_role_name((mpk_mt_role)k), json_string(e->digest[k]));
    json_object_set_new(o, "sha256", digests);
    json_array_append_new(entries, o);
  }
  json_object_set_new(root, "entries", entries);
  json_object_set_new(root, "verify", verify_json(r));
  return mpk_cli_json_end(root, problem, problem ? 1 : 0, r->notes, r->n_notes);
}

/* A positive integer (a header budget at most MPK_SAFETENSORS_MAX_HEADER bytes). */
static bool budget(const char *val, bool header, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(val, &end, 10);
  if (!*val || *end || errno || v == 0 || val[0] == '-' || (header && v > MPK_SAFETENSORS_MAX_HEADER)) return false;
  *out = v;
  return true;
}

int mpk_cmd_mt_merge(int argc, char **argv) {
  const char *cmd = "mt merge", *jobs_s = NULL, *scale_s = NULL, *orient_s = NULL, *header_s = NULL,
             *tensors_s = NULL, *ratio_s = NULL, *ort_lib = NULL;
  mpk_mt_merge_options o = MPK_MT_MERGE_OPTIONS_INIT;
  bool json = false, dry_run = false, keep_base = false, force = false;
  const mpk_cli_opt opts[] = {
      {"--adapter", 0, "FILE", "the adapter: factors found by each entry's checkpointNames (adapter_A [rank, in],\n"
                               "adapter_B [out, rank]), else by PEFT names (<module>.lora_A.weight); a frozen\n"
                               "base weight under checkpointNames.weight is used as the base when present",
       .str = &o.adapter},
      {"--variant", 0, "ID", "the variant (default: an installed model's own, else defaultVariant)", .str = &o.variant},
      {"--scale", 0, "S", "the multiplier; default: alpha / rank from the variant's train/training_config.json\n"
                          "or lora_alpha / r from an adapter_config.json beside the adapter (they must agree)",
       .str = &scale_s},
      {"--orientation", 0, "O", "no_transpose or already_transposed_for_inference: for packages whose weights\n"
                                "are all square, where the tensors cannot tell; otherwise it must agree with\n"
                                "what the non-square weights show", .str = &orient_s},
      {"--jobs", 0, "N", "merge threads (default: one per CPU, at most 8)", .str = &jobs_s},
      {"--max-adapter-header", 0, "BYTES", "the adapter reader's header budget (default 16777216): a larger\n"
                                           "header is refused before it is parsed", .str = &header_s},
      {"--max-adapter-tensors", 0, "N", "the adapter reader's tensor budget (default 100000)", .str = &tensors_s},
      {"--keep-base", 0, NULL, "keep the shipped tensors the merge replaces inside the inference directory\n"
                               "(<tensor>.modelpkg-base, same transaction), so mt restore needs no download",
       .flag = &keep_base},
      {"--verify", 0, "PROBE.json", "the post-merge check: cross-entropy on the probe's token sequences\n"
                                    "({\"sequences\": [[ids...], ...]}) before and after, in the transaction;\n"
                                    "above --max-ratio times the pre-merge value the merge is rolled back",
       .str = &o.probe},
      {"--max-ratio", 0, "R", "the bound of --verify: post/pre cross-entropy (default 2)", .str = &ratio_s},
      {"--force", 0, NULL, "--verify: commit even above the bound (reported)", .flag = &force},
      {"--ort-library", 0, "PATH", "--verify: ONNX Runtime's shared library (default: $MPK_ORT_LIBRARY, else\n"
                                   "libonnxruntime.so.1 by the loader's search)", .str = &ort_lib},
      {"--dry-run", 0, NULL, "decide and report; write nothing (with --verify: the check runs on\n"
                             "the merged tensors computed outside the package)", .flag = &dry_run},
      {"--json", 0, NULL, "the report as one JSON document on stdout", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = cmd,
                             .usage = "DIR --adapter ADAPTER.safetensors [--variant ID] [--scale S]\n"
                                      "DIR --adapter ADAPTER.safetensors [--orientation O] [--jobs N] [--keep-base] [--dry-run] [--json]\n"
                                      "DIR --adapter ADAPTER.safetensors --verify PROBE.json [--max-ratio R] [--force] [--ort-library PATH]\n"
                                      "DIR --adapter ADAPTER.safetensors [--max-adapter-header BYTES] [--max-adapter-tensors N]",
                             .about = about, .opts = opts, .more = more, .json_keys = json_keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  json = a.json;
  o.dry_run = dry_run;
  o.keep_base = keep_base;
  long long jobs = 0;
  if (!a.n) return mpk_cli_usage(&spec, json, "missing the package directory");
  if (!o.adapter) return mpk_cli_usage(&spec, json, "missing --adapter ADAPTER.safetensors");
  if ((st = mpk_cli_parse_jobs(&spec, json, jobs_s, &jobs))) return st;
  if (header_s && !budget(header_s, true, &o.adapter_budget.max_header_bytes))
    return mpk_cli_usage(&spec, json, "--max-adapter-header needs a positive integer (a header budget at most 100000000 bytes)");
  if (tensors_s && !budget(tensors_s, false, &o.adapter_budget.max_tensors))
    return mpk_cli_usage(&spec, json, "--max-adapter-tensors needs a positive integer (a header budget at most 100000000 bytes)");
  if (scale_s) {
    char *end;
    errno = 0;
    o.scale = strtod(scale_s, &end);
    if (!*scale_s || *end || errno || !isfinite(o.scale))
      return mpk_cli_usage(&spec, json, "--scale '%s' is not a finite number", scale_s);
    o.has_scale = 1;
  }
  if (orient_s) {
    if (!strcmp(orient_s, "no_transpose")) o.orientation = MPK_MT_ORIENT_NO_TRANSPOSE;
    else if (!strcmp(orient_s, "already_transposed_for_inference")) o.orientation = MPK_MT_ORIENT_ALREADY_TRANSPOSED;
    else
      return mpk_cli_usage(&spec, json, "--orientation must be no_transpose or already_transposed_for_inference, not '%s'",
                           orient_s);
  }
  if (!o.probe && (ratio_s || force || ort_lib))
    return mpk_cli_usage(&spec, json, "%s belongs to the post-merge check: give --verify PROBE.json",
                         ratio_s ? "--max-ratio" : force ? "--force" : "--ort-library");
  if (ratio_s) {
    char *end;
    errno = 0;
    o.max_ratio = strtod(ratio_s, &end);
    if (!*ratio_s || *end || errno || !isfinite(o.max_ratio) || o.max_ratio <= 0)
      return mpk_cli_usage(&spec, json, "--max-ratio '%s' is not a positive finite number", ratio_s);
  }
  o.force = force;
  const char *dir = a.arg[0];
  if (!mpk_cli_is_dir(dir)) return mpk_cli_usage(&spec, json, "'%s' is not a directory", dir);
  o.workers = (unsigned)jobs;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_merge_report *r = NULL;
  mpk_ort *ort = NULL;
  if (o.probe) {
    /* ONNX Runtime first: without it nothing is read or written. */
    mpk_ort_options oo = MPK_ORT_OPTIONS_INIT;
    oo.library = ort_lib;
    if (mpk_ort_open(&oo, &ort, &err)) {
      if (json) mpk_cli_json_refuse(cmd, json_keys, &err);
      mpk_cli_error(&err);
      fprintf(stderr, "modelpkg: mt merge: --verify needs ONNX Runtime; nothing was changed\n");
      return MPK_EXIT_FAIL;
    }
    o.ort = ort;
  }
  mpk_cli_bar bar; /* on a terminal: the entries merged so far (a dry run draws nothing) */
  mpk_cli_bar_init(&bar, "merging");
  bar.unit = "weights";
  if (bar.enabled && !o.dry_run) o.progress = mpk_cli_progress, o.progress_ctx = &bar;
  int rc = mpk_mt_merge(dir, &o, &r, &err);
  mpk_cli_bar_done(&bar);
  if (rc && r && r->rolled_back) {
    /* The post-merge check rolled the merge back: the report says why, and the exit status 1. */
    if (json) print_json(r, &err);
    else print_text(r, o.dry_run);
    mpk_cli_error(&err);
    mpk_mt_merge_report_free(r);
    mpk_ort_close(ort);
    return MPK_EXIT_FAIL;
  }
  if (rc) {
    mpk_mt_merge_report_free(r);
    mpk_ort_close(ort);
    if (json) mpk_cli_json_refuse(cmd, json_keys, &err);
    mpk_cli_error(&err);
    if (!strstr(err.message, "the merge committed")) fprintf(stderr, "modelpkg: mt merge: nothing was changed\n");
    return MPK_EXIT_FAIL;
  }
  st = MPK_EXIT_OK;
  if (json) st = print_json(r, NULL) ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  else print_text(r, o.dry_run);
  mpk_mt_merge_report_free(r);
  mpk_ort_close(ort);
  return st;
}
