/* WHATWG URL parsing for the special schemes http and https (url.h, docs/mlc-urls.md). The state
   machine of the URL Standard ("basic URL parser"), written as straight-line code since only
   special schemes are handled: scheme, authority (userinfo, host, port), path with dot segments,
   query, fragment, and relative references against a base. Percent-encode sets as Node 20 (ada)
   applies them — the reference WebLLM 0.2.86 was checked with: '^' is not in the path set.
   Linear in the input: one pass, segments popped by truncation. */
#include "core/url.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/core.h"

/* ---------------------------------------------------------------- errors */

/* The input quoted for a message: printable ASCII kept, the rest escaped, cut at 160 bytes. */
static void quote(const char *s, char *out, size_t cap) {
  size_t o = 0, i = 0;
  for (; s[i] && o + 8 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    if (i >= 160) break;
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
      out[o++] = (char)c;
    else
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
  }
  if (s[i] && o + 4 < cap) { memcpy(out + o, "...", 3); o += 3; }
  out[o] = 0;
}

typedef struct parser {
  const char *input; /* as given, for messages */
  const char *s;     /* cleaned: trimmed, tabs and newlines removed */
  size_t n;
  mpk_error *err;
  int rc; /* the code of the last failure */
} parser;

__attribute__((format(printf, 3, 4))) static int fail(parser *P, int code, const char *fmt, ...) {
  char q[800], why[400];
  quote(P->input, q, sizeof q);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return P->rc = mpk_fail(P->err, code, NULL, NULL, "URL \"%s\": %s", q, why);
}

/* ---------------------------------------------------------------- percent-encoding */

enum { SET_FRAGMENT, SET_QUERY, SET_PATH, SET_USERINFO };

static bool in_set(unsigned char c, int set) {
  if (c < 0x20 || c > 0x7e) return true; /* the C0 control percent-encode set */
  switch (set) {
  case SET_FRAGMENT: return c == ' ' || c == '"' || c == '<' || c == '>' || c == '`';
  case SET_QUERY: return c == ' ' || c == '"' || c == '#' || c == '<' || c == '>' || c == '\''; /* special-query */
  case SET_USERINFO:
    if (c == '/' || c == ':' || c == ';' || c == '=' || c == '@' || (c >= '[' && c <= '^') || c == '|') return true;
    /* fall through */
  default: /* path */
    return c == ' ' || c == '"' || c == '#' || c == '<' || c == '>' || c == '?' || c == '`' || c == '{' || c == '}';
  }
}

static void put_encoded(mpk_buf *b, const char *s, size_t n, int set) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (in_set(c, set)) {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      mpk_buf_put(b, e, 3);
    } else {
      mpk_buf_putc(b, (char)c);
    }
  }
}

static char *encoded(const char *s, size_t n, int set) {
  mpk_buf b = {0};
  put_encoded(&b, s, n, set);
  mpk_buf_putc(&b, 0); /* an empty string is still allocated */
  b.len--;
  return mpk_buf_take(&b, NULL);
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static bool valid_utf8(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c < 0x80) { i++; continue; }
    size_t len;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

/* ---------------------------------------------------------------- hosts */

/* An IPv4 number (WHATWG "IPv4 number parser"): decimal, 0x hex or 0 octal; saturates above
   2^32 (every such value is refused anyway). -1: not a number. */
static int64_t ipv4_number(const char *s, size_t n) {
  if (n == 0) return -1;
  int radix = 10;
  if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) { radix = 16; s += 2; n -= 2; }
  else if (n >= 2 && s[0] == '0') { radix = 8; s++; n--; }
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    int d = hexval((unsigned char)s[i]);
    if (d < 0 || d >= radix) return -1;
    v = v * radix + d;
    if (v > ((int64_t)1 << 40)) v = (int64_t)1 << 40;
  }
  return v;
}

/* The last label (a trailing empty one ignored) is a number: the host must be an IPv4 address. */
static bool ends_in_number(const char *s, size_t n) {
  if (n && s[n - 1] == '.') n--; /* a trailing empty label is ignored */
  size_t start = n;
  while (start > 0 && s[start - 1] != '.') start--;
  const char *last = s + start;
  size_t len = n - start;
  if (len == 0) return false;
  bool digits = true;
  for (size_t i = 0; i < len; i++) digits = digits && last[i] >= '0' && last[i] <= '9';
  return digits || ipv4_number(last, len) >= 0;
}

