/* The decode stage of the image frontend: a probed file to an RGB8 raster in stored orientation.
   Each decoder writes straight into the raster (no second full-size copy): libjpeg-turbo reads
   scanlines into its rows at the DCT scale M/8 the caller's minimum size allows; libspng decodes
   row by row to RGB8 (16-bit samples go through one row of RGBA16 to be rounded, which libspng's
   own 16 -> 8 conversion does not do); libwebp decodes into it as external memory.

   Alpha is dropped, never composited: the colour channels as stored (what WebLLM's canvas path
   returns for every pixel that is not fully transparent; image_resize.json's rgba_to_rgb).
   Every library failure becomes an mpk_error naming the file; libjpeg never reaches exit(). */
#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media/jpeg_dl.h" /* jpeglib.h, before jerror.h: jconfig.h says whether arithmetic coding is in */
#include <jerror.h>

#include "core/endian.h"
#include "core/core.h"
#include "media/image.h"
#include "media/image_resize.h"
#include "media/spng_dl.h"
#include "media/webp_dl.h"

/* libjpeg and libspng are opened by the first image of their format (docs/startup.md). */
MPK_DL_DEFINE(jpeg, "libjpeg", MPK_SONAME_JPEG, MPK_JPEG_FUNCS)
MPK_DL_DEFINE(spng, "libspng", MPK_SONAME_SPNG, MPK_SPNG_FUNCS)

/* A progressive JPEG may hold any number of scans, each a full pass over the coefficients; far
   more than any encoder writes is refused (libjpeg-turbo's advice against scan floods). */
#define JPEG_MAX_SCANS 500
/* Rows asked of libjpeg per call; streaming, the band they land in is reused. */
#define JPEG_BAND 16
/* Ancillary PNG chunks libspng keeps (text, ICC, EXIF): per chunk and in total. */
#define PNG_CHUNK_LIMIT ((size_t)16 << 20)
#define PNG_CACHE_LIMIT ((size_t)64 << 20)

static int alloc_raster(mpk_raster *r, uint64_t w, uint64_t h, const char *file, mpk_error *err) {
  if (w == 0 || h == 0 || w > MPK_IMAGE_MAX_DIM || h > MPK_IMAGE_MAX_DIM || w * h * 3 > SIZE_MAX)
    return mpk_fail(err, MPK_ELIMIT, file, NULL, "decoded size %llux%llu is out of range", (unsigned long long)w,
                    (unsigned long long)h);
  r->stride = (size_t)w * 3;
  if (!(r->px = malloc(r->stride * (size_t)h)))
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory (%llux%llu raster)", (unsigned long long)w,
                    (unsigned long long)h);
  r->width = (uint32_t)w;
  r->height = (uint32_t)h;
  return 0;
}

uint64_t mpk_image_decode_bytes(const mpk_image_header *h, uint32_t dec_w, uint32_t dec_h) {
  uint64_t px = (uint64_t)dec_w * dec_h, full = (uint64_t)h->width * h->height;
  uint64_t n = px * 3 + h->coef_bytes;
  if (h->format == MPK_IMAGE_FORMAT_WEBP) n += (h->webp_lossless ? 4 * full : 0) + (h->has_alpha ? full : 0);
  return n;
}

int mpk_image_check_budget(const char *file, const mpk_image_header *h, uint32_t dec_w, uint32_t dec_h, uint64_t budget,
                           mpk_error *err) {
  if (!budget) budget = MPK_IMAGE_DEFAULT_MAX_DECODE_BYTES;
  uint64_t need = mpk_image_decode_bytes(h, dec_w, dec_h);
  if (need <= budget) return 0;
  char extra[160] = "";
  uint64_t full = (uint64_t)h->width * h->height;
  if (h->coef_bytes)
    snprintf(extra, sizeof extra, " + %.1f MiB of progressive JPEG coefficients", (double)h->coef_bytes / 1048576);
  else if (h->format == MPK_IMAGE_FORMAT_WEBP && (h->webp_lossless || h->has_alpha))
    snprintf(extra, sizeof extra, " + %.1f MiB of %s", (double)((h->webp_lossless ? 4 : 0) + (h->has_alpha ? 1 : 0)) * full / 1048576,
             h->webp_lossless ? "lossless WebP ARGB plane" : "WebP alpha plane");
  return mpk_fail(err, MPK_ELIMIT, file, NULL,
                  "decoding %s %ux%u needs %.1f MiB (%ux%u pixels at 3 bytes%s), above the memory budget of %.1f MiB "
                  "(max_decode_bytes; modelpkg image --max-decode-mib)",
                  mpk_image_format_name(h->format), h->width, h->height, (double)need / 1048576, dec_w, dec_h, extra,
                  (double)budget / 1048576);
}

