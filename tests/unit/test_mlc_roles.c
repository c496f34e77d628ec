/* The role table, a library's VM functions against an artifact's roles and adapters, and the legacy
   ABI (src/mlc/roles.c, docs/mlc-library.md "Roles and arities", "The legacy ABI"), on
   mpk_mlc_library structs filled by hand: the tables of the real libraries in
   ../shared/realdata/mlc-libs (as /work/vmproto.py read them) and every artifact of the WebLLM
   conformance vectors that names roles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"
#include "testutil.h"

/* ------------------------------------------------------------------ a library filled by hand */

#define MAX_FNS 64
#define MAX_ARGS 8
typedef struct fake {
  mpk_mlc_library lib;
  mpk_mlc_function fns[MAX_FNS];
  char names[MAX_FNS][96];
  char pnames[MAX_FNS][MAX_ARGS][32];
  const char *pptr[MAX_FNS][MAX_ARGS];
} fake;

static void fake_init(fake *f, const char *path) {
  memset(f, 0, sizeof *f);
  f->lib.path = path;
  f->lib.container = "hand-filled";
  f->lib.functions = f->fns;
}

/* A function named `name` of `kind` with `nargs` parameters named p0, p1, ... (or `params`,
   comma-separated, when given). */
static void fake_add(fake *f, const char *name, mpk_mlc_function_kind kind, int nargs, const char *params) {
  size_t i = f->lib.n_functions++;
  assert_true(i < MAX_FNS);
  snprintf(f->names[i], sizeof f->names[i], "%s", name);
  mpk_mlc_function *fn = &f->fns[i];
  fn->name = f->names[i];
  fn->kind = kind;
  fn->num_args = kind == MPK_MLC_FUNCTION_PACKED ? -2 : nargs;
  if (kind == MPK_MLC_FUNCTION_PACKED) return;
  const char *p = params;
  for (int k = 0; k < nargs && k < MAX_ARGS; k++) {
    if (p && *p) {
      const char *comma = strchr(p, ',');
      size_t n = comma ? (size_t)(comma - p) : strlen(p);
      snprintf(f->pnames[i][k], sizeof f->pnames[i][k], "%.*s", (int)n, p);
      p = comma ? comma + 1 : p + n;
    } else {
      snprintf(f->pnames[i][k], sizeof f->pnames[i][k], "p%d", k);
    }
    f->pptr[i][k] = f->pnames[i][k];
  }
  fn->param_names = f->pptr[i];
  fn->n_param_names = (size_t)(nargs < MAX_ARGS ? nargs : MAX_ARGS);
}

static void vm(fake *f, const char *name, int nargs, const char *params) {
  fake_add(f, name, MPK_MLC_FUNCTION_VM, nargs, params);
}

/* The Phi-3 WebGPU library's VM functions (v0_2_48) and a few of its packed entries. */
static void phi3(fake *f) {
  fake_init(f, "Phi-3.wasm");
  vm(f, "decode", 3, "input_embed,paged_kv_cache,packed_params");
  vm(f, "batch_prefill", 4, "input_embeds,logit_positions,paged_kv_cache,packed_params");
  vm(f, "create_tir_paged_kv_cache", 5,
     "max_batch_size_,max_total_seq_len_,prefill_chunk_size_,page_size_,support_sliding_window_");
  vm(f, "softmax_with_temperature", 2, "logits,temperature");
  vm(f, "batch_verify", 3, "input_embeds,paged_kv_cache,packed_params");
  vm(f, "alloc_embedding_tensor", 0, NULL);
  vm(f, "embed", 2, "input_ids,packed_params");
  vm(f, "prefill", 3, "input_embed,paged_kv_cache,packed_params");
  vm(f, "batch_decode", 3, "input_embeds,paged_kv_cache,packed_params");
  vm(f, "_metadata", 0, NULL);
  fake_add(f, "vm.builtin.paged_attention_kv_cache_create_reduced", MPK_MLC_FUNCTION_PACKED, 0, NULL);
  fake_add(f, "fused_rope", MPK_MLC_FUNCTION_PACKED, 0, NULL);
}

