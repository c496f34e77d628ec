/* Mach-O: objects, dylibs, bundles, executables; 32- and 64-bit, either byte order; and universal
   ("fat") files, one object per slice. Sections come from LC_SEGMENT / LC_SEGMENT_64 ("__TEXT,__const";
   zerofill sections hold no bytes), symbols from LC_SYMTAB (N_SECT symbols defined, their address
   made an offset in the section; undefined external symbols are imports). Mach-O's leading '_' is
   removed from names. Every count, offset and size is checked against the bytes. */
#include <stdio.h>
#include <string.h>

#include "objfile/internal.h"

#define LC_SEGMENT 0x1
#define LC_SYMTAB 0x2
#define LC_SEGMENT_64 0x19
#define N_STAB 0xe0
#define N_TYPE 0x0e
#define N_EXT 0x01
#define N_PEXT 0x10
#define N_UNDF 0x0
#define N_SECT 0xe
#define S_ZEROFILL 0x1
#define S_GB_ZEROFILL 0xc
#define S_THREAD_LOCAL_ZEROFILL 0x12
#define S_ATTR_PURE_INSTRUCTIONS 0x80000000u
#define S_ATTR_SOME_INSTRUCTIONS 0x00000400u
#define MAX_SECTIONS 255 /* n_sect is one byte */
#define MAX_SYMBOLS (1u << 21) /* 2M: ~100 MiB of parsed symbols; real libraries hold thousands */
#define MAX_SLICES 30    /* Java class files share 0xcafebabe; their "count" is a version, 45 or more */

const char *mpk_obj_macho_arch(uint32_t cputype, uint32_t cpusubtype) {
  switch (cputype) {
    case 7: return "x86";
    case 0x01000007: return "x86-64";
    case 12: return "ARM";
    case 0x0100000c: return (cpusubtype & 0xff) == 2 ? "arm64e" : "arm64";
    case 0x0200000c: return "arm64_32";
    case 18: return "PowerPC";
    case 0x01000012: return "PowerPC64";
    default: return NULL;
  }
}

static const char *type_name(uint32_t filetype) {
  switch (filetype) {
    case 1: return "Mach-O object";
    case 2: return "Mach-O executable";
    case 6: return "Mach-O dylib";
    case 8: return "Mach-O bundle";
    case 9: return "Mach-O dylib stub";
    case 10: return "Mach-O debug companion";
    default: return "Mach-O file";
  }
}

/* A fixed 16-byte name, NUL-terminated or not. */
static size_t name16(const uint8_t *p) {
  size_t n = 0;
  while (n < 16 && p[n]) n++;
  return n;
}

typedef struct sect_info {
  uint32_t flags;
} sect_info;

