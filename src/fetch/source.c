/* Package sources: a directory, or an http(s) base URL through libcurl. Bytes are hashed as they
   arrive (no second pass), sizes are exact, and failed transfers are retried with backoff. */
#define _GNU_SOURCE /* sync_file_range */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include "core/hash.h"
#include "fetch/curl_dl.h"
#include "fetch/source.h"

struct mpk_fetch_source {
  char *location; /* as given */
  char *base;     /* URL without trailing slashes, or the directory */
  char *ca_file;  /* NULL: libcurl's default */
  bool http, https;
  int root_fd;    /* a directory source, opened as the user named it; -1 for HTTP */
  mpk_src_retry retry;
};

MPK_DL_DEFINE(curl, "libcurl", MPK_SONAME_CURL, MPK_CURL_FUNCS) /* opened by the first http(s) source */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static bool has_prefix_ci(const char *s, const char *p) { return strncasecmp(s, p, strlen(p)) == 0; }

int mpk_src_open(const char *location, const mpk_src_retry *retry, mpk_src **out, mpk_error *err) {
  *out = NULL;
  if (!location || !*location) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the package source is empty");
  mpk_src *s = calloc(1, sizeof *s);
  if (!s || !(s->location = strdup(location)) || !(s->base = strdup(location))) {
    if (s) free(s->location);
    free(s);
    return mpk_fail(err, MPK_ENOMEM, location, NULL, "out of memory");
  }
  s->root_fd = -1;
  if (retry) s->retry = *retry;
  s->retry.ca_file = NULL; /* the source's own copy below */
  if (retry && retry->ca_file && !(s->ca_file = strdup(retry->ca_file))) {
    mpk_src_free(s);
    return mpk_fail(err, MPK_ENOMEM, location, NULL, "out of memory");
  }
  if (!s->retry.attempts) s->retry.attempts = 5;
  if (!s->retry.base_ms) s->retry.base_ms = 250;
  if (!s->retry.max_ms) s->retry.max_ms = 8000;
  if (s->retry.deadline_secs <= 0) s->retry.deadline_secs = MPK_SRC_DEFAULT_DEADLINE_SECS;
  if (s->retry.low_speed_bytes <= 0) s->retry.low_speed_bytes = MPK_SRC_DEFAULT_LOW_SPEED_BYTES;
  if (s->retry.low_speed_secs <= 0) s->retry.low_speed_secs = MPK_SRC_DEFAULT_LOW_SPEED_SECS;
  s->root_fd = -1;
  s->https = has_prefix_ci(location, "https://");
  s->http = s->https || has_prefix_ci(location, "http://");
  size_t n = strlen(s->base);
  while (n > 1 && s->base[n - 1] == '/') s->base[--n] = '\0';
  if (s->http) {
    int lrc = mpk_curl_load(err); /* libcurl is opened here, by the first http(s) source */
    if (lrc) {
      mpk_src_free(s);
      return lrc;
    }
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
      mpk_src_free(s);
      return mpk_fail(err, MPK_EIO, location, NULL, "cannot initialise libcurl: %s", curl_easy_strerror(curl_init_rc));
    }
  } else if ((s->root_fd = open(s->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
    mpk_src_free(s);
    return mpk_fail(err, MPK_ENOTFOUND, location, NULL,
                    "the package source is neither an http(s) URL nor a directory");
  }
  *out = s;
  return 0;
}

void mpk_src_free(mpk_src *s) {
  if (!s) return;
  if (s->root_fd >= 0) close(s->root_fd);
  free(s->location);
  free(s->base);
  free(s->ca_file);
  free(s);
}

bool mpk_src_is_http(const mpk_src *s) { return s->http; }
const char *mpk_src_location(const mpk_src *s) { return s->location; }

char *mpk_src_url(const mpk_src *s, const char *rel) {
  if (!s->http) return mpk_path_join(s->base, rel);
  /* Percent-encode each segment; the slashes between them stay. */
  size_t cap = strlen(s->base) + 1 + 3 * strlen(rel) + 1;
  char *url = malloc(cap);
  if (!url) return NULL;
  size_t len = (size_t)snprintf(url, cap, "%s/", s->base);
  static const char keep[] = "-._~";
  for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
    if (*p == '/' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
        strchr(keep, *p))
      url[len++] = (char)*p;
    else
      len += (size_t)snprintf(url + len, cap - len, "%%%02X", *p);
  }
  url[len] = '\0';
  return url;
}

/* Start the disk writeback of what was written since *kicked once WRITEBACK_STEP bytes are
   pending, without waiting for it: the installer must fsync every file before its commit, and a
   disk slower than the network would otherwise take all of that time after the transfer instead
   of during it (docs/PERFORMANCE.md, section 6). A hint: errors are the fsync's to report. */
#define WRITEBACK_STEP ((uint64_t)8 << 20)
/* Received bytes are written in pieces of this size (one pwrite() and one progress call each). */
#define WBUF ((size_t)1 << 20)
static void start_writeback(int fd, uint64_t *kicked, uint64_t pos, bool last) {
  if (pos <= *kicked || (!last && pos - *kicked < WRITEBACK_STEP)) return;
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
  sync_file_range(fd, (off_t)*kicked, (off_t)(pos - *kicked), SYNC_FILE_RANGE_WRITE);
#else
  (void)fd;
#endif
  *kicked = pos;
}

