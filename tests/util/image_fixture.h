/* Test images encoded in memory with the same Debian libraries the frontend decodes with. */
#ifndef MPK_TEST_IMAGE_FIXTURE_H
#define MPK_TEST_IMAGE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spng.h>

typedef struct tu_png_opts {
  int ct, bd, interlace;
  const struct spng_plte *plte;
  const struct spng_trns *trns;
  const uint8_t *exif; /* an eXIf chunk (TIFF bytes, no "Exif\0\0" header); NULL: none */
  size_t exif_len;
} tu_png_opts;

/* A PNG of `img` in the PNG's own layout (SPNG_FMT_PNG: host-endian 16-bit samples, packed
   sub-byte rows). malloc'ed; fails the test on error. */
uint8_t *tu_png_encode(uint32_t w, uint32_t h, const tu_png_opts *o, const void *img, size_t len, size_t *out_len);

/* A WebP of RGBA pixels: lossless and exact (the colour under alpha 0 kept), or lossy at quality
   90. malloc'ed; fails the test on error. */
uint8_t *tu_webp_encode(uint32_t w, uint32_t h, const uint8_t *rgba, bool lossy, size_t *out_len);

#endif
