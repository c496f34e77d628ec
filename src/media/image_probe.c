/* The first stage of the image frontend: what a file is and what its header declares, before any
   pixel is decoded. The format is sniffed from the content (never the name); the header fields
   that size an allocation (width, height) are read by a small walk of our own over the JPEG
   markers, the PNG chunks or the WebP RIFF chunks, so that a hostile declaration is refused here,
   with a message naming the field, before a decoder library sees the file. The same walk finds the
   EXIF block (JPEG APP1 "Exif", PNG eXIf, WebP EXIF), whose Orientation libexif reads.

   A corrupt or unreadable EXIF block means orientation 1 (as stored): the pixels are intact and
   the block is metadata; refusing the photo for it would be a harsher rule than any viewer applies,
   and guessing a rotation from a damaged block is worse. */
#include <stdlib.h>
#include <string.h>

#include "core/endian.h"
#include "core/core.h"
#include "media/exif_dl.h"
#include "media/image.h"
#include "media/webp_dl.h"

/* libwebp is opened by the first WebP, libexif by the first EXIF block (docs/startup.md). */
MPK_DL_DEFINE(webp, "libwebp", MPK_SONAME_WEBP, MPK_WEBP_FUNCS)
MPK_DL_DEFINE(exif, "libexif", MPK_SONAME_EXIF, MPK_EXIF_FUNCS)

/* JPEG and PNG fields are big-endian, RIFF (WebP) little-endian (core/endian.h). */
static uint32_t be16(const uint8_t *p) { return mpk_load_be16(p); }
static uint32_t be32(const uint8_t *p) { return mpk_load_be32(p); }
static uint32_t le32(const uint8_t *p) { return mpk_load_le32(p); }

/* ---------------------------------------------------------------- sniffing */

static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static mpk_image_format sniff(const uint8_t *d, size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return MPK_IMAGE_FORMAT_JPEG;
  if (n >= 8 && memcmp(d, png_sig, 8) == 0) return MPK_IMAGE_FORMAT_PNG;
  if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0) return MPK_IMAGE_FORMAT_WEBP;
  return MPK_IMAGE_FORMAT_UNKNOWN;
}

static bool has(const uint8_t *d, size_t n, size_t at, const char *s, size_t k) {
  return n >= at + k && memcmp(d + at, s, k) == 0;
}
/* A literal's length by sizeof: the magic numbers hold NUL bytes. */
#define HAS(at, lit) has(d, n, at, lit, sizeof(lit) - 1)

/* What a file that is not JPEG, PNG or WebP looks like, for the refusal message. */
static const char *looks_like(const uint8_t *d, size_t n) {
  if (HAS(0, "GIF87a") || HAS(0, "GIF89a")) return "a GIF image";
  if (HAS(0, "BM") && n >= 14) return "a BMP image";
  if (HAS(0, "II*\0") || HAS(0, "MM\0*")) return "a TIFF image";
  if (HAS(4, "ftyp")) {
    if (HAS(8, "avif") || HAS(8, "avis")) return "an AVIF image (HEIF/AVIF)";
    static const char *const heif[] = {"heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"};
    for (size_t i = 0; i < sizeof heif / sizeof heif[0]; i++)
      if (has(d, n, 8, heif[i], 4)) return "a HEIF image (HEIF/AVIF)";
    if (HAS(8, "jp2 ")) return "a JPEG 2000 image";
    if (HAS(8, "jxl ")) return "a JPEG XL image";
    return "an ISO media file (MP4/MOV/HEIF family)";
  }
  if (HAS(0, "\0\0\0\x0cjP  \r\n\x87\n")) return "a JPEG 2000 image";
  if (HAS(0, "\0\0\0\x0cJXL \r\n\x87\n") || HAS(0, "\xff\x0a")) return "a JPEG XL image";
  if (HAS(0, "\xff\xd8")) return "a damaged JPEG (no marker after SOI)";
  if (HAS(0, "\x89PNG")) return "a damaged PNG (bad signature)";
  if (HAS(0, "RIFF") && HAS(8, "WAVE")) return "a WAV audio file";
  if (HAS(0, "RIFF")) return "a RIFF file that is not WebP";
  if (HAS(0, "\0\0\1\0") || HAS(0, "\0\0\2\0")) return "an ICO/CUR icon";
  if (HAS(0, "8BPS")) return "a Photoshop (PSD) file";
  if (HAS(0, "qoif")) return "a QOI image";
  if (HAS(0, "%PDF")) return "a PDF document";
  if (HAS(0, "<?xml") || HAS(0, "<svg")) return "XML/SVG text";
  if (HAS(0, "PK\3\4")) return "a ZIP archive";
  if (HAS(0, "\x1f\x8b")) return "gzip data";
  return "not an image";
}