static int parse_ipv4(parser *P, const char *s, size_t n, char **out) {
  int64_t nums[4];
  size_t count = 0, start = 0;
  if (n && s[n - 1] == '.') n--; /* one trailing dot is allowed */
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '.') continue;
    if (count == 4) return fail(P, MPK_EINVAL, "IPv4 host has more than 4 parts");
    int64_t v = ipv4_number(s + start, i - start);
    if (v < 0)
      return fail(P, MPK_EINVAL, "IPv4 host part \"%.*s\" is not a number", (int)(i - start) > 64 ? 64 : (int)(i - start),
                  s + start);
    nums[count++] = v;
    start = i + 1;
  }
  for (size_t i = 0; i + 1 < count; i++)
    if (nums[i] > 255) return fail(P, MPK_EINVAL, "IPv4 host part %zu is above 255", i + 1);
  int64_t limit = (int64_t)1 << (8 * (5 - count));
  if (nums[count - 1] >= limit)
    return fail(P, MPK_EINVAL, "IPv4 host's last part is too large (at most %lld)", (long long)(limit - 1));
  uint32_t a = (uint32_t)nums[count - 1];
  for (size_t i = 0; i + 1 < count; i++) a += (uint32_t)nums[i] << (8 * (3 - i));
  char buf[16];
  snprintf(buf, sizeof buf, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
  *out = strdup(buf);
  return *out ? 0 : fail(P, MPK_ENOMEM, "out of memory");
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }

/* WHATWG "IPv6 parser", then the compressed serialization, with the brackets. */
static int parse_ipv6(parser *P, const char *s, size_t n, char **out) {
  uint16_t a[8] = {0};
  int piece = 0, compress = -1;
  size_t p = 0;
#define C (p < n ? (unsigned char)s[p] : -1)
  if (C == ':') {
    if (p + 1 >= n || s[p + 1] != ':') return fail(P, MPK_EINVAL, "IPv6 host starts with a single ':'");
    p += 2;
    compress = ++piece;
  }
  while (C != -1) {
    if (piece == 8) return fail(P, MPK_EINVAL, "IPv6 host has more than 8 pieces");
    if (C == ':') {
      if (compress != -1) return fail(P, MPK_EINVAL, "IPv6 host has more than one '::'");
      p++;
      compress = ++piece;
      continue;
    }
    unsigned value = 0, length = 0;
    while (length < 4 && C != -1 && hexval((unsigned char)C) >= 0) {
      value = value * 16 + (unsigned)hexval((unsigned char)C);
      p++;
      length++;
    }
    if (C == '.') {
      if (length == 0) return fail(P, MPK_EINVAL, "IPv6 host's IPv4 part starts with '.'");
      p -= length;
      if (piece > 6) return fail(P, MPK_EINVAL, "IPv6 host's IPv4 part comes too late");
      int seen = 0;
      while (C != -1) {
        int v4 = -1;
        if (seen > 0) {
          if (C == '.' && seen < 4) p++;
          else return fail(P, MPK_EINVAL, "IPv6 host's IPv4 part is malformed");
        }
        if (C == -1 || !is_digit(C)) return fail(P, MPK_EINVAL, "IPv6 host's IPv4 part is malformed");
        while (C != -1 && is_digit(C)) {
          int d = C - '0';
          if (v4 == -1) v4 = d;
          else if (v4 == 0) return fail(P, MPK_EINVAL, "IPv6 host's IPv4 part has a leading zero");
          else v4 = v4 * 10 + d;
          if (v4 > 255) return fail(P, MPK_EINVAL, "IPv6 host's IPv4 part is above 255");
          p++;
        }
        a[piece] = (uint16_t)(a[piece] * 0x100 + v4);
        seen++;
        if (seen == 2 || seen == 4) piece++;
      }
      if (seen != 4) return fail(P, MPK_EINVAL, "IPv6 host's IPv4 part has fewer than 4 numbers");
      break;
    } else if (C == ':') {
      p++;
      if (C == -1) return fail(P, MPK_EINVAL, "IPv6 host ends with a single ':'");
    } else if (C != -1) {
      return fail(P, MPK_EINVAL, "IPv6 host holds '%c'", C >= 0x21 && C < 0x7f ? C : '?');
    }
    a[piece++] = (uint16_t)value;
  }
#undef C
  if (compress != -1) {
    int swaps = piece - compress;
    piece = 7;
    while (piece != 0 && swaps > 0) {
      uint16_t t = a[piece];
      a[piece] = a[compress + swaps - 1];
      a[compress + swaps - 1] = t;
      piece--;
      swaps--;
    }
  } else if (piece != 8) {
    return fail(P, MPK_EINVAL, "IPv6 host has fewer than 8 pieces");
  }
  /* the first longest run of two or more zero pieces is compressed */
  int best = -1, best_len = 1;
  for (int i = 0; i < 8;) {
    if (a[i]) { i++; continue; }
    int j = i;
    while (j < 8 && !a[j]) j++;
    if (j - i > best_len) { best = i; best_len = j - i; }
    i = j;
  }
  char buf[48];
  size_t o = 0;
  buf[o++] = '[';
  for (int i = 0; i < 8; i++) {
    if (i == best) {
      o += (size_t)snprintf(buf + o, sizeof buf - o, i == 0 ? "::" : ":");
      i += best_len - 1;
      continue;
    }
    o += (size_t)snprintf(buf + o, sizeof buf - o, "%x%s", a[i], i != 7 ? ":" : "");
  }
  buf[o++] = ']';
  buf[o] = 0;
  *out = strdup(buf);
  return *out ? 0 : fail(P, MPK_ENOMEM, "out of memory");
}

