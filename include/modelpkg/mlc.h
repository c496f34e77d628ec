/*
 * modelpkg/mlc.h — the MLC model artifact manifest: the sidecar mlc-model-manifest.json, the compiled
 * half (_metadata.artifact) and a library's _metadata, binding a package to a library, device checks,
 * weights (tensor-cache.json), parameters, the producer, device fit, checking a package, prompt
 * assembly and prefill planning.
 *
 * Threads: loaded documents (package, artifact, metadata, tensor cache, parameters), reports, planners
 * and plans are immutable once returned and may be shared between threads; a prefill builder is one
 * thread's at a time; bindings, fits and build results are plain data of the caller's (a binding
 * borrows from the package and artifact it was resolved from).
 */
#ifndef MODELPKG_MLC_H
#define MODELPKG_MLC_H

#include "core.h"
#include "fetch.h" /* mpk_mlc_install: a client of the fetch engine */

#ifdef __cplusplus
extern "C" {
#endif
/* component: mlc */

/* ============================================================================================
 * mlc: the package sidecar mlc-model-manifest.json
 * ========================================================================================== */

#define MPK_MLC_MANIFEST_FILENAME "mlc-model-manifest.json"
#define MPK_MLC_CHAT_CONFIG_FILENAME "mlc-chat-config.json"
#define MPK_MLC_TENSOR_CACHE_FILENAME "tensor-cache.json"

typedef enum mpk_mlc_processor_kind {
  MPK_MLC_PROCESSOR_NAMED = 0,     /**< a processor given by name, e.g. "tokenizer" */
  MPK_MLC_PROCESSOR_AUDIO_DECODE,  /**< {"kind": "audio_decode", ...} */
  MPK_MLC_PROCESSOR_IMAGE_DECODE   /**< {"kind": "image_decode", ...} */
} mpk_mlc_processor_kind;

/** audio_decode: canonical mono float32 PCM ("pcm_f32"). */
typedef struct mpk_mlc_audio_decode {
  int64_t sample_rate_hz;
  int64_t channels; /* always 1 */
  int64_t min_samples;
  int64_t max_samples;
} mpk_mlc_audio_decode;

typedef enum mpk_mlc_resize_mode { MPK_MLC_RESIZE_STRETCH = 0, MPK_MLC_RESIZE_CENTER_CROP } mpk_mlc_resize_mode;

/** image_decode: "rgb_u8" pixels, "nhwc" layout, a fixed resize and embedding count. */
typedef struct mpk_mlc_image_decode {
  mpk_mlc_resize_mode resize_mode;
  int64_t height;
  int64_t width;
  int64_t num_embeddings;
} mpk_mlc_image_decode;

/** Where an adapter's output goes in the prompt. Defaults filled: prefix/suffix may be empty. */
typedef struct mpk_mlc_prompt {
  const int64_t *prefix_token_ids;
  size_t n_prefix_token_ids;
  int64_t placeholder_token_id;
  const int64_t *suffix_token_ids;
  size_t n_suffix_token_ids;
} mpk_mlc_prompt;

typedef struct mpk_mlc_input {
  const char *name;
  mpk_mlc_processor_kind kind;
  const char *processor_name;  /**< kind NAMED: the name; otherwise NULL */
  mpk_mlc_audio_decode audio;  /**< kind AUDIO_DECODE */
  mpk_mlc_image_decode image;  /**< kind IMAGE_DECODE */
  const char *adapter;         /**< NULL when the input declares none */
  const mpk_mlc_prompt *prompt;/**< NULL when the input declares none (always with adapter) */
  size_t position;             /**< where the input stands in the document (declaration order) */
} mpk_mlc_input;

typedef struct mpk_mlc_task {
  const char *name;
  const char *executor;
  const char *output;
  const mpk_mlc_input *inputs; /**< sorted by name (UTF-16 code units, as WebLLM iterates) */
  size_t n_inputs;
} mpk_mlc_task;

/** A parsed mlc-model-manifest.json. Immutable, shareable; freed with mpk_mlc_package_free(). */
typedef struct mpk_mlc_package {
  int64_t schema_version;
  const char *chat_config;          /**< "mlc-chat-config.json" (the default when absent) */
  const char *interface_id;         /**< "sha256:<64 hex>" */
  const char *weights_manifest;     /**< "tensor-cache.json" */
  const char *parameter_schema_id;  /**< "sha256:<64 hex>" */
  const mpk_mlc_task *tasks;        /**< sorted by name */
  size_t n_tasks;
  struct mpk_mlc_package_priv *priv_;
} mpk_mlc_package;

/**
 * Parse a sidecar from bytes exactly as WebLLM 0.2.86 does (schema, fields, types, bounds,
 * literals), and — unless `skip_interface_check` — check its interface_id against its tasks.
 * Stricter than WebLLM: duplicate keys, invalid UTF-8 and U+0000 are refused.
 * `file` names the document in errors (NULL: "mlc-model-manifest.json").
 */
MPK_API int mpk_mlc_package_parse(const void *data, size_t len, const char *file,
                                  int skip_interface_check, mpk_mlc_package **out,
                                  mpk_error *err);
/** Read and parse `path`, a sidecar file or a directory holding mlc-model-manifest.json (see
 * mpk_mlc_package_parse). */
MPK_API int mpk_mlc_package_load(const char *path, mpk_mlc_package **out, mpk_error *err);
/** Free the mpk_mlc_package and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_package_free(mpk_mlc_package *pkg);

/** Find a task by name, NULL when absent. */
MPK_API const mpk_mlc_task *mpk_mlc_package_task(const mpk_mlc_package *pkg, const char *name);

/**
 * The interface_id recomputed from the package's tasks (defaults filled), following the Python
 * producer (keys sorted by code point).
 */
MPK_API int mpk_mlc_package_interface_id(const mpk_mlc_package *pkg,
                                         char out[MPK_SHA256_ID_SIZE], mpk_error *err);

/**
 * The package's `tasks` object as JSON text, normalized (defaults filled, absent adapter/prompt
 * omitted: what WebLLM's parseModelPackageManifest returns and what the interface_id hashes), tasks
 * sorted by name and each object's fields in the spec's order, compact UTF-8. `*out` is freed with
 * mpk_free; `out_len` may be NULL.
 */
MPK_API int mpk_mlc_package_tasks_json(const mpk_mlc_package *pkg, char **out, size_t *out_len,
                                       mpk_error *err);

/**
 * The package as the object WebLLM 0.2.86's parseModelPackageManifest returns (what the conformance
 * vectors record): {schema: "mlc.model-package", schema_version, chat_config, interface_id, weights:
 * {manifest, parameter_schema_id}, tasks} with the tasks of mpk_mlc_package_tasks_json. Compact
 * UTF-8; `*out` is freed with mpk_free; `out_len` may be NULL.
 */
MPK_API int mpk_mlc_package_json(const mpk_mlc_package *pkg, char **out, size_t *out_len, mpk_error *err);

/**
 * interface_id of a JSON text holding the `tasks` object: parsed and normalized exactly as the
 * sidecar's tasks, then hashed.
 */
MPK_API int mpk_mlc_interface_id(const char *tasks_json, size_t len,
                                 char out[MPK_SHA256_ID_SIZE], mpk_error *err);

/* ============================================================================================
 * mlc: the compiled half, _metadata.artifact (schema mlc.compiled-program)
 * ========================================================================================== */

/** A key → value string pair of a program's exports, adapters or adapter_dtypes. */
typedef struct mpk_mlc_entry {
  const char *key;
  const char *value;
} mpk_mlc_entry;

typedef struct mpk_mlc_program {
  const char *name;
  const char *kind;                 /**< e.g. "token_generation" */
  const mpk_mlc_entry *exports;     /**< role → function, sorted by role */
  size_t n_exports;
  const mpk_mlc_entry *adapters;    /**< adapter → function */
  size_t n_adapters;
  const mpk_mlc_entry *adapter_dtypes; /**< adapter → dtype */
  size_t n_adapter_dtypes;
} mpk_mlc_program;

/** A parsed _metadata.artifact. Immutable, shareable; freed with mpk_mlc_artifact_free(). */
typedef struct mpk_mlc_artifact {
  int64_t schema_version;
  const char *interface_id;
  const char *parameter_schema_id;
  const mpk_mlc_program *programs;  /**< sorted by name */
  size_t n_programs;
  const char *const *required_features;
  size_t n_required_features;
  int64_t max_storage_buffer_binding_size;
  int64_t estimated_device_memory_bytes;
  struct mpk_mlc_artifact_priv *priv_;
} mpk_mlc_artifact;

/** Parse the JSON text of the `artifact` object with WebLLM 0.2.86's rules. */
MPK_API int mpk_mlc_artifact_parse(const void *data, size_t len, const char *file,
                                   mpk_mlc_artifact **out, mpk_error *err);
/** Free the mpk_mlc_artifact and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_artifact_free(mpk_mlc_artifact *art);

/** Look up a program by name / an entry by key; NULL when absent. */
MPK_API const mpk_mlc_program *mpk_mlc_artifact_program(const mpk_mlc_artifact *art,
                                                        const char *name);
MPK_API const char *mpk_mlc_entry_get(const mpk_mlc_entry *entries, size_t n, const char *key);

/**
 * The artifact as the object WebLLM 0.2.86's parseCompiledProgramArtifact returns: {schema:
 * "mlc.compiled-program", schema_version, interface_id, parameter_schema_id, programs: {NAME: {kind,
 * exports, adapters, adapter_dtypes}}, resources: {required_features, max_storage_buffer_binding_size,
 * estimated_device_memory_bytes}}, programs and entries sorted. Compact UTF-8; `*out` is freed with
 * mpk_free; `out_len` may be NULL.
 */
MPK_API int mpk_mlc_artifact_json(const mpk_mlc_artifact *art, char **out, size_t *out_len, mpk_error *err);

/* ============================================================================================
 * mlc: a compiled library's _metadata
 * ========================================================================================== */

/** The _metadata of a compiled model library. Immutable, shareable; freed with mpk_mlc_metadata_free(). */
typedef struct mpk_mlc_metadata {
  const char *json;          /**< the _metadata JSON text, byte-exact as stored in the library */
  size_t json_len;
  const char *model_type;    /**< NULL when absent */
  const char *kv_state_kind; /**< as stored; NULL when absent (WebLLM reads that as "kv_cache") */
  int64_t source_offset;     /**< byte offset of the JSON text in the source file, or -1 */
  int artifact_only;         /**< 1: the source held only the artifact object (no params) */
  const mpk_mlc_artifact *artifact; /**< parsed _metadata.artifact, or NULL when absent */
  struct mpk_mlc_metadata_priv *priv_;
} mpk_mlc_metadata;

/**
 * Load _metadata from a file: a compiled model library (.wasm, .so, .dylib, .dll, a .tar of
 * objects — anything holding the JSON text right after its length as u64 little-endian), or a
 * JSON file holding the whole _metadata object, or the `artifact` object alone. A library must
 * hold exactly one distinct _metadata object (one with "model_type" and "params"); none, or two
 * different ones, is an error. A present `artifact` is parsed with mpk_mlc_artifact_parse().
 */
MPK_API int mpk_mlc_metadata_load(const char *path, mpk_mlc_metadata **out, mpk_error *err);
/** The same from bytes in memory (`file` names them in errors). */
MPK_API int mpk_mlc_metadata_from_bytes(const void *data, size_t len, const char *file,
                                        mpk_mlc_metadata **out, mpk_error *err);
/** Free the mpk_mlc_metadata and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_metadata_free(mpk_mlc_metadata *md);

/**
 * Only the extractor: find the _metadata JSON text inside a library's bytes. `*start`/`*len`
 * locate it within `data`. Returns MPK_ENOTFOUND when there is none and MPK_EMALFORMED when
 * two different ones are found.
 */
MPK_API int mpk_mlc_metadata_find(const void *data, size_t size, size_t *start, size_t *len,
                                  mpk_error *err);

/* ============================================================================================
 * mlc: a compiled library as a whole — its container, its Relax VM function table, the roles it
 * serves, the runtime it needs, and writing an artifact into it (docs/mlc-library.md)
 * ========================================================================================== */

/** What a VM function table entry is (TVM's VMFuncInfo::FuncKind). */
typedef enum mpk_mlc_function_kind {
  MPK_MLC_FUNCTION_PACKED = 0, /**< a packed function the VM calls: a kernel of the library or a
                                    global function of the runtime (vm.builtin.*) */
  MPK_MLC_FUNCTION_VM = 1,     /**< a Relax VM function (bytecode): the library's entrypoints */
  MPK_MLC_FUNCTION_VM_TIR = 2  /**< a VM function compiled to TIR */
} mpk_mlc_function_kind;

/** One entry of a library's VM function table. */
typedef struct mpk_mlc_function {
  const char *name;
  mpk_mlc_function_kind kind;
  int64_t num_args;                /**< as the table stores it (packed functions: -2, variadic) */
  const char *const *param_names;  /**< VM functions' parameter names, in order */
  size_t n_param_names;
} mpk_mlc_function;

/** A function the library imports from its host (the runtime or the system). */
typedef struct mpk_mlc_import {
  const char *module;              /**< WebAssembly's import module ("env", "wasi_snapshot_preview1");
                                        NULL for ELF and Mach-O */
  const char *name;
} mpk_mlc_import;

/** A compiled model library read as a whole. Immutable, shareable; freed with mpk_mlc_library_free(). */
typedef struct mpk_mlc_library {
  const char *path;
  const char *container;           /**< e.g. "WebAssembly module", "ELF shared object",
                                        "gzip-compressed tar archive" */
  const char *arch;                /**< "wasm32", "x86-64", "AArch64", "arm64", ...; NULL unknown */
  const mpk_mlc_metadata *metadata; /**< NULL when none was found (metadata_problem says why) */
  const char *metadata_problem;    /**< why there is no metadata; NULL when there is */
  const char *metadata_member;     /**< the archive member holding it; NULL: the file itself */
  const char *metadata_where;      /**< where it was found, in words: "member X: ELF symbol
                                        __tvm_dev_mblob (.rodata), relax.Executable constant 3" */
  int metadata_scanned;            /**< 1: found by the fallback scan, not where the format puts it */
  const char *vm_where;            /**< where the VM executable is, in words; NULL when none */
  const char *vm_type_key;         /**< "relax.Executable" or "relax.VMExecutable"; NULL when none */
  const char *vm_version;          /**< the executable's TVM version string ("0.14"); NULL when none */
  const mpk_mlc_function *functions; /**< the VM function table, in its order */
  size_t n_functions;
  const mpk_mlc_import *imports;   /**< host functions the library imports, sorted (module, name) */
  size_t n_imports;
  const char *const *globals_needed;  /**< global functions its VM code calls that the library
                                           does not define itself, sorted */
  size_t n_globals_needed;
  const char *const *globals_defined; /**< global functions the library registers itself (the
                                           runtime compiled into a WebAssembly library), sorted */
  size_t n_globals_defined;
  struct mpk_mlc_library_priv *priv_;
  /* Added after the foundation (issue 20, runtime compatibility): */
  const char *const *exports;      /**< the functions a WebAssembly library exports (the C API its
                                        host calls), sorted; NULL when not read (mlc compat then
                                        does not check them) */
  size_t n_exports;
} mpk_mlc_library;

/**
 * Read a compiled library: every container MLC ships (WebAssembly, ELF and Mach-O shared objects,
 * tar — also gzip-compressed — and ar archives of ELF and Mach-O objects, Mach-O universal files);
 * its _metadata where the format puts it (the module blob's VM executable constant), else by a
 * scan of its bytes; its VM function table; its imports. Succeeds when the container is one of
 * these and either the _metadata or a function table was found; MPK_ENOTFOUND when neither was;
 * MPK_EUNSUPPORTED for another file, refused from its first bytes. Bounded (docs/SECURITY.md).
 */
MPK_API int mpk_mlc_library_open(const char *path, mpk_mlc_library **out, mpk_error *err);
/** Free the mpk_mlc_library and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_library_free(mpk_mlc_library *lib);
/** The table entry named `name`, or NULL. */
MPK_API const mpk_mlc_function *mpk_mlc_library_function(const mpk_mlc_library *lib, const char *name);
/** "packed", "vm", "vm_tir" (static strings). */
MPK_API const char *mpk_mlc_function_kind_name(mpk_mlc_function_kind kind);

/**
 * The role table (spec 000, "Each key in exports is a role"): how many arguments the function
 * named for `role` must take — a program's export role ("embed_tokens", "prefill_tokens",
 * "decode_tokens", "prefill_embeds", "decode_embeds", "create_kv_cache", "create_rnn_state"), or
 * "adapter" for an adapter. `*min_args` = `*max_args` for a fixed arity (every rule today). The
 * four generation roles' arities are with the KV cache alone; in a program that also exports
 * create_rnn_state (hybrid) WebLLM passes the RNN state after the KV cache, one argument more, and
 * mpk_mlc_check_functions() wants that. MPK_ENOTFOUND for a role the table does not know
 * (docs/mlc-library.md, "Roles and arities", says how each arity is derived).
 */
MPK_API int mpk_mlc_role_arity(const char *role, int *min_args, int *max_args, mpk_error *err);

/**
 * Every role in the exports of each of `art`'s programs and every adapter must name a VM function
 * (kind VM or VM TIR: a packed kernel of that name is not an entrypoint) of `lib` with the arity
 * the role table implies; a role the table does not know is a mismatch too. The first mismatch,
 * in program and role order (exports, then adapters), is the error (MPK_EMISMATCH naming the
 * library, "/artifact/programs/P/exports/ROLE" or ".../adapters/A", the function, the arity wanted
 * and found, and its parameter names); `check --lib` lists them all.
 */
MPK_API int mpk_mlc_check_functions(const mpk_mlc_library *lib, const mpk_mlc_artifact *art,
                                    mpk_error *err);

/** The functions a library offers WebLLM 0.2.86 on its path without a manifest. */
typedef struct mpk_mlc_legacy_abi {
  int chat;              /**< embed + prefill + decode and a KV-cache or RNN-state creator */
  int batch;             /**< batch_prefill + batch_decode (and batch_verify when present) */
  int embedding;         /**< prefill without decode: WebLLM's embedding pipeline */
  int image_embed;       /**< image_embed with the 6 arguments WebLLM 0.2.86 passes (pixels, resize
                              height and width, crop height and width, params: Phi-3.5-vision's) */
  const char *state_creator; /**< "create_tir_paged_kv_cache", "create_flashinfer_paged_kv_cache",
                                  "create_rnn_state"; NULL when none */
  const char *summary;   /**< one line: what the library offers, in words; points into summary_buf */
  char summary_buf[512]; /**< holds the summary (a copy of the struct: read summary_buf) */
} mpk_mlc_legacy_abi;

/**
 * Which legacy ABI `lib` offers (the function names WebLLM 0.2.86 looks up without a manifest,
 * each with the arity it calls it with; the pair chosen as its resolveModelABI does from
 * _metadata.kv_state_kind). A function found by name with another arity is not offered: the VM
 * refuses the call. MPK_EMISMATCH when neither the chat nor the embedding pipeline can run (naming
 * what is missing or takes what); `out` is filled either way.
 */
MPK_API int mpk_mlc_legacy_abi_of(const mpk_mlc_library *lib, mpk_mlc_legacy_abi *out, mpk_error *err);

/**
 * A runtime description (docs/mlc-library.md, "Runtime descriptions"): what a host gives a
 * WebAssembly library (import functions, global functions it registers) and what it needs from
 * one (global functions it looks up, VM functions it calls, exports it calls), each need with when
 * it applies ("always", "chat", "embedding", "optional"). Immutable, shareable.
 */
typedef struct mpk_mlc_runtime mpk_mlc_runtime;
/**
 * Load a runtime description JSON (e.g. data/runtimes/webllm-0.2.86.json), strictly: "schema"
 * "modelpkg.runtime", "schema_version" 1, every field checked, unknown fields and names listed
 * twice refused (MPK_EMALFORMED naming the file, the JSON pointer and the rule; MPK_ELIMIT past
 * 65536 entries in a list); another schema_version is MPK_EVERSION.
 */
MPK_API int mpk_mlc_runtime_load(const char *path, mpk_mlc_runtime **out, mpk_error *err);
/** Free it; accepts NULL. */
MPK_API void mpk_mlc_runtime_free(mpk_mlc_runtime *rt);
/**
 * Where the description says the runtime provides or needs `name` (its "where", e.g.
 * "RuntimeContext.constructor (lib/index.js:7162)"), or NULL when it does not say. `list` is the
 * description's field: "provides.imports" (`module` names the import module), "provides.globals",
 * "requires.globals", "requires.functions", "requires.exports". Borrowed from `rt`.
 */
MPK_API const char *mpk_mlc_runtime_where(const mpk_mlc_runtime *rt, const char *list, const char *module,
                                          const char *name);

/** A library against a runtime. Immutable; freed with mpk_mlc_compat_report_free(). */
typedef struct mpk_mlc_compat_report {
  const char *runtime;                /**< the description's name, e.g. "WebLLM 0.2.86" */
  int compatible;                     /**< 1: nothing below is missing */
  const mpk_mlc_import *missing_imports; /**< imported host functions the runtime does not provide */
  size_t n_missing_imports;
  const char *const *missing_globals; /**< globals the library's VM code calls that neither the
                                           library nor the runtime defines */
  size_t n_missing_globals;
  const char *const *missing_required; /**< globals the runtime looks up that the library
                                            (with the runtime's own) does not define */
  size_t n_missing_required;
  struct mpk_mlc_compat_priv *priv_;
  /* Added after the foundation (issue 20, runtime compatibility): */
  const char *pipeline;               /**< whose needs were checked besides "always": "chat" (the
                                           library has a decode function), "embedding" (prefill,
                                           no decode); NULL: neither */
  const char *const *missing_functions; /**< VM functions the runtime calls by name that the
                                             library's function table does not have */
  size_t n_missing_functions;
  const char *const *missing_exports; /**< exports the runtime calls that the library does not
                                           export (only when the library's exports were read) */
  size_t n_missing_exports;
  int exports_checked;                /**< 1: the library's exports were known and compared */
} mpk_mlc_compat_report;

/**
 * Compare, every list sorted and without duplicates; `compatible` when all are empty. Needs marked
 * "optional" are never missing; "chat" and "embedding" ones only for that pipeline. 0 when the
 * comparison ran (see `compatible`); MPK_EUNSUPPORTED for a library that is not a WebAssembly
 * module (the hosts schema 1 describes load only those).
 */
MPK_API int mpk_mlc_compat(const mpk_mlc_library *lib, const mpk_mlc_runtime *rt,
                           mpk_mlc_compat_report **out, mpk_error *err);
/** Free the report; accepts NULL. */
MPK_API void mpk_mlc_compat_report_free(mpk_mlc_compat_report *report);

typedef struct mpk_mlc_embed_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro */
  int force;          /**< 1: overwrite an existing output file */
} mpk_mlc_embed_options;
#define MPK_MLC_EMBED_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mlc_embed_options)

