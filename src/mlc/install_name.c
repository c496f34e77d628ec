/* The name of an installed MLC model's tree in the cache (<cache>/<name>/): docs/mlc-install.md,
   "Where it goes". The characters follow mt install's repo-id rule (mpk_mt_sanitize_repo_id: per code
   point, [A-Za-z0-9._-] kept, '/' → "__", anything else → '_'), so a hub model installs under the same
   kind of name both installers use; then what makes it safe as one directory name. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/install.h"

#define NAME_MAX_BYTES 255

static int safe_ascii(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

/* Length of the valid UTF-8 sequence at s (shortest form, no surrogates, at most U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  if (c < 0xC2 || c > 0xF4) return 0;
  size_t n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c == 0xE0) lo = 0xA0;
  else if (c == 0xED) hi = 0x9F;
  else if (c == 0xF0) lo = 0x90;
  else if (c == 0xF4) hi = 0x8F;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return n;
}

/* Append `len` bytes of `in`, sanitized, to out (w bytes used). */
static int put(const char *in, size_t len, char out[256], size_t *w, const char *what, mpk_error *err) {
  const unsigned char *s = (const unsigned char *)in;
  for (size_t i = 0; i < len;) {
    size_t n = utf8_len(s + i);
    if (!n || i + n > len)
      return mpk_fail(err, MPK_EINVAL, NULL, NULL, "%s: byte %zu (0x%02x) is not valid UTF-8", what, i, s[i]);
    const char *rep = n > 1 ? "_" : s[i] == '/' ? "__" : safe_ascii(s[i]) ? NULL : "_";
    size_t rl = rep ? strlen(rep) : 1;
    if (*w + rl > NAME_MAX_BYTES)
      return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "%s: the tree's name would be longer than %d bytes: give --name",
                      what, NAME_MAX_BYTES);
    if (rep) memcpy(out + *w, rep, rl);
    else out[*w] = (char)s[i];
    *w += rl;
    i += n;
  }
  out[*w] = '\0';
  return 0;
}

static int refuse_special(const char *name, const char *what, mpk_error *err) {
  if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, ".staging") == 0)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL,
                    "%s: the tree's name would be \"%s\", which names %s: give another with --name", what, name,
                    !name[0] ? "nothing" : strcmp(name, ".staging") == 0 ? "the installers' staging directory"
                                                                         : "the cache directory or its parent");
  return 0;
}

/* A URL's path segments: [start, end) of each, between the authority and a query or fragment. */
static size_t segments(const char *url, const char **host, size_t *host_len, const char *seg[64], size_t len[64]) {
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  const char *h = p;
  while (*p && *p != '/' && *p != '?' && *p != '#') p++;
  *host = h;
  *host_len = (size_t)(p - h);
  size_t n = 0;
  while (*p == '/' && n < 64) {
    const char *s = ++p;
    while (*p && *p != '/' && *p != '?' && *p != '#') p++;
    if (p > s) {
      seg[n] = s;
      len[n++] = (size_t)(p - s);
    }
  }
  return n;
}

static int is_seg(const char *s, size_t n, const char *word) { return n == strlen(word) && memcmp(s, word, n) == 0; }

int mpk_mlc_install_tree_name(const char *given, const char *model_url, int http, char out[256], mpk_error *err) {
  size_t w = 0;
  out[0] = '\0';
  int rc;
  if (given) {
    if (strchr(given, '/'))
      return mpk_fail(err, MPK_EINVAL, NULL, NULL, "--name \"%s\": one directory name, without '/'", given);
    if ((rc = put(given, strlen(given), out, &w, "--name", err))) return rc;
    if (strcmp(out, given) != 0)
      return mpk_fail(err, MPK_EINVAL, NULL, NULL, "--name \"%s\": only [A-Za-z0-9._-] (it would be \"%s\")", given,
                      out);
    return refuse_special(out, "--name", err);
  }
  if (http) {
    const char *host, *seg[64];
    size_t host_len, len[64];
    size_t n = segments(model_url, &host, &host_len, seg, len), k = n;
    for (size_t i = 0; i < n; i++)
      if (is_seg(seg[i], len[i], "resolve")) {
        k = i;
        break;
      }
    if (k == 2 && n >= 4) { /* a hub: /<A>/<B>/resolve/<rev>/ */
      if (!(rc = put(seg[0], len[0], out, &w, model_url, err))) rc = put("/", 1, out, &w, model_url, err);
      if (!rc) rc = put(seg[1], len[1], out, &w, model_url, err);
    } else if (k > 0) {
      rc = put(seg[k - 1], len[k - 1], out, &w, model_url, err);
    } else {
      rc = put(host, host_len, out, &w, model_url, err);
    }
    return rc ? rc : refuse_special(out, model_url, err);
  }
  /* A directory: its basename; ".", ".." or a trailing "/." are resolved first. */
  char *real = realpath(model_url, NULL);
  const char *dir = real ? real : model_url;
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  size_t b = n;
  while (b > 0 && dir[b - 1] != '/') b--;
  rc = put(dir + b, n - b, out, &w, model_url, err);
  free(real);
  return rc ? rc : refuse_special(out, model_url, err);
}
