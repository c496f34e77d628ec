/*
 * modelpkg/fetch.h — the fetch engine: sources (a directory, HTTP), a plan downloaded into a staging
 * area while hashing, resumed and retried, committed atomically under a lock. Installers (mt install)
 * are its clients. docs/fetch.md.
 *
 * The flow: open a source; read its small documents (a manifest) with mpk_fetch_source_read();
 * build a list of mpk_fetch_file (a relative path, a size and a digest each) and check it with
 * mpk_fetch_plan_check(); open a stage (mpk_fetch_stage_open: the lock, recovery of an interrupted
 * commit); mpk_fetch_download() the plan into it; mpk_fetch_commit() the client's documents and the
 * tree into `<cache_dir>/<name>/`; mpk_fetch_stage_close().
 *
 * Thread safety: a mpk_fetch_source may be used by several threads at once (mpk_fetch_download does
 * so); a mpk_fetch_stage by one thread at a time. Distinct objects are independent. Callbacks run on
 * the engine's worker threads, never concurrently.
 */
#ifndef MODELPKG_FETCH_H
#define MODELPKG_FETCH_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
/* component: fetch */


/* ============================================================================================
 * fetch: sources
 * ========================================================================================== */

/**
 * A package source: "http://..." or "https://..." (a base URL, through libcurl), else a directory
 * (opened as the user named it). A file of the package is addressed by its relative POSIX path and
 * fetched as `<base>/<path>` (each segment percent-encoded), so any static server, CDN or object
 * store serves a package. In a directory source every file is opened beneath the directory: never
 * through a link that leaves it, and only when it is a regular file (a FIFO never blocks).
 * HTTP: redirects (at most 5) only to http(s), never from https to http; identity encoding; header
 * limits (100 lines, 64 KiB per response); exact sizes. docs/fetch.md, docs/mt-install.md "Bounds".
 */
typedef struct mpk_fetch_source mpk_fetch_source;

/** Options of mpk_fetch_source_open(); start from MPK_FETCH_SOURCE_OPTIONS_INIT. 0 means default. */
typedef struct mpk_fetch_source_options {
  size_t struct_size;      /**< sizeof(mpk_fetch_source_options) as the caller was compiled */
  unsigned attempts;       /**< tries of one transfer, the first included; 0: 5 */
  unsigned retry_delay_ms; /**< the wait before the 2nd try, doubled each time; 0: 250 */
  unsigned retry_max_ms;   /**< the longest wait; 0: 8000 */
  long timeout_secs;       /**< deadline of one file or document, every try included; 0: 3600 */
  long low_speed_bytes;    /**< a transfer slower than this (bytes/s) ...; 0: 1024 */
  long low_speed_secs;     /**< ... for this long is a network error (retried); 0: 30 */
  /* grown after 0.1 (docs/API.md, "Options structs and ABI growth") */
  const char *ca_file;     /**< PEM file of the certificate authorities https is verified against;
                                NULL: the system's (libcurl's default bundle) */
} mpk_fetch_source_options;

/** Initializer: every field its default, `struct_size` set. */
#define MPK_FETCH_SOURCE_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_fetch_source_options)

/**
 * Open a source. `location` is required; `opts` may be NULL (the defaults) and is copied. A location
 * that is neither an http(s) URL nor an openable directory is MPK_ENOTFOUND. Free `*out` with
 * mpk_fetch_source_free().
 */
MPK_API int mpk_fetch_source_open(const char *location, const mpk_fetch_source_options *opts,
                                  mpk_fetch_source **out, mpk_error *err);
/** Accepts NULL. */
MPK_API void mpk_fetch_source_free(mpk_fetch_source *src);
/** The location as given (owned by the source). */
MPK_API const char *mpk_fetch_source_location(const mpk_fetch_source *src);
/**
 * A small document of the source (a manifest, tensor-cache.json): at most `max` bytes, else
 * MPK_ELIMIT before more is read; missing (404/410, or no such file) is MPK_ENOTFOUND. `*data` is
 * NUL-terminated, freed with mpk_free(). Retried like any transfer. Over HTTP a buffer of `max`
 * bytes is allocated up front: give the document's real bound (mt install: 16 MiB).
 */
MPK_API int mpk_fetch_source_read(mpk_fetch_source *src, const char *path, size_t max, uint8_t **data,
                                  size_t *len, mpk_error *err);

