/* Internal core mechanisms shared by the contract modules. Not installed. */
#ifndef MPK_CORE_H
#define MPK_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "modelpkg.h"

/* ---------------------------------------------------------------- errors (error.c) */

/* mpk_fail is public (include/modelpkg/core.h). */
int mpk_fail_at(mpk_error *err, int code, const char *file, int64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* mpk_fail with the arguments of a caller's own variadic function. */
int mpk_vfail(mpk_error *err, int code, const char *file, const char *pointer, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

/* ---------------------------------------------------------------- options structs (options.c) */

/* The one reader of a caller's options struct (docs/API.md, "Options structs"). Fills `local` (this
   version's layout, `size` bytes) from `given`: NULL gives every field its default (zero); otherwise
   the caller's struct_size says how many bytes it has — 0 means `base_size`, the layout of modelpkg
   0.1 (every options struct's first release with struct_size); fields past it are zero, their
   defaults. A struct_size below sizeof(size_t) or not a multiple of the struct's alignment is
   MPK_EINVAL; one above `size` (a caller built against a later header) is accepted only when every
   byte this version does not know is zero (else MPK_EUNSUPPORTED). local->struct_size is set to
   `size`. Library code reads options only through the copy. */
int mpk_options_read(void *local, size_t size, size_t align, size_t base_size, const void *given, const char *type,
                     mpk_error *err);
/* mpk_options_read for an options type T whose layout has not grown since 0.1 (base size = sizeof(T)).
   When a field is added to T, its callers pass the 0.1 size to mpk_options_read instead. */
#define MPK_OPTIONS_READ(T, local, given, err) \
  mpk_options_read((local), sizeof(T), _Alignof(T), sizeof(T), (const T *)(given), #T, (err))
/* The same for a T that has grown since 0.1: `first_new` is the first field added after it. */
#define MPK_OPTIONS_READ_GROWN(T, first_new, local, given, err) \
  mpk_options_read((local), sizeof(T), _Alignof(T), offsetof(T, first_new), (const T *)(given), #T, (err))

/* ---------------------------------------------------------------- arena (arena.c) */

/* Bump allocator: every object of one loaded document lives in one arena, freed at once. */
typedef struct mpk_arena mpk_arena;
mpk_arena *mpk_arena_new(void);
void mpk_arena_free(mpk_arena *a);
void *mpk_arena_alloc(mpk_arena *a, size_t size);            /* zeroed, 16-aligned */
void *mpk_arena_array(mpk_arena *a, size_t n, size_t size);  /* overflow-checked */
char *mpk_arena_strdup(mpk_arena *a, const char *s);

/* ---------------------------------------------------------------- JSON pointer paths (path.c) */

/* A JSON pointer being built while a parser descends. Fixed capacity; an overlong path is cut
   (marked with "...") rather than failing, since it only feeds error messages. */
typedef struct mpk_path {
  char buf[1024];
  size_t len;
  bool truncated;
} mpk_path;

void mpk_path_init(mpk_path *p);
size_t mpk_path_push_key(mpk_path *p, const char *key); /* returns the previous length */
size_t mpk_path_push_index(mpk_path *p, size_t i);
void mpk_path_pop(mpk_path *p, size_t prev_len);

/* ---------------------------------------------------------------- strict JSON (json.c) */

typedef struct mpk_json_opts {
  size_t max_bytes;   /* 0: MPK_JSON_DEFAULT_MAX_BYTES */
  size_t max_depth;   /* 0: MPK_JSON_DEFAULT_MAX_DEPTH */
  bool allow_nul;     /* accept \u0000 inside strings (generic canonical JSON only) */
} mpk_json_opts;

#define MPK_JSON_DEFAULT_MAX_BYTES MPK_DOCUMENT_MAX_BYTES
#define MPK_JSON_DEFAULT_MAX_DEPTH 64

/* Parse a JSON text strictly: one value, duplicate keys refused, invalid UTF-8 refused, a leading
   UTF-8 BOM skipped, size and depth limited. Errors carry the byte offset and start with
   "invalid JSON". */
int mpk_json_parse(const void *data, size_t len, const mpk_json_opts *opts, const char *file,
                   json_t **out, mpk_error *err);
/* Map `path` and parse it strictly (errors name the path). */
int mpk_json_load_file(const char *path, const mpk_json_opts *opts, json_t **out, mpk_error *err);

/* Object keys in the order ECMAScript's Object.keys() gives them: canonical array-index keys
   ("0".."4294967294") ascending, then the rest in document order. Caller frees *keys. */
int mpk_json_keys_js_order(const json_t *obj, const char ***keys, size_t *n);
/* Object keys sorted by UTF-16 code units (Array.prototype.sort), or by code point (bytewise
   UTF-8 order) when `codepoint`. Caller frees *keys. */
int mpk_json_keys_sorted(const json_t *obj, bool codepoint, const char ***keys, size_t *n);
int mpk_utf16_cmp(const char *a, const char *b);
/* Object keys in insertion (document) order. Caller frees *keys. */
int mpk_json_keys_insertion(const json_t *obj, const char ***keys, size_t *n);

/* ---------------------------------------------------------------- strict document checks (jsonv.c) */

/* A validation context: which document, where in it, and where errors go. The messages are
   those of the reference consumer (WebLLM) so that both name the same field and rule. */
typedef struct mpk_jv {
  const char *file;
  mpk_path path;
  mpk_error *err;
} mpk_jv;

#define MPK_SAFE_INT_MAX INT64_C(9007199254740991)

int mpk_jv_fail(mpk_jv *v, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The value at the current path must be an object. */
int mpk_jv_object(mpk_jv *v, const json_t *value);
/* Unknown keys (reported first, in Object.keys order), then missing required keys. NULL-ended
   lists. */
int mpk_jv_exact_keys(mpk_jv *v, const json_t *obj, const char *const *allowed,
                      const char *const *required);
/* Tolerant mode, for contracts that allow unknown fields: only the required keys are checked. */
int mpk_jv_required_keys(mpk_jv *v, const json_t *obj, const char *const *required);
int mpk_jv_string(mpk_jv *v, const json_t *value, const char **out); /* non-empty string */
int mpk_jv_literal(mpk_jv *v, const json_t *value, const char *expected);
/* A number that is an integer within ±(2^53-1) and >= minimum. */
int mpk_jv_integer(mpk_jv *v, const json_t *value, int64_t minimum, int64_t *out);
int mpk_jv_sha256_id(mpk_jv *v, const json_t *value, const char **out);
/* Copy a string into an arena, failing with "out of memory" at the current path. */
int mpk_jv_strdup(mpk_jv *v, mpk_arena *a, const char *s, const char **out);
/* A versioned document's gate, before anything else is read (a newer major may have changed
   everything else): root is an object, its schemaVersion and minReaderVersion are "MAJOR.MINOR"
   strings that mpk_doc_version_check() accepts for `reader`; both are copied into `a`. */
int mpk_jv_version_gate(mpk_jv *v, const json_t *root, const char *reader, mpk_arena *a, const char **schema_version,
                        const char **min_reader_version);

/* Run one check with the path descended into key `k`; return from the caller on failure. */
#define MPK_JV_AT(v, k, expr)                        \
  do {                                               \
    size_t prev_ = mpk_path_push_key(&(v)->path, k); \
    int rc_ = (expr);                                \
    mpk_path_pop(&(v)->path, prev_);                 \
    if (rc_) return rc_;                             \
  } while (0)

/* Visit an object's members in UTF-16 key order (how Object.keys(o).sort() walks a map), each key
   first checked to be non-empty (else "<path>/": "expected a non-empty string"); `fn` runs with
   the path at the member and its index in that order. Stops at the first failure. */
typedef int (*mpk_jv_member_fn)(mpk_jv *v, size_t index, const char *key, const json_t *value,
                                void *ctx);
int mpk_jv_each_member(mpk_jv *v, const json_t *obj, mpk_jv_member_fn fn, void *ctx);
bool mpk_json_safe_integer(const json_t *value, int64_t *out);
bool mpk_is_sha256_id(const char *s);

/* ---------------------------------------------------------------- documents (document.c) */

/* A JSON document type: how to find it in a directory and how to check it. */
typedef struct mpk_document {
  const char *name; /* the file name inside a package directory; also names a document given as bytes */
  /* Optional: a look at the text before it is parsed (a budget, say). 0 or an MPK_E* code. */
  int (*prescan)(void *ctx, const void *data, size_t len, const char *file, mpk_error *err);
  /* Check the parsed document and build the result in `a` (which the result then owns), errors
     through v (v->file, v->path, v->err). 0 or an MPK_E* code; on failure the skeleton frees the
     arena and the root. */
  int (*validate)(void *ctx, mpk_jv *v, json_t *root, mpk_arena *a);
  bool keep_root; /* the result keeps the root (and releases it when freed) */
  /* Optional: a type that parses in its own way (mpk_document_load then calls this, not the
     skeleton's parse). */
  int (*parse)(void *ctx, const void *data, size_t len, const char *file, mpk_error *err);
  void *ctx;
} mpk_document;

/* Parse bytes as document `d` (file NULL: d->name names it in errors). */
int mpk_document_parse(const mpk_document *d, const void *data, size_t len, const char *file, mpk_error *err);
/* Load document `d` from `path`: the file itself, or, when `path` is a directory, d->name inside it
   (opened beneath it). At most MPK_JSON_DEFAULT_MAX_BYTES; errors name the file. */
int mpk_document_load(const mpk_document *d, const char *path, mpk_error *err);

/* ---------------------------------------------------------------- canonical JSON (canonical_json.c) */

/* Serialize `value` canonically (see mpk_canonical_json in modelpkg.h). */
int mpk_canonical_dump(const json_t *value, char **out, size_t *out_len, mpk_error *err);

/* ---------------------------------------------------------------- Python-style JSON (json_write.c) */

/* What Python's json.dumps(value, indent=indent, ensure_ascii=..., sort_keys=...) writes (no
   trailing newline); unsorted keys keep insertion order. Reals are refused. Free *out with mpk_free. */
int mpk_json_dumps_python(const json_t *value, int indent, bool ensure_ascii, bool sort_keys, char **out,
                          size_t *len, mpk_error *err);
/* A document as the Python producers write it: json.dumps(value, indent=2, sort_keys=...) with
   ASCII escapes, plus "\n". */
int mpk_json_write_document(const json_t *value, bool sort_keys, char **out, size_t *len, mpk_error *err);
/* What Gson's default `new Gson().toJson(...)` writes for the same value: compact (no spaces, no
   newline), keys in insertion order (Gson: field declaration order), integers as integers, UTF-8
   kept, and Gson's HTML-safe escapes: < > & = ' as \u003c \u003e \u0026 \u003d \u0027, U+2028 and
   U+2029 as \u2028 \u2029, control characters as \b \t \n \f \r or \u00XX (lowercase hex), " and \
   backslashed. Reals are refused. Free *out with mpk_free. */
int mpk_json_dumps_gson(const json_t *value, char **out, size_t *len, mpk_error *err);

/* ---------------------------------------------------------------- digests (digest.c) */

#define MPK_SHA256_LEN 32
int mpk_sha256(const void *data, size_t len, uint8_t out[MPK_SHA256_LEN]);
/* SHA-256 of everything an open file holds (pread from offset 0), as lowercase hex. 0 or MPK_EIO /
   MPK_ENOMEM (errno tells why). */
int mpk_sha256_fd(int fd, char hex[65]);
void mpk_hex(const uint8_t *bytes, size_t n, char *out); /* writes 2n chars + NUL */

/* ---------------------------------------------------------------- the dtype registry (dtype.c) */

/* One row per element type: its MLC/TVM name, bits, DLPack type, safetensors name, ONNX data
   type. The int4-packing rule is stated beside the table (mpk_dtype_packed_bytes). */
typedef enum mpk_dtype_id {
  MPK_DT_UNKNOWN = 0,
  MPK_DT_FLOAT64, MPK_DT_FLOAT32, MPK_DT_FLOAT16, MPK_DT_BFLOAT16,
  MPK_DT_FLOAT8_E4M3FN, MPK_DT_FLOAT8_E5M2, MPK_DT_FLOAT8_E4M3FNUZ, MPK_DT_FLOAT8_E5M2FNUZ,
  MPK_DT_FLOAT8_E8M0FNU, MPK_DT_FLOAT4_E2M1FN,
  MPK_DT_INT64, MPK_DT_INT32, MPK_DT_INT16, MPK_DT_INT8, MPK_DT_INT4,
  MPK_DT_UINT64, MPK_DT_UINT32, MPK_DT_UINT16, MPK_DT_UINT8, MPK_DT_UINT4,
  MPK_DT_BOOL,
  MPK_DT_ONNX_STRING, MPK_DT_COMPLEX64, MPK_DT_COMPLEX128, /* ONNX only: no MLC name */
  MPK_DT_COUNT
} mpk_dtype_id;

/* A MobileTransformers handoff map may declare it, and a tensor view can load it. */
#define MPK_DTYPE_HANDOFF 1u

typedef struct mpk_dtype {
  mpk_dtype_id id;
  const char *name;                  /* MLC/TVM spelling (float16); NULL for ONNX-only types */
  int bits;                          /* per element; 0 for ONNX strings */
  uint8_t dl_code, dl_bits, dl_lanes; /* DLPack DLDataType; dl_lanes 0: DLPack has no code */
  const char *st_name;               /* safetensors' (F16); NULL: not a safetensors dtype */
  int32_t onnx_type;                 /* ONNX TensorProto.DataType; 0: none */
  const char *onnx_name;             /* numpy's name, as ONNX's reference records it, where not `name` */
  unsigned flags;                    /* MPK_DTYPE_* */
} mpk_dtype;

size_t mpk_dtype_count(void);
const mpk_dtype *mpk_dtype_at(size_t i);          /* NULL past the end */
const mpk_dtype *mpk_dtype_get(mpk_dtype_id id);  /* NULL for MPK_DT_UNKNOWN or out of range */
const char *mpk_dtype_name(mpk_dtype_id id);      /* the MLC/TVM name */
const mpk_dtype *mpk_dtype_by_name(const char *name);    /* NULL: unknown (or NULL) */
const mpk_dtype *mpk_dtype_by_st_name(const char *name); /* NULL: not a safetensors dtype */
const mpk_dtype *mpk_dtype_by_onnx(int32_t type);        /* NULL: not an ONNX data type we know */
const char *mpk_dtype_onnx_name(const mpk_dtype *d);     /* onnx_name, else name */
bool mpk_dtype_is(const char *name, mpk_dtype_id id);   /* name spells that dtype */
/* Bytes of `numel` packed elements (the int4-packing rule in dtype.c); false: 0-bit type or
   overflow. */
bool mpk_dtype_packed_bytes(const mpk_dtype *d, uint64_t numel, uint64_t *out);
/* Bytes one element takes stored unpacked, as MLC's tensor cache does: (bits + 7) / 8. */
int mpk_dtype_unpacked_bytes(int bits);

/* ---------------------------------------------------------------- findings (findings.c) */

/* Problems (copies of mpk_error) and notes, collected by a check that goes on after a failure. */
typedef struct mpk_findings {
  mpk_error *problems;
  size_t n_problems, cap_problems;
  char **notes;
  size_t n_notes;
  bool oom; /* a problem could not be stored */
  /* The report's public view (mpk_findings_publish), kept current after every addition. */
  const mpk_error **view_problems;
  size_t *view_n_problems;
  const char *const **view_notes;
  size_t *view_n_notes;
} mpk_findings;

/* Keep a report's problems/n_problems/notes/n_notes (any may be NULL) pointing at what f holds. */
void mpk_findings_publish(mpk_findings *f, const mpk_error **problems, size_t *n_problems, const char *const **notes,
                          size_t *n_notes);
/* The four public fields every report struct has, by name. */
#define MPK_FINDINGS_PUBLISH(f, report) \
  mpk_findings_publish((f), &(report)->problems, &(report)->n_problems, &(report)->notes, &(report)->n_notes)

/* Where a document a library function names by its logical name ("_metadata.artifact") really is:
   its file, and the JSON pointer of the document inside that file ("/artifact"). */
typedef struct mpk_findings_doc {
  const char *name; /* as the error names it ("" for an error naming no file) */
  const char *file;
  const char *pointer_prefix;
} mpk_findings_doc;

void mpk_findings_problem(mpk_findings *f, const mpk_error *e);
/* The problem filed under its real file: an error naming docs[i].name (docs ends at a NULL name) is
   kept with docs[i].file and the pointer prefixed by docs[i].pointer_prefix. */
void mpk_findings_problem_in(mpk_findings *f, const mpk_error *e, const mpk_findings_doc *docs);
/* A problem built in place: mpk_fail's arguments, kept instead of returned. */
void mpk_findings_fail(mpk_findings *f, int code, const char *file, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void mpk_findings_note(mpk_findings *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mpk_findings_free(mpk_findings *f);
/* Problems of one kind (a missing file or shard, a parameter mismatch) are listed one by one up to
   MPK_LIST_MAX, then summed up in one line with the count (docs/CLI.md, "Reports"): a tally counts
   them; mpk_tally_keep says whether this one is still listed. */
#define MPK_LIST_MAX 10
typedef struct mpk_tally {
  size_t count;
} mpk_tally;
static inline bool mpk_tally_keep(mpk_tally *t) { return t->count++ < MPK_LIST_MAX; }
static inline bool mpk_tally_over(const mpk_tally *t) { return t->count > MPK_LIST_MAX; }

/* qsort, for every sort in the library: an empty list may have no array (NULL), which qsort may
   not be given (C11 7.22.5: the pointer must be valid even for 0 elements; UBSan aborts on it). */
static inline void mpk_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, n, size, cmp);
}

/* ---------------------------------------------------------------- files (fs.c) */

/* mpk_mapped (a read-only view of a whole file), mpk_map_beneath, mpk_map_file, mpk_unmap_file,
   the output contract (mpk_output_*) and mpk_package_kind are public: include/modelpkg/core.h. */

/* mpk_digest_files with each job's path relative to `root` and opened beneath it by
   mpk_open_read's rules (no link out of root, regular files only); root NULL: paths as given. */
int mpk_digest_files_beneath(const char *root, mpk_digest_job *jobs, size_t n, unsigned workers,
                             mpk_progress_fn progress, void *progress_ctx, mpk_error *err);

/* ---- open.c: the one way a reader opens a file (docs/SECURITY.md "Opening files") */
struct stat;
/* Open `rel` to read. With `root`, `rel` is resolved beneath that directory and never through a
   symbolic link (or "..") that leaves it; with root NULL, `rel` is a path the user named, opened as
   given. Either way the open cannot block (a FIFO without a writer is refused, not waited on), the
   file must be a regular file (a FIFO, socket, device or directory is MPK_EMALFORMED naming its
   type), and its size at most max_size (0: unbounded; MPK_ELIMIT naming the limit). A missing file
   or dangling link is MPK_ENOTFOUND. *fd is O_RDONLY|O_CLOEXEC; *st (may be NULL) its fstat. */
int mpk_open_read(const char *root, const char *rel, uint64_t max_size, int *fd, struct stat *st, mpk_error *err);
/* The same beneath an open directory handle; `root_shown` prefixes `rel` in messages, `root_label`
   names the root in "resolves outside ..." (NULL: "its directory"). */
int mpk_open_read_at(int dirfd, const char *root_shown, const char *rel, uint64_t max_size, const char *root_label,
                     int *fd, struct stat *st, mpk_error *err);
/* The checks of mpk_open_read on a descriptor the caller opened (O_NONBLOCK): takes ownership of
   fd (closed on failure). */
int mpk_open_finish(int fd, const char *shown, uint64_t max_size, int *fd_out, struct stat *st, mpk_error *err);
/* A directory `rel` beneath dirfd (AT_FDCWD: the working directory) for a writer: no component may
   be a symbolic link or "..", whatever it points to. */
int mpk_open_dir_at(int dirfd, const char *root_shown, const char *rel, int *fd, mpk_error *err);
/* "a FIFO", "a directory", ... for a st_mode. */
const char *mpk_file_type_name(unsigned mode);

/* Map an open regular file of st_size bytes (takes ownership of fd). */
int mpk_map_fd(int fd, const char *shown, size_t size, mpk_mapped *out, mpk_error *err);
/* Map a document given as its file, or as a directory holding `default_name`. *file receives the
   path used (malloc'ed, for error messages; free it). */
int mpk_map_document(const char *path, const char *default_name, char **file, mpk_mapped *out, mpk_error *err);
bool mpk_file_exists(const char *path);
bool mpk_is_dir(const char *path);
/* A relative path that cannot leave its directory: not empty, not absolute, no "..", ".", or
   empty segments, no backslashes or drive letters. On failure *why says which rule. */
bool mpk_path_is_confined(const char *rel, const char **why);
/* `path` (which exists) resolves, through symbolic links, to a place inside `dir`. */
bool mpk_path_resolves_inside(const char *dir, const char *path);
/* mpk_write_file_atomic of `name` (one path segment) in the directory handle `dfd` (`shown` names
   the file in errors): the temporary "<name>.tmp.XXXXXX" is created beneath the handle, renamed over
   `name`, and the directory fsynced. mpk_write_file_atomic is this on its path's directory. */
int mpk_write_file_atomic_at(int dfd, const char *shown, const char *name, const void *data, size_t len,
                             mpk_error *err);
/* Remove what an interrupted mpk_write_file_atomic(path) left: regular files named
   "<basename>.tmp.XXXXXX" beside `path`. A writer that also lists the tree calls it first, so a
   leftover is never taken for a package file. */
int mpk_atomic_cleanup(const char *path, size_t *removed, mpk_error *err);
/* Pieces of atomic writes (atomic.c), shared with the transactions of txn.c. */
/* write() until done, retrying EINTR. 0, or -1 with errno. */
int mpk_write_all(int fd, const void *data, size_t len);
/* mkstemp(template) with close-on-exec and mode 0666 less the umask. The fd, or -1 with errno. */
int mpk_temp_open(char *template_path);
/* The same beneath a directory handle (never created through a link). */
int mpk_temp_open_at(int dfd, char *template_path);
/* mkstemp's suffix: exactly six characters of [A-Za-z0-9], then the end of the string. */
bool mpk_is_temp_suffix(const char *s);
/* fsync a directory (its renames and unlinks become durable). 0, or -1 with errno; a file system
   that cannot sync directories (EINVAL) counts as synced. */
int mpk_fsync_dir(int dfd);
/* dir + "/" + name into a fresh malloc'ed string. */
char *mpk_path_join(const char *dir, const char *name);

/* ---------------------------------------------------------------- tensor views (tensor.c) */

/* Make `out` a view of the mapping `m` (malloc'ed; the view takes it over and mpk_tensor_view_close
   unmaps and frees it) as a tensor of `dtype` and `shape`: the caller has checked the dtype, ndim <=
   MPK_TENSOR_MAX_DIMS, and m->size == mpk_tensor_nbytes() (numel its element count). */
void mpk_tensor_view_fill(mpk_tensor_view *out, mpk_mapped *m, const char *dtype, const int64_t *shape, size_t ndim,
                          uint64_t numel);
/* Put a view's elements in host byte order (docs/cross.md, "Byte order"): tensor files are
   little-endian, and a view's consumers (DLPack, ONNX Runtime) read elements in the host's order.
   A no-op on a little-endian host and for one-byte and packed dtypes; on a big-endian host the
   mapping (MAP_PRIVATE) is made writable, its elements swapped in place — the kernel copies the
   pages, the file is untouched — and made read-only again. The view's bytes then differ from the
   file's: hash the file, not the view. On failure the view is closed. */
int mpk_tensor_view_to_host(mpk_tensor_view *v, const char *shown, mpk_error *err);

/* ---------------------------------------------------------------- outputs (output.c) */

/* The output contract: public (include/modelpkg/core.h, mpk_output_*); output.c. */

/* ---------------------------------------------------------------- tree walk (walk.c) */

enum { MPK_WALK_FILE = 1, MPK_WALK_LINK = 2, MPK_WALK_OTHER = 3 };
#define MPK_WALK_MAX_DEPTH 64
/* Called for each entry that is not a directory: `rel` is its POSIX path relative to the walked
   directory (borrowed for the call), `type` MPK_WALK_*, `size` the size of a regular file (else 0).
   A non-zero return stops the walk and is returned by mpk_walk_files (which then sets no error). */
typedef int (*mpk_walk_fn)(void *ctx, const char *rel, int type, uint64_t size);
/* Walk `dir` depth first, each directory's names in bytewise order; symbolic links are reported
   (MPK_WALK_LINK), never followed. Depth and path length are limited (MPK_ELIMIT). */
int mpk_walk_files(const char *dir, mpk_walk_fn fn, void *ctx, mpk_error *err);

#endif