/* The wait before try attempt + 1. */
static unsigned backoff_ms(const mpk_src *s, unsigned attempt) {
  unsigned ms = s->retry.base_ms;
  for (unsigned i = 1; i < attempt && ms < s->retry.max_ms; i++) ms *= 2;
  return ms > s->retry.max_ms ? s->retry.max_ms : ms;
}

static void sleep_ms(const mpk_src *s, unsigned ms) {
  if (s->retry.sleep_ms) {
    s->retry.sleep_ms(s->retry.sleep_ctx, ms);
    return;
  }
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------- response headers */

void mpk_src_headers_init(mpk_src_headers *h) {
  memset(h, 0, sizeof *h);
  h->content_range_start = h->content_length = h->content_range_end = h->content_range_total = -1;
  h->retry_after_ms = -1;
}

static void new_response(mpk_src_headers *h) {
  h->bytes = h->lines = 0;
  h->status = 0;
  h->complete = false;
  h->content_range_start = h->content_length = h->content_range_end = h->content_range_total = -1;
  h->retry_after_ms = -1;
  h->accept_ranges_none = false;
  h->etag[0] = h->last_modified[0] = h->location[0] = '\0';
}

/* The value of a header line, without the surrounding blanks and the line end; false when it does
   not fit `cap` (it is then cut). */
static bool copy_header_value(char *dst, size_t cap, const char *v, size_t n) {
  while (n && (*v == ' ' || *v == '\t')) v++, n--;
  while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  bool fits = n < cap;
  if (!fits) n = cap - 1;
  memcpy(dst, v, n);
  dst[n] = '\0';
  return fits;
}

/* A decimal number of at most 18 digits (no sign, no blanks) at the start of s: its value, or -1.
   *end (may be NULL) gets what follows. */
static long long parse_decimal(const char *s, const char **end) {
  long long v = 0;
  size_t i = 0;
  for (; s[i] >= '0' && s[i] <= '9'; i++) {
    if (i == 18) return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (end) *end = s + i;
  return i ? v : -1;
}

bool mpk_src_header_line(mpk_src_headers *h, const char *data, size_t n) {
  bool status_line = n >= 5 && memcmp(data, "HTTP/", 5) == 0;
  if (status_line) { /* a new response (after a redirect or a 1xx) */
    if (h->responses >= MPK_SRC_MAX_RESPONSES) {
      snprintf(h->why, sizeof h->why, "more than %d responses in one transfer (redirects and interim responses)",
               MPK_SRC_MAX_RESPONSES);
      return false;
    }
    h->responses++;
    new_response(h);
    const char *sp = memchr(data, ' ', n);
    if (sp && (size_t)(data + n - sp) >= 4) {
      int st = 0, k = 1;
      for (; k <= 3 && sp[k] >= '0' && sp[k] <= '9'; k++) st = st * 10 + (sp[k] - '0');
      if (k == 4) h->status = st;
    }
  }
  if (n > MPK_SRC_MAX_HEADER_BYTES - h->bytes) {
    snprintf(h->why, sizeof h->why, "the response's headers exceed %zu bytes", MPK_SRC_MAX_HEADER_BYTES);
    return false;
  }
  h->bytes += n;
  size_t t = n;
  while (t && (data[t - 1] == '\r' || data[t - 1] == '\n')) t--;
  if (t == 0) { /* the blank line: the headers are complete */
    h->complete = true;
    return true;
  }
  if (status_line) return true;
  if (h->lines >= MPK_SRC_MAX_HEADER_LINES) {
    snprintf(h->why, sizeof h->why, "the response has more than %d header lines", MPK_SRC_MAX_HEADER_LINES);
    return false;
  }
  h->lines++;
  const char *colon = memchr(data, ':', n);
  if (!colon) return true;
  size_t klen = (size_t)(colon - data), vlen = n - klen - 1;
  const char *v = colon + 1;
  char tmp[64];
  if (klen == 4 && strncasecmp(data, "etag", 4) == 0) {
    copy_header_value(h->etag, sizeof h->etag, v, vlen); /* cut: If-Range then fails safe (whole file) */
  } else if (klen == 13 && strncasecmp(data, "last-modified", 13) == 0) {
    copy_header_value(h->last_modified, sizeof h->last_modified, v, vlen);
  } else if (klen == 8 && strncasecmp(data, "location", 8) == 0) {
    if (!copy_header_value(h->location, sizeof h->location, v, vlen)) {
      snprintf(h->why, sizeof h->why, "a Location header longer than %zu bytes", sizeof h->location - 1);
      return false;
    }
  } else if (klen == 13 && strncasecmp(data, "content-range", 13) == 0) {
    h->content_range_start = h->content_range_end = h->content_range_total = -1;
    if (copy_header_value(tmp, sizeof tmp, v, vlen) && strncmp(tmp, "bytes ", 6) == 0) {
      const char *end;
      long long a = parse_decimal(tmp + 6, &end);
      if (a >= 0 && *end == '-') {
        h->content_range_start = a;
        long long b = parse_decimal(end + 1, &end);
        if (b >= a && *end == '/') {
          h->content_range_end = b;
          long long tot = parse_decimal(end + 1, &end);
          if (tot >= 0 && !*end) h->content_range_total = tot;
        }
      }
    }
  } else if (klen == 13 && strncasecmp(data, "accept-ranges", 13) == 0) {
    if (copy_header_value(tmp, sizeof tmp, v, vlen)) h->accept_ranges_none = strcasecmp(tmp, "none") == 0;
  } else if (klen == 11 && strncasecmp(data, "retry-after", 11) == 0) {
    h->retry_after_ms = -1;
    if (copy_header_value(tmp, sizeof tmp, v, vlen)) {
      const char *end;
      long long secs = parse_decimal(tmp, &end);
      if (secs < 0 || *end) { /* an HTTP-date (RFC 9110 10.2.3): the wait until then */
        time_t when = mpk_curl_load(NULL) ? (time_t)-1 : curl_getdate(tmp, NULL), now = time(NULL);
        secs = when == (time_t)-1 ? -1 : when > now ? (long long)(when - now) : 0;
      }
      if (secs >= 0) h->retry_after_ms = (secs > MPK_SRC_MAX_RETRY_AFTER_SECS ? MPK_SRC_MAX_RETRY_AFTER_SECS : secs) * 1000;
    }
  } else if (klen == 14 && strncasecmp(data, "content-length", 14) == 0) {
    h->content_length = -1;
    if (copy_header_value(tmp, sizeof tmp, v, vlen)) {
      const char *end;
      long long a = parse_decimal(tmp, &end);
      if (a >= 0 && !*end) h->content_length = a;
    }
  }
  return true;
}

bool mpk_src_redirect_allowed(const char *from_scheme, const char *location, bool *to_https, char *why, size_t cap) {
  bool from_https = strcasecmp(from_scheme, "https") == 0;
  *to_https = from_https;
  if (why && cap) why[0] = '\0';
  const char *p = location;
  while (*p == ' ' || *p == '\t') p++;
  /* RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"; anything else is a reference
     relative to the current URL, which keeps its scheme. */
  size_t i = 0;
  if ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z')) {
    i = 1;
    while ((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') ||
           p[i] == '+' || p[i] == '-' || p[i] == '.')
      i++;
  }
  if (i == 0 || p[i] != ':') return true;
  if (i == 5 && strncasecmp(p, "https", 5) == 0) {
    *to_https = true;
    return true;
  }
  if (i == 4 && strncasecmp(p, "http", 4) == 0) {
    if (!from_https) return true;
    if (why) snprintf(why, cap, "a redirect from https to plain http (%.200s) is refused", location);
    return false;
  }
  if (why)
    snprintf(why, cap, "a redirect to the scheme \"%.*s\" (%.200s) is refused: only http and https are followed",
             (int)(i > 32 ? 32 : i), p, location);
  return false;
}

/* ---------------------------------------------------------------- one HTTP transfer */

typedef struct xfer {
  CURL *h;
  /* a file fetch (fetch != NULL) or a small read into buf */
  mpk_src_fetch *fetch;
  mpk_src_range *range; /* or one range of a file (the engine's ranged transfers) */
  mpk_hasher *md;
  uint64_t pos;   /* bytes of the file kept (and hashed) so far */
  uint64_t start; /* the offset asked for in this attempt */
  uint64_t kicked; /* writeback started for [.., kicked) */
  uint64_t total;  /* size_refused: the size the server says */
  uint8_t *wbuf;   /* received bytes [pos - wlen, pos), hashed, not yet written */
  size_t wlen;
  uint8_t *buf;
  size_t len, max;
  /* this attempt */
  mpk_src_headers hd;
  bool https_now; /* the scheme of the URL being answered (redirects change it) */
  bool first, too_long, io_error, cancelled, bad_range, restarted, header_refused, redirect_refused;
  bool changed, size_refused; /* a range: the file changed since its first range; the total is not the declared size */
  int io_errno;
  char why[300];
  char errbuf[CURL_ERROR_SIZE];
} xfer;

static size_t on_header(char *data, size_t size, size_t nitems, void *ctx) {
  xfer *x = ctx;
  size_t n = size * nitems;
  if (!mpk_src_header_line(&x->hd, data, n)) {
    x->header_refused = true;
    snprintf(x->why, sizeof x->why, "%s", x->hd.why);
    return 0; /* libcurl stops the transfer */
  }
  /* Each hop is checked before libcurl follows it (besides CURLOPT_REDIR_PROTOCOLS_STR). */
  if (x->hd.complete && x->hd.status >= 300 && x->hd.status < 400 && x->hd.location[0]) {
    bool to_https;
    if (!mpk_src_redirect_allowed(x->https_now ? "https" : "http", x->hd.location, &to_https, x->why, sizeof x->why)) {
      x->redirect_refused = true;
      return 0;
    }
    x->https_now = to_https;
  }
  return n;
}

/* The first body bytes of a response: is it what was asked for? */
static bool check_response(xfer *x) {
  long status = 0;
  curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
  mpk_src_fetch *f = x->fetch;
  mpk_src_range *q = x->range;
  if (q) {
    q->http_status = (int)status;
    q->no_ranges = x->hd.accept_ranges_none;
    const char *val = x->hd.etag[0] ? x->hd.etag : x->hd.last_modified;
    if (status == 206) {
      if (x->hd.content_range_start != (long long)x->start) {
        x->bad_range = true;
        return false;
      }
      if (x->hd.content_range_total >= 0 && (uint64_t)x->hd.content_range_total != q->size) {
        x->size_refused = true; /* refused before a byte of it is written */
        x->total = (uint64_t)x->hd.content_range_total;
        return false;
      }
      if (q->validator[0] && val[0] && strcmp(val, q->validator) != 0) {
        x->changed = true;
        return false;
      }
      q->whole = false;
    } else {
      /* 200: no ranges (the server ignores them), or If-Range says the content changed. */
      if (!q->whole_ok) {
        x->changed = true;
        return false;
      }
      if (x->hd.content_length >= 0 && (uint64_t)x->hd.content_length != q->size) {
        x->size_refused = true;
        x->total = (uint64_t)x->hd.content_length;
        return false;
      }
      q->whole = true;
      q->from = x->pos = x->start = x->kicked = 0;
      q->to = q->size;
    }
    if (x->hd.content_length >= 0 && (uint64_t)x->hd.content_length > q->to - x->pos) {
      x->too_long = true;
      return false;
    }
    if (!q->validator[0] || val[0]) snprintf(q->validator, sizeof q->validator, "%s", val);
    if (q->on_response && q->on_response(q->ctx, q)) {
      x->cancelled = true;
      return false;
    }
  } else if (f) {
    f->http_status = (int)status;
    if (status == 206) {
      if (x->start == 0 || x->hd.content_range_start != (long long)x->start) {
        x->bad_range = true;
        return false;
      }
    } else if (x->start > 0) {
      /* 200: the server ignored the Range, or If-Range said the content changed: start over. */
      if (ftruncate(f->fd, 0) != 0) {
        x->io_error = true;
        x->io_errno = errno;
        return false;
      }
      mpk_hasher_restart(x->md);
      x->pos = 0;
      x->start = 0;
      x->kicked = 0;
      x->restarted = true;
      f->restarts++;
    }
    uint64_t want = f->size - x->pos;
    if (x->hd.content_length >= 0 && (uint64_t)x->hd.content_length > want) {
      x->too_long = true; /* refused before a byte of it is written */
      return false;
    }
    const char *val = x->hd.etag[0] ? x->hd.etag : x->hd.last_modified;
    snprintf(f->validator, sizeof f->validator, "%s", val);
    if (f->on_validator) f->on_validator(f->ctx, f->validator);
  } else if (x->hd.content_length >= 0 && (uint64_t)x->hd.content_length > x->max) {
    x->too_long = true;
    return false;
  }
  return true;
}

/* Write the gathered bytes, [pos - wlen, pos), start their writeback, report progress. false:
   a write failed (io_error) or the caller cancelled. */
static bool flush_wbuf(xfer *x) {
  mpk_src_fetch *f = x->fetch;
  mpk_src_range *q = x->range;
  int fd = q ? q->fd : f->fd;
  uint64_t at = x->pos - x->wlen;
  for (size_t done = 0; done < x->wlen;) {
    ssize_t w = pwrite(fd, x->wbuf + done, x->wlen - done, (off_t)(at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      x->io_error = true;
      x->io_errno = w < 0 ? errno : EIO;
      x->pos = at + done; /* what is on disk and hashed no longer agree: the caller fails the file */
      x->wlen = 0;
      return false;
    }
    done += (size_t)w;
  }
  x->wlen = 0;
  if (q) {
    start_writeback(fd, &x->kicked, x->pos, x->pos == q->to);
    uint64_t from = q->from;
    q->from = x->pos;
    if (q->on_data && q->on_data(q->ctx, from, x->pos, x->wbuf)) {
      x->cancelled = true;
      return false;
    }
    return true;
  }
  start_writeback(f->fd, &x->kicked, x->pos, x->pos == f->size);
  if (f->on_bytes && f->on_bytes(f->ctx, x->pos)) {
    x->cancelled = true;
    return false;
  }
  return true;
}

/* Gather received bytes into the write buffer (libcurl hands over at most 16 KiB a call), written
   1 MiB at a time. false: a write failed or the caller cancelled. */
static bool gather(xfer *x, const char *data, size_t n) {
  for (size_t done = 0; done < n;) {
    size_t k = n - done < WBUF - x->wlen ? n - done : WBUF - x->wlen;
    memcpy(x->wbuf + x->wlen, data + done, k);
    x->wlen += k;
    x->pos += k;
    done += k;
    if (x->wlen == WBUF && !flush_wbuf(x)) return false;
  }
  return true;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx) {
  xfer *x = ctx;
  size_t n = size * nmemb;
  if (x->first) {
    x->first = false;
    if (!check_response(x)) return 0;
  }
  if (x->range) {
    if (n > x->range->to - x->pos) { /* more than asked: cut off */
      x->too_long = true;
      return 0;
    }
    return gather(x, data, n) ? n : 0;
  }
  if (!x->fetch) {
    if (n > x->max - x->len) {
      x->too_long = true;
      return 0;
    }
    memcpy(x->buf + x->len, data, n);
    x->len += n;
    return n;
  }
  mpk_src_fetch *f = x->fetch;
  if (n > f->size - x->pos) { /* cut off: nothing beyond the declared size is written */
    x->too_long = true;
    return 0;
  }
  mpk_hasher_update(x->md, data, n);
  return gather(x, data, n) ? n : 0;
}

/* One attempt's handle: at most `timeout_ms` for all of it (what is left of the deadline). */
static void setup_handle(mpk_src *s, CURL *h, const char *url, xfer *x, long timeout_ms) {
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  /* Redirects only to http(s), and from an https source only to https (each hop is checked in
     on_header as well). */
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, s->https ? "https" : "http,https");
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
  if (s->ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, s->ca_file);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 15000 ? timeout_ms : 15000L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, s->retry.low_speed_bytes);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, s->retry.low_speed_secs);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
  /* Identity encoding only: sizes and digests are of the bytes as stored. */
  curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "modelpkg/" MPK_VERSION_STRING);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
  /* 16 KiB (the default) means a recv(), a pwrite() and a progress call per 16 KiB: at loopback
     rates that was a third of the CPU time. 256 KiB per transfer bounds memory at jobs x 256 KiB. */
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L << 10);
  /* HTTP/2 where an https server offers it (ALPN), HTTP/1.1 otherwise. Every worker has its own
     handle, hence its own connection: ranges are never multiplexed over one (CDNs cap each). */
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  x->h = h;
  x->first = true;
  x->too_long = x->io_error = x->cancelled = x->bad_range = x->header_refused = x->redirect_refused = false;
  x->changed = x->size_refused = false;
  x->https_now = s->https;
  x->errbuf[0] = x->why[0] = '\0';
  mpk_src_headers_init(&x->hd);
}

