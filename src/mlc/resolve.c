/* Binding a package to a compiled program, with WebLLM 0.2.86's rules and check order
   (resolveChatCompletionArtifact, and LLMChatPipeline's kv_state_kind check). */
#include <stdio.h>
#include <string.h>

#include "mlc/mlc.h"

#define CONTRACT "artifact contract: "

static int contract(mpk_error *err, const char *file, const char *pointer, const char *msg) {
  return mpk_fail(err, MPK_EMISMATCH, file, pointer, CONTRACT "%s", msg);
}

static int generation_pair(const mpk_mlc_program *p, mpk_mlc_binding *b, mpk_error *err) {
  static const char *const kinds[] = {"tokens", "embeds"};
  bool found = false;
  for (int k = 0; k < 2; k++) {
    char pre[32], dec[32];
    snprintf(pre, sizeof pre, "prefill_%s", kinds[k]);
    snprintf(dec, sizeof dec, "decode_%s", kinds[k]);
    const char *prefill = mpk_mlc_entry_get(p->exports, p->n_exports, pre);
    const char *decode = mpk_mlc_entry_get(p->exports, p->n_exports, dec);
    if (prefill && decode) {
      if (!found) {
        b->generation_inputs = k == 0 ? MPK_MLC_GENERATION_TOKENS : MPK_MLC_GENERATION_EMBEDS;
        b->prefill = prefill;
        b->decode = decode;
      }
      found = true;
    } else if (prefill || decode) {
      return mpk_fail(err, MPK_EMISMATCH, "_metadata.artifact", "", CONTRACT
                      "executor declares only one of %s and %s", pre, dec);
    }
  }
  if (!found)
    return contract(err, "_metadata.artifact", "",
                    "executor must declare a complete pair of prefill and decode roles: "
                    "prefill_tokens with decode_tokens, or prefill_embeds with decode_embeds");
  return 0;
}

static int bind_media(const mpk_mlc_input *in, const mpk_mlc_program *p, mpk_mlc_binding *b,
                      mpk_error *err) {
  bool audio = in->kind == MPK_MLC_PROCESSOR_AUDIO_DECODE;
  const char *kind = audio ? "audio" : "image";
  if (audio ? b->has_audio : b->has_image)
    return mpk_fail(err, MPK_EMISMATCH, MPK_MLC_MANIFEST_FILENAME, "", CONTRACT
                    "WebLLM supports one %s input per task", kind);
  if (!in->adapter || !in->prompt)
    return mpk_fail(err, MPK_EMISMATCH, MPK_MLC_MANIFEST_FILENAME, "", CONTRACT
                    "%s input \"%s\" has no adapter prompt", kind, in->name);
  const char *fn = mpk_mlc_entry_get(p->adapters, p->n_adapters, in->adapter);
  if (!fn)
    return mpk_fail(err, MPK_EMISMATCH, "_metadata.artifact", "", CONTRACT
                    "%s input \"%s\" references a missing adapter", kind, in->name);
  const char *dtype = mpk_mlc_entry_get(p->adapter_dtypes, p->n_adapter_dtypes, in->adapter);
  mpk_mlc_bound_input *slot = audio ? &b->audio : &b->image;
  if (audio) {
    if (dtype && !mpk_dtype_is(dtype, MPK_DT_FLOAT32))
      return mpk_fail(err, MPK_EMISMATCH, "_metadata.artifact", "", CONTRACT
                      "audio adapter \"%s\" must take float32, not %s", in->adapter, dtype);
    slot->dtype = mpk_dtype_name(MPK_DT_FLOAT32);
    b->has_audio = 1;
  } else {
    if (dtype && !mpk_dtype_is(dtype, MPK_DT_UINT8) && !mpk_dtype_is(dtype, MPK_DT_UINT32))
      return mpk_fail(err, MPK_EMISMATCH, "_metadata.artifact", "", CONTRACT
                      "image adapter \"%s\" must take uint8 or uint32, not %s", in->adapter, dtype);
    slot->dtype = dtype ? dtype : mpk_dtype_name(MPK_DT_UINT8);
    b->has_image = 1;
  }
  slot->input = in;
  slot->adapter = in->adapter;
  slot->adapter_function = fn;
  return 0;
}

