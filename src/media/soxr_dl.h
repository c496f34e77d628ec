/* libsoxr, opened on first use under MPK_DLOPEN_DEPS (core/dl_table.h, docs/startup.md): the
   functions media/audio.c calls (which holds the table), redirected to their slots;
   mpk_soxr_load() before the first (a recording already at the target rate never needs it). */
#ifndef MPK_MEDIA_SOXR_DL_H
#define MPK_MEDIA_SOXR_DL_H

#include <soxr.h>

#include "core/dl_table.h"

#define MPK_SOXR_FUNCS(X)                                                                                             \
  X(soxr_create) X(soxr_process) X(soxr_delete) X(soxr_io_spec) X(soxr_quality_spec) X(soxr_runtime_spec)

MPK_DL_TABLE(soxr, MPK_SOXR_FUNCS)

#if MPK_DLOPEN_DEPS
#define soxr_create (mpk_soxr_fn.f.soxr_create)
#define soxr_process (mpk_soxr_fn.f.soxr_process)
#define soxr_delete (mpk_soxr_fn.f.soxr_delete)
#define soxr_io_spec (mpk_soxr_fn.f.soxr_io_spec)
#define soxr_quality_spec (mpk_soxr_fn.f.soxr_quality_spec)
#define soxr_runtime_spec (mpk_soxr_fn.f.soxr_runtime_spec)
#endif

#endif