/* What a failed perform means: retry it or not, and the error. `deadline_hit`: the attempt ran
   until the file's deadline. */
static int classify(const mpk_src *s, CURLcode rc, xfer *x, const char *url, bool deadline_hit, bool *retry,
                    mpk_error *err) {
  *retry = false;
  long status = 0;
  curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
  const char *detail = x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc);
  unsigned long long got = x->fetch || x->range ? (unsigned long long)x->pos : (unsigned long long)x->len;
  if (x->cancelled) return mpk_fail(err, MPK_ECANCELLED, url, NULL, "cancelled");
  if (x->io_error)
    return mpk_fail(err, MPK_EIO, url, NULL, "cannot write the download: %s%s", strerror(x->io_errno),
                    x->io_errno == ENOSPC || x->io_errno == EFBIG || x->io_errno == EDQUOT ? " (the disk is full)" : "");
  if (x->header_refused) return mpk_fail(err, MPK_ELIMIT, url, NULL, "refused: %s", x->why);
  if (x->redirect_refused) return mpk_fail(err, MPK_EUNSUPPORTED, url, NULL, "%s", x->why);
  if (x->size_refused) {
    uint64_t want = x->range->size;
    return mpk_fail(err, MPK_EMISMATCH, url, NULL, "the server's file is %llu bytes, %llu declared: %s than declared",
                    (unsigned long long)x->total, (unsigned long long)want, x->total > want ? "larger" : "shorter");
  }
  if (x->changed)
    return mpk_fail(err, MPK_EMISMATCH, url, NULL, "the file changed on the server while being downloaded");
  if (x->too_long && x->range)
    return mpk_fail(err, MPK_EMISMATCH, url, NULL, "the server sends more than the %llu bytes asked for from byte %llu",
                    (unsigned long long)(x->range->to - x->start), (unsigned long long)x->start);
  if (x->too_long) {
    if (x->fetch)
      return mpk_fail(err, MPK_EMISMATCH, url, NULL,
                      "the server sends more than the declared %llu bytes (cut off at %llu): larger than declared",
                      (unsigned long long)x->fetch->size, (unsigned long long)x->pos);
    return mpk_fail(err, MPK_ELIMIT, url, NULL, "larger than the %zu bytes allowed for this document", x->max);
  }
  if (x->bad_range)
    return mpk_fail(err, MPK_EMALFORMED, url, NULL, "206 response whose Content-Range does not start at byte %llu",
                    (unsigned long long)x->start);
  if (rc == CURLE_HTTP_RETURNED_ERROR) {
    if (status == 404 || status == 410) return mpk_fail(err, MPK_ENOTFOUND, url, NULL, "not found (HTTP %ld)", status);
    *retry = status >= 500 || status == 408 || status == 429;
    if ((status == 429 || status == 503) && x->hd.retry_after_ms >= 0)
      return mpk_fail(err, MPK_EIO, url, NULL, "HTTP %ld (Retry-After: %lld s)", status, x->hd.retry_after_ms / 1000);
    return mpk_fail(err, MPK_EIO, url, NULL, "HTTP %ld", status);
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    if (deadline_hit)
      return mpk_fail(err, MPK_EIO, url, NULL,
                      "no complete response within the deadline of %ld s for this file (%llu bytes received; the "
                      "limit is --timeout): %s",
                      s->retry.deadline_secs, got, detail);
    *retry = true;
    if (strstr(detail, "too slow"))
      return mpk_fail(err, MPK_EIO, url, NULL,
                      "slower than the low-speed limit of %ld bytes/s for %ld s (%llu bytes received; "
                      "--low-speed, --low-speed-time): %s",
                      s->retry.low_speed_bytes, s->retry.low_speed_secs, got, detail);
    return mpk_fail(err, MPK_EIO, url, NULL, "%s", detail);
  }
  switch (rc) {
  case CURLE_UNSUPPORTED_PROTOCOL:
    return mpk_fail(err, MPK_EUNSUPPORTED, url, NULL,
                    "%s (redirects are followed only to http and https, never from https to http)", detail);
  case CURLE_URL_MALFORMAT:
  case CURLE_OUT_OF_MEMORY:
  case CURLE_TOO_MANY_REDIRECTS:
  case CURLE_PEER_FAILED_VERIFICATION:
    break;
  default:
    *retry = true; /* connection refused or reset, empty reply, a transfer cut short */
  }
  return mpk_fail(err, rc == CURLE_OUT_OF_MEMORY ? MPK_ENOMEM : MPK_EIO, url, NULL, "%s", detail);
}