/**
 * Write `_metadata.artifact` into a WebAssembly library: `lib_path`'s bytes with the data holding
 * the length-prefixed _metadata rewritten to carry the artifact read from `artifact_path` (an
 * artifact object, "schema": "mlc.compiled-program"), every other byte's meaning kept, to
 * `out_path` (atomically; "-" is stdout). MPK_EUNSUPPORTED, saying why and what would be needed,
 * for another container or a layout a safe rewrite cannot handle (docs/mlc-library.md, "Embedding").
 */
MPK_API int mpk_mlc_embed(const char *lib_path, const char *artifact_path, const char *out_path,
                          const mpk_mlc_embed_options *opts, mpk_error *err);

/* ============================================================================================
 * mlc: binding a package to a compiled library (resolveChatCompletionArtifact)
 * ========================================================================================== */

typedef enum mpk_mlc_generation_inputs {
  MPK_MLC_GENERATION_TOKENS = 0, /**< prefill_tokens / decode_tokens */
  MPK_MLC_GENERATION_EMBEDS      /**< prefill_embeds / decode_embeds */
} mpk_mlc_generation_inputs;

typedef enum mpk_mlc_kv_state_kind {
  MPK_MLC_KV_CACHE = 0,
  MPK_MLC_KV_HYBRID,
  MPK_MLC_KV_RNN_STATE,
  MPK_MLC_KV_NONE
} mpk_mlc_kv_state_kind;

