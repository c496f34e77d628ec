/* The WebLLM prefill conformance cases, one at a time: mpk_prefill_case CASE.json [--json] prints
   what WebLLM's getArtifactPrefillChunks / getChunkedPrefillInputData return for the case's stub
   pipeline (expectations ignored), in the `modelpkg mlc plan --json` envelope. Driven by
   tests/integration/test_cli_plan.sh, which compares each case with its expectation. (It was
   `modelpkg mlc plan --case`; a conformance runner belongs to the tests, not to the CLI.) */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

enum { MPK_EXIT_OK = 0, MPK_EXIT_FAIL = 1, MPK_EXIT_USAGE = 2 };

static const char *const artifact_case_keys[] = {"prompt_length", "chunks", NULL};
static const char *const legacy_case_keys[] = {"chunks", "chunk_lens", NULL};

/* The CLI's --json envelope (docs/CLI.md "JSON reports"): version, command, ok, keys, problems, notes. */
static int print_doc(json_t *body, const char *const *keys, const mpk_error *err) {
  json_t *root = json_object();
  json_object_set_new(root, "modelpkg_version", json_string(mpk_version()));
  json_object_set_new(root, "command", json_string("mlc plan"));
  json_object_set_new(root, "ok", json_boolean(err == NULL));
  if (body) {
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) json_object_set(root, k, v);
    json_decref(body);
  } else {
    for (size_t i = 0; keys && keys[i]; i++) json_object_set_new(root, keys[i], json_null());
  }
  json_t *problems = json_array();
  if (err) {
    json_t *p = json_pack("{s:s, s:s, s:s, s:s}", "code", mpk_code_name(err->code), "file", err->file, "pointer",
                          err->pointer, "message", err->message);
    json_object_set_new(p, "offset", err->offset >= 0 ? json_integer(err->offset) : json_null());
    json_array_append_new(problems, p);
  }
  json_object_set_new(root, "problems", problems);
  json_object_set_new(root, "notes", json_array());
  int rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  fputc('\n', stdout);
  json_decref(root);
  return rc;
}

static int print_ok(json_t *body) { return print_doc(body, NULL, NULL); }

static int refused_as(const mpk_error *err, bool json, const char *const *keys) {
  char line[2048];
  mpk_error_format(err, line, sizeof line);
  fprintf(stderr, "modelpkg: %s\n", line);
  if (json) print_doc(NULL, keys, err);
  return MPK_EXIT_FAIL;
}
#define refused(err, json) refused_as(err, json, keys)

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

int main(int argc, char **argv) {
  const char *file = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) json = true;
    else if (!file && argv[i][0] != '-') file = argv[i];
    else {
      fprintf(stderr, "usage: mpk_prefill_case CASE.json [--json]\n");
      return MPK_EXIT_USAGE;
    }
  }
  if (!file) {
    fprintf(stderr, "usage: mpk_prefill_case CASE.json [--json]\n");
    return MPK_EXIT_USAGE;
  }
  return run_case(file, json);
}
