/* Fuzz target: HTTP response headers as libcurl hands them to the installer, one line at a time
   (mpk_src_header_line), and the check of each redirect hop (mpk_src_redirect_allowed) on the
   Location they carry. Lines are the input split after each '\n'. Invariants: the limits hold (bytes
   and lines of one response, responses of one transfer), every field stays NUL-terminated within its
   buffer, numbers are -1 or non-negative (a Content-Range's end not before its start, Retry-After
   within MPK_SRC_MAX_RETRY_AFTER_SECS), and no hop is allowed from https to plain http or to a
   scheme other than http(s). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "fetch/source.h"

static void check_hop(const char *from, const char *location) {
  char why[300];
  bool to_https = false;
  bool ok = mpk_src_redirect_allowed(from, location, &to_https, why, sizeof why);
  if (memchr(why, 0, sizeof why) == NULL) __builtin_trap();
  if (!ok) return;
  if (strcmp(from, "https") == 0 && !to_https) __builtin_trap(); /* never https -> http */
  const char *p = location;
  while (*p == ' ' || *p == '\t') p++;
  const char *colon = strchr(p, ':');
  /* an absolute reference that is allowed names http or https */
  if (colon && strcspn(p, "/?#") > (size_t)(colon - p)) {
    size_t n = (size_t)(colon - p);
    bool scheme = n > 0;
    for (size_t i = 0; i < n && scheme; i++) {
      char c = p[i];
      scheme = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    }
    if (scheme && !((n == 4 && strncasecmp(p, "http", 4) == 0) || (n == 5 && strncasecmp(p, "https", 5) == 0)))
      __builtin_trap();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_src_headers h;
  mpk_src_headers_init(&h);
  const char *p = (const char *)data, *end = p + size;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
    bool go_on = mpk_src_header_line(&h, p, n);
    if (h.bytes > MPK_SRC_MAX_HEADER_BYTES || h.lines > MPK_SRC_MAX_HEADER_LINES || h.responses > MPK_SRC_MAX_RESPONSES)
      __builtin_trap();
    if (!memchr(h.etag, 0, sizeof h.etag) || !memchr(h.last_modified, 0, sizeof h.last_modified) ||
        !memchr(h.location, 0, sizeof h.location) || !memchr(h.why, 0, sizeof h.why))
      __builtin_trap();
    if (h.content_length < -1 || h.content_range_start < -1 || h.status < 0 || h.status > 999) __builtin_trap();
    /* a range's end is at or after its start; Retry-After is -1 or a wait of at most the cap */
    if (h.content_range_total < -1 || h.content_range_end < -1 ||
        (h.content_range_end >= 0 && h.content_range_end < h.content_range_start))
      __builtin_trap();
    if (h.retry_after_ms < -1 || h.retry_after_ms > (long long)MPK_SRC_MAX_RETRY_AFTER_SECS * 1000) __builtin_trap();
    if (!go_on) {
      if (!h.why[0]) __builtin_trap(); /* a refusal says which limit */
      break;
    }
    if (h.complete && h.location[0]) {
      check_hop("https", h.location);
      check_hop("http", h.location);
    }
    p += n;
  }
  /* the whole input as one Location value, too */
  char loc[512];
  size_t n = size < sizeof loc - 1 ? size : sizeof loc - 1;
  memcpy(loc, data, n);
  loc[n] = '\0';
  check_hop("https", loc);
  check_hop("http", loc);
  return 0;
}