/* The deadline passed (or would pass during the next backoff) after a failed try `last`. */
static int deadline_error(const mpk_src *s, const char *url, unsigned tries, unsigned long long got,
                          const mpk_error *last, mpk_error *err) {
  return mpk_fail(err, MPK_EIO, url, NULL,
                  "no complete response within the deadline of %ld s for this file (%u tr%s, %llu bytes received; "
                  "the limit is --timeout); the last try: %s",
                  s->retry.deadline_secs, tries, tries == 1 ? "y" : "ies", got, last->message);
}

/* After failed try `attempt` (error in *e, retryable or not): go on (true, after the backoff) or
   stop with *rc. */
static bool next_try(const mpk_src *s, const xfer *x, unsigned attempt, bool retry, double t_end, const char *url,
                     unsigned long long got, mpk_error *e, int *rc) {
  if (!retry || attempt >= s->retry.attempts) return false;
  unsigned ms = backoff_ms(s, attempt);
  /* 429 / 503 with Retry-After: the server's wait instead of the backoff (at most
     MPK_SRC_MAX_RETRY_AFTER_SECS; a wait beyond the deadline ends the tries below). */
  long status = 0;
  curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
  if ((status == 429 || status == 503) && x->hd.retry_after_ms >= 0) ms = (unsigned)x->hd.retry_after_ms;
  if (now_ms() + (s->retry.sleep_ms ? 0 : ms) >= t_end) {
    mpk_error last = *e;
    *rc = deadline_error(s, url, attempt, got, &last, e);
    return false;
  }
  sleep_ms(s, ms);
  return true;
}