static void free_raster(mpk_raster *r) {
  free(r->px);
  memset(r, 0, sizeof *r);
}

static int header_changed(const char *file, const char *lib, uint64_t w, uint64_t h, const mpk_image_header *hd,
                          mpk_error *err) {
  return mpk_fail(err, MPK_EMALFORMED, file, NULL, "%s reads the image as %llux%llu, its header declares %ux%u", lib,
                  (unsigned long long)w, (unsigned long long)h, hd->width, hd->height);
}

/* ---------------------------------------------------------------- JPEG (libjpeg-turbo) */

typedef struct jpeg_job {
  struct jpeg_decompress_struct cinfo;
  struct jpeg_error_mgr jerr;
  struct jpeg_progress_mgr progress;
  jmp_buf jump;
  int code;               /* MPK_E* of the failure that jumped */
  char message[JMSG_LENGTH_MAX];
  const uint8_t *data;
  size_t len;
  const mpk_image_header *h;
  uint32_t min_w, min_h;
  mpk_raster *out;        /* the raster; or, streaming, only its size (px stays NULL) */
  const mpk_jpeg_sink *sink; /* streaming: rows go into a resampler made once the scale is known */
  mpk_resampler *rs;
  uint8_t *band;          /* streaming: up to JPEG_BAND rows, reused */
  unsigned x0;            /* streaming: the first column decoded (jpeg_crop_scanline) */
  uint8_t *cmyk_row;
  int scale_num;
  uint64_t budget;
  char *warning;          /* the first harmless warning, or NULL */
  size_t warning_size;
} jpeg_job;

static void jpeg_fail_jump(j_common_ptr c, int code) {
  jpeg_job *job = (jpeg_job *)c->client_data;
  job->code = code;
  c->err->format_message(c, job->message);
  longjmp(job->jump, 1);
}

static void on_jpeg_error(j_common_ptr c) {
  int m = c->err->msg_code;
  jpeg_fail_jump(c, m == JERR_OUT_OF_MEMORY                                  ? MPK_ENOMEM
                    : m == JERR_NO_BACKING_STORE || m == JERR_IMAGE_TOO_BIG ||
                            m == JERR_WIDTH_OVERFLOW                        ? MPK_ELIMIT
                    : m == JERR_BAD_PRECISION || m == JERR_CONVERSION_NOTIMPL ||
                            m == JERR_NOT_COMPILED                          ? MPK_EUNSUPPORTED
                                                                            : MPK_EMALFORMED);
}

/* Fail closed: every libjpeg warning stops the decode (libjpeg would go on and fill what it could not
   read with grey) except those that leave every pixel as encoded — bytes between markers skipped,
   an unknown JFIF revision or Adobe transform, a damaged ICC profile (not used) — which are kept for
   the report (mpk_image.warning). Trace messages (level >= 0) are ignored. */
static void on_jpeg_message(j_common_ptr c, int level) {
  if (level >= 0) return;
  int m = c->err->msg_code;
  if (m == JWRN_EXTRANEOUS_DATA || m == JWRN_JFIF_MAJOR || m == JWRN_ADOBE_XFORM
#ifdef JWRN_BOGUS_ICC
      || m == JWRN_BOGUS_ICC
#endif
  ) {
    jpeg_job *job = (jpeg_job *)c->client_data;
    if (job->warning && job->warning_size && !job->warning[0]) {
      char msg[JMSG_LENGTH_MAX];
      c->err->format_message(c, msg);
      snprintf(job->warning, job->warning_size, "libjpeg warning: %s", msg);
    }
    return;
  }
  jpeg_fail_jump(c, MPK_EMALFORMED);
}

