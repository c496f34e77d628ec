/* Internal: the resampler behind mpk_image_resample (image.h), fed one stored row at a time so that
   a decoder can stream rows into it: no full-size raster has to exist, and with a worker thread the
   resampling of one band runs while the next is decoded.

   Rows are given in stored order (0, 1, 2, ...). Only rows in [first, end) of
   mpk_resampler_rows() are read: a decoder may stop after `end`. The output window is complete
   after mpk_resampler_finish() returns 0. One thread at a time per resampler (the worker is
   internal). */
#ifndef MPK_MEDIA_IMAGE_RESIZE_H
#define MPK_MEDIA_IMAGE_RESIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

typedef struct mpk_resampler mpk_resampler;

/* Rows are copied (only the columns the window reads): the caller may reuse its row buffer. Without
   it, every pushed row must stay valid until mpk_resampler_finish(). */
#define MPK_RESAMPLER_COPY 1
/* Resample on a worker thread while the caller pushes rows (implies COPY). */
#define MPK_RESAMPLER_THREAD 2

/* A resampler for a src_width x src_height RGB8 raster in stored orientation; see
   mpk_image_resample for orientation, plan and window. extent_w x extent_h: how many of the
   raster's pixels the image content spans (0: all), for a reduced decode whose last column and row
   are partly padding (see mpk_image_resample_scaled). `out` (out_width * out_height * 3 bytes) must
   stay valid until finish; NULL for rows mode (mpk_resampler_set_rows). */
int mpk_resampler_new(uint32_t src_width, uint32_t src_height, double extent_w, double extent_h, int orientation,
                      const mpk_image_plan *plan, int64_t out_width, int64_t out_height, uint8_t *out, int flags,
                      mpk_resampler **r, mpk_error *err);
/* Rows mode (mpk_image_options.rows): for a resampler made with out NULL, before the first push.
   When the output rows come in order (no transposing or vertically flipping orientation) each goes
   to rows() as soon as it is made, from one row buffer: the window is never whole in memory; else
   the window is made whole and handed over row by row in mpk_resampler_finish(). rows() may run on
   the worker thread; a non-zero return stops the work and finish() returns it, with its error. */
int mpk_resampler_set_rows(mpk_resampler *r, mpk_image_rows_fn rows, void *ctx, mpk_error *err);
/* The stored rows [*first, *end) that the output depends on. */
void mpk_resampler_rows(const mpk_resampler *r, uint32_t *first, uint32_t *end);
/* The next stored row (src_width * 3 bytes). 0, or MPK_EINVAL (no row, or more rows than src_height). */
int mpk_resampler_push(mpk_resampler *r, const uint8_t *row);
/* The stored columns [*first, *end) that the output depends on. */
void mpk_resampler_cols(const mpk_resampler *r, uint32_t *first, uint32_t *end);
/* The same for a row that holds stored columns from x0 on (x0 <= the first column read; the row
   reaches the end column). */
int mpk_resampler_push_cols(mpk_resampler *r, const uint8_t *row, uint32_t x0);
/* Wait for the output; MPK_EINVAL when rows the window needs were never pushed. */
int mpk_resampler_finish(mpk_resampler *r, mpk_error *err);
void mpk_resampler_free(mpk_resampler *r);

/* mpk_image_resample for a JPEG decoded at the DCT scale M/8 (scale_num = M): the raster is
   ceil(full * M / 8) pixels on a side (checked), but the picture spans exactly full * M / 8 of them
   -- the last block's outputs are partly padding. Sampling on the raster's own size instead would
   stretch the picture by up to one reduced pixel (0.3% for a 1081-row photo at 5/8), which shows
   as a shift of a whole source pixel at the far edge. full_width x full_height: the stored size
   in the file. scale_num 8 is mpk_image_resample. */
int mpk_image_resample_scaled(const mpk_raster *src, uint32_t full_width, uint32_t full_height, int scale_num,
                              int orientation, const mpk_image_plan *plan, int64_t out_width, int64_t out_height,
                              uint8_t *out, mpk_error *err);

/* A PNG decoded row by row straight into `rs` (a resampler for its stored size, made without an
   extent), with no raster (image_decode.c). An interlaced PNG is not streamable: nothing is done,
   *streamed stays false, and the caller decodes it to a raster instead. */
int mpk_image_decode_png_stream(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h,
                                mpk_resampler *rs, bool *streamed, mpk_error *err);

/* A JPEG decoded at its DCT scale (chosen as mpk_image_decode_ex does) with its rows streamed into a
   resampler made for the scaled size, with no raster: the window of `plan` into `out`, as
   mpk_image_resample_scaled would give from mpk_image_decode_ex's raster, byte for byte. The
   reduced size and the scale are returned as the raster's would be. */
typedef struct mpk_jpeg_sink {
  int orientation;
  const mpk_image_plan *plan;
  int64_t out_width, out_height;
  uint8_t *out;            /* NULL: rows mode, to rows(rows_ctx, ...) (mpk_resampler_set_rows) */
  mpk_image_rows_fn rows;
  void *rows_ctx;
} mpk_jpeg_sink;
int mpk_image_decode_jpeg_stream(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h,
                                 uint32_t min_width, uint32_t min_height, uint64_t budget, const mpk_jpeg_sink *sink,
                                 uint32_t *dec_width, uint32_t *dec_height, int *scale_num, char *warning,
                                 size_t warning_size, mpk_error *err);
/* Tests: cap the instruction set the kernels use (0 portable C, 1 SSE2, 2 SSSE3, 3 AVX2; the
   machine's own support still applies). Returns the previous cap. Every level gives the same bytes. */
int mpk_image_resample_simd_cap(int level);

#endif