static int rehash_prefix(int fd, uint64_t n, mpk_hasher *md, const char *url, mpk_error *err) {
  int rc = mpk_hasher_update_fd(md, fd, 0, n, NULL, 0, NULL, NULL, NULL);
  if (rc == MPK_ENOMEM) return mpk_fail(err, MPK_ENOMEM, url, NULL, "out of memory");
  if (rc) return mpk_fail(err, MPK_EIO, url, NULL, "cannot re-read the partial download: %s", errno ? strerror(errno) : "short");
  return 0;
}

static int http_fetch(mpk_src *s, mpk_src_fetch *f, mpk_hasher *md, const char *url, mpk_error *err) {
  CURL *h = f->curl ? f->curl : curl_easy_init();
  if (!h) return mpk_fail(err, MPK_ENOMEM, url, NULL, "cannot create a libcurl handle");
  xfer x = {.fetch = f, .md = md, .pos = f->offset, .wbuf = malloc(WBUF)};
  if (!x.wbuf) {
    if (!f->curl) curl_easy_cleanup(h);
    return mpk_fail(err, MPK_ENOMEM, url, NULL, "out of memory");
  }
  f->resumed_from = f->offset;
  double t_end = now_ms() + (double)s->retry.deadline_secs * 1000.0;
  mpk_error e;
  mpk_error_clear(&e);
  int rc = 0;
  for (unsigned attempt = 1;; attempt++) {
    x.start = x.kicked = x.pos;
    if (x.start >= f->size) { /* everything is here (the digest decides) */
      rc = 0;
      break;
    }
    long remain = (long)(t_end - now_ms());
    if (remain <= 0) {
      mpk_error last = e;
      rc = deadline_error(s, url, attempt - 1, (unsigned long long)x.pos, &last, &e);
      break;
    }
    setup_handle(s, h, url, &x, remain);
    char range[64];
    struct curl_slist *hdrs = NULL;
    if (x.start > 0) {
      snprintf(range, sizeof range, "%llu-", (unsigned long long)x.start);
      curl_easy_setopt(h, CURLOPT_RANGE, range);
      if (f->validator[0]) {
        char line[300];
        snprintf(line, sizeof line, "If-Range: %s", f->validator);
        hdrs = curl_slist_append(NULL, line);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
      }
    }
    CURLcode crc = curl_easy_perform(h);
    curl_slist_free_all(hdrs);
    /* What was received is kept, also from a failed attempt (a retry continues after it). */
    if (x.wlen && !flush_wbuf(&x) && crc == CURLE_OK) crc = CURLE_WRITE_ERROR;
    if (x.restarted) {
      f->resumed_from = 0;
      x.restarted = false;
    }
    if (crc == CURLE_OK && x.first) { /* an empty body: check_response never ran */
      x.first = false;
      long status = 0;
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
      f->http_status = (int)status;
    }
    if (crc == CURLE_OK) {
      rc = 0;
      if (x.pos != f->size)
        rc = mpk_fail(&e, MPK_EMISMATCH, url, NULL, "the response ends after %llu bytes, %llu declared",
                      (unsigned long long)x.pos, (unsigned long long)f->size);
      break;
    }
    bool retry;
    bool deadline_hit = crc == CURLE_OPERATION_TIMEDOUT && now_ms() >= t_end - 100;
    rc = classify(s, crc, &x, url, deadline_hit, &retry, &e);
    if (!next_try(s, &x, attempt, retry, t_end, url, (unsigned long long)x.pos, &e, &rc)) break;
    f->retries++;
  }
  if (rc && err) *err = e;
  if (!f->curl) curl_easy_cleanup(h);
  free(x.wbuf);
  return rc;
}