/* ---------------------------------------------------------------- EXIF orientation */

#define EXIF_MAX_BYTES ((size_t)4 << 20) /* larger blocks are not read (orientation 1) */

/* Orientation 1..8 from an EXIF block ("Exif\0\0" + TIFF, or the TIFF structure alone as PNG's
   eXIf holds it); 1 when absent, corrupt or out of range; -1 when memory ran out. */
static int exif_orientation(const uint8_t *block, size_t n) {
  if (!block || n < 8 || n > EXIF_MAX_BYTES) return 1;
  uint8_t *copy = NULL;
  const uint8_t *p = block;
  size_t len = n;
  if (memcmp(block, "Exif\0\0", 6) != 0) {
    if (memcmp(block, "II*\0", 4) != 0 && memcmp(block, "MM\0*", 4) != 0) return 1;
    /* libexif finds the TIFF structure after the "Exif\0\0" header only. */
    if (!(copy = malloc(n + 6))) return -1;
    memcpy(copy, "Exif\0\0", 6);
    memcpy(copy + 6, block, n);
    p = copy;
    len = n + 6;
  }
  int v = 1;
  ExifData *ed = exif_data_new();
  if (!ed) v = -1;
  else {
    /* Read only: no tags added or "fixed" to the specification's defaults. */
    exif_data_unset_option(ed, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
    exif_data_load_data(ed, p, (unsigned int)len);
    ExifEntry *e = ed->ifd[EXIF_IFD_0] ? exif_content_get_entry(ed->ifd[EXIF_IFD_0], EXIF_TAG_ORIENTATION) : NULL;
    if (e && e->format == EXIF_FORMAT_SHORT && e->components == 1 && e->data && e->size >= 2) {
      unsigned o = exif_get_short(e->data, exif_data_get_byte_order(ed));
      if (o >= 1 && o <= 8) v = (int)o;
    }
    exif_data_unref(ed);
  }
  free(copy);
  return v;
}

/* ---------------------------------------------------------------- dimensions */

static int check_dims(const char *file, const char *what, uint64_t w, uint64_t h, uint64_t max_pixels,
                      mpk_error *err) {
  if (w == 0 || h == 0)
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "%s declares a %s of 0", what, w == 0 ? "width" : "height");
  if (w > MPK_IMAGE_MAX_DIM || h > MPK_IMAGE_MAX_DIM)
    return mpk_fail(err, MPK_ELIMIT, file, NULL, "%s declares %llux%llu; the largest width or height accepted is %d",
                    what, (unsigned long long)w, (unsigned long long)h, MPK_IMAGE_MAX_DIM);
  if (w * h > max_pixels)
    return mpk_fail(err, MPK_ELIMIT, file, NULL,
                    "%s declares %llux%llu = %llu pixels, above the limit of %llu (max_pixels)", what,
                    (unsigned long long)w, (unsigned long long)h, (unsigned long long)(w * h),
                    (unsigned long long)max_pixels);
  return 0;
}

/* ---------------------------------------------------------------- JPEG */