int mpk_mlc_resolve(const mpk_mlc_package *pkg, const mpk_mlc_artifact *art, mpk_mlc_binding *b,
                    mpk_error *err) {
  if (!pkg || !art || !b) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  memset(b, 0, sizeof *b);
  if (strcmp(pkg->interface_id, art->interface_id) != 0)
    return mpk_fail(err, MPK_EMISMATCH, MPK_MLC_MANIFEST_FILENAME, "/interface_id", CONTRACT
                    "model-package and compiled-program interface IDs differ (package %s, library %s)",
                    pkg->interface_id, art->interface_id);
  if (strcmp(pkg->parameter_schema_id, art->parameter_schema_id) != 0)
    return mpk_fail(err, MPK_EMISMATCH, MPK_MLC_MANIFEST_FILENAME, "/weights/parameter_schema_id", CONTRACT
                    "weight and compiled-program parameter schema IDs differ (package %s, library %s)",
                    pkg->parameter_schema_id, art->parameter_schema_id);
  const mpk_mlc_task *task = mpk_mlc_package_task(pkg, "chat.completions");
  if (!task) return contract(err, MPK_MLC_MANIFEST_FILENAME, "/tasks", "task chat.completions is not declared");
  if (strcmp(task->output, "text") != 0)
    return contract(err, MPK_MLC_MANIFEST_FILENAME, "/tasks/chat.completions/output",
                    "WebLLM chat.completions requires text output");
  const mpk_mlc_program *p = mpk_mlc_artifact_program(art, task->executor);
  if (!p)
    return mpk_fail(err, MPK_EMISMATCH, "_metadata.artifact", "/programs", CONTRACT
                    "task executor \"%s\" is missing", task->executor);
  if (strcmp(p->kind, "token_generation") != 0)
    return mpk_fail(err, MPK_EMISMATCH, "_metadata.artifact", "", CONTRACT
                    "unsupported executor kind \"%s\"", p->kind);
  b->task = task;
  b->program = p;
  b->executor = task->executor;
  b->embed_tokens = mpk_mlc_entry_get(p->exports, p->n_exports, "embed_tokens");
  if (!b->embed_tokens)
    return contract(err, "_metadata.artifact", "", "executor is missing export role \"embed_tokens\"");
  b->create_kv_cache = mpk_mlc_entry_get(p->exports, p->n_exports, "create_kv_cache");
  if (!b->create_kv_cache)
    return contract(err, "_metadata.artifact", "", "executor is missing export role \"create_kv_cache\"");
  int rc = generation_pair(p, b, err);
  if (rc) return rc;
  const mpk_mlc_input *text = NULL;
  for (size_t i = 0; i < task->n_inputs; i++)
    if (strcmp(task->inputs[i].name, "text") == 0) text = &task->inputs[i];
  if (!text || text->kind != MPK_MLC_PROCESSOR_NAMED || strcmp(text->processor_name, "tokenizer") != 0)
    return contract(err, MPK_MLC_MANIFEST_FILENAME, "/tasks/chat.completions/inputs",
                    "chat.completions requires a text tokenizer input");
  if (text->adapter || text->prompt)
    return contract(err, MPK_MLC_MANIFEST_FILENAME, "/tasks/chat.completions/inputs/text",
                    "the tokenizer input cannot declare an adapter or prompt insertion");
  b->text_input = text;
  for (size_t i = 0; i < task->n_inputs; i++) {
    if (task->inputs[i].kind == MPK_MLC_PROCESSOR_NAMED) continue; /* other named processors are not WebLLM's to check */
    rc = bind_media(&task->inputs[i], p, b, err);
    if (rc) return rc;
  }
  b->create_rnn_state = mpk_mlc_entry_get(p->exports, p->n_exports, "create_rnn_state");
  b->kv_state_kind_implied = b->create_rnn_state ? MPK_MLC_KV_HYBRID : MPK_MLC_KV_CACHE;
  return 0;
}

static const char *const kv_names[] = {"kv_cache", "hybrid", "rnn_state", "none"};

const char *mpk_mlc_kv_state_kind_name(mpk_mlc_kv_state_kind k) {
  return (unsigned)k < 4 ? kv_names[k] : "unknown";
}

int mpk_mlc_kv_state_kind_parse(const char *s, mpk_mlc_kv_state_kind *out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (!s) {
    *out = MPK_MLC_KV_CACHE;
    return 0;
  }
  for (int i = 0; i < 4; i++) {
    if (strcmp(s, kv_names[i]) == 0) {
      *out = (mpk_mlc_kv_state_kind)i;
      return 0;
    }
  }
  return mpk_fail(err, MPK_EUNSUPPORTED, "_metadata", "/kv_state_kind",
                  "unsupported kv_state_kind in model metadata: %s", s);
}

int mpk_mlc_check_kv_state(const mpk_mlc_binding *b, const mpk_mlc_metadata *md, mpk_error *err) {
  if (!b || !md) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_mlc_kv_state_kind lib;
  int rc = mpk_mlc_kv_state_kind_parse(md->kv_state_kind, &lib, err);
  if (rc) return rc;
  if (lib != b->kv_state_kind_implied)
    return mpk_fail(err, MPK_EMISMATCH, "_metadata", "/kv_state_kind",
                    "the manifest roles imply kv_state_kind=\"%s\", but the library reports \"%s\"",
                    mpk_mlc_kv_state_kind_name(b->kv_state_kind_implied),
                    mpk_mlc_kv_state_kind_name(lib));
  return 0;
}
