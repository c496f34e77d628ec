/* A crash-safe transaction over several files of one directory: either every staged file replaces
   its target, or none does, whatever instant the process or the machine stops. The protocol, the
   journal format and the recovery decision table are in docs/transactions.md. Internal, not
   installed. */
#ifndef MPK_TXN_H
#define MPK_TXN_H

#include "core/core.h"

/* ---------------------------------------------------------------- transactions (txn.c) */

/* One transaction in progress. One thread at a time. */
typedef struct mpk_txn mpk_txn;

typedef enum mpk_txn_action {
  MPK_TXN_NOTHING = 0,        /* no interrupted transaction: nothing was touched */
  MPK_TXN_ROLLED_FORWARD = 1, /* a committed transaction was completed: all new contents */
  MPK_TXN_ROLLED_BACK = 2,    /* an uncommitted one was undone: all old contents */
} mpk_txn_action;

/* What recovery did. */
typedef struct mpk_txn_outcome {
  mpk_txn_action action;
  size_t files;   /* rolled forward: the files the journal replaces */
  size_t renamed; /* of those, how many recovery moved into place (the rest already were) */
  size_t removed; /* leftover temporary files and partial journals removed */
} mpk_txn_outcome;

/* What recovery would do, found without changing anything (for `check --no-fix`). */
typedef struct mpk_txn_state {
  mpk_txn_action pending; /* NOTHING, ROLLED_FORWARD (a committed journal) or ROLLED_BACK */
  bool busy;              /* a live transaction holds the lock: in progress, not interrupted */
  bool journal;           /* a committed journal is present (and well formed) */
  size_t files;           /* its entries */
  size_t temps;           /* temporary files of this transaction name */
  bool journal_tmp;       /* a journal that was still being written */
} mpk_txn_state;

/* Start a transaction named `name` ([A-Za-z0-9_-], at most 32 characters, e.g. "merge") in the
   directory `dir`. Takes an exclusive lock on the directory: while it is held, a second begin or a
   recovery fails with MPK_EIO "another <name> transaction is in progress". Under that lock, an
   interrupted transaction is recovered first (mpk_txn_recover's rules); what was done goes to
   `*recovered` (may be NULL). A recovery that fails fails the begin. */
int mpk_txn_begin(const char *dir, const char *name, mpk_txn_outcome *recovered, mpk_txn **out,
                  mpk_error *err);

/* After a staging call fails, the caller aborts: the commit of a transaction with a failed staging
   step is refused (a staged file may be incomplete).

   Stage the new contents of `final_name` (a plain file name in the directory): `*fd` is a fresh
   temporary file "<final_name>.<name>-txn.XXXXXX" beside it, open for writing. The fd belongs to
   the transaction: write to it, do not close it (bytes written through mmap must be msync'ed).
   Finish it with mpk_txn_stage_done, or leave it to the commit. The new file takes the mode of the
   file it replaces (0666 less the umask for a new file). */
int mpk_txn_stage(mpk_txn *t, const char *final_name, int *fd, mpk_error *err);
/* Writing `final_name`'s fd is finished (the fd must not be used again): the transaction fsyncs
   and closes it with others in parallel, at the commit or as soon as 64 finished files wait, so a
   transaction over thousands of files keeps few descriptors open. `sha256_hex` is the lowercase
   hex SHA-256 of the bytes written, when the caller computed it; it is recorded in the journal as
   is. NULL: the commit hashes the file. */
int mpk_txn_stage_done(mpk_txn *t, const char *final_name, const char *sha256_hex, mpk_error *err);
/* Stage `len` bytes as the new contents of `final_name` (written and hashed now, synced like a
   file finished with mpk_txn_stage_done). */
int mpk_txn_stage_bytes(mpk_txn *t, const char *final_name, const void *data, size_t len,
                        mpk_error *err);

