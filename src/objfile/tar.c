/* tar: the archive MLC's static libraries ship in (ustar, GNU and pax headers). One object per
   regular member; directories, links, devices, pax global headers and macOS AppleDouble "._*"
   members are skipped. Every header's checksum is verified, every size checked against the bytes. */
#include <stdio.h>
#include <string.h>

#include "objfile/internal.h"

#define BLOCK 512
#define MAX_NAME 4096

/* An octal field (leading spaces, digits, then NUL or space), or GNU's base-256 (high bit set). */
static bool tar_number(const uint8_t *p, size_t len, uint64_t *out) {
  uint64_t v = 0;
  if (p[0] & 0x80) {
    if (p[0] != 0x80) return false; /* negative or absurd */
    for (size_t i = 1; i < len; i++) {
      if (v >> 56) return false;
      v = v << 8 | p[i];
    }
    *out = v;
    return true;
  }
  size_t i = 0;
  while (i < len && p[i] == ' ') i++;
  size_t digits = 0;
  for (; i < len && p[i] >= '0' && p[i] <= '7'; i++, digits++) {
    if (v >> 60) return false;
    v = v << 3 | (uint64_t)(p[i] - '0');
  }
  if (!digits) return false;
  for (; i < len; i++)
    if (p[i] != ' ' && p[i] != '\0') return false;
  *out = v;
  return true;
}

bool mpk_obj_tar_header_ok(const uint8_t *b) {
  uint64_t want;
  if (!tar_number(b + 148, 8, &want)) return false;
  uint64_t sum = 0;
  int64_t ssum = 0;
  for (size_t i = 0; i < BLOCK; i++) {
    uint8_t c = i >= 148 && i < 156 ? ' ' : b[i];
    sum += c;
    ssum += (int8_t)c;
  }
  return sum == want || (ssum >= 0 && (uint64_t)ssum == want);
}

static bool zero_block(const uint8_t *b) {
  for (size_t i = 0; i < BLOCK; i++)
    if (b[i]) return false;
  return true;
}

/* A NUL-terminated copy of a fixed-width field. */
static char *field(mpk_arena *a, const uint8_t *p, size_t len) {
  size_t n = 0;
  while (n < len && p[n]) n++;
  char *s = mpk_arena_alloc(a, n + 1);
  if (s) memcpy(s, p, n);
  return s;
}

/* The pax records of an 'x' header: "LEN key=value\n" each; path and size are used. */
static int pax_records(const uint8_t *d, uint64_t n, mpk_arena *a, const char *shown, uint64_t at, char **path,
                       uint64_t *size, bool *has_size, mpk_error *err) {
  uint64_t i = 0;
  while (i < n) {
    uint64_t len = 0, j = i;
    while (j < n && d[j] >= '0' && d[j] <= '9' && len < ((uint64_t)1 << 40)) len = len * 10 + (uint64_t)(d[j++] - '0');
    if (j == i || j >= n || d[j] != ' ' || len <= j - i + 1 || !mpk_obj_in(i, len, n) || d[i + len - 1] != '\n') {
      if (len == 0 && j < n && d[j] == '\0') break; /* NUL padding after the records */
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(at + i),
                         "tar: malformed pax record at byte %llu (each is \"LENGTH key=value\\n\")",
                         (unsigned long long)(at + i));
    }
    const uint8_t *kv = d + j + 1, *end = d + i + len - 1;
    const uint8_t *eq = memchr(kv, '=', (size_t)(end - kv));
    if (!eq)
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(at + i), "tar: pax record at byte %llu has no '='",
                         (unsigned long long)(at + i));
    size_t klen = (size_t)(eq - kv), vlen = (size_t)(end - eq - 1);
    if (klen == 4 && memcmp(kv, "path", 4) == 0) {
      if (vlen == 0 || vlen > MAX_NAME || memchr(eq + 1, '\0', vlen))
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(at + i),
                           "tar: pax path at byte %llu is empty, longer than %d bytes or holds a NUL",
                           (unsigned long long)(at + i), MAX_NAME);
      *path = field(a, eq + 1, vlen);
      if (!*path) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
    } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
      uint64_t v = 0;
      size_t k = 0;
      for (; k < vlen && eq[1 + k] >= '0' && eq[1 + k] <= '9' && v < ((uint64_t)1 << 59); k++) v = v * 10 + (uint64_t)(eq[1 + k] - '0');
      if (k == 0 || k != vlen)
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(at + i), "tar: pax size at byte %llu is not a decimal number",
                           (unsigned long long)(at + i));
      *size = v;
      *has_size = true;
    }
    i += len;
  }
  return 0;
}

static bool apple_double(const char *name) {
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  return base[0] == '.' && base[1] == '_';
}

