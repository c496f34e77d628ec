/* The fetch engine's internals shared by its files (stage.c: the staging area, its handles and
   records, the lock; commit.c: the commit and the recovery; engine.c: the download of a plan), and
   the hooks the crash tests and fuzz targets use. docs/fetch.md. */
#ifndef MPK_FETCH_ENGINE_H
#define MPK_FETCH_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include <limits.h>

#include "core/core.h"
#include "core/pool.h"
#include "modelpkg/fetch.h"

#define MPK_FETCH_STAGING_DIR ".staging"
#define MPK_FETCH_COMMIT_FILE "commit.json"
#define MPK_FETCH_LOCK_FILE "lock"
#define MPK_FETCH_RETIRED_DIR "retired" /* .staging/<name>/retired/<id>: trees out of place (retire.c) */
#define MPK_FETCH_MAX_JOBS 64
#define MPK_FETCH_RECORD_MAX_BYTES ((uint64_t)1 << 20) /* a staging record, the marker, a client's record */
#define MPK_FETCH_TREE_MAX_DEPTH 128                   /* directories below new/, parts/, old/ */
#define MPK_FETCH_NAME_MAX 255

/* Returned by mpk_fetch_commit when a crash test stopped it on purpose (mpk_fetch_stage_set_test). */
#define MPK_FETCH_STOPPED 1

struct mpk_fetch_stage {
  char *cache_dir, *record_name;
  char name[MPK_FETCH_NAME_MAX + 1];
  bool wait_for_lock;
  /* paths for messages only: every operation goes through the handles */
  char *target, *stage_root, *staging, *new_dir, *parts_dir;
  int cache_fd, stage_root_fd, staging_fd, new_fd, parts_fd, lock_fd;
  /* crash tests */
  int stop_after, step;
  bool no_exchange;
};

/* Crash tests: stop mpk_fetch_commit right after its k-th durable step (0: never), returning
   MPK_FETCH_STOPPED and leaving everything as a crash would; `no_exchange`: swap with two renames.
   The steps: one per document written, then the tree synced, the marker written, then the swap —
   with RENAME_EXCHANGE exchanged, synced, staging tree removed, old/parts removed; without it the
   old tree moved aside, the new one renamed in, synced, staging tree removed, old/parts removed. */
void mpk_fetch_stage_set_test(mpk_fetch_stage *st, int stop_after, bool no_exchange);

/* The documents the engine reads back, parsed from their bytes (for the fuzz targets). `data` may
   be NULL (absent). A client's record or the commit marker: "installId" (when shorter than 65
   bytes; else "") and, when `repo_id` is not NULL, "repoId" (cut to repo_cap). false when it is not
   a JSON object. */
bool mpk_fetch_parse_ids(const void *data, size_t len, char id[65], char *repo_id, size_t repo_cap);
/* A staging record: the offset a resume may start from — `have` (the staged file's size) when the
   record names this file (the same digest under the algorithm's key, "sha256" or "md5", and the same
   size) and have <= size, else 0; a ranged file's record holds "prefix" (the contiguous bytes
   written), and then min(prefix, have) — and the validator to send with it ("" unless the record's source
   is `source`). */
uint64_t mpk_fetch_parse_part(const void *data, size_t len, mpk_digest_algo algo, const char *digest, uint64_t size,
                              const char *source, uint64_t have, char validator[256]);
/* "sha256" / "md5": the staging record's key; "SHA-256" / "MD5" for messages. */
const char *mpk_fetch_algo_key(mpk_digest_algo algo);
const char *mpk_fetch_algo_name(mpk_digest_algo algo);

/* ---- the staging area's file operations (stage.c), all relative to directory handles */
void mpk_fx_close(int *fd);
int mpk_fx_refuse_link(mpk_error *err, const char *shown);
/* The directory `name` of `parent`, created first when `create`, opened without following a link:
   a link or a non-directory is refused; without `create` a missing one is MPK_ENOTFOUND. */
int mpk_fx_open_dir(int parent, const char *parent_shown, const char *name, bool create, int *fd, mpk_error *err);
/* The same, but absent is *fd -1 and 0. */
int mpk_fx_open_tree(int dir, const char *dir_shown, const char *name, int *fd, mpk_error *err);
/* The directory holding the last segment of the confined `rel` beneath `root` (created when
   `create`); *base points into rel at that segment. */
int mpk_fx_open_parent(int root, const char *root_shown, const char *rel, bool create, int *fd, const char **base,
                       mpk_error *err);
char **mpk_fx_list_dir(int dir, size_t *n);
void mpk_fx_free_names(char **names, size_t n);
void mpk_fx_rm_tree(int dir, const char *name, int depth);
void mpk_fx_fsync_tree(int dir, int depth);
/* Replace `name` in `dir` whole (a temporary renamed over it); `durable`: fsynced with its directory. */
int mpk_fx_write_at(int dir, const char *dir_shown, const char *name, const void *data, size_t len, bool durable,
                    mpk_error *err);
/* The same with a JSON document (consumed, NULL: out of memory). */
int mpk_fx_write_json_at(int dir, const char *dir_shown, const char *name, json_t *doc, bool durable, mpk_error *err);
/* A small regular file beneath `dir` (at most MPK_FETCH_RECORD_MAX_BYTES): malloc'ed, NUL-terminated,
   or NULL when absent or unreadable. */
char *mpk_fx_read_small_at(int dir, const char *dir_shown, const char *name, size_t *len);
void mpk_fx_read_ids(int dir, const char *dir_shown, const char *name, char id[65], char *repo_id, size_t repo_cap);

