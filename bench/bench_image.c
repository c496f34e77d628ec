/* The image frontend, timed in-process (run by bench/run_image.sh beside Pillow and djpeg).

     bench_image file FILE MODE W H ITERS        mpk_image_from_bytes on the mapped file
     bench_image jpeg FILE MODE W H ITERS M      experiment: libjpeg at DCT scale M/8 (RGB), then
                                                 the resampler (mpk_image_resample_scaled): what a
                                                 different choice of M would cost
     bench_image resample W H MODE TW TH ITERS [stream|thread]
                                                 the resampler alone on a synthetic W x H raster
                                                 (stream: rows pushed one by one and copied; thread:
                                                 the same on the worker thread)

   Prints one JSON line: the median and the fastest iteration in milliseconds, the process's peak
   resident set (getrusage, KiB) and what was produced. MODE is stretch or center_crop. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <jpeglib.h>

#include "core/core.h"
#include "media/image.h"
#include "media/image_resize.h"
#include "bench_util.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static long peak_kib(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

static void report(const char *what, double *t, int n, const char *extra) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  printf("{\"what\": \"%s\", \"median_ms\": %.3f, \"min_ms\": %.3f, \"iters\": %d, \"peak_kib\": %ld%s}\n", what,
         t[n / 2], t[0], n, peak_kib(), extra);
}

static int die(const char *msg, const mpk_error *err) {
  char line[1024] = "";
  if (err) mpk_error_format(err, line, sizeof line);
  fprintf(stderr, "bench_image: %s %s\n", msg, line);
  return 1;
}

static int target_of(const char *mode, const char *w, const char *h, mpk_image_target *t) {
  t->mode = strcmp(mode, "stretch") == 0 ? MPK_IMAGE_RESIZE_STRETCH : MPK_IMAGE_RESIZE_CENTER_CROP;
  t->width = strtoll(w, NULL, 10);
  t->height = strtoll(h, NULL, 10);
  return strcmp(mode, "stretch") == 0 || strcmp(mode, "center_crop") == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- a plain libjpeg decode at M/8 */

typedef struct jerr {
  struct jpeg_error_mgr mgr;
  jmp_buf jb;
} jerr;

static void on_error(j_common_ptr c) { longjmp(((jerr *)c->err)->jb, 1); }

static int decode_jpeg(const uint8_t *data, size_t len, int m, mpk_raster *r, uint32_t *fw, uint32_t *fh) {
  struct jpeg_decompress_struct ci;
  jerr e;
  ci.err = jpeg_std_error(&e.mgr);
  e.mgr.error_exit = on_error;
  r->px = NULL;
  if (setjmp(e.jb)) {
    jpeg_destroy_decompress(&ci);
    free(r->px);
    return -1;
  }
  jpeg_create_decompress(&ci);
  jpeg_mem_src(&ci, data, (unsigned long)len);
  jpeg_read_header(&ci, TRUE);
  ci.out_color_space = JCS_RGB;
  ci.scale_num = (unsigned)m;
  ci.scale_denom = 8;
  jpeg_start_decompress(&ci);
  *fw = ci.image_width;
  *fh = ci.image_height;
  r->width = ci.output_width;
  r->height = ci.output_height;
  r->stride = (size_t)r->width * 3;
  r->px = malloc(r->stride * r->height);
  while (ci.output_scanline < ci.output_height) {
    JSAMPROW row = r->px + (size_t)ci.output_scanline * r->stride;
    jpeg_read_scanlines(&ci, &row, 1);
  }
  jpeg_finish_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  return 0;
}

