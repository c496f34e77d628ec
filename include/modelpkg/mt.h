/*
 * modelpkg/mt.h — the MobileTransformers package format: manifest, checking, sealing, the weight
 * handoff map, safetensors, its tensors (views: core.h) and the load gate, selection and download
 * plans, installing into a device cache, the on-device LoRA merge, the ONNX inference graph.
 *
 * Threads: every loaded or computed object here (manifest, report, handoff map, safetensors, gate
 * report, download plan, selection, merge report, graph, graph report) is immutable once returned and
 * may be shared between threads; results (mpk_mt_build_result, mpk_mt_install_result,
 * mpk_mt_handoff_build_result) are plain data of the caller's. Between processes and threads alike,
 * the writers lock what they write: one mpk_mt_install per cache and repo id (flock), one mpk_mt_merge
 * per inference directory, and a merge waits for no reader — it fails while a gate report holds the
 * directory (mpk_mt_load_gate()).
 */
#ifndef MODELPKG_MT_H
#define MODELPKG_MT_H

#include "core.h"
#include "fetch.h" /* mpk_fetch_gc_result (mt gc) */

#ifdef __cplusplus
extern "C" {
#endif
/* component: mt */

/* ============================================================================================
 * mt: the MobileTransformers package manifest (mobiletransformers_manifest.json)
 * ========================================================================================== */

#define MPK_MT_MANIFEST_FILENAME "mobiletransformers_manifest.json"
#define MPK_MT_MANIFEST_READER_VERSION "1.0"
#define MPK_MT_HANDOFF_READER_VERSION "1.1"

/** A nullable integer: `present` 0 means absent or JSON null. */
typedef struct mpk_opt_int {
  int present;
  int64_t value;
} mpk_opt_int;

/** A key → string pair (a variant's `paths`: feature → package-relative directory). */
typedef struct mpk_mt_pair {
  const char *key;
  const char *value;
} mpk_mt_pair;

typedef struct mpk_mt_variant {
  const char *id;
  const char *execution_provider;      /**< "cpu", "xnnpack", "nnapi", ... */
  const char *quantization;            /**< NULL when null */
  const char *const *supported_engines;/**< "native", "genai" */
  size_t n_supported_engines;
  int abi_any;                         /**< 1: "abi" is null — the variant runs on any ABI */
  const char *const *abi;              /**< an empty list runs nowhere */
  size_t n_abi;
  const char *const *features;
  size_t n_features;
  mpk_opt_int minimum_android_api;
  mpk_opt_int recommended_device_memory_mb;
  const char *weight_handoff;          /**< NULL when absent or null */
  const mpk_mt_pair *paths;            /**< sorted by key */
  size_t n_paths;
} mpk_mt_variant;

/** One download group of a variant's plan ("core", "inference", "train", "rag", "genai",
    "checksums", or others the writer adds). */
typedef struct mpk_mt_group {
  const char *name;
  const char *const *patterns;
  size_t n_patterns;
} mpk_mt_group;

typedef struct mpk_mt_plan {
  const char *variant;
  const mpk_mt_group *groups;          /**< sorted by name */
  size_t n_groups;
} mpk_mt_plan;

/** A file the manifest lists, in fileSizes and/or sha256. */
typedef struct mpk_mt_file {
  const char *path;
  int has_size;
  uint64_t size;
  const char *sha256;                  /**< 64 lowercase hex digits, or NULL when not listed */
} mpk_mt_file;

/** A parsed manifest. Immutable, shareable; freed with mpk_mt_manifest_free(). */
typedef struct mpk_mt_manifest {
  const char *schema_version;
  const char *min_reader_version;
  const char *base_model_id;           /**< strings below: NULL when absent or null */
  const char *exported_at;
  const char *mobiletransformers_version;
  mpk_opt_int artifact_format_version;
  const char *selected_task;
  int trust_remote_code;               /**< -1 absent/null, else 0/1 */
  const char *optimum_onnx_version;
  const char *transformers_version;
  const char *onnx_runtime_training_version;
  const char *onnx_runtime_genai_version;
  mpk_opt_int trainable_parameter_count;
  mpk_opt_int training_parameter_count;
  const char *default_variant;
  const mpk_mt_variant *variants;      /**< in document order */
  size_t n_variants;
  const mpk_mt_plan *plans;            /**< downloadPlan, sorted by variant id */
  size_t n_plans;
  const char *const *required_files;
  size_t n_required_files;
  const mpk_mt_file *files;            /**< fileSizes and sha256 keys, sorted by path */
  size_t n_files;
  const char *weight_handoff;
  mpk_opt_int android_minimum_api;     /**< androidRuntime */
  mpk_opt_int android_recommended_memory_mb;
  const char *const *android_required_abis;
  size_t n_android_required_abis;
  const char *license_framework;       /**< license */
  const char *license_base_model_weights;
  const char *license_notice_file;
  struct mpk_mt_manifest_priv *priv_;
} mpk_mt_manifest;

/**
 * Read a manifest: the version gate (reader 1.0), then every field of the spec and the reference
 * exporter with its JSON type checked (nullable where the exporter writes null; unknown fields
 * tolerated and kept for mpk_mt_manifest_json()). Variant ids, defaultVariant, weightHandoff,
 * paths, requiredFiles and fileSizes/sha256 keys must be package-relative POSIX paths (no
 * absolute path, "..", ".", empty component, backslash); download patterns must be a path or a
 * directory followed by slash-star-star; sha256 values 64 lowercase hex digits; sizes
 * non-negative integers; variant ids unique. `file` names the document in errors.
 */
MPK_API int mpk_mt_manifest_parse(const void *data, size_t len, const char *file,
                                  mpk_mt_manifest **out, mpk_error *err);
/** Read DIR/mobiletransformers_manifest.json (or a manifest file path). */
MPK_API int mpk_mt_manifest_load(const char *path, mpk_mt_manifest **out, mpk_error *err);

/**
 * The manifest reader's memory budget (docs/mt.md "Budget"). Counted in the document's text before
 * any per-file structure (or the JSON tree) is built; past it the manifest is refused (MPK_ELIMIT,
 * naming the field and the budget): fileSizes keys, sha256 keys, their union and requiredFiles
 * entries each at most max_files; at most MPK_MT_MANIFEST_MAX_VARIANTS variants and
 * MPK_MT_MANIFEST_MAX_PATTERNS download groups and patterns (all plans together).
 */
#define MPK_MT_MANIFEST_DEFAULT_MAX_FILES 100000u
#define MPK_MT_MANIFEST_MAX_VARIANTS 256u
#define MPK_MT_MANIFEST_MAX_PATTERNS 1024u
/** The environment variable that sets the file budget when the caller gives none. */
#define MPK_MT_MANIFEST_MAX_FILES_ENV "MODELPKG_MT_MAX_FILES"
typedef struct mpk_mt_manifest_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  size_t max_files; /**< 0: $MODELPKG_MT_MAX_FILES when set (a positive integer), else
                         MPK_MT_MANIFEST_DEFAULT_MAX_FILES */
} mpk_mt_manifest_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_MANIFEST_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_manifest_options)
/** mpk_mt_manifest_parse / _load with a budget (`opts` NULL: the default budget). */
MPK_API int mpk_mt_manifest_parse_opts(const void *data, size_t len, const char *file,
                                       const mpk_mt_manifest_options *opts, mpk_mt_manifest **out,
                                       mpk_error *err);
MPK_API int mpk_mt_manifest_load_opts(const char *path, const mpk_mt_manifest_options *opts,
                                      mpk_mt_manifest **out, mpk_error *err);
/** Free the mpk_mt_manifest and everything it points to; accepts NULL. */
MPK_API void mpk_mt_manifest_free(mpk_mt_manifest *m);

/** Lookups: the variant with id `id`, the download plan of variant `variant`, the listed file at
    `path`; borrowed from `m`, NULL when absent (or when an argument is NULL). */
MPK_API const mpk_mt_variant *mpk_mt_manifest_variant(const mpk_mt_manifest *m, const char *id);
MPK_API const mpk_mt_plan *mpk_mt_manifest_plan(const mpk_mt_manifest *m, const char *variant);
MPK_API const mpk_mt_file *mpk_mt_manifest_file(const mpk_mt_manifest *m, const char *path);

/**
 * The manifest as the reference exporter writes it (Python json.dumps(indent=2, sort_keys=True,
 * ASCII escapes) + "\n"), unknown fields included. Malloc'ed; free with mpk_free().
 */
MPK_API int mpk_mt_manifest_json(const mpk_mt_manifest *m, char **out, size_t *len, mpk_error *err);

/**
 * The files a variant's download plan selects: every file the manifest lists (fileSizes/sha256)
 * that a pattern of one of `groups` matches (mpk_pattern_matches), once each, sorted by path.
 * `groups` NULL or `n_groups` 0: every group of the plan. The manifest itself is never listed, so
 * it is never among them. `*out` is a malloc'ed array of pointers borrowed from `m` (free the array
 * with mpk_free()). MPK_ENOTFOUND when the variant, its plan or a named group does not exist.
 */
MPK_API int mpk_mt_plan_files(const mpk_mt_manifest *m, const char *variant, const char *const *groups,
                              size_t n_groups, const mpk_mt_file ***out, size_t *n, mpk_error *err);

/* ============================================================================================
 * mt: checking a package directory (what `modelpkg check` runs on a MobileTransformers package)
 * ========================================================================================== */

typedef struct mpk_mt_check_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  const char *variant;      /**< the variant to check; NULL: the manifest's defaultVariant */
  int all_variants;         /**< 1: every variant, and every file the manifest lists (not with variant) */
  int no_hash;              /**< 1: presence, confinement and sizes only; no digest is computed */
  int no_graph;             /**< 1: inference/model.onnx is not read (no map-vs-graph or precision
                                 checks; docs/mt-graph.md) */
  unsigned workers;         /**< threads hashing files; 0: one per CPU, at most 8 */
  mpk_progress_fn progress; /**< hashing progress (bytes); may be NULL; non-zero return cancels */
  void *progress_ctx;
} mpk_mt_check_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_CHECK_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_check_options)

/** Everything the check found. Immutable, shareable; freed with mpk_mt_report_free(). */
typedef struct mpk_mt_report {
  const char *dir;
  const mpk_mt_manifest *manifest;     /**< NULL when it could not be read (the problem says why) */
  const char *const *variants;         /**< ids of the variants checked, in manifest order; none
                                            when no variant could be selected */
  size_t n_variants;
  int all_variants;
  int hashed;                          /**< 1 when digests were computed (not no_hash) */
  size_t n_files;                      /**< listed files in scope (the variants' plans + package-wide) */
  size_t n_files_sized;                /**< of those: present, inside the package, of their listed size */
  size_t n_files_hashed;               /**< of those: whose SHA-256 equals the listed digest */
  size_t n_files_merged;               /**< of those: a tensor merged on device and its sidecar, verified
                                            by the load gate against the sidecar, not the listed digest */
  uint64_t bytes_hashed;
  const char *const *unlisted;         /**< files on disk the manifest does not list, sorted (warnings) */
  size_t n_unlisted;
  const mpk_error *problems;           /**< every check that failed, in check order */
  size_t n_problems;
  const char *const *notes;            /**< informational lines; warnings start with "warning: " */
  size_t n_notes;
  size_t n_tensors;                    /**< merged-weight tensors the load gate saw (checked variants) */
  size_t n_tensors_verified;           /**< of those: verified against their authority (a note each) */
  int installed;                       /**< 1: `dir` is an installed model (docs/mt-installed.md): its one
                                            variant, the files its install holds, at their installed paths */
  struct mpk_mt_report_priv *priv_;
} mpk_mt_report;