/* ------------------------------------------------------------------ the role table */

static void test_role_table(void **state) {
  (void)state;
  static const struct {
    const char *role;
    int n;
  } want[] = {{"embed_tokens", 2},  {"prefill_tokens", 5}, {"decode_tokens", 3},    {"prefill_embeds", 3},
              {"decode_embeds", 3}, {"create_kv_cache", 5}, {"create_rnn_state", 2}, {"adapter", 2}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int lo = -1, hi = -1;
    mpk_error err;
    assert_int_equal(mpk_mlc_role_arity(want[i].role, &lo, &hi, &err), 0);
    if (lo != want[i].n || hi != want[i].n) fail_msg("%s: %d..%d, want %d", want[i].role, lo, hi, want[i].n);
  }
  int lo, hi;
  mpk_error err;
  assert_int_equal(mpk_mlc_role_arity("prefill_prompt", &lo, &hi, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "unknown role \"prefill_prompt\""));
  assert_non_null(strstr(err.message, "create_rnn_state"));
  assert_int_equal(mpk_mlc_role_arity("", &lo, &hi, NULL), MPK_ENOTFOUND);
  assert_int_equal(mpk_mlc_role_arity(NULL, &lo, &hi, NULL), MPK_EINVAL);
  assert_int_equal(mpk_mlc_role_arity("embed_tokens", NULL, &hi, NULL), MPK_EINVAL);
  assert_int_equal(mpk_mlc_role_arity("embed_tokens", &lo, NULL, NULL), MPK_EINVAL);
}

/* ------------------------------------------------------------------ functions against an artifact */

static mpk_mlc_artifact *artifact(const char *programs_json) {
  char text[4096];
  snprintf(text, sizeof text,
           "{\"schema\":\"mlc.compiled-program\",\"schema_version\":1,"
           "\"interface_id\":\"sha256:1111111111111111111111111111111111111111111111111111111111111111\","
           "\"parameter_schema_id\":\"sha256:2222222222222222222222222222222222222222222222222222222222222222\","
           "\"programs\":%s,\"resources\":{\"required_features\":[],\"max_storage_buffer_binding_size\":0,"
           "\"estimated_device_memory_bytes\":0}}",
           programs_json);
  mpk_mlc_artifact *art = NULL;
  mpk_error err;
  if (mpk_mlc_artifact_parse(text, strlen(text), NULL, &art, &err)) fail_msg("artifact: %s", tu_err(&err));
  return art;
}

#define GEMMA4 \
  "{\"generation\":{\"kind\":\"token_generation\",\"exports\":{\"embed_tokens\":\"embed\"," \
  "\"prefill_tokens\":\"prefill_tokens\",\"decode_tokens\":\"decode_tokens\"," \
  "\"create_kv_cache\":\"create_tir_paged_kv_cache\"},\"adapters\":{\"audio\":\"audio_embed\"}}}"

static void gemma4_lib(fake *f) {
  fake_init(f, "gemma4.wasm");
  vm(f, "embed", 2, "input_ids,packed_params");
  vm(f, "prefill_tokens", 5, "input_embeds,token_ids,modality_ids,paged_kv_cache,packed_params");
  vm(f, "decode_tokens", 3, "token_ids,paged_kv_cache,packed_params");
  vm(f, "create_tir_paged_kv_cache", 5, NULL);
  vm(f, "audio_embed", 2, "samples,packed_params");
}

typedef struct collected {
  size_t n;
  mpk_error e[32];
} collected;

static void collect(void *ctx, const mpk_error *e) {
  collected *c = ctx;
  if (c->n < 32) c->e[c->n] = *e;
  c->n++;
}