/* ---- the stage (stage.c, commit.c) */
/* Paths and handles of a stage for `name` in `cache_dir`; nothing opened. */
int mpk_fx_stage_init(mpk_fetch_stage *st, const char *cache_dir, const char *name, const char *record_name,
                      mpk_error *err);
void mpk_fx_stage_fini(mpk_fetch_stage *st);
/* The cache directory, .staging/ and .staging/<name>/ (created when `create`). */
int mpk_fx_stage_open_dirs(mpk_fetch_stage *st, bool create, mpk_error *err);
/* Take the lock (flock LOCK_EX, waiting when st->wait_for_lock). MPK_FX_STALE (no error set, the
   lock not held) when the lock file or the stage directory was removed meanwhile (a gc): start over
   with mpk_fx_stage_acquire. */
int mpk_fx_stage_lock(mpk_fetch_stage *st, mpk_error *err);
#define MPK_FX_STALE 2
/* open_dirs + lock, started over while a gc removes the stage under us. */
int mpk_fx_stage_acquire(mpk_fetch_stage *st, bool create, mpk_error *err);
/* Finish an interrupted commit (under the lock). */
int mpk_fx_recover(mpk_fetch_stage *st, mpk_error *err);

/* ---- retired trees (retire.c) */
/* A reader holds the tree `name` of `dir`: a flock on its directory or one of its top-level
   directories cannot be taken exclusively at once. */
bool mpk_fx_tree_held(int dir, const char *name);
/* Delete the tree `name` of `dir` by handle under exclusive locks of those directories: 1 deleted,
   0 left (a reader holds it). */
int mpk_fx_delete_unless_held(int dir, const char *name);
/* Retire the tree `name` of `dir`: renamed (one step) to .staging/<stage>/retired/<id>, then
   deleted unless a reader holds it (*held 1, `retired` the id). A non-directory is unlinked itself;
   nothing there is 0. */
/* Bytes of the regular files beneath `name` of `dir` (never through a link); *disk_bytes (may be
   NULL): the blocks allocated to the whole tree, in bytes. */
uint64_t mpk_fx_tree_bytes(int dir, const char *name, uint64_t *disk_bytes);
int mpk_fx_retire(mpk_fetch_stage *s, int dir, const char *name, int *held, char retired[33], mpk_error *err);
/* Delete the trees in retired/ (`rfd`) no reader holds, but `except` (may be NULL). */
void mpk_fx_sweep_retired_at(int rfd, const char *except);
/* The same for the stage's retired/ (under its lock), removing retired/ when it ends empty: every
   stage open does it, so an installer killed between a commit's swap and the deletion of the old
   tree leaves it only until the next install of that tree (or mpk_fetch_gc). */
void mpk_fx_sweep_retired(mpk_fetch_stage *s);

/* ---- the download of a plan (engine.c; ranges.c: the HTTP scheduler of whole files and pieces) */
#define MPK_FETCH_DEFAULT_RANGE_BYTES ((uint64_t)16 << 20) /* docs/fetch.md, "Ranged transfers" */

typedef struct mpk_fx_item {
  const mpk_fetch_file *f;
  const char *dest;
  uint64_t done; /* bytes present (progress) */
  uint64_t evented;
} mpk_fx_item;

typedef struct mpk_fx_run {
  mpk_fetch_stage *st;
  struct mpk_fetch_source *src;
  mpk_fetch_options o;
  const char *plan_name;
  mpk_fx_item *items; /* sorted by dest: the plan's order */
  size_t n;
  uint64_t total;
  unsigned connections; /* transfers at once */
  /* shared by the workers, under the pool's lock */
  uint64_t done;
  int rc;
  mpk_error err;
  bool stop;
  uint64_t reused;
  unsigned retries, restarts;
} mpk_fx_run;

/* Events and progress (the pool's lock taken inside; never called concurrently). */
void mpk_fx_emit(mpk_pool *pool, mpk_fx_run *r, mpk_fetch_event_kind kind, const mpk_fx_item *it, const char *message);
void mpk_fx_set_done(mpk_pool *pool, mpk_fx_run *r, mpk_fx_item *it, uint64_t done);

/* A planned file's staged copy (new/<dest>) and its staging record (parts/<dest>.json). */
typedef struct mpk_fx_staged {
  mpk_pool *pool;
  mpk_fx_run *r;
  mpk_fx_item *it;
  int fd, dir, pdir;
  const char *base;
  char path[4096], pshown[4096], record[NAME_MAX + 1];
} mpk_fx_staged;
int mpk_fx_staged_open(mpk_pool *pool, mpk_fx_run *r, mpk_fx_item *it, mpk_fx_staged *sf, mpk_error *err);
void mpk_fx_staged_close(mpk_fx_staged *sf);
/* Where a resume may start (the record's "prefix" when it has one, else the staged size, when the
   record names this file), and the validator to send with it. */
uint64_t mpk_fx_staged_resume(const mpk_fx_staged *sf, char validator[256]);
/* Rewrite the record; `prefix` >= 0 for a ranged file (its contiguous prefix), -1 none. */
int mpk_fx_staged_record(const mpk_fx_staged *sf, const char *validator, uint64_t verified, int64_t prefix,
                         mpk_error *err);
/* One whole file (resume, retries, digest attempts, fsync, record, events); `curl` a worker's
   kept-alive handle or NULL. */
int mpk_fx_fetch_whole(mpk_pool *pool, mpk_fx_run *r, mpk_fx_item *it, void *curl, mpk_error *err);
/* The plan over HTTP: `connections` workers (ranges.c). The result in r->rc / r->err. */
void mpk_fx_download_http(mpk_fx_run *r);

#endif