/**
 * Check a MobileTransformers package directory, fail-closed (rules: docs/mt.md). The manifest is
 * read (version gate, typed fields, confined paths, download patterns); it must declare a variant
 * and a defaultVariant among them. For the selected variant(s): every claimed feature has its path
 * (inference, train, rag → embedding), every declared path is a directory inside the package, the
 * plan has an "inference" group, and weightHandoff names a weight_handoff_map.json that
 * mpk_mt_handoff_parse() accepts and whose every externalDataLocation file exists in inference/.
 * Every requiredFiles entry exists. The load gate (mpk_mt_load_gate()'s rules; nothing hashed with
 * no_hash) runs read-only on each checked variant's map, in the inference directory opened with no
 * link in its path: a refused tensor (bytes other than the shipped ones that modelpkg's merge
 * record does not name) is a problem, a verified one a note naming its authority, a tensor that
 * cannot be loaded (size or layout) a problem; a pending merge transaction is a problem (check
 * never writes), and a merge journal or record the manifest lists is refused. Integrity: every listed file in scope exists inside the package
 * (symbolic links resolved), has exactly its fileSizes size — all sizes are checked before any
 * hashing — and its sha256 digest (hashed streaming on a pool of `workers` threads). Files on disk
 * the manifest does not list are warnings, not problems.
 * Returns 0 when the checks ran (`n_problems == 0` then means all hold), MPK_ECANCELLED when
 * `progress` asked to stop, or another negative code when they could not run (no such directory,
 * variant together with all_variants, no memory).
 */
MPK_API int mpk_mt_check(const char *dir, const mpk_mt_check_options *opts, mpk_mt_report **out,
                         mpk_error *err);
/**
 * The rules of mpk_mt_check() that the manifest alone decides — variants and their defaultVariant,
 * each checked variant's features, paths and "inference" download group, download patterns, a size
 * and a digest for every listed file — with nothing read from disk: what `mt install` applies before
 * it fetches a byte. `m` is the caller's (borrowed by the report, which must not outlive it); `file`
 * names it in problems (NULL: its file name). `opts` as mpk_mt_check(); its hashing fields are unused.
 */
MPK_API int mpk_mt_check_manifest(const mpk_mt_manifest *m, const char *file, const mpk_mt_check_options *opts,
                                  mpk_mt_report **out, mpk_error *err);
/** Free the mpk_mt_report and everything it points to; accepts NULL. */
MPK_API void mpk_mt_report_free(mpk_mt_report *report);

/* ============================================================================================
 * mt: sealing a package — the manifest and checksums (what `modelpkg mt build` / `mt reseal` run)
 * ========================================================================================== */

#define MPK_MT_CHECKSUMS_FILENAME "checksums.json"

typedef struct mpk_mt_build_input {
  /** The descriptive inputs as BUILD.json text (docs/mt-build.md). NULL: re-seal — they are taken
      from the package's existing mobiletransformers_manifest.json, which must then be readable. */
  const char *describe;
  size_t describe_len;
  const char *describe_file;   /**< names BUILD.json in errors; NULL: "BUILD.json" */
  unsigned workers;            /**< threads hashing files; 0: one per CPU, at most 8 */
  mpk_progress_fn progress;    /**< hashing progress (bytes); may be NULL; non-zero return cancels */
  void *progress_ctx;
  int dry_run;                 /**< 1: compute everything, write nothing */
  /* appended: the parity gate (docs/mt-numeric.md, "mt build --parity") */
  /** Non-NULL: run the train/inference parity gate (mpk_mt_parity() with these options; `variant`
      NULL: the defaultVariant) on the package as it is about to be sealed — the manifest built in
      memory, the tree's files — after every other check and before anything is written. A gate
      that fails or cannot run refuses the build: nothing is written (MPK_EMISMATCH naming the
      verdict, or the gate's own error). */
  const struct mpk_mt_parity_options *parity;
} mpk_mt_build_input;

typedef enum mpk_mt_change_kind {
  MPK_MT_FILE_ADDED = 0,  /**< listed now, not by the previous manifest */
  MPK_MT_FILE_REMOVED,    /**< listed by the previous manifest, gone from the tree */
  MPK_MT_FILE_CHANGED     /**< listed by both, with another size or digest */
} mpk_mt_change_kind;

typedef struct mpk_mt_change {
  const char *path;
  mpk_mt_change_kind kind;
} mpk_mt_change;

/** What mpk_mt_build() did. Caller-owned; release with mpk_mt_build_result_free(). */
typedef struct mpk_mt_build_result {
  int had_manifest;              /**< 1: DIR held a readable manifest, and `changes` compare with it */
  size_t n_files;                /**< files listed (fileSizes / sha256) */
  uint64_t total_bytes;          /**< their sizes added up */
  const mpk_mt_change *changes;  /**< entries of fileSizes/sha256 that differ from the previous
                                      manifest, sorted by path (none without a previous manifest) */
  size_t n_changes;
  const char *const *written;    /**< package-relative paths of the documents whose bytes changed on
                                      disk (with dry_run: would change): the variants'
                                      checksums.json in variant order, then the manifest last */
  size_t n_written;
  char *manifest;                /**< the manifest's bytes (NUL-terminated) */
  size_t manifest_len;
  struct mpk_mt_build_result_priv *priv_;
  /* appended: the parity gate */
  struct mpk_mt_parity_report *parity; /**< with in->parity: the gate's report when it ran (also when it
                                            failed and refused the build); freed with the result */
} mpk_mt_build_result;

/**
 * Seal a MobileTransformers package directory the way the reference exporter does, byte for byte
 * (docs/mt-build.md): the descriptive inputs (provenance and the variant descriptors, in order)
 * from `in->describe` or the existing manifest; everything else derived from the tree — every
 * regular file except any named mobiletransformers_manifest.json is listed with its size and
 * SHA-256 (hashed once, streaming, on `workers` threads), each variant's `paths`, weightHandoff,
 * the six downloadPlan groups, requiredFiles, and each variants/<id>/checksums.json (the digests
 * under variants/<id>/, then listed in the manifest itself: the exporter's two passes, where only
 * the checksums files are hashed again). Documents are Python json.dumps(indent=2, sort_keys=True)
 * with ASCII escapes plus "\n", every key present (null where unknown); each is replaced
 * atomically and only when its bytes change, checksums files first, the manifest last.
 * Refused (nothing written): invalid inputs (errors name the BUILD.json field, or the manifest's);
 * a variant without its variants/<id>/ directory; a symbolic link, special file or non-UTF-8 name
 * in the tree; a missing required file or license noticeFile. The result is read back with
 * mpk_mt_manifest_parse() before anything is written.
 */
MPK_API int mpk_mt_build(const char *dir, const mpk_mt_build_input *in, mpk_mt_build_result *out,
                         mpk_error *err);
/** Release what a result holds (accepts NULL and a zeroed result); the struct itself is the caller's. */
MPK_API void mpk_mt_build_result_free(mpk_mt_build_result *r);

/* ============================================================================================
 * mt: the weight handoff map (weight_handoff_map.json, reader MPK_MT_HANDOFF_READER_VERSION)
 * ========================================================================================== */

#define MPK_MT_HANDOFF_FILENAME "weight_handoff_map.json"

/** The fixed roles of an entry's tensors, in the reference's ROLE_ORDER. */
typedef enum mpk_mt_role {
  MPK_MT_ROLE_WEIGHT = 0,       /**< "weight" */
  MPK_MT_ROLE_WEIGHT_QUANTIZED, /**< "weight_quantized" */
  MPK_MT_ROLE_SCALE,            /**< "scale" */
  MPK_MT_ROLE_ZERO_POINT,       /**< "zero_point" */
  MPK_MT_ROLE_COUNT
} mpk_mt_role;

/** "weight", "weight_quantized", "scale", "zero_point"; NULL for anything else. */
MPK_API const char *mpk_mt_role_name(mpk_mt_role role);

typedef enum mpk_mt_transpose_policy {
  MPK_MT_NO_TRANSPOSE = 0,              /**< "no_transpose" (also when absent) */
  MPK_MT_ALREADY_TRANSPOSED_FOR_INFERENCE /**< "already_transposed_for_inference" */
} mpk_mt_transpose_policy;

/** A shape: every dimension a positive integer. `present` 0: not declared. */
typedef struct mpk_mt_dims {
  const int64_t *dims;
  size_t ndim;
  int present;
} mpk_mt_dims;

/** A named training-side factor's shape (adapterShapes). */
typedef struct mpk_mt_named_dims {
  const char *key;
  mpk_mt_dims shape;
} mpk_mt_named_dims;

/**
 * One entries[] element. The per-role maps are arrays indexed by mpk_mt_role; NULL (or a dims
 * with `present` 0) where the role is absent. Adapter-keyed maps are sorted by key.
 */
typedef struct mpk_mt_handoff_entry {
  size_t index;                         /**< position in the document's entries array */
  const char *training_base_layer_name;
  const char *dtype;                    /**< entry-level: the weight-like role's */
  mpk_mt_dims shape;                    /**< entry-level; absent reads as [] (as the reference) */
  const char *tensor_dtypes[MPK_MT_ROLE_COUNT];
  mpk_mt_dims tensor_shapes[MPK_MT_ROLE_COUNT];
  const char *merger_output_names[MPK_MT_ROLE_COUNT];
  const char *merged_tensor_names[MPK_MT_ROLE_COUNT];
  const char *inference_initializer_names[MPK_MT_ROLE_COUNT];
  const char *external_data_location[MPK_MT_ROLE_COUNT]; /**< a file name in inference/ */
  const char *sha256[MPK_MT_ROLE_COUNT];                 /**< 64 lowercase hex digits */
  const char *genai_input_names[MPK_MT_ROLE_COUNT];
  const mpk_mt_pair *checkpoint_names;  /**< role ("weight", "adapter_A", ...) → checkpoint name */
  size_t n_checkpoint_names;
  const mpk_mt_pair *adapter_dtypes;    /**< adapter role → dtype (1.1) */
  size_t n_adapter_dtypes;
  const mpk_mt_named_dims *adapter_shapes; /**< adapter role → shape (1.1) */
  size_t n_adapter_shapes;
  int quantized;                        /**< 1: a quantization object is present */
  const char *weight_quantized_name;    /**< quantization.weightQuantizedName (when quantized) */
  const char *scale_name;               /**< quantization.scaleName */
  const char *zero_point_name;          /**< quantization.zeroPointName */
  mpk_mt_transpose_policy transpose_policy;
} mpk_mt_handoff_entry;

/** A read and validated handoff map. Immutable, shareable; freed with mpk_mt_handoff_free(). */
typedef struct mpk_mt_handoff {
  const char *schema_version;
  const char *min_reader_version;
  const char *handoff_mode;             /**< always "external_initializer" once read */
  const char *const *engines;           /**< default ["native", "genai"] */
  size_t n_engines;
  const char *external_data_layout;     /**< always "one_file_per_tensor" once read */
  const char *frozen_base_blob;         /**< default "frozen_base.onnx.data" */
  const mpk_mt_pair *merger_models;     /**< merger variant → ONNX file, sorted by key */
  size_t n_merger_models;
  const mpk_mt_handoff_entry *entries;  /**< in document order (the writer sorts them) */
  size_t n_entries;
  struct mpk_mt_handoff_priv *priv_;
} mpk_mt_handoff;

/**
 * Read a weight_handoff_map.json, fail-closed (rules: docs/mt.md, "The weight handoff map"): the
 * version gate first (reader MPK_MT_HANDOFF_READER_VERSION; unknown fields tolerated and kept for
 * mpk_mt_handoff_json()), then every field typed: role maps keyed by the four roles only, names
 * non-empty strings, dtypes from float32 float16 bfloat16 int8 uint8 int4 uint4 int32 int64, every
 * dimension a positive integer, transposePolicy one of its two values, externalDataLocation (and
 * frozenBaseBlob) a plain file name (no separator, not "." or ".."), sha256 64 lowercase hex
 * digits. Then the invariants of HandoffMap.validate(): handoffMode external_initializer
 * (model_input / adapter: MPK_EUNSUPPORTED), externalDataLayout one_file_per_tensor, merged name ==
 * inference name for every role, a quantized entry's names equal its roles' inference names and it
 * declares tensorDtypes/tensorShapes, a role with a file has both when either map is given, no
 * externalDataLocation file, inference initializer name or trainingBaseLayerName claimed twice.
 * Errors name the entry (its trainingBaseLayerName) and the rule, at the JSON pointer of the field.
 */
