/* Fuzz target: the whole image path, mpk_image_from_bytes (sniffing, the header walks, libexif,
   libjpeg-turbo / libspng / libwebp, the plan and the resampler), to a small target. The input's
   size picks the mode and whether the orientation is applied, so seed files stay valid images.
   What it accepts must be self-consistent with what the probe says; what it refuses leaves no
   image and a message. A small decoding budget (the same max_decode_bytes option users set) keeps
   each run fast and the memory bounded: a tiny input can still declare 4 megapixels (max_pixels),
   but only ~87,000 pixels (256 KiB at 3 bytes) are ever decoded; beyond, the header is refused. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "media/image.h"
#include "modelpkg.h"

#define FUZZ_MAX_PIXELS (1u << 22)
#define FUZZ_MAX_DECODE_BYTES ((uint64_t)256 << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_image_target t = {(size & 1) ? MPK_IMAGE_RESIZE_CENTER_CROP : MPK_IMAGE_RESIZE_STRETCH, 32, 32};
  mpk_image_options o = {.ignore_orientation = (size & 2) != 0, .max_pixels = FUZZ_MAX_PIXELS,
                         .max_decode_bytes = FUZZ_MAX_DECODE_BYTES};
  mpk_error err;
  mpk_error_clear(&err);
  mpk_image_header h;
  int probed = mpk_image_probe(data, size, NULL, FUZZ_MAX_PIXELS, &h, &err);
  if (probed == 0 && (h.width == 0 || h.height == 0 || h.width > MPK_IMAGE_MAX_DIM || h.height > MPK_IMAGE_MAX_DIM ||
                      (uint64_t)h.width * h.height > FUZZ_MAX_PIXELS || h.orientation < 1 || h.orientation > 8))
    __builtin_trap();
  mpk_image *img = NULL;
  mpk_error_clear(&err);
  int rc = mpk_image_from_bytes(data, size, NULL, &t, &o, &img, &err);
  if (rc == 0) {
    if (!img || probed != 0) __builtin_trap();
    if (img->width != 32 || img->height != 32 || img->source_width != h.width || img->source_height != h.height)
      __builtin_trap();
    if (img->decoded_width < 1 || img->decoded_width > h.width || img->decoded_height < 1 ||
        img->decoded_height > h.height)
      __builtin_trap();
    if (img->jpeg_scale_num < 1 || img->jpeg_scale_num > 8) __builtin_trap();
    if (img->format != MPK_IMAGE_FORMAT_JPEG && (img->jpeg_scale_num != 8 || img->decoded_width != h.width))
      __builtin_trap();
    if (img->plan.left < 0 || img->plan.top < 0 || img->plan.left + 32 > img->plan.width ||
        img->plan.top + 32 > img->plan.height)
      __builtin_trap();
    if (img->orientation_applied != (!o.ignore_orientation && h.orientation != 1)) __builtin_trap();
    volatile unsigned sum = 0; /* every output byte is readable (ASan) */
    for (size_t i = 0; i < 32 * 32 * 3; i++) sum += img->pixels[i];
    (void)sum;
    if (mpk_image_decode_bytes(&h, img->decoded_width, img->decoded_height) > FUZZ_MAX_DECODE_BYTES) __builtin_trap();
  } else if (img != NULL || err.code != rc || err.message[0] == '\0') {
    __builtin_trap();
  }
  mpk_image_free(img);
  return 0;
}
