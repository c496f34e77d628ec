/* modelpkg mlc plan --package DIR --lib LIB --segments SEGMENTS.json [--json]
   How a prompt of text and adapter outputs is fed to a manifest model's compiled functions
   (docs/prefill.md). (The conformance cases run through tests/util/prefill_case.c.) */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char about[] =
    "Plan the prefill of a prompt as WebLLM 0.2.86 does for a manifest model: the system prefix\n"
    "(first round only), text tokens, and per audio or image item its prefix tokens, one placeholder\n"
    "per adapter output row and its suffix tokens; cut into prefill chunks that never mix text and\n"
    "adapter rows; checked against the context window. Each chunk is one prefill call: the plan says\n"
    "which rows come from embed_tokens over which token ids, and which from which adapter output.\n";
static const char more[] = "exit status: 0 planned, 1 refused (the reason on stderr), 2 usage error\n";

/* ---------------------------------------------------------------- output pieces */

/* The command's own keys in its --json document (docs/CLI.md), by mode; null on a refusal. */
static const char *const package_keys[] = {"package", "lib", "generation_inputs", "functions", "prefill_chunk_size",
                                           "prefill_chunk_size_from", "context_window_size", "sliding_window_size",
                                           "filled_kv_cache_length", "prompt_length", "items", "chunks", NULL};

static int refused_as(const mpk_error *err, bool json, const char *const *keys) {
  mpk_cli_error(err);
  if (json) mpk_cli_json_refuse("mlc plan", keys, err);
  return MPK_EXIT_FAIL;
}
#define refused(err, json) refused_as(err, json, keys)

/* One --json document: the envelope around the command's keys (frees body). */
static int print_ok(json_t *body) {
  json_t *root = mpk_cli_json_begin("mlc plan", true);
  const char *k;
  json_t *v;
  json_object_foreach(body, k, v) json_object_set(root, k, v);
  json_decref(body);
  return mpk_cli_json_end(root, NULL, 0, NULL, 0);
}

/* ---------------------------------------------------------------- --package */

static const char *kind_name(mpk_mlc_segment_kind k) {
  return k == MPK_MLC_SEGMENT_AUDIO ? "audio" : k == MPK_MLC_SEGMENT_IMAGE ? "image" : "text";
}

static const char *str_or(const char *s, const char *dflt) { return s ? s : dflt; }

/* Up to `max` ids, then the count left out. */
static void print_ids(const int32_t *ids, size_t n, size_t max) {
  for (size_t i = 0; i < n && i < max; i++) printf("%s%" PRId32, i ? " " : "", ids[i]);
  if (n > max) printf(" ... (%zu more)", n - max);
}

static void plan_text(const char *dir, const mpk_mlc_planner *pl, const mpk_mlc_prefill_plan *p) {
  const mpk_mlc_prefill_config *c = &pl->config;
  bool tokens = p->generation_inputs == MPK_MLC_GENERATION_TOKENS;
  const char *prefill = str_or(p->prefill, tokens ? "prefill_tokens" : "prefill_embeds");
  const char *embed = str_or(p->embed_tokens, "embed_tokens");
  printf("package:  %s\n", dir);
  printf("roles:    %s pair: prefill %s, decode %s, embed_tokens %s\n", tokens ? "tokens" : "embeds", prefill,
         str_or(p->decode, "?"), embed);
  printf("window:   prefill_chunk_size %" PRId64 " (%s), ", c->prefill_chunk_size,
         str_or(pl->prefill_chunk_size_from, "given"));
  if (c->sliding_window_size == -1) printf("context_window_size %" PRId64 "\n", c->context_window_size);
  else printf("sliding_window_size %" PRId64 " (no context checks)\n", c->sliding_window_size);
  printf("prompt:   %zu position%s after %" PRId64 " in the KV cache, %zu prefill call%s, %zu adapter item%s\n",
         p->prompt_length, p->prompt_length == 1 ? "" : "s", p->filled_kv_cache_length, p->n_chunks,
         p->n_chunks == 1 ? "" : "s", p->n_items, p->n_items == 1 ? "" : "s");
  for (size_t i = 0; i < p->n_items; i++) {
    const mpk_mlc_prefill_item *it = &p->items[i];
    printf("item %zu:   %s (segment %zu): %s -> [%" PRId64 ", hidden_size], positions %zu..%zu, calls %zu..%zu\n", i,
           kind_name(it->kind), it->segment, str_or(it->adapter_function, "(adapter)"), it->rows, it->offset,
           it->offset + (size_t)it->rows - 1, it->first_chunk, it->first_chunk + it->n_chunks - 1);
  }
  for (size_t i = 0; i < p->n_chunks; i++) {
    const mpk_mlc_prefill_chunk *ch = &p->chunks[i];
    printf("call %zu:   positions %zu..%zu: %s(embeddings [1, %zu, hidden]", i, ch->offset, ch->offset + ch->n - 1,
           prefill, ch->n);
    if (tokens) printf(", token ids [1, %zu], modality ids [1, %zu]", ch->n, ch->n);
    printf(", kv, params)\n          embeddings = ");
    if (ch->from_adapter) {
      const mpk_mlc_prefill_item *it = &p->items[ch->item];
      printf("item %zu (%s) rows %" PRId64 "..%" PRId64 ", token ids: placeholder %" PRId32 " x %zu\n", ch->item,
             str_or(it->adapter_function, kind_name(it->kind)), ch->row_start, ch->row_start + (int64_t)ch->n - 1,
             ch->token_ids[0], ch->n);
    } else {
      printf("%s(", embed);
      print_ids(ch->token_ids, ch->n, 16);
      printf(")\n");
    }
  }
  if (tokens) printf("decode:   %s(token ids [1, 1], kv, params)\n", str_or(p->decode, "decode_tokens"));
  else printf("decode:   %s(%s(token id) as [1, 1, hidden], kv, params)\n", str_or(p->decode, "decode_embeds"), embed);
}