int mpk_obj_read_tar(mpk_obj_list *l, mpk_arena *a, const char *path, const uint8_t *d, uint64_t n,
                     int64_t file_offset, mpk_error *err) {
  const char *where = file_offset < 0 ? " of the inflated archive" : "";
  char *long_name = NULL, *pax_path = NULL;
  uint64_t pax_size = 0;
  bool has_pax_size = false;
  uint64_t off = 0;
  size_t headers = 0;
  while (off < n) {
    if (n - off < BLOCK)
      return mpk_fail_at(err, MPK_EMALFORMED, path, (int64_t)off, "tar: truncated header at byte %llu%s (%llu of 512 bytes)",
                         (unsigned long long)off, where, (unsigned long long)(n - off));
    const uint8_t *h = d + off;
    if (zero_block(h)) break; /* the end-of-archive marker (one or two zero blocks) */
    if (++headers > 4 * (size_t)MPK_OBJ_MAX_MEMBERS)
      return mpk_fail(err, MPK_ELIMIT, path, NULL, "tar: more than %d headers: over the limit for a compiled library",
                      4 * MPK_OBJ_MAX_MEMBERS);
    if (!mpk_obj_tar_header_ok(h))
      return mpk_fail_at(err, MPK_EMALFORMED, path, (int64_t)off, "tar: header at byte %llu%s: checksum mismatch",
                         (unsigned long long)off, where);
    uint64_t size;
    if (!tar_number(h + 124, 12, &size))
      return mpk_fail_at(err, MPK_EMALFORMED, path, (int64_t)off, "tar: header at byte %llu%s: size is not a number",
                         (unsigned long long)off, where);
    char type = (char)h[156];
    if (type == '0' || type == '\0' || type == '7') {
      if (has_pax_size) size = pax_size;
    }
    uint64_t data = off + BLOCK;
    if (!mpk_obj_in(data, size, n))
      return mpk_fail_at(err, MPK_EMALFORMED, path, (int64_t)off,
                         "tar: member at byte %llu%s declares %llu bytes, but only %llu follow", (unsigned long long)off,
                         where, (unsigned long long)size, (unsigned long long)(n - data));
    uint64_t next = data + ((size + BLOCK - 1) / BLOCK) * BLOCK;
    if (next > n) next = n; /* a last member whose padding is cut short is still whole */
    int rc = 0;
    if (type == 'L') { /* GNU long name of the next member */
      if (size == 0 || size > MAX_NAME)
        return mpk_fail_at(err, MPK_EMALFORMED, path, (int64_t)off, "tar: GNU long name at byte %llu%s is %llu bytes (1 to %d)",
                           (unsigned long long)off, where, (unsigned long long)size, MAX_NAME);
      long_name = field(a, d + data, (size_t)size);
      if (!long_name) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
      if (!long_name[0])
        return mpk_fail_at(err, MPK_EMALFORMED, path, (int64_t)off, "tar: GNU long name at byte %llu%s is empty",
                           (unsigned long long)off, where);
    } else if (type == 'x') { /* pax extended header of the next member */
      if ((rc = pax_records(d + data, size, a, path, data, &pax_path, &pax_size, &has_pax_size, err))) return rc;
    } else if (type == 'g' || type == 'K') { /* pax global header; GNU long link name: not needed */
    } else {
      if (type == '0' || type == '\0' || type == '7') {
        char *name = pax_path ? pax_path : long_name;
        if (!name) {
          char *base = field(a, h, 100);
          if (!base) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
          name = base;
          if (memcmp(h + 257, "ustar\0" "00", 8) == 0 && h[345]) { /* POSIX ustar: prefix "/" name */
            char *prefix = field(a, h + 345, 155);
            size_t np = prefix ? strlen(prefix) : 0, nb = strlen(base);
            name = prefix ? mpk_arena_alloc(a, np + nb + 2) : NULL;
            if (!name) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
            memcpy(name, prefix, np);
            name[np] = '/';
            memcpy(name + np + 1, base, nb + 1);
          }
        }
        if (!name[0])
          return mpk_fail_at(err, MPK_EMALFORMED, path, (int64_t)off, "tar: member at byte %llu%s has no name",
                             (unsigned long long)off, where);
        if (!apple_double(name)) {
          int64_t at = file_offset < 0 ? -1 : file_offset + (int64_t)data;
          if ((rc = mpk_obj_add_member(l, a, path, name, d + data, size, at, err))) return rc;
        }
      }
      /* Directories, links, devices, FIFOs and GNU extensions are not objects. The next header
         starts afresh. */
      long_name = pax_path = NULL;
      has_pax_size = false;
    }
    off = next;
  }
  return 0;
}
