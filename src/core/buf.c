/* A growable byte buffer; an allocation failure is sticky and reported once at the end. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

static bool reserve(mpk_buf *b, size_t extra) {
  if (b->oom) return false;
  if (extra > SIZE_MAX / 2 - b->len) goto fail;
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) goto fail;
  b->data = p;
  b->cap = cap;
  return true;
fail:
  b->oom = true;
  return false;
}

void mpk_buf_put(mpk_buf *b, const void *p, size_t n) {
  if (!reserve(b, n)) return;
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void mpk_buf_puts(mpk_buf *b, const char *s) { mpk_buf_put(b, s, strlen(s)); }

void mpk_buf_putc(mpk_buf *b, char c) { mpk_buf_put(b, &c, 1); }

void mpk_buf_printf(mpk_buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    mpk_buf_put(b, tmp, (size_t)n);
    return;
  }
  if (!reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *mpk_buf_take(mpk_buf *b, size_t *len) {
  if (!b->oom) reserve(b, 0);
  if (b->oom) {
    mpk_buf_free(b);
    return NULL;
  }
  char *p = b->data;
  if (len) *len = b->len;
  b->data = NULL;
  b->len = b->cap = 0;
  return p;
}

void mpk_buf_free(mpk_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}