/* ============================================================================================
 * fetch: the plan
 * ========================================================================================== */

/** One file to fetch. The engine borrows the strings for the duration of a call. */
typedef struct mpk_fetch_file {
  const char *path;     /**< in the source: a confined relative path ("a/b.bin", no "..", no "/x") */
  const char *dest;     /**< in the installed tree, confined; NULL: `path` */
  uint64_t size;        /**< the exact size */
  mpk_digest_algo algo; /**< MPK_DIGEST_SHA256 or MPK_DIGEST_MD5 */
  const char *digest;   /**< lowercase hex: 64 digits (SHA-256) or 32 (MD5) */
} mpk_fetch_file;

/**
 * Check a plan before anything is fetched: every path and dest confined, every digest well-formed
 * (MPK_EINVAL naming the file); two files at one dest, or a file where another needs a directory
 * (MPK_EMALFORMED "planned files A and B collide in the installed layout"); a dest equal to one of
 * `reserved` (documents the client writes at commit; may be NULL with n_reserved 0) is
 * MPK_EMALFORMED too. `plan_doc` names the plan's document in errors (may be NULL). No I/O.
 */
MPK_API int mpk_fetch_plan_check(const mpk_fetch_file *files, size_t n, const char *plan_doc,
                                 const char *const *reserved, size_t n_reserved, mpk_error *err);

/* ============================================================================================
 * fetch: staging, download, commit
 * ========================================================================================== */

/**
 * A staging area for one tree: `<cache_dir>/.staging/<name>/` holds the lock, the files being
 * downloaded (new/, in their final layout), one staging record per file (parts/, for resume) and the
 * commit marker; the tree is committed to `<cache_dir>/<name>/`. Everything beneath `cache_dir` is
 * opened one component at a time without following a link; a link where the engine expects a
 * directory or the lock is refused (never followed, written or removed through).
 */
typedef struct mpk_fetch_stage mpk_fetch_stage;

/** Options of mpk_fetch_stage_open(); start from MPK_FETCH_STAGE_OPTIONS_INIT. */
typedef struct mpk_fetch_stage_options {
  size_t struct_size;      /**< sizeof(mpk_fetch_stage_options) as the caller was compiled */
  const char *record_name; /**< required: the document every committed tree holds, a JSON object
                                with the commit's "installId" (the client writes it at commit);
                                recovery compares it with the commit marker */
  int wait_for_lock;       /**< 1: wait for another holder of this stage; 0: fail at once (MPK_EIO) */
} mpk_fetch_stage_options;

#define MPK_FETCH_STAGE_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_fetch_stage_options)

/**
 * Create `cache_dir` (one level) and the staging directory, take the lock (flock: dropped by the
 * kernel when the holder dies), and finish what an interrupted commit left (see mpk_fetch_recover).
 * `name` is one path component, not "." or ".." or ".staging" (MPK_EINVAL). Another holder:
 * MPK_EIO "another installer ... is running" unless wait_for_lock. Close with
 * mpk_fetch_stage_close(), which releases the lock. Staged files survive a failure, for the next run.
 */
MPK_API int mpk_fetch_stage_open(const char *cache_dir, const char *name, const mpk_fetch_stage_options *opts,
                                 mpk_fetch_stage **out, mpk_error *err);
/** Accepts NULL. Releases the lock. */
MPK_API void mpk_fetch_stage_close(mpk_fetch_stage *stage);
/** `<cache_dir>/<name>`, the committed tree's path (owned by the stage). */
MPK_API const char *mpk_fetch_stage_target(const mpk_fetch_stage *stage);
/**
 * A small document (at most 1 MiB, a regular file) of the tree committed now: `*data` (freed with
 * mpk_free(), NUL-terminated) or NULL when there is no tree or no such document, with 0. A target
 * that is a link or not a directory is refused.
 */
MPK_API int mpk_fetch_stage_read_installed(mpk_fetch_stage *stage, const char *doc, uint8_t **data, size_t *len,
                                           mpk_error *err);

/** Download events (mpk_fetch_options.on_event). */
typedef enum mpk_fetch_event_kind {
  MPK_FETCH_FILE_START = 0, /**< `file` starts; `file_done` bytes of it were already staged (reused) */
  MPK_FETCH_FILE_DONE,      /**< `file` is complete, verified and synced */
  MPK_FETCH_RETRY,          /**< `file` is fetched again; `message` says why (a digest mismatch) */
  MPK_FETCH_BYTES           /**< bytes arrived: at least every MiB per file, and at its end; `file_done`
                                 is the bytes present — for a file fetched in ranges every piece's
                                 bytes written so far, which may run ahead of the hashed prefix */
} mpk_fetch_event_kind;