int main(int argc, char **argv) {
  mpk_error err;
  mpk_error_clear(&err);
  if (argc >= 7 && (strcmp(argv[1], "file") == 0 || strcmp(argv[1], "jpeg") == 0)) {
    int jpeg = strcmp(argv[1], "jpeg") == 0;
    mpk_image_target t;
    if (target_of(argv[3], argv[4], argv[5], &t)) return die("MODE must be stretch or center_crop", NULL);
    int iters = atoi(argv[6]), m = jpeg && argc >= 8 ? atoi(argv[7]) : 8;
    if (iters < 1 || iters > 10000 || m < 1 || m > 8) return die("bad ITERS or M", NULL);
    mpk_mapped f;
    if (mpk_map_file(argv[2], SIZE_MAX, &f, &err)) return die("cannot map", &err);
    double *t_ms = malloc(sizeof *t_ms * (size_t)iters);
    char extra[256] = "";
    for (int i = 0; i < iters; i++) {
      double t0 = now_ms();
      if (!jpeg) {
        mpk_image *img;
        if (mpk_image_from_bytes(f.data, f.size, argv[2], &t, NULL, &img, &err)) return die("decode failed", &err);
        snprintf(extra, sizeof extra, ", \"decoded\": [%u, %u], \"jpeg_scale_num\": %d", img->decoded_width,
                 img->decoded_height, img->jpeg_scale_num);
        mpk_image_free(img);
      } else {
        mpk_raster r;
        uint32_t fw, fh;
        if (decode_jpeg(f.data, f.size, m, &r, &fw, &fh)) return die("libjpeg failed", NULL);
        mpk_image_plan p;
        uint8_t *out = malloc((size_t)(t.width * t.height * 3));
        if (mpk_image_plan_resize(fw, fh, &t, &p, &err) ||
            mpk_image_resample_scaled(&r, fw, fh, m, 1, &p, t.width, t.height, out, &err))
          return die("resample failed", &err);
        snprintf(extra, sizeof extra, ", \"decoded\": [%u, %u], \"jpeg_scale_num\": %d", r.width, r.height, m);
        free(out);
        free(r.px);
      }
      t_ms[i] = now_ms() - t0;
    }
    report(argv[1], t_ms, iters, extra);
    free(t_ms);
    mpk_unmap_file(&f);
    return 0;
  }
  if (argc >= 8 && strcmp(argv[1], "resample") == 0) {
    uint32_t w = (uint32_t)strtoul(argv[2], NULL, 10), h = (uint32_t)strtoul(argv[3], NULL, 10);
    mpk_image_target t;
    if (target_of(argv[4], argv[5], argv[6], &t)) return die("MODE must be stretch or center_crop", NULL);
    int iters = atoi(argv[7]);
    const char *how = argc >= 9 ? argv[8] : "raster";
    int flags = strcmp(how, "thread") == 0 ? MPK_RESAMPLER_THREAD : strcmp(how, "stream") == 0 ? MPK_RESAMPLER_COPY : -1;
    if (iters < 1 || iters > 10000 || !w || !h) return die("bad arguments", NULL);
    mpk_raster r = {malloc((size_t)w * h * 3), w, h, (size_t)w * 3};
    uint32_t s = 1;
    for (size_t i = 0; i < (size_t)w * h * 3; i++) r.px[i] = (uint8_t)((s = s * 1103515245u + 12345u) >> 16);
    mpk_image_plan p;
    if (mpk_image_plan_resize(w, h, &t, &p, &err)) return die("plan", &err);
    uint8_t *out = malloc((size_t)(t.width * t.height * 3));
    double *t_ms = malloc(sizeof *t_ms * (size_t)iters);
    for (int i = 0; i < iters; i++) {
      double t0 = now_ms();
      if (flags < 0) {
        if (mpk_image_resample(&r, 1, &p, t.width, t.height, out, &err)) return die("resample", &err);
      } else {
        mpk_resampler *rs;
        if (mpk_resampler_new(w, h, 0, 0, 1, &p, t.width, t.height, out, flags, &rs, &err)) return die("new", &err);
        for (uint32_t y = 0; y < h; y++) mpk_resampler_push(rs, r.px + (size_t)y * r.stride);
        if (mpk_resampler_finish(rs, &err)) return die("finish", &err);
        mpk_resampler_free(rs);
      }
      t_ms[i] = now_ms() - t0;
    }
    report(how, t_ms, iters, "");
    return 0;
  }
  fprintf(stderr,
          "usage: bench_image file FILE MODE W H ITERS\n"
          "       bench_image jpeg FILE MODE W H ITERS M\n"
          "       bench_image resample W H MODE TW TH ITERS [stream|thread]\n");
  return 2;
}
