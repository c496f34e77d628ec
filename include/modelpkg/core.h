/*
 * modelpkg/core.h — the library's foundation: options structs, version, errors, canonical JSON and
 * identities, dtypes, digests and progress, tensor views (DLPack), document versions. Every other
 * modelpkg header includes this one.
 * (Include <modelpkg.h> for the whole API.)
 *
 * Conventions of the whole API (docs/API.md says the same at more length)
 *
 * Return values — a function that can fail returns `int`: 0 on success or a negative mpk_code
 *   (MPK_E*), with the details in the caller's mpk_error. A function that returns a value never
 *   uses a value that could be read as an MPK_E* code. The exceptions to "0 or MPK_E*", all of them:
 *   - values: mpk_version_number(); mpk_error_format() (a length, as snprintf); mpk_dtype_bits() and
 *     mpk_safetensors_dtype_size() (0: unknown dtype); mpk_mt_storage_budget() (bytes);
 *     mpk_audio_canonical_length() (a double, as WebLLM computes it);
 *   - predicates, 1 or 0: mpk_has_component(), mpk_pattern_matches(), mpk_pattern_valid(),
 *     mpk_output_is_stdout(), mpk_output_to_stdout();
 *   - lookups returning a pointer, NULL when absent: mpk_version(), mpk_components(),
 *     mpk_hash_implementation(), mpk_code_name(), every
 *     `_name()` (static strings), and the finders (mpk_mlc_package_task(), mpk_mlc_artifact_program(),
 *     mpk_mlc_entry_get(), mpk_mt_manifest_variant/plan/file(), mpk_safetensors_find(),
 *     mpk_safetensors_metadata(), mpk_mt_graph_find(), mpk_mt_onnx_dtype_name()), borrowed;
 *   - void: every `_free()` / `_close()`, mpk_error_clear(), mpk_mlc_prefill_config_from_binding().
 *   A check that runs to the end (mpk_mlc_check(), mpk_mt_check(), mpk_mlc_fit_package(),
 *   mpk_mt_graph_report_open()) returns 0 with its problems in the report; its return code says
 *   only whether it could run. mpk_mt_select() returns MPK_ENOVARIANT with `*out` set (the reasons).
 *
 * Ownership — what a function hands back, and how it is given back. There are three shapes:
 *   - Objects: `int mpk_T_load/parse/open/...(..., mpk_T **out, ...)` allocates an mpk_T and sets
 *     `*out` (NULL on failure). It is the caller's; `void mpk_T_free(mpk_T *)` frees it and
 *     everything it points to (every pointer inside borrows from it). `_free(NULL)` does nothing.
 *   - Results: `int mpk_X(..., mpk_X_result *out, ...)` fills a struct the caller owns (on the
 *     stack, say); `void mpk_X_result_free(mpk_X_result *)` releases what its members own and zeroes
 *     it — not the struct itself. It accepts NULL, a zeroed struct, and one already released, and the
 *     function zeroes `*out` first, so releasing after a failure is always right. A tensor view
 *     (mpk_tensor_view) is a result whose release is spelled mpk_tensor_view_close().
 *   - Buffers: a `char **out` string or an array of borrowed pointers is malloc'ed; free it with
 *     mpk_free(), which accepts NULL.
 *   Everything else a function returns is borrowed: from the object it was given (lookups such as
 *   mpk_mt_manifest_variant(): valid while that object lives) or static (`_name()` functions).
 *   Inputs are never taken over: the library copies what it keeps.
 *
 * Threads — there is no global mutable state (libcurl's global initialization runs once, under
 *   pthread_once) and no global error: any function may be called from several threads at once on
 *   different objects. Per object type, each header says which of two kinds it is:
 *   - immutable, shareable: every object a function returns through `**out` (loaded documents,
 *     reports, plans, selections, planners, audio, images) — except an mpk_mlc_prefill_builder —
 *     never changes until it is freed; any number of threads may read it and call `const`
 *     functions on it at once; one thread frees it, after the others.
 *   - one thread at a time: an mpk_error, a result struct, an options struct while a call reads it,
 *     an mpk_tensor_view while it is opened or closed, an mpk_mlc_prefill_builder.
 *   Callbacks (progress, events) may come from the library's worker threads, never two at once.
 *
 * NULL arguments — `err` may always be NULL (no details wanted). Any other pointer argument is
 *   required unless its documentation says "may be NULL" or gives a NULL meaning (an options pointer
 *   NULL means every default, a `len`/`n` of 0 allows a NULL array). A required pointer that is NULL
 *   is MPK_EINVAL, never a crash; a lookup given NULL returns NULL, a predicate 0.
 */