/* Walk the markers from SOI to the first frame header (SOFn), keeping the first APP1 "Exif". */
static int probe_jpeg(const uint8_t *d, size_t n, const char *file, uint64_t max_pixels, mpk_image_header *h,
                      const uint8_t **exif, size_t *exif_len, mpk_error *err) {
  size_t pos = 2;
  for (;;) {
    if (pos + 2 > n)
      return mpk_fail(err, MPK_EMALFORMED, file, NULL, "JPEG is truncated before its frame header (SOF)");
    /* As libjpeg's next_marker: bytes that are not a marker are skipped (it warns, harmlessly),
       then fill bytes (0xFF runs), and 0xFF 0x00 is not a marker. */
    if (d[pos] != 0xFF || d[pos + 1] == 0x00) {
      pos++;
      continue;
    }
    while (pos + 2 <= n && d[pos + 1] == 0xFF) pos++;
    if (pos + 2 > n)
      return mpk_fail(err, MPK_EMALFORMED, file, NULL, "JPEG is truncated before its frame header (SOF)");
    uint8_t m = d[pos + 1];
    if (m == 0x00) {
      pos++;
      continue;
    }
    size_t at = pos;
    pos += 2;
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue; /* TEM, RSTn: no length */
    if (m == 0xD8 || m == 0xD9 || m == 0xDA)
      return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)at, "JPEG: marker 0x%02x before the frame header (SOF)",
                         m);
    if (pos + 2 > n)
      return mpk_fail(err, MPK_EMALFORMED, file, NULL, "JPEG is truncated before its frame header (SOF)");
    size_t len = be16(d + pos);
    if (len < 2) return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)at, "JPEG: marker 0x%02x has length %zu", m, len);
    if (len > n - pos)
      return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)at,
                         "JPEG is truncated: marker 0x%02x declares %zu bytes, %zu remain", m, len, n - pos);
    const uint8_t *seg = d + pos + 2;
    size_t seg_len = len - 2;
    if (m == 0xE1 && !*exif && seg_len >= 6 && memcmp(seg, "Exif\0\0", 6) == 0) {
      *exif = seg;
      *exif_len = seg_len;
    }
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      if (seg_len < 6) return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)at, "JPEG frame header is too short");
      uint32_t precision = seg[0], height = be16(seg + 1), width = be16(seg + 3), comps = seg[5];
      if (seg_len != 6 + 3 * (size_t)comps)
        return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)at,
                           "JPEG frame header length %zu does not match its %u components", len, comps);
      int rc = check_dims(file, "JPEG frame header", width, height, max_pixels, err);
      if (rc) return rc;
      if (m == 0xC3 || m == 0xC7 || m == 0xCB || m == 0xCF)
        return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "lossless JPEG (SOF%d) is not supported", m - 0xC0);
      if (m == 0xC5 || m == 0xC6 || m == 0xCD || m == 0xCE)
        return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "hierarchical JPEG (SOF%d) is not supported", m - 0xC0);
      if (precision != 8)
        return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "%u-bit JPEG is not supported (8-bit samples only)",
                        precision);
      if (comps != 1 && comps != 3 && comps != 4)
        return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL,
                        "JPEG with %u components is not supported (1 grey, 3 colour, 4 CMYK)", comps);
      h->width = width;
      h->height = height;
      h->channels = comps; /* 4: CMYK or YCCK, converted to RGB (no alpha) */
      if (m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE) { /* progressive: whole-image coefficients */
        /* libjpeg's jdcoefct: per component, width_in_blocks x height_in_blocks rounded up to its
           sampling factors, 64 coefficients of 2 bytes each. */
        uint32_t hmax = 1, vmax = 1;
        for (uint32_t c = 0; c < comps; c++) {
          uint32_t hs = seg[6 + 3 * c + 1] >> 4, vs = seg[6 + 3 * c + 1] & 15;
          if (hs > hmax) hmax = hs;
          if (vs > vmax) vmax = vs;
        }
        uint64_t total = 0;
        for (uint32_t c = 0; c < comps; c++) {
          uint64_t hs = seg[6 + 3 * c + 1] >> 4, vs = seg[6 + 3 * c + 1] & 15;
          if (hs == 0) hs = 1; /* libjpeg refuses 0 later; count it as 1 here */
          if (vs == 0) vs = 1;
          uint64_t bw = ((uint64_t)width * hs + 8 * hmax - 1) / (8 * hmax), bh = ((uint64_t)height * vs + 8 * vmax - 1) / (8 * vmax);
          bw = (bw + hs - 1) / hs * hs;
          bh = (bh + vs - 1) / vs * vs;
          total += bw * bh * 128;
        }
        h->coef_bytes = total;
      }
      h->bits = 8;
      return 0;
    }
    pos += len;
  }
}

/* ---------------------------------------------------------------- PNG */

/* Deflate cannot expand by more than 1032:1 (258 bytes per 2-bit length/distance pair). */
#define DEFLATE_MAX_RATIO 1032u

static uint32_t png_samples(uint32_t color_type) {
  switch (color_type) {
    case 0: return 1;
    case 2: return 3;
    case 3: return 1;
    case 4: return 2;
    case 6: return 4;
    default: return 0;
  }
}

static bool png_depth_ok(uint32_t ct, uint32_t bd) {
  switch (ct) {
    case 0: return bd == 1 || bd == 2 || bd == 4 || bd == 8 || bd == 16;
    case 3: return bd == 1 || bd == 2 || bd == 4 || bd == 8;
    case 2: case 4: case 6: return bd == 8 || bd == 16;
    default: return false;
  }
}