static bool forbidden_domain(unsigned char c) {
  return c <= 0x20 || c == 0x7f || c >= 0x80 || strchr("#%/:<>?@[\\]^|", c) != NULL;
}

/* The WHATWG host parser for a special URL (not opaque). */
static int parse_host(parser *P, const char *s, size_t n, char **out) {
  if (n && s[0] == '[') {
    if (n < 2 || s[n - 1] != ']') return fail(P, MPK_EINVAL, "IPv6 host has no closing ']'");
    return parse_ipv6(P, s + 1, n - 2, out);
  }
  char *d = malloc(n + 1);
  if (!d) return fail(P, MPK_ENOMEM, "out of memory");
  size_t m = 0;
  bool ascii = true;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%' && i + 2 < n && hexval((unsigned char)s[i + 1]) >= 0 &&
        hexval((unsigned char)s[i + 2]) >= 0) {
      c = (unsigned char)(hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]));
      i += 2;
    }
    if (c >= 0x80) ascii = false;
    d[m++] = (char)((c >= 'A' && c <= 'Z') ? c + 32 : c);
  }
  d[m] = 0;
  int rc = 0;
  if (!ascii) {
    rc = valid_utf8((const unsigned char *)d, m)
             ? fail(P, MPK_EUNSUPPORTED, "internationalized (non-ASCII) host names are not supported: "
                                         "no IDNA/UTS-46 processing here (docs/mlc-urls.md)")
             : fail(P, MPK_EINVAL, "host is not UTF-8 once percent-decoded");
    free(d);
    return rc;
  }
  for (size_t i = 0; i < m; i++)
    if (forbidden_domain((unsigned char)d[i])) {
      unsigned char c = (unsigned char)d[i];
      rc = c > 0x20 && c < 0x7f ? fail(P, MPK_EINVAL, "host holds the forbidden code point '%c'", c)
                                : fail(P, MPK_EINVAL, "host holds the forbidden code point U+%04X", c);
      free(d);
      return rc;
    }
  for (size_t i = 0; i < m; i++)
    if ((i == 0 || d[i - 1] == '.') && m - i >= 4 && memcmp(d + i, "xn--", 4) == 0) {
      free(d);
      return fail(P, MPK_EUNSUPPORTED, "internationalized host names (IDNA, \"xn--\" labels) are not supported "
                                       "(docs/mlc-urls.md)");
    }
  if (ends_in_number(d, m)) {
    rc = parse_ipv4(P, d, m, out);
    free(d);
    return rc;
  }
  *out = d;
  return 0;
}