MPK_API int mpk_mt_handoff_parse(const void *data, size_t len, const char *file, mpk_mt_handoff **out,
                                 mpk_error *err);
/** Read a map file (or DIR/weight_handoff_map.json). */
MPK_API int mpk_mt_handoff_load(const char *path, mpk_mt_handoff **out, mpk_error *err);
/** Free the mpk_mt_handoff and everything it points to; accepts NULL. */
MPK_API void mpk_mt_handoff_free(mpk_mt_handoff *map);

/**
 * The on-disk dtype and shape of an entry's role (its .bin has no header): tensorDtypes[role] and
 * tensorShapes[role] when both are declared; else the entry-level dtype/shape, but only for an
 * entry with a single role that is not quantized (a map written before the per-role fields).
 * Borrowed pointers. MPK_ENOTFOUND when the role is not described.
 */
MPK_API int mpk_mt_handoff_role_layout(const mpk_mt_handoff_entry *entry, mpk_mt_role role, const char **dtype,
                                       const int64_t **shape, size_t *ndim, mpk_error *err);

/**
 * The map in canonical form, byte-identical to the reference HandoffMap.to_json(): every field the
 * reference writes (absent ones with its defaults, a null quantization left out), unknown fields
 * kept, entries sorted by inferenceInitializerNames.weight (else trainingBaseLayerName), Python
 * json.dumps(indent=2, sort_keys=True, ASCII escapes) + "\n". The same bytes whatever the order of
 * the entries read. Malloc'ed; free with mpk_free(). Write it with mpk_write_file_atomic().
 */
MPK_API int mpk_mt_handoff_json(const mpk_mt_handoff *map, char **out, size_t *len, mpk_error *err);

/* ============================================================================================
 * mt: safetensors (adapter factors)
 * ========================================================================================== */

/** The largest safetensors header read: the reference library's limit (MAX_HEADER_SIZE). */
#define MPK_SAFETENSORS_MAX_HEADER 100000000u
/** The reader's memory budget by default (docs/safetensors.md rule 4a): parsing a header
    takes about 16 times its size, so the header bytes and the tensor count are checked against a
    budget before anything is allocated. */
#define MPK_SAFETENSORS_DEFAULT_HEADER_BUDGET (16u * 1024 * 1024)
#define MPK_SAFETENSORS_DEFAULT_TENSOR_BUDGET 100000u

/** A safetensors reader's memory budget; 0 in a field: its default. */
typedef struct mpk_safetensors_budget {
  uint64_t max_header_bytes;            /**< N at most this (and never above MPK_SAFETENSORS_MAX_HEADER) */
  uint64_t max_tensors;                 /**< members of the header at most this */
} mpk_safetensors_budget;

/** One tensor of a safetensors file. Borrowed from its mpk_safetensors. */
typedef struct mpk_safetensors_tensor {
  const char *name;                     /**< non-empty */
  char dtype[8];                        /**< as in the file: "F32", "F16", "BF16", "F64", "I8", "U8", "I16",
                                             "U16", "I32", "U32", "I64", "U64", "BOOL", "F8_E4M3", "F8_E5M2" */
  int32_t ndim;                         /**< 0: a scalar */
  int64_t shape[MPK_TENSOR_MAX_DIMS];   /**< row-major; a 0 dimension makes an empty tensor */
  uint64_t numel;
  uint64_t begin, end;                  /**< data_offsets, relative to the data section */
  const void *data;                     /**< end - begin bytes, little-endian, not necessarily aligned */
} mpk_safetensors_tensor;

/** A safetensors file, read. Immutable, shareable; freed with mpk_safetensors_free(). */
typedef struct mpk_safetensors {
  const char *file;                     /**< the name errors use (a copy; "safetensors" when none given) */
  const mpk_safetensors_tensor *tensors;         /**< sorted by name (bytewise) */
  size_t n_tensors;
  const mpk_mt_pair *metadata;          /**< "__metadata__", string → string, sorted by key (bytewise) */
  size_t n_metadata;
  uint64_t header_len;                  /**< N: the header is bytes [8, 8 + N) */
  uint64_t data_len;                    /**< the data section: bytes [8 + N, file size) */
  struct mpk_safetensors_priv *priv_;
} mpk_safetensors;

/**
 * Read a safetensors file held in memory, strictly (rules: docs/safetensors.md): at least 8 bytes;
 * the header length N little-endian u64, at most MPK_SAFETENSORS_MAX_HEADER (MPK_ELIMIT), 8 + N within the
 * file; the header strict JSON (duplicate keys, invalid UTF-8 and U+0000 refused) starting with '{',
 * JSON whitespace after the object allowed; an optional "__metadata__" object of strings; every
 * other member a tensor with exactly "dtype", "shape", "data_offsets"; dtype one of the fifteen above
 * (else MPK_EUNSUPPORTED); shape non-negative integers, at most MPK_TENSOR_MAX_DIMS, their product
 * (skipping zeros) and the byte size within int64 (MPK_ELIMIT); data_offsets [begin, end] with
 * end - begin the byte size; and the tensors, taken by begin, tiling the data section exactly — the
 * first at 0, each where the previous ends, the last at its end: no hole, no overlap, nothing past
 * the end. Errors are MPK_EMALFORMED unless said otherwise, name `file` and the tensor, with the
 * JSON pointer of the field or the byte offset. `data` is borrowed: it must outlive `*out`.
 */
MPK_API int mpk_safetensors_parse(const void *data, size_t len, const char *file, mpk_safetensors **out,
                                  mpk_error *err);
/** Map `path` read-only and read it as mpk_safetensors_parse() does; `*out` owns the mapping. */
MPK_API int mpk_safetensors_open(const char *path, mpk_safetensors **out, mpk_error *err);
/**
 * mpk_safetensors_parse / _open within a memory budget (NULL: the defaults): a header longer than
 * budget->max_header_bytes, or declaring more than budget->max_tensors members (counted by a scan
 * of the header bytes, before the JSON is parsed), is MPK_ELIMIT naming the budget — refused before
 * any allocation that depends on it.
 */
MPK_API int mpk_safetensors_parse_budget(const void *data, size_t len, const char *file,
                                         const mpk_safetensors_budget *budget, mpk_safetensors **out,
                                         mpk_error *err);
MPK_API int mpk_safetensors_open_budget(const char *path, const mpk_safetensors_budget *budget,
                                        mpk_safetensors **out, mpk_error *err);
/** Free a reader and its mapping (accepts NULL). */
MPK_API void mpk_safetensors_free(mpk_safetensors *st);
/** The tensor named `name` (binary search), or NULL. */
MPK_API const mpk_safetensors_tensor *mpk_safetensors_find(const mpk_safetensors *st, const char *name);
/** The value of "__metadata__" key `key`, or NULL. */
MPK_API const char *mpk_safetensors_metadata(const mpk_safetensors *st, const char *key);
/** Bytes per element of a safetensors dtype name ("F32" 4, "BOOL" 1, ...); 0 when unknown or NULL. */
MPK_API int mpk_safetensors_dtype_size(const char *dtype);
/**
 * A tensor's elements as float32, in a malloc'ed array of numel floats (freed with mpk_free(); a
 * valid pointer even when numel is 0). F32 is copied, F16 and BF16 are widened exactly (subnormals,
 * infinities and NaN payloads kept), F64 is rounded to nearest — a finite F64 value beyond the float32
 * range is refused (MPK_ELIMIT) rather than turned into infinity. Other dtypes: MPK_EUNSUPPORTED.
 */
MPK_API int mpk_safetensors_tensor_to_f32(const mpk_safetensors_tensor *t, float **out, mpk_error *err);

/* ============================================================================================
 * mt: loading tensors (load_tensor_raw) and the load gate (loadMergedWeightsReady)
 * ========================================================================================== */

/**
 * Open entry `e`'s tensor for `role` (session_cache.h::load_tensor_raw): the dtype and shape from
 * mpk_mt_handoff_role_layout() (per-role tensorDtypes/tensorShapes; the entry-level pair only for a
 * single non-quantized role), the file inference_dir/externalDataLocation[role] mapped read-only,
 * and refused (MPK_EMISMATCH, naming the entry, role, file, declared layout and both sizes) unless
 * its size is exactly mpk_tensor_nbytes(). On failure `*out` is zeroed. The view is the caller's:
 * mpk_tensor_view_close() (core.h) unmaps it. Its elements are in host byte order (converted
 * copies on a big-endian host: core.h, "tensor views").
 */
MPK_API int mpk_mt_tensor_open(const char *inference_dir, const mpk_mt_handoff_entry *e, mpk_mt_role role,
                               mpk_tensor_view *out, mpk_error *err);

/** Which digest a tensor was checked against (checksum precedence: the sidecar wins). */
typedef enum mpk_mt_authority {
  MPK_MT_AUTH_NONE = 0,  /**< none: neither a sidecar nor the map's sha256[role] */
  MPK_MT_AUTH_SIDECAR,   /**< <file>.bin.sha256 */
  MPK_MT_AUTH_MAP,       /**< the map's sha256[role] */
  MPK_MT_AUTH_RECORD     /**< merged on device: modelpkg's merge record (.modelpkg-merge-record.json) */
} mpk_mt_authority;

typedef enum mpk_mt_tensor_status {
  MPK_MT_TENSOR_VERIFIED = 0, /**< its SHA-256 equals the authority's digest */
  MPK_MT_TENSOR_PRESENT,      /**< present; no digest computed (presence query) */
  MPK_MT_TENSOR_MISSING,      /**< the .bin does not exist */
  MPK_MT_TENSOR_NO_CHECKSUM,  /**< no sidecar and no map digest: refused */
  MPK_MT_TENSOR_BAD_SIDECAR,  /**< the sidecar's first line is not 64 hex digits, or unreadable */
  MPK_MT_TENSOR_MISMATCH,     /**< the digest differs from the authority's */
  MPK_MT_TENSOR_UNREADABLE    /**< the .bin could not be read */
} mpk_mt_tensor_status;

/** One entry's role with a file, as the gate saw it. */
typedef struct mpk_mt_gate_tensor {
  size_t entry;                 /**< index in the map's entries */
  const char *layer;            /**< trainingBaseLayerName */
  mpk_mt_role role;
  const char *file;             /**< inference_dir/externalDataLocation[role] */
  mpk_mt_tensor_status status;
  mpk_mt_authority authority;
  char sidecar[65];             /**< the sidecar's digest, lowercased ("" when none or bad) */
  char map_sha256[65];          /**< the map's digest ("" when none) */
  char actual[65];              /**< the file's digest: computed now, or the stamp's (report->hashing[i]) ("" when neither) */
  uint64_t size;                /**< the file's size (0 when missing) */
  /* the declared layout (the size rule of mpk_mt_tensor_open); `layout_code` 0: described */
  int layout_code;
  const char *dtype;
  const int64_t *shape;
  size_t ndim;
  uint64_t declared_bytes;      /**< 0 when not computable */
  int size_ok;                  /**< 1: the file size is exactly declared_bytes */
  int merged;                   /**< 1: merged on device, verified against modelpkg's merge record */
} mpk_mt_gate_tensor;

/** How tensor i's digest was had (mpk_mt_gate_report.hashing[i]; an element struct of a result
    array never grows, so facts added after 0.1 come in a parallel array: docs/API.md). */
typedef struct mpk_mt_gate_hashing {
  int from_stamp;               /**< 1: accepted by the stamp: `actual` is the digest it recorded, not hashed now */
  int64_t hashed_at_ms;         /**< when `actual` was computed, Unix epoch ms (now, or the stamp's time); 0: never */
} mpk_mt_gate_hashing;

