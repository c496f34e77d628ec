/* Internal to mt: the tensor room (handoff map, tensors and the load gate, safetensors, the merge
   record) — what check, merge and install use of it. */
#ifndef MPK_MT_TENSOR_H
#define MPK_MT_TENSOR_H

#include <sys/stat.h>

#include "mt/package/package.h"
/* tensor.c: a checksum sidecar's digest — its first line, trimmed, 64 hex digits in any case
   (lowercased into hex) — read as `name` beneath the inference directory's handle `dfd` (`shown`
   names it). 1 when valid, 0 when there is no sidecar, -1 when unusable (why says). */
int mpk_mt_read_sidecar_at(int dfd, const char *shown, const char *name, char hex[65], char *why, size_t why_cap);

/* mpk_mt_tensor_open on the inference directory's handle. */
int mpk_mt_tensor_open_at(int dfd, const char *inference_dir, const mpk_mt_handoff_entry *e, mpk_mt_role role,
                          mpk_tensor_view *out, mpk_error *err);
/* The same with the file's bytes as they are (little-endian, not converted to host order on a
   big-endian host): for the merge kernel, which reads and writes file bytes. */
int mpk_mt_tensor_open_file_at(int dfd, const char *inference_dir, const mpk_mt_handoff_entry *e, mpk_mt_role role,
                               mpk_tensor_view *out, mpk_error *err);

/* Hash files named beneath a directory handle (mpk_open_read_at: no link out, no FIFO), in
   parallel. Each job's code/err/size/hex; returns non-zero only when the pool could not run. */
typedef struct mpk_mt_hash_job {
  const char *name;
  int code;
  mpk_error err;
  uint64_t size;
  char hex[65];
  struct stat st;       /* the file as opened, before it was hashed */
  bool stable;          /* its size, inode, mtime and ctime were the same after hashing */
  int64_t hashed_at_ms; /* when hashing finished (Unix epoch ms) */
} mpk_mt_hash_job;
int mpk_mt_hash_at(int dfd, const char *shown, mpk_mt_hash_job *jobs, size_t n, unsigned workers);

/* The merge record of an inference directory (MPK_MT_MERGE_RECORD; schema in docs/mt-merge.md),
   read beneath its handle and checked strictly. *out NULL when there is none. */
int mpk_mt_record_load(int dfd, const char *shown, json_t **out, mpk_error *err);
/* The same on bytes in memory (`file` names them in errors; the fuzz target's entry point). */
int mpk_mt_record_parse(const void *data, size_t len, const char *file, json_t **out, mpk_error *err);
/* Whether the record names `name` (an externalDataLocation); its shipped digest (NULL: unknown)
   and post-merge digest. */
bool mpk_mt_record_find(const json_t *record, const char *name, const char **shipped, const char **merged);

/* stamp.c: the load gate's verification stamp (MPK_MT_STAMP_FILE in the inference directory). */
typedef struct mpk_mt_stamp {
  json_t *root;          /* the body */
  json_t *files;         /* borrowed from root: name -> entry */
  int64_t written_at_ns; /* as the writer recorded it */
  int64_t cut_sec;       /* racy: an entry whose mtime or ctime second is >= this */
} mpk_mt_stamp;
/* Read the stamp beneath `dfd`: 1 valid (out filled), 0 none, -1 ignored (why says: torn, edited,
   unreadable, not a stamp). Never an error: an unusable stamp means every file is hashed. */
int mpk_mt_stamp_load(int dfd, const char *shown, mpk_mt_stamp *out, char *why, size_t why_cap);
/* The same on the stamp's bytes in memory (`file_mtime_ns`: the stamp file's mtime; the fuzz target's
   entry point). */
int mpk_mt_stamp_parse(const void *data, size_t len, int64_t file_mtime_ns, mpk_mt_stamp *out, char *why,
                       size_t why_cap);
void mpk_mt_stamp_free(mpk_mt_stamp *s);
/* The stamp's digest of `name` when its entry matches `st` (dev, ino, size, mtime_ns, ctime_ns) and
   is not racy; false otherwise (hash it). */
bool mpk_mt_stamp_lookup(const mpk_mt_stamp *s, const char *name, const struct stat *st, char hex[65],
                         int64_t *hashed_at_ms);
/* One entry into a stamp's files object (0 or MPK_ENOMEM). */
int mpk_mt_stamp_add(json_t *files, const char *name, const char hex[65], const struct stat *st, int64_t hashed_at_ms);
/* Write a stamp of `files` atomically beneath `dfd` (mpk_write_file_atomic_at); *written_at_ns its moment. */
int mpk_mt_stamp_write(int dfd, const char *shown, json_t *files, int64_t *written_at_ns, mpk_error *err);
/* CLOCK_REALTIME in nanoseconds. */
int64_t mpk_mt_stamp_now_ns(void);

/* How a caller runs the load gate (tensor.c). */
typedef struct mpk_mt_gate_ctx {
  bool read_only;        /* check: no recovery and no hold; a pending merge transaction is a problem */
  bool shipped_txn;      /* the manifest lists a merge journal or record: neither is read or replayed */
  const char *next_step; /* read_only: the command that finishes a pending transaction */
} mpk_mt_gate_ctx;
/* Read a caller's gate options (its struct grew: the 0.1 layout ends before use_stamp). */
int mpk_mt_gate_options_read(mpk_mt_gate_options *local, const mpk_mt_gate_options *given, mpk_error *err);
/* The load gate over the inference directory's handle `dfd` (-1: absent; `inference_dir` names it). */
int mpk_mt_load_gate_at(int dfd, const char *inference_dir, const mpk_mt_handoff *map, const mpk_mt_gate_options *opts,
                        const mpk_mt_gate_ctx *ctx, mpk_mt_gate_report **out, mpk_error *err);

#endif
