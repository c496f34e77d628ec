/* libjpeg, opened on first use under MPK_DLOPEN_DEPS (core/dl_table.h, docs/startup.md): the
   functions media/image_decode.c calls (which holds the table), redirected to their slots;
   mpk_jpeg_load() before the first. jpeglib.h's jpeg_create_decompress() is a macro calling
   jpeg_CreateDecompress, which is redirected when the macro's expansion is rescanned. */
#ifndef MPK_MEDIA_JPEG_DL_H
#define MPK_MEDIA_JPEG_DL_H

#include <stdio.h> /* jpeglib.h needs FILE and size_t first */

#include <jpeglib.h>

#include "core/dl_table.h"

#define MPK_JPEG_FUNCS(X)                                                                                             \
  X(jpeg_std_error) X(jpeg_CreateDecompress) X(jpeg_destroy_decompress) X(jpeg_mem_src) X(jpeg_read_header)          \
  X(jpeg_calc_output_dimensions) X(jpeg_start_decompress) X(jpeg_read_scanlines)      \
  X(jpeg_crop_scanline)

MPK_DL_TABLE(jpeg, MPK_JPEG_FUNCS)

#if MPK_DLOPEN_DEPS
#define jpeg_std_error (mpk_jpeg_fn.f.jpeg_std_error)
#define jpeg_CreateDecompress (mpk_jpeg_fn.f.jpeg_CreateDecompress)
#define jpeg_destroy_decompress (mpk_jpeg_fn.f.jpeg_destroy_decompress)
#define jpeg_mem_src (mpk_jpeg_fn.f.jpeg_mem_src)
#define jpeg_read_header (mpk_jpeg_fn.f.jpeg_read_header)
#define jpeg_calc_output_dimensions (mpk_jpeg_fn.f.jpeg_calc_output_dimensions)
#define jpeg_start_decompress (mpk_jpeg_fn.f.jpeg_start_decompress)
#define jpeg_read_scanlines (mpk_jpeg_fn.f.jpeg_read_scanlines)
#define jpeg_crop_scanline (mpk_jpeg_fn.f.jpeg_crop_scanline)
#endif

#endif