static void on_jpeg_progress(j_common_ptr c) {
  j_decompress_ptr d = (j_decompress_ptr)c;
  if (d->progressive_mode && d->input_scan_number > JPEG_MAX_SCANS) {
    jpeg_job *job = (jpeg_job *)c->client_data;
    job->code = MPK_ELIMIT;
    snprintf(job->message, sizeof job->message, "progressive JPEG has more than %d scans", JPEG_MAX_SCANS);
    longjmp(job->jump, 1);
  }
}

/* Adobe-written CMYK is stored inverted; the conversion is Pillow's cmyk2rgb (each channel
   (255 - C)(255 - K)/255, rounded). */
static void cmyk_to_rgb(const uint8_t *in, uint8_t *out, uint32_t w, bool inverted) {
  for (uint32_t x = 0; x < w; x++, in += 4, out += 3) {
    unsigned k = inverted ? in[3] : 255u - in[3];
    for (int i = 0; i < 3; i++) {
      unsigned c = inverted ? in[i] : 255u - in[i];
      out[i] = (uint8_t)((c * k + 127) / 255);
    }
  }
}

/* Everything that may longjmp; state lives in *job (never in locals of this function). */
static int jpeg_run(jpeg_job *job, const char *file, mpk_error *err) {
  struct jpeg_decompress_struct *ci = &job->cinfo;
  if (setjmp(job->jump)) {
    if (job->code == MPK_EMALFORMED && ci->err->msg_code == JWRN_JPEG_EOF)
      return mpk_fail(err, MPK_EMALFORMED, file, NULL, "JPEG is truncated: its image data ends early");
    if (job->code == MPK_EMALFORMED) {
      const char *m = job->message, *prefix = "Corrupt JPEG data: ";
      if (strncmp(m, prefix, strlen(prefix)) == 0) m += strlen(prefix);
      return mpk_fail(err, job->code, file, NULL, "JPEG data is corrupt: %s", m);
    }
    return mpk_fail(err, job->code, file, NULL, "JPEG: %s", job->message);
  }
  ci->client_data = job; /* kept by jpeg_create_decompress, which may already fail */
  jpeg_create_decompress(ci);
  ci->progress = &job->progress;
  jpeg_mem_src(ci, job->data, (unsigned long)job->len);
  if (jpeg_read_header(ci, TRUE) != JPEG_HEADER_OK)
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "JPEG holds tables only, no image");
  if (ci->image_width != job->h->width || ci->image_height != job->h->height)
    return header_changed(file, "libjpeg", ci->image_width, ci->image_height, job->h, err);
  bool cmyk = ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK;
  ci->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  ci->dct_method = JDCT_ISLOW;
  /* The smallest M/8 whose output still covers the minimum (M = 8 when none does). */
  for (int m = 1; m <= 8; m++) {
    ci->scale_num = (unsigned)m;
    ci->scale_denom = 8;
    jpeg_calc_output_dimensions(ci);
    job->scale_num = m;
    if (ci->output_width >= job->min_w && ci->output_height >= job->min_h) break;
  }
  /* The budget, from the header, before libjpeg allocates anything sized by the image. As a net,
     libjpeg's own allocator is capped at the budget plus 8 MiB of working set (its row buffers and
     tables, which the budget does not count): a coefficient array past it is refused. */
  int brc = mpk_image_check_budget(file, job->h, ci->output_width, ci->output_height, job->budget, err);
  if (brc) return brc;
  uint64_t cap = job->budget + ((uint64_t)8 << 20);
  ci->mem->max_memory_to_use = (long)(cap < (uint64_t)LONG_MAX ? cap : (uint64_t)LONG_MAX);
  jpeg_start_decompress(ci);
  if (ci->output_components != (cmyk ? 4 : 3))
    return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "JPEG: unexpected %d output components", ci->output_components);
  int rc;
  if (!job->sink) {
    if ((rc = alloc_raster(job->out, ci->output_width, ci->output_height, file, err))) return rc;
  } else {
    /* Streaming: no raster (on this VM, first touches of fresh memory cost more than the resampling;
       docs/PERFORMANCE.md "modelpkg image as a process"). The picture spans full * M / 8 of the
       reduced pixels, as in mpk_image_resample_scaled. */
    const mpk_jpeg_sink *k = job->sink;
    job->out->width = ci->output_width;
    job->out->height = ci->output_height;
    job->out->stride = (size_t)ci->output_width * 3;
    if ((rc = mpk_resampler_new(ci->output_width, ci->output_height, job->h->width * (double)job->scale_num / 8,
                                job->h->height * (double)job->scale_num / 8, k->orientation, k->plan, k->out_width,
                                k->out_height, k->out, MPK_RESAMPLER_COPY, &job->rs, err)) ||
        (k->rows && (rc = mpk_resampler_set_rows(job->rs, k->rows, k->rows_ctx, err))))
      return rc;
#ifdef LIBJPEG_TURBO_VERSION
    /* Only the iMCU columns around those the window reads (libjpeg-turbo's jpeg_crop_scanline):
       a 4:3 photo cropped to a square skips a quarter of the inverse DCT, upsampling and colour
       conversion. One whole iMCU of margin each side keeps the columns read exact: the upsampler
       treats the cropped edge as the image's edge. */
    uint32_t lo, hi;
    mpk_resampler_cols(job->rs, &lo, &hi);
    JDIMENSION imcu = (JDIMENSION)(ci->max_h_samp_factor * ci->min_DCT_scaled_size);
    JDIMENSION x0 = lo > imcu ? lo - imcu : 0, x1 = hi + imcu < ci->output_width ? hi + imcu : ci->output_width;
    if (x0 > 0 || x1 < ci->output_width) {
      JDIMENSION w = x1 - x0;
      jpeg_crop_scanline(ci, &x0, &w);
      if (x0 > lo || x0 + w < hi)
        return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "libjpeg cropped to columns %u..%u, the window reads %u..%u", x0,
                        x0 + w, lo, hi);
      job->x0 = x0;
    }