/* Make every staged file replace its target, all or none. Consumes `t` (also on failure).
   A failure before the commit point removes the temporaries and leaves every target as it was.
   A failure after it (the journal is durable) leaves the journal and the temporaries in place and
   says so: the next begin or recovery completes the transaction. */
int mpk_txn_commit(mpk_txn *t, mpk_error *err);
/* Drop the transaction: remove its temporaries, release the lock, free. Accepts NULL. */
void mpk_txn_abort(mpk_txn *t);

/* Finish or undo whatever an interrupted transaction named `name` left in `dir`: a complete
   journal is rolled forward (each entry's new bytes, verified against the journal's size and
   SHA-256, put in place), anything else rolled back (this name's temporaries and partial journal
   removed). Nothing else in `dir` is touched. Crash-safe and idempotent. Takes the lock (MPK_EIO
   "... in progress" when a live transaction holds it). A corrupt journal is MPK_EMALFORMED and a
   file that does not hold the journaled bytes MPK_EMISMATCH, naming it; both leave everything in
   place. `out` may be NULL. */
int mpk_txn_recover(const char *dir, const char *name, mpk_txn_outcome *out, mpk_error *err);
/* What mpk_txn_recover would do, read-only (no lock taken, nothing written, no file hashed).
   A corrupt journal is MPK_EMALFORMED. */
int mpk_txn_inspect(const char *dir, const char *name, mpk_txn_state *out, mpk_error *err);

/* A reader's hold on `dir`: any interrupted transaction `name` is recovered first, then a shared
   lock on the directory is taken and kept in *fd (close it with mpk_txn_release). While any hold
   exists, no transaction can begin in `dir` (begin needs the lock exclusively), so what a reader
   sees cannot change under it; several readers may hold at once. A transaction in progress makes
   it MPK_EIO "... in progress" at once (no waiting). `recovered` may be NULL. */
int mpk_txn_hold(const char *dir, const char *name, int *fd, mpk_txn_outcome *recovered, mpk_error *err);
/* The same four, on a directory handle the caller opened (e.g. confined with mpk_open_dir_at, so
   no component of its path is a link): every file of the transaction — temporaries, journal,
   targets — is created, read, renamed and removed relative to that handle, never through a
   symbolic link and never blocking on a FIFO. `shown` names the directory in messages. The path
   forms above open the named directory and call these. */
int mpk_txn_begin_at(int dirfd, const char *shown, const char *name, mpk_txn_outcome *recovered, mpk_txn **out,
                     mpk_error *err);
int mpk_txn_recover_at(int dirfd, const char *shown, const char *name, mpk_txn_outcome *out, mpk_error *err);
int mpk_txn_inspect_at(int dirfd, const char *shown, const char *name, mpk_txn_state *out, mpk_error *err);
int mpk_txn_hold_at(int dirfd, const char *shown, const char *name, int *fd, mpk_txn_outcome *recovered,
                    mpk_error *err);

/* Release a hold (accepts -1). */
void mpk_txn_release(int fd);

/* ---------------------------------------------------------------- for the crash tests only */

/* Returned by the *_until functions when they stopped early on purpose. */
#define MPK_TXN_STOPPED 1
/* mpk_txn_commit, stopped right after its `stop_after`-th durable step (0: before the first; -1:
   never), the way a crash would stop it: nothing is cleaned up and `t` stays allocated and locked.
   The caller is a forked child that then _exit()s. Steps: 1 temporaries synced; 2 half the journal
   written; 3 journal written and synced; 4 journal renamed into place; 5 directory synced (the
   commit point); 5+i the i-th rename; n+6 directory synced; n+7 journal removed; n+8 directory
   synced. */
int mpk_txn_commit_until(mpk_txn *t, int stop_after, mpk_error *err);
/* mpk_txn_recover, stopped after its `stop_after`-th change (each rename, unlink or directory sync),
   the lock released (the caller is a child that then _exit()s). */
int mpk_txn_recover_until(const char *dir, const char *name, int stop_after, mpk_txn_outcome *out,
                          mpk_error *err);

#endif
