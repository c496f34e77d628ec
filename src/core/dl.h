/* The one run-time loader of optional dependencies (docs/components.md, "Loaded on first use").
   A component's dependency (libcurl, libsoxr, the image codecs, libcrypto, ...) is opened with
   dlopen() the first time a function needs it, so that a process pays for what it uses: a
   `modelpkg --version` or a load gate loads none of them. One mpk_dl per dependency, a static
   object of the file that uses it:

     static const char *const curl_names[] = {"curl_easy_init", "curl_easy_cleanup", NULL};
     static void *curl_slots[2];
     static mpk_dl curl_dl = MPK_DL_INIT("libcurl", "libcurl.so.4", curl_names, curl_slots);
     ...
     int rc = mpk_dl_load(&curl_dl, err);   // then call through the slots
     if (rc) return rc;

   Builds without dlopen (static, WebAssembly: MPK_DLOPEN_DEPS off) link the dependency and do
   not use this. */
#ifndef MPK_CORE_DL_H
#define MPK_CORE_DL_H

#include <stdatomic.h>

#include "modelpkg/core.h"

typedef struct mpk_dl {
  const char *what;           /* the dependency as a user knows it: "libcurl" */
  const char *soname;         /* what dlopen() is given: "libcurl.so.4" */
  const char *const *symbols; /* NULL-terminated names, all required */
  void **slots;               /* one per name, filled in the same order */
  atomic_int state;           /* 0 not tried, 1 loaded, -1 failed (why[] says why) */
  char why[240];
} mpk_dl;

#define MPK_DL_INIT(what, soname, symbols, slots) {(what), (soname), (symbols), (slots), 0, {0}}

/* Open the library and resolve every symbol, once per process (thread-safe; later calls cost one
   atomic load). 0, or MPK_EUNSUPPORTED naming the dependency, its soname and dlerror(): a missing
   library or symbol is remembered, never retried. The library is opened RTLD_LOCAL | RTLD_NODELETE
   and never closed: its functions may be held by callers and its threads may outlive any use. */
int mpk_dl_load(mpk_dl *d, mpk_error *err);

/* dlopen() of a library whose path is chosen at run time (ONNX Runtime's loader), with the same
   flags as mpk_dl_load: the handle, or NULL with *why (may be NULL) set to dlerror()'s text. */
void *mpk_dl_open_path(const char *path, const char **why);

#endif
