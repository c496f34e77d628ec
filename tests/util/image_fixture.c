/* Test images encoded in memory (image_fixture.h). */
#include <stdarg.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <webp/encode.h>

#include "image_fixture.h"

uint8_t *tu_png_encode(uint32_t w, uint32_t h, const tu_png_opts *o, const void *img, size_t len, size_t *out_len) {
  spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  assert_non_null(ctx);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  struct spng_ihdr ih = {w, h, (uint8_t)o->bd, (uint8_t)o->ct, 0, 0, (uint8_t)o->interlace};
  assert_int_equal(spng_set_ihdr(ctx, &ih), 0);
  if (o->plte) assert_int_equal(spng_set_plte(ctx, (struct spng_plte *)o->plte), 0);
  if (o->trns) assert_int_equal(spng_set_trns(ctx, (struct spng_trns *)o->trns), 0);
  if (o->exif) {
    struct spng_exif ex = {o->exif_len, (char *)o->exif};
    assert_int_equal(spng_set_exif(ctx, &ex), 0);
  }
  int e = spng_encode_image(ctx, img, len, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  if (e) fail_msg("spng_encode_image: %s", spng_strerror(e));
  void *p = spng_get_png_buffer(ctx, out_len, &e);
  assert_non_null(p);
  spng_ctx_free(ctx);
  return p;
}

uint8_t *tu_webp_encode(uint32_t w, uint32_t h, const uint8_t *rgba, bool lossy, size_t *out_len) {
  WebPConfig cfg;
  assert_true(WebPConfigInit(&cfg));
  cfg.lossless = lossy ? 0 : 1;
  cfg.exact = 1;
  cfg.quality = lossy ? 90 : 75;
  WebPPicture pic;
  assert_true(WebPPictureInit(&pic));
  pic.use_argb = 1;
  pic.width = (int)w;
  pic.height = (int)h;
  assert_true(WebPPictureImportRGBA(&pic, rgba, (int)w * 4));
  WebPMemoryWriter wr;
  WebPMemoryWriterInit(&wr);
  pic.writer = WebPMemoryWrite;
  pic.custom_ptr = &wr;
  assert_true(WebPEncode(&cfg, &pic));
  WebPPictureFree(&pic);
  uint8_t *p = malloc(wr.size ? wr.size : 1);
  assert_non_null(p);
  memcpy(p, wr.mem, wr.size);
  *out_len = wr.size;
  WebPMemoryWriterClear(&wr);
  return p;
}