#ifndef MODELPKG_CORE_H
#define MODELPKG_CORE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(MPK_SHARED_BUILD)
#define MPK_API __declspec(dllexport)
#elif defined(__GNUC__)
#define MPK_API __attribute__((visibility("default")))
#else
#define MPK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif
/* component: core */

/* ============================================================================================
 * core: options structs
 * ========================================================================================== */

/**
 * Every `mpk_*_options` struct starts with `size_t struct_size` and has an initializer
 * `MPK_*_OPTIONS_INIT` that sets it and leaves every other field at its default (zero); the rule the
 * library applies to struct_size is in docs/API.md, "Options structs". MPK_OPTIONS_INIT(T) is that
 * initializer for type T: a designated initializer in C, a value-initialized object in C++ (C++17 has
 * no designated initializers, and a positional {sizeof(T)} would trip -Wmissing-field-initializers in
 * either language). Use it only to initialize: `mpk_mt_check_options o = MPK_MT_CHECK_OPTIONS_INIT;`.
 */
#ifdef __cplusplus
#define MPK_OPTIONS_INIT(T) ([] { T o_{}; o_.struct_size = sizeof(T); return o_; }())
#else
#define MPK_OPTIONS_INIT(T) {.struct_size = sizeof(T)}
#endif

/* ============================================================================================
 * core: version
 * ========================================================================================== */

#define MPK_VERSION_MAJOR 0
#define MPK_VERSION_MINOR 1
#define MPK_VERSION_PATCH 0
#define MPK_VERSION_NUMBER (MPK_VERSION_MAJOR * 10000 + MPK_VERSION_MINOR * 100 + MPK_VERSION_PATCH)
#define MPK_VERSION_STRING "0.1.0"

/** The library's version string at run time, e.g. "0.1.0". */
MPK_API const char *mpk_version(void);
/** MPK_VERSION_NUMBER of the library at run time. */
MPK_API int mpk_version_number(void);
/**
 * The components this library was built with, space-separated, in a fixed order: "core" always,
 * then any of "mlc mt fetch audio image onnx" (CMake options MPK_WITH_<X>; docs/components.md).
 * A public function of a component that is not built returns MPK_EUNSUPPORTED with a message
 * naming the component (its declaration says which component it needs). Static string.
 */
MPK_API const char *mpk_components(void);
/** 1 when `name` (one of the names above) was built in, else 0 (NULL or unknown: 0). */
MPK_API int mpk_has_component(const char *name);
/**
 * What computes SHA-256 and MD5 in this process: "openssl" (libcrypto), or the built-in code:
 * "builtin-shani" (x86-64 SHA extensions), "builtin-armv8" (AArch64 SHA-2 instructions),
 * "builtin-c" (portable). Static string.
 */
MPK_API const char *mpk_hash_implementation(void);

/* ============================================================================================
 * core: errors
 * ========================================================================================== */

/** The short list of expected failures. A function that can fail returns 0 or one of these (the
    exceptions, value-returning functions, are listed at the top of this header). */
