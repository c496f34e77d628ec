/* WHATWG URLs for http and https: parsing, resolving a reference against a base, serializing —
   `new URL(input, base).href` as Node 20 (ada) computes it, which is what WebLLM 0.2.86 runs
   (docs/mlc-urls.md). Internal. */
#ifndef MPK_URL_H
#define MPK_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "modelpkg.h"

/* The longest input accepted (bytes, before tabs and newlines are removed): MPK_ELIMIT above. */
#define MPK_URL_MAX_INPUT 65536

/* A parsed http(s) URL; every string is serialized (percent-encoded) and malloc'ed. */
typedef struct mpk_url {
  bool https;        /* the scheme: https, else http */
  char *username;    /* "" when absent */
  char *password;    /* "" when absent */
  char *host;        /* a lowercase domain, a dotted IPv4 address, or "[IPv6]" (compressed) */
  int port;          /* -1: none (absent, or the scheme's default) */
  char *path;        /* "/seg/seg...": at least "/" */
  char *query;       /* without the '?'; NULL: none */
  char *fragment;    /* without the '#'; NULL: none */
} mpk_url;

/* Parse `input` (UTF-8, NUL-terminated) against `base` (NULL: it must be absolute), as the WHATWG
   basic URL parser does for special schemes. MPK_EINVAL naming the input and the rule when it does
   not parse; MPK_EUNSUPPORTED for a scheme other than http(s) and for internationalized hosts (no
   UTS-46 here: non-ASCII or "xn--" labels); MPK_ELIMIT past MPK_URL_MAX_INPUT. `out` is zeroed on
   failure; free it with mpk_url_free(). */
int mpk_url_parse(const char *input, const mpk_url *base, mpk_url *out, mpk_error *err);
/* The href (malloc'ed), NULL when out of memory. */
char *mpk_url_href(const mpk_url *u);
void mpk_url_free(mpk_url *u);
/* `new URL(input, base).href`: base NULL for an absolute input. `*href` malloc'ed. */
int mpk_url_resolve(const char *input, const char *base, char **href, mpk_error *err);

#endif