/** One media input bound to its adapter function. */
typedef struct mpk_mlc_bound_input {
  const mpk_mlc_input *input;    /**< the package's input (processor, prompt) */
  const char *adapter;           /**< adapter name */
  const char *adapter_function;  /**< the library function to call */
  const char *dtype;             /**< "float32" (audio), "uint8" or "uint32" (image) */
} mpk_mlc_bound_input;

/**
 * The binding a runtime uses: which function to call for each role and adapter, input dtypes,
 * processors. All pointers borrow from the package and the artifact it was resolved from.
 */
typedef struct mpk_mlc_binding {
  const mpk_mlc_task *task;          /**< "chat.completions" */
  const mpk_mlc_program *program;    /**< the task's executor */
  const char *executor;
  mpk_mlc_generation_inputs generation_inputs;
  const char *embed_tokens;          /**< function names */
  const char *create_kv_cache;
  const char *prefill;
  const char *decode;
  const char *create_rnn_state;      /**< NULL when the program does not export it */
  mpk_mlc_kv_state_kind kv_state_kind_implied; /**< hybrid with create_rnn_state, else kv_cache */
  const mpk_mlc_input *text_input;
  int has_audio;
  mpk_mlc_bound_input audio;
  int has_image;
  mpk_mlc_bound_input image;
} mpk_mlc_binding;

/** Bind `pkg` to `art` with WebLLM 0.2.86's rules. Errors are MPK_EMISMATCH. */
MPK_API int mpk_mlc_resolve(const mpk_mlc_package *pkg, const mpk_mlc_artifact *art,
                            mpk_mlc_binding *out, mpk_error *err);

/**
 * The binding as the object WebLLM 0.2.86's resolveChatCompletionArtifact returns: {executor,
 * generation: {inputs: "tokens" | "embeds", prefill, decode}, audio_input, image_input (each null, or
 * {adapter, adapter_function, processor, prompt} as the normalized tasks write them, the image's with
 * its dtype), supported_input_kinds, kv_state_kind_implied}. Compact UTF-8; `*out` is freed with
 * mpk_free; `out_len` may be NULL.
 */
MPK_API int mpk_mlc_binding_json(const mpk_mlc_binding *b, char **out, size_t *out_len, mpk_error *err);

/** Parse a _metadata kv_state_kind string (NULL means "kv_cache", as WebLLM reads it). */
MPK_API int mpk_mlc_kv_state_kind_parse(const char *s, mpk_mlc_kv_state_kind *out, mpk_error *err);
/** "kv_cache", "hybrid", "rnn_state", "none"; "unknown" for another value (static strings). */
MPK_API const char *mpk_mlc_kv_state_kind_name(mpk_mlc_kv_state_kind k);

