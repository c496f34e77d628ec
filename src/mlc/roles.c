/* The role table (spec 000, "Each key in exports is a role"), a library's VM functions checked
   against an artifact's roles and adapters, and the legacy ABI: the functions WebLLM 0.2.86 looks
   up in a library without a manifest (docs/mlc-library.md, "Roles and arities", "The legacy ABI").

   Every arity is the number of arguments the consumer passes: TVM's Relax VM refuses a call with
   any other count (InvokeBytecode: "Invoking function F requires N inputs but only M inputs are
   provided"; a VM TIR function: "Function F expects N arguments"), so a function found by name
   with another arity fails at its first call, not at load. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mlc/mlc.h"

/* ------------------------------------------------------------------ the role table */

typedef struct role_rule {
  const char *role;
  int nargs;        /* with the KV cache alone (spec 000's table) */
  bool takes_state; /* a generation role: one more argument, the RNN state, in a hybrid program */
  bool is_export;   /* a key of `exports` (the adapter rule is not) */
  const char *args; /* what the consumer passes, in order */
} role_rule;

/* Sources: spec 000's table ("The four functions in the table also take the KV cache and the
   parameters. embed_tokens takes token IDs and the parameters. create_kv_cache takes only its size
   arguments"), and how WebLLM 0.2.86 calls each (lib/index.js: artifactPrefillAndForward,
   artifactDecodeAndForward, getArtifactTextEmbeddings, the createKVCache and createRNNState calls
   of LLMChatPipeline's constructor, getArtifactAudioEmbeddings / getArtifactImageEmbeddings). */
static const role_rule ROLES[] = {
    {"embed_tokens", 2, false, true, "token IDs, the parameters"},
    {"prefill_tokens", 5, true, true, "embeddings, token IDs, modality IDs, the KV cache, the parameters"},
    {"decode_tokens", 3, true, true, "token IDs, the KV cache, the parameters"},
    {"prefill_embeds", 3, true, true, "embeddings, the KV cache, the parameters"},
    {"decode_embeds", 3, true, true, "embeddings, the KV cache, the parameters"},
    {"create_kv_cache", 5, false, true,
     "max_num_sequence, max_total_sequence_length, prefill_chunk_size, page_size, support_sliding_window"},
    {"create_rnn_state", 2, false, true, "max_num_sequence, max_history_size"},
    {"adapter", 2, false, false, "the decoded input (audio samples or image pixels), the parameters"},
};
#define N_ROLES (sizeof ROLES / sizeof ROLES[0])
#define KNOWN_EXPORT_ROLES \
  "embed_tokens, prefill_tokens, decode_tokens, prefill_embeds, decode_embeds, create_kv_cache, create_rnn_state"

static const role_rule *find_rule(const char *role) {
  for (size_t i = 0; i < N_ROLES; i++)
    if (strcmp(ROLES[i].role, role) == 0) return &ROLES[i];
  return NULL;
}

int mpk_mlc_role_arity(const char *role, int *min_args, int *max_args, mpk_error *err) {
  if (!role || !min_args || !max_args) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  const role_rule *r = find_rule(role);
  if (!r)
    return mpk_fail(err, MPK_ENOTFOUND, NULL, NULL, "unknown role \"%s\": the roles are " KNOWN_EXPORT_ROLES
                    ", and \"adapter\" for an adapter", role);
  *min_args = *max_args = r->nargs;
  return 0;
}

/* ------------------------------------------------------------------ bounded text */