typedef struct mpk_mt_gate_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  int presence_only;      /**< 1: nothing is hashed: files present, and each sidecar (a few bytes) shipped or recorded */
  unsigned workers;       /**< threads hashing files; 0: one per CPU, at most 8 */
  /* appended: the verification stamp (.modelpkg-verified.json in the inference directory, docs/mt.md) */
  int use_stamp;          /**< 1: accept a file the stamp vouches for without hashing it; refresh the stamp */
  int rehash;             /**< 1: ignore the stamp, hash every file, and write a fresh stamp (implies use_stamp) */
} mpk_mt_gate_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_GATE_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_gate_options)

/** What the gate found. Immutable, shareable; freed with mpk_mt_gate_report_free(). */
typedef struct mpk_mt_gate_report {
  int no_merged_weights;              /**< 1: no map or no entries — use the base weights (ready) */
  int ready;                          /**< 1: every tensor verified (or present, presence_only) */
  const mpk_mt_gate_tensor *tensors;  /**< entries in map order, roles in role order */
  size_t n_tensors;
  size_t n_verified;
  const mpk_error *problems;          /**< one per refused tensor, naming the layer and the file */
  size_t n_problems;
  int recovery;                       /**< an mpk_mt_recovery: what finishing an interrupted merge did */
  size_t recovery_files;              /**< files it renamed (rolled forward) or removed (rolled back) */
  struct mpk_mt_gate_priv *priv_;
  /* appended: the verification stamp */
  size_t n_hashed;                    /**< tensors hashed now */
  size_t n_from_stamp;                /**< tensors accepted by the stamp (not hashed) */
  int stamp_written;                  /**< 1: a fresh stamp was written */
  const char *stamp_ignored;          /**< why an existing stamp was not used (torn, edited...); NULL otherwise */
  const mpk_mt_gate_hashing *hashing; /**< n_tensors, parallel to `tensors` */
} mpk_mt_gate_report;

/**
 * The load gate (HandoffPrecondition.loadMergedWeightsReady) over `map`'s tensors in
 * `inference_dir`: each .bin a regular file beneath it (opened relative to the directory's handle:
 * never through a symbolic link out of it, never blocking on a FIFO), then its digest must be the
 * shipped one, the map's sha256[role] — or, for a tensor merged on device, the post-merge digest
 * that modelpkg's merge record (.modelpkg-merge-record.json, written inside the merge's
 * transaction) lists for it. A sidecar <file>.bin.sha256 (first line, trimmed, 64 hex digits, any
 * case) must agree with the bytes; it never makes other bytes acceptable. Without a map digest the
 * sidecar is the shipped digest; with neither the tensor is refused ("no checksum"). Hashed on a pool of
 * `workers` threads. `map` NULL or without entries: ready, no_merged_weights. Returns 0 when the
 * gate ran (`ready` is the verdict), or a negative code when it could not (no memory, bad args).
 * The declared layout and the size rule are reported per tensor, not part of the verdict. First,
 * an interrupted merge in `inference_dir` is finished or undone (mpk_mt_merge_recover(); its
 * failure, e.g. a merge in progress, is the gate's failure). Then the directory is held against
 * merges (a shared lock) until the report is freed: keep the report while opening the tensors,
 * and no merge can replace them in between (mpk_mt_merge fails "... a reader holds it"); any
 * number of gates may hold the same directory.
 *
 * The verification stamp (opts->use_stamp, or rehash): the gate remembers, in
 * `inference_dir`/.modelpkg-verified.json, each file's SHA-256 with its st_dev, st_ino, size, mtime
 * and ctime (ns). A file whose five values are unchanged and which was not modified in the second
 * the stamp was written or later ("racy", re-hashed) is not hashed again: its stamped digest goes
 * through exactly the judgement above (sidecar, merge record, shipped digest). The stamp carries a
 * checksum over its content; a torn or edited one is ignored (everything hashed). After hashing
 * anything the gate rewrites the stamp atomically; a directory it cannot write to just has no stamp.
 * `rehash` hashes every file and rewrites it. What a stamp cannot see: docs/mt.md.
 */
MPK_API int mpk_mt_load_gate(const char *inference_dir, const mpk_mt_handoff *map, const mpk_mt_gate_options *opts,
                             mpk_mt_gate_report **out, mpk_error *err);
/** Free the report and release its hold on the inference directory (merges may run again); accepts NULL. */
MPK_API void mpk_mt_gate_report_free(mpk_mt_gate_report *r);
/**
 * The verification stamp of `inference_dir` (what `mt list` shows as the last verification): when
 * the load gate wrote it (Unix epoch ms) and how many files it vouches for. MPK_ENOTFOUND: no stamp
 * (never gated with use_stamp); MPK_EMALFORMED: a stamp the gate would ignore (torn or edited,
 * err says why). All pointers but err are required (MPK_EINVAL).
 */
MPK_API int mpk_mt_stamp_info(const char *inference_dir, int64_t *written_at_ms, size_t *n_files, mpk_error *err);
/** "sidecar", "map", "none". */
MPK_API const char *mpk_mt_authority_name(mpk_mt_authority a);
/** "verified", "present", "missing", "no checksum", "bad sidecar", "mismatch", "unreadable". */
MPK_API const char *mpk_mt_tensor_status_name(mpk_mt_tensor_status s);

/* ============================================================================================
 * mt: choosing a variant and planning its download (what `modelpkg mt select` / `mt plan` run)
 * ========================================================================================== */

/** The quantization preference when the caller gives none: the reference's default. */
#define MPK_MT_DEFAULT_PREFER_QUANT "int4"

/** How much of `free_bytes` a download may use: 90%, rounded down — floor(free_bytes * 9 / 10),
    computed exactly (3000 → 2700, 2999 → 2699). */
MPK_API uint64_t mpk_mt_storage_budget(uint64_t free_bytes);

/** One file of a download plan. Strings are borrowed from the manifest. */
typedef struct mpk_mt_planned_file {
  const char *path;                    /**< package-relative; the URL is <base>/<path> */
  const char *group;                   /**< the first planned group that selects it */
  int has_size;                        /**< 0: fileSizes does not list it (refused unless allow_unverifiable) */
  uint64_t size;                       /**< fileSizes; 0 without one */
  const char *sha256;                  /**< 64 lowercase hex digits; NULL: not listed (refused likewise) */
} mpk_mt_planned_file;

typedef struct mpk_mt_plan_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  /** Feature groups to fetch besides "core" and "checksums", which are always planned. NULL/0:
      {"inference"}. Each must be a feature the variant declares and a group of its plan. */
  const char *const *features;
  size_t n_features;
  /** 1: a planned file without a fileSizes size or a sha256 digest is reported (`n_unverifiable`,
      `problems`) instead of failing — for showing a plan, never for installing one. */
  int allow_unverifiable;
} mpk_mt_plan_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_PLAN_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_plan_options)

/** The files to fetch for a variant and its feature groups. Immutable, shareable; mpk_mt_download_plan_free(). */
typedef struct mpk_mt_download_plan {
  const char *variant;
  const char *const *features;         /**< the requested features as used (default applied, deduplicated) */
  size_t n_features;
  const char *const *groups;           /**< the groups planned: "core", "checksums", then the features */
  size_t n_groups;
  const mpk_mt_planned_file *files;    /**< sorted by path (bytewise), each once */
  size_t n_files;
  uint64_t total_bytes;                /**< the sizes of `files` added up: the bytes to download */
  int includes_manifest;               /**< 1: a group names mobiletransformers_manifest.json, which lists no
                                            size or digest of itself: not in `files`, not in the total —
                                            the installer writes the manifest it already read */
  size_t n_unverifiable;               /**< files without a size or a digest (only with allow_unverifiable) */
  const mpk_error *problems;           /**< one per missing size or digest, naming the file */
  size_t n_problems;
  const char *const *notes;            /**< planned patterns that select no listed file (warnings) */
  size_t n_notes;
  struct mpk_mt_download_plan_priv *priv_;
} mpk_mt_download_plan;

/**
 * Plan the download of `variant` for the groups "core", "checksums" and `opts->features` (NULL opts:
 * {"inference"}): every file the manifest lists (fileSizes ∪ sha256) that a pattern of those groups
 * selects (docs/mt.md, "Download patterns"), with its size, digest and group, and the total — before
 * any large file is fetched. Every planned file must have both a size and a digest: the installer
 * refuses what it cannot verify, so a plan with such a file fails (MPK_EMALFORMED, naming the file
 * and the missing field) unless `allow_unverifiable`. MPK_ENOTFOUND: no such variant, no plan for
 * it, a planned group missing from the plan, a feature the variant does not declare. MPK_EINVAL: an
 * empty feature name. On failure `*out` is NULL.
 */
MPK_API int mpk_mt_plan_download(const mpk_mt_manifest *m, const char *variant, const mpk_mt_plan_options *opts,
                                 mpk_mt_download_plan **out, mpk_error *err);
/** Free the mpk_mt_download_plan and everything it points to; accepts NULL. */
MPK_API void mpk_mt_download_plan_free(mpk_mt_download_plan *p);

/** The device and the request a variant is selected for. Start from MPK_MT_SELECT_OPTIONS_INIT: every
    field left unset (NULL, 0, `present` 0) is "unspecified", and an unspecified fact filters nothing. */
typedef struct mpk_mt_select_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  const char *const *abis;             /**< device ABIs; a variant matches when its abi list shares one */
  size_t n_abis;
  const char *execution_provider;      /**< exact match with the variant's executionProvider */
  const char *quantization;            /**< exact match with the variant's quantization (a hard filter) */
  const char *engine;                  /**< must be in the variant's supportedEngines */
  mpk_opt_int memory_mb;               /**< device memory: recommendedDeviceMemoryMb must not exceed it */
  mpk_opt_int api_level;               /**< device API level: minimumAndroidApi must not exceed it */
  mpk_opt_int free_bytes;              /**< free storage: the download must fit mpk_mt_storage_budget() */
  const char *const *features;         /**< as mpk_mt_plan_options (NULL/0: {"inference"}); the variant must
                                            declare each, and its download is sized for them */
  size_t n_features;
  const char *const *prefer_quant;     /**< quantizations, most preferred first. NULL:
                                            {MPK_MT_DEFAULT_PREFER_QUANT}; non-NULL with 0: no preference */
  size_t n_prefer_quant;
} mpk_mt_select_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_SELECT_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_select_options)

/** The filters, in the order they are applied; a candidate records the first that excluded it. */
typedef enum mpk_mt_filter {
  MPK_MT_FILTER_NONE = 0,              /**< passed every filter */
  MPK_MT_FILTER_ABI,
  MPK_MT_FILTER_EXECUTION_PROVIDER,
  MPK_MT_FILTER_QUANTIZATION,
  MPK_MT_FILTER_ENGINE,
  MPK_MT_FILTER_FEATURES,
  MPK_MT_FILTER_MEMORY,
  MPK_MT_FILTER_API_LEVEL,
  MPK_MT_FILTER_PLAN,                  /**< its download plan fails (a file without size or digest, ...) */
  MPK_MT_FILTER_STORAGE                /**< passed the hard filters; its download exceeds the budget */
} mpk_mt_filter;

/** "none", "abi", "executionProvider", "quantization", "engine", "features",
    "recommendedDeviceMemoryMb", "minimumAndroidApi", "downloadPlan", "storage". */
MPK_API const char *mpk_mt_filter_name(mpk_mt_filter f);

/** One variant's fate in a selection. */
typedef struct mpk_mt_candidate {
  const mpk_mt_variant *variant;       /**< borrowed from the manifest */
  mpk_mt_filter excluded_by;           /**< the first filter that excluded it; NONE: eligible */
  const char *reason;                  /**< one line: why it was excluded, chosen, or ranked below */
  int has_bytes;                       /**< 1: its plan for the requested features could be computed */
  uint64_t download_bytes;             /**< that plan's total_bytes */
  size_t rank;                         /**< 1-based place in preference order among the variants that
                                            passed the hard filters (storage aside); 0: excluded before */
  int chosen;
} mpk_mt_candidate;

