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

#include <curl/curl.h>
#include <openssl/evp.h>

#include "source.h"

struct mpk_src {
  char *location; /* as given */
  char *base;     /* URL without trailing slashes, or the directory */
  bool http;
  mpk_src_retry retry;
};

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
  if (retry) s->retry = *retry;
  if (!s->retry.attempts) s->retry.attempts = 5;
  if (!s->retry.base_ms) s->retry.base_ms = 250;
  if (!s->retry.max_ms) s->retry.max_ms = 8000;
  if (!s->retry.low_speed_secs) s->retry.low_speed_secs = 30;
  s->http = has_prefix_ci(location, "http://") || has_prefix_ci(location, "https://");
  size_t n = strlen(s->base);
  while (n > 1 && s->base[n - 1] == '/') s->base[--n] = '\0';
  if (s->http) {
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
      mpk_src_free(s);
      return mpk_fail(err, MPK_EIO, location, NULL, "cannot initialise libcurl: %s", curl_easy_strerror(curl_init_rc));
    }
  } else if (!mpk_is_dir(s->base)) {
    mpk_src_free(s);
    return mpk_fail(err, MPK_ENOTFOUND, location, NULL,
                    "the package source is neither an http(s) URL nor a directory");
  }
  *out = s;
  return 0;
}