int mpk_obj_parse_macho(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err) {
  const uint8_t *d = o->bytes;
  uint64_t n = o->size;
  if (n < 28) return mpk_fail_at(err, MPK_EMALFORMED, shown, 0, "Mach-O: truncated header (%llu bytes)", (unsigned long long)n);
  bool be, is64;
  if (memcmp(d, "\xfe\xed\xfa\xce", 4) == 0) be = true, is64 = false;
  else if (memcmp(d, "\xfe\xed\xfa\xcf", 4) == 0) be = true, is64 = true;
  else if (memcmp(d, "\xce\xfa\xed\xfe", 4) == 0) be = false, is64 = false;
  else if (memcmp(d, "\xcf\xfa\xed\xfe", 4) == 0) be = false, is64 = true;
  else return mpk_fail_at(err, MPK_EMALFORMED, shown, 0, "Mach-O: bad magic");
  uint64_t hsize = is64 ? 32 : 28;
  if (n < hsize)
    return mpk_fail_at(err, MPK_EMALFORMED, shown, 0, "Mach-O: truncated header (%llu of %llu bytes)", (unsigned long long)n,
                       (unsigned long long)hsize);
  uint32_t cputype = mpk_obj_rd32(d + 4, be), cpusub = mpk_obj_rd32(d + 8, be), filetype = mpk_obj_rd32(d + 12, be);
  uint32_t ncmds = mpk_obj_rd32(d + 16, be), sizeofcmds = mpk_obj_rd32(d + 20, be);
  o->format = type_name(filetype);
  o->arch = mpk_obj_macho_arch(cputype, cpusub);
  o->big_endian = be;
  if (!mpk_obj_in(hsize, sizeofcmds, n))
    return mpk_fail_at(err, MPK_EMALFORMED, shown, 20, "Mach-O: %u bytes of load commands do not fit in the %llu bytes",
                       sizeofcmds, (unsigned long long)n);
  if (ncmds > sizeofcmds / 8)
    return mpk_fail_at(err, MPK_EMALFORMED, shown, 16, "Mach-O: %u load commands cannot fit in %u bytes", ncmds, sizeofcmds);
  /* Pass 1: count sections, find the symbol table. */
  uint64_t at = hsize, end = hsize + sizeofcmds, nsects = 0;
  uint32_t symoff = 0, nsyms = 0, stroff = 0, strsize = 0;
  bool have_symtab = false;
  for (uint32_t c = 0; c < ncmds; c++) {
    if (end - at < 8)
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)at, "Mach-O: load command %u at byte %llu is truncated", c,
                         (unsigned long long)at);
    uint32_t cmd = mpk_obj_rd32(d + at, be), size = mpk_obj_rd32(d + at + 4, be);
    if (size < 8 || size > end - at)
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)at, "Mach-O: load command %u at byte %llu has size %u (8 to %llu)",
                         c, (unsigned long long)at, size, (unsigned long long)(end - at));
    if (cmd == LC_SEGMENT || cmd == LC_SEGMENT_64) {
      bool s64 = cmd == LC_SEGMENT_64;
      uint64_t seg = s64 ? 72 : 56, sect = s64 ? 80 : 68;
      if (size < seg)
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)at, "Mach-O: segment command at byte %llu is truncated",
                           (unsigned long long)at);
      uint32_t ns = mpk_obj_rd32(d + at + (s64 ? 64 : 48), be);
      if (ns > (size - seg) / sect)
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)at,
                           "Mach-O: segment command at byte %llu declares %u sections, more than its %u bytes hold",
                           (unsigned long long)at, ns, size);
      nsects += ns;
    } else if (cmd == LC_SYMTAB) {
      if (size < 24)
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)at, "Mach-O: LC_SYMTAB at byte %llu is truncated",
                           (unsigned long long)at);
      symoff = mpk_obj_rd32(d + at + 8, be), nsyms = mpk_obj_rd32(d + at + 12, be);
      stroff = mpk_obj_rd32(d + at + 16, be), strsize = mpk_obj_rd32(d + at + 20, be);
      have_symtab = true;
    }
    at += size;
  }
  if (nsects > MAX_SECTIONS)
    return mpk_fail(err, MPK_EMALFORMED, shown, NULL, "Mach-O: %llu sections, more than a symbol can name (255)",
                    (unsigned long long)nsects);
  mpk_obj_section *secs = mpk_arena_array(a, nsects ? nsects : 1, sizeof *secs);
  uint32_t *sflags = mpk_arena_array(a, nsects ? nsects : 1, sizeof *sflags);
  if (!secs || !sflags) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  /* Pass 2: the sections. */
  size_t k = 0;
  at = hsize;
  for (uint32_t c = 0; c < ncmds; c++) {
    uint32_t cmd = mpk_obj_rd32(d + at, be), size = mpk_obj_rd32(d + at + 4, be);
    if (cmd == LC_SEGMENT || cmd == LC_SEGMENT_64) {
      bool s64 = cmd == LC_SEGMENT_64;
      uint64_t seg = s64 ? 72 : 56, sect = s64 ? 80 : 68;
      uint32_t ns = mpk_obj_rd32(d + at + (s64 ? 64 : 48), be);
      for (uint32_t j = 0; j < ns; j++) {
        const uint8_t *p = d + at + seg + j * sect;
        uint64_t addr = s64 ? mpk_obj_rd64(p + 32, be) : mpk_obj_rd32(p + 32, be);
        uint64_t sz = s64 ? mpk_obj_rd64(p + 40, be) : mpk_obj_rd32(p + 36, be);
        uint32_t off = mpk_obj_rd32(p + (s64 ? 48 : 40), be), flags = mpk_obj_rd32(p + (s64 ? 64 : 56), be);
        size_t sl = name16(p + 16), nl = name16(p);
        char *name = mpk_arena_alloc(a, sl + nl + 2);
        if (!name) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
        memcpy(name, p + 16, sl);
        name[sl] = ',';
        memcpy(name + sl + 1, p, nl);
        uint32_t t = flags & 0xff;
        bool bytes = t != S_ZEROFILL && t != S_GB_ZEROFILL && t != S_THREAD_LOCAL_ZEROFILL;
        if (bytes && !mpk_obj_in(off, sz, n))
          return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(p - d),
                             "Mach-O: section %s's %llu bytes at byte %u lie past the end (%llu bytes)", name,
                             (unsigned long long)sz, off, (unsigned long long)n);
        secs[k] = (mpk_obj_section){.name = name, .data = bytes ? d + off : NULL, .size = bytes ? sz : 0, .addr = addr,
                                    .offset = bytes ? (int64_t)off : -1};
        sflags[k++] = flags;
      }
    }
    at += size;
  }
  o->sections = secs;
  o->n_sections = k;
  if (!have_symtab) return 0;
  /* The symbol table. */
  uint64_t ent = is64 ? 16 : 12;
  if (nsyms > MAX_SYMBOLS)
    return mpk_fail(err, MPK_ELIMIT, shown, NULL, "Mach-O: %u symbols: over the limit of %u", nsyms, MAX_SYMBOLS);
  if (!mpk_obj_in(symoff, (uint64_t)nsyms * ent, n) || !mpk_obj_in(stroff, strsize, n))
    return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)symoff,
                       "Mach-O: symbol table (%u symbols at byte %u, %u bytes of strings at byte %u) lies past the end (%llu bytes)",
                       nsyms, symoff, strsize, stroff, (unsigned long long)n);
  mpk_obj_symbol *syms = mpk_arena_array(a, nsyms ? nsyms : 1, sizeof *syms);
  mpk_obj_import *imp = mpk_arena_array(a, nsyms ? nsyms : 1, sizeof *imp);
  const char **exp = mpk_arena_array(a, nsyms ? nsyms : 1, sizeof *exp);
  if (!syms || !imp || !exp) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  mpk_obj_strset imports = {0}, exports = {0};
  size_t ns = 0, ni = 0, nx = 0;
  for (uint32_t i = 0; i < nsyms; i++) {
    const uint8_t *p = d + symoff + (uint64_t)i * ent;
    uint32_t strx = mpk_obj_rd32(p, be);
    uint8_t ntype = p[4], nsect = p[5];
    uint64_t value = is64 ? mpk_obj_rd64(p + 8, be) : mpk_obj_rd32(p + 8, be);
    if (ntype & N_STAB) continue; /* debugging entries */
    if (strx == 0) continue;
    if (strx >= strsize || !memchr(d + stroff + strx, '\0', strsize - strx))
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(p - d),
                         "Mach-O: symbol %u's name index %u is outside the string table or not NUL-terminated", i, strx);
    const char *name = (const char *)d + stroff + strx;
    if (name[0] == '_') name++;
    if (!name[0]) continue;
    mpk_obj_symbol *s = &syms[ns];
    *s = (mpk_obj_symbol){.name = name, .section = SIZE_MAX, .value = value};
    unsigned t = ntype & N_TYPE;
    if (t == N_UNDF) {
      if (!(ntype & N_EXT) || value != 0) continue; /* a common symbol (value: its size) is no import */
      s->function = true;
      int r = mpk_obj_strset_add(&imports, a, name);
      if (r < 0) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
      if (r) imp[ni++] = (mpk_obj_import){.name = name, .function = true};
      ns++;
      continue;
    }
    s->defined = true;
    if (t == N_SECT) {
      if (nsect == 0 || nsect > k)
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(p - d), "Mach-O: symbol %s is in section %u of %zu", name,
                           nsect, k);
      const mpk_obj_section *sec = &secs[nsect - 1];
      if (value >= sec->addr) s->section = nsect - 1u, s->value = value - sec->addr;
      s->function = (sflags[nsect - 1] & (S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS)) != 0;
      int r = s->function && (ntype & N_EXT) && !(ntype & N_PEXT) ? mpk_obj_strset_add(&exports, a, name) : 0;
      if (r < 0) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
      if (r) exp[nx++] = name;
    }
    ns++;
  }
  o->symbols = syms;
  o->n_symbols = ns;
  o->imports = imp;
  o->n_imports = ni;
  o->exports = (const char *const *)exp;
  o->n_exports = nx;
  return 0;
}