/* The document: the package and library, then the library's JSON of the plan (one writer for the
   CLI and the bindings). */
static int plan_json(const char *dir, const char *lib, const mpk_mlc_planner *pl, const mpk_mlc_prefill_plan *p,
                     mpk_error *err) {
  char *text = NULL;
  if (mpk_mlc_prefill_plan_json(pl, p, &text, NULL, err)) return -1;
  json_t *plan = json_loads(text, 0, NULL);
  mpk_free(text);
  json_t *root = plan ? json_pack("{s:s, s:s}", "package", dir, "lib", lib) : NULL;
  if (!root) {
    json_decref(plan);
    mpk_error_clear(err);
    err->code = MPK_ENOMEM;
    snprintf(err->message, sizeof err->message, "out of memory");
    return -1;
  }
  json_object_update(root, plan); /* its keys in its order, after package and lib */
  json_decref(plan);
  return print_ok(root);
}

static int run_package(const char *dir, const char *lib, const char *segments, bool json) {
  const char *const *keys = package_keys;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mlc_planner *pl = NULL;
  mpk_mlc_segments *s = NULL;
  mpk_mlc_prefill_plan *plan = NULL;
  mpk_mapped m;
  int rc = mpk_mlc_planner_open(dir, lib, &pl, &err);
  if (!rc && !(rc = mpk_map_file(segments, MPK_DOCUMENT_MAX_BYTES, &m, &err))) {
    rc = mpk_mlc_segments_parse(m.data, m.size, segments, &s, &err);
    mpk_unmap_file(&m);
  }
  if (!rc) {
    rc = mpk_mlc_prefill_plan_segments(pl, s->filled_kv_cache_length, s->segments, s->n, &plan, &err);
    if (rc && !err.file[0]) snprintf(err.file, sizeof err.file, "%s", segments); /* the prompt's fault */
  }
  int status;
  if (!rc && json && plan_json(dir, lib, pl, plan, &err) < 0) rc = err.code;
  if (rc) status = refused(&err, json);
  else {
    if (!json) plan_text(dir, pl, plan);
    status = MPK_EXIT_OK;
  }
  mpk_mlc_prefill_plan_free(plan);
  mpk_mlc_segments_free(s);
  mpk_mlc_planner_free(pl);
  return status;
}

int mpk_cmd_mlc_plan(int argc, char **argv) {
  const char *package = NULL, *lib = NULL, *segments = NULL;
  bool json = false;
  const mpk_cli_opt opts[] = {
      {"--package", 0, "DIR", "the package (its mlc-model-manifest.json and chat config)", .str = &package,
       .once = true},
      {"--lib", 0, "LIB", "its compiled library (or _metadata JSON): roles, adapters,\nprefill_chunk_size",
       .str = &lib, .once = true},
      {"--segments", 0, "FILE", "the prompt: {\"filled_kv_cache_length\"?: N, \"segments\": [{\"text\": [ids]},\n"
                                "{\"audio\": {\"rows\": N}}, {\"image\": {}}, ...]} (docs/prefill.md)",
       .str = &segments, .once = true},
      {"--json", 0, NULL, "print one JSON document (also for a refused prompt)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = "mlc plan", .usage = "--package DIR --lib LIB --segments SEGMENTS.json [--json]",
                             .about = about, .opts = opts, .more = more, .json_keys = package_keys, .max_args = 0};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  json = a.json;
  if (!package || !lib || !segments)
    return mpk_cli_usage(&spec, json, "needs --package DIR, --lib LIB and --segments FILE");
  return run_package(package, lib, segments, json);
}