#endif
    if (!(job->band = malloc((size_t)ci->output_width * 3 * (cmyk ? 1 : JPEG_BAND))))
      return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  size_t stride = job->sink ? (size_t)ci->output_width * 3 : job->out->stride; /* cropped: shorter rows */
  if (cmyk && !(job->cmyk_row = malloc((size_t)ci->output_width * 4)))
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  uint8_t *base = job->sink ? job->band : job->out->px; /* row y of a batch at base + (y - batch start) or y */
  while (ci->output_scanline < ci->output_height) {
    JSAMPROW rows[JPEG_BAND];
    JDIMENSION y = ci->output_scanline, k = 0, y0 = job->sink ? y : 0;
    if (cmyk) rows[k++] = job->cmyk_row;
    else
      while (k < JPEG_BAND && y + k < ci->output_height) {
        rows[k] = base + (size_t)(y + k - y0) * stride;
        k++;
      }
    JDIMENSION got = jpeg_read_scanlines(ci, rows, k);
    if (got == 0) return mpk_fail(err, MPK_EMALFORMED, file, NULL, "JPEG decoder made no progress");
    if (cmyk) cmyk_to_rgb(job->cmyk_row, base + (size_t)(y - y0) * stride, ci->output_width, ci->saw_Adobe_marker);
    if (job->sink)
      for (JDIMENSION i = 0; i < got; i++) mpk_resampler_push_cols(job->rs, base + (size_t)i * stride, job->x0);
  }
  if (job->sink && (rc = mpk_resampler_finish(job->rs, err))) return rc;
  /* Not jpeg_finish_decompress: every pixel has been read; what follows the last scan is not the
     picture's (a file cut before its EOI has already been refused: the entropy decoder reads
     ahead and meets the end of the data). */
  return 0;
}