bool mpk_obj_universal_ok(const uint8_t *d, uint64_t n) {
  if (n < 8) return false;
  uint32_t count = mpk_obj_rd32(d + 4, true);
  return count >= 1 && count <= MAX_SLICES;
}

int mpk_obj_read_universal(mpk_obj_list *l, mpk_arena *a, const char *path, const uint8_t *d, uint64_t n,
                           mpk_error *err) {
  if (!mpk_obj_universal_ok(d, n))
    return mpk_fail_at(err, MPK_EMALFORMED, path, 4, "Mach-O universal: the slice count is not 1 to %d", MAX_SLICES);
  bool fat64 = d[3] == 0xbf;
  uint32_t count = mpk_obj_rd32(d + 4, true);
  uint64_t ent = fat64 ? 32 : 20;
  if (!mpk_obj_in(8, count * ent, n))
    return mpk_fail_at(err, MPK_EMALFORMED, path, 8, "Mach-O universal: %u slice headers do not fit in the %llu bytes", count,
                       (unsigned long long)n);
  for (uint32_t i = 0; i < count; i++) {
    const uint8_t *p = d + 8 + i * ent;
    uint32_t cputype = mpk_obj_rd32(p, true), cpusub = mpk_obj_rd32(p + 4, true);
    uint64_t off = fat64 ? mpk_obj_rd64(p + 8, true) : mpk_obj_rd32(p + 8, true);
    uint64_t size = fat64 ? mpk_obj_rd64(p + 16, true) : mpk_obj_rd32(p + 12, true);
    if (!mpk_obj_in(off, size, n) || off < 8 + count * ent)
      return mpk_fail_at(err, MPK_EMALFORMED, path, (int64_t)(p - d),
                         "Mach-O universal: slice %u's %llu bytes at byte %llu lie outside the file (%llu bytes)", i,
                         (unsigned long long)size, (unsigned long long)off, (unsigned long long)n);
    const char *arch = mpk_obj_macho_arch(cputype, cpusub);
    char member[64];
    if (arch) snprintf(member, sizeof member, "%s slice", arch);
    else snprintf(member, sizeof member, "slice %u (CPU type %#x)", i, cputype);
    int rc;
    if (size >= 8 && memcmp(d + off, "!<arch>\n", 8) == 0) /* a universal static library */
      rc = mpk_obj_read_ar(l, a, path, member, d + off, size, (int64_t)off, err);
    else
      rc = mpk_obj_add_member(l, a, path, member, d + off, size, (int64_t)off, err);
    if (rc) return rc;
  }
  return 0;
}