void *mpk_src_handle_new(void) { return mpk_curl_load(NULL) ? NULL : curl_easy_init(); }
void mpk_src_handle_free(void *h) {
  if (h) curl_easy_cleanup(h);
}
double mpk_src_now_ms(void) { return now_ms(); }
long mpk_src_deadline_secs(const mpk_src *s) { return s->retry.deadline_secs; }

int mpk_src_fetch_range(mpk_src *s, mpk_src_range *q, mpk_error *err) {
  q->retries = 0;
  q->http_status = 0;
  char *url = mpk_src_url(s, q->rel);
  xfer x = {.range = q, .wbuf = malloc(WBUF)};
  mpk_error e;
  mpk_error_clear(&e);
  int rc = 0;
  if (!url || !x.wbuf || !q->curl) rc = mpk_fail(&e, MPK_ENOMEM, q->rel, NULL, "out of memory");
  for (unsigned attempt = 1; !rc; attempt++) {
    if (q->from >= q->to) break;
    x.start = x.kicked = x.pos = q->from;
    long remain = (long)(q->t_end - now_ms());
    if (remain <= 0) {
      mpk_error last = e;
      rc = deadline_error(s, url, attempt - 1, (unsigned long long)x.pos, &last, &e);
      break;
    }
    setup_handle(s, q->curl, url, &x, remain);
    char range[64], line[300];
    snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)q->from, (unsigned long long)(q->to - 1));
    curl_easy_setopt(q->curl, CURLOPT_RANGE, range);
    struct curl_slist *hdrs = NULL;
    if (q->validator[0]) {
      snprintf(line, sizeof line, "If-Range: %s", q->validator);
      hdrs = curl_slist_append(NULL, line);
      curl_easy_setopt(q->curl, CURLOPT_HTTPHEADER, hdrs);
    }
    CURLcode crc = curl_easy_perform(q->curl);
    curl_slist_free_all(hdrs);
    /* What was received is kept, also from a failed attempt (a retry continues after it). */
    if (x.wlen && !flush_wbuf(&x) && crc == CURLE_OK) crc = CURLE_WRITE_ERROR;
    if (crc == CURLE_OK) {
      if (x.first) { /* an empty body: nothing of the range came */
        long status = 0;
        curl_easy_getinfo(q->curl, CURLINFO_RESPONSE_CODE, &status);
        q->http_status = (int)status;
      }
      if (q->from >= q->to) break;
      /* Ended short (a server may send less than asked): ask again for the rest. */
      rc = mpk_fail(&e, MPK_EIO, url, NULL, "the response for bytes %s ended after %llu bytes", range,
                    (unsigned long long)(x.pos - x.start));
      if (!next_try(s, &x, attempt, true, q->t_end, url, (unsigned long long)x.pos, &e, &rc)) break;
      rc = 0;
      q->retries++;
      continue;
    }
    bool retry;
    bool deadline_hit = crc == CURLE_OPERATION_TIMEDOUT && now_ms() >= q->t_end - 100;
    rc = classify(s, crc, &x, url, deadline_hit, &retry, &e);
    if (x.changed) {
      rc = MPK_SRC_CHANGED;
      break;
    }
    if (!next_try(s, &x, attempt, retry, q->t_end, url, (unsigned long long)x.pos, &e, &rc)) break;
    rc = 0;
    q->retries++;
  }
  if (rc && err) *err = e;
  free(x.wbuf);
  free(url);
  return rc;
}

