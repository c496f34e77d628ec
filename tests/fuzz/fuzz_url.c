/* Fuzz target: WHATWG URL resolution (core/url.c) and cleanModelUrl (mlc/urls.c). The input is
   REF, optionally followed by a NUL byte and BASE. Invariants: a result is an http(s) URL of
   printable ASCII only (everything else percent-encoded); it re-parses to itself, alone and against
   the base; a failure leaves no result and says why; cleanModelUrl's result re-parses to itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/url.h"
#include "modelpkg/mlc.h"

static void check_href(const char *href, const char *base) {
  if (strncmp(href, "http://", 7) != 0 && strncmp(href, "https://", 8) != 0) __builtin_trap();
  for (const char *p = href; *p; p++)
    if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) __builtin_trap();
  mpk_error err;
  char *again = NULL;
  if (mpk_url_resolve(href, NULL, &again, &err) != 0 || strcmp(again, href) != 0) __builtin_trap();
  free(again);
  if (base) {
    if (mpk_url_resolve(href, base, &again, &err) != 0 || strcmp(again, href) != 0) __builtin_trap();
    free(again);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 2);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = buf[size + 1] = 0;
  const char *ref = buf;
  size_t rlen = strlen(ref);
  const char *base = rlen < size ? buf + rlen + 1 : NULL;
  mpk_error err;
  char *href = (char *)1;
  int rc = mpk_url_resolve(ref, base, &href, &err);
  if (rc == 0) {
    check_href(href, base);
    free(href);
  } else if (href != NULL || err.message[0] == 0) {
    __builtin_trap();
  }
  char *clean = NULL;
  if (mpk_mlc_clean_model_url(ref, &clean, &err) == 0) {
    check_href(clean, NULL);
    mpk_free(clean);
  } else if (clean) {
    __builtin_trap();
  }
  if (base) {
    mpk_mlc_resource_urls u;
    if (mpk_mlc_resource_urls_resolve(base, NULL, &u, &err) == 0) {
      check_href(u.chat_config_url, base);
      check_href(u.tensor_cache_manifest_url, base);
      check_href(u.tensor_cache_base_url, base);
      size_t n = strlen(u.tensor_cache_base_url);
      if (u.tensor_cache_base_url[n - 1] != '/') __builtin_trap();
      mpk_mlc_resource_urls_free(&u);
    }
  }
  free(buf);
  return 0;
}