typedef enum mpk_code {
  MPK_OK = 0,
  MPK_EMALFORMED = -1,   /**< a document breaks its format or schema */
  MPK_EVERSION = -2,     /**< a document's version is not supported */
  MPK_EMISMATCH = -3,    /**< two artifacts, or an artifact and a device, do not agree */
  MPK_ENOTFOUND = -4,    /**< a file, field or object that must exist does not */
  MPK_EUNSUPPORTED = -5, /**< valid, but not something this version can do */
  MPK_EIO = -6,          /**< reading or writing failed */
  MPK_ENOMEM = -7,       /**< out of memory */
  MPK_ELIMIT = -8,       /**< a size, count or depth limit was exceeded */
  MPK_ENOVARIANT = -9,   /**< no package variant fits the device */
  MPK_ECANCELLED = -10,  /**< a callback asked to stop */
  MPK_EINVAL = -11       /**< the caller passed an invalid argument */
} mpk_code;

/**
 * Where and why something failed. Caller-owned, fixed size: no allocation, nothing to free.
 * `message` is one line naming the thing and the rule ("channels must be 1"). `file` names the
 * document (a path, or a logical name such as "_metadata.artifact"); `pointer` is an RFC 6901
 * JSON pointer into it ("" = the whole document, or not a JSON location); `offset` is a byte
 * offset into the file, or -1.
 */
typedef struct mpk_error {
  int code;
  char message[512];
  char file[512];
  char pointer[512];
  int64_t offset;
} mpk_error;

/** Reset an error to "no error". */
MPK_API void mpk_error_clear(mpk_error *err);
/** Short name of a code: "malformed", "mismatch", ... */
MPK_API const char *mpk_code_name(int code);
/**
 * Format an error as one line: "FILE: POINTER: MESSAGE" (parts that are empty are left out;
 * a byte offset is written as "FILE@OFFSET"). Returns the length it wanted, like snprintf.
 */
MPK_API int mpk_error_format(const mpk_error *err, char *buf, size_t size);
/**
 * Fill `err` (may be NULL: nothing is written) with `code`, a one-line message (printf `fmt`; a
 * newline in it becomes a space), `file` and `pointer` (either may be NULL: empty) and offset -1,
 * and return `code` — so that `return mpk_fail(err, MPK_EINVAL, path, NULL, "...")` reports and
 * fails in one statement, the way the library does. For callers building their own errors (a
 * command line, an mpk_problem_fn).
 */
