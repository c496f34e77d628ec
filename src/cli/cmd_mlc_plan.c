/* modelpkg mlc plan --package DIR --lib LIB --segments SEGMENTS.json [--json]
   modelpkg mlc plan --case CASE.json [--json]
   How a prompt of text and adapter outputs is fed to a manifest model's compiled functions
   (docs/prefill.md); --case runs one case of the WebLLM conformance vectors. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"

static const char help[] =
    "usage: modelpkg mlc plan --package DIR --lib LIB --segments SEGMENTS.json [--json]\n"
    "       modelpkg mlc plan --case CASE.json [--json]\n"
    "\n"
    "Plan the prefill of a prompt as WebLLM 0.2.86 does for a manifest model: the system prefix\n"
    "(first round only), text tokens, and per audio or image item its prefix tokens, one placeholder\n"
    "per adapter output row and its suffix tokens; cut into prefill chunks that never mix text and\n"
    "adapter rows; checked against the context window. Each chunk is one prefill call: the plan says\n"
    "which rows come from embed_tokens over which token ids, and which from which adapter output.\n"
    "\n"
    "  --package DIR         the package (its mlc-model-manifest.json and chat config)\n"
    "  --lib LIB             its compiled library (or _metadata JSON): roles, adapters,\n"
    "                        prefill_chunk_size\n"
    "  --segments FILE       the prompt: {\"filled_kv_cache_length\"?: N, \"segments\": [{\"text\": [ids]},\n"
    "                        {\"audio\": {\"rows\": N}}, {\"image\": {}}, ...]} (docs/prefill.md)\n"
    "  --case FILE           one case of ../shared/conformance/mlc-webllm/prefill_chunks_artifact.json\n"
    "                        or prefill_chunks_legacy.json (expectations ignored); prints what\n"
    "                        WebLLM's function returns\n"
    "  --json                print one JSON document (also for a refused prompt, then under \"error\")\n"
    "  -h, --help            show this help\n"
    "\n"
    "exit status: 0 planned, 1 refused (the reason on stderr), 2 usage error\n";

/* ---------------------------------------------------------------- output pieces */

static json_t *ids_json(const int32_t *ids, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_integer(ids[i]));
  return a;
}

/* A chunk as the conformance vectors write it: token ids, modality ids, embedding_rows. */
static json_t *chunk_json(const mpk_mlc_prefill_chunk *c) {
  json_t *rows = c->from_adapter ? json_pack("[I, I]", (json_int_t)c->row_start, (json_int_t)c->n) : json_null();
  return json_pack("{s:o, s:o, s:o}", "token_ids", ids_json(c->token_ids, c->n), "modality_ids",
                   ids_json(c->modality_ids, c->n), "embedding_rows", rows);
}

/* The command's own keys in its --json document (docs/CLI.md), by mode; null on a refusal. */
static const char *const package_keys[] = {"package", "lib", "generation_inputs", "functions", "prefill_chunk_size",
                                           "prefill_chunk_size_from", "context_window_size", "sliding_window_size",
                                           "filled_kv_cache_length", "prompt_length", "items", "chunks", NULL};
static const char *const artifact_case_keys[] = {"prompt_length", "chunks", NULL};
static const char *const legacy_case_keys[] = {"chunks", "chunk_lens", NULL};

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

/* ---------------------------------------------------------------- --case */

static int case_fail(mpk_error *err, const char *file, const char *ptr, const char *msg) {
  return mpk_fail(err, MPK_EMALFORMED, file, ptr, "%s", msg);
}

/* An array of token ids (int64, range-checked later by the planner) — NULL/null gives none. */
static int case_ids(const json_t *v, const char *file, const char *ptr, int64_t **out, size_t *n, mpk_error *err) {
  *out = NULL;
  *n = 0;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_array(v)) return case_fail(err, file, ptr, "expected an array of token ids");
  *n = json_array_size(v);
  if (!(*out = calloc(*n + 1, sizeof **out))) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  for (size_t i = 0; i < *n; i++)
    if (!mpk_json_safe_integer(json_array_get(v, i), &(*out)[i])) return case_fail(err, file, ptr, "expected integers");
  return 0;
}