/** A selection and its explanation. Immutable, shareable; freed with mpk_mt_selection_free(). */
typedef struct mpk_mt_selection {
  const mpk_mt_variant *chosen;        /**< NULL when no variant fits */
  const mpk_mt_candidate *candidates;  /**< one per variant, in manifest order */
  size_t n_candidates;
  const char *const *features;         /**< the requested features as used */
  size_t n_features;
  const char *const *groups;           /**< the groups sized: "core", "checksums", then the features */
  size_t n_groups;
  const char *const *prefer_quant;     /**< the preference list as used */
  size_t n_prefer_quant;
  const char *preferred_quant;         /**< its first entry any ranked candidate has; NULL: none has one */
  int has_budget;                      /**< 1: free_bytes was given */
  uint64_t free_bytes, budget_bytes;
  int fell_back;                       /**< 1: a better-ranked candidate did not fit the budget */
  const char *summary;                 /**< one line: what was chosen and why, or why nothing was */
  struct mpk_mt_selection_priv *priv_;
} mpk_mt_selection;

/**
 * Choose the variant of `m` for a device (spec "Validation and variant selection"; rules:
 * docs/mt-select.md). Hard filters, in order: ABI (abi null runs anywhere, an empty list nowhere),
 * execution provider, quantization, engine ∈ supportedEngines, requested features ⊆ features,
 * recommendedDeviceMemoryMb ≤ memory, minimumAndroidApi ≤ API level (a null requirement passes),
 * then the download plan must be installable. The rest are ranked: the earliest quantization of the
 * preference list first (unlisted last), then the smallest download for the requested features,
 * then the defaultVariant, then the id (bytewise). With free storage given, the best-ranked one whose
 * download fits mpk_mt_storage_budget() wins — a better one that does not fit is passed over, not
 * fatal. Returns 0 with `(*out)->chosen` set; MPK_ENOVARIANT when nothing fits — `err` then lists
 * every variant and the first filter that excluded it, and `*out` is set too, so the caller can
 * show each candidate (free it in both cases); other negative codes (`*out` NULL) when the selection
 * could not run (invalid options, no memory).
 */
MPK_API int mpk_mt_select(const mpk_mt_manifest *m, const mpk_mt_select_options *opts, mpk_mt_selection **out,
                          mpk_error *err);
/** Free the mpk_mt_selection and everything it points to; accepts NULL. */
MPK_API void mpk_mt_selection_free(mpk_mt_selection *s);

/* ============================================================================================
 * mt: installing a package into a device cache (what `modelpkg mt install` runs)
 * ========================================================================================== */

/** A repo id's cache directory name is at most this many bytes (NAME_MAX). */
#define MPK_MT_REPO_DIR_MAX 255

/**
 * The name of a Hub repo id's directory in the installed cache, `<cacheDir>/<name>/` (the
 * reference sanitize_repo_id, every case of sanitize_repo_id_cases.json): per Unicode code point of
 * the UTF-8 input, '/' becomes "__", A-Z a-z 0-9 '.' '_' '-' are kept, anything else becomes one
 * '_'; no trimming, case folding or truncation. Written NUL-terminated into `out` (give
 * MPK_MT_REPO_DIR_MAX + 1 bytes). Refused, leaving `out` empty: invalid UTF-8, an empty id, a name
 * that is "." or ".." (MPK_EINVAL); a name longer than MPK_MT_REPO_DIR_MAX bytes or `out_size` - 1
 * (MPK_ELIMIT). The rule is not one-to-one ("a/b" and "a__b" share "a__b"): an installer keeps the
 * repo id in its install record and refuses a directory that holds another one.
 */
MPK_API int mpk_mt_sanitize_repo_id(const char *repo_id, char *out, size_t out_size, mpk_error *err);

/** The install record written into every installed tree (repo id, variant, features, time). */
#define MPK_MT_INSTALL_RECORD "modelpkg_install.json"
/** The reference runtime's install record (InstallRecord.kt): read, and written beside modelpkg's by
    every install, as Gson writes it: compact {"repoId","variantId","features" (sorted),"installedAtEpochMs"}. */
#define MPK_MT_REFERENCE_INSTALL_RECORD "install_record.json"

/** Which record named an installed model's variant. */
enum {
  MPK_MT_RECORD_NONE = 0,      /**< no record: a hand-pushed tree (inference/ without variants/) */
  MPK_MT_RECORD_MODELPKG = 1,  /**< modelpkg_install.json */
  MPK_MT_RECORD_REFERENCE = 2  /**< install_record.json only */
};

/** An installed model: what its install records say (docs/mt-installed.md). Read-only; freed with
    mpk_mt_installed_free(). */
typedef struct mpk_mt_installed {
  const char *repo_id;            /**< recorded; else the directory name un-sanitized ("__" → "/") */
  const char *variant;            /**< the variant recorded at install (NULL: none recorded) */
  const char *const *features;    /**< the feature groups recorded at install */
  size_t n_features;
  int64_t installed_at_ms;        /**< epoch milliseconds (0: unrecorded) */
  const char *install_id;         /**< modelpkg's record only (else NULL) */
  const char *source;             /**< where it was installed from: modelpkg's record only (else NULL) */
  int record;                     /**< MPK_MT_RECORD_*: the record that named the variant */
  struct mpk_mt_installed_priv *priv_;
} mpk_mt_installed;

/**
 * Read installed model `dir` (`<cache>/<sanitized repo id>`): modelpkg's record, else the reference
 * runtime's (when both exist they must agree: MPK_EMISMATCH). A directory with neither record is an
 * installed model when it has `inference/` and no `variants/` (a hand-pushed tree), else
 * MPK_ENOTFOUND ("not an installed model"). `dir` and `out` may not be NULL (MPK_EINVAL).
 */
MPK_API int mpk_mt_installed_open(const char *dir, mpk_mt_installed **out, mpk_error *err);
/** Accepts NULL. */
MPK_API void mpk_mt_installed_free(mpk_mt_installed *installed);
/**
 * The one default-variant rule (install, check, merge, tensors, graph, plan): the variant recorded
 * in `installed` (may be NULL), else the manifest's defaultVariant. NULL when neither names one.
 */
MPK_API const char *mpk_mt_default_variant(const mpk_mt_manifest *m, const mpk_mt_installed *installed);
/** The largest manifest an installer reads from a source. */
#define MPK_MT_MANIFEST_MAX_BYTES ((size_t)16 * 1024 * 1024)

typedef enum mpk_mt_install_event_kind {
  MPK_MT_INSTALL_PLANNED = 0,  /**< the plan is known: `files`, `total` */
  MPK_MT_INSTALL_FILE_START,   /**< `file` starts; `file_done` bytes of it were already staged */
  MPK_MT_INSTALL_FILE_DONE,    /**< `file` is complete, verified and synced */
  MPK_MT_INSTALL_RETRY,        /**< `file` is fetched again; `message` says why */
  MPK_MT_INSTALL_BYTES,        /**< bytes arrived (`done` of `total`) */
  MPK_MT_INSTALL_COMMITTED     /**< the new tree replaced the old one */
} mpk_mt_install_event_kind;

/** One progress event. Strings are borrowed for the call. */
typedef struct mpk_mt_install_event {
  mpk_mt_install_event_kind kind;
  const char *file;             /**< package-relative path (file events), else NULL */
  uint64_t file_done, file_size;
  uint64_t done, total;         /**< bytes of the whole plan present and hashed, and in all */
  size_t files;                 /**< files planned */
  const char *message;          /**< RETRY: the reason */
} mpk_mt_install_event;

/** Progress: return non-zero to cancel (MPK_ECANCELLED; what is staged stays for a resume). Called
    from worker threads, never concurrently. */
typedef int (*mpk_mt_install_fn)(void *ctx, const mpk_mt_install_event *ev);

/** Options of mpk_mt_install(). Start from MPK_MT_INSTALL_OPTIONS_INIT; every field's zero value is its
    default (the struct_size rule: docs/API.md, "Options structs"). */
typedef struct mpk_mt_install_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  const char *repo_id;              /**< the Hub repo id, e.g. "org/name" (required) */
  const char *cache_dir;            /**< the cache root; created when missing (its parent must exist) */
  const char *variant;              /**< the variant id; NULL: chosen by mpk_mt_select() with `select` */
  const mpk_mt_select_options *select; /**< the device, when `variant` is NULL (NULL: unspecified); its
                                         features are replaced by `features`, and its free_bytes, when
                                         not given, is the cache file system's free space */
  const char *const *features;      /**< groups besides "core" and "checksums"; NULL/0: {"inference"} */
  size_t n_features;
  unsigned jobs;                    /**< files fetched at once; 0: 4 (at most 64) */
  int wait_for_lock;                /**< 1: wait for another installer of the same cache and repo id;
                                         0: fail at once (MPK_EIO "another installer ...") */
  unsigned attempts;                /**< tries per transfer (network errors, 5xx); 0: 5 */
  unsigned retry_delay_ms;          /**< the first backoff, doubled each retry up to 8 s; 0: 250 */
  unsigned digest_attempts;         /**< downloads of a file whose digest mismatches; 0: 3 */
  mpk_mt_install_fn on_event;       /**< may be NULL */
  void *ctx;
  /* HTTP bounds (docs/mt-install.md, "Bounds"). */
  unsigned timeout_secs;            /**< the deadline of each file (and of the manifest) over HTTP, every try
                                         and backoff included; past it the file fails (MPK_EIO naming the URL
                                         and the deadline), not retried; 0: 3600 */
  unsigned low_speed_bytes;         /**< a transfer slower than this many bytes per second ... ; 0: 1024 */
  unsigned low_speed_secs;          /**< ... for this many seconds is a network error (retried within the
                                         deadline); 0: 30 */
  /* grown after 0.1 (docs/API.md, "Options structs and ABI growth") */
  unsigned connections;             /**< HTTP transfers at once, a large file's ranges included
                                         (mpk_fetch_options.connections); 0: `jobs` */
  const char *ca_file;              /**< certificate authorities for https (PEM); NULL: the system's */
} mpk_mt_install_options;

/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_INSTALL_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_install_options)

/** An adapter merged into the install an update replaced (docs/mt-install.md, "Updating a merged
    install"). */
typedef struct mpk_mt_install_adapter {
  char *sha256;    /**< the adapter's content digest, as its membership records it */
  int reapplied;   /**< 1: merged into the new version before the commit; 0: dropped (the base installed) */
  char *reason;    /**< why it was dropped (which entry no longer fits, old vs new), or NULL */
} mpk_mt_install_adapter;

/** What an install did. Freed with mpk_mt_install_result_free() (fields only, not the struct); empty
    after a failure. */
typedef struct mpk_mt_install_result {
  char *repo_dir;               /**< <cache>/<sanitized repo id> */
  char *variant;                /**< the variant installed (given or selected) */
  size_t files;                 /**< files installed (the manifest and the record not counted) */
  uint64_t total_bytes;         /**< their sizes added up */
  uint64_t reused_bytes;        /**< bytes already staged by an interrupted install, re-hashed, kept */
  unsigned retries, restarts;   /**< transfers retried; files started over (Range ignored, content changed) */
  int replaced;                 /**< 1: a previous install was replaced */
  mpk_mt_install_adapter *adapters; /**< the adapters merged into the replaced install: re-applied or dropped */
  size_t n_adapters;
} mpk_mt_install_result;

/* component: mt fetch */
/**
 * Read the manifest of a package source — a directory or an http(s) base URL — as the installer
 * does: at most MPK_MT_MANIFEST_MAX_BYTES, version-gated and parsed (mpk_mt_manifest_parse()).
 * What `mt select` and `mt plan` run on a URL.
 */