/* IHDR, then the chunks before the first IDAT (tRNS, eXIf), and an eXIf after it; CRCs are libspng's
   to check. */
static int probe_png(const uint8_t *d, size_t n, const char *file, uint64_t max_pixels, mpk_image_header *h,
                     const uint8_t **exif, size_t *exif_len, mpk_error *err) {
  if (n < 8 + 8 + 13 + 4) return mpk_fail(err, MPK_EMALFORMED, file, NULL, "PNG is truncated in its header (IHDR)");
  if (memcmp(d + 12, "IHDR", 4) != 0 || be32(d + 8) != 13)
    return mpk_fail_at(err, MPK_EMALFORMED, file, 8, "PNG does not start with a 13-byte IHDR chunk");
  const uint8_t *ihdr = d + 16;
  uint32_t width = be32(ihdr), height = be32(ihdr + 4), bd = ihdr[8], ct = ihdr[9];
  int rc = check_dims(file, "PNG header (IHDR)", width, height, max_pixels, err);
  if (rc) return rc;
  if (!png_depth_ok(ct, bd))
    return mpk_fail_at(err, MPK_EMALFORMED, file, 24, "PNG colour type %u with bit depth %u is not valid", ct, bd);
  if (ihdr[10] != 0 || ihdr[11] != 0 || ihdr[12] > 1)
    return mpk_fail_at(err, MPK_EMALFORMED, file, 26,
                       "PNG compression, filter or interlace method is not valid (%u, %u, %u)", ihdr[10], ihdr[11],
                       ihdr[12]);
  bool trns = false;
  size_t pos = 33;
  for (;;) {
    if (n - pos < 12)
      return mpk_fail(err, MPK_EMALFORMED, file, NULL, "PNG is truncated before its image data (IDAT)");
    uint32_t len = be32(d + pos);
    const uint8_t *type = d + pos + 4;
    if (len > 0x7FFFFFFFu || len > n - pos - 12)
      return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)pos,
                         "PNG is truncated: chunk %.4s declares %u bytes, %zu remain", (const char *)type, len,
                         n - pos - 12);
    if (memcmp(type, "IDAT", 4) == 0) {
      /* The filtered rows (not interlaced: the fewest bytes for this size) cannot come from fewer
         compressed bytes than this; a larger declaration in a small file is refused before the
         raster is allocated. */
      uint64_t row = 1 + ((uint64_t)width * png_samples(ct) * bd + 7) / 8;
      uint64_t raw = row * height, avail = n - pos;
      if (raw / DEFLATE_MAX_RATIO > avail)
        return mpk_fail(err, MPK_EMALFORMED, file, NULL,
                        "PNG is truncated: %ux%u needs %llu bytes of image data, which take at least %llu "
                        "compressed bytes; %llu remain",
                        width, height, (unsigned long long)raw, (unsigned long long)(raw / DEFLATE_MAX_RATIO),
                        (unsigned long long)avail);
      /* eXIf may also follow the image data (ImageMagick writes it there, and Pillow applies it):
         look on through the chunk headers, up to IEND, without judging them (the decoder does). */
      for (size_t q = pos; !*exif && n - q >= 12;) {
        uint32_t l = be32(d + q);
        if (l > 0x7FFFFFFFu || l > n - q - 12 || memcmp(d + q + 4, "IEND", 4) == 0) break;
        if (memcmp(d + q + 4, "eXIf", 4) == 0) {
          *exif = d + q + 8;
          *exif_len = l;
        }
        q += 12 + (size_t)l;
      }
      break;
    }
    if (memcmp(type, "IEND", 4) == 0)
      return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)pos, "PNG has no image data (IEND before IDAT)");
    if (memcmp(type, "tRNS", 4) == 0) trns = true;
    if (memcmp(type, "eXIf", 4) == 0 && !*exif) {
      *exif = d + pos + 8;
      *exif_len = len;
    }
    pos += 12 + (size_t)len;
  }
  static const uint32_t channels[7] = {1, 0, 3, 3, 2, 0, 4};
  h->width = width;
  h->height = height;
  h->bits = ct == 3 ? 8 : bd;
  bool trns_alpha = trns && (ct == 0 || ct == 2 || ct == 3); /* tRNS is not allowed with an alpha channel */
  h->has_alpha = ct == 4 || ct == 6 || trns_alpha;
  h->channels = channels[ct] + (trns_alpha ? 1 : 0);
  return 0;
}

/* ---------------------------------------------------------------- WebP */