typedef struct case_prompt {
  mpk_mlc_prompt p;
  int64_t *prefix, *suffix;
} case_prompt;

static int case_prompt_read(const json_t *v, const char *file, const char *key, case_prompt *cp,
                            mpk_mlc_prefill_input *in, mpk_error *err) {
  if (!v) return 0;
  char ptr[64];
  snprintf(ptr, sizeof ptr, "/%s", key);
  if (!json_is_object(v) || !mpk_json_safe_integer(json_object_get(v, "placeholder_token_id"), &cp->p.placeholder_token_id))
    return case_fail(err, file, ptr, "expected an object with an integer placeholder_token_id");
  int rc = case_ids(json_object_get(v, "prefix_token_ids"), file, ptr, &cp->prefix, &cp->p.n_prefix_token_ids, err);
  if (!rc) rc = case_ids(json_object_get(v, "suffix_token_ids"), file, ptr, &cp->suffix, &cp->p.n_suffix_token_ids, err);
  cp->p.prefix_token_ids = cp->prefix;
  cp->p.suffix_token_ids = cp->suffix;
  in->prompt = &cp->p;
  return rc;
}

static int opt_case_int(const json_t *c, const char *key, const char *file, int64_t *out, mpk_error *err) {
  const json_t *v = json_object_get(c, key);
  if (!v) return 0;
  char ptr[64];
  snprintf(ptr, sizeof ptr, "/%s", key);
  return mpk_json_safe_integer(v, out) ? 0 : case_fail(err, file, ptr, "expected an integer");
}