/**
 * The library's kv_state_kind must equal what the binding's roles imply (WebLLM's
 * LLMChatPipeline check).
 */
MPK_API int mpk_mlc_check_kv_state(const mpk_mlc_binding *b, const mpk_mlc_metadata *md,
                                   mpk_error *err);

/* ============================================================================================
 * mlc: a chat-completion request against the model (postInitAndCheckFieldsChatCompletion)
 * ========================================================================================== */

/** What a model accepts besides text in a user message's content array (WebLLM's
    supportedInputKinds). */
typedef struct mpk_mlc_input_kinds {
  int declared; /**< 0: the model declares nothing (a text-only model without a manifest): only a
                     VLM then takes content arrays, and no audio */
  int audio;    /**< input_audio parts */
  int image;    /**< image_url parts */
} mpk_mlc_input_kinds;

/** A manifest model's kinds: its bound audio and image inputs (declared even when neither). */
MPK_API void mpk_mlc_input_kinds_of_binding(const mpk_mlc_binding *b, mpk_mlc_input_kinds *out);
/** A model without a manifest: image when its library offers image_embed, else nothing declared. */
MPK_API void mpk_mlc_input_kinds_of_legacy(const mpk_mlc_legacy_abi *abi, mpk_mlc_input_kinds *out);

/** The model a request is checked against. */
typedef struct mpk_mlc_request_model {
  const char *model_id;    /**< named in the messages (NULL: "model") */
  const char *model_type;  /**< "LLM" (NULL), "VLM" or "embedding" (WebLLM's ModelType) */
  mpk_mlc_input_kinds kinds;
} mpk_mlc_request_model;

/**
 * Check an OpenAI-style chat-completion request (JSON text) as WebLLM 0.2.86 checks its messages
 * before anything is decoded (docs/mlc-request.md): a user message's content array only where the
 * model takes one; each input_audio / image_url part only where its kind is declared; a pcm_f32
 * part's data a Float32Array (in JSON: {"$float32array": [samples]} or {"$float32array": count})
 * with a positive integer sample_rate; WAV data raw base64 or a data URL, not an http(s) URL; an
 * image URL "data:image..." or "http...", no detail; at most one text part per message; a system
 * message only first; the last message from the user or a tool. The first failure, in WebLLM's
 * order, is the error, with WebLLM's message and a JSON pointer ("/messages/1/content/0/type"):
 * MPK_EUNSUPPORTED for what the model or WebLLM does not take, MPK_EMALFORMED for a request that
 * breaks the rules. Stricter than WebLLM: a request that is not a chat request (no messages, a
 * message or part that is no object, content neither text nor an array) is refused where WebLLM
 * would throw a TypeError or read on. The request's other fields are the engine's and not read.
 */
MPK_API int mpk_mlc_request_check(const void *json, size_t len, const char *file,
                                  const mpk_mlc_request_model *model, mpk_error *err);

/* ============================================================================================
 * mlc: device checks
 * ========================================================================================== */

/** What a WebGPU device offers. */
typedef struct mpk_mlc_device {
  const char *const *features;  /**< e.g. "shader-f16" */
  size_t n_features;
  int has_features;             /**< 0: feature list unknown, not checked */
  int64_t max_storage_buffer_binding_size; /**< < 0: unknown, not checked */
} mpk_mlc_device;

/**
 * Every required feature must be offered; max_storage_buffer_binding_size must not exceed the
 * device limit. Errors are MPK_EMISMATCH with WebLLM's messages.
 */
MPK_API int mpk_mlc_check_device(const mpk_mlc_artifact *art, const mpk_mlc_device *dev,
                                 mpk_error *err);

/* ============================================================================================
 * mlc: weights — tensor-cache.json (older name ndarray-cache.json)
 * ========================================================================================== */

/** One parameter stored in a shard. */
typedef struct mpk_mlc_tensor_record {
  const char *name;
  const int64_t *shape;
  size_t ndim;
  const char *dtype;
  const char *format;      /**< e.g. "raw", "f32-to-bf16" */
  uint64_t nbytes;
  uint64_t byte_offset;    /**< within its shard */
  size_t shard;            /**< index into mpk_mlc_tensor_cache.shards */
} mpk_mlc_tensor_record;

/** One shard file (dataPath) and the records it holds. */
typedef struct mpk_mlc_shard {
  const char *data_path;   /**< relative to the package directory, confined to it */
  const char *format;      /**< "raw-shard" */
  uint64_t nbytes;
  const char *md5sum;      /**< 32 lowercase hex digits, or NULL when the cache gives none */
  size_t first_record;     /**< its records are records[first_record .. first_record + n_records) */
  size_t n_records;
} mpk_mlc_shard;

/** A parsed and structurally checked tensor cache. Immutable, shareable; freed with _free(). */
typedef struct mpk_mlc_tensor_cache {
  int has_param_size;
  int64_t param_size;      /**< metadata.ParamSize */
  int has_param_bytes;
  double param_bytes;      /**< metadata.ParamBytes */
  const mpk_mlc_shard *shards;
  size_t n_shards;
  const mpk_mlc_tensor_record *records; /**< all records, shard by shard, in file order */
  size_t n_records;
  struct mpk_mlc_tensor_cache_priv *priv_;
} mpk_mlc_tensor_cache;

/**
 * Parse a tensor cache and check it, fail-closed: every record lies inside its shard, records do
 * not overlap, nbytes = elements x bytes per element (ceil(bits/8), see docs/weights.md),
 * parameter names are unique, dtypes are known, shard paths stay inside the package.
 * Unknown fields are tolerated (the format is MLC's, not versioned).
 */
MPK_API int mpk_mlc_tensor_cache_parse(const void *data, size_t len, const char *file,
                                       mpk_mlc_tensor_cache **out, mpk_error *err);
/** Read and parse `path`, a tensor-cache.json file or a directory holding one. */
MPK_API int mpk_mlc_tensor_cache_load(const char *path, mpk_mlc_tensor_cache **out, mpk_error *err);
/** Free the mpk_mlc_tensor_cache and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_tensor_cache_free(mpk_mlc_tensor_cache *tc);

/**
 * Verify the shard files under `dir`: each is opened beneath `dir` (a symbolic link may not lead
 * out; a FIFO, directory or dangling link in its place is an error saying so, "missing" only when
 * the name does not exist), its size equals its nbytes, and its MD5 equals md5sum when one is
 * given. Shards are hashed in parallel on `workers` threads (0: one per CPU, at most 8). Failing
 * shards are reported through `on_problem` (may be NULL): of each kind (missing, unreadable, size,
 * MD5) the first 10, then one summary problem with the count ("483 of 483 shards missing (the
 * first 10 listed)"). The return value is 0 when all hold, else the first failure.
 */
MPK_API int mpk_mlc_tensor_cache_verify(const mpk_mlc_tensor_cache *tc, const char *dir,
                                        unsigned workers, mpk_progress_fn progress,
                                        void *progress_ctx, mpk_problem_fn on_problem,
                                        void *problem_ctx, mpk_error *err);

/* ============================================================================================
 * mlc: parameters — identity, resources, matching a library to its weights
 * ========================================================================================== */

/** A dimension: a number, or a name such as "vocab_size" whose value comes from model_config. */
typedef struct mpk_mlc_dim {
  int64_t value;     /**< when name is NULL */
  const char *name;  /**< non-NULL: a named (symbolic) dimension */
} mpk_mlc_dim;

typedef struct mpk_mlc_param {
  const char *name;
  const mpk_mlc_dim *shape;
  size_t ndim;
  const char *dtype;
} mpk_mlc_param;

/** A list of parameters in source order. Immutable, shareable; freed with mpk_mlc_params_free(). */
typedef struct mpk_mlc_params {
  const mpk_mlc_param *items;
  size_t n;
  struct mpk_mlc_params_priv *priv_;
} mpk_mlc_params;

/** The value of a named dimension. */
typedef struct mpk_mlc_named_dim {
  const char *name;
  int64_t value;
} mpk_mlc_named_dim;

/** The parameters a tensor cache holds (concrete shapes). */
MPK_API int mpk_mlc_params_from_tensor_cache(const mpk_mlc_tensor_cache *tc, mpk_mlc_params **out,
                                             mpk_error *err);
/** The parameters a compiled library expects: its _metadata.params (named dimensions kept). */
MPK_API int mpk_mlc_params_from_metadata(const mpk_mlc_metadata *md, mpk_mlc_params **out,
                                         mpk_error *err);
/**
 * Parameters from a JSON text: a list of {"name", "shape", "dtype"} objects or of
 * [name, shape, dtype] triples, or an object with such a list under "params".
 */
MPK_API int mpk_mlc_params_parse(const void *json, size_t len, const char *file,
                                 mpk_mlc_params **out, mpk_error *err);
/** Free the mpk_mlc_params and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_params_free(mpk_mlc_params *params);

/**
 * parameter_schema_id = "sha256:" + hex SHA-256 of the canonical JSON of the {"name", "shape",
 * "dtype"} records sorted by name; a named dimension stays a string. Names must be unique.
 */