MPK_API int mpk_mt_manifest_open_source(const char *source, mpk_mt_manifest **out, mpk_error *err);

/**
 * Install `variant` of the package at `source` (a directory, or an http(s) base URL: files are
 * fetched as <base>/<package path>) into `<cache_dir>/<sanitized repo id>/`, in the spec's installed
 * layout: the variant's inference/, train/, embedding/ and the tokenizer under their stage names,
 * the manifest, the variant's checksums.json, other planned files at their package paths, plus
 * MPK_MT_INSTALL_RECORD. The manifest is read first (at most MPK_MT_MANIFEST_MAX_BYTES) and
 * version-gated; every planned file must list a size and a SHA-256, else nothing is fetched
 * (MPK_EMALFORMED). Files are hashed while they arrive, sized exactly, staged in
 * `<cache_dir>/.staging/<name>/` and resumed (HTTP Range) by the next install after an interruption.
 * The previous install stays intact until the new tree is complete and synced; one rename swaps
 * them (docs/mt-install.md has the crash analysis). One installer per cache and repo id (flock).
 * `out` may be NULL. docs/mt-install.md.
 */
MPK_API int mpk_mt_install(const char *source, const mpk_mt_install_options *opts, mpk_mt_install_result *out,
                           mpk_error *err);
/** Release what the result's members own and zero it (not the struct itself); accepts NULL. */
MPK_API void mpk_mt_install_result_free(mpk_mt_install_result *r);
/**
 * Finish what an interrupted install's commit left for `repo_id` in `cache_dir` (every install does
 * this first, under the lock): a new tree marked complete is swapped in, leftovers removed, so
 * `<cache_dir>/<name>/` is the old install or the new one. A runtime calls it at startup before it
 * loads from the cache — only needed on file systems without RENAME_EXCHANGE, where a crash between
 * the two renames leaves the directory briefly absent (docs/mt-install.md). A partial download is
 * left staged for the next install. `*recovered` (may be NULL): 1 when a commit was finished.
 * MPK_EIO when an installer holds the lock.
 */
MPK_API int mpk_mt_install_recover(const char *cache_dir, const char *repo_id, int *recovered, mpk_error *err);
/* component: mt */
/**
 * Where a package file goes in an installed tree of `variant` (malloc'ed, free with mpk_free()):
 * `<variant paths[stage]>/x` → `<stage>/x` for the stages inference, train, embedding and tokenizer;
 * `variants/<id>/checksums.json` → `checksums.json`; anything else stays at its package path.
 */
MPK_API int mpk_mt_installed_path(const mpk_mt_variant *variant, const char *package_path, char **out,
                                  mpk_error *err);

/* component: mt fetch */
/* ============================================================================================
 * mt: the installed cache — what is installed, removing an install, garbage (docs/mt-cache.md)
 * ========================================================================================== */

/** One installed model: a directory `<cache>/<name>/` (not a dot name). */
typedef struct mpk_mt_cache_entry {
  char *name;              /**< the directory's name (the sanitized repo id) */
  char *repo_id;           /**< from the install record (modelpkg's, else the reference's; a blank
                                repoId does not count), else the name with "__" as "/" (the
                                reference's fallback, lossy) */
  const char *record;      /**< MPK_MT_INSTALL_RECORD, MPK_MT_REFERENCE_INSTALL_RECORD, or NULL: none */
  char *variant;           /**< the installed variant; NULL when no record says */
  char **features;         /**< the feature groups recorded at install */
  size_t n_features;
  int64_t installed_at_ms; /**< milliseconds since the epoch (UTC); 0 when unrecorded */
  uint64_t bytes;          /**< the sizes of its regular files added up (as the reference's sizeBytes) */
  uint64_t disk_bytes;     /**< the blocks allocated to the tree, in bytes */
  int has_manifest;        /**< 1: the manifest is there */
  char **adapters;         /**< the SHA-256 of each adapter merged into it (its membership, docs/mt-merge.md) */
  size_t n_adapters;
  int64_t verified_at_ms;  /**< when the load gate last wrote its verification stamp (0: no valid stamp) */
  size_t verified_files;   /**< the files that stamp vouches for */
} mpk_mt_cache_entry;

/** What mpk_mt_cache_list() found. Freed with mpk_mt_cache_listing_free(). */
typedef struct mpk_mt_cache_listing {
  mpk_mt_cache_entry *entries; /**< sorted by name */
  size_t n;
  char **notes;                /**< what was not listed and why (a symbolic link in the cache) */
  size_t n_notes;
} mpk_mt_cache_listing;

/**
 * The models installed in `cache_dir`, one entry per directory that is not a dot name (`.staging`
 * and anything else starting with '.' are skipped, as the reference's CacheIndex does); links are
 * never followed (a note each). Read-only: takes no lock. No cache directory: MPK_ENOTFOUND.
 */
MPK_API int mpk_mt_cache_list(const char *cache_dir, mpk_mt_cache_listing **out, mpk_error *err);
/** Accepts NULL. */
MPK_API void mpk_mt_cache_listing_free(mpk_mt_cache_listing *l);

/** Options of mpk_mt_cache_remove(); start from MPK_MT_CACHE_REMOVE_OPTIONS_INIT. */
typedef struct mpk_mt_cache_remove_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro */
  int wait_for_lock;  /**< 1: wait for an installer of the same repo id; 0: fail at once (MPK_EIO) */
} mpk_mt_cache_remove_options;
#define MPK_MT_CACHE_REMOVE_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_cache_remove_options)

/** What mpk_mt_cache_remove() did; fields freed with mpk_mt_cache_remove_result_free(). */
typedef struct mpk_mt_cache_remove_result {
  char *repo_dir;      /**< <cache>/<name>, no longer there */
  int held;            /**< 1: a reader holds the tree: it was moved out of place and kept retired */
  char *retired_path;  /**< where it waits (held only), removed by mpk_mt_cache_gc() once free */
  uint64_t bytes;      /**< the sizes of its regular files */
} mpk_mt_cache_remove_result;

/**
 * Remove the install of `repo_id` from `cache_dir` under the repo's installer lock (the same lock
 * as mpk_mt_install(); an interrupted commit is finished first): the tree is renamed out of place
 * in one step (no reader ever sees half of it), then deleted by handle — unless a reader holds it
 * (the load gate's flock on its inference directory, or a merge), in which case it is kept retired
 * (`held`) for mpk_mt_cache_gc(). Not installed: MPK_ENOTFOUND, nothing created. A tree whose record
 * names another repo id (the same sanitized name): MPK_EMISMATCH, untouched. A tree that is a link:
 * refused, never followed. `opts` and `out` may be NULL.
 */
MPK_API int mpk_mt_cache_remove(const char *cache_dir, const char *repo_id, const mpk_mt_cache_remove_options *opts,
                                mpk_mt_cache_remove_result *out, mpk_error *err);
/** Release what the result's members own and zero it; accepts NULL. */
MPK_API void mpk_mt_cache_remove_result_free(mpk_mt_cache_remove_result *r);

/** Options of mpk_mt_cache_gc(); start from MPK_MT_CACHE_GC_OPTIONS_INIT. */
typedef struct mpk_mt_cache_gc_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro */
  int dry_run;        /**< 1: report what would be removed, change nothing */
} mpk_mt_cache_gc_options;
#define MPK_MT_CACHE_GC_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_cache_gc_options)

/**
 * mpk_fetch_gc() on an mt cache: interrupted commits finished, partial downloads, retired trees no
 * reader holds, orphaned locks removed; never a stage an installer holds or a tree a reader holds;
 * never an installed tree. `opts` may be NULL. Free `*out` with mpk_fetch_gc_result_free().
 */
MPK_API int mpk_mt_cache_gc(const char *cache_dir, const mpk_mt_cache_gc_options *opts, mpk_fetch_gc_result **out,
                            mpk_error *err);

/* component: mt */
/* ============================================================================================
 * mt: merging a trained LoRA adapter into the inference weights (on-device merge)
 * ========================================================================================== */

/** How an on-disk weight is laid out relative to the training checkpoint's [out, in]. */
typedef enum mpk_mt_orientation {
  MPK_MT_ORIENT_UNDECIDED = 0,     /**< options: observe it; an entry: square, it cannot tell */
  MPK_MT_ORIENT_NO_TRANSPOSE,      /**< "no_transpose": the .bin is [out, in] */
  MPK_MT_ORIENT_ALREADY_TRANSPOSED /**< "already_transposed_for_inference": the .bin is [in, out] */
} mpk_mt_orientation;

/** "no_transpose", "already_transposed_for_inference", "undecided". */
MPK_API const char *mpk_mt_orientation_name(mpk_mt_orientation o);

typedef struct mpk_mt_merge_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  const char *variant;             /**< NULL: the manifest's defaultVariant */
  const char *adapter;             /**< the adapter's .safetensors file (required) */
  int has_scale;                   /**< 1: `scale` overrides every configuration file */
  double scale;
  mpk_mt_orientation orientation;  /**< UNDECIDED: observe; else used only when every entry is
                                        square, and it must agree with what is observed */
  unsigned workers;                /**< merge threads; 0: one per CPU, at most 8 */
  int dry_run;                     /**< 1: decide and report, write nothing */
  mpk_safetensors_budget adapter_budget;    /**< the adapter reader's memory budget (zeros: the defaults) */
  int keep_base;                   /**< 1: keep the shipped tensors the merge replaces inside the inference
                                        directory, in the same transaction, for mpk_mt_restore() */
  /* appended: the post-merge check (docs/mt-numeric.md) */
  struct mpk_ort *ort;             /**< with `probe`: the ONNX Runtime that runs the inference graph */
  const char *probe;               /**< a probe file (PROBE.json: token sequences); NULL: no check */
  double max_ratio;                /**< post/pre cross-entropy above it rolls the merge back; 0: 2.0 */
  int force;                       /**< 1: commit even when the ratio is above max_ratio (reported) */
  /* appended: progress (the 0.1 layout, struct_size 0, ends before it) */
  /** Called with (entries staged, entries in all) before the first entry is merged and after each;
      a non-zero return cancels: MPK_ECANCELLED, the transaction aborted, the tree unchanged. A dry
      run stages nothing and calls it once, (0, entries). NULL: no progress. */
  mpk_progress_fn progress;
  void *progress_ctx;
} mpk_mt_merge_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_MERGE_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_merge_options)

/** One merged handoff entry. */
typedef struct mpk_mt_merge_entry {
  size_t entry;                    /**< index in the map's entries */
  const char *layer;               /**< trainingBaseLayerName */
  const char *adapter_a, *adapter_b; /**< the factors' names in the adapter file */
  int64_t out, in, rank;           /**< B is [out, rank], A is [rank, in] */
  const char *dtype;               /**< the weight's on-disk dtype */
  int64_t rows, cols;              /**< the weight's on-disk shape */
  int quantized;                   /**< 1: weight_quantized + scale + zero_point were rewritten */
  mpk_mt_orientation observed;     /**< UNDECIDED when the weight is square */
  double scale;
  const char *scale_source;        /**< where the scale came from, in words */
  const char *base_source;         /**< the base the delta was added to, in words */
  char digest[MPK_MT_ROLE_COUNT][65]; /**< the written files' SHA-256 per role ("" when not written) */
} mpk_mt_merge_entry;

