/* Image file bytes to the NHWC pixel tensor of an image_decode processor: the stages of image.h in
   order. The plan is made on the upright size (the EXIF orientation applied, unless told not to),
   so that the decoder can be asked for the least it must produce: the plan's scaled size, turned
   back into stored orientation. Memory: the output, plus for WebP and an interlaced PNG the decoded
   raster; a JPEG's and a non-interlaced PNG's rows stream into the resampler. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "media/image.h"
#include "media/image_resize.h"

const char *mpk_image_format_name(mpk_image_format f) {
  switch (f) {
    case MPK_IMAGE_FORMAT_JPEG: return "jpeg";
    case MPK_IMAGE_FORMAT_PNG: return "png";
    case MPK_IMAGE_FORMAT_WEBP: return "webp";
    default: return "unknown";
  }
}

void mpk_image_free(mpk_image *img) {
  if (!img) return;
  free(img->pixels);
  free(img);
}

/* The target is bounded like a source of the default limit, whatever max_pixels says (that option
   bounds the untrusted file, not the processor). */
static int check_target(const mpk_image_target *t, mpk_error *err) {
  const uint64_t max_pixels = MPK_IMAGE_DEFAULT_MAX_PIXELS;
  if (!t) return mpk_fail(err, MPK_EINVAL, "image_decode", NULL, "no image processor");
  if (t->mode != MPK_IMAGE_RESIZE_STRETCH && t->mode != MPK_IMAGE_RESIZE_CENTER_CROP)
    return mpk_fail(err, MPK_EINVAL, "image_decode", "/resize/mode", "resize mode must be stretch or center_crop");
  if (t->width < 1 || t->height < 1)
    return mpk_fail(err, MPK_EINVAL, "image_decode", "/resize", "resize width and height must be positive (got %lldx%lld)",
                    (long long)t->width, (long long)t->height);
  if (t->width > MPK_IMAGE_MAX_DIM || t->height > MPK_IMAGE_MAX_DIM ||
      (uint64_t)t->width * (uint64_t)t->height > max_pixels)
    return mpk_fail(err, MPK_ELIMIT, "image_decode", "/resize",
                    "target %lldx%lld is above the limits (each side %d, %llu pixels)", (long long)t->width,
                    (long long)t->height, MPK_IMAGE_MAX_DIM, (unsigned long long)max_pixels);
  return 0;
}

/* Orientations 5..8 swap width and height (they transpose the stored raster). */
static bool transposes(int orientation) { return orientation >= 5 && orientation <= 8; }

