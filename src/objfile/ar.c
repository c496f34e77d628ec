/* ar: static libraries ("!<arch>\n"), GNU and BSD variants. One object per member; symbol tables
   ("/", "/SYM64/", "__.SYMDEF*") and the GNU long-name table ("//") are not members. */
#include <stdio.h>
#include <string.h>

#include "objfile/internal.h"

#define AR_HDR 60
#define MAX_NAME 4096

static bool decimal(const uint8_t *p, size_t len, uint64_t *out) {
  uint64_t v = 0;
  size_t i = 0, digits = 0;
  for (; i < len && p[i] >= '0' && p[i] <= '9'; i++, digits++) v = v * 10 + (uint64_t)(p[i] - '0');
  if (!digits) return false;
  for (; i < len; i++)
    if (p[i] != ' ') return false;
  *out = v;
  return true;
}

int mpk_obj_read_ar(mpk_obj_list *l, mpk_arena *a, const char *path, const char *prefix, const uint8_t *d,
                    uint64_t n, int64_t file_offset, mpk_error *err) {
  const char *shown = path;
  if (prefix) { /* "lib: arm64 slice" */
    size_t len = strlen(path) + strlen(prefix) + 4;
    char *s = mpk_arena_alloc(a, len);
    if (s) snprintf(s, len, "%s: %s", path, prefix), shown = s;
  }
  if (n < 8 || memcmp(d, "!<arch>\n", 8) != 0)
    return mpk_fail_at(err, MPK_EMALFORMED, shown, 0, "ar: no \"!<arch>\" signature");
  const uint8_t *names = NULL; /* the GNU "//" table */
  uint64_t names_n = 0, off = 8;
  while (off < n) {
    if (n - off < AR_HDR) {
      if (d[off] == '\n' && n - off == 1) break; /* a final padding byte */
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)off, "ar: truncated member header at byte %llu (%llu of 60 bytes)",
                         (unsigned long long)off, (unsigned long long)(n - off));
    }
    const uint8_t *h = d + off;
    uint64_t size;
    if (h[58] != '`' || h[59] != '\n')
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)off, "ar: member header at byte %llu does not end in \"`\\n\"",
                         (unsigned long long)off);
    if (!decimal(h + 48, 10, &size))
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)off, "ar: member header at byte %llu: size is not a decimal number",
                         (unsigned long long)off);
    uint64_t data = off + AR_HDR;
    if (!mpk_obj_in(data, size, n))
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)off, "ar: member at byte %llu declares %llu bytes, but only %llu follow",
                         (unsigned long long)off, (unsigned long long)size, (unsigned long long)(n - data));
    uint64_t next = data + size + (size & 1);
    char name[MAX_NAME + 1];
    size_t nlen = 0;
    const uint8_t *body = d + data;
    uint64_t body_n = size;
    bool skip = false;
    if (h[0] == '/' && (h[1] == ' ' || memcmp(h, "/SYM64/ ", 8) == 0)) {
      skip = true; /* the GNU symbol table */
    } else if (h[0] == '/' && h[1] == '/' && h[2] == ' ') {
      names = body, names_n = size, skip = true;
    } else if (h[0] == '/' && h[1] >= '0' && h[1] <= '9') { /* GNU "/N": offset N in the "//" table */
      uint64_t at;
      if (!decimal(h + 1, 15, &at) || !names || at >= names_n)
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)off,
                           "ar: member at byte %llu names offset %.15s of a long-name table %s", (unsigned long long)off,
                           (const char *)h + 1, names ? "that is shorter" : "that the archive does not have");
      while (at + nlen < names_n && nlen < MAX_NAME && names[at + nlen] != '\n' && names[at + nlen] != '\0') nlen++;
      memcpy(name, names + at, nlen);
      if (nlen && name[nlen - 1] == '/') nlen--;
    } else if (memcmp(h, "#1/", 3) == 0) { /* BSD: the name's N bytes start the member's data */
      uint64_t len;
      if (!decimal(h + 3, 13, &len) || len > size || len > MAX_NAME)
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)off, "ar: member at byte %llu: BSD name length %.13s is bad",
                           (unsigned long long)off, (const char *)h + 3);
      while (nlen < len && body[nlen]) nlen++;
      memcpy(name, body, nlen);
      body += len, body_n -= len;
    } else {
      while (nlen < 16 && h[nlen] != '/' && h[nlen] != ' ') nlen++;
      memcpy(name, h, nlen);
    }
    name[nlen] = '\0';
    if (!skip && nlen >= 9 && memcmp(name, "__.SYMDEF", 9) == 0) skip = true; /* the BSD symbol table */
    if (!skip) {
      if (!nlen || memchr(name, '\0', nlen))
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)off, "ar: member at byte %llu has no name", (unsigned long long)off);
      char full[MAX_NAME + 64];
      snprintf(full, sizeof full, "%s%s%s", prefix ? prefix : "", prefix ? ": " : "", name);
      int rc = mpk_obj_add_member(l, a, path, full, body, body_n, file_offset + (int64_t)(body - d), err);
      if (rc) return rc;
    }
    off = next;
  }
  return 0;
}