/** What a merge decided and did. Immutable, shareable; freed with mpk_mt_merge_report_free(). */
typedef struct mpk_mt_merge_report {
  const char *variant;
  const char *inference_dir;
  mpk_mt_orientation orientation;  /**< the package-wide decision */
  const char *evidence;            /**< why, in one sentence */
  const mpk_mt_merge_entry *entries;
  size_t n_entries;
  const char *const *notes;        /**< recovered transactions, unused adapter tensors, ... */
  size_t n_notes;
  int written;                     /**< 1: the transaction committed (0 with dry_run) */
  struct mpk_mt_merge_priv *priv_;
  /* appended: the post-merge check (opts->probe) */
  int verified;                    /**< 1: the probe ran before and after */
  double ce_before, ce_after;      /**< mean next-token cross-entropy on the probe, nats */
  double ratio;                    /**< ce_after / ce_before */
  double max_ratio;                /**< the bound applied */
  int rolled_back;                 /**< 1: ratio > max_ratio (or a cross-entropy not finite) without force:
                                        nothing was changed (a dry run: it would be rolled back) */
  const char *verdict;             /**< the check in one sentence (NULL without a probe) */
} mpk_mt_merge_report;

/**
 * Merge a trained LoRA adapter into a package variant's inference weights:
 * merged = base + scale · (B @ A), one transaction over every tensor (rules: docs/mt-merge.md).
 * Factors are found by each entry's checkpointNames, else by PEFT names; the scale comes from
 * `opts->scale`, the variant's train/training_config.json or a PEFT adapter_config.json beside the
 * adapter — never a default; the base is the adapter's frozen weight, else the shipped .bin, only
 * while it still hashes to the map's sha256 (a merged base is refused: no merge applies twice); the
 * orientation is observed from non-square entries. An interrupted earlier merge is recovered first.
 * On failure nothing is changed and `*out` is NULL — except a merge the post-merge check rolled back
 * (opts->probe, docs/mt-numeric.md): MPK_EMISMATCH with `*out` set (rolled_back 1, written 0, the
 * cross-entropies, the verdict; err carries the verdict), the package byte-identical. With a probe
 * and opts->ort NULL, ONNX Runtime is opened by mpk_ort_open(NULL)'s rules (MPK_EUNSUPPORTED before
 * anything is written when it is missing); ort, max_ratio or force without a probe: MPK_EINVAL.
 * dry_run with a probe: both cross-entropies computed (the merged tensors in unlinked temporary
 * files outside the package), nothing written; above the bound MPK_EMISMATCH, as a rollback.
 */
MPK_API int mpk_mt_merge(const char *dir, const mpk_mt_merge_options *opts, mpk_mt_merge_report **out,
                         mpk_error *err);
/** Free the mpk_mt_merge_report and everything it points to; accepts NULL. */
MPK_API void mpk_mt_merge_report_free(mpk_mt_merge_report *r);

/** Options of mpk_mt_restore(); start from MPK_MT_RESTORE_OPTIONS_INIT. */
typedef struct mpk_mt_restore_options {
  size_t struct_size;  /**< sizeof as compiled, set by the _INIT macro */
  const char *variant; /**< NULL: the installed variant (a package: its defaultVariant) */
  const char *source;  /**< where to re-fetch shipped tensors no kept base holds: a package directory or
                            an http(s) base URL; NULL: the install record's "source" */
  int wait_for_lock;   /**< 1: wait for another writer of the installed tree; 0: fail at once (MPK_EIO) */
} mpk_mt_restore_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_RESTORE_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_restore_options)

/** One tensor (or sidecar) put back. */
typedef struct mpk_mt_restore_file {
  const char *name;    /**< the file name in the inference directory */
  const char *sha256;  /**< the shipped bytes' SHA-256, verified before anything was replaced */
  const char *from;    /**< "kept base", "re-fetched from <source>", or "written from the shipped digest" */
} mpk_mt_restore_file;

/** What a restore did. Immutable, shareable; freed with mpk_mt_restore_report_free(). */
typedef struct mpk_mt_restore_report {
  const char *variant;
  const char *inference_dir;
  int was_merged;                   /**< 0: the tree held no merged tensor: nothing was done */
  int written;                      /**< 1: the transaction committed */
  const mpk_mt_restore_file *files;
  size_t n_files;
  const char *const *adapters;      /**< SHA-256 of each adapter whose membership was removed */
  size_t n_adapters;
  const char *const *notes;
  size_t n_notes;
  struct mpk_mt_restore_priv *priv_;
} mpk_mt_restore_report;

/**
 * Return every tensor modelpkg's merge record names to its shipped bytes (docs/mt-restore.md): from
 * the base a --keep-base merge kept in the tree, else re-fetched from `opts->source` (default: the
 * install record's source) through the fetch engine into the repo's staging area. Each file is
 * verified against the shipped digest (the record's, which must be the map's) before anything is
 * replaced; then one transaction puts the tensors and their sidecars back and empties the merge
 * record and the adapter membership (removed, with the kept bases and adapter copies, right after).
 * An installed tree `<cache>/<name>` is locked as its installer locks it
 * (`<cache>/.staging/<name>/lock`). A tree without merged tensors: 0, was_merged 0. On failure
 * nothing is changed and `*out` is NULL.
 */
MPK_API int mpk_mt_restore(const char *dir, const mpk_mt_restore_options *opts, mpk_mt_restore_report **out,
                           mpk_error *err);
/** Free the report; accepts NULL. */
MPK_API void mpk_mt_restore_report_free(mpk_mt_restore_report *r);

/** What recovering an interrupted merge did. */
typedef enum mpk_mt_recovery {
  MPK_MT_RECOVERY_NONE = 0,        /**< nothing was interrupted */
  MPK_MT_RECOVERY_ROLLED_FORWARD,  /**< the merge had committed: its remaining renames were done */
  MPK_MT_RECOVERY_ROLLED_BACK      /**< the merge had not committed: its temporary files were removed */
} mpk_mt_recovery;

/**
 * Finish or undo an interrupted merge in an inference directory (its journal decides), so the
 * directory holds either every merged tensor or none. mpk_mt_merge and
 * mpk_mt_load_gate call it first. `files` (may be NULL) gets the number of files renamed or removed.
 */
MPK_API int mpk_mt_merge_recover(const char *inference_dir, mpk_mt_recovery *outcome, size_t *files,
                                 mpk_error *err);

/* component: mt onnx */
/* ============================================================================================
 * mt: the ONNX inference graph (initializers, the map checked against it, precision, map builder)
 * ========================================================================================== */

/*
 * A variant's inference/model.onnx names its weights as initializers, most of them external (raw
 * bytes in inference/<name>.bin, or at an offset in frozen_base.onnx.data). The reader is C generated
 * at build time by protoc-c from Debian's onnx.proto, behind a bounded pre-scan: nothing is decoded
 * before the file size, the message nesting, every length and varint, the initializer count and the
 * memory the decoded message will take are checked. Rules and limits: docs/mt-graph.md.
 */

#define MPK_MT_GRAPH_FILENAME "model.onnx"
#define MPK_MT_OPTIMUM_CONFIG_FILENAME "optimum_config.json"
/** Largest model.onnx read by default (protobuf's own 2 GiB bound). */
#define MPK_MT_GRAPH_DEFAULT_MAX_BYTES ((uint64_t)2 << 30)
/** Most initializers read by default. */
#define MPK_MT_GRAPH_DEFAULT_MAX_INITIALIZERS 1000000u
/** Deepest message nesting accepted (a subgraph costs three levels: node, attribute, graph). */
#define MPK_MT_GRAPH_MAX_DEPTH 64
/** Most dimensions of one initializer. */
#define MPK_MT_GRAPH_MAX_DIMS 64

typedef struct mpk_mt_graph_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  uint64_t max_bytes;         /**< file size bound; 0: MPK_MT_GRAPH_DEFAULT_MAX_BYTES */
  uint64_t max_decoded_bytes; /**< memory the decoded message may take; 0: 64 MiB + 4 x the file size */
  size_t max_initializers;    /**< 0: MPK_MT_GRAPH_DEFAULT_MAX_INITIALIZERS */
} mpk_mt_graph_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_GRAPH_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_graph_options)

/** One initializer of the main graph, in graph order. */
typedef struct mpk_mt_initializer {
  size_t index;
  const char *name;
  int32_t data_type;          /**< ONNX TensorProto.DataType (1 FLOAT, 2 UINT8, 7 INT64, 10 FLOAT16, ...) */
  const char *dtype;          /**< numpy's name of it ("float32", "uint8", "int64", "bool", ...); NULL: unknown */
  const int64_t *dims;        /**< every dimension >= 0 */
  size_t ndim;
  uint64_t numel;             /**< product of dims (1 for a scalar) */
  int has_nbytes;             /**< 1: a fixed-width type, so `nbytes` is the tensor's full byte length */
  uint64_t nbytes;            /**< numel x width; ceil(numel / 2) for 4-bit types */
  int external;               /**< data_location EXTERNAL */
  const char *location;       /**< external: the file, relative to the model's directory (confined) */
  uint64_t offset;            /**< external: "offset" (0 when not given) */
  int has_length;             /**< external: "length" given */
  uint64_t length;
  int has_embedded_data;      /**< raw_data or a typed data field is present in the file */
  int embedded_complete;      /**< the embedded data holds exactly the tensor's elements */
  uint64_t embedded_bytes;    /**< bytes of raw_data (typed fields: values x their width) */
} mpk_mt_initializer;

/** A read graph (initializers only are kept). Immutable, shareable; freed with mpk_mt_graph_free(). */
typedef struct mpk_mt_graph {
  const char *file;
  int64_t ir_version;
  const char *producer_name;  /**< NULL when absent */
  const char *producer_version;
  int64_t opset;              /**< the default domain's opset version; -1 when not imported */
  size_t n_nodes;             /**< of the main graph */
  size_t n_sparse_initializers; /**< read past: not described by the handoff contract */
  const mpk_mt_initializer *initializers;
  size_t n_initializers;
  size_t n_external;          /**< initializers with external data */
  struct mpk_mt_graph_priv *priv_;
} mpk_mt_graph;

/**
 * Read an ONNX ModelProto from memory, fail-closed. Before anything is decoded, a pre-scan walks the
 * wire format guided by the message descriptors: every tag, varint (at most 10 bytes, never past the
 * end) and length inside its parent; no groups; message nesting at most MPK_MT_GRAPH_MAX_DEPTH; no
 * NUL inside a string; at most `max_initializers` initializers; and the memory the decoded message
 * will take, summed from the wire, within `max_decoded_bytes` (MPK_ELIMIT) — the decoder's allocator
 * enforces the same bound. Then each initializer: a unique non-empty name, at most
 * MPK_MT_GRAPH_MAX_DIMS dimensions, each >= 0, numel and byte length within uint64 (MPK_ELIMIT);
 * external data has exactly the keys location (required), offset, length, checksum, each once,
 * offset/length decimal integers, and the location a confined relative path (not absolute, no ".."
 * or "." segment, no backslash: refused, MPK_EMALFORMED, without any file being touched). `file` names
 * the document in errors (NULL: "model.onnx"); errors carry the byte offset or the initializer.
 */
MPK_API int mpk_mt_graph_parse(const void *data, size_t len, const char *file, const mpk_mt_graph_options *opts,
                               mpk_mt_graph **out, mpk_error *err);
/**
 * Read `path` (size checked before it is mapped) as mpk_mt_graph_parse(), then every external
 * location that exists must resolve, through symbolic links, inside the model's directory
 * (MPK_EMALFORMED otherwise). Locations are resolved with lstat/readlink only: no external file is
 * opened.
 */
MPK_API int mpk_mt_graph_load(const char *path, const mpk_mt_graph_options *opts, mpk_mt_graph **out, mpk_error *err);
/** Free the mpk_mt_graph and everything it points to; accepts NULL. */
MPK_API void mpk_mt_graph_free(mpk_mt_graph *g);
/** The initializer named `name`, or NULL. */
MPK_API const mpk_mt_initializer *mpk_mt_graph_find(const mpk_mt_graph *g, const char *name);
/** numpy's name of an ONNX data type ("float32", ...); NULL when unknown. */
MPK_API const char *mpk_mt_onnx_dtype_name(int32_t data_type);