static const char *vp8_status(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated";
    default: return "error";
  }
}

int mpk_image_webp_fail(int status, const char *file, const char *stage, mpk_error *err) {
  VP8StatusCode s = (VP8StatusCode)status;
  int code = s == VP8_STATUS_OUT_OF_MEMORY          ? MPK_ENOMEM
             : s == VP8_STATUS_UNSUPPORTED_FEATURE ? MPK_EUNSUPPORTED
                                                   : MPK_EMALFORMED;
  if (s == VP8_STATUS_NOT_ENOUGH_DATA) return mpk_fail(err, code, file, NULL, "WebP is truncated (%s)", stage);
  return mpk_fail(err, code, file, NULL, "WebP %s: %s", stage, vp8_status(s));
}

static int probe_webp(const uint8_t *d, size_t n, const char *file, uint64_t max_pixels, mpk_image_header *h,
                      const uint8_t **exif, size_t *exif_len, mpk_error *err) {
  uint32_t riff = le32(d + 4);
  if (riff < 4 || riff % 2) return mpk_fail_at(err, MPK_EMALFORMED, file, 4, "WebP RIFF size %u is not valid", riff);
  if ((uint64_t)riff + 8 > n)
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "WebP is truncated: RIFF declares %llu bytes, the file has %zu",
                    (unsigned long long)riff + 8, n);
  size_t end = (size_t)riff + 8; /* bytes after the RIFF chunk are not the image's */
  int lrc = mpk_webp_load(err);
  if (lrc) return lrc;
  WebPBitstreamFeatures f;
  VP8StatusCode s = WebPGetFeatures(d, end, &f);
  if (s != VP8_STATUS_OK) return mpk_image_webp_fail(s, file, "header", err);
  int rc = check_dims(file, "WebP header", (uint64_t)(f.width > 0 ? f.width : 0),
                      (uint64_t)(f.height > 0 ? f.height : 0), max_pixels, err);
  if (rc) return rc;
  if (f.has_animation) return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "animated WebP is not supported");
  /* The EXIF chunk of an extended (VP8X) file. */
  for (size_t pos = 12; end - pos >= 8;) {
    uint32_t len = le32(d + pos + 4);
    if (len > end - pos - 8) break; /* libwebp decides about a broken chunk list */
    if (memcmp(d + pos, "EXIF", 4) == 0 && !*exif) {
      *exif = d + pos + 8;
      *exif_len = len;
    }
    pos += 8 + (size_t)len + (len & 1);
    if (pos > end) break;
  }
  h->width = (uint32_t)f.width;
  h->height = (uint32_t)f.height;
  h->channels = f.has_alpha ? 4 : 3;
  h->bits = 8;
  h->has_alpha = f.has_alpha != 0;
  h->webp_lossless = f.format == 2;
  return 0;
}

/* ---------------------------------------------------------------- entry point */

int mpk_image_probe(const uint8_t *data, size_t len, const char *file, uint64_t max_pixels, mpk_image_header *out,
                    mpk_error *err) {
  if (!file) file = "image";
  if (!out) return mpk_fail(err, MPK_EINVAL, file, NULL, "no output");
  memset(out, 0, sizeof *out);
  if (!max_pixels) max_pixels = MPK_IMAGE_DEFAULT_MAX_PIXELS;
  if (!data || len == 0) return mpk_fail(err, MPK_EMALFORMED, file, NULL, "empty file: not an image");
  mpk_image_format f = sniff(data, len);
  if (f == MPK_IMAGE_FORMAT_UNKNOWN)
    return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "not a JPEG, PNG or WebP image: %s", looks_like(data, len));
  const uint8_t *exif = NULL;
  size_t exif_len = 0;
  int rc = f == MPK_IMAGE_FORMAT_JPEG ? probe_jpeg(data, len, file, max_pixels, out, &exif, &exif_len, err)
           : f == MPK_IMAGE_FORMAT_PNG ? probe_png(data, len, file, max_pixels, out, &exif, &exif_len, err)
                                       : probe_webp(data, len, file, max_pixels, out, &exif, &exif_len, err);
  if (rc) {
    memset(out, 0, sizeof *out);
    return rc;
  }
  out->format = f;
  if (exif_len && (rc = mpk_exif_load(err))) {
    memset(out, 0, sizeof *out);
    return rc;
  }
  out->orientation = exif_orientation(exif, exif_len);
  if (out->orientation < 0) {
    memset(out, 0, sizeof *out);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory (EXIF)");
  }
  return 0;
}