/* getArtifactPrefillChunks on the case's stub pipeline. */
static int run_artifact_case(const json_t *c, const char *file, bool json) {
  const char *const *keys = artifact_case_keys;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mlc_prefill_config cfg = {0};
  cfg.generation_inputs = MPK_MLC_GENERATION_TOKENS;
  cfg.sliding_window_size = -1;
  int64_t filled = 0, *prefix = NULL;
  case_prompt audio = {0}, image = {0};
  mpk_mlc_planner *planner = NULL;
  mpk_mlc_prefill_builder *b = NULL;
  mpk_mlc_prefill_plan *plan = NULL;
  const json_t *segs = json_object_get(c, "segments"), *tok = json_object_get(c, "tokenizer"),
               *rows = json_object_get(c, "adapter_rows");
  int rc = 0;
  if (!json_is_array(segs)) rc = case_fail(&err, file, "/segments", "expected an array");
  else if (tok && !json_is_object(tok)) rc = case_fail(&err, file, "/tokenizer", "expected an object");
  else if (rows && !json_is_array(rows)) rc = case_fail(&err, file, "/adapter_rows", "expected an array");
  else if (!json_object_get(c, "context_window_size"))
    rc = case_fail(&err, file, "/context_window_size", "missing (the case needs a window)");
  if (!rc) rc = opt_case_int(c, "prefill_chunk_size", file, &cfg.prefill_chunk_size, &err);
  if (!rc) rc = opt_case_int(c, "context_window_size", file, &cfg.context_window_size, &err);
  if (!rc) rc = opt_case_int(c, "sliding_window_size", file, &cfg.sliding_window_size, &err);
  if (!rc) rc = opt_case_int(c, "filled_kv_cache_length", file, &filled, &err);
  if (!rc) rc = case_ids(json_object_get(c, "system_prefix_token_ids"), file, "/system_prefix_token_ids", &prefix,
                         &cfg.n_system_prefix_token_ids, &err);
  cfg.system_prefix_token_ids = prefix;
  if (!rc) rc = case_prompt_read(json_object_get(c, "audio_prompt"), file, "audio_prompt", &audio, &cfg.audio, &err);
  if (!rc) rc = case_prompt_read(json_object_get(c, "image_prompt"), file, "image_prompt", &image, &cfg.image, &err);
  if (!rc) rc = mpk_mlc_planner_new(&cfg, &planner, &err);
  if (!rc) rc = mpk_mlc_prefill_begin(planner, filled, &b, &err);
  size_t next_rows = 0;
  for (size_t i = 0; !rc && i < json_array_size(segs); i++) {
    const char *s = json_string_value(json_array_get(segs, i));
    char ptr[48];
    snprintf(ptr, sizeof ptr, "/segments/%zu", i);
    if (!s) {
      rc = case_fail(&err, file, ptr, "expected a string");
    } else if (strcmp(s, "AUDIO") == 0 || strcmp(s, "IMAGE") == 0) {
      /* Adapter outputs are consumed in order; an undeclared input fails before it is taken. */
      mpk_mlc_segment_kind kind = s[0] == 'A' ? MPK_MLC_SEGMENT_AUDIO : MPK_MLC_SEGMENT_IMAGE;
      int64_t n_rows = -1;
      if (!(kind == MPK_MLC_SEGMENT_AUDIO ? cfg.audio.prompt : cfg.image.prompt)) n_rows = 0;
      else if (next_rows < json_array_size(rows) && mpk_json_safe_integer(json_array_get(rows, next_rows), &n_rows)) next_rows++;
      else rc = case_fail(&err, file, "/adapter_rows", "no adapter output left for this item");
      if (!rc) rc = mpk_mlc_prefill_add_media(b, kind, n_rows, &err);
    } else {
      const json_t *ids = json_object_get(tok, s);
      size_t n = json_array_size(ids);
      int32_t *v = calloc(n + 1, sizeof *v);
      if (!json_is_array(ids)) rc = case_fail(&err, file, ptr, "the tokenizer table has no entry for this text");
      else if (!v) rc = mpk_fail(&err, MPK_ENOMEM, file, NULL, "out of memory");
      for (size_t k = 0; !rc && k < n; k++) {
        int64_t id;
        if (!mpk_json_safe_integer(json_array_get(ids, k), &id) || id < 0 || id > INT32_MAX)
          rc = case_fail(&err, file, "/tokenizer", "expected token ids (0..2147483647)");
        else v[k] = (int32_t)id;
      }
      if (!rc) rc = mpk_mlc_prefill_add_text(b, v, n, &err);
      free(v);
    }
  }
  if (!rc) rc = mpk_mlc_prefill_finish(b, &plan, &err);
  int status = MPK_EXIT_OK;
  if (rc) {
    if (!err.file[0]) snprintf(err.file, sizeof err.file, "%s", file);
    status = refused(&err, json);
  } else {
    if (json) {
      json_t *chunks = json_array();
      for (size_t i = 0; i < plan->n_chunks; i++) json_array_append_new(chunks, chunk_json(&plan->chunks[i]));
      print_ok(json_pack("{s:I, s:o}", "prompt_length", (json_int_t)plan->prompt_length, "chunks", chunks));
    } else {
      printf("prompt_length %zu, %zu chunks\n", plan->prompt_length, plan->n_chunks);
      for (size_t i = 0; i < plan->n_chunks; i++) {
        const mpk_mlc_prefill_chunk *ch = &plan->chunks[i];
        printf("  %zu: %zu positions, %s", i, ch->n, ch->from_adapter ? "adapter rows " : "text\n");
        if (ch->from_adapter) printf("[%" PRId64 ", %zu]\n", ch->row_start, ch->n);
      }
    }
  }
  mpk_mlc_prefill_plan_free(plan);
  mpk_mlc_prefill_builder_free(b);
  mpk_mlc_planner_free(planner);
  free(prefix);
  free(audio.prefix), free(audio.suffix), free(image.prefix), free(image.suffix);
  return status;
}

/* getChunkedPrefillInputData on the case's items: token ranges {"tokens": [first, last], "count"}
   and images {"image": NAME, "embed_size"}. */