typedef struct mpk_fetch_event {
  mpk_fetch_event_kind kind;
  const char *file;   /**< the file's `path` */
  uint64_t file_done, file_size;
  uint64_t done, total; /**< bytes of the whole plan */
  size_t files;         /**< files in the plan */
  const char *message;  /**< MPK_FETCH_RETRY only, else NULL */
} mpk_fetch_event;

/** Valid during the call only; non-zero cancels the download (MPK_ECANCELLED, staged bytes kept). */
typedef int (*mpk_fetch_event_fn)(void *ctx, const mpk_fetch_event *ev);

/** Options of mpk_fetch_download(); start from MPK_FETCH_OPTIONS_INIT. */
typedef struct mpk_fetch_options {
  size_t struct_size;       /**< sizeof(mpk_fetch_options) as the caller was compiled */
  unsigned jobs;            /**< files at once; 0: 4; at most 64 (MPK_EINVAL beyond) */
  unsigned digest_attempts; /**< downloads of a file whose digest is wrong; 0: 3 */
  const char *plan_name;    /**< the plan in messages ("the manifest says ..."); NULL: "the plan" */
  mpk_fetch_event_fn on_event; /**< may be NULL; never called concurrently */
  void *ctx;
  /* grown after 0.1 (docs/API.md, "Options structs and ABI growth") */
  unsigned connections;     /**< transfers at once over HTTP, whole files and ranges of one file
                                 alike; 0: `jobs` (default 4); at most 64 (MPK_EINVAL beyond) */
  uint64_t range_bytes;     /**< a file larger than this is fetched in ranges of about this size on
                                 separate connections (HTTP with ranges only); 0: the default
                                 (docs/fetch.md, "Ranged transfers"); UINT64_MAX: never split */
} mpk_fetch_options;

#define MPK_FETCH_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_fetch_options)

/** What a download did. */
typedef struct mpk_fetch_result {
  size_t files;
  uint64_t total_bytes;
  uint64_t reused_bytes; /**< bytes an interrupted run had staged, re-hashed and kept */
  unsigned retries;      /**< failed transfers retried */
  unsigned restarts;     /**< files started over from byte 0 (Range ignored, content changed) */
} mpk_fetch_result;

/**
 * Download the plan `files[0..n)` from `src` into the stage, `connections` transfers at a time on
 * core's worker pool; over HTTP a file larger than `range_bytes` is fetched in ranges on separate
 * connections, its digest computed in order over the contiguous prefix, a failed range retried
 * alone, a file that changes between ranges started over once (docs/fetch.md, "Ranged transfers"):
 * each file written at its dest under new/ and hashed while it arrives, exactly its size (a longer
 * response is cut off and refused, a shorter one is an error), resumed from what an earlier run
 * staged (HTTP Range with If-Range; the kept bytes are re-hashed, never trusted), downloaded again on
 * a digest mismatch up to digest_attempts times, then MPK_EMISMATCH naming the file and both
 * digests; each complete file fsynced. Staged entries outside the plan are removed first. The plan
 * is checked as mpk_fetch_plan_check() does. The first failure wins; the others stop early.
 * Nothing is committed. `opts` and `out` may be NULL.
 */
MPK_API int mpk_fetch_download(mpk_fetch_stage *stage, mpk_fetch_source *src, const mpk_fetch_file *files, size_t n,
                               const mpk_fetch_options *opts, mpk_fetch_result *out, mpk_error *err);

/** A document the client writes into the tree at commit. */
typedef struct mpk_fetch_doc {
  const char *name; /**< one path component at the tree's top */
  const void *data;
  size_t len;
} mpk_fetch_doc;

/** A fresh random install id (32 lowercase hex digits and NUL) for mpk_fetch_commit(). */
MPK_API void mpk_fetch_new_id(char out[33]);

/**
 * Commit the downloaded tree: write `docs` into it (each durable; one of them must be the stage's
 * record_name carrying "installId": `install_id`), fsync every directory, write the commit marker,
 * then put the tree at `<cache_dir>/<name>/` in one atomic exchange (or two renames where the file
 * system cannot; recovery rolls that forward), and clean up. The previous tree stays intact until
 * the marker is written. `*replaced` (may be NULL): 1 when a previous tree was replaced. Documents
 * without the record, or with a name that is not one path component: MPK_EINVAL, nothing written.
 */