static void test_functions_match(void **state) {
  (void)state;
  fake f;
  gemma4_lib(&f);
  mpk_mlc_artifact *art = artifact(GEMMA4);
  mpk_error err;
  mpk_error_clear(&err);
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), 0);
  assert_int_equal(err.code, 0);
  collected c = {0};
  assert_int_equal(mpk_mlc_check_functions_each(&f.lib, art, collect, &c), 0);
  assert_int_equal(c.n, 0);
  /* VM TIR functions are entrypoints too. */
  f.fns[1].kind = MPK_MLC_FUNCTION_VM_TIR;
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, NULL), 0);
  assert_int_equal(mpk_mlc_check_functions(NULL, art, NULL), MPK_EINVAL);
  assert_int_equal(mpk_mlc_check_functions(&f.lib, NULL, NULL), MPK_EINVAL);
  mpk_mlc_artifact_free(art);
}

static void test_function_missing(void **state) {
  (void)state;
  fake f;
  gemma4_lib(&f);
  f.lib.n_functions = 4; /* no audio_embed */
  strcpy(f.names[2], "decode"); /* decode_tokens missing: the library has "decode" */
  mpk_mlc_artifact *art = artifact(GEMMA4);
  mpk_error err;
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), MPK_EMISMATCH);
  assert_string_equal(err.file, "gemma4.wasm");
  assert_string_equal(err.pointer, "/artifact/programs/generation/exports/decode_tokens");
  assert_non_null(strstr(err.message, "role decode_tokens names \"decode_tokens\", which is not a VM function"));
  assert_non_null(strstr(err.message, "it has: embed, prefill_tokens, decode, create_tir_paged_kv_cache)"));
  collected c = {0};
  assert_int_equal(mpk_mlc_check_functions_each(&f.lib, art, collect, &c), 2);
  assert_int_equal(c.n, 2);
  assert_string_equal(c.e[1].pointer, "/artifact/programs/generation/adapters/audio");
  assert_non_null(strstr(c.e[1].message, "adapter audio names \"audio_embed\", which is not a VM function"));
  mpk_mlc_artifact_free(art);
}

static void test_function_wrong_arity(void **state) {
  (void)state;
  fake f;
  gemma4_lib(&f);
  f.fns[1].num_args = 3; /* prefill_tokens as an embeddings prefill */
  f.fns[1].n_param_names = 3;
  f.pptr[1][1] = "paged_kv_cache";
  f.pptr[1][2] = "packed_params";
  mpk_mlc_artifact *art = artifact(GEMMA4);
  mpk_error err;
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), MPK_EMISMATCH);
  assert_string_equal(err.pointer, "/artifact/programs/generation/exports/prefill_tokens");
  assert_non_null(strstr(err.message, "role prefill_tokens names \"prefill_tokens\", which takes 3 arguments "
                                      "(input_embeds, paged_kv_cache, packed_params); the role takes 5 "
                                      "(embeddings, token IDs, modality IDs, the KV cache, the parameters)"));
  /* An adapter taking 3. */
  gemma4_lib(&f);
  f.fns[4].num_args = 3;
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), MPK_EMISMATCH);
  assert_string_equal(err.pointer, "/artifact/programs/generation/adapters/audio");
  assert_non_null(strstr(err.message, "which takes 3 arguments"));
  assert_non_null(strstr(err.message, "the adapter takes 2"));
  /* The older 4-argument KV-cache creator (gemma-2b-it-q4f16_1-iphone.tar): WebLLM passes 5. */
  gemma4_lib(&f);
  f.fns[3].num_args = 4;
  f.fns[3].n_param_names = 4;
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), MPK_EMISMATCH);
  assert_string_equal(err.pointer, "/artifact/programs/generation/exports/create_kv_cache");
  assert_non_null(strstr(err.message, "takes 4 arguments (p0, p1, p2, p3); the role takes 5"));
  mpk_mlc_artifact_free(art);
}

static void test_function_packed(void **state) {
  (void)state;
  fake f;
  gemma4_lib(&f);
  f.fns[0].kind = MPK_MLC_FUNCTION_PACKED; /* a kernel named "embed" is no entrypoint */
  f.fns[0].num_args = -2;
  mpk_mlc_artifact *art = artifact(GEMMA4);
  mpk_error err;
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), MPK_EMISMATCH);
  assert_string_equal(err.pointer, "/artifact/programs/generation/exports/embed_tokens");
  assert_non_null(strstr(err.message, "a packed function of the library"));
  assert_non_null(strstr(err.message, "not a VM function"));
  /* A packed entry and a VM function of the same name: the VM function is found. */
  vm(&f, "embed", 2, NULL);
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, NULL), 0);
  mpk_mlc_artifact_free(art);
}

