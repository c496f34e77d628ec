/* A bump allocator: a loaded document's strings and arrays share one lifetime. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

typedef struct chunk {
  struct chunk *next;
  size_t cap, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct mpk_arena {
  chunk *head;
};

mpk_arena *mpk_arena_new(void) { return calloc(1, sizeof(mpk_arena)); }

void mpk_arena_free(mpk_arena *a) {
  if (!a) return;
  for (chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void *mpk_arena_alloc(mpk_arena *a, size_t size) {
  if (size > SIZE_MAX / 2) return NULL;
  size = (size + 15) & ~(size_t)15;
  if (size == 0) size = 16;
  chunk *c = a->head;
  if (!c || c->cap - c->used < size) {
    size_t cap = size > 16384 ? size : 16384;
    c = malloc(sizeof(chunk) + cap);
    if (!c) return NULL;
    c->cap = cap;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

void *mpk_arena_array(mpk_arena *a, size_t n, size_t size) {
  if (size && n > SIZE_MAX / 4 / size) return NULL;
  return mpk_arena_alloc(a, n * size);
}

char *mpk_arena_strdup(mpk_arena *a, const char *s) {
  size_t n = strlen(s);
  char *p = mpk_arena_alloc(a, n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}