MPK_API int mpk_fail(mpk_error *err, int code, const char *file, const char *pointer, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* ============================================================================================
 * core: canonical JSON and identities
 * ========================================================================================== */

/**
 * Canonical JSON of a JSON text: object keys sorted by Unicode code point at every level,
 * separators "," and ":", no whitespace, non-ASCII written raw, only '"', '\\' and U+0000–U+001F
 * escaped (\b \f \n \r \t, others as \u00xx). Numbers must be integers in the IEEE-754 safe
 * range; an integral number such as 16000.0 is written as 16000; anything else is an error.
 * `*out` is NUL-terminated, malloc'ed, freed with mpk_free(); its length goes to `*out_len`.
 */
MPK_API int mpk_canonical_json(const char *json, size_t len, char **out, size_t *out_len,
                               mpk_error *err);

/** "sha256:" + lowercase hex SHA-256 of `len` bytes, written into `out` (72 bytes with NUL). */
#define MPK_SHA256_ID_SIZE 72
/** 0, or MPK_EINVAL (`out` NULL, or `data` NULL with `len` > 0). */
MPK_API int mpk_sha256_id(const void *data, size_t len, char out[MPK_SHA256_ID_SIZE]);

/**
 * Replace `path` with `len` bytes so that a crash at any instant leaves the old file or the new
 * one, never a mix: a temporary file in the same directory ("<name>.tmp.XXXXXX"), fsync, rename,
 * fsync the directory. A crash may leave the temporary file behind, never the target half-written.
 * A symbolic link at `path` is replaced, never followed. An existing FIFO, socket, device or
 * directory is refused (MPK_EIO) without being opened: a document never goes into one. Data that
 * may go to a device or standard output uses the CLI's output contract (docs/CLI.md).
 */
MPK_API int mpk_write_file_atomic(const char *path, const void *data, size_t len, mpk_error *err);

/** Free memory the library returned as a plain buffer. Accepts NULL. */
MPK_API void mpk_free(void *p);

/* ============================================================================================
 * core: dtypes, digests, progress
 * ========================================================================================== */

/** Bits per element of a dtype name ("float16" 16, "int4" 4, "float8_e4m3fn" 8, ...); 0 when unknown
    or NULL. */
MPK_API int mpk_dtype_bits(const char *dtype);

/**
 * Progress of a long operation: called with bytes done and bytes in all; return non-zero to
 * cancel (the operation then fails with MPK_ECANCELLED). Called from worker threads, but never
 * concurrently.
 */
typedef int (*mpk_progress_fn)(void *ctx, uint64_t done, uint64_t total);
/** A problem found while checking; `problem` is valid during the call only. */
typedef void (*mpk_problem_fn)(void *ctx, const mpk_error *problem);

typedef enum mpk_digest_algo { MPK_DIGEST_MD5 = 0, MPK_DIGEST_SHA256 } mpk_digest_algo;

/** One file to hash: inputs, then results filled by mpk_digest_files(). */
typedef struct mpk_digest_job {
  const char *path;
  mpk_digest_algo algo;
  uint64_t expected_size;   /**< progress totals and the order (largest first); the real size is measured */
  /* results */
  int code;                 /**< 0 or MPK_E* for this file */
  uint64_t size;            /**< bytes read */
  char hex[65];             /**< lowercase hex digest */
} mpk_digest_job;

/**
 * Hash files streaming (constant memory per worker) on a bounded pool of `workers` threads
 * (0: one per online CPU, at most 8). Returns 0 when every job ran (each job has its own `code`),
 * MPK_ECANCELLED when `progress` asked to stop, or MPK_ENOMEM. `err` gets the first failed job's
 * error.
 */
MPK_API int mpk_digest_files(mpk_digest_job *jobs, size_t n, unsigned workers,
                             mpk_progress_fn progress, void *progress_ctx, mpk_error *err);

/* ============================================================================================
 * core: tensor views (a dtype, a shape and bytes; DLPack)
 *
 * A view is one thread's at a time to open and close; the bytes it maps are read-only and may be read
 * from any number of threads while it is open.
 * ========================================================================================== */

/** Most dimensions a tensor may have (safetensors tensors and tensor views alike). */
#define MPK_TENSOR_MAX_DIMS 16

/**
 * A tensor over read-only memory the view owns (a memory map of a file: no copy), as
 * mpk_mt_tensor_open() makes one from a weight's declaration and its .bin.
 * `dl_code`/`dl_bits`/`dl_lanes` are DLPack's DLDataType (kDLInt 0, kDLUInt 1, kDLFloat 2,
 * kDLBfloat 4). `shape` is the declared one — the logical shape for int4/uint4, which are packed
 * two per byte (ONNX order: element 2k in the low nibble of byte k), so `nbytes` is ceil(numel / 2);
 * `strides` are row-major, in elements. Close with mpk_tensor_view_close().
 * Byte order: the elements are in the host's order, as DLPack means them. Tensor files are
 * little-endian, so on a little-endian host the view is the file mapped (no copy); on a big-endian
 * host (s390x) a view of a 16/32/64-bit dtype holds private, converted copies of the mapped pages
 * (the file is untouched; docs/cross.md, "Byte order").
 */
typedef struct mpk_tensor_view {
  const void *data;
  char dtype[16];                       /**< "float32", "int4", ... */
  uint8_t dl_code, dl_bits;
  uint16_t dl_lanes;
  int32_t ndim;
  int64_t shape[MPK_TENSOR_MAX_DIMS];
  int64_t strides[MPK_TENSOR_MAX_DIMS];
  uint64_t numel;
  uint64_t nbytes;                      /**< == the mapped file's size */
  void *priv_;                          /**< the mapping */
} mpk_tensor_view;

/**
 * The exact byte size of a tensor of `dtype` and `shape` (the load rule): every dimension >= 1
 * (ndim 0 is a scalar), numel × bits / 8, ceil(numel / 2) for int4/uint4; checked against uint64
 * overflow (MPK_ELIMIT). Unknown dtype: MPK_EUNSUPPORTED; a dimension < 1: MPK_EMALFORMED.
 */
MPK_API int mpk_tensor_nbytes(const char *dtype, const int64_t *shape, size_t ndim, uint64_t *numel,
                              uint64_t *nbytes, mpk_error *err);

/** Unmap a view and zero it (accepts NULL and a zeroed view). */
MPK_API void mpk_tensor_view_close(mpk_tensor_view *v);
/**
 * Fill `dltensor_out`, a DLPack DLTensor (dlpack.h v0.6–v0.8 layout: data, device, ndim, dtype,
 * shape, strides, byte_offset), with the view: device kDLCPU 0, shape/strides pointing into the
 * view (valid while it is open), byte_offset 0. The tensor is read-only though DLTensor says void*.
 */
MPK_API int mpk_tensor_view_dltensor(const mpk_tensor_view *v, void *dltensor_out);

/* ============================================================================================
 * core: document versions ("MAJOR.MINOR", MobileTransformers' schemaVersion / minReaderVersion)
 * ========================================================================================== */

typedef struct mpk_doc_version {
  unsigned major, minor;
} mpk_doc_version;

/**
 * Parse a version: exactly two non-negative decimal integers separated by one '.'. "1", "1.x",
 * " 1.0", "+1.0", "1.0.0" are malformed (MPK_EMALFORMED) — stricter than MobileTransformers'
 * Python reader, which lets int() strip spaces and signs.
 */
MPK_API int mpk_doc_version_parse(const char *s, mpk_doc_version *out);

/**
 * The shared version gate: a document is readable when its schemaVersion's major is not above the
 * reader's and its minReaderVersion is not newer than the reader. Unknown fields and minor bumps
 * are fine. NULL doc/min_reader (a missing field) is malformed. MPK_EVERSION when refused.
 */
MPK_API int mpk_doc_version_check(const char *doc, const char *min_reader, const char *reader,
                                  mpk_error *err);

/** A package-relative download pattern matches a path: equal, or DIR followed by a slash and two
    stars, matching every file under DIR and its slash (the slash is part of the prefix, so
    "x/inference" never matches "x/inference_extra/..."). No other glob form matches. */
MPK_API int mpk_pattern_matches(const char *pattern, const char *path);
/** 1 when the pattern is a valid package-relative path, or a valid directory + slash + two stars. */
MPK_API int mpk_pattern_valid(const char *pattern);

/* ============================================================================================
 * core: files — reading a file, writing an output, telling a package's kind
 * ========================================================================================== */

/** The default size limit of a document (a JSON file) read whole: 64 MiB. */
#define MPK_DOCUMENT_MAX_BYTES ((size_t)64 * 1024 * 1024)

/** A read-only view of a whole file: memory-mapped (a multi-gigabyte file is never copied).
    Caller-owned (on the stack is fine); release with mpk_unmap_file(). `data` is never NULL after a
    successful map, also for an empty file. */
typedef struct mpk_mapped {
  const uint8_t *data;
  size_t size;
  void *priv_;
  int mapped;
} mpk_mapped;

/**
 * Map a whole file to read it, the safe way (docs/SECURITY.md "Opening files"). With `root`, `rel`
 * is resolved beneath that directory and never through a symbolic link or ".." that leaves it;
 * with `root` NULL, `rel` is a path the user named, opened as given (links followed). Either way
 * the open never blocks (a FIFO without a writer is refused, not waited on), the file must be a
 * regular file (a FIFO, socket, device or directory is MPK_EMALFORMED naming its type) of at most
 * `max_size` bytes (0: unbounded; larger is MPK_ELIMIT). A missing file or dangling link is
 * MPK_ENOTFOUND. On failure `*out` is zeroed (safe to unmap). `root` may be NULL; `rel` and `out`
 * may not.
 */
MPK_API int mpk_map_beneath(const char *root, const char *rel, size_t max_size, mpk_mapped *out, mpk_error *err);
/** mpk_map_beneath(NULL, path, ...): a file the user named. */
MPK_API int mpk_map_file(const char *path, size_t max_size, mpk_mapped *out, mpk_error *err);
/** Release a view (accepts NULL and a zeroed or already released view; leaves it zeroed). */
MPK_API void mpk_unmap_file(mpk_mapped *m);

/**
 * The output contract of data a caller was told to write to a path (docs/CLI.md "Output files"):
 * "-", and a path that is standard output already (`-o /dev/stdout > f`, through any link), write
 * to descriptor 1; an existing character device, FIFO or socket is opened and written through,
 * never replaced; a directory or block device is refused (MPK_EIO) before anything is written;
 * anything else is written atomically (a temporary file beside it, fsync, rename, fsync of the
 * directory; a symbolic link to a regular file stays a link, its target replaced), so that a
 * failure or mpk_output_abort() leaves the old file. Opaque; one thread at a time.
 */
typedef struct mpk_output mpk_output;
/** 1 when `path` would be written to standard output ("-", or the file descriptor 1 is), else 0
    (NULL: 0). Ask before opening, to know where a human report must go instead. */
MPK_API int mpk_output_is_stdout(const char *path);
/** Open an output for `path` (not NULL, not empty: MPK_EINVAL). `*out` belongs to the caller
    until mpk_output_commit() or mpk_output_abort(), which free it; NULL on failure. */
MPK_API int mpk_output_open(const char *path, mpk_output **out, mpk_error *err);
/** 1 when the open output writes to standard output (a human report then goes to standard error). */
MPK_API int mpk_output_to_stdout(const mpk_output *o);
/** Append `len` bytes (MPK_EIO naming the path when writing fails). */
MPK_API int mpk_output_write(mpk_output *o, const void *data, size_t len, mpk_error *err);
/** Make the bytes written the output (the rename into place) and free `o`, whatever the result. */
MPK_API int mpk_output_commit(mpk_output *o, mpk_error *err);
/** Drop what was written (the temporary file removed; through a device nothing can be undone) and
    free `o`. Accepts NULL. */
MPK_API void mpk_output_abort(mpk_output *o);
/** open + write + commit of one buffer. */
MPK_API int mpk_output_file(const char *path, const void *data, size_t len, mpk_error *err);

/** What a package directory holds, told by its manifest's name. The type is spelled
    `enum mpk_package_kind` (like `struct stat` beside stat()): the name is also the probe's. */
enum mpk_package_kind {
  MPK_PACKAGE_NONE = 0, /**< neither manifest (or `dir` is not a directory) */
  MPK_PACKAGE_MLC = 1,  /**< mlc-model-manifest.json (MPK_MLC_MANIFEST_FILENAME) */
  MPK_PACKAGE_MT = 2    /**< mobiletransformers_manifest.json (MPK_MT_MANIFEST_FILENAME) */
};
/**
 * The kind of the package in directory `dir`, from the entries present in it (a dangling symbolic
 * link counts as present: the check then says what is wrong with it; nothing is opened or read).
 * A directory holding both manifests is MPK_EMALFORMED ("holds both ...: a package directory is one
 * kind or the other") with `*out` MPK_PACKAGE_NONE. `dir` that is not a directory (or does not
 * exist) is 0 with MPK_PACKAGE_NONE: the caller's own open says why. NULL `dir` or `out`: MPK_EINVAL.
 */
MPK_API int mpk_package_kind(const char *dir, enum mpk_package_kind *out, mpk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MODELPKG_CORE_H */