static void test_unknown_role_and_hybrid(void **state) {
  (void)state;
  fake f;
  gemma4_lib(&f);
  vm(&f, "prefill_prompt", 5, NULL);
  mpk_mlc_artifact *art = artifact(
      "{\"generation\":{\"kind\":\"token_generation\",\"exports\":{\"embed_tokens\":\"embed\","
      "\"prefill_prompt\":\"prefill_prompt\",\"decode_tokens\":\"decode_tokens\","
      "\"create_kv_cache\":\"create_tir_paged_kv_cache\"}}}");
  mpk_error err;
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), MPK_EMISMATCH);
  assert_string_equal(err.pointer, "/artifact/programs/generation/exports/prefill_prompt");
  assert_non_null(strstr(err.message, "unknown role \"prefill_prompt\""));
  assert_non_null(strstr(err.message, "embed_tokens, prefill_tokens, decode_tokens"));
  mpk_mlc_artifact_free(art);
  /* "adapter" names the adapters' rule, not an export role. */
  art = artifact("{\"p\":{\"kind\":\"token_generation\",\"exports\":{\"adapter\":\"embed\"}}}");
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "unknown role \"adapter\""));
  mpk_mlc_artifact_free(art);

  /* Hybrid (create_rnn_state exported): WebLLM passes the RNN state after the KV cache. */
  fake_init(&f, "qwen.wasm");
  vm(&f, "embed", 2, NULL);
  vm(&f, "prefill", 4, "input_embed,paged_kv_cache,rnn_state,packed_params");
  vm(&f, "decode", 4, NULL);
  vm(&f, "create_tir_paged_kv_cache", 5, NULL);
  vm(&f, "create_rnn_state", 2, NULL);
  art = artifact("{\"generation\":{\"kind\":\"token_generation\",\"exports\":{\"embed_tokens\":\"embed\","
                 "\"prefill_embeds\":\"prefill\",\"decode_embeds\":\"decode\","
                 "\"create_kv_cache\":\"create_tir_paged_kv_cache\",\"create_rnn_state\":\"create_rnn_state\"}}}");
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), 0);
  f.fns[2].num_args = 3;
  assert_int_equal(mpk_mlc_check_functions(&f.lib, art, &err), MPK_EMISMATCH);
  assert_string_equal(err.pointer, "/artifact/programs/generation/exports/decode_embeds");
  assert_non_null(strstr(err.message, "the role takes 4"));
  assert_non_null(strstr(err.message, "the RNN state after the KV cache"));
  mpk_mlc_artifact_free(art);
}

/* Program and role names are escaped in the pointer (RFC 6901). */
static void test_pointer_escaped(void **state) {
  (void)state;
  fake f;
  fake_init(&f, "x.so");
  mpk_mlc_artifact *art = artifact("{\"a/b~c\":{\"kind\":\"k\",\"exports\":{\"embed_tokens\":\"embed\"},"
                                   "\"adapters\":{\"x/y\":\"f\"}}}");
  collected c = {0};
  assert_int_equal(mpk_mlc_check_functions_each(&f.lib, art, collect, &c), 2);
  assert_string_equal(c.e[0].pointer, "/artifact/programs/a~1b~0c/exports/embed_tokens");
  assert_string_equal(c.e[1].pointer, "/artifact/programs/a~1b~0c/adapters/x~1y");
  assert_non_null(strstr(c.e[0].message, "(it has: none)"));
  mpk_mlc_artifact_free(art);
}