void mpk_src_free(mpk_src *s) {
  if (!s) return;
  free(s->location);
  free(s->base);
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

static void backoff(const mpk_src *s, unsigned attempt) {
  unsigned ms = s->retry.base_ms;
  for (unsigned i = 1; i < attempt && ms < s->retry.max_ms; i++) ms *= 2;
  if (ms > s->retry.max_ms) ms = s->retry.max_ms;
  if (s->retry.sleep_ms) {
    s->retry.sleep_ms(s->retry.sleep_ctx, ms);
    return;
  }
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---------------------------------------------------------------- one HTTP transfer */

typedef struct xfer {
  CURL *h;
  /* a file fetch (fetch != NULL) or a small read into buf */
  mpk_src_fetch *fetch;
  EVP_MD_CTX *md;
  uint64_t pos;   /* bytes of the file kept (and hashed) so far */
  uint64_t start; /* the offset asked for in this attempt */
  uint64_t kicked; /* writeback started for [.., kicked) */
  uint8_t *wbuf;   /* received bytes [pos - wlen, pos), hashed, not yet written */
  size_t wlen;
  uint8_t *buf;
  size_t len, max;
  /* this response */
  bool first, too_long, io_error, cancelled, bad_range, restarted;
  int io_errno;
  long long content_range_start, content_length;
  char etag[256], last_modified[256];
} xfer;

static void copy_header_value(char *dst, size_t cap, const char *v, size_t n) {
  while (n && (*v == ' ' || *v == '\t')) v++, n--;
  while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  if (n >= cap) n = cap - 1; /* a validator this long is cut: If-Range then fails safe (whole file) */
  memcpy(dst, v, n);
  dst[n] = '\0';
}

static size_t on_header(char *data, size_t size, size_t nitems, void *ctx) {
  xfer *x = ctx;
  size_t n = size * nitems;
  if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) { /* a new response (after a redirect or a 100) */
    x->content_range_start = -1;
    x->content_length = -1;
    x->etag[0] = x->last_modified[0] = '\0';
    return n;
  }
  const char *colon = memchr(data, ':', n);
  if (!colon) return n;
  size_t klen = (size_t)(colon - data), vlen = n - klen - 1;
  const char *v = colon + 1;
  char tmp[64];
  if (klen == 4 && strncasecmp(data, "etag", 4) == 0) {
    copy_header_value(x->etag, sizeof x->etag, v, vlen);
  } else if (klen == 13 && strncasecmp(data, "last-modified", 13) == 0) {
    copy_header_value(x->last_modified, sizeof x->last_modified, v, vlen);
  } else if (klen == 13 && strncasecmp(data, "content-range", 13) == 0) {
    copy_header_value(tmp, sizeof tmp, v, vlen);
    unsigned long long a;
    if (sscanf(tmp, "bytes %llu-", &a) == 1) x->content_range_start = (long long)a;
  } else if (klen == 14 && strncasecmp(data, "content-length", 14) == 0) {
    copy_header_value(tmp, sizeof tmp, v, vlen);
    char *end;
    errno = 0;
    unsigned long long a = strtoull(tmp, &end, 10);
    if (!errno && end != tmp && !*end) x->content_length = (long long)a;
  }
  return n;
}

/* The first body bytes of a response: is it what was asked for? */
static bool check_response(xfer *x) {
  long status = 0;
  curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
  mpk_src_fetch *f = x->fetch;
  if (f) {
    f->http_status = (int)status;
    if (status == 206) {
      if (x->start == 0 || x->content_range_start != (long long)x->start) {
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
      EVP_DigestInit_ex(x->md, EVP_sha256(), NULL);
      x->pos = 0;
      x->start = 0;
      x->kicked = 0;
      x->restarted = true;
      f->restarts++;
    }
    uint64_t want = f->size - x->pos;
    if (x->content_length >= 0 && (uint64_t)x->content_length > want) {
      x->too_long = true; /* refused before a byte of it is written */
      return false;
    }
    const char *val = x->etag[0] ? x->etag : x->last_modified;
    snprintf(f->validator, sizeof f->validator, "%s", val);
    if (f->on_validator) f->on_validator(f->ctx, f->validator);
  } else if (x->content_length >= 0 && (uint64_t)x->content_length > x->max) {
    x->too_long = true;
    return false;
  }
  return true;
}

/* Write the gathered bytes, [pos - wlen, pos), start their writeback, report progress. false:
   a write failed (io_error) or the caller cancelled. */
static bool flush_wbuf(xfer *x) {
  mpk_src_fetch *f = x->fetch;
  uint64_t at = x->pos - x->wlen;
  for (size_t done = 0; done < x->wlen;) {
    ssize_t w = pwrite(f->fd, x->wbuf + done, x->wlen - done, (off_t)(at + done));
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
  start_writeback(f->fd, &x->kicked, x->pos, x->pos == f->size);
  if (f->on_bytes && f->on_bytes(f->ctx, x->pos)) {
    x->cancelled = true;
    return false;
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
  EVP_DigestUpdate(x->md, data, n);
  for (size_t done = 0; done < n;) { /* libcurl hands over at most 16 KiB a call: gather them */
    size_t k = n - done < WBUF - x->wlen ? n - done : WBUF - x->wlen;
    memcpy(x->wbuf + x->wlen, data + done, k);
    x->wlen += k;
    x->pos += k;
    done += k;
    if (x->wlen == WBUF && !flush_wbuf(x)) return 0;
  }
  return n;
}

static void setup_handle(mpk_src *s, CURL *h, const char *url, xfer *x) {
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 15L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, s->retry.low_speed_secs);
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
  x->h = h;
  x->first = true;
  x->too_long = x->io_error = x->cancelled = x->bad_range = false;
  x->content_range_start = x->content_length = -1;
  x->etag[0] = x->last_modified[0] = '\0';
}

/* What a failed perform means: retry it or not, and the error. */
static int classify(CURLcode rc, xfer *x, const char *url, bool *retry, mpk_error *err) {
  *retry = false;
  long status = 0;
  curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
  if (x->cancelled) return mpk_fail(err, MPK_ECANCELLED, url, NULL, "cancelled");
  if (x->io_error)
    return mpk_fail(err, MPK_EIO, url, NULL, "cannot write the download: %s%s", strerror(x->io_errno),
                    x->io_errno == ENOSPC || x->io_errno == EFBIG || x->io_errno == EDQUOT ? " (the disk is full)" : "");
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
    return mpk_fail(err, MPK_EIO, url, NULL, "HTTP %ld", status);
  }
  switch (rc) {
  case CURLE_UNSUPPORTED_PROTOCOL:
  case CURLE_URL_MALFORMAT:
  case CURLE_OUT_OF_MEMORY:
  case CURLE_TOO_MANY_REDIRECTS:
  case CURLE_PEER_FAILED_VERIFICATION:
    break;
  default:
    *retry = true; /* connection refused or reset, empty reply, timeouts, a transfer cut short */
  }
  return mpk_fail(err, rc == CURLE_OUT_OF_MEMORY ? MPK_ENOMEM : MPK_EIO, url, NULL, "%s", curl_easy_strerror(rc));
}

static int rehash_prefix(int fd, uint64_t n, EVP_MD_CTX *md, const char *url, mpk_error *err) {
  enum { CHUNK = 1 << 20 };
  uint8_t *buf = malloc(CHUNK);
  if (!buf) return mpk_fail(err, MPK_ENOMEM, url, NULL, "out of memory");
  for (uint64_t at = 0; at < n;) {
    size_t want = n - at < CHUNK ? (size_t)(n - at) : CHUNK;
    ssize_t r = pread(fd, buf, want, (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      free(buf);
      return mpk_fail(err, MPK_EIO, url, NULL, "cannot re-read the partial download: %s", r ? strerror(errno) : "short");
    }
    EVP_DigestUpdate(md, buf, (size_t)r);
    at += (uint64_t)r;
  }
  free(buf);
  return 0;
}

static int finish_digest(EVP_MD_CTX *md, char hex[65]) {
  uint8_t d[EVP_MAX_MD_SIZE];
  unsigned int dn = 0;
  if (!EVP_DigestFinal_ex(md, d, &dn) || dn != MPK_SHA256_LEN) return MPK_EIO;
  mpk_hex(d, dn, hex);
  return 0;
}

static int http_fetch(mpk_src *s, mpk_src_fetch *f, EVP_MD_CTX *md, const char *url, mpk_error *err) {
  CURL *h = curl_easy_init();
  if (!h) return mpk_fail(err, MPK_ENOMEM, url, NULL, "cannot create a libcurl handle");
  xfer x = {.fetch = f, .md = md, .pos = f->offset, .wbuf = malloc(WBUF)};
  if (!x.wbuf) {
    curl_easy_cleanup(h);
    return mpk_fail(err, MPK_ENOMEM, url, NULL, "out of memory");
  }
  f->resumed_from = f->offset;
  int rc = 0;
  for (unsigned attempt = 1;; attempt++) {
    x.start = x.kicked = x.pos;
    setup_handle(s, h, url, &x);
    char range[64];
    struct curl_slist *hdrs = NULL;
    if (x.start >= f->size) break; /* everything is already here */
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
        rc = mpk_fail(err, MPK_EMISMATCH, url, NULL, "the response ends after %llu bytes, %llu declared",
                      (unsigned long long)x.pos, (unsigned long long)f->size);
      break;
    }
    bool retry;
    rc = classify(crc, &x, url, &retry, err);
    if (!retry || attempt >= s->retry.attempts) break;
    f->retries++;
    backoff(s, attempt);
  }
  curl_easy_cleanup(h);
  free(x.wbuf);
  return rc;
}

static int dir_fetch(mpk_src *s, mpk_src_fetch *f, EVP_MD_CTX *md, const char *path, mpk_error *err) {
  int in = open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return mpk_fail(err, errno == ENOENT ? MPK_ENOTFOUND : MPK_EIO, path, NULL, "%s",
                    errno == ENOENT ? "not found" : strerror(errno));
  /* A symbolic link inside the package may not lead out of it. */
  if (!mpk_path_resolves_inside(s->base, path)) {
    close(in);
    return mpk_fail(err, MPK_EMALFORMED, path, NULL, "resolves outside the package directory");
  }
  struct stat st;
  int rc = 0;
  if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
    rc = mpk_fail(err, MPK_EMALFORMED, path, NULL, "not a regular file");
  } else if ((uint64_t)st.st_size > f->size) {
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
    EVP_DigestUpdate(md, buf, (size_t)r);
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
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  if (!url || !md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL)) {
    free(url);
    EVP_MD_CTX_free(md);
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
  if (!rc && finish_digest(md, f->hex)) rc = mpk_fail(err, MPK_EIO, url, NULL, "SHA-256 failed");
  EVP_MD_CTX_free(md);
  free(url);
  return rc;
}

/* ---------------------------------------------------------------- small documents */

int mpk_src_read_small(mpk_src *s, const char *rel, size_t max, uint8_t **data, size_t *len, mpk_error *err) {
  *data = NULL;
  *len = 0;
  char *url = mpk_src_url(s, rel);
  if (!url) return mpk_fail(err, MPK_ENOMEM, rel, NULL, "out of memory");
  int rc = 0;
  if (!s->http) {
    mpk_mapped m;
    if (!mpk_file_exists(url)) rc = mpk_fail(err, MPK_ENOTFOUND, url, NULL, "not found");
    else if (!mpk_path_resolves_inside(s->base, url))
      rc = mpk_fail(err, MPK_EMALFORMED, url, NULL, "resolves outside the package directory");
    else if (!(rc = mpk_map_file(url, max, &m, err))) {
      if (!(*data = malloc(m.size + 1))) rc = mpk_fail(err, MPK_ENOMEM, url, NULL, "out of memory");
      else {
        memcpy(*data, m.data, m.size);
        (*data)[m.size] = 0;
        *len = m.size;
      }
      mpk_unmap_file(&m);
    }
    free(url);
    return rc;
  }
  CURL *h = curl_easy_init();
  xfer x = {.max = max, .buf = malloc(max + 1)};
  if (!h || !x.buf) rc = mpk_fail(err, MPK_ENOMEM, url, NULL, "out of memory");
  for (unsigned attempt = 1; !rc; attempt++) {
    x.len = 0;
    setup_handle(s, h, url, &x);
    CURLcode crc = curl_easy_perform(h);
    if (crc == CURLE_OK) break;
    bool retry;
    rc = classify(crc, &x, url, &retry, err);
    if (!retry || attempt >= s->retry.attempts) break;
    rc = 0;
    backoff(s, attempt);
  }
  if (h) curl_easy_cleanup(h);
  if (!rc) {
    x.buf[x.len] = 0;
    *data = x.buf;
    *len = x.len;
  } else {
    free(x.buf);
  }
  free(url);
  return rc;
}
