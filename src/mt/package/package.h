/* Internal to mt: the package room (manifest, check, build, select, plan, locate) — what other
   rooms of mt use of a package: its parsed manifest, plan groups, locating a variant, the names of
   the files only modelpkg writes. */
#ifndef MPK_MT_PACKAGE_H
#define MPK_MT_PACKAGE_H

#include "core/core.h"

struct mpk_mt_manifest_priv {
  mpk_arena *arena;
  json_t *root; /* the document as read: unknown fields are kept for writing it back */
};

/* The parsed document (borrowed; valid while the manifest lives). */
const json_t *mpk_mt_manifest_root(const mpk_mt_manifest *m);

/* plan.c: a plan's group by name (NULL when absent), and whether a group's patterns select a path. */
const mpk_mt_group *mpk_mt_plan_group(const mpk_mt_plan *plan, const char *name);
bool mpk_mt_group_selects(const mpk_mt_group *g, const char *path);
/* The files a download pattern selects are the run m->files[*lo, *hi) (the files are sorted by path;
   an invalid pattern selects none): whether it selects any file is one binary search, not a pass
   over the files. */
void mpk_mt_pattern_range(const mpk_mt_manifest *m, const char *pattern, size_t *lo, size_t *hi);

/* locate.c: a variant's feature path by key (NULL when absent); its inference directory relative to
   the package (the "inference" path, else the weightHandoff map's directory; malloc'ed, NULL when
   neither exists or out of memory). */
const char *mpk_mt_variant_path(const mpk_mt_variant *v, const char *key);
char *mpk_mt_inference_rel(const mpk_mt_variant *v);

/* tree.c: what a directory holds — a package, or an installed model (the tree an installer writes:
   <cache>/<repo>/{inference,train,embedding,tokenizer}/, the manifest, checksums.json, records).
   docs/mt-installed.md. */
typedef struct mpk_mt_tree {
  int installed;          /* 1: an installed model */
  int record;             /* MPK_MT_RECORD_*: the record that named the variant (0: none) */
  char *record_file;      /* its path (NULL without one) */
  char *variant;          /* the variant recorded at install (NULL: none recorded) */
  char *repo_id;          /* the recorded repo id (NULL: none) */
  char **features;        /* the recorded feature groups */
  size_t n_features;
  int64_t installed_at_ms; /* 0: unrecorded */
  char *install_id, *source; /* modelpkg's record only */
} mpk_mt_tree;
/* Read `dir`'s install records (modelpkg's, the reference runtime's; both: they must agree).
   A tree with no record is installed when it has inference/ and no variants/ (a hand-pushed
   tree). A package is {installed 0}. Errors: a record that is not what it must be. */
int mpk_mt_tree_open(const char *dir, mpk_mt_tree *out, mpk_error *err);
void mpk_mt_tree_free(mpk_mt_tree *t);
/* The one default-variant rule: an installed tree's recorded variant, else the manifest's
   defaultVariant (install, check, merge, tensors, graph, plan all use it). */
const char *mpk_mt_tree_default_variant(const mpk_mt_tree *t, const mpk_mt_manifest *m);
/* The variant to work on: `requested` (NULL: the default rule); on an installed tree only its own. */
int mpk_mt_tree_variant(const mpk_mt_tree *t, const mpk_mt_manifest *m, const char *requested, const char *manifest_file,
                        const mpk_mt_variant **out, mpk_error *err);
/* Where package path `pkg` of variant `v` is in the tree, relative to it (malloc'ed; NULL: no
   memory): itself in a package, mpk_mt_installed_path() in an installed tree. */
char *mpk_mt_tree_path(const mpk_mt_tree *t, const mpk_mt_variant *v, const char *pkg);
/* The reference's repo id for a cache directory without a record: "__" back to "/" (lossy). */
char *mpk_mt_unsanitize_repo_dir(const char *name);
/* Whether the tree can hold package path `pkg` at all (an installed tree holds one variant). */
bool mpk_mt_tree_holds(const mpk_mt_tree *t, const mpk_mt_variant *v, const char *pkg);

/* The manifest of package or installed tree `dir`, the variant (NULL: the default rule) and its
   directories as absolute paths (map_file NULL without weightHandoff; train_dir NULL without a
   "train" path); the *_rel paths are relative to `dir`. */
