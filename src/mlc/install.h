/* mlc install's internals (docs/mlc-install.md): the source and its documents (install_read.c),
   the tree's name (install_name.c), the flow (install.c). A client of the PUBLIC fetch API only
   (modelpkg/fetch.h): the mlc module does not include src/fetch/. */
#ifndef MPK_MLC_INSTALL_INTERNAL_H
#define MPK_MLC_INSTALL_INTERNAL_H

#include "mlc/mlc.h"

/* Bounds of what is read into memory before any shard is fetched. */
#define MPK_MLC_INSTALL_DOC_MAX ((size_t)16 << 20)        /* mlc-model-manifest.json, mlc-chat-config.json */
#define MPK_MLC_INSTALL_TC_MAX MPK_DOCUMENT_MAX_BYTES      /* tensor-cache.json: check's bound (64 MiB) */
#define MPK_MLC_INSTALL_TOKENIZER_MAX MPK_DOCUMENT_MAX_BYTES /* each tokenizer file */
#define MPK_MLC_INSTALL_LIB_MAX ((size_t)256 << 20)       /* the compiled library (held until the commit) */
#define MPK_MLC_INSTALL_MAX_TOKENIZER 16

/* One document written into the tree at the commit. */
typedef struct mpk_mlc_idoc {
  char *name;
  uint8_t *data;
  size_t len;
} mpk_mlc_idoc;

typedef struct mpk_mlc_inst {
  mpk_mlc_install_options o;
  const char *source;           /* as given */
  char name[256];               /* the tree's name */
  char *model_url;              /* the cleaned model URL, or the source directory */
  char *base;                   /* where the documents and shards are: the tensor-cache base */
  int http;
  mpk_fetch_source *src;
  mpk_mlc_idoc manifest, chat, tc_doc; /* manifest.data NULL: a legacy model */
  mpk_mlc_package *pkg;
  mpk_mlc_tensor_cache *tc;
  mpk_mlc_idoc tokenizer[MPK_MLC_INSTALL_MAX_TOKENIZER];
  size_t n_tokenizer;
  mpk_mlc_idoc lib;             /* lib.name NULL: no library */
  char lib_sha256[65];
  mpk_fetch_file *files;        /* the plan: every shard with its size and MD5 */
  size_t n;
  uint64_t total;
} mpk_mlc_inst;

/* install_name.c: the tree's name from opts->name, else from the source (docs/mlc-install.md,
   "Where it goes"): a hub URL .../<A>/<B>/resolve/<rev>/ → A__B, another URL → the last path segment
   before resolve/ (or the host), a directory → its basename; characters as mt install's repo-id rule
   ([A-Za-z0-9._-] kept, '/' → "__", others → '_'). "", ".", "..", ".staging": MPK_EINVAL. */
int mpk_mlc_install_tree_name(const char *given, const char *model_url, int http, char out[256], mpk_error *err);

/* install_read.c: open the source (a URL cleaned and resolved as WebLLM does, or a directory), read
   the manifest (optional), the chat config, tensor-cache.json, the tokenizer files and the library,
   each bounded, and check them all as `modelpkg check --no-weights [--lib]` would, before anything
   else is fetched. */
int mpk_mlc_install_read(mpk_mlc_inst *s, mpk_error *err);
/* install_read.c: the plan: every shard with its size and MD5 (a shard without an MD5 is refused),
   checked by the engine with the documents reserved. */
int mpk_mlc_install_plan(mpk_mlc_inst *s, mpk_error *err);
void mpk_mlc_install_inst_free(mpk_mlc_inst *s);

#endif
