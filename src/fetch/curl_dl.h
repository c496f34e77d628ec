/* libcurl, opened on first use under MPK_DLOPEN_DEPS (core/dl_table.h, docs/startup.md): the
   functions fetch/source.c calls (which holds the table), redirected to their slots;
   mpk_curl_load() before the first. */
#ifndef MPK_FETCH_CURL_DL_H
#define MPK_FETCH_CURL_DL_H

#include <curl/curl.h>

#include "core/dl_table.h"

#define MPK_CURL_FUNCS(X)                                                                                             \
  X(curl_global_init)                                                                                                \
  X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_reset) X(curl_easy_setopt) X(curl_easy_getinfo)                 \
  X(curl_easy_perform) X(curl_easy_strerror) X(curl_slist_append) X(curl_slist_free_all) X(curl_getdate)

MPK_DL_TABLE(curl, MPK_CURL_FUNCS)

#if MPK_DLOPEN_DEPS
/* curl.h makes these two function-like macros (typecheck-gcc.h's compile-time option checks, which
   end in a call that cannot be redirected): here they call the slot; builds linking libcurl
   (MPK_DLOPEN_DEPS off) keep the checks. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_setopt(h, opt, v) (mpk_curl_fn.f.curl_easy_setopt)(h, opt, v)
#define curl_easy_getinfo(h, info, p) (mpk_curl_fn.f.curl_easy_getinfo)(h, info, p)
#define curl_global_init (mpk_curl_fn.f.curl_global_init)
#define curl_easy_init (mpk_curl_fn.f.curl_easy_init)
#define curl_easy_cleanup (mpk_curl_fn.f.curl_easy_cleanup)
#define curl_easy_reset (mpk_curl_fn.f.curl_easy_reset)
#define curl_easy_perform (mpk_curl_fn.f.curl_easy_perform)
#define curl_easy_strerror (mpk_curl_fn.f.curl_easy_strerror)
#define curl_slist_append (mpk_curl_fn.f.curl_slist_append)
#define curl_slist_free_all (mpk_curl_fn.f.curl_slist_free_all)
#define curl_getdate (mpk_curl_fn.f.curl_getdate)
#endif

#endif
