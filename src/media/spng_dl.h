/* libspng, opened on first use under MPK_DLOPEN_DEPS (core/dl_table.h, docs/startup.md): the
   functions media/image_decode.c (decoding) and media/image_png.c (encoding) call, redirected to
   their slots; mpk_spng_load() before the first. image_decode.c holds the table. */
#ifndef MPK_MEDIA_SPNG_DL_H
#define MPK_MEDIA_SPNG_DL_H

#include <spng.h>

#include "core/dl_table.h"

#define MPK_SPNG_FUNCS(X)                                                                                             \
  X(spng_ctx_new) X(spng_ctx_free) X(spng_strerror) X(spng_set_crc_action) X(spng_set_image_limits)                  \
  X(spng_set_chunk_limits) X(spng_set_png_buffer) X(spng_get_ihdr) X(spng_decode_image) X(spng_get_row_info)         \
  X(spng_decode_row) X(spng_decode_chunks) X(spng_set_ihdr) X(spng_set_option) X(spng_encode_image)                  \
  X(spng_get_png_buffer)

MPK_DL_TABLE(spng, MPK_SPNG_FUNCS)

#if MPK_DLOPEN_DEPS
#define spng_ctx_new (mpk_spng_fn.f.spng_ctx_new)
#define spng_ctx_free (mpk_spng_fn.f.spng_ctx_free)
#define spng_strerror (mpk_spng_fn.f.spng_strerror)
#define spng_set_crc_action (mpk_spng_fn.f.spng_set_crc_action)
#define spng_set_image_limits (mpk_spng_fn.f.spng_set_image_limits)
#define spng_set_chunk_limits (mpk_spng_fn.f.spng_set_chunk_limits)
#define spng_set_png_buffer (mpk_spng_fn.f.spng_set_png_buffer)
#define spng_get_ihdr (mpk_spng_fn.f.spng_get_ihdr)
#define spng_decode_image (mpk_spng_fn.f.spng_decode_image)
#define spng_get_row_info (mpk_spng_fn.f.spng_get_row_info)
#define spng_decode_row (mpk_spng_fn.f.spng_decode_row)
#define spng_decode_chunks (mpk_spng_fn.f.spng_decode_chunks)
#define spng_set_ihdr (mpk_spng_fn.f.spng_set_ihdr)
#define spng_set_option (mpk_spng_fn.f.spng_set_option)
#define spng_encode_image (mpk_spng_fn.f.spng_encode_image)
#define spng_get_png_buffer (mpk_spng_fn.f.spng_get_png_buffer)
#endif

#endif