static int dir_fetch(mpk_src *s, mpk_src_fetch *f, mpk_hasher *md, const char *path, mpk_error *err) {
  /* Beneath the source directory, never through a link out of it; a regular file (a FIFO cannot
     block the installer), checked before the first read. */
  int in;
  struct stat st;
  int rc = mpk_open_read_at(s->root_fd, s->base, f->rel, 0, "the package directory", &in, &st, err);
  if (rc) return rc;
  if ((uint64_t)st.st_size > f->size) {
    rc = mpk_fail(err, MPK_EMISMATCH, path, NULL, "%llu bytes, %llu declared: larger than declared",
                  (unsigned long long)st.st_size, (unsigned long long)f->size);
  } else if ((uint64_t)st.st_size < f->size) {
    rc = mpk_fail(err, MPK_EMISMATCH, path, NULL, "%llu bytes, %llu declared: shorter than declared",
                  (unsigned long long)st.st_size, (unsigned long long)f->size);
  }
  enum { CHUNK = 1 << 20 };
  uint8_t *buf = rc ? NULL : malloc(CHUNK);
  if (!rc && !buf) rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  f->resumed_from = f->offset;
  uint64_t kicked = f->offset;
  for (uint64_t at = f->offset; !rc && at < f->size;) {
    size_t want = f->size - at < CHUNK ? (size_t)(f->size - at) : CHUNK;
    ssize_t r = pread(in, buf, want, (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      rc = mpk_fail(err, r ? MPK_EIO : MPK_EMISMATCH, path, NULL, "cannot read: %s",
                    r ? strerror(errno) : "the file got shorter while being read");
      break;
    }
    if (mpk_write_all(f->fd, buf, (size_t)r) != 0) { /* fd is positioned at `at` by the caller below */
      int e = errno;
      rc = mpk_fail(err, MPK_EIO, path, NULL, "cannot write the copy: %s%s", strerror(e),
                    e == ENOSPC || e == EFBIG || e == EDQUOT ? " (the disk is full)" : "");
      break;
    }
    mpk_hasher_update(md, buf, (size_t)r);
    at += (uint64_t)r;
    start_writeback(f->fd, &kicked, at, at == f->size);
    if (f->on_bytes && f->on_bytes(f->ctx, at)) rc = mpk_fail(err, MPK_ECANCELLED, path, NULL, "cancelled");
  }
  free(buf);
  close(in);
  return rc;
}

int mpk_src_fetch_file(mpk_src *s, mpk_src_fetch *f, mpk_error *err) {
  f->hex[0] = '\0';
  f->restarts = f->retries = 0;
  f->http_status = 0;
  char *url = mpk_src_url(s, f->rel);
  mpk_hasher hasher, *md = &hasher;
  if (mpk_hasher_init(md, f->algo) || !url) {
    free(url);
    mpk_hasher_free(md);
    return mpk_fail(err, MPK_ENOMEM, f->rel, NULL, "out of memory");
  }
  /* Keep at most the declared size of what is there, and hash it again: a partial file is only
     trusted through the final digest. */
  struct stat st;
  int rc = 0;
  if (fstat(f->fd, &st) != 0) rc = mpk_fail(err, MPK_EIO, url, NULL, "cannot stat the download: %s", strerror(errno));
  if (!rc) {
    uint64_t have = (uint64_t)st.st_size;
    if (f->offset > have) f->offset = have;
    if (f->offset > f->size) f->offset = 0;
    if (have != f->offset && ftruncate(f->fd, (off_t)f->offset) != 0)
      rc = mpk_fail(err, MPK_EIO, url, NULL, "cannot truncate the partial download: %s", strerror(errno));
  }
  if (!rc && f->offset) rc = rehash_prefix(f->fd, f->offset, md, url, err);
  if (!rc && lseek(f->fd, (off_t)f->offset, SEEK_SET) < 0)
    rc = mpk_fail(err, MPK_EIO, url, NULL, "cannot seek: %s", strerror(errno));
  if (!rc) rc = s->http ? http_fetch(s, f, md, url, err) : dir_fetch(s, f, md, url, err);
  if (!rc && mpk_hasher_final_hex(md, f->hex)) rc = mpk_fail(err, MPK_EIO, url, NULL, "%s failed", f->algo == MPK_DIGEST_MD5 ? "MD5" : "SHA-256");
  mpk_hasher_free(md);
  free(url);
  return rc;
}

/* ---------------------------------------------------------------- small documents */

static int dir_read_small(mpk_src *s, const char *rel, size_t max, uint8_t **data, size_t *len, mpk_error *err) {
  int fd;
  struct stat st;
  int rc = mpk_open_read_at(s->root_fd, s->base, rel, max, "the package directory", &fd, &st, err);
  if (rc) return rc;
  size_t n = (size_t)st.st_size, got = 0;
  uint8_t *buf = malloc(n + 1);
  if (!buf) rc = mpk_fail(err, MPK_ENOMEM, rel, NULL, "out of memory");
  while (!rc && got < n) {
    ssize_t r = pread(fd, buf + got, n - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) rc = mpk_fail(err, MPK_EIO, rel, NULL, "cannot read: %s", r ? strerror(errno) : "the file got shorter");
    else got += (size_t)r;
  }
  close(fd);
  if (rc) {
    free(buf);
    return rc;
  }
  buf[n] = 0;
  *data = buf;
  *len = n;
  return 0;
}

int mpk_src_read_small(mpk_src *s, const char *rel, size_t max, uint8_t **data, size_t *len, mpk_error *err) {
  *data = NULL;
  *len = 0;
  if (!s->http) return dir_read_small(s, rel, max, data, len, err);
  char *url = mpk_src_url(s, rel);
  if (!url) return mpk_fail(err, MPK_ENOMEM, rel, NULL, "out of memory");
  int rc = 0;
  CURL *h = curl_easy_init();
  xfer x = {.max = max, .buf = malloc(max + 1)};
  mpk_error e;
  mpk_error_clear(&e);
  if (!h || !x.buf) rc = mpk_fail(&e, MPK_ENOMEM, url, NULL, "out of memory");
  double t_end = now_ms() + (double)s->retry.deadline_secs * 1000.0;
  for (unsigned attempt = 1; !rc; attempt++) {
    x.len = 0;
    long remain = (long)(t_end - now_ms());
    if (remain <= 0) {
      mpk_error last = e;
      rc = deadline_error(s, url, attempt - 1, 0, &last, &e);
      break;
    }
    setup_handle(s, h, url, &x, remain);
    CURLcode crc = curl_easy_perform(h);
    if (crc == CURLE_OK) break;
    bool retry;
    bool deadline_hit = crc == CURLE_OPERATION_TIMEDOUT && now_ms() >= t_end - 100;
    rc = classify(s, crc, &x, url, deadline_hit, &retry, &e);
    if (!next_try(s, &x, attempt, retry, t_end, url, (unsigned long long)x.len, &e, &rc)) break;
    rc = 0;
  }
  if (h) curl_easy_cleanup(h);
  if (!rc) {
    x.buf[x.len] = 0;
    *data = x.buf;
    *len = x.len;
  } else {
    free(x.buf);
    if (err) *err = e;
  }
  free(url);
  return rc;
}