/* More mismatches than MPK_LIST_MAX: the first ones, then one line with the count. */
static void test_many_mismatches(void **state) {
  (void)state;
  fake f;
  fake_init(&f, "x.so");
  char programs[4096];
  size_t o = 0;
  o += (size_t)snprintf(programs + o, sizeof programs - o, "{");
  for (int i = 0; i < 15; i++)
    o += (size_t)snprintf(programs + o, sizeof programs - o, "%s\"p%02d\":{\"kind\":\"k\",\"exports\":{\"embed_tokens\":\"e\"}}",
                          i ? "," : "", i);
  snprintf(programs + o, sizeof programs - o, "}");
  mpk_mlc_artifact *art = artifact(programs);
  collected c = {0};
  assert_int_equal(mpk_mlc_check_functions_each(&f.lib, art, collect, &c), 15);
  assert_int_equal(c.n, MPK_LIST_MAX + 1);
  assert_non_null(strstr(c.e[MPK_LIST_MAX].message, "15 roles and adapters in all"));
  mpk_mlc_artifact_free(art);
}

/* ------------------------------------------------------------------ every conformance artifact */

typedef struct named {
  const char *program, *section, *key, *fname;
  int want; /* -1: unknown role */
} named;

/* A role's function, the arity it must have in its program (the rules restated here, not read
   from roles.c: the test pins them). */
static int want_for(const mpk_mlc_program *p, const char *section, const char *key) {
  if (strcmp(section, "adapters") == 0) return 2;
  bool hybrid = mpk_mlc_entry_get(p->exports, p->n_exports, "create_rnn_state") != NULL;
  static const struct {
    const char *role;
    int n, state;
  } t[] = {{"embed_tokens", 2, 0},  {"prefill_tokens", 5, 1},  {"decode_tokens", 3, 1},
           {"prefill_embeds", 3, 1}, {"decode_embeds", 3, 1},  {"create_kv_cache", 5, 0},
           {"create_rnn_state", 2, 0}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(t[i].role, key) == 0) return t[i].n + (t[i].state && hybrid ? 1 : 0);
  return -1;
}

static size_t names_of(const mpk_mlc_artifact *art, named *out, size_t cap) {
  size_t n = 0;
  for (size_t p = 0; p < art->n_programs; p++) {
    const mpk_mlc_program *pr = &art->programs[p];
    for (size_t i = 0; i < pr->n_exports && n < cap; i++)
      out[n++] = (named){pr->name, "exports", pr->exports[i].key, pr->exports[i].value,
                         want_for(pr, "exports", pr->exports[i].key)};
    for (size_t i = 0; i < pr->n_adapters && n < cap; i++)
      out[n++] = (named){pr->name, "adapters", pr->adapters[i].key, pr->adapters[i].value, 2};
  }
  return n;
}

/* A library holding every named function with its wanted arity, but for `skip` (index into
   names; -1 none) which is left out (mode 0), given one argument more (1) or made packed (2).
   Returns false when two roles name one function with different arities (it cannot satisfy both). */
static bool build_for(fake *f, const named *nm, size_t n, long skip, int mode) {
  fake_init(f, "conf.wasm");
  bool consistent = true;
  for (size_t i = 0; i < n; i++) {
    if (nm[i].want < 0) continue;
    const mpk_mlc_function *have = mpk_mlc_library_function(&f->lib, nm[i].fname);
    bool same_fn_as_skip = skip >= 0 && strcmp(nm[i].fname, nm[skip].fname) == 0;
    if (same_fn_as_skip) continue;
    if (have) {
      if (have->num_args != nm[i].want) consistent = false;
      continue;
    }
    vm(f, nm[i].fname, nm[i].want, NULL);
  }
  if (skip >= 0 && nm[skip].want >= 0) {
    if (mode == 1) vm(f, nm[skip].fname, nm[skip].want + 1, NULL);
    if (mode == 2) fake_add(f, nm[skip].fname, MPK_MLC_FUNCTION_PACKED, 0, NULL);
  }
  return consistent;
}

static bool has_pointer(const collected *c, const named *nm) {
  char ptr[512];
  snprintf(ptr, sizeof ptr, "/artifact/programs/%s/%s/%s", nm->program, nm->section, nm->key);
  for (size_t i = 0; i < c->n && i < 32; i++)
    if (strcmp(c->e[i].pointer, ptr) == 0) return true;
  return false;
}