/**
 * The precision the graph's weights are stored in, measured from its initializers (the reference's
 * describe_graph_precision): elements counted per data type, skipping INT32, INT64 and BOOL (shape,
 * index and mask constants); one name when homogeneous ("float32"), else "mixed(a/b/...)" ordered by
 * element count (ties in first-seen order), "unknown" with no counted initializer. Names: float32
 * uint8 int8 float16 bfloat16 uint4 int4, else "elem_type=N". Writes at most `size` bytes into `out`,
 * NUL-terminated (cut like snprintf); `*needed` (may be NULL) gets the name's full length without the
 * NUL. Returns 0 when it fit, MPK_ELIMIT when it was cut (`out` NULL with `size` 0 asks for the length
 * alone), MPK_ENOMEM, or MPK_EINVAL (`out` NULL with `size` > 0). `g` NULL reads as no initializer.
 */
MPK_API int mpk_mt_graph_precision(const mpk_mt_graph *g, char *out, size_t size, size_t *needed);

/**
 * Check a handoff map against the graph it describes (`model_dir`: the graph's directory, where the
 * external files are; `map_file` names the map in problems). For every entry and role:
 * inferenceInitializerNames[role] names an initializer; its dtype and dims equal the role's declared
 * ones (mpk_mt_handoff_role_layout); it is external, at externalDataLocation[role], offset 0, with
 * the tensor's full length (a "length" key equal to it, else the file's size). Every other external
 * initializer lives in frozenBaseBlob, within that file's size. No initializer is left without data
 * (external with its file present, or embedded with exactly its elements). Each violation goes to
 * `on_problem` (may be NULL) naming the entry, the role and the rule — at the map's JSON pointer for
 * a map disagreement, else naming model.onnx and the initializer; `*n_problems` (may be NULL) counts
 * them. Files are examined with stat only. Returns 0 when the check ran, MPK_ENOMEM otherwise.
 */
MPK_API int mpk_mt_graph_check(const mpk_mt_graph *g, const mpk_mt_handoff *map, const char *map_file,
                               const char *model_dir, mpk_problem_fn on_problem, void *problem_ctx,
                               size_t *n_problems, mpk_error *err);

/** One variant's graph, map and precision, checked (what `modelpkg mt graph` prints). */
typedef struct mpk_mt_graph_report {
  const char *variant;
  const char *quantization;      /**< the variant's training-side quantization (manifest); NULL: null */
  const char *graph_file;        /**< .../inference/model.onnx */
  int graph_present;
  const mpk_mt_graph *graph;     /**< NULL when absent or refused (a problem says why) */
  const char *map_file;          /**< NULL when the variant has no weightHandoff */
  const mpk_mt_handoff *map;     /**< NULL when absent or refused */
  const char *measured;          /**< the graph's precision; NULL without a graph */
  const char *declared;          /**< inference/optimum_config.json's inferenceGraphPrecision; NULL: absent */
  const char *optimum_config_file; /**< NULL when the variant's inference/ has none */
  const int *claim_entry;        /**< per initializer: the map entry naming it, or -1 */
  const int *claim_role;         /**< per initializer: its mpk_mt_role there, or -1 */
  const mpk_error *problems;     /**< graph refused, map refused, map/graph disagreements, precision mismatch */
  size_t n_problems;
  const char *const *notes;
  size_t n_notes;
  struct mpk_mt_graph_report_priv *priv_;
} mpk_mt_graph_report;

/**
 * Read variant `variant` (NULL: defaultVariant) of package `dir`: its inference/model.onnx
 * (mpk_mt_graph_load), its weight handoff map, mpk_mt_graph_check() of one against the other, and the
 * measured precision against inferenceGraphPrecision in inference/optimum_config.json (a mismatch is
 * a problem, MPK_EMISMATCH; an absent file or key a note). A variant without a graph has nothing to
 * check (graph_present 0, no problem). Returns 0 when the report was made; MPK_ENOTFOUND /
 * MPK_EMALFORMED when the manifest or the variant cannot be read; MPK_ENOMEM.
 */
MPK_API int mpk_mt_graph_report_open(const char *dir, const char *variant, const mpk_mt_graph_options *opts,
                                     mpk_mt_graph_report **out, mpk_error *err);
/** Free the mpk_mt_graph_report and everything it points to; accepts NULL. */
MPK_API void mpk_mt_graph_report_free(mpk_mt_graph_report *r);

typedef struct mpk_mt_handoff_build_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  const char *variant;           /**< NULL: defaultVariant */
  const char *peft_method;       /**< "lora" "lora-xs" "mars" "all" "nolora"; NULL: the manifest's single
                                      peftMethods entry */
  const char *attention_module;  /**< the architecture's attention module name; NULL: "self_attn" */
  int dry_run;                   /**< 1: build and validate, write nothing */
} mpk_mt_handoff_build_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_HANDOFF_BUILD_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_handoff_build_options)

typedef struct mpk_mt_handoff_build_result {
  char *path;                    /**< the map written: <inference dir>/weight_handoff_map.json */
  char *map;                     /**< its bytes (NUL-terminated) */
  size_t map_len;
  int changed;                   /**< 1: the bytes differ from the file's (written unless dry_run) */
  size_t n_entries;
  mpk_mt_transpose_policy policy; /**< the package-wide orientation */
} mpk_mt_handoff_build_result;

/**
 * Build a variant's inference/weight_handoff_map.json as the reference codec
 * (TrainableTensorCodec.from_peft_mapping + HandoffMap.to_json) does, from train/training_config.json
 * (peft_mapping: layer -> {role: checkpoint name}; rank, alpha; trainable_tensor_specs) and the
 * initializers observed in inference/model.onnx: one entry per peft_mapping layer, in its order; the
 * base name ending ".base_layer"; candidate seeds with the wrapper prefixes (backbone.,
 * base_model.model., base_model.) removed and ".base_layer" -> ".MatMul", the "attn" spelling first;
 * roles from the observed names' last token (weight, weight_quantized/qweight, weight_scale/scales,
 * weight_zero_point/qzeros); dtypes and shapes as observed; quantization names as observed;
 * externalDataLocation "<name>.bin"; sha256 of each shipped .bin; transposePolicy derived from the
 * adapter shapes and resolved package-wide. Refused, naming the layer: a layer no initializer matches
 * (naming drift), adapter shapes that fit neither orientation, mixed orientations. The bytes are read
 * back with mpk_mt_handoff_parse() and mpk_mt_graph_check() must hold before the file is replaced
 * (atomically, only when they change). The package's manifest lists the map: reseal it afterwards.
 */
MPK_API int mpk_mt_handoff_build(const char *dir, const mpk_mt_handoff_build_options *opts,
                                 mpk_mt_handoff_build_result *out, mpk_error *err);
/** Release what a result holds (accepts NULL and a zeroed result). */
MPK_API void mpk_mt_handoff_build_result_free(mpk_mt_handoff_build_result *r);

/* component: mt */
/* ============================================================================================
 * mt: the load gate of a package variant (what `modelpkg mt tensors` lists)
 * ========================================================================================== */

/** A variant's merged weights under the load gate. Read-only; freed with mpk_mt_variant_gate_free(). */
typedef struct mpk_mt_variant_gate {
  const char *variant;               /**< the variant's id */
  const char *weight_handoff;        /**< its weightHandoff, package-relative */
  int map_absent;                    /**< 1: the map file is absent — no merged weights (`report` NULL) */
  const mpk_mt_gate_report *report;  /**< the gate's report (NULL when map_absent) */
  struct mpk_mt_variant_gate_priv *priv_;
} mpk_mt_variant_gate;

/**
 * Read package `dir`'s manifest, find `variant` (NULL: the defaultVariant), and run the load gate
 * (mpk_mt_load_gate()'s rules) over its weight handoff map's tensors — all read beneath `dir`: the
 * map with no symbolic link out of the package, the inference directory opened with no link in its
 * path, and a package whose manifest lists a merge journal or record (files only modelpkg may
 * write) refused before the gate would replay or trust it. A variant without weightHandoff is
 * MPK_EMALFORMED; an absent map file is not an error (map_absent). Returns 0 when the gate ran
 * (`report->ready` is the verdict), else the code of the step that failed. `*out` belongs to the
 * caller (NULL on failure) and holds the directory against merges like the gate's report does.
 * `opts` may be NULL (defaults); `dir` and `out` may not (MPK_EINVAL).
 */
MPK_API int mpk_mt_variant_gate_open(const char *dir, const char *variant, const mpk_mt_gate_options *opts,
                                     mpk_mt_variant_gate **out, mpk_error *err);
/** Accepts NULL. */
MPK_API void mpk_mt_variant_gate_free(mpk_mt_variant_gate *g);

/* ============================================================================================
 * mt: the train/inference parity gate (docs/mt-numeric.md; needs ONNX Runtime: modelpkg/ort.h)
 * ========================================================================================== */

/** The spec's bound: the two graphs' cross-entropies may differ by at most this many nats. */
#define MPK_MT_PARITY_MAX_DIFF 1.5
/** The default training-side graph, relative to the variant's train/ directory. */
#define MPK_MT_PARITY_TRAIN_GRAPH "eval_model.onnx"

typedef struct mpk_mt_parity_options {
  size_t struct_size;        /**< sizeof as compiled, set by the _INIT macro */
  struct mpk_ort *ort;       /**< required: the ONNX Runtime that runs both graphs */
  const char *variant;       /**< NULL: the manifest's defaultVariant */
  const char *train_graph;   /**< the training-side graph; NULL: <variant>/train/eval_model.onnx */
  const int64_t *tokens;     /**< the token ids; NULL: `length` ids drawn from `seed` (docs/mt-numeric.md) */
  size_t n_tokens;
  uint64_t seed;             /**< with tokens NULL */
  size_t length;             /**< with tokens NULL; 0: 64 */
  double max_diff;           /**< 0: MPK_MT_PARITY_MAX_DIFF */
} mpk_mt_parity_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_MT_PARITY_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_mt_parity_options)

typedef struct mpk_mt_parity_report {
  const char *variant;
  const char *train_graph;      /**< the graphs run, as paths */
  const char *inference_graph;
  size_t n_tokens;
  int64_t vocab;
  double ce_train, ce_inference; /**< mean next-token cross-entropy, nats */
  double diff;                   /**< |ce_train - ce_inference| */
  double uniform_floor;          /**< ln(vocab) */
  double max_diff;               /**< the bound applied */
  int pass;                      /**< 1: diff <= max_diff */
  const char *verdict;           /**< in one sentence, naming the bound */
  struct mpk_mt_parity_priv *priv_;
} mpk_mt_parity_report;

/**
 * The parity gate (spec 001, verify_train_inference_parity): the same token ids through the
 * variant's training-side graph and its inference graph (inference/model.onnx, its merged weights
 * handed over from the load gate's views), the mean next-token cross-entropy of each, and the
 * verdict |difference| <= max_diff. Returns 0 when both graphs ran (`pass` is the verdict), else
 * the code of the step that failed. `*out` is the caller's (NULL on failure).
 */
MPK_API int mpk_mt_parity(const char *dir, const mpk_mt_parity_options *opts, mpk_mt_parity_report **out,
                          mpk_error *err);
/** Accepts NULL. */
MPK_API void mpk_mt_parity_report_free(mpk_mt_parity_report *r);

/** The most token ids TOKENS.json may hold. */
#define MPK_MT_PARITY_MAX_TOKENS 1048576
/**
 * Read TOKENS.json (docs/mt-numeric.md, "Tokens"): strict JSON, the object {"tokens": [id, ...]}
 * and nothing else, at least 2 and at most MPK_MT_PARITY_MAX_TOKENS ids, each an integer from 0
 * to 2^31 - 1 as in PROBE.json (3.0 is 3; whether it is below the vocabulary is the graph's to say). Errors name the file, the JSON
 * pointer and the rule. `*ids` is the caller's (mpk_free()); NULL and `*n` 0 on failure.
 */
MPK_API int mpk_mt_parity_tokens_load(const char *path, int64_t **ids, size_t *n, mpk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MODELPKG_MT_H */
