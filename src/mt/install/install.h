/* mt install: internal entry points for the crash tests (tests/unit/test_mt_install.c). */
#ifndef MPK_MT_INSTALL_H
#define MPK_MT_INSTALL_H

#include "core/core.h"

/* Returned when an install stopped early on purpose, the way a crash would stop it. */
#define MPK_MT_INSTALL_STOPPED 1

typedef struct mpk_mt_install_test {
  /* Stop right after the commit's k-th durable step (0: never), leaving everything as a crash
     would; the caller is a forked child that then _exit()s. Steps: 1 manifest written, 2 install
     record written, 3 the reference's install_record.json written, 4 tree synced, 5 commit marker
     written, then the swap — with RENAME_EXCHANGE 6 exchanged, 7 synced, 8 the old tree retired,
     9 old/parts removed; without it 6 the old tree moved aside, 7 the new one renamed in, 8 synced,
     9 the staging tree retired, 10 old/ retired and parts removed. */
  int stop_after;
  /* Swap with two renames, as on a file system without RENAME_EXCHANGE. */
  int no_exchange;
} mpk_mt_install_test;

/* The documents the installer writes and reads back, parsed from their bytes (exposed for the fuzz
   target tests/fuzz/fuzz_install_records.c). `data` may be NULL (absent). */
/* An install record or the commit marker: "installId" (when shorter than 65 bytes; else "") and,
   when repo_id is not NULL, "repoId" (cut to repo_cap). false when it is not a JSON object. */
bool mpk_mt_install_parse_ids(const void *data, size_t len, char id[65], char *repo_id, size_t repo_cap);
/* A staging record: the offset a resume may start from — `have` (the staged file's size) when the
   record names this file (the same sha256 and size) and have <= size, else 0 — and the validator
   to send with it ("" unless the record's source is `source`). */
uint64_t mpk_mt_install_parse_part(const void *data, size_t len, const char *sha256, uint64_t size, const char *source,
                                   uint64_t have, char validator[256]);

/* record.c: the reference runtime's install record (InstallRecord.kt; MPK_MT_REFERENCE_INSTALL_RECORD): Gson's
   toJson of {repoId, variantId, features (sorted as Kotlin sorts strings: UTF-16 code units),
   installedAtEpochMs}, compact, Gson's escapes (core's mpk_json_dumps_gson). *text freed with mpk_free. */
int mpk_mt_reference_record(const char *repo_id, const char *variant, const char *const *features, size_t n,
                            int64_t installed_at_ms, char **text, size_t *len, mpk_error *err);

/* update.c: after the download of an update, the adapters merged into the installed tree (read
   under the stage lock `st`) re-applied to the staged new tree of variant `v` before the commit, or
   reported dropped with the reason (out->adapters; `out` may be NULL). */
int mpk_mt_install_reapply(const mpk_mt_variant *v, const mpk_mt_manifest *m, mpk_fetch_stage *st,
                           mpk_mt_install_result *out, mpk_error *err);

int mpk_mt_install_ex(const char *source, const mpk_mt_install_options *o, const mpk_mt_install_test *test,
                      mpk_mt_install_result *out, mpk_error *err);

#endif