/* ---------------------------------------------------------------- the parser */

static bool is_slash(unsigned char c) { return c == '/' || c == '\\'; }
static bool is_alpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

static bool ieq(const char *s, size_t n, const char *lit) {
  if (strlen(lit) != n) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    if (c != lit[i]) return false;
  }
  return true;
}
static bool single_dot(const char *s, size_t n) { return ieq(s, n, ".") || ieq(s, n, "%2e"); }
static bool double_dot(const char *s, size_t n) {
  return ieq(s, n, "..") || ieq(s, n, ".%2e") || ieq(s, n, "%2e.") || ieq(s, n, "%2e%2e");
}

/* Remove the last path segment ("shorten"): "/a/b" -> "/a", "/a" -> "". */
static void shorten(mpk_buf *path) {
  while (path->len > 0 && path->data[path->len - 1] != '/') path->len--;
  if (path->len > 0) path->len--;
}

/* The authority from p: userinfo, host, port. Returns the index after it, or -1 (error set). */
static long parse_authority(parser *P, size_t p, mpk_url *u) {
  const char *s = P->s;
  size_t end = p;
  while (end < P->n && !is_slash((unsigned char)s[end]) && s[end] != '?' && s[end] != '#') end++;
  size_t at = end;
  for (size_t i = end; i > p; i--)
    if (s[i - 1] == '@') { at = i - 1; break; }
  size_t h = p;
  if (at != end) {
    const char *colon = memchr(s + p, ':', at - p);
    size_t ulen = colon ? (size_t)(colon - (s + p)) : at - p;
    u->username = encoded(s + p, ulen, SET_USERINFO);
    u->password = colon ? encoded(colon + 1, at - p - ulen - 1, SET_USERINFO) : strdup("");
    if (!u->username || !u->password) return fail(P, MPK_ENOMEM, "out of memory"), -1;
    if (at + 1 == end) return fail(P, MPK_EINVAL, "no host after the userinfo's '@'"), -1;
    h = at + 1;
  } else {
    u->username = strdup("");
    u->password = strdup("");
    if (!u->username || !u->password) return fail(P, MPK_ENOMEM, "out of memory"), -1;
  }
  size_t colon = end;
  bool in_brackets = false;
  for (size_t i = h; i < end; i++) {
    if (s[i] == '[') in_brackets = true;
    else if (s[i] == ']') in_brackets = false;
    else if (s[i] == ':' && !in_brackets) { colon = i; break; }
  }
  if (colon == h) return fail(P, MPK_EINVAL, "empty host"), -1;
  if (parse_host(P, s + h, colon - h, &u->host)) return -1; /* P->rc set */
  u->port = -1;
  if (colon < end) {
    unsigned long v = 0;
    for (size_t i = colon + 1; i < end; i++) {
      if (!is_digit((unsigned char)s[i])) {
        char port[40], q[200];
        snprintf(port, sizeof port, "%.*s", (int)(end - colon - 1 > 32 ? 32 : end - colon - 1), s + colon + 1);
        quote(port, q, sizeof q); /* printable ASCII in the message, whatever the port holds */
        return fail(P, MPK_EINVAL, "port \"%s\" is not a number", q), -1;
      }
      v = v * 10 + (unsigned long)(s[i] - '0');
      if (v > 65535) return fail(P, MPK_EINVAL, "port is out of range (at most 65535)"), -1;
    }
    if (end > colon + 1 && v != (u->https ? 443u : 80u)) u->port = (int)v;
  }
  return (long)end;
}

/* query and fragment states, from the '?' or '#' at e (or e == n: nothing). */
static int parse_rest(parser *P, size_t e, mpk_url *u) {
  const char *s = P->s;
  size_t n = P->n;
  if (e < n && s[e] == '?') {
    size_t q = e + 1, qe = q;
    while (qe < n && s[qe] != '#') qe++;
    free(u->query);
    u->query = encoded(s + q, qe - q, SET_QUERY);
    if (!u->query) return fail(P, MPK_ENOMEM, "out of memory");
    e = qe;
  }
  if (e < n && s[e] == '#') {
    u->fragment = encoded(s + e + 1, n - e - 1, SET_FRAGMENT);
    if (!u->fragment) return fail(P, MPK_ENOMEM, "out of memory");
  }
  return 0;
}