static int run_legacy_case(const json_t *c, const char *file, bool json) {
  const char *const *keys = legacy_case_keys;
  mpk_error err;
  mpk_error_clear(&err);
  const json_t *input = json_object_get(c, "input");
  int64_t size = 0;
  int rc = opt_case_int(c, "prefill_chunk_size", file, &size, &err);
  size_t n = json_array_size(input);
  mpk_mlc_legacy_item *items = calloc(n + 1, sizeof *items);
  int64_t *first = calloc(n + 1, sizeof *first);
  if (!rc && (!items || !first)) rc = mpk_fail(&err, MPK_ENOMEM, file, NULL, "out of memory");
  for (size_t i = 0; !rc && i < n; i++) {
    const json_t *it = json_array_get(input, i);
    char ptr[48];
    snprintf(ptr, sizeof ptr, "/input/%zu", i);
    items[i].is_image = json_object_get(it, "image") != NULL;
    const json_t *range = json_object_get(it, "tokens");
    if (items[i].is_image ? !json_is_string(json_object_get(it, "image")) ||
                                !mpk_json_safe_integer(json_object_get(it, "embed_size"), &items[i].length)
                          : !mpk_json_safe_integer(json_object_get(it, "count"), &items[i].length) ||
                                !mpk_json_safe_integer(json_array_get(range, 0), &first[i]))
      rc = case_fail(&err, file, ptr, "expected {\"tokens\": [first, last], \"count\": N} or {\"image\": NAME, \"embed_size\": N}");
  }
  mpk_mlc_legacy_plan *plan = NULL;
  if (!rc) rc = mpk_mlc_legacy_chunks(items, n, size, &plan, &err);
  int status = MPK_EXIT_OK;
  if (rc) {
    if (!err.file[0]) snprintf(err.file, sizeof err.file, "%s", file);
    if (err.pointer[0] == '/' && strncmp(err.pointer, "/input", 6) != 0) {
      char p[sizeof err.pointer];
      snprintf(p, sizeof p, "/input%.*s", (int)sizeof p - 8, err.pointer);
      snprintf(err.pointer, sizeof err.pointer, "%s", p);
    }
    status = refused(&err, json);
  } else {
    json_t *chunks = json_array(), *lens = json_array();
    for (size_t k = 0; k < plan->n_chunks; k++) {
      const mpk_mlc_legacy_chunk *ch = &plan->chunks[k];
      json_t *pieces = json_array();
      for (size_t p = 0; p < ch->n_pieces; p++) {
        const mpk_mlc_legacy_piece *pc = &ch->pieces[p];
        const json_t *it = json_array_get(input, pc->item);
        if (items[pc->item].is_image)
          json_array_append_new(pieces, json_pack("{s:O}", "image", json_object_get(it, "image")));
        else
          json_array_append_new(pieces, json_pack("{s:[I, I], s:I}", "tokens", (json_int_t)(first[pc->item] + pc->start),
                                                  (json_int_t)(first[pc->item] + pc->start + pc->count - 1), "count",
                                                  (json_int_t)pc->count));
      }
      json_array_append_new(chunks, pieces);
      json_array_append_new(lens, json_integer(ch->length));
    }
    json_t *root = json_pack("{s:o, s:o}", "chunks", chunks, "chunk_lens", lens);
    if (json) {
      print_ok(root);
    } else {
      printf("%zu chunks\n", plan->n_chunks);
      for (size_t k = 0; k < plan->n_chunks; k++)
        printf("  %zu: %" PRId64 " positions in %zu pieces\n", k, plan->chunks[k].length, plan->chunks[k].n_pieces);
      json_decref(root);
    }
  }
  mpk_mlc_legacy_plan_free(plan);
  free(items);
  free(first);
  return status;
}

