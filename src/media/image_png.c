/* An image tensor as an 8-bit RGB PNG (libspng's encoder into memory): the preview `modelpkg image
   --png` writes, in the library so that the CLI needs no codec of its own (docs/startup.md). */
#include <stdlib.h>

#include "core/core.h"
#include "media/spng_dl.h"

int mpk_image_encode_png(const mpk_image *img, void **out, size_t *out_len, mpk_error *err) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!img || !img->pixels || !out || !out_len)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "no image or no output");
  int rc = mpk_spng_load(err);
  if (rc) return rc;
  spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  if (!ctx) return mpk_fail(err, MPK_ENOMEM, "image", NULL, "out of memory (PNG encoder)");
  struct spng_ihdr ih = {(uint32_t)img->width, (uint32_t)img->height, 8, SPNG_COLOR_TYPE_TRUECOLOR, 0, 0, 0};
  size_t n = (size_t)img->width * (size_t)img->height * 3, len = 0;
  int e;
  void *png = NULL;
  if ((e = spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1)) || (e = spng_set_ihdr(ctx, &ih)) ||
      (e = spng_encode_image(ctx, img->pixels, n, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE)) ||
      !(png = spng_get_png_buffer(ctx, &len, &e))) {
    spng_ctx_free(ctx);
    return mpk_fail(err, MPK_EIO, "image", NULL, "PNG encoder: %s", spng_strerror(e));
  }
  spng_ctx_free(ctx);
  *out = png; /* malloc'ed by libspng (its default allocator): mpk_free() releases it */
  *out_len = len;
  return 0;
}