/* Returns 1 when the case's artifact names roles and was run. */
static int run_artifact_case(const char *name, const json_t *value) {
  char *text = tu_dumps(value);
  mpk_mlc_artifact *art = NULL;
  int ran = 0;
  if (mpk_mlc_artifact_parse(text, strlen(text), NULL, &art, NULL) == 0) {
    named nm[64];
    size_t n = names_of(art, nm, 64);
    bool unknown = false;
    for (size_t i = 0; i < n; i++) unknown |= nm[i].want < 0;
    if (n > 0) {
      ran = 1;
      fake f;
      bool consistent = build_for(&f, nm, n, -1, 0);
      int rc = mpk_mlc_check_functions(&f.lib, art, NULL);
      if (!unknown && consistent && rc != 0) fail_msg("%s: every function there, refused", name);
      if ((unknown || !consistent) && rc != MPK_EMISMATCH) fail_msg("%s: unknown role or conflict, bound", name);
      /* Each function missing, with one argument too many, or packed: refused, naming its role. */
      for (size_t k = 0; k < n; k++) {
        if (nm[k].want < 0) continue;
        for (int mode = 0; mode < 3; mode++) {
          build_for(&f, nm, n, (long)k, mode);
          collected c = {0};
          size_t bad = mpk_mlc_check_functions_each(&f.lib, art, collect, &c);
          if (bad == 0 || !has_pointer(&c, &nm[k]))
            fail_msg("%s: %s %s -> %s (mode %d) not reported", name, nm[k].section, nm[k].key, nm[k].fname, mode);
          assert_int_equal(mpk_mlc_check_functions(&f.lib, art, NULL), MPK_EMISMATCH);
        }
      }
    }
    mpk_mlc_artifact_free(art);
  }
  free(text);
  return ran;
}

static void test_conformance_artifacts(void **state) {
  (void)state;
  size_t ran = 0, i;
  json_t *root, *cases = tu_webllm_cases("resolve_chat_completion.json", &root), *c;
  json_array_foreach(cases, i, c) {
    ran += (size_t)run_artifact_case(json_string_value(json_object_get(c, "name")),
                                     json_object_get(c, "compiled_program"));
  }
  json_decref(root);
  size_t ran_resolve = ran;
  cases = tu_webllm_cases("compiled_program_parse.json", &root);
  json_array_foreach(cases, i, c) {
    if (json_object_get(c, "expected_error")) continue;
    ran += (size_t)run_artifact_case(json_string_value(json_object_get(c, "name")), json_object_get(c, "input"));
  }
  json_decref(root);
  assert_int_equal(ran_resolve, 35); /* every resolve case names roles */
  assert_int_equal(ran, 35 + 8);     /* and every valid parse case */
}

/* ------------------------------------------------------------------ the legacy ABI */

static void test_legacy_phi3(void **state) {
  (void)state;
  fake f;
  phi3(&f);
  mpk_mlc_legacy_abi abi;
  mpk_error err;
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), 0);
  assert_true(abi.chat);
  assert_true(abi.batch);
  assert_false(abi.embedding);
  assert_false(abi.image_embed);
  assert_string_equal(abi.state_creator, "create_tir_paged_kv_cache");
  assert_ptr_equal(abi.summary, abi.summary_buf);
  assert_string_equal(abi.summary, "chat: embed, prefill + decode, create_tir_paged_kv_cache (kv_state_kind "
                                   "kv_cache); batch_prefill + batch_decode + batch_verify too");
  /* Without prefill/decode WebLLM takes the batch pair. */
  strcpy(f.names[7], "prefill_x");
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), 0);
  assert_true(abi.chat);
  assert_non_null(strstr(abi.summary, "chat: embed, batch_prefill + batch_decode"));
  /* ... and a batch_prefill taking 3 is refused, naming its parameters. */
  f.fns[1].num_args = 3;
  f.fns[1].n_param_names = 3;
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), MPK_EMISMATCH);
  assert_false(abi.chat);
  assert_false(abi.batch);
  assert_string_equal(err.file, "Phi-3.wasm");
  assert_non_null(strstr(err.message, "batch_prefill takes 3 arguments (input_embeds, logit_positions, "
                                      "paged_kv_cache), WebLLM 0.2.86 passes 4"));
  assert_non_null(strstr(abi.summary, "none WebLLM 0.2.86 can run without a manifest"));
}