static int decode_jpeg(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h, uint32_t min_w,
                       uint32_t min_h, uint64_t budget, const mpk_jpeg_sink *sink, mpk_raster *out, int *scale_num,
                       char *warning, size_t warning_size, mpk_error *err) {
  int lrc = mpk_jpeg_load(err);
  if (lrc) return lrc;
  jpeg_job *job = calloc(1, sizeof *job);
  if (!job) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  job->cinfo.err = jpeg_std_error(&job->jerr);
  job->jerr.error_exit = on_jpeg_error;
  job->jerr.emit_message = on_jpeg_message;
  job->progress.progress_monitor = on_jpeg_progress;
  job->data = data;
  job->len = len;
  job->h = h;
  job->min_w = min_w;
  job->min_h = min_h;
  job->out = out;
  job->sink = sink;
  job->budget = budget ? budget : MPK_IMAGE_DEFAULT_MAX_DECODE_BYTES;
  job->warning = warning;
  job->warning_size = warning_size;
  int rc = jpeg_run(job, file, err);
  jpeg_destroy_decompress(&job->cinfo);
  mpk_resampler_free(job->rs);
  free(job->band);
  free(job->cmyk_row);
  if (rc) free_raster(out);
  else *scale_num = job->scale_num;
  free(job);
  return rc;
}

/* ---------------------------------------------------------------- PNG (libspng) */

static int png_fail(int e, const char *file, mpk_error *err) {
  switch (e) {
    case SPNG_EMEM: return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory (PNG)");
    case SPNG_EOF: return mpk_fail(err, MPK_EMALFORMED, file, NULL, "PNG is truncated: %s", spng_strerror(e));
    case SPNG_ECHUNK_CRC: return mpk_fail(err, MPK_EMALFORMED, file, NULL, "PNG chunk CRC mismatch: the file is damaged");
    case SPNG_ECHUNK_LIMITS: case SPNG_EUSER_WIDTH: case SPNG_EUSER_HEIGHT: case SPNG_EOVERFLOW:
      return mpk_fail(err, MPK_ELIMIT, file, NULL, "PNG: %s", spng_strerror(e));
    default: return mpk_fail(err, MPK_EMALFORMED, file, NULL, "PNG is malformed: %s", spng_strerror(e));
  }
}

/* 16-bit to 8 with rounding: round(v / 257), exactly. */
static inline uint8_t to8(uint16_t v) { return (uint8_t)(((uint32_t)v * 255 + 32895) >> 16); }

/* Into a raster (`out`), or, when `rs` is given and the PNG is not interlaced, row by row into the
   resampler with no raster at all (*streamed set). On this VM the first touch of a fresh 36 MiB
   raster costs a sixth of a 12 MP decode (docs/PERFORMANCE.md section 8). */