static int run_case(const char *path, bool json) {
  const char *const *keys = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  json_t *c = NULL;
  if (mpk_json_load_file(path, NULL, &c, &err)) return refused(&err, json);
  int status;
  if (!json_is_object(c)) {
    mpk_fail(&err, MPK_EMALFORMED, path, "", "expected one case object");
    status = refused(&err, json);
  } else if (json_object_get(c, "input")) {
    status = run_legacy_case(c, path, json);
  } else {
    status = run_artifact_case(c, path, json);
  }
  json_decref(c);
  return status;
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

static int plan_json(const char *dir, const char *lib, const mpk_mlc_planner *pl, const mpk_mlc_prefill_plan *p) {
  const mpk_mlc_prefill_config *c = &pl->config;
  json_t *items = json_array(), *chunks = json_array();
  for (size_t i = 0; i < p->n_items; i++) {
    const mpk_mlc_prefill_item *it = &p->items[i];
    json_array_append_new(items, json_pack("{s:s, s:I, s:o, s:I, s:I, s:[I, I]}", "kind", kind_name(it->kind), "segment",
                                           (json_int_t)it->segment, "adapter_function",
                                           mpk_cli_json_str(it->adapter_function), "rows", (json_int_t)it->rows,
                                           "offset", (json_int_t)it->offset, "chunks", (json_int_t)it->first_chunk,
                                           (json_int_t)it->n_chunks));
  }
  for (size_t i = 0; i < p->n_chunks; i++) {
    const mpk_mlc_prefill_chunk *ch = &p->chunks[i];
    json_t *o = chunk_json(ch);
    json_object_set_new(o, "offset", json_integer((json_int_t)ch->offset));
    json_object_set_new(o, "item", ch->from_adapter ? json_integer((json_int_t)ch->item) : json_null());
    json_array_append_new(chunks, o);
  }
  json_t *root = json_pack(
      "{s:s, s:s, s:s, s:{s:o, s:o, s:o}, s:I, s:o, s:I, s:I, s:I, s:I, s:o, s:o}", "package", dir, "lib", lib,
      "generation_inputs", p->generation_inputs == MPK_MLC_GENERATION_TOKENS ? "tokens" : "embeds", "functions",
      "embed_tokens", mpk_cli_json_str(p->embed_tokens), "prefill", mpk_cli_json_str(p->prefill), "decode",
      mpk_cli_json_str(p->decode), "prefill_chunk_size", (json_int_t)c->prefill_chunk_size,
      "prefill_chunk_size_from", mpk_cli_json_str(pl->prefill_chunk_size_from), "context_window_size",
      (json_int_t)c->context_window_size, "sliding_window_size", (json_int_t)c->sliding_window_size,
      "filled_kv_cache_length", (json_int_t)p->filled_kv_cache_length, "prompt_length", (json_int_t)p->prompt_length,
      "items", items, "chunks", chunks);
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
  if (!rc && !(rc = mpk_map_file(segments, MPK_JSON_DEFAULT_MAX_BYTES, &m, &err))) {
    rc = mpk_mlc_segments_parse(m.data, m.size, segments, &s, &err);
    mpk_unmap_file(&m);
  }
  if (!rc) {
    rc = mpk_mlc_prefill_plan_segments(pl, s->filled_kv_cache_length, s->segments, s->n, &plan, &err);
    if (rc && !err.file[0]) snprintf(err.file, sizeof err.file, "%s", segments); /* the prompt's fault */
  }
  int status;
  if (rc) status = refused(&err, json);
  else {
    if (json) plan_json(dir, lib, pl, plan);
    else plan_text(dir, pl, plan);
    status = MPK_EXIT_OK;
  }
  mpk_mlc_prefill_plan_free(plan);
  mpk_mlc_segments_free(s);
  mpk_mlc_planner_free(pl);
  return status;
}

int mpk_cmd_mlc_plan(int argc, char **argv) {
  const char *package = NULL, *lib = NULL, *segments = NULL, *case_file = NULL;
  bool json = mpk_cli_json_wanted(argc, argv);
  const char *const *keys = package_keys;
  for (int i = 2; i < argc; i++) { /* argv[0] "mlc", argv[1] "plan" */
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--package") == 0 || strcmp(a, "--lib") == 0 || strcmp(a, "--segments") == 0 ||
               strcmp(a, "--case") == 0) {
      if (i + 1 >= argc) return mpk_cli_usage_json(json, "mlc plan", keys, "%s needs a value", a);
      const char **dst = a[2] == 'p' ? &package : a[2] == 'l' ? &lib : a[2] == 's' ? &segments : &case_file;
      if (*dst) return mpk_cli_usage_json(json, "mlc plan", keys, "%s given twice", a);
      *dst = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      return mpk_cli_usage_json(json, "mlc plan", keys, "unknown option '%s'", a);
    } else {
      return mpk_cli_usage_json(json, "mlc plan", keys, "unexpected argument '%s'", a);
    }
  }
  if (case_file) {
    if (package || lib || segments)
      return mpk_cli_usage_json(json, "mlc plan", keys, "--case runs alone (not with --package, --lib, --segments)");
    return run_case(case_file, json);
  }
  if (!package || !lib || !segments)
    return mpk_cli_usage_json(json, "mlc plan", keys, "needs --package DIR, --lib LIB and --segments FILE (or --case FILE)");
  return run_package(package, lib, segments, json);
}
