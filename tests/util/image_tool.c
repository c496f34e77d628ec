/* A small driver for scripts/image_vs_pillow.py: the resampler on a raw RGB raster (so its quality
   is measured apart from any decoder), and the whole frontend on an image file.

     image_tool raw IN.rgb W H ORIENTATION MODE TW TH OUT.rgb [FULL_W FULL_H M]
         IN.rgb: W x H stored RGB8; the plan is made on its upright size, or, when IN is a JPEG
         decoded at the DCT scale M/8 (djpeg -scale M/8) of a FULL_W x FULL_H stored image, on the
         full image's upright size (mpk_image_resample_scaled).
     image_tool file IN MODE TW TH OUT.rgb [--ignore-orientation]
         mpk_image_from_bytes.

   MODE is stretch or center_crop. Prints one JSON line: the plan and what was decoded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelpkg.h"
#include "media/image.h"
#include "media/image_resize.h"

static int usage(void) {
  fprintf(stderr,
          "usage: image_tool raw IN.rgb W H ORIENTATION MODE TW TH OUT.rgb [FULL_W FULL_H M]\n"
          "       image_tool file IN MODE TW TH OUT.rgb [--ignore-orientation]\n");
  return 2;
}

static int mode_of(const char *s, mpk_image_resize_mode *m) {
  if (strcmp(s, "stretch") == 0) *m = MPK_IMAGE_RESIZE_STRETCH;
  else if (strcmp(s, "center_crop") == 0) *m = MPK_IMAGE_RESIZE_CENTER_CROP;
  else return -1;
  return 0;
}

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *buf = NULL;
  size_t cap = 0, n = 0, got;
  do {
    if (n == cap) {
      cap = cap ? cap * 2 : 1 << 20;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
    }
    got = fread(buf + n, 1, cap - n, f);
    n += got;
  } while (got > 0);
  fclose(f);
  *len = n;
  return buf;
}

static int spill(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(p, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

static int fail(const mpk_error *err) {
  char line[2048];
  mpk_error_format(err, line, sizeof line);
  fprintf(stderr, "image_tool: %s\n", line);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  mpk_error err;
  mpk_error_clear(&err);
  if (strcmp(argv[1], "raw") == 0 && (argc == 10 || argc == 13)) {
    mpk_raster src = {NULL, (uint32_t)strtoul(argv[3], NULL, 10), (uint32_t)strtoul(argv[4], NULL, 10), 0};
    int orientation = atoi(argv[5]);
    mpk_image_target t = {0, strtoll(argv[8], NULL, 10), strtoll(argv[7], NULL, 10)};
    if (mode_of(argv[6], &t.mode)) return usage();
    size_t len;
    src.px = slurp(argv[2], &len);
    src.stride = (size_t)src.width * 3;
    if (!src.px || len != src.stride * src.height) {
      fprintf(stderr, "image_tool: %s: not %ux%u RGB8\n", argv[2], src.width, src.height);
      return 1;
    }
    uint32_t fw = src.width, fh = src.height;
    int m = 8;
    if (argc == 13) {
      fw = (uint32_t)strtoul(argv[10], NULL, 10);
      fh = (uint32_t)strtoul(argv[11], NULL, 10);
      m = atoi(argv[12]);
    }
    int64_t uw = orientation >= 5 ? fh : fw, uh = orientation >= 5 ? fw : fh;
    mpk_image_plan plan;
    if (mpk_image_plan_resize(uw, uh, &t, &plan, &err)) return fail(&err);
    uint8_t *out = malloc((size_t)(t.width * t.height * 3));
    if (!out) return 1;
    if (mpk_image_resample_scaled(&src, fw, fh, m, orientation, &plan, t.width, t.height, out, &err)) return fail(&err);
    if (spill(argv[9], out, (size_t)(t.width * t.height * 3))) return 1;
    printf("{\"plan\": [%lld, %lld, %lld, %lld]}\n", (long long)plan.width, (long long)plan.height,
           (long long)plan.left, (long long)plan.top);
    free(out);
    free(src.px);
    return 0;
  }
  if (strcmp(argv[1], "file") == 0 && (argc == 7 || argc == 8)) {
    mpk_image_target t = {0, strtoll(argv[5], NULL, 10), strtoll(argv[4], NULL, 10)};
    if (mode_of(argv[3], &t.mode)) return usage();
    mpk_image_options opts = {0};
    if (argc == 8) {
      if (strcmp(argv[7], "--ignore-orientation") != 0) return usage();
      opts.ignore_orientation = 1;
    }
    size_t len;
    uint8_t *data = slurp(argv[2], &len);
    if (!data) {
      fprintf(stderr, "image_tool: cannot read %s\n", argv[2]);
      return 1;
    }
    mpk_image *img;
    if (mpk_image_from_bytes(data, len, argv[2], &t, &opts, &img, &err)) return fail(&err);
    if (spill(argv[6], img->pixels, (size_t)(img->width * img->height * 3))) return 1;
    printf("{\"plan\": [%lld, %lld, %lld, %lld], \"format\": \"%s\", \"source\": [%u, %u], \"decoded\": [%u, %u], "
           "\"jpeg_scale_num\": %d, \"orientation\": %d, \"orientation_applied\": %d}\n",
           (long long)img->plan.width, (long long)img->plan.height, (long long)img->plan.left,
           (long long)img->plan.top, mpk_image_format_name(img->format), img->source_width, img->source_height,
           img->decoded_width, img->decoded_height, img->jpeg_scale_num, img->orientation, img->orientation_applied);
    mpk_image_free(img);
    free(data);
    return 0;
  }
  return usage();
}
