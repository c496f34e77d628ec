/* libexif, opened on first use under MPK_DLOPEN_DEPS (core/dl_table.h, docs/startup.md): the
   functions media/image_probe.c calls (which holds the table), redirected to their slots;
   mpk_exif_load() before the first (only an image with an EXIF block needs it). */
#ifndef MPK_MEDIA_EXIF_DL_H
#define MPK_MEDIA_EXIF_DL_H

#include <libexif/exif-data.h>

#include "core/dl_table.h"

#define MPK_EXIF_FUNCS(X)                                                                                             \
  X(exif_data_new) X(exif_data_unset_option) X(exif_data_load_data) X(exif_content_get_entry) X(exif_get_short)      \
  X(exif_data_get_byte_order) X(exif_data_unref)

MPK_DL_TABLE(exif, MPK_EXIF_FUNCS)

#if MPK_DLOPEN_DEPS
#define exif_data_new (mpk_exif_fn.f.exif_data_new)
#define exif_data_unset_option (mpk_exif_fn.f.exif_data_unset_option)
#define exif_data_load_data (mpk_exif_fn.f.exif_data_load_data)
#define exif_content_get_entry (mpk_exif_fn.f.exif_content_get_entry)
#define exif_get_short (mpk_exif_fn.f.exif_get_short)
#define exif_data_get_byte_order (mpk_exif_fn.f.exif_data_get_byte_order)
#define exif_data_unref (mpk_exif_fn.f.exif_data_unref)
#endif

#endif