MPK_API int mpk_mlc_parameter_schema_id(const mpk_mlc_params *params, char out[MPK_SHA256_ID_SIZE],
                                        mpk_error *err);

/** What the parameters need of a device. */
typedef struct mpk_mlc_resources {
  int64_t max_storage_buffer_binding_size; /**< the largest parameter, bytes */
  int64_t estimated_device_memory_bytes;   /**< all parameters, bytes */
} mpk_mlc_resources;

/**
 * Per parameter, bytes = elements x ceil(bits/8) (as MLC's producer counts, sub-byte dtypes too),
 * named dimensions resolved through `dims`; the largest and the sum. An unresolved name is an
 * error that names it.
 */
MPK_API int mpk_mlc_params_resources(const mpk_mlc_params *params, const mpk_mlc_named_dim *dims,
                                     size_t n_dims, mpk_mlc_resources *out, mpk_error *err);

/**
 * The library's parameters (`expected`) against the weights (`actual`): every expected parameter
 * present with the same dtype and the same shape once named dimensions are resolved, and no
 * parameter in the weights that the library does not take. The first difference is the error
 * (MPK_EMISMATCH), naming the parameter; `expected_file`/`actual_file` name the two sides.
 */
MPK_API int mpk_mlc_params_compare(const mpk_mlc_params *expected, const mpk_mlc_params *actual,
                                   const mpk_mlc_named_dim *dims, size_t n_dims,
                                   const char *expected_file, const char *actual_file,
                                   mpk_error *err);

/**
 * Named dimension values from an mlc-chat-config.json: every integer member of its
 * "model_config" object. `*dims` is one malloc'ed block (names included), freed with mpk_free().
 */
MPK_API int mpk_mlc_named_dims_from_chat_config(const char *path, mpk_mlc_named_dim **dims,
                                                size_t *n_dims, mpk_error *err);

/* ============================================================================================
 * mlc: producing the manifest pair (what `modelpkg mlc build` runs)
 * ========================================================================================== */

typedef struct mpk_mlc_build_input {
  /** JSON text of the task description: the `tasks` object itself, or an object holding
      "tasks" (and optionally "programs"). Defaults are filled as the reference parsers do. */
  const char *tasks_json;
  size_t tasks_len;
  /** JSON text of the `programs` object; NULL: from tasks_json's "programs", else from
      `programs_from`. */
  const char *programs_json;
  size_t programs_len;
  const mpk_mlc_artifact *programs_from;   /**< e.g. a library's existing artifact; may be NULL */
  const mpk_mlc_params *params;            /**< what the library takes (named dimensions allowed) */
  const mpk_mlc_named_dim *dims;           /**< values of named dimensions, for resources */
  size_t n_dims;
  const char *const *required_features;    /**< sorted and de-duplicated in the output */
  size_t n_required_features;
} mpk_mlc_build_input;

/** The two documents, malloc'ed; free with mpk_mlc_build_result_free(). */
typedef struct mpk_mlc_build_result {
  char *manifest;        /**< mlc-model-manifest.json bytes, as MLC's Python writer writes them */
  size_t manifest_len;
  char *artifact;        /**< the `artifact` object to embed in the library's _metadata */
  size_t artifact_len;
  char interface_id[MPK_SHA256_ID_SIZE];
  char parameter_schema_id[MPK_SHA256_ID_SIZE];
  mpk_mlc_resources resources;
  int f16_without_shader_f16; /**< 1: a parameter is float16 but "shader-f16" is not among the
                                   required features (a WebGPU device without it cannot run the
                                   shaders): worth a warning, not a refusal */
} mpk_mlc_build_result;

/**
 * Produce the sidecar and the artifact. The sidecar is byte-identical to MLC's Python writer:
 * indent 2, keys in declaration order, task names sorted, inputs in the order given, ASCII
 * escaping, a trailing newline. Refused (MPK_EMISMATCH) when a task names an executor or an
 * adapter the programs do not declare; both documents are re-read with the consumer's rules
 * before they are returned.
 */
MPK_API int mpk_mlc_build(const mpk_mlc_build_input *in, mpk_mlc_build_result *out, mpk_error *err);
/** Release what the result's members own and zero it (not the struct itself); accepts NULL. */
MPK_API void mpk_mlc_build_result_free(mpk_mlc_build_result *out);

/* ============================================================================================
 * mlc: device fit — what a model needs of a device, and whether it fits (`modelpkg fit`)
 * ========================================================================================== */

/** Where the context length that sizes the KV cache came from. */
typedef enum mpk_mlc_fit_context_source {
  MPK_MLC_FIT_CONTEXT_NONE = 0,   /**< no KV cache counted (no library, or kv_state_kind "none") */
  MPK_MLC_FIT_CONTEXT_GIVEN,      /**< the caller's value */
  MPK_MLC_FIT_CONTEXT_LIBRARY,    /**< _metadata's context_field */
  MPK_MLC_FIT_CONTEXT_CHAT_CONFIG /**< the chat config's context_field (the library states none) */
} mpk_mlc_fit_context_source;

/**
 * What a model needs of a device, in bytes (docs/fit.md). Caller-owned, fixed size: nothing to
 * free, nothing borrowed except static strings. A name longer than its buffer is cut and ends in
 * "...". Figures that were not counted are -1 (sizes) or 0/""/NULL (details).
 */
typedef struct mpk_mlc_fit {
  int complete;                 /**< 1: parameters, KV cache and workspace all counted (from a
                                     library's _metadata); 0: parameters only */
  int64_t parameter_bytes;      /**< every parameter: elements x ceil(bits/8) */
  int64_t max_binding_bytes;    /**< the largest parameter (one storage buffer binding) */
  char max_binding_parameter[256]; /**< its name ("" when there are no parameters) */
  int64_t kv_cache_bytes;       /**< kv_bytes_per_token x context; 0 for kv_state_kind "none" */
  int64_t kv_bytes_per_token;   /**< kv_layers x 2 (K and V) x kv_heads x kv_head_dim x element size */
  int64_t kv_layers;            /**< _metadata.kv_cache.num_hidden_layers */
  int64_t kv_heads;             /**< _metadata.kv_cache.num_key_value_heads */
  int64_t kv_head_dim;          /**< _metadata.kv_cache.head_dim */
  const char *kv_dtype;         /**< "float16", "bfloat16" or "float32", from the quantization */
  char quantization[64];        /**< _metadata.quantization, e.g. "q4f16_1" */
  int64_t context;              /**< tokens the KV cache holds */
  mpk_mlc_fit_context_source context_source;
  const char *context_field;    /**< "context_window_size" or "sliding_window_size"; NULL when
                                     the context was given or not counted */
  int64_t workspace_bytes;      /**< the largest _metadata.memory_usage entry */
  char workspace_function[256]; /**< the function needing it (ties: the smallest name) */
  int64_t total_bytes;          /**< parameter + KV cache + workspace bytes */
  int uses_float16;             /**< float16 parameters or KV cache: WebGPU needs shader-f16 */
  const char *kv_none_reason;   /**< when the KV cache is 0 by rule: "kv_state_kind none", or
                                     "embedding model" (no kv_cache and no decode function in
                                     _metadata: an encoder, as WebLLM's ModelType.embedding); else NULL */
} mpk_mlc_fit;

/**
 * What a model needs. Parameters: `weights` when given, else the library's _metadata.params with
 * named dimensions resolved through `dims` (the first entry of a name wins). An unresolved name is
 * MPK_ENOTFOUND naming it and the parameter. With `md` (may be NULL only when `weights` is given;
 * the result is then not `complete`): the KV cache from _metadata.kv_cache (num_hidden_layers,
 * num_key_value_heads, head_dim; an unknown member is MPK_EUNSUPPORTED, a missing kv_cache
 * MPK_ENOTFOUND) for `context` tokens (> 0; 0: _metadata.context_window_size, else
 * sliding_window_size), its element size from _metadata.quantization ("f32" in the name: float32,
 * else "bf16": bfloat16, else "f16": float16, as MLC's model_metadata tool reads it), and the largest
 * _metadata.memory_usage entry. kv_state_kind "rnn_state" and "hybrid", and libraries sharded over
 * several devices, are MPK_EUNSUPPORTED. Errors about _metadata name the file "_metadata" and a
 * JSON pointer into it. Sizes are checked to stay within 2^53.
 */
MPK_API int mpk_mlc_fit_compute(const mpk_mlc_metadata *md, const mpk_mlc_params *weights,
                                const mpk_mlc_named_dim *dims, size_t n_dims, int64_t context,
                                mpk_mlc_fit *out, mpk_error *err);

/**
 * Does `fit` fit a device? Each reason it does not is reported through `on_problem` (may be NULL),
 * in this order: memory (total_bytes > device_memory_bytes; when the fit is not complete, the
 * parameters alone exceeding it, or else MPK_ENOTFOUND: cannot tell), the largest parameter against
 * dev->max_storage_buffer_binding_size, and features: with an artifact (`art` may be NULL) every
 * required feature, as mpk_mlc_check_device() does; without one, "shader-f16" when uses_float16.
 * `device_memory_bytes` < 0 and a NULL `dev` leave those checks out. Returns 0 when it fits, else
 * the first reason's code (MPK_EMISMATCH, or MPK_ENOTFOUND as above), which also goes to `err`.
 */