typedef struct mpk_mt_located {
  mpk_mt_tree tree;
  mpk_mt_manifest *manifest;
  const mpk_mt_variant *variant;
  char *manifest_file, *map_file, *inference_dir, *train_dir;
  char *map_rel, *inference_rel;
} mpk_mt_located;
int mpk_mt_locate(const char *dir, const char *variant, mpk_mt_located *out, mpk_error *err);
/* The same with the manifest given (parsed, taken over: freed with the result or on failure)
   instead of read from the package: mt build --parity locates the variant in the manifest it is
   about to write. NULL: read it. */
int mpk_mt_locate_with(const char *dir, mpk_mt_manifest *given, const char *variant, mpk_mt_located *out,
                       mpk_error *err);
/* mpk_mt_variant_gate_open over mpk_mt_locate_with. */
int mpk_mt_variant_gate_open_with(const char *dir, mpk_mt_manifest *given, const char *variant,
                                  const mpk_mt_gate_options *opts, mpk_mt_variant_gate **out, mpk_error *err);
void mpk_mt_located_free(mpk_mt_located *l);

/* locate.c: the variant's inference directory opened from the package root with mpk_open_dir_at
   (no component may be a link), after refusing a merge journal or record that the manifest lists
   (shipped inside the package: never replayed, never trusted). *fd -1 when the variant has no
   inference directory. */
int mpk_mt_open_inference(const char *dir, const mpk_mt_located *loc, int *fd, mpk_error *err);
/* The located variant and its map behind a public mpk_mt_variant_gate (map NULL when absent). */
const mpk_mt_located *mpk_mt_variant_gate_located(const mpk_mt_variant_gate *g);
const mpk_mt_handoff *mpk_mt_variant_gate_map(const mpk_mt_variant_gate *g);
/* The variant's weight handoff map, read beneath the package root (MPK_ENOTFOUND when absent). */
int mpk_mt_load_map(const char *dir, const mpk_mt_located *loc, mpk_mt_handoff **out, mpk_error *err);
/* The first file the manifest lists that only modelpkg may write into inference directory
   `inference_rel` (its merge journal, its temporaries, the merge record), or NULL. */
const char *mpk_mt_listed_txn_file(const mpk_mt_manifest *m, const char *inference_rel);

/* The merge's transaction name in an inference directory (merge.c writes, the load gate holds). */
#define MPK_MT_MERGE_TXN "merge"
/* Files only modelpkg itself writes into an inference directory, inside the merge transaction: the
   transaction's journal (".merge.txn-journal", core/txn.c names it) and the merge record naming each
   tensor a device merge replaced with its post-merge digest — the one authority for "merged on
   device" (docs/SECURITY.md). A package or an install source carrying either is refused. */
#define MPK_MT_MERGE_JOURNAL "." MPK_MT_MERGE_TXN ".txn-journal"
#define MPK_MT_MERGE_RECORD ".modelpkg-merge-record.json"
/* The load gate's verification stamp (mt/tensor/stamp.c): what it hashed, with each file's identity
   and times. Written only on the device; a package or an install source carrying one is refused. */
#define MPK_MT_STAMP_FILE ".modelpkg-verified.json"
/* Adapter membership (docs/mt-merge.md, "Membership"), written inside the same merge transaction:
   the document naming each adapter merged into the directory, the copy of each adapter's bytes
   ("<prefix><sha256>.safetensors") and the shipped tensors a --keep-base merge kept
   ("<tensor><suffix>", "<tensor>.sha256<suffix>"). */
#define MPK_MT_MEMBERS ".modelpkg-adapters.json"
#define MPK_MT_ADAPTER_PREFIX ".modelpkg-adapter."
#define MPK_MT_KEPT_SUFFIX ".modelpkg-base"
/* A file name (last segment) only modelpkg writes into an inference directory: inside its merge
   transaction the journal (and its .tmp), the record, a staged "<final>.merge-txn.XXXXXX", the
   adapter membership, adapter copies and kept bases; the load gate's stamp and a temporary
   "<stamp>.tmp.XXXXXX" an interrupted write of it left (locate.c). */
bool mpk_mt_is_device_file(const char *base);

#endif