static int decode_png_to(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h, mpk_raster *out,
                         mpk_resampler *rs, bool *streamed, mpk_error *err) {
  int lrc = mpk_spng_load(err);
  if (lrc) return lrc;
  spng_ctx *ctx = spng_ctx_new(0);
  if (!ctx) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory (PNG)");
  uint16_t *row16 = NULL;
  int e, rc = 0;
  struct spng_ihdr ih;
  uint32_t push_first = 0, push_end = 0; /* rows past the window's are decoded (CRCs, IEND) but not pushed */
  if (rs) mpk_resampler_rows(rs, &push_first, &push_end);
  (void)push_first;
  spng_set_crc_action(ctx, SPNG_CRC_ERROR, SPNG_CRC_ERROR); /* a damaged chunk of any kind refuses the file */
  spng_set_image_limits(ctx, MPK_IMAGE_MAX_DIM, MPK_IMAGE_MAX_DIM);
  spng_set_chunk_limits(ctx, PNG_CHUNK_LIMIT, PNG_CACHE_LIMIT);
  if ((e = spng_set_png_buffer(ctx, data, len)) || (e = spng_get_ihdr(ctx, &ih))) {
    rc = png_fail(e, file, err);
    goto out;
  }
  if (ih.width != h->width || ih.height != h->height) {
    rc = header_changed(file, "libspng", ih.width, ih.height, h, err);
    goto out;
  }
  bool wide = ih.bit_depth == 16;
  if (rs && ih.interlace_method) goto out; /* rows come pass by pass: not streamable, *streamed stays false */
  if (rs) {
    *streamed = true;
    out->stride = (size_t)ih.width * 3;
    if (!(out->px = malloc(out->stride))) { /* one row, reused */
      rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
      goto out;
    }
  } else if ((rc = alloc_raster(out, ih.width, ih.height, file, err))) {
    goto out;
  }
  if (wide && !(row16 = malloc((size_t)ih.width * 8))) {
    rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
    goto out;
  }
  if ((e = spng_decode_image(ctx, NULL, 0, wide ? SPNG_FMT_RGBA16 : SPNG_FMT_RGB8, SPNG_DECODE_PROGRESSIVE))) {
    rc = png_fail(e, file, err);
    goto out;
  }
  /* Interlaced rows come pass by pass, each with the Adam7 columns of its pass filled in. */
  static const uint32_t x0[7] = {0, 4, 0, 2, 0, 1, 0}, dx[7] = {8, 8, 4, 4, 2, 2, 1};
  for (;;) {
    struct spng_row_info ri;
    if ((e = spng_get_row_info(ctx, &ri))) break;
    if (ri.row_num >= ih.height) {
      rc = mpk_fail(err, MPK_EMALFORMED, file, NULL, "PNG decoder returned row %u of %u", ri.row_num, ih.height);
      goto out;
    }
    uint8_t *dst = rs ? out->px : out->px + (size_t)ri.row_num * out->stride;
    if (!wide) {
      e = spng_decode_row(ctx, dst, out->stride);
      if (rs && (e == 0 || e == SPNG_EOI) && ri.row_num < push_end) mpk_resampler_push(rs, dst);
      if (e) break;
      continue;
    }
    if ((e = spng_decode_row(ctx, row16, (size_t)ih.width * 8)) && e != SPNG_EOI) break;
    uint32_t first = 0, step = 1;
    if (ih.interlace_method && ri.pass >= 0 && ri.pass < 7) first = x0[ri.pass], step = dx[ri.pass];
    for (uint32_t x = first; x < ih.width; x += step) {
      dst[3 * x] = to8(row16[4 * x]);
      dst[3 * x + 1] = to8(row16[4 * x + 1]);
      dst[3 * x + 2] = to8(row16[4 * x + 2]);
    }
    if (rs && ri.row_num < push_end) mpk_resampler_push(rs, dst);
    if (e == SPNG_EOI) break;
  }
  if (e != SPNG_EOI) {
    rc = png_fail(e, file, err);
    goto out;
  }
  /* The rows can be complete before the end of the last IDAT chunk is read: read on to IEND, so
     that its CRC, the chunks after the image and the end of the file are checked too. */
  if ((e = spng_decode_chunks(ctx))) rc = png_fail(e, file, err);
out:
  spng_ctx_free(ctx);
  free(row16);
  if (rc || (rs && *streamed)) free_raster(out); /* streaming: only the row buffer was ours */
  return rc;
}

static int decode_png(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h, mpk_raster *out,
                      mpk_error *err) {
  return decode_png_to(data, len, file, h, out, NULL, NULL, err);
}

int mpk_image_decode_png_stream(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h,
                                mpk_resampler *rs, bool *streamed, mpk_error *err) {
  *streamed = false;
  mpk_raster row = {0};
  return decode_png_to(data, len, file, h, &row, rs, streamed, err);
}

/* ---------------------------------------------------------------- WebP (libwebp) */

