/* The resize plan: WebLLM 0.2.86's planImageResize (lib/index.js), in the same IEEE double
   arithmetic so that every rounding lands where the reference's does (image_resize.json pins it):

     stretch:      {width: w, height: h, left: 0, top: 0}
     center_crop:  scale = Math.max(h / srcH, w / srcW)
                   width = Math.round(srcW * scale), height = Math.round(srcH * scale)
                   left = Math.floor((width - w) / 2), top = Math.floor((height - h) / 2)

   Math.round rounds half toward +Infinity (2.5 -> 3), which is not C's round() (half away from
   zero) and not floor(x + 0.5) either (that is off by one at 0.49999999999999994). */
#include <math.h>

#include "core/core.h"
#include "core/mathx.h"

/* A JS number holding an integer beyond 2^53 no longer counts pixels one by one. */
static int check_dim(int64_t v, const char *what, mpk_error *err) {
  if (v < 1 || v > MPK_SAFE_INT_MAX)
    return mpk_fail(err, MPK_EINVAL, "image_decode", NULL, "%s must be an integer in 1..2^53-1 (got %lld)",
                    what, (long long)v);
  return 0;
}

int mpk_image_plan_resize(int64_t src_width, int64_t src_height, const mpk_image_target *target,
                          mpk_image_plan *out, mpk_error *err) {
  if (!target || !out) return mpk_fail(err, MPK_EINVAL, "image_decode", NULL, "no resize target or plan");
  int rc;
  if ((rc = check_dim(src_width, "source width", err)) || (rc = check_dim(src_height, "source height", err)) ||
      (rc = check_dim(target->width, "resize.width", err)) || (rc = check_dim(target->height, "resize.height", err)))
    return rc;
  if (target->mode == MPK_IMAGE_RESIZE_STRETCH) {
    *out = (mpk_image_plan){target->width, target->height, 0, 0};
    return 0;
  }
  if (target->mode != MPK_IMAGE_RESIZE_CENTER_CROP)
    return mpk_fail(err, MPK_EINVAL, "image_decode", "/resize/mode", "unknown resize mode %d", (int)target->mode);

  double sh = (double)target->height / (double)src_height, sw = (double)target->width / (double)src_width;
  double scale = sh > sw ? sh : sw; /* Math.max; neither is NaN */
  double width = mpk_js_round((double)src_width * scale), height = mpk_js_round((double)src_height * scale);
  /* A 1-pixel-wide source cropped to a square scales the other side by the target size: the plan
     may be far larger than anything drawn, but it must stay an exact integer. */
  if (!(width <= (double)MPK_SAFE_INT_MAX) || !(height <= (double)MPK_SAFE_INT_MAX))
    return mpk_fail(err, MPK_ELIMIT, "image_decode", NULL,
                    "the scaled image (%.17g x %.17g) is beyond 2^53-1 pixels on a side", width, height);
  out->width = (int64_t)width;
  out->height = (int64_t)height;
  out->left = (int64_t)mpk_floor((width - (double)target->width) / 2);
  out->top = (int64_t)mpk_floor((height - (double)target->height) / 2);
  return 0;
}
