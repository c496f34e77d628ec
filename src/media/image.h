/* Internal: the stages of the image frontend. image.c runs them in order:
     probe (image_probe.c) → plan on the upright size (image_plan.c) → decode, JPEG at the smallest
     DCT scale that still covers the plan (image_decode.c) → resample the target window, reading
     the stored raster through the EXIF orientation (image_resize.c). */
#ifndef MPK_MEDIA_IMAGE_H
#define MPK_MEDIA_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

/* What the header says, before any pixel is decoded. */
typedef struct mpk_image_header {
  mpk_image_format format;
  uint32_t width;      /* as stored (before orientation) */
  uint32_t height;
  uint32_t channels;   /* 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA (palette: 3, or 4 with tRNS; JPEG CMYK: 4) */
  uint32_t bits;       /* per channel as stored: 8 or 16; PNG grey also 1, 2 or 4 (palette: 8) */
  int has_alpha;
  int orientation;     /* EXIF 1..8; 1 when there is none */
  uint64_t coef_bytes; /* progressive JPEG: its coefficient buffers (full size, every component) */
  int webp_lossless;   /* WebP: VP8L (a full ARGB plane while decoding) */
} mpk_image_header;

/* Bytes decoding takes, from the header (docs/image.md "Memory budget"): the decoded pixels at 3
   bytes each at the decoded size dec_w x dec_h, plus h's coefficient, ARGB and alpha planes. */
uint64_t mpk_image_decode_bytes(const mpk_image_header *h, uint32_t dec_w, uint32_t dec_h);
/* MPK_ELIMIT naming the budget when mpk_image_decode_bytes() exceeds it (0: the default). */
int mpk_image_check_budget(const char *file, const mpk_image_header *h, uint32_t dec_w, uint32_t dec_h, uint64_t budget,
                           mpk_error *err);
/* The width or height libjpeg decodes `size` to at DCT scale m/8 (jdiv_round_up). */
static inline uint32_t mpk_jpeg_scaled(uint32_t size, int m) { return (uint32_t)(((uint64_t)size * (uint64_t)m + 7) / 8); }

/* An RGB8 raster in stored orientation: `height` rows of `width` * 3 bytes, `stride` bytes apart. */
typedef struct mpk_raster {
  uint8_t *px;         /* malloc'ed; free() it */
  uint32_t width;
  uint32_t height;
  size_t stride;
} mpk_raster;

/* Sniff the format by content and read the header (dimensions, channels, orientation) without
   decoding pixels. Dimensions are checked against MPK_IMAGE_MAX_DIM and `max_pixels` here. */
int mpk_image_probe(const uint8_t *data, size_t len, const char *file, uint64_t max_pixels,
                    mpk_image_header *out, mpk_error *err);

/* Decode to RGB8 in stored orientation, alpha dropped, 16-bit rounded to 8, grey/palette expanded.
   JPEG: the smallest DCT scale M/8 (M = 1..8) whose output is at least min_width x min_height
   (`*scale_num` = M; 8 for other formats). */
int mpk_image_decode(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h,
                     uint32_t min_width, uint32_t min_height, mpk_raster *out, int *scale_num,
                     mpk_error *err);
/* The same within a memory budget (0: MPK_IMAGE_DEFAULT_MAX_DECODE_BYTES; libjpeg's own allocator
   is capped at it too), the first harmless decoder warning into `warning` (may be NULL). */
int mpk_image_decode_ex(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h,
                        uint32_t min_width, uint32_t min_height, uint64_t budget, mpk_raster *out, int *scale_num,
                        char *warning, size_t warning_size, mpk_error *err);

/* Resample: the upright view of `src` (orientation 1..8 applied while reading; 1 = as stored) drawn
   at plan->width x plan->height, of which the out_width x out_height window at (plan->left,
   plan->top) is computed into `out` (RGB8, tightly packed). Antialiased separable filter. */
int mpk_image_resample(const mpk_raster *src, int orientation, const mpk_image_plan *plan,
                       int64_t out_width, int64_t out_height, uint8_t *out, mpk_error *err);

/* Shared by image_probe.c and image_decode.c: a libwebp VP8StatusCode as an mpk_error naming the
   stage ("header", "image data"). */
int mpk_image_webp_fail(int status, const char *file, const char *stage, mpk_error *err);

#endif
