/* A package source: a directory or an http(s) base URL. Files are addressed by their
   package-relative POSIX path and fetched as <base>/<path> (each segment percent-encoded), so any
   static server, CDN or object store serves a package. The fetch engine's internals (engine.c,
   the public mpk_fetch_source_* wrap these); the unit and fuzz tests use them directly. */
#ifndef MPK_FETCH_SOURCE_H
#define MPK_FETCH_SOURCE_H

#include "core/core.h"
#include "modelpkg/fetch.h"

/* The public mpk_fetch_source (include/modelpkg/fetch.h) is this object. */
typedef struct mpk_fetch_source mpk_src;

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
  /* Bounds of every HTTP transfer (docs/mt-install.md, "Bounds"). */
  long deadline_secs;   /* one file (or document), every try and backoff included; 0: 3600 */
  long low_speed_bytes; /* a transfer below this many bytes/s ... ; 0: 1024 */
  long low_speed_secs;  /* ... for this long is a network error (retried); 0: 30 */
  const char *ca_file;  /* https: the certificate authorities (PEM); NULL: libcurl's default (copied) */
} mpk_src_retry;

#define MPK_SRC_DEFAULT_DEADLINE_SECS 3600
#define MPK_SRC_DEFAULT_LOW_SPEED_BYTES 1024
#define MPK_SRC_DEFAULT_LOW_SPEED_SECS 30

/* ---- HTTP response headers, as libcurl hands them over one line at a time (exposed for the fuzz
   target tests/fuzz/fuzz_http_headers.c and the unit tests). */
#define MPK_SRC_MAX_HEADER_BYTES ((size_t)64 * 1024) /* one response's header lines, the status line included */
#define MPK_SRC_MAX_HEADER_LINES 100                  /* one response's header lines */
#define MPK_SRC_MAX_RETRY_AFTER_SECS 120                /* the longest Retry-After honoured */
#define MPK_SRC_MAX_RESPONSES 8                       /* responses in one transfer: redirects (at most 5), 1xx */

typedef struct mpk_src_headers {
  size_t bytes, lines;     /* of the current response */
  unsigned responses;      /* status lines seen */
  int status;              /* the current response's status code (0: none parsed) */
  bool complete;           /* the current response's blank line arrived */
  long long content_range_start, content_length; /* -1: absent or unparsable */
  long long content_range_end, content_range_total; /* "bytes a-b/total": -1 absent, unparsable or "*" */
  bool accept_ranges_none; /* "Accept-Ranges: none" */
  long long retry_after_ms; /* Retry-After (delay-seconds or an HTTP-date, from now), capped at
                               MPK_SRC_MAX_RETRY_AFTER_SECS; -1: absent or unparsable */
  char etag[256], last_modified[256];
  char location[2048];     /* "" when absent; a longer one is refused */
  char why[200];           /* set when a line is refused: the limit it broke */
} mpk_src_headers;

void mpk_src_headers_init(mpk_src_headers *h);
/* One header line (a status line "HTTP/...", a "Name: value" line or the blank line ending the
   headers; `data` need not be NUL-terminated). false when a limit is broken (h->why says which):
   the transfer must stop. */
bool mpk_src_header_line(mpk_src_headers *h, const char *data, size_t n);
/* May a redirect from a URL of scheme `from_scheme` ("http" or "https") to `location` (a Location
   value, absolute or relative) be followed? Only to http or https, and never from https to http.
   false with why; *to_https says the scheme the next request uses. */
bool mpk_src_redirect_allowed(const char *from_scheme, const char *location, bool *to_https, char *why, size_t cap);

/* `location`: "http://..." or "https://..." (libcurl), else a directory (opened as the user named it;
   every file is then opened beneath it with mpk_open_read_at: regular files only, no link out). `retry` may be NULL
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
  mpk_digest_algo algo;  /* what `hex` is: MPK_DIGEST_SHA256 or MPK_DIGEST_MD5 (0) */
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
  void *curl;            /* a handle of mpk_src_handle_new() to use (its connection kept alive), NULL: its own */
  /* out */
  char hex[65];          /* the digest (`algo`) of the whole file, [0, size), lowercase hex */
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

/* ---- one range of a file over HTTP: the engine's ranged transfers (ranges.c, docs/fetch.md
   "Ranged transfers"). Each worker keeps one handle for all its transfers (keep-alive). */
void *mpk_src_handle_new(void); /* NULL: out of memory */
void mpk_src_handle_free(void *h);
double mpk_src_now_ms(void); /* the monotonic clock deadlines are measured on */
long mpk_src_deadline_secs(const mpk_src *s); /* one file's deadline */

/* Returned by mpk_src_fetch_range (with *err set) when the file changed on the server since the
   validator was taken: a 206 with another validator, or a 200 where one was not acceptable. */
#define MPK_SRC_CHANGED 3

typedef struct mpk_src_range {
  /* in */
  const char *rel;     /* package-relative path */
  uint64_t size;       /* the declared size: a Content-Range total (or a 200's length) that differs is
                          refused before the body, MPK_EMISMATCH "larger/shorter than declared" */
  int fd;              /* the staged file, written with pwrite at the file offsets */
  uint64_t from, to;   /* the bytes [from, to) wanted; `from` advances as they are written, so a
                          failed try is continued by the next one (`attempts` tries, backoff or
                          Retry-After, until t_end) */
  bool whole_ok;       /* a 200 is the whole file: [0, size) then comes (whole set, on_response
                          called); else a 200 means the file changed (MPK_SRC_CHANGED) */
  char validator[256]; /* in: sent as If-Range and compared with the response's (ETag, else
                          Last-Modified); "" none (any accepted); out: the response's */
  double t_end;        /* the file's deadline, mpk_src_now_ms() scale */
  void *curl;          /* the worker's handle (mpk_src_handle_new) */
  /* called once a response's headers are accepted, before its body is written; non-zero cancels */
  int (*on_response)(void *ctx, const struct mpk_src_range *q);
  /* bytes [from, to) were written; non-zero cancels */
  int (*on_data)(void *ctx, uint64_t from, uint64_t to);
  void *ctx;
  /* out */
  bool no_ranges;      /* the response said "Accept-Ranges: none" */
  bool whole;          /* a 200 came: the whole file */
  int http_status;
  unsigned retries;    /* failed tries that were retried */
} mpk_src_range;

/* Fetch [q->from, q->to) of q->rel over HTTP ("Range: bytes=from-(to-1)", If-Range with the
   validator); 0 when all of it is written, MPK_SRC_CHANGED, or an error as mpk_src_fetch_file's. */
int mpk_src_fetch_range(mpk_src *s, mpk_src_range *q, mpk_error *err);

/* The URL or path of `rel` (malloc'ed), for messages. */
char *mpk_src_url(const mpk_src *s, const char *rel);

#endif
