/* The error model: a caller-owned mpk_error filled with code, one-line message and location. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"

static void copy_field(char *dst, size_t cap, const char *src) {
  if (!src) {
    dst[0] = '\0';
    return;
  }
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memmove(dst, src, n); /* src may be the field itself (a caller re-wording its own error) */
  dst[n] = '\0';
}

/* Messages are one line: a newline in an interpolated value would break line-based reports. */
static void one_line(char *s) {
  for (; *s; s++)
    if (*s == '\n' || *s == '\r') *s = ' ';
}

static int vfail(mpk_error *err, int code, const char *file, const char *pointer, int64_t offset,
                 const char *fmt, va_list ap) {
  if (!err) return code;
  /* Formatted aside first: an argument may be err's own message (or file, or pointer). */
  char msg[sizeof err->message];
  vsnprintf(msg, sizeof msg, fmt, ap);
  err->code = code;
  memcpy(err->message, msg, sizeof msg);
  one_line(err->message);
  copy_field(err->file, sizeof err->file, file);
  copy_field(err->pointer, sizeof err->pointer, pointer);
  err->offset = offset;
  return code;
}

int mpk_fail(mpk_error *err, int code, const char *file, const char *pointer, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(err, code, file, pointer, -1, fmt, ap);
  va_end(ap);
  return code;
}

int mpk_vfail(mpk_error *err, int code, const char *file, const char *pointer, const char *fmt, va_list ap) {
  return vfail(err, code, file, pointer, -1, fmt, ap);
}

int mpk_fail_at(mpk_error *err, int code, const char *file, int64_t offset, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(err, code, file, NULL, offset, fmt, ap);
  va_end(ap);
  return code;
}

void mpk_error_clear(mpk_error *err) {
  if (!err) return;
  memset(err, 0, sizeof *err);
  err->offset = -1;
}

const char *mpk_code_name(int code) {
  switch (code) {
    case MPK_OK: return "ok";
    case MPK_EMALFORMED: return "malformed";
    case MPK_EVERSION: return "unsupported-version";
    case MPK_EMISMATCH: return "mismatch";
    case MPK_ENOTFOUND: return "not-found";
    case MPK_EUNSUPPORTED: return "unsupported";
    case MPK_EIO: return "io";
    case MPK_ENOMEM: return "no-memory";
    case MPK_ELIMIT: return "limit";
    case MPK_ENOVARIANT: return "no-variant";
    case MPK_ECANCELLED: return "cancelled";
    case MPK_EINVAL: return "invalid-argument";
    default: return "unknown";
  }
}

int mpk_error_format(const mpk_error *err, char *buf, size_t size) {
  if (!err) return snprintf(buf, size, "(no error)");
  char where[1100];
  size_t w = 0;
  where[0] = '\0';
  if (err->file[0]) {
    if (err->offset >= 0)
      w = (size_t)snprintf(where, sizeof where, "%s@%lld", err->file, (long long)err->offset);
    else
      w = (size_t)snprintf(where, sizeof where, "%s", err->file);
  }
  if (err->pointer[0] && w < sizeof where)
    snprintf(where + w, sizeof where - w, "%s%s", w ? ": " : "", err->pointer);
  if (where[0]) return snprintf(buf, size, "%s: %s", where, err->message);
  return snprintf(buf, size, "%s", err->message);
}
