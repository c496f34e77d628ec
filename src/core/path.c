/* RFC 6901 JSON pointers built while descending into a document, for error locations. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"

void mpk_path_init(mpk_path *p) {
  p->buf[0] = '\0';
  p->len = 0;
  p->truncated = false;
}

static void append(mpk_path *p, const char *s, size_t n) {
  if (p->truncated) return;
  if (p->len + n + 4 >= sizeof p->buf) {
    memcpy(p->buf + p->len, "...", 4);
    p->len += 3;
    p->truncated = true;
    return;
  }
  memcpy(p->buf + p->len, s, n);
  p->len += n;
  p->buf[p->len] = '\0';
}

size_t mpk_path_push_key(mpk_path *p, const char *key) {
  size_t prev = p->len;
  append(p, "/", 1);
  for (const char *k = key; *k; k++) {
    if (*k == '~') append(p, "~0", 2);
    else if (*k == '/') append(p, "~1", 2);
    else append(p, k, 1);
  }
  return prev;
}

size_t mpk_path_push_index(mpk_path *p, size_t i) {
  size_t prev = p->len;
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, "/%zu", i);
  append(p, tmp, (size_t)n);
  return prev;
}

void mpk_path_pop(mpk_path *p, size_t prev_len) {
  /* Back to the same length: nothing to undo, and a cut path stays cut (clearing the mark would let
     the next push write its "..." past the end of buf). Shorter is always before the cut: nothing
     is appended after the mark. */
  if (prev_len >= p->len) return;
  p->len = prev_len;
  p->buf[prev_len] = '\0';
  p->truncated = false;
}
