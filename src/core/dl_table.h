/* A dependency's functions as a table filled by the run-time loader (core/dl.h), for the one small
   header each dependency has in its module (fetch/curl_dl.h, media/jpeg_dl.h, ...; docs/startup.md).
   Such a header includes the library's own header, lists the functions the module calls:

     #define MPK_CURL_FUNCS(X) X(curl_easy_init) X(curl_easy_cleanup) ...
     MPK_DL_TABLE(curl, MPK_CURL_FUNCS)

   and then, under MPK_DLOPEN_DEPS, redirects each name to its slot
   (`#define curl_easy_init (mpk_curl_fn.f.curl_easy_init)`), so that the code calling the library
   stays as written; one .c file holds MPK_DL_DEFINE(curl, "libcurl", MPK_SONAME_CURL, MPK_CURL_FUNCS).
   Each entry point that needs the library calls mpk_curl_load(err) before the first call.

   The slots are typed from the library's own prototypes (__typeof__), so a call through them is
   checked as a direct call would be; the union gives the loader its array of void * to fill. */
#ifndef MPK_CORE_DL_TABLE_H
#define MPK_CORE_DL_TABLE_H

#include "core/dl.h"

#define MPK_DL_MEMBER_(f) __typeof__(&f) f;
#define MPK_DL_NAME_(f) #f,
#define MPK_DL_ONE_(f) +1

#if MPK_DLOPEN_DEPS

#define MPK_DL_TABLE(tag, LIST)                                                                                       \
  typedef union mpk_##tag##_table {                                                                                  \
    struct {                                                                                                         \
      LIST(MPK_DL_MEMBER_)                                                                                           \
    } f;                                                                                                             \
    void *slot[0 LIST(MPK_DL_ONE_)];                                                                                 \
  } mpk_##tag##_table;                                                                                               \
  extern mpk_##tag##_table mpk_##tag##_fn;                                                                           \
  int mpk_##tag##_load(mpk_error *err);

/* The table, its names and its loader: in one .c file of the module. */
#define MPK_DL_DEFINE(tag, what, soname, LIST)                                                                        \
  mpk_##tag##_table mpk_##tag##_fn;                                                                                  \
  static const char *const mpk_##tag##_names[] = {LIST(MPK_DL_NAME_) NULL};                                          \
  static mpk_dl mpk_##tag##_dl = MPK_DL_INIT(what, soname, mpk_##tag##_names, mpk_##tag##_fn.slot);                  \
  int mpk_##tag##_load(mpk_error *err) { return mpk_dl_load(&mpk_##tag##_dl, err); }

#else /* linked normally: the names are the library's own, loading is nothing */

#define MPK_DL_TABLE(tag, LIST)                                                                                       \
  static inline int mpk_##tag##_load(mpk_error *err) {                                                               \
    (void)err;                                                                                                       \
    return 0;                                                                                                        \
  }
#define MPK_DL_DEFINE(tag, what, soname, LIST)

#endif

#endif