MPK_API int mpk_mlc_fit_check(const mpk_mlc_fit *fit, const mpk_mlc_artifact *art,
                              const mpk_mlc_device *dev, int64_t device_memory_bytes,
                              mpk_problem_fn on_problem, void *problem_ctx, mpk_error *err);

typedef struct mpk_mlc_fit_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  const char *lib_path;            /**< compiled library or _metadata JSON; NULL: parameters from
                                        the package's tensor cache only (fit not complete) */
  int64_t context;                 /**< > 0: size the KV cache for this many tokens; 0: default */
  const mpk_mlc_named_dim *dims;   /**< named dimension values that win over model_config; each
                                        must be one the library's parameters use (else MPK_EINVAL) */
  size_t n_dims;
  const mpk_mlc_device *device;    /**< NULL: features and binding size not checked */
  int has_device_memory;           /**< 1: check total_bytes against device_memory_bytes */
  int64_t device_memory_bytes;
} mpk_mlc_fit_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MLC_FIT_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mlc_fit_options)

/** What `modelpkg fit` found. Immutable, shareable; freed with mpk_mlc_fit_report_free(). */
typedef struct mpk_mlc_fit_report {
  const char *dir;
  const char *lib_path;           /**< NULL without a library */
  const char *chat_config_path;   /**< the chat config read (named dimensions, context), or NULL */
  const char *weights_path;       /**< the tensor cache counted, or NULL (the library's params were) */
  mpk_mlc_fit fit;
  int device_checked;             /**< 1: a device memory, binding size or feature list was given */
  int refused;                    /**< 1: the library is not the package's (model_type, quantization
                                       or parameters differ, as `check` finds): `problems` lists
                                       every difference and `fit` holds nothing */
  const mpk_error *problems;      /**< why it does not fit (empty when it fits), or why refused */
  size_t n_problems;
  const char *const *notes;       /**< informational lines */
  size_t n_notes;
  struct mpk_mlc_fit_report_priv *priv_;
} mpk_mlc_fit_report;

/**
 * Everything `modelpkg fit` does for a package directory: named dimensions from the chat config's
 * model_config (the manifest's chat_config, else mlc-chat-config.json) under `opts->dims`; the
 * library's _metadata (or, without one, the tensor cache: the manifest's weights_manifest, else
 * tensor-cache.json or ndarray-cache.json); the context from `opts->context`, the library, or else
 * the chat config; then mpk_mlc_fit_compute() and mpk_mlc_fit_check() (the library's artifact, if
 * any). Returns 0 when the needs were computed — `n_problems == 0` then means it fits — or a
 * negative code when they could not be (errors name the file, with the library's path).
 */
MPK_API int mpk_mlc_fit_package(const char *dir, const mpk_mlc_fit_options *opts,
                                mpk_mlc_fit_report **out, mpk_error *err);
/** Free the mpk_mlc_fit_report and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_fit_report_free(mpk_mlc_fit_report *report);

/* ============================================================================================
 * mlc: checking a package directory (what `modelpkg check` runs)
 * ========================================================================================== */

typedef struct mpk_mlc_check_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  const char *lib_path;          /**< compiled library or _metadata JSON; NULL: none */
  const mpk_mlc_device *device;  /**< NULL: no device checks */
  int no_weights;                /**< 1: do not read the shard files (sizes, MD5) */
  unsigned workers;              /**< threads hashing shards; 0: one per CPU, at most 8 */
  mpk_progress_fn progress;      /**< shard hashing progress; may be NULL */
  void *progress_ctx;
} mpk_mlc_check_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MLC_CHECK_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mlc_check_options)

/** Everything `modelpkg check` found. Immutable, shareable; freed with mpk_mlc_report_free(). */
typedef struct mpk_mlc_report {
  const char *dir;
  int has_manifest;                  /**< mlc-model-manifest.json exists */
  const mpk_mlc_package *package;    /**< NULL when absent or not loadable */
  char computed_interface_id[MPK_SHA256_ID_SIZE]; /**< "" when the tasks could not be read */
  const char *lib_path;
  const mpk_mlc_metadata *metadata;  /**< NULL without a library or when unreadable */
  int resolved;                      /**< 1 when `binding` is valid */
  mpk_mlc_binding binding;
  const char *tensor_cache_path;     /**< the tensor cache read, or NULL */
  const mpk_mlc_tensor_cache *tensor_cache; /**< NULL when absent or malformed */
  int weights_verified;              /**< 1 when every shard's size (and MD5, if given) held */
  char weights_parameter_schema_id[MPK_SHA256_ID_SIZE]; /**< of the weights; "" if unknown */
  int has_weights_resources;
  mpk_mlc_resources weights_resources;
  const mpk_error *problems;         /**< every check that failed, in check order */
  size_t n_problems;
  const char *const *notes;          /**< informational lines (e.g. no contract declared);
                                          warnings start with "warning: " */
  size_t n_notes;
  struct mpk_mlc_report_priv *priv_;
} mpk_mlc_report;

/**
 * Run every check on a package directory (and a library, and a device, when given). Returns 0
 * when the checks ran — `n_problems == 0` then means all hold — or a negative code when they
 * could not run (no such directory, no memory).
 */
MPK_API int mpk_mlc_check(const char *dir, const mpk_mlc_check_options *opts,
                          mpk_mlc_report **out, mpk_error *err);
/** Free the mpk_mlc_report and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_report_free(mpk_mlc_report *report);

/* ============================================================================================
 * mlc: where WebLLM finds a model's files, and installing a model into a cache (docs/mlc-install.md)
 * ========================================================================================== */

/**
 * WebLLM 0.2.86's cleanModelUrl: `model_url` gains a trailing "/", then "resolve/main/" unless it
 * already matches /.+\/resolve\/.+\// (as on a hub: "https://huggingface.co/ORG/M" →
 * ".../ORG/M/resolve/main/"), and the result is serialized as WHATWG `new URL(u).href` (scheme
 * and host lowercased, default port dropped, dot segments resolved, path percent-encoded). Only
 * http and https URLs (MPK_EUNSUPPORTED for another scheme and for an internationalized host name,
 * MPK_EINVAL for one that does not parse; docs/mlc-urls.md). `*out` is malloc'ed, freed with mpk_free().
 */
MPK_API int mpk_mlc_clean_model_url(const char *model_url, char **out, mpk_error *err);

/** Where the model's documents are, as resolveModelPackageResourceURLs computes them. */
typedef struct mpk_mlc_resource_urls {
  char *chat_config_url;           /**< new URL(chat_config, model_url) */
  char *tensor_cache_manifest_url; /**< new URL(weights.manifest, model_url) */
  char *tensor_cache_base_url;     /**< new URL(".", tensor_cache_manifest_url): shards resolve here */
} mpk_mlc_resource_urls;

/**
 * WebLLM 0.2.86's resolveModelPackageResourceURLs(model_url, package): `package` is the parsed
 * mlc-model-manifest.json, or NULL (no manifest: "mlc-chat-config.json" and "tensor-cache.json").
 * `model_url` is used as given (WebLLM cleans it first: mpk_mlc_clean_model_url). Every case of
 * conformance/mlc-webllm/resource_urls.json. Free `out`'s members with mpk_mlc_resource_urls_free().
 */
MPK_API int mpk_mlc_resource_urls_resolve(const char *model_url, const mpk_mlc_package *package,
                                          mpk_mlc_resource_urls *out, mpk_error *err);
/** Release the members and zero the struct (not the struct itself); accepts NULL. */
MPK_API void mpk_mlc_resource_urls_free(mpk_mlc_resource_urls *urls);

/** The record an installed MLC model holds (JSON: "installId", "source", "name", "library", ...). */
#define MPK_MLC_INSTALL_RECORD "modelpkg_mlc_install.json"

/** Options of mpk_mlc_install(). Start from MPK_MLC_INSTALL_OPTIONS_INIT; a zero is the default. */
typedef struct mpk_mlc_install_options {
  size_t struct_size;          /**< sizeof as compiled, set by the _INIT macro (docs/API.md) */
  const char *cache_dir;       /**< required: the cache root; created when missing (its parent must exist) */
  const char *name;            /**< the tree's name in the cache; NULL: derived from the source
                                    (docs/mlc-install.md, "Where it goes") */
  const char *lib;             /**< the compiled library: an http(s) URL or a file; NULL: none */
  unsigned connections;        /**< HTTP transfers at once, ranges of one shard included; 0: 4, at most 64 */
  int wait_for_lock;           /**< 1: wait for another installer of the same tree; 0: fail at once */
  int verify;                  /**< 1: a re-install of an unchanged model re-hashes the installed shards */
  unsigned attempts;           /**< tries per transfer; 0: 5 */
  unsigned retry_delay_ms;     /**< the first backoff, doubled up to 8 s; 0: 250 */
  unsigned digest_attempts;    /**< downloads of a shard whose MD5 mismatches; 0: 3 */
  unsigned timeout_secs;       /**< deadline per file over HTTP; 0: 3600 */
  unsigned low_speed_bytes;    /**< slower than this (bytes/s) ...; 0: 1024 */
  unsigned low_speed_secs;     /**< ... for this long is a network error; 0: 30 */
  const char *ca_file;         /**< certificate authorities for https (PEM); NULL: the system's */
  mpk_fetch_event_fn on_event; /**< the engine's download events; may be NULL; never concurrent */
  void *ctx;
} mpk_mlc_install_options;

