/* Where WebLLM 0.2.86 finds a model's documents: cleanModelUrl and resolveModelPackageResourceURLs
   (docs/mlc-urls.md), on core's WHATWG URL parser (core/url.c). */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/url.h"
#include "modelpkg/mlc.h"

/* A JavaScript line terminator ends at byte i - 1 (LF, CR, U+2028, U+2029 in UTF-8). */
static bool terminator_before(const char *s, size_t i) {
  if (i == 0) return false;
  unsigned char c = (unsigned char)s[i - 1];
  if (c == '\n' || c == '\r') return true;
  return i >= 3 && (unsigned char)s[i - 3] == 0xe2 && (unsigned char)s[i - 2] == 0x80 && (c == 0xa8 || c == 0xa9);
}

/* A terminator starts at byte i. */
static bool terminator_at(const char *s, size_t n, size_t i) {
  unsigned char c = (unsigned char)s[i];
  if (c == '\n' || c == '\r') return true;
  return c == 0xe2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
         ((unsigned char)s[i + 2] == 0xa8 || (unsigned char)s[i + 2] == 0xa9);
}

/* /.+\/resolve\/.+\// with JavaScript's semantics: '.' is any UTF-16 code unit but a line
   terminator; unanchored. A match needs "/resolve/" at p with a non-terminator just before it, and a
   '/' at k > p + 9 with no terminator in [p + 9, k). Linear: the scan for k after each p stops at
   the first '/' past p + 9 or at a terminator, and a later p starts after the earlier one. */
static bool matches_resolve(const char *s, size_t n) {
  static const char lit[] = "/resolve/";
  const size_t L = sizeof lit - 1;
  size_t scanned = 0; /* [q, scanned) known terminator-free without a qualifying '/' */
  for (size_t p = 1; p + L <= n; p++) {
    if (memcmp(s + p, lit, L) != 0 || terminator_before(s, p)) continue;
    size_t q = p + L;
    /* the first '/' at k > q before any terminator; the character at q itself is matched by '.' */
    if (q >= n || terminator_at(s, n, q)) continue;
    size_t k = q + 1 > scanned ? q + 1 : scanned;
    for (; k < n; k++) {
      if (s[k] == '/') return true;
      if (terminator_at(s, n, k)) break;
    }
    scanned = k;
  }
  return false;
}

int mpk_mlc_clean_model_url(const char *model_url, char **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!model_url || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  size_t n = strnlen(model_url, MPK_URL_MAX_INPUT + 1);
  if (n > MPK_URL_MAX_INPUT)
    return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "model URL longer than %d bytes", MPK_URL_MAX_INPUT);
  char *u = malloc(n + sizeof "/resolve/main/");
  if (!u) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  memcpy(u, model_url, n + 1);
  if (!n || u[n - 1] != '/') u[n++] = '/', u[n] = 0;
  if (!matches_resolve(u, n)) strcpy(u + n, "resolve/main/");
  int rc = mpk_url_resolve(u, NULL, out, err);
  free(u);
  return rc;
}

int mpk_mlc_resource_urls_resolve(const char *model_url, const mpk_mlc_package *package, mpk_mlc_resource_urls *out,
                                  mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!model_url || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  const char *cc = package && package->chat_config ? package->chat_config : "mlc-chat-config.json";
  const char *tc = package && package->weights_manifest ? package->weights_manifest : "tensor-cache.json";
  mpk_url base;
  int rc = mpk_url_parse(model_url, NULL, &base, err);
  if (rc) return rc;
  mpk_url u;
  if (!(rc = mpk_url_parse(cc, &base, &u, err))) {
    out->chat_config_url = mpk_url_href(&u);
    mpk_url_free(&u);
    if (!(rc = mpk_url_parse(tc, &base, &u, err))) {
      out->tensor_cache_manifest_url = mpk_url_href(&u);
      mpk_url tb;
      if (!(rc = mpk_url_parse(".", &u, &tb, err))) {
        out->tensor_cache_base_url = mpk_url_href(&tb);
        mpk_url_free(&tb);
      }
      mpk_url_free(&u);
    }
  }
  mpk_url_free(&base);
  if (!rc && (!out->chat_config_url || !out->tensor_cache_manifest_url || !out->tensor_cache_base_url))
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (rc) mpk_mlc_resource_urls_free(out);
  return rc;
}

void mpk_mlc_resource_urls_free(mpk_mlc_resource_urls *urls) {
  if (!urls) return;
  free(urls->chat_config_url);
  free(urls->tensor_cache_manifest_url);
  free(urls->tensor_cache_base_url);
  memset(urls, 0, sizeof *urls);
}