static int decode_webp(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h, mpk_raster *out,
                       mpk_error *err) {
  int lrc = mpk_webp_load(err);
  if (lrc) return lrc;
  WebPDecoderConfig cfg;
  if (!WebPInitDecoderConfig(&cfg)) return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "libwebp version mismatch");
  int rc = alloc_raster(out, h->width, h->height, file, err);
  if (rc) return rc;
  cfg.output.colorspace = MODE_RGB;
  cfg.output.is_external_memory = 1;
  cfg.output.width = (int)h->width;
  cfg.output.height = (int)h->height;
  cfg.output.u.RGBA.rgba = out->px;
  cfg.output.u.RGBA.stride = (int)out->stride;
  cfg.output.u.RGBA.size = out->stride * out->height;
  size_t end = len;
  if (len >= 8) { /* only the RIFF chunk (the probe checked it fits) */
    uint64_t riff = mpk_load_le32(data + 4);
    if (riff + 8 < end) end = (size_t)riff + 8;
  }
  VP8StatusCode s = WebPDecode(data, end, &cfg);
  if (s == VP8_STATUS_OK && (cfg.output.width != (int)h->width || cfg.output.height != (int)h->height))
    rc = header_changed(file, "libwebp", (uint64_t)cfg.output.width, (uint64_t)cfg.output.height, h, err);
  else if (s != VP8_STATUS_OK) rc = mpk_image_webp_fail(s, file, "image data", err);
  WebPFreeDecBuffer(&cfg.output);
  if (rc) free_raster(out);
  return rc;
}

/* ---------------------------------------------------------------- entry point */

int mpk_image_decode_ex(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h,
                        uint32_t min_width, uint32_t min_height, uint64_t budget, mpk_raster *out, int *scale_num,
                        char *warning, size_t warning_size, mpk_error *err) {
  if (!file) file = "image";
  if (!out || !h || !scale_num || !data) return mpk_fail(err, MPK_EINVAL, file, NULL, "no input or output");
  memset(out, 0, sizeof *out);
  if (warning && warning_size) warning[0] = '\0';
  *scale_num = 8;
  int rc;
  switch (h->format) {
    case MPK_IMAGE_FORMAT_JPEG:
      return decode_jpeg(data, len, file, h, min_width, min_height, budget, NULL, out, scale_num, warning, warning_size,
                         err);
    case MPK_IMAGE_FORMAT_PNG:
      if ((rc = mpk_image_check_budget(file, h, h->width, h->height, budget, err))) return rc;
      return decode_png(data, len, file, h, out, err);
    case MPK_IMAGE_FORMAT_WEBP:
      if ((rc = mpk_image_check_budget(file, h, h->width, h->height, budget, err))) return rc;
      return decode_webp(data, len, file, h, out, err);
    default: return mpk_fail(err, MPK_EINVAL, file, NULL, "header was not probed");
  }
}

int mpk_image_decode(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h, uint32_t min_width,
                     uint32_t min_height, mpk_raster *out, int *scale_num, mpk_error *err) {
  return mpk_image_decode_ex(data, len, file, h, min_width, min_height, 0, out, scale_num, NULL, 0, err);
}

int mpk_image_decode_jpeg_stream(const uint8_t *data, size_t len, const char *file, const mpk_image_header *h,
                                 uint32_t min_width, uint32_t min_height, uint64_t budget, const mpk_jpeg_sink *sink,
                                 uint32_t *dec_width, uint32_t *dec_height, int *scale_num, char *warning,
                                 size_t warning_size, mpk_error *err) {
  if (!file) file = "image";
  if (!data || !h || !sink || !dec_width || !dec_height || !scale_num || h->format != MPK_IMAGE_FORMAT_JPEG)
    return mpk_fail(err, MPK_EINVAL, file, NULL, "no JPEG input or output");
  if (warning && warning_size) warning[0] = '\0';
  mpk_raster size = {0};
  *scale_num = 8;
  int rc = decode_jpeg(data, len, file, h, min_width, min_height, budget, sink, &size, scale_num, warning, warning_size,
                       err);
  *dec_width = size.width;
  *dec_height = size.height;
  return rc;
}