#define MPK_MLC_INSTALL_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mlc_install_options)

/** What an install did. Freed with mpk_mlc_install_result_free() (members only); empty after a failure. */
typedef struct mpk_mlc_install_result {
  char *tree;               /**< <cache>/<name>: the installed model */
  char *model_url;          /**< the cleaned model URL, or the source directory */
  char *library;            /**< the library's name in the tree, or NULL */
  int has_manifest;         /**< 1: the model ships mlc-model-manifest.json */
  size_t files;             /**< shards (the documents and the library not counted) */
  uint64_t total_bytes;     /**< the shards' sizes added up */
  uint64_t fetched_bytes;   /**< bytes transferred by this run (0 for an unchanged model) */
  uint64_t reused_bytes;    /**< staged by an interrupted run, re-hashed and kept */
  unsigned retries, restarts;
  int replaced;             /**< 1: a previous install was replaced */
  int unchanged;            /**< 1: the same model was installed already: nothing was fetched */
  uint64_t copied_bytes;    /**< shards the previous install held unchanged (same dataPath, size and
                                 MD5), copied from it and re-hashed instead of fetched */
} mpk_mlc_install_result;

/**
 * Install the MLC model at `source` (a directory, or a model URL resolved as WebLLM 0.2.86 does:
 * mpk_mlc_clean_model_url, then mpk_mlc_resource_urls_resolve) into `<cache_dir>/<name>/`: the chat
 * config and the manifest first (checked, and bound to the library's contract when `lib` is given,
 * before any shard is fetched), then the shards of tensor-cache.json, each verified by size and MD5
 * while it arrives, then the library; committed atomically by the fetch engine (docs/fetch.md)
 * with MPK_MLC_INSTALL_RECORD. A second install of the same model is a no-op. `out` may be NULL.
 */
MPK_API int mpk_mlc_install(const char *source, const mpk_mlc_install_options *opts, mpk_mlc_install_result *out,
                            mpk_error *err);
/** Release what the result's members own and zero it; accepts NULL. */
MPK_API void mpk_mlc_install_result_free(mpk_mlc_install_result *r);

/* ============================================================================================
 * mlc: prompt assembly and prefill planning
 * ========================================================================================== */

/*
 * How a runtime feeds a prompt of text and adapter outputs to the compiled functions, as WebLLM
 * 0.2.86's getArtifactPrefillChunks does (docs/prefill.md). The prompt is assembled as: the system
 * prefix token ids (only while the KV cache is empty), then each segment in order — text tokens
 * (modality id 0), or for an audio or image item its prefix_token_ids, one placeholder token per
 * adapter output row (modality id 1), its suffix_token_ids. It is cut into chunks of at most
 * prefill_chunk_size positions; text is flushed before an adapter span, so no chunk mixes text
 * rows with adapter rows, and a span longer than a chunk is split across chunks. Each chunk is one
 * prefill call:
 *   tokens pair:  prefill_tokens(embeddings [1, n, hidden], token ids [1, n], modality ids [1, n], kv, params)
 *   embeds pair:  prefill_embeds(embeddings [1, n, hidden], kv, params)
 * where the embeddings are embed_tokens(token ids) for a text chunk, and rows [row_start,
 * row_start + n) of one adapter output for an adapter chunk. Decoding one token is
 * decode_tokens(token ids [1, 1], kv, params), or decode_embeds(embed_tokens(id) viewed as
 * [1, 1, hidden], kv, params). Token and modality ids are int32, as the compiled functions take them.
 */

/** The most positions one prompt may hold (bounds what a plan allocates). */
#define MPK_MLC_PREFILL_MAX_POSITIONS (INT64_C(1) << 24)

typedef enum mpk_mlc_segment_kind {
  MPK_MLC_SEGMENT_TEXT = 0, /**< token ids from the tokenizer */
  MPK_MLC_SEGMENT_AUDIO,    /**< an input_audio item: the audio adapter's output rows */
  MPK_MLC_SEGMENT_IMAGE     /**< an image_url item: the image adapter's output rows */
} mpk_mlc_segment_kind;

/** A media input as the planner sees it. */
typedef struct mpk_mlc_prefill_input {
  const mpk_mlc_prompt *prompt;  /**< NULL: the contract declares no such input */
  const char *adapter_function;  /**< the adapter to run; may be NULL (only named in plans) */
  int64_t num_embeddings;        /**< rows the adapter always returns (image_decode); 0: known only
                                      once it ran (audio) */
} mpk_mlc_prefill_input;

/** Everything planning needs: the resolved contract and the runtime's window. */
typedef struct mpk_mlc_prefill_config {
  mpk_mlc_generation_inputs generation_inputs; /**< which role pair the prefill and decode are */
  const char *embed_tokens;          /**< function names, for plans (may be NULL) */
  const char *prefill;
  const char *decode;
  mpk_mlc_prefill_input audio;
  mpk_mlc_prefill_input image;
  int64_t prefill_chunk_size;        /**< > 0: the library's _metadata.prefill_chunk_size */
  int64_t context_window_size;       /**< the chat config's; -1 with a sliding window */
  int64_t sliding_window_size;       /**< -1: none, and both context checks run; > 0: both skipped */
  const int64_t *system_prefix_token_ids; /**< conv_template.system_prefix_token_ids; NULL: none */
  size_t n_system_prefix_token_ids;
} mpk_mlc_prefill_config;

/**
 * Fill the contract half of `cfg` (role pair, function names, media prompts, adapters, an image's
 * num_embeddings) from a binding; the window half is left as it is. Pointers borrow from `b`.
 */
MPK_API void mpk_mlc_prefill_config_from_binding(const mpk_mlc_binding *b, mpk_mlc_prefill_config *cfg);

/** A checked copy of a configuration. Immutable, shareable; freed with mpk_mlc_planner_free(). */
typedef struct mpk_mlc_planner {
  mpk_mlc_prefill_config config;     /**< every pointer owned by the planner */
  const char *prefill_chunk_size_from; /**< where mpk_mlc_planner_open() found it: "_metadata" (the
                                            library's) or "chat_config"; NULL when given */
  struct mpk_mlc_planner_priv *priv_;
} mpk_mlc_planner;

/**
 * Check and copy `cfg`. MPK_EINVAL with WebLLM's message when prefill_chunk_size <= 0, when both
 * or neither of context_window_size and sliding_window_size are -1, when the one in use is not
 * positive, or when a token id (system prefix, prompt prefix/placeholder/suffix) is outside
 * [0, 2^31 - 1].
 */
MPK_API int mpk_mlc_planner_new(const mpk_mlc_prefill_config *cfg, mpk_mlc_planner **out, mpk_error *err);
/**
 * A planner from a configuration written as JSON: an object with the fields of
 * mpk_mlc_prefill_config in snake_case, each optional — generation_inputs ("tokens", the default, or
 * "embeds"), embed_tokens, prefill, decode (strings or null), audio and image (null, or
 * {prompt: null | {prefix_token_ids, placeholder_token_id, suffix_token_ids}, adapter_function,
 * num_embeddings}), prefill_chunk_size (default 0), context_window_size and sliding_window_size
 * (default -1), system_prefix_token_ids — read strictly (unknown fields and wrong types refused,
 * MPK_EINVAL naming `file`, NULL: "prefill config", and the field's JSON pointer), then checked by
 * mpk_mlc_planner_new(). Invalid JSON is MPK_EMALFORMED at its byte.
 */
MPK_API int mpk_mlc_planner_parse(const void *data, size_t len, const char *file, mpk_mlc_planner **out,
                                  mpk_error *err);
/**
 * The planner for a package directory and its compiled library: the manifest (with its
 * interface_id self-check), the library's _metadata bound to it (mpk_mlc_resolve(),
 * mpk_mlc_check_kv_state()), prefill_chunk_size from _metadata (else the chat config's),
 * context_window_size / sliding_window_size (absent: -1) and conv_template.system_prefix_token_ids
 * from the chat config the manifest names. MPK_ENOTFOUND when DIR has no manifest (such packages
 * take the legacy chunker, mpk_mlc_legacy_chunks()).
 */
MPK_API int mpk_mlc_planner_open(const char *dir, const char *lib_path, mpk_mlc_planner **out,
                                 mpk_error *err);
/** Free the mpk_mlc_planner and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_planner_free(mpk_mlc_planner *p);

/** One prefill call. Its rows are the prompt positions [offset, offset + n). */
typedef struct mpk_mlc_prefill_chunk {
  size_t offset;              /**< first position, counted from the start of the prompt */
  size_t n;                   /**< positions, 1..prefill_chunk_size */
  const int32_t *token_ids;   /**< n ids (text tokens, or the placeholder over adapter rows) */
  const int32_t *modality_ids;/**< n ids: all 0 (text) or all 1 (adapter rows) */
  int from_adapter;           /**< 0: embeddings = embed_tokens(token_ids); 1: adapter rows */
  size_t item;                /**< from_adapter: index into the plan's items */
  int64_t row_start;          /**< from_adapter: first row of that item's output */
} mpk_mlc_prefill_chunk;