typedef struct text {
  char *buf;
  size_t size, len;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
  if (t->len + 1 >= t->size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  t->len = t->len + (size_t)n < t->size ? t->len + (size_t)n : t->size - 1;
}

/* "(a, b, c)": a function's parameter names as its table lists them. */
static void put_params(text *t, const mpk_mlc_function *f) {
  put(t, "(");
  for (size_t i = 0; i < f->n_param_names && t->len + 1 < t->size; i++) /* bounded by the buffer */
    put(t, "%s%s", i ? ", " : "", f->param_names && f->param_names[i] ? f->param_names[i] : "?");
  put(t, ")");
}

static bool is_vm(const mpk_mlc_function *f) {
  return f && (f->kind == MPK_MLC_FUNCTION_VM || f->kind == MPK_MLC_FUNCTION_VM_TIR);
}

/* The VM functions a library has, for a message: the first few, then how many more. */
#define LISTED_FUNCTIONS 12
static void put_vm_functions(text *t, const mpk_mlc_library *lib) {
  size_t n = 0;
  for (size_t i = 0; i < lib->n_functions; i++) {
    if (!is_vm(&lib->functions[i]) || !lib->functions[i].name) continue;
    if (n < LISTED_FUNCTIONS) put(t, "%s%s", n ? ", " : "", lib->functions[i].name);
    n++;
  }
  if (n == 0) put(t, "none");
  else if (n > LISTED_FUNCTIONS) put(t, " and %zu more", n - LISTED_FUNCTIONS);
}

/* The entry a role's function name finds: a VM function, or NULL (absent or only packed). */
static const mpk_mlc_function *find(const mpk_mlc_library *lib, const char *name, const mpk_mlc_function **packed) {
  if (packed) *packed = NULL;
  for (size_t i = 0; i < lib->n_functions; i++) {
    const mpk_mlc_function *f = &lib->functions[i];
    if (!f->name || strcmp(f->name, name) != 0) continue;
    if (is_vm(f)) return f;
    if (packed && !*packed) *packed = f;
  }
  return NULL;
}

/* ------------------------------------------------------------------ functions against an artifact */

static bool program_is_hybrid(const mpk_mlc_program *p) {
  return mpk_mlc_entry_get(p->exports, p->n_exports, "create_rnn_state") != NULL;
}

/* One role (or adapter) bound to `fname` checked; a problem through fn. Returns 1 when it is one. */
static size_t check_one(const mpk_mlc_library *lib, const mpk_mlc_program *prog, const char *section, const char *key,
                        const char *fname, const role_rule *rule, mpk_tally *tally, mpk_problem_fn fn, void *ctx) {
  mpk_path ptr;
  mpk_path_init(&ptr);
  mpk_path_push_key(&ptr, "artifact");
  mpk_path_push_key(&ptr, "programs");
  mpk_path_push_key(&ptr, prog->name ? prog->name : "");
  mpk_path_push_key(&ptr, section);
  mpk_path_push_key(&ptr, key);
  const char *what = rule && !rule->is_export ? "adapter" : "role";
  char msg[sizeof ((mpk_error *)0)->message];
  text t = {msg, sizeof msg, 0};
  msg[0] = '\0';
  if (!rule) {
    put(&t, "unknown role \"%s\" (naming \"%s\"): the roles are " KNOWN_EXPORT_ROLES, key, fname ? fname : "");
  } else {
    int want = rule->nargs + (rule->takes_state && program_is_hybrid(prog) ? 1 : 0);
    const mpk_mlc_function *packed = NULL;
    const mpk_mlc_function *f = fname ? find(lib, fname, &packed) : NULL;
    if (!f && packed) {
      put(&t, "%s %s names \"%s\", a packed function of the library (a kernel or a runtime global), not a VM "
              "function: a runtime cannot call it as an entrypoint (the %s takes %d arguments: %s)",
          what, key, fname, what, want, rule->args);
    } else if (!f) {
      put(&t, "%s %s names \"%s\", which is not a VM function of the library (it has: ", what, key,
          fname ? fname : "");
      put_vm_functions(&t, lib);
      put(&t, ")");
    } else if (f->num_args != want) {
      put(&t, "%s %s names \"%s\", which takes %lld arguments ", what, key, fname, (long long)f->num_args);
      put_params(&t, f);
      put(&t, "; the %s takes %d (%s%s)", what, want, rule->args,
          want != rule->nargs ? ", the RNN state after the KV cache: the program exports create_rnn_state" : "");
    } else {
      return 0;
    }
  }
  if (!mpk_tally_keep(tally)) return 1;
  mpk_error e;
  mpk_error_clear(&e);
  mpk_fail(&e, MPK_EMISMATCH, lib->path, ptr.buf, "%s", msg);
  fn(ctx, &e);
  return 1;
}

size_t mpk_mlc_check_functions_each(const mpk_mlc_library *lib, const mpk_mlc_artifact *art, mpk_problem_fn fn,
                                    void *ctx) {
  size_t n = 0;
  mpk_tally tally = {0};
  const role_rule *adapter = find_rule("adapter");
  for (size_t p = 0; p < art->n_programs; p++) {
    const mpk_mlc_program *prog = &art->programs[p];
    for (size_t i = 0; i < prog->n_exports; i++) {
      const role_rule *r = find_rule(prog->exports[i].key);
      if (r && !r->is_export) r = NULL;
      n += check_one(lib, prog, "exports", prog->exports[i].key, prog->exports[i].value, r, &tally, fn, ctx);
    }
    for (size_t i = 0; i < prog->n_adapters; i++)
      n += check_one(lib, prog, "adapters", prog->adapters[i].key, prog->adapters[i].value, adapter, &tally, fn, ctx);
  }
  if (mpk_tally_over(&tally)) {
    mpk_error e;
    mpk_error_clear(&e);
    mpk_fail(&e, MPK_EMISMATCH, lib->path, "/artifact/programs",
             "%zu roles and adapters in all do not match the library's functions (the first %d are listed)",
             tally.count, MPK_LIST_MAX);
    fn(ctx, &e);
  }
  return n;
}

typedef struct first_problem {
  mpk_error *err;
  bool seen;
} first_problem;

static void keep_first(void *ctx, const mpk_error *e) {
  first_problem *fp = ctx;
  if (fp->seen) return;
  fp->seen = true;
  if (fp->err) *fp->err = *e;
}

int mpk_mlc_check_functions(const mpk_mlc_library *lib, const mpk_mlc_artifact *art, mpk_error *err) {
  if (!lib || !art) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  first_problem fp = {err, false};
  mpk_mlc_check_functions_each(lib, art, keep_first, &fp);
  return fp.seen ? MPK_EMISMATCH : 0;
}

/* ------------------------------------------------------------------ the legacy ABI */

/* How WebLLM 0.2.86 calls each function on its path without a manifest (lib/index.js:
   LLMChatPipeline's constructor, resolveModelABI, invokePrefill, invokeDecode, getTokensEmbeddings,
   getImageEmbeddings; EmbeddingPipeline's constructor and its prefill call). */
#define KV_CREATOR "create_tir_paged_kv_cache"
#define RNN_CREATOR "create_rnn_state"
enum {
  LEGACY_EMBED_ARGS = 2,        /* embed(token ids, params) */
  LEGACY_PREFILL_ARGS = 3,      /* prefill(embeddings, state, params) */
  LEGACY_DECODE_ARGS = 3,       /* decode(embeddings, state, params) */
  LEGACY_BATCH_PREFILL_ARGS = 4,/* batch_prefill(embeddings, logit positions, state, params) */
  LEGACY_BATCH_DECODE_ARGS = 3, /* batch_decode(embeddings, state, params) */
  LEGACY_KV_CREATOR_ARGS = 5,   /* create_tir_paged_kv_cache(max_num_sequence, max_total_seq_len,
                                   prefill_chunk_size, page_size, support_sliding_window) */
  LEGACY_RNN_CREATOR_ARGS = 2,  /* create_rnn_state(max_num_sequence, max_history_size) */
  LEGACY_IMAGE_EMBED_ARGS = 6,  /* image_embed(pixels, resize h, resize w, crop h, crop w, params) */
  LEGACY_EMBEDDING_PREFILL_ARGS = 3 /* EmbeddingPipeline: prefill(input ids, attention mask, params) */
};

typedef struct legacy_ctx {
  const mpk_mlc_library *lib;
  text why; /* why WebLLM's chat pipeline cannot run it */
} legacy_ctx;

/* `name` must be a VM function taking `want` arguments; otherwise the reason goes into c->why. */
static bool need(legacy_ctx *c, const char *name, int want, const char *args) {
  const mpk_mlc_function *packed = NULL;
  const mpk_mlc_function *f = find(c->lib, name, &packed);
  const char *sep = c->why.len ? "; " : "";
  if (!f) {
    put(&c->why, "%s%s %s", sep, name, packed ? "is only a packed function, not a VM function" : "is missing");
    return false;
  }
  if (f->num_args != want) {
    put(&c->why, "%s%s takes %lld arguments ", sep, name, (long long)f->num_args);
    put_params(&c->why, f);
    put(&c->why, ", WebLLM 0.2.86 passes %d (%s)", want, args);
    return false;
  }
  return true;
}

static bool has_vm(const mpk_mlc_library *lib, const char *name) { return find(lib, name, NULL) != NULL; }

int mpk_mlc_legacy_abi_of(const mpk_mlc_library *lib, mpk_mlc_legacy_abi *out, mpk_error *err) {
  if (!lib || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = (mpk_mlc_legacy_abi){0};
  char whybuf[sizeof out->summary_buf];
  whybuf[0] = '\0';
  legacy_ctx c = {lib, {whybuf, sizeof whybuf, 0}};
  text sum = {out->summary_buf, sizeof out->summary_buf, 0};
  out->summary_buf[0] = '\0';
  out->summary = out->summary_buf;

  static const char *const creators[] = {KV_CREATOR, "create_flashinfer_paged_kv_cache", RNN_CREATOR};
  for (size_t i = 0; i < sizeof creators / sizeof creators[0] && !out->state_creator; i++)
    if (has_vm(lib, creators[i])) out->state_creator = creators[i];

  /* kv_state_kind as LLMChatPipeline reads it from _metadata (absent: kv_cache). */
  const char *kind_text = lib->metadata ? lib->metadata->kv_state_kind : NULL;
  mpk_mlc_kv_state_kind kind = MPK_MLC_KV_CACHE;
  bool kind_ok = mpk_mlc_kv_state_kind_parse(kind_text, &kind, NULL) == 0;
  bool hybrid = kind_ok && kind == MPK_MLC_KV_HYBRID;
  int bp_args = LEGACY_BATCH_PREFILL_ARGS + (hybrid ? 1 : 0), bd_args = LEGACY_BATCH_DECODE_ARGS + (hybrid ? 1 : 0);
  const char *bp_what = hybrid ? "embeddings, logit positions, KV cache, RNN state, params"
                               : "embeddings, logit positions, state, params";
  const char *bd_what = hybrid ? "embeddings, KV cache, RNN state, params" : "embeddings, state, params";

  /* The pairs by name, as resolveModelABI's availability sees them (arity is checked after). */
  bool single_named = has_vm(lib, "prefill") && has_vm(lib, "decode");
  bool batch_named = has_vm(lib, "batch_prefill") && has_vm(lib, "batch_decode");
  {
    const mpk_mlc_function *bp = find(lib, "batch_prefill", NULL), *bd = find(lib, "batch_decode", NULL);
    out->batch = bp && bd && bp->num_args == bp_args && bd->num_args == bd_args;
  }

  /* The chat pipeline: WebLLM picks the pair, then looks the functions up and calls them. */
  const char *prefill = NULL, *decode = NULL;
  bool chat = kind_ok && kind != MPK_MLC_KV_NONE;
  if (!kind_ok) {
    put(&c.why, "_metadata.kv_state_kind \"%s\" is not one WebLLM 0.2.86 knows", kind_text);
  } else if (kind == MPK_MLC_KV_NONE) {
    put(&c.why, "_metadata.kv_state_kind is \"none\", which WebLLM's chat pipeline refuses");
  } else if (hybrid || !single_named) {
    if (batch_named || hybrid) {
      prefill = "batch_prefill";
      decode = "batch_decode";
      chat &= need(&c, prefill, bp_args, bp_what);
      chat &= need(&c, decode, bd_args, bd_what);
    } else {
      put(&c.why, "neither prefill + decode nor batch_prefill + batch_decode");
      chat = false;
    }
  } else {
    prefill = "prefill";
    decode = "decode";
    chat &= need(&c, prefill, LEGACY_PREFILL_ARGS, "embeddings, state, params");
    chat &= need(&c, decode, LEGACY_DECODE_ARGS, "embeddings, state, params");
  }
  if (kind_ok && kind != MPK_MLC_KV_NONE) {
    chat &= need(&c, "embed", LEGACY_EMBED_ARGS, "token ids, params");
    if (kind == MPK_MLC_KV_CACHE || kind == MPK_MLC_KV_HYBRID)
      chat &= need(&c, KV_CREATOR, LEGACY_KV_CREATOR_ARGS,
                   "max_num_sequence, max_total_seq_len, prefill_chunk_size, page_size, support_sliding_window");
    if (kind == MPK_MLC_KV_RNN_STATE || kind == MPK_MLC_KV_HYBRID)
      chat &= need(&c, RNN_CREATOR, LEGACY_RNN_CREATOR_ARGS, "max_num_sequence, max_history_size");
  }
  out->chat = chat;

  /* WebLLM's embedding pipeline: prefill(input ids, attention mask, params), and no decode. */
  const mpk_mlc_function *pf = find(lib, "prefill", NULL);
  out->embedding = pf && pf->num_args == LEGACY_EMBEDDING_PREFILL_ARGS && !has_vm(lib, "decode") &&
                   !has_vm(lib, "batch_decode");
  const mpk_mlc_function *ie = find(lib, "image_embed", NULL);
  out->image_embed = ie && ie->num_args == LEGACY_IMAGE_EMBED_ARGS;

  /* The summary line. */
  const char *kind_name = kind_ok ? mpk_mlc_kv_state_kind_name(kind) : kind_text;
  if (out->chat) {
    put(&sum, "chat: embed, %s + %s, %s", prefill, decode,
        kind == MPK_MLC_KV_HYBRID ? KV_CREATOR " + " RNN_CREATOR : kind == MPK_MLC_KV_RNN_STATE ? RNN_CREATOR : KV_CREATOR);
    put(&sum, " (kv_state_kind %s)", kind_name);
    if (out->batch && strcmp(prefill, "batch_prefill") != 0)
      put(&sum, "; batch_prefill + batch_decode%s too", has_vm(lib, "batch_verify") ? " + batch_verify" : "");
  }
  if (out->embedding) put(&sum, "%sembedding: prefill (input ids, attention mask, params), no decode", sum.len ? "; " : "");
  if (out->image_embed) put(&sum, "%simage_embed (6 arguments)", sum.len ? "; " : "");
  else if (ie && (out->chat || out->embedding))
    put(&sum, "; image_embed takes %lld arguments, WebLLM 0.2.86's path without a manifest passes %d: images only "
              "through a manifest adapter", (long long)ie->num_args, LEGACY_IMAGE_EMBED_ARGS);
  if (out->chat || out->embedding) return 0;

  put(&sum, "%snone WebLLM 0.2.86 can run without a manifest: %s", sum.len ? "; " : "",
      whybuf[0] ? whybuf : "no chat or embedding functions");
  if (!out->embedding && pf && !has_vm(lib, "decode") && pf->num_args != LEGACY_EMBEDDING_PREFILL_ARGS) {
    put(&c.why, "; not an embedding model either (prefill takes %lld arguments, WebLLM's embedding pipeline passes %d)",
        (long long)pf->num_args, LEGACY_EMBEDDING_PREFILL_ARGS);
    put(&sum, "; not an embedding model either (prefill takes %lld arguments, WebLLM's embedding pipeline passes %d)",
        (long long)pf->num_args, LEGACY_EMBEDDING_PREFILL_ARGS);
  }
  return mpk_fail(err, MPK_EMISMATCH, lib->path, NULL, "the library offers no pipeline WebLLM 0.2.86 runs without a "
                  "manifest: %s", whybuf[0] ? whybuf : "no chat or embedding functions");
}