static void test_legacy_missing(void **state) {
  (void)state;
  fake f;
  phi3(&f);
  strcpy(f.names[6], "embed_x"); /* no embed */
  mpk_mlc_legacy_abi abi;
  mpk_error err;
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), MPK_EMISMATCH);
  assert_false(abi.chat);
  assert_true(abi.batch);
  assert_non_null(strstr(err.message, "embed is missing"));
  /* A packed "decode": not found by the VM, so WebLLM takes the batch pair. */
  phi3(&f);
  f.fns[0].kind = MPK_MLC_FUNCTION_PACKED;
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), 0);
  assert_non_null(strstr(abi.summary, "batch_prefill + batch_decode"));
  /* No creator. */
  phi3(&f);
  strcpy(f.names[2], "create_something");
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), MPK_EMISMATCH);
  assert_null(abi.state_creator);
  assert_non_null(strstr(err.message, "create_tir_paged_kv_cache is missing"));
  /* Nothing at all. */
  fake_init(&f, "empty.so");
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "neither prefill + decode nor batch_prefill + batch_decode"));
  assert_int_equal(mpk_mlc_legacy_abi_of(NULL, &abi, NULL), MPK_EINVAL);
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, NULL, NULL), MPK_EINVAL);
}

/* gemma-2b-it-q4f16_1-iphone.tar: everything by name, but its creator takes 4 (no
   support_sliding_window); WebLLM 0.2.86 passes 5 and the VM refuses the call. */
static void test_legacy_old_creator(void **state) {
  (void)state;
  fake f;
  phi3(&f);
  f.lib.path = "gemma-2b-it-q4f16_1-iphone.tar";
  f.fns[2].num_args = 4;
  f.fns[2].n_param_names = 4;
  mpk_mlc_legacy_abi abi;
  mpk_error err;
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), MPK_EMISMATCH);
  assert_false(abi.chat);
  assert_true(abi.batch);
  assert_string_equal(abi.state_creator, "create_tir_paged_kv_cache");
  if (!strstr(err.message, "create_tir_paged_kv_cache takes 4 arguments (max_batch_size_, "
                                      "max_total_seq_len_, prefill_chunk_size_, page_size_), WebLLM 0.2.86 passes 5"))
    fail_msg("%s", err.message);
  assert_non_null(strstr(abi.summary, "none WebLLM 0.2.86 can run"));
}

/* snowflake-arctic-embed-s (v0_2_80): prefill(inputs, attention_mask, packed_params), no decode. */
static void test_legacy_embedding(void **state) {
  (void)state;
  fake f;
  fake_init(&f, "snowflake.wasm");
  vm(&f, "_metadata", 0, NULL);
  vm(&f, "argsort_probs", 1, NULL);
  vm(&f, "prefill", 3, "inputs,attention_mask,packed_params");
  vm(&f, "sample_with_top_p", 5, NULL);
  vm(&f, "softmax_with_temperature", 2, NULL);
  mpk_mlc_legacy_abi abi;
  mpk_error err;
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), 0);
  assert_false(abi.chat);
  assert_false(abi.batch);
  assert_true(abi.embedding);
  assert_null(abi.state_creator);
  assert_string_equal(abi.summary, "embedding: prefill (input ids, attention mask, params), no decode");
  /* A prefill taking 2 is neither. */
  f.fns[2].num_args = 2;
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), MPK_EMISMATCH);
  assert_false(abi.embedding);
  assert_non_null(strstr(abi.summary, "not an embedding model either (prefill takes 2 arguments"));
  assert_non_null(strstr(err.message, "not an embedding model either (prefill takes 2 arguments, WebLLM's embedding "
                                      "pipeline passes 3)"));
}

