/* A package source: a directory or an http(s) base URL. Files are addressed by their
   package-relative POSIX path and fetched as <base>/<path> (each segment percent-encoded), so any
   static server, CDN or object store serves a package. Internal, not installed; the installer
   (install.c) is the user. */
#ifndef MPK_MT_SOURCE_H
#define MPK_MT_SOURCE_H

#include "../core/core.h"

typedef struct mpk_src mpk_src;

/* How failed transfers are retried: connection errors, timeouts and 5xx responses (a 404 or other
   4xx, a size or content problem, is not retried here). Attempt n (n >= 1) waits
   min(base_ms << (n-1), max_ms) first; `sleep_ms` (NULL: nanosleep) lets tests record the delays
   instead of waiting. */
typedef struct mpk_src_retry {
  unsigned attempts; /* 0: 5 (the first try included) */
  unsigned base_ms;  /* 0: 250 */
  unsigned max_ms;   /* 0: 8000 */
  void (*sleep_ms)(void *ctx, unsigned ms);
  void *sleep_ctx;
  long low_speed_secs; /* a transfer below 1 byte/s for this long is a network error; 0: 30 */
} mpk_src_retry;

/* `location`: "http://..." or "https://..." (libcurl), else a directory. `retry` may be NULL
   (defaults); it is copied. */
int mpk_src_open(const char *location, const mpk_src_retry *retry, mpk_src **out, mpk_error *err);
void mpk_src_free(mpk_src *s);
bool mpk_src_is_http(const mpk_src *s);
/* The source as given (borrowed), for messages. */
const char *mpk_src_location(const mpk_src *s);

/* A small document (a manifest): at most `max` bytes, else MPK_ELIMIT before more is read. A missing
   file (404) is MPK_ENOTFOUND. *data is malloc'ed, NUL-terminated (free with free()). */
int mpk_src_read_small(mpk_src *s, const char *rel, size_t max, uint8_t **data, size_t *len, mpk_error *err);

/* One file fetch into an open, writable, seekable fd. */
typedef struct mpk_src_fetch {
  /* in */
  const char *rel;       /* package-relative path (already checked to be confined) */
  uint64_t size;         /* the exact declared size */
  int fd;                /* bytes [0, offset) already there are kept and re-hashed */
  uint64_t offset;       /* resume from here (HTTP Range); <= size */
  char validator[256];   /* in: ETag (or Last-Modified) the kept bytes came with, "" unknown;
                            out: the one the final response carried */
  /* called with the validator as soon as a response's headers are in (so a record of the partial
     file can say which content it holds), may be NULL */
  void (*on_validator)(void *ctx, const char *validator);
  /* bytes received so far for this file (offset included); may be NULL; non-zero cancels */
  int (*on_bytes)(void *ctx, uint64_t done);
  void *ctx;
  /* out */
  char hex[65];          /* SHA-256 of the whole file, [0, size) */
  uint64_t resumed_from; /* the offset the bytes finally kept were continued from (0: whole) */
  unsigned restarts;     /* how often it started over from 0 (Range ignored, content changed) */
  unsigned retries;      /* failed attempts that were retried */
  int http_status;       /* the last response's status (0 for a directory) */
} mpk_src_fetch;

/* Fetch f->rel from byte f->offset to f->size into f->fd (pwrite at the file offsets), hashing
   while receiving, after re-hashing the bytes already there. Exactly f->size bytes: a response
   that would go beyond is cut off and refused (MPK_EMISMATCH "larger than declared"), one that ends
   short is MPK_EMISMATCH too. A server that ignores the Range (200 instead of 206) or whose content
   changed (If-Range with the validator) sends the whole file: the fd is truncated and it starts
   over. A 404 is MPK_ENOTFOUND; a write failure MPK_EIO naming the cause (disk full). The fd is
   not fsynced here. */
int mpk_src_fetch_file(mpk_src *s, mpk_src_fetch *f, mpk_error *err);

/* The URL or path of `rel` (malloc'ed), for messages. */
char *mpk_src_url(const mpk_src *s, const char *rel);

#endif
