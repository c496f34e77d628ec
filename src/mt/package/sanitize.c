/* sanitize_repo_id: a Hub repo id → the name of its directory in the installed cache
   (<cacheDir>/<name>/). The reference rule, per Unicode code point: '/' → "__", [A-Za-z0-9._-]
   kept, anything else → one '_'; no trimming, case folding or length cap. On top of it, what makes
   the name safe to join to a cache directory: valid UTF-8 only (the reference works on decoded
   code points, so undecodable bytes have no defined image), not empty, not "." or "..", at most
   MPK_MT_REPO_DIR_MAX bytes (NAME_MAX: a longer name fails at mkdir anyway). */
#include <string.h>

#include "mt/mt.h"

static bool safe_ascii(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

/* Length of the valid UTF-8 sequence at s (RFC 3629: shortest form, no surrogates, at most
   U+10FFFF), or 0 when it is not one. s is NUL-terminated, so a truncated sequence stops at the
   NUL, which is never a continuation byte. */
static size_t utf8_seq(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  if (c < 0xC2 || c > 0xF4) return 0; /* continuation byte, overlong 2-byte lead, or beyond U+10FFFF */
  size_t n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c == 0xE0) lo = 0xA0;      /* overlong 3-byte */
  else if (c == 0xED) hi = 0x9F; /* UTF-16 surrogates */
  else if (c == 0xF0) lo = 0x90; /* overlong 4-byte */
  else if (c == 0xF4) hi = 0x8F; /* beyond U+10FFFF */
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return n;
}

int mpk_mt_sanitize_repo_id(const char *repo_id, char *out, size_t out_size, mpk_error *err) {
  if (!repo_id || !out || out_size == 0) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  out[0] = '\0';
  if (!*repo_id) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "repo id: it is empty");
  const unsigned char *s = (const unsigned char *)repo_id;
  size_t w = 0;
  for (size_t i = 0; s[i];) {
    size_t n = utf8_seq(s + i);
    if (!n) {
      out[0] = '\0';
      return mpk_fail(err, MPK_EINVAL, NULL, NULL, "repo id: byte %zu (0x%02x) is not valid UTF-8", i, s[i]);
    }
    const char *put = n > 1 ? "_" : s[i] == '/' ? "__" : safe_ascii(s[i]) ? NULL : "_";
    size_t len = put ? strlen(put) : 1;
    if (w + len > MPK_MT_REPO_DIR_MAX || w + len >= out_size) {
      out[0] = '\0';
      return mpk_fail(err, MPK_ELIMIT, NULL, NULL,
                      "repo id: its directory name would be longer than %d bytes (or the %zu-byte buffer)",
                      MPK_MT_REPO_DIR_MAX, out_size);
    }
    if (put) memcpy(out + w, put, len);
    else out[w] = (char)s[i];
    w += len;
    i += n;
  }
  out[w] = '\0';
  if (strcmp(out, ".") == 0 || strcmp(out, "..") == 0) {
    out[0] = '\0';
    return mpk_fail(err, MPK_EINVAL, NULL, NULL,
                    "repo id: \"%s\" would name the cache directory itself or its parent", repo_id);
  }
  return 0;
}