/* path state from p (segments appended to `path`), then query and fragment. */
static int parse_path_on(parser *P, size_t p, mpk_url *u, mpk_buf *path) {
  const char *s = P->s;
  size_t n = P->n, e;
  for (;;) {
    e = p;
    while (e < n && !is_slash((unsigned char)s[e]) && s[e] != '?' && s[e] != '#') e++;
    bool more = e < n && is_slash((unsigned char)s[e]);
    if (double_dot(s + p, e - p)) {
      shorten(path);
      if (!more) mpk_buf_putc(path, '/');
    } else if (single_dot(s + p, e - p)) {
      if (!more) mpk_buf_putc(path, '/');
    } else {
      mpk_buf_putc(path, '/');
      put_encoded(path, s + p, e - p, SET_PATH);
    }
    if (!more) break;
    p = e + 1;
  }
  return parse_rest(P, e, u);
}

static int copy_base(parser *P, const mpk_url *b, mpk_url *u, bool with_path_query, mpk_buf *path) {
  u->https = b->https;
  u->username = strdup(b->username);
  u->password = strdup(b->password);
  u->host = strdup(b->host);
  u->port = b->port;
  if (with_path_query) {
    mpk_buf_puts(path, b->path);
    /* Node 20's URL (ada) drops an empty base query here where the standard keeps it:
       new URL("#f", "http://a/b?").href is "http://a/b#f" (docs/mlc-urls.md, "Node's quirks") */
    if (b->query && b->query[0]) u->query = strdup(b->query);
    if (b->query && b->query[0] && !u->query) return fail(P, MPK_ENOMEM, "out of memory");
  }
  if (!u->username || !u->password || !u->host) return fail(P, MPK_ENOMEM, "out of memory");
  return 0;
}

static int parse(parser *P, const mpk_url *base, mpk_url *u) {
  const char *s = P->s;
  size_t n = P->n, p = 0;
  mpk_buf path = {0};
  int rc = 0;
  bool relative = false;
  /* scheme: ALPHA *(ALPHA / DIGIT / "+" / "-" / ".") ":" */
  size_t j = 0;
  if (n && is_alpha((unsigned char)s[0])) {
    j = 1;
    while (j < n && (is_alpha((unsigned char)s[j]) || is_digit((unsigned char)s[j]) || s[j] == '+' || s[j] == '-' ||
                     s[j] == '.'))
      j++;
    if (j == n || s[j] != ':') j = 0;
  }
  if (j) {
    if (ieq(s, j, "http")) u->https = false;
    else if (ieq(s, j, "https")) u->https = true;
    else {
      char scheme[40];
      snprintf(scheme, sizeof scheme, "%.*s", (int)(j > 32 ? 32 : j), s);
      return fail(P, MPK_EUNSUPPORTED, "scheme \"%s\": only http and https URLs are supported", scheme);
    }
    p = j + 1;
    /* "http:x" against an http base is relative; otherwise slashes are optional */
    relative = base && base->https == u->https;
    if (!relative) {
      while (p < n && is_slash((unsigned char)s[p])) p++;
    }
  } else {
    if (!base) return fail(P, MPK_EINVAL, "not an absolute URL (no scheme) and no base to resolve it against");
    relative = true;
  }
  if (!relative) {
    long e = parse_authority(P, p, u);
    if (e < 0) return P->rc;
    p = (size_t)e;
    if (p < n && is_slash((unsigned char)s[p])) p++;
    rc = parse_path_on(P, p, u, &path);
  } else if (p < n && is_slash((unsigned char)s[p])) {
    if (p + 1 < n && is_slash((unsigned char)s[p + 1])) { /* "//host": a new authority, the base's scheme */
      u->https = base->https;
      p += 2;
      while (p < n && is_slash((unsigned char)s[p])) p++;
      long e = parse_authority(P, p, u);
      if (e < 0) return P->rc;
      p = (size_t)e;
      if (p < n && is_slash((unsigned char)s[p])) p++;
      rc = parse_path_on(P, p, u, &path);
    } else { /* "/abs" */
      rc = copy_base(P, base, u, false, &path);
      if (!rc) rc = parse_path_on(P, p + 1, u, &path);
    }
  } else {
    rc = copy_base(P, base, u, true, &path);
    if (rc) {
    } else if (p == n) {
    } else if (s[p] == '?' || s[p] == '#') {
      rc = parse_rest(P, p, u); /* the base's path; "?" replaces its query, "#" keeps it */
    } else {
      free(u->query);
      u->query = NULL;
      shorten(&path);
      rc = parse_path_on(P, p, u, &path);
    }
  }
  if (rc) {
    mpk_buf_free(&path);
    return rc;
  }
  if (path.len == 0) mpk_buf_putc(&path, '/');
  u->path = mpk_buf_take(&path, NULL);
  if (!u->path) return fail(P, MPK_ENOMEM, "out of memory");
  return 0;
}