static void test_legacy_kinds(void **state) {
  (void)state;
  fake f;
  mpk_mlc_metadata md = {0};
  mpk_mlc_legacy_abi abi;
  mpk_error err;
  /* rnn_state: the single pair and create_rnn_state(2); no KV cache needed. */
  fake_init(&f, "rwkv.wasm");
  f.lib.metadata = &md;
  md.kv_state_kind = "rnn_state";
  vm(&f, "embed", 2, NULL);
  vm(&f, "prefill", 3, NULL);
  vm(&f, "decode", 3, NULL);
  vm(&f, "create_rnn_state", 2, NULL);
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), 0);
  assert_true(abi.chat);
  assert_string_equal(abi.state_creator, "create_rnn_state");
  assert_non_null(strstr(abi.summary, "chat: embed, prefill + decode, create_rnn_state (kv_state_kind rnn_state)"));
  /* hybrid: the batch pair with both states, and both creators. */
  fake_init(&f, "qwen35.wasm");
  f.lib.metadata = &md;
  md.kv_state_kind = "hybrid";
  vm(&f, "embed", 2, NULL);
  vm(&f, "prefill", 3, NULL);
  vm(&f, "decode", 3, NULL);
  vm(&f, "batch_prefill", 5, NULL);
  vm(&f, "batch_decode", 4, NULL);
  vm(&f, "create_tir_paged_kv_cache", 5, NULL);
  vm(&f, "create_rnn_state", 2, NULL);
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), 0);
  assert_true(abi.chat);
  assert_true(abi.batch);
  assert_non_null(strstr(abi.summary, "batch_prefill + batch_decode, create_tir_paged_kv_cache + create_rnn_state"));
  f.fns[3].num_args = 4; /* a kv-cache-only batch_prefill */
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "batch_prefill takes 4 arguments"));
  assert_non_null(strstr(err.message, "passes 5"));
  /* none, and an unknown kind: WebLLM's chat pipeline refuses both. */
  phi3(&f);
  f.lib.metadata = &md;
  md.kv_state_kind = "none";
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "kv_state_kind is \"none\""));
  md.kv_state_kind = "paged";
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "\"paged\" is not one WebLLM 0.2.86 knows"));
}

static void test_legacy_image_embed(void **state) {
  (void)state;
  fake f;
  phi3(&f);
  vm(&f, "image_embed", 6, "pixel_values,resize_h,resize_w,crop_h,crop_w,packed_params");
  mpk_mlc_legacy_abi abi;
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, NULL), 0);
  assert_true(abi.image_embed);
  assert_non_null(strstr(abi.summary, "; image_embed (6 arguments)"));
  /* LLaVA's image_embed(pixel_values, params): only reachable through a manifest adapter. */
  f.fns[f.lib.n_functions - 1].num_args = 2;
  assert_int_equal(mpk_mlc_legacy_abi_of(&f.lib, &abi, NULL), 0);
  assert_false(abi.image_embed);
  assert_non_null(strstr(abi.summary, "image_embed takes 2 arguments, WebLLM 0.2.86's path without a manifest "
                                      "passes 6: images only through a manifest adapter"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_role_table),          cmocka_unit_test(test_functions_match),
      cmocka_unit_test(test_function_missing),    cmocka_unit_test(test_function_wrong_arity),
      cmocka_unit_test(test_function_packed),     cmocka_unit_test(test_unknown_role_and_hybrid),
      cmocka_unit_test(test_pointer_escaped),     cmocka_unit_test(test_many_mismatches),
      cmocka_unit_test(test_conformance_artifacts), cmocka_unit_test(test_legacy_phi3),
      cmocka_unit_test(test_legacy_missing),      cmocka_unit_test(test_legacy_old_creator),
      cmocka_unit_test(test_legacy_embedding),    cmocka_unit_test(test_legacy_kinds),
      cmocka_unit_test(test_legacy_image_embed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