static uint32_t clamp_u32(int64_t v) { return v < 0 ? 0 : v > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

int mpk_image_from_bytes(const void *data, size_t len, const char *file, const mpk_image_target *target,
                         const mpk_image_options *given, mpk_image **out, mpk_error *err) {
  if (!file) file = "image";
  if (!out) return mpk_fail(err, MPK_EINVAL, file, NULL, "no output");
  *out = NULL;
  mpk_image_options opt;
  int rc = MPK_OPTIONS_READ(mpk_image_options, &opt, given, err);
  if (rc) return rc;
  const mpk_image_options *opts = &opt;
  uint64_t max_pixels = opts && opts->max_pixels ? opts->max_pixels : MPK_IMAGE_DEFAULT_MAX_PIXELS;
  rc = check_target(target, err);
  if (rc) return rc;
  mpk_image_header h;
  if ((rc = mpk_image_probe(data, len, file, max_pixels, &h, err))) return rc;
  int orientation = opts && opts->ignore_orientation ? 1 : h.orientation;
  bool swap = transposes(orientation);
  int64_t up_w = swap ? h.height : h.width, up_h = swap ? h.width : h.height;
  mpk_image_plan plan;
  if ((rc = mpk_image_plan_resize(up_w, up_h, target, &plan, err))) return rc;
  /* The decoder must give at least the drawn size, in stored orientation, plus a tenth: a JPEG
     reduced in the DCT domain to barely the drawn size leaves the antialiasing filter almost
     nothing to do, and the DCT's block-wise low-pass then departs from a full decode (a sharp
     photo at 224x224: MAD 2.84 levels against Pillow at the bare size, 0.96 with the margin;
     docs/image-resize.md). A 12 MP photo to 336x336 still decodes at 1/8. */
  int64_t need_w = swap ? plan.height : plan.width, need_h = swap ? plan.width : plan.height;
  uint32_t min_w = clamp_u32(need_w + (need_w + 9) / 10), min_h = clamp_u32(need_h + (need_h + 9) / 10);
  mpk_image *img = calloc(1, sizeof *img);
  if (!img) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  mpk_raster r = {0};
  int scale = 8;
  size_t n = (size_t)target->width * (size_t)target->height * 3; /* bounded by check_target */
  /* Rows mode: the streaming paths hand the resampler no output (mpk_resampler_set_rows) */
  bool rows = opts->rows != NULL;
  if (!rows && !(img->pixels = malloc(n))) {
    mpk_image_free(img);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory (output tensor)");
  }
  bool streamed = false;
  uint64_t budget = opts && opts->max_decode_bytes ? opts->max_decode_bytes : MPK_IMAGE_DEFAULT_MAX_DECODE_BYTES;
  if (h.format == MPK_IMAGE_FORMAT_PNG) rc = mpk_image_check_budget(file, &h, h.width, h.height, budget, err);
  if (!rc && h.format == MPK_IMAGE_FORMAT_PNG) { /* rows straight into the resampler: no full-size raster */
    mpk_resampler *rs = NULL;
    rc = mpk_resampler_new(h.width, h.height, 0, 0, orientation, &plan, target->width, target->height, img->pixels,
                           MPK_RESAMPLER_THREAD, &rs, err);
    if (!rc && rows) rc = mpk_resampler_set_rows(rs, opts->rows, opts->rows_ctx, err);
    if (!rc) rc = mpk_image_decode_png_stream(data, len, file, &h, rs, &streamed, err);
    if (!rc && streamed) rc = mpk_resampler_finish(rs, err);
    mpk_resampler_free(rs);
    r.width = h.width, r.height = h.height;
  }
  if (!rc && h.format == MPK_IMAGE_FORMAT_JPEG) { /* likewise: rows at the DCT scale straight into the resampler */
    mpk_jpeg_sink sink = {orientation, &plan, target->width, target->height, img->pixels, opts->rows, opts->rows_ctx};
    rc = mpk_image_decode_jpeg_stream(data, len, file, &h, min_w, min_h, budget, &sink, &r.width, &r.height, &scale,
                                      img->warning, sizeof img->warning, err);
    streamed = true;
  }
  if (!rc && !streamed) {
    if (rows && !(img->pixels = malloc(n))) rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory (output tensor)");
    if (!rc && !(rc = mpk_image_decode_ex(data, len, file, &h, min_w, min_h, budget, &r, &scale, img->warning,
                                          sizeof img->warning, err)))
      /* a reduced JPEG spans W*M/8 of its ceil(W*M/8) columns: sample on that exact extent */
      rc = mpk_image_resample_scaled(&r, h.width, h.height, scale, orientation, &plan, target->width, target->height,
                                     img->pixels, err);
    free(r.px);
    /* rows mode from a whole raster (WebP, interlaced PNG): handed over, then not kept */
    size_t row = (size_t)target->width * 3;
    for (int64_t y = 0; rows && !rc && y < target->height; y++) {
      mpk_error_clear(err);
      if ((rc = opts->rows(opts->rows_ctx, y, img->pixels + (size_t)y * row, row, err)) && err && !err->message[0])
        mpk_fail(err, rc, file, NULL, "the receiver of the output rows failed");
    }
    if (rows) {
      free(img->pixels);
      img->pixels = NULL;
    }
  }
  if (rc) {
    mpk_image_free(img);
    return rc;
  }
  img->width = target->width;
  img->height = target->height;
  img->format = h.format;
  img->source_width = h.width;
  img->source_height = h.height;
  img->source_channels = h.channels;
  img->source_bits = h.bits;
  img->has_alpha = h.has_alpha;
  img->orientation = h.orientation;
  img->orientation_applied = orientation != 1;
  img->decoded_width = r.width;
  img->decoded_height = r.height;
  img->jpeg_scale_num = scale;
  img->plan = plan;
  *out = img;
  return 0;
}

int mpk_image_tensor_bytes(const mpk_image *img, int elem_size, void *out, size_t out_size, mpk_error *err) {
  if (!img || !img->pixels || (!out && out_size))
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "no image or no output buffer");
  if (elem_size != 1 && elem_size != 4)
    return mpk_fail(err, MPK_EINVAL, "image", NULL, "element size must be 1 (uint8) or 4 (uint32), got %d", elem_size);
  size_t n = (size_t)img->width * (size_t)img->height * 3;
  if (out_size / (size_t)elem_size < n)
    return mpk_fail(err, MPK_ELIMIT, "image", NULL, "output buffer holds %zu bytes; the tensor needs %zu", out_size,
                    n * (size_t)elem_size);
  if (elem_size == 1) {
    memcpy(out, img->pixels, n);
    return 0;
  }
  uint8_t *o = out;
  for (size_t i = 0; i < n; i++, o += 4) { /* zero-extended, little-endian whatever the host */
    o[0] = img->pixels[i];
    o[1] = o[2] = o[3] = 0;
  }
  return 0;
}