/* ---------------------------------------------------------------- entry points */

void mpk_url_free(mpk_url *u) {
  if (!u) return;
  free(u->username);
  free(u->password);
  free(u->host);
  free(u->path);
  free(u->query);
  free(u->fragment);
  memset(u, 0, sizeof *u);
}

int mpk_url_parse(const char *input, const mpk_url *base, mpk_url *out, mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!input || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  parser P = {.input = input, .err = err};
  size_t len = strnlen(input, MPK_URL_MAX_INPUT + 1);
  if (len > MPK_URL_MAX_INPUT)
    return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "URL longer than %d bytes", MPK_URL_MAX_INPUT);
  if (!valid_utf8((const unsigned char *)input, len)) return fail(&P, MPK_EINVAL, "not valid UTF-8");
  /* leading and trailing C0 controls and spaces trimmed; tabs and newlines removed anywhere */
  size_t a = 0, b = len;
  while (a < b && (unsigned char)input[a] <= 0x20) a++;
  while (b > a && (unsigned char)input[b - 1] <= 0x20) b--;
  char *clean = malloc(b - a + 1);
  if (!clean) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  size_t n = 0;
  for (size_t i = a; i < b; i++)
    if (input[i] != '\t' && input[i] != '\n' && input[i] != '\r') clean[n++] = input[i];
  clean[n] = 0;
  P.s = clean;
  P.n = n;
  int rc = parse(&P, base, out);
  free(clean);
  if (rc) mpk_url_free(out);
  return rc;
}

char *mpk_url_href(const mpk_url *u) {
  mpk_buf b = {0};
  mpk_buf_puts(&b, u->https ? "https://" : "http://");
  if (u->username[0] || u->password[0]) {
    mpk_buf_puts(&b, u->username);
    if (u->password[0]) {
      mpk_buf_putc(&b, ':');
      mpk_buf_puts(&b, u->password);
    }
    mpk_buf_putc(&b, '@');
  }
  mpk_buf_puts(&b, u->host);
  if (u->port >= 0) mpk_buf_printf(&b, ":%d", u->port);
  mpk_buf_puts(&b, u->path);
  if (u->query) {
    mpk_buf_putc(&b, '?');
    mpk_buf_puts(&b, u->query);
  }
  if (u->fragment) {
    mpk_buf_putc(&b, '#');
    mpk_buf_puts(&b, u->fragment);
  }
  return mpk_buf_take(&b, NULL);
}

int mpk_url_resolve(const char *input, const char *base, char **href, mpk_error *err) {
  if (href) *href = NULL;
  if (!input || !href) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  mpk_url b = {0}, u;
  int rc;
  if (base && (rc = mpk_url_parse(base, NULL, &b, err))) return rc;
  rc = mpk_url_parse(input, base ? &b : NULL, &u, err);
  mpk_url_free(&b);
  if (rc) return rc;
  *href = mpk_url_href(&u);
  mpk_url_free(&u);
  return *href ? 0 : mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
}
