/* zlib, opened on first use under MPK_DLOPEN_DEPS (core/dl_table.h, docs/startup.md): the
   functions objfile/gzip.c calls (which holds the table), redirected to their slots;
   mpk_zlib_load() before the first. zlib.h's inflateInit2() is a macro calling inflateInit2_,
   redirected when the macro's expansion is rescanned. */
#ifndef MPK_OBJFILE_ZLIB_DL_H
#define MPK_OBJFILE_ZLIB_DL_H

#include <zlib.h>

#include "core/dl_table.h"

#define MPK_ZLIB_FUNCS(X) X(inflateInit2_) X(inflate) X(inflateReset) X(inflateEnd)

MPK_DL_TABLE(zlib, MPK_ZLIB_FUNCS)

#if MPK_DLOPEN_DEPS
#define inflateInit2_ (mpk_zlib_fn.f.inflateInit2_)
#define inflate (mpk_zlib_fn.f.inflate)
#define inflateReset (mpk_zlib_fn.f.inflateReset)
#define inflateEnd (mpk_zlib_fn.f.inflateEnd)
#endif

#endif