MPK_API int mpk_fetch_commit(mpk_fetch_stage *stage, const char *install_id, const mpk_fetch_doc *docs, size_t n_docs,
                             int *replaced, mpk_error *err);

/**
 * Finish what an interrupted commit left for `name` in `cache_dir`, under the lock, creating
 * nothing: afterwards `<cache_dir>/<name>/` is the old tree or the new one. `record_name` as in
 * mpk_fetch_stage_options. `*recovered` (may be NULL): 1 when a commit was finished. MPK_EIO when
 * another holder has the lock.
 */
MPK_API int mpk_fetch_recover(const char *cache_dir, const char *name, const char *record_name, int *recovered,
                              mpk_error *err);

/* ============================================================================================
 * fetch: readers, retired trees, removal, garbage collection (docs/fetch.md "Readers and retired trees")
 * ========================================================================================== */

/**
 * A reader of a committed tree holds a shared flock on the tree's directory or one of its top-level
 * directories while it uses the files (mt's load gate: `<tree>/inference`). A tree that leaves its
 * place (replaced by a commit, removed) is renamed in one step into `.staging/<name>/retired/<id>/`
 * and deleted by handle only when every one of those directories can be locked exclusively at once
 * (held while deleting); otherwise it stays retired until mpk_fetch_gc() finds it free.
 *
 * Remove the committed tree `<cache_dir>/<name>/` under the stage's lock: renamed out of place (no
 * reader ever sees half a tree), then deleted, or kept retired while a reader holds it (`*held` 1,
 * `*retired_path` its path, malloc'ed, free with mpk_free(); both may be NULL). No tree:
 * MPK_ENOTFOUND. A target that is a link or not a directory is refused, never followed.
 */
MPK_API int mpk_fetch_stage_remove(mpk_fetch_stage *stage, int *held, char **retired_path, mpk_error *err);

/** Options of mpk_fetch_gc(); start from MPK_FETCH_GC_OPTIONS_INIT. */
typedef struct mpk_fetch_gc_options {
  size_t struct_size;      /**< sizeof(mpk_fetch_gc_options) as the caller was compiled */
  const char *record_name; /**< required: the clients' record (as mpk_fetch_stage_options), for recovery */
  int dry_run;             /**< 1: report what would be removed, change nothing */
} mpk_fetch_gc_options;

#define MPK_FETCH_GC_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_fetch_gc_options)

/** One thing a gc removed or kept. */
typedef struct mpk_fetch_gc_item {
  char *path;     /**< relative to the cache directory (".staging/org__m/new") */
  int removed;    /**< 1 removed (with dry_run: would be), 0 kept */
  char *reason;   /**< what it is, and why it was kept */
  uint64_t bytes; /**< the bytes of its regular files */
} mpk_fetch_gc_item;

typedef struct mpk_fetch_gc_result {
  mpk_fetch_gc_item *items;
  size_t n;
  uint64_t bytes_removed;
} mpk_fetch_gc_result;

/**
 * Collect the cache's garbage, stage by stage (`.staging/<name>/`), skipping every stage whose lock
 * an installer holds (taken non-blocking): an interrupted commit is finished first (recovery: the
 * marker may say roll forward; never cleaned away), then the partial download (new/, parts/), a
 * tree set aside by a crashed swap (old/) and retired trees are removed unless a reader holds them,
 * commit-marker temporaries too; a stage left with only its lock (an orphaned lock) is removed with
 * its directory, and `.staging` when empty. Links where the engine keeps its own directories or lock
 * are removed themselves, never followed; `.staging` itself a link is refused. Anything else is
 * kept and reported. Never touches `<cache_dir>/<name>/` trees. `*out`: free with
 * mpk_fetch_gc_result_free(). No cache directory: MPK_ENOTFOUND.
 */
MPK_API int mpk_fetch_gc(const char *cache_dir, const mpk_fetch_gc_options *opts, mpk_fetch_gc_result **out,
                         mpk_error *err);
/** Accepts NULL. */
MPK_API void mpk_fetch_gc_result_free(mpk_fetch_gc_result *r);

#ifdef __cplusplus
}
#endif

#endif /* MODELPKG_FETCH_H */
