/* gzip: inflating a gzip-compressed archive (MLC publishes its static libraries as .tar files that
   are gzip-compressed tars). Bounded: at most `limit` inflated bytes, and a stream that is not a
   tar is refused after its first 512 inflated bytes. */
#include <stdlib.h>
#include <string.h>

#include "objfile/internal.h"
#include "objfile/zlib_dl.h"

MPK_DL_DEFINE(zlib, "zlib", MPK_SONAME_ZLIB, MPK_ZLIB_FUNCS)

static bool all_zero(const uint8_t *d, uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    if (d[i]) return false;
  return true;
}

int mpk_obj_gunzip(const uint8_t *d, uint64_t n, uint64_t limit, const char *shown, uint8_t **out, uint64_t *out_n,
                   mpk_error *err) {
  *out = NULL;
  *out_n = 0;
  if (n < 18 || d[0] != 0x1f || d[1] != 0x8b)
    return mpk_fail_at(err, MPK_EMALFORMED, shown, 0, "gzip: shorter than a gzip header and trailer (%llu bytes)",
                       (unsigned long long)n);
  /* The trailer's ISIZE (the size modulo 2^32) is a hint for the first growth, never trusted, and
     not used before the first block has shown a tar: a stream that is refused allocates 64 KiB. */
  int lrc = mpk_zlib_load(err); /* zlib is opened by the first gzip'd archive */
  if (lrc) return lrc;
  uint64_t hint = mpk_obj_rd32(d + n - 4, false), cap = 64 * 1024;
  if (limit < 512) limit = 512;
  if (cap > limit) cap = limit;
  uint8_t *buf = malloc(cap);
  if (!buf) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory inflating %llu bytes", (unsigned long long)cap);
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    free(buf);
    return mpk_fail(err, MPK_ENOMEM, shown, NULL, "gzip: cannot start zlib");
  }
  uint64_t in = 0, used = 0;
  bool checked = false;
  int rc = 0;
  for (;;) {
    if (used == cap) {
      if (cap >= limit) {
        rc = mpk_fail(err, MPK_ELIMIT, shown, NULL,
                      "gzip: inflates past %llu bytes, the limit for a compressed library archive",
                      (unsigned long long)limit);
        break;
      }
      uint64_t ncap = hint > cap * 2 ? hint : cap * 2;
      if (ncap > limit) ncap = limit;
      uint8_t *nb = realloc(buf, ncap);
      if (!nb) {
        rc = mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory inflating %llu bytes", (unsigned long long)ncap);
        break;
      }
      buf = nb;
      cap = ncap;
    }
    uint64_t in_chunk = n - in > (1u << 30) ? (1u << 30) : n - in;
    uint64_t out_chunk = cap - used > (1u << 30) ? (1u << 30) : cap - used;
    /* Until the first block is checked, inflate only that much: a stream that is no tar is refused
       after 512 bytes. */
    if (!checked && used < 512 && out_chunk > 512 - used) out_chunk = 512 - used;
    z.next_in = (Bytef *)(d + in);
    z.avail_in = (uInt)in_chunk;
    z.next_out = buf + used;
    z.avail_out = (uInt)out_chunk;
    int zr = inflate(&z, Z_NO_FLUSH);
    in += in_chunk - z.avail_in;
    used += out_chunk - z.avail_out;
    if (!checked && (used >= 512 || zr == Z_STREAM_END)) {
      checked = true;
      if (used < 512 || !(mpk_obj_tar_header_ok(buf) || all_zero(buf, 512))) {
        rc = mpk_fail(err, MPK_EUNSUPPORTED, shown, NULL,
                      "not a compiled library: gzip-compressed, but not a tar archive (its first 512 inflated bytes are no tar header)");
        break;
      }
    }
    if (zr == Z_STREAM_END) {
      /* Another gzip member may follow (concatenated streams); trailing zeros are padding. */
      if (in == n || all_zero(d + in, n - in)) break;
      if (n - in < 2 || d[in] != 0x1f || d[in + 1] != 0x8b) {
        rc = mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)in, "gzip: %llu bytes after the end of the stream at byte %llu",
                         (unsigned long long)(n - in), (unsigned long long)in);
        break;
      }
      inflateReset(&z);
      continue;
    }
    if (zr == Z_BUF_ERROR && z.avail_out != 0 && in == n) {
      rc = mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)n, "gzip: truncated: the stream ends at byte %llu before its end",
                       (unsigned long long)n);
      break;
    }
    if (zr != Z_OK && zr != Z_BUF_ERROR) {
      rc = mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)in, "gzip: corrupt stream near byte %llu: %s",
                       (unsigned long long)in, z.msg ? z.msg : "inflate failed");
      break;
    }
  }
  inflateEnd(&z);
  if (rc) {
    free(buf);
    return rc;
  }
  *out = buf;
  *out_n = used;
  return 0;
}
