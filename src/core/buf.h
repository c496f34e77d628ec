/* A growable byte buffer for writers. Internal. */
#ifndef MPK_BUF_H
#define MPK_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct mpk_buf {
  char *data;
  size_t len, cap;
  bool oom;
} mpk_buf;

void mpk_buf_put(mpk_buf *b, const void *p, size_t n);
void mpk_buf_puts(mpk_buf *b, const char *s);
void mpk_buf_putc(mpk_buf *b, char c);
void mpk_buf_printf(mpk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* NUL-terminates and hands the memory to the caller (NULL after an allocation failure). */
char *mpk_buf_take(mpk_buf *b, size_t *len);
void mpk_buf_free(mpk_buf *b);

#endif