/** One audio or image item of the prompt: one adapter call. */
typedef struct mpk_mlc_prefill_item {
  mpk_mlc_segment_kind kind;     /**< AUDIO or IMAGE */
  size_t segment;                /**< which segment (add call) it was */
  const char *adapter_function;  /**< may be NULL (the configuration named none) */
  int64_t rows;                  /**< the output is [rows, hidden_size] */
  size_t offset;                 /**< where its placeholder span starts in the prompt */
  size_t first_chunk;            /**< its rows are chunks [first_chunk, first_chunk + n_chunks) */
  size_t n_chunks;
} mpk_mlc_prefill_item;

/** A prompt planned. Immutable, shareable; freed with mpk_mlc_prefill_plan_free(). */
typedef struct mpk_mlc_prefill_plan {
  size_t prompt_length;             /**< positions the prompt adds to the KV cache */
  int64_t filled_kv_cache_length;   /**< positions already in the KV cache before it */
  const int32_t *token_ids;         /**< the assembled prompt, prompt_length ids */
  const int32_t *modality_ids;
  const mpk_mlc_prefill_chunk *chunks; /**< in call order; they tile the prompt */
  size_t n_chunks;
  const mpk_mlc_prefill_item *items;   /**< in prompt order */
  size_t n_items;
  mpk_mlc_generation_inputs generation_inputs;
  const char *embed_tokens, *prefill, *decode; /**< borrowed from the planner (may be NULL) */
  struct mpk_mlc_prefill_plan_priv *priv_;
} mpk_mlc_prefill_plan;

/**
 * Plan a prompt step by step, so that a runtime makes the checks where WebLLM does: begin, add
 * each segment in order, finish. add_media runs the context check for the item's rows before any
 * of them is sliced; for an image (rows known from num_embeddings, pass 0) it can run before the
 * adapter, for audio once the adapter's row count is known. The builder borrows `planner`; it is
 * one-thread-at-a-time, and after a failed call every later call fails (MPK_EINVAL).
 */
typedef struct mpk_mlc_prefill_builder mpk_mlc_prefill_builder;
/** `filled_kv_cache_length` >= 0: positions already in the KV cache (0: the system prefix goes first). */
MPK_API int mpk_mlc_prefill_begin(const mpk_mlc_planner *planner, int64_t filled_kv_cache_length,
                                  mpk_mlc_prefill_builder **out, mpk_error *err);
/** Text tokens (each in [0, 2^31 - 1]); n may be 0. */
MPK_API int mpk_mlc_prefill_add_text(mpk_mlc_prefill_builder *b, const int32_t *token_ids, size_t n,
                                     mpk_error *err);
/**
 * An audio or image item with `rows` adapter output rows (0 for an image: num_embeddings).
 * MPK_EUNSUPPORTED when the contract declares no such input; MPK_EMISMATCH when an image's rows
 * differ from num_embeddings; MPK_EINVAL for audio without rows > 0; MPK_ELIMIT (WebLLM's
 * ContextWindowSizeExceededError) when the positions so far plus these rows exceed the context
 * window, unless a sliding window is used.
 */
MPK_API int mpk_mlc_prefill_add_media(mpk_mlc_prefill_builder *b, mpk_mlc_segment_kind kind, int64_t rows,
                                      mpk_error *err);
/**
 * Flush the last text and check the whole prompt: MPK_EINVAL when it holds no position,
 * MPK_ELIMIT when it and the filled KV cache exceed the context window (no sliding window).
 */
MPK_API int mpk_mlc_prefill_finish(mpk_mlc_prefill_builder *b, mpk_mlc_prefill_plan **out, mpk_error *err);
/** Free the mpk_mlc_prefill_builder and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_prefill_builder_free(mpk_mlc_prefill_builder *b);

/** One segment of a prompt, for planning in one call. */
typedef struct mpk_mlc_segment {
  mpk_mlc_segment_kind kind;
  const int32_t *token_ids;   /**< TEXT */
  size_t n_token_ids;
  int64_t rows;               /**< AUDIO / IMAGE: see mpk_mlc_prefill_add_media() */
} mpk_mlc_segment;

/** begin, add every segment, finish. Errors about a segment point at "/segments/<i>". */
MPK_API int mpk_mlc_prefill_plan_segments(const mpk_mlc_planner *planner, int64_t filled_kv_cache_length,
                                          const mpk_mlc_segment *segments, size_t n,
                                          mpk_mlc_prefill_plan **out, mpk_error *err);
/** Free the mpk_mlc_prefill_plan and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_prefill_plan_free(mpk_mlc_prefill_plan *plan);

/**
 * A plan as the JSON object `modelpkg mlc plan --json` holds (docs/prefill.md), without the
 * command's envelope: generation_inputs, functions {embed_tokens, prefill, decode},
 * prefill_chunk_size, prefill_chunk_size_from, context_window_size, sliding_window_size (the
 * planner's), filled_kv_cache_length, prompt_length, items [{kind, segment, adapter_function, rows,
 * offset, chunks: [first, n]}], chunks [{token_ids, modality_ids, embedding_rows: [row_start, n] |
 * null, offset, item}]. Compact UTF-8; `*out` is freed with mpk_free; `out_len` may be NULL.
 */
MPK_API int mpk_mlc_prefill_plan_json(const mpk_mlc_planner *planner, const mpk_mlc_prefill_plan *plan, char **out,
                                      size_t *out_len, mpk_error *err);

/** A prompt described as JSON (the SEGMENTS.json of `modelpkg mlc plan`, docs/prefill.md). */
typedef struct mpk_mlc_segments {
  int64_t filled_kv_cache_length;
  const mpk_mlc_segment *segments;
  size_t n;
  struct mpk_mlc_segments_priv *priv_;
} mpk_mlc_segments;

/**
 * Parse SEGMENTS.json strictly: {"filled_kv_cache_length"?: N, "segments": [{"text": [ids...]} |
 * {"audio": {"rows": N}} | {"image": {}} | {"image": {"rows": N}}, ...]}; unknown fields refused,
 * ids in [0, 2^31 - 1], rows in [1, MPK_MLC_PREFILL_MAX_POSITIONS]. `file` names it in errors.
 */
MPK_API int mpk_mlc_segments_parse(const void *data, size_t len, const char *file, mpk_mlc_segments **out,
                                   mpk_error *err);
/** Free the mpk_mlc_segments and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_segments_free(mpk_mlc_segments *s);

/* Packages without a manifest: WebLLM's getChunkedPrefillInputData. Images are never split and
   share a chunk with the text around them when it fits; text is split at chunk boundaries. */

typedef struct mpk_mlc_legacy_item {
  int is_image;               /**< 0: text tokens; 1: an image */
  int64_t length;             /**< tokens, or the image's embedding size (rows) */
} mpk_mlc_legacy_item;

/** A piece of one item inside a chunk: positions [start, start + count) of item `item`. */
typedef struct mpk_mlc_legacy_piece {
  size_t item;
  int64_t start, count;       /**< an image is always whole: 0, length */
} mpk_mlc_legacy_piece;

typedef struct mpk_mlc_legacy_chunk {
  const mpk_mlc_legacy_piece *pieces;
  size_t n_pieces;
  int64_t length;             /**< positions, at most the chunk size */
} mpk_mlc_legacy_chunk;

/** Immutable, shareable; freed with mpk_mlc_legacy_plan_free(). */
typedef struct mpk_mlc_legacy_plan {
  const mpk_mlc_legacy_chunk *chunks;
  size_t n_chunks;
  struct mpk_mlc_legacy_plan_priv *priv_;
} mpk_mlc_legacy_plan;

/**
 * Chunk items greedily as WebLLM's legacy path does. MPK_ELIMIT (WebLLM's
 * PrefillChunkSizeSmallerThanImageError) when an image is longer than `prefill_chunk_size`;
 * MPK_EINVAL for a chunk size <= 0 or a negative length. Text items of length 0 add no piece.
 */
MPK_API int mpk_mlc_legacy_chunks(const mpk_mlc_legacy_item *items, size_t n, int64_t prefill_chunk_size,
                                  mpk_mlc_legacy_plan **out, mpk_error *err);
/** Free the mpk_mlc_legacy_plan and everything it points to; accepts NULL. */
MPK_API void mpk_mlc_legacy_plan_free(mpk_mlc_legacy_plan *plan);
/**
 * A legacy plan as JSON: [{length, pieces: [{item, start, count}, ...]}, ...], the chunks in order
 * (what the JS package's legacyChunks returns). Compact; `*out` is freed with mpk_free; `out_len`
 * may be NULL.
 */
MPK_API int mpk_mlc_legacy_plan_json(const mpk_mlc_legacy_plan *plan, char **out, size_t *out_len,
                                     mpk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MODELPKG_MLC_H */
