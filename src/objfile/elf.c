/* ELF: shared objects, executables and relocatable objects; ELF32 and ELF64, either byte order.
   Sections (names from the section-name table; SHT_NOBITS holds no bytes), symbols of .symtab and
   .dynsym (a defined symbol's value made an offset in its section), imports (undefined function
   or untyped symbols) and exports (defined global functions). Every count, offset, size and string
   index is checked against the bytes before it is used. */
#include <stdio.h>
#include <string.h>

#include "objfile/internal.h"

#define SHT_SYMTAB 2
#define SHT_NOBITS 8
#define SHT_DYNSYM 11
#define SHT_SYMTAB_SHNDX 18
#define SHN_UNDEF 0
#define SHN_LORESERVE 0xff00
#define SHN_XINDEX 0xffff
#define STT_NOTYPE 0
#define STT_FUNC 2
#define STT_SECTION 3
#define STT_FILE 4
#define STT_TLS 6
#define STT_GNU_IFUNC 10
#define STB_LOCAL 0
#define STV_INTERNAL 1
#define STV_HIDDEN 2
#define MAX_SYMBOLS (1u << 21) /* 2M: ~100 MiB of parsed symbols; real libraries hold thousands */

static const char *arch_name(uint16_t machine, bool is64) {
  switch (machine) {
    case 3: return "x86";
    case 4: return "m68k";
    case 8: return is64 ? "MIPS64" : "MIPS";
    case 20: return "PowerPC";
    case 21: return "PowerPC64";
    case 22: return is64 ? "s390x" : "s390";
    case 40: return "ARM";
    case 43: return "SPARC64";
    case 50: return "IA-64";
    case 62: return "x86-64";
    case 164: return "Hexagon";
    case 183: return "AArch64";
    case 190: return "CUDA";
    case 224: return "AMDGPU";
    case 243: return is64 ? "RISC-V 64" : "RISC-V 32";
    case 247: return "BPF";
    case 258: return "LoongArch";
    default: return NULL;
  }
}

static const char *type_name(uint16_t type) {
  switch (type) {
    case 1: return "ELF relocatable object";
    case 2: return "ELF executable";
    case 3: return "ELF shared object";
    case 4: return "ELF core file";
    default: return "ELF file";
  }
}

typedef struct elf {
  const uint8_t *d;
  uint64_t n;
  bool be, is64;
  const char *shown;
} elf;

static uint64_t word(const elf *e, uint64_t at) { return e->is64 ? mpk_obj_rd64(e->d + at, e->be) : mpk_obj_rd32(e->d + at, e->be); }

/* A NUL-terminated string at `idx` of the table [off, off+size). */
static const char *string_at(const elf *e, uint64_t off, uint64_t size, uint64_t idx) {
  if (idx >= size) return NULL;
  const uint8_t *s = e->d + off + idx;
  return memchr(s, '\0', (size_t)(size - idx)) ? (const char *)s : NULL;
}

typedef struct shdr {
  uint32_t name, type, link;
  uint64_t flags, addr, offset, size, entsize;
} shdr;

int mpk_obj_parse_elf(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err) {
  elf e = {.d = o->bytes, .n = o->size, .shown = shown};
  if (e.n < 16 || memcmp(e.d, "\x7f" "ELF", 4) != 0)
    return mpk_fail_at(err, MPK_EMALFORMED, shown, 0, "ELF: shorter than its identification (16 bytes)");
  if (e.d[4] != 1 && e.d[4] != 2)
    return mpk_fail_at(err, MPK_EMALFORMED, shown, 4, "ELF: class %u is neither 1 (ELF32) nor 2 (ELF64)", e.d[4]);
  if (e.d[5] != 1 && e.d[5] != 2)
    return mpk_fail_at(err, MPK_EMALFORMED, shown, 5, "ELF: data encoding %u is neither 1 (little-endian) nor 2 (big-endian)",
                       e.d[5]);
  e.is64 = e.d[4] == 2;
  e.be = e.d[5] == 2;
  uint64_t ehsize = e.is64 ? 64 : 52;
  if (e.n < ehsize)
    return mpk_fail_at(err, MPK_EMALFORMED, shown, 0, "ELF: truncated header (%llu of %llu bytes)", (unsigned long long)e.n,
                       (unsigned long long)ehsize);
  uint16_t type = mpk_obj_rd16(e.d + 16, e.be), machine = mpk_obj_rd16(e.d + 18, e.be);
  uint64_t shoff = e.is64 ? mpk_obj_rd64(e.d + 40, e.be) : mpk_obj_rd32(e.d + 32, e.be);
  uint64_t shentsize = mpk_obj_rd16(e.d + (e.is64 ? 58 : 46), e.be);
  uint64_t shnum = mpk_obj_rd16(e.d + (e.is64 ? 60 : 48), e.be);
  uint64_t shstrndx = mpk_obj_rd16(e.d + (e.is64 ? 62 : 50), e.be);
  o->format = type_name(type);
  o->arch = arch_name(machine, e.is64);
  o->big_endian = e.be;
  uint64_t want_ent = e.is64 ? 64 : 40;
  if (shoff == 0) shnum = 0; /* no section headers (a stripped executable may have none) */
  if (shoff) {
    if (shentsize < want_ent)
      return mpk_fail_at(err, MPK_EMALFORMED, shown, e.is64 ? 58 : 46, "ELF: section header size %llu is below %llu",
                         (unsigned long long)shentsize, (unsigned long long)want_ent);
    if (!mpk_obj_in(shoff, shentsize, e.n))
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)shoff, "ELF: section headers at byte %llu lie past the end (%llu bytes)",
                         (unsigned long long)shoff, (unsigned long long)e.n);
    /* More than 0xff00 sections: the count (and the name table's index) are in section 0. */
    if (shnum == 0) shnum = word(&e, shoff + (e.is64 ? 32 : 20));
    if (shstrndx == SHN_XINDEX) shstrndx = mpk_obj_rd32(e.d + shoff + (e.is64 ? 40 : 24), e.be);
    if (shnum > (e.n - shoff) / shentsize)
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)shoff,
                         "ELF: %llu section headers of %llu bytes at byte %llu do not fit in the %llu bytes",
                         (unsigned long long)shnum, (unsigned long long)shentsize, (unsigned long long)shoff,
                         (unsigned long long)e.n);
  }
  shdr *sh = mpk_arena_array(a, shnum ? shnum : 1, sizeof *sh);
  mpk_obj_section *secs = mpk_arena_array(a, shnum ? shnum : 1, sizeof *secs);
  if (!sh || !secs) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  for (uint64_t i = 0; i < shnum; i++) {
    const uint8_t *p = e.d + shoff + i * shentsize;
    shdr *s = &sh[i];
    s->name = mpk_obj_rd32(p, e.be);
    s->type = mpk_obj_rd32(p + 4, e.be);
    if (e.is64) {
      s->flags = mpk_obj_rd64(p + 8, e.be), s->addr = mpk_obj_rd64(p + 16, e.be), s->offset = mpk_obj_rd64(p + 24, e.be);
      s->size = mpk_obj_rd64(p + 32, e.be), s->link = mpk_obj_rd32(p + 40, e.be), s->entsize = mpk_obj_rd64(p + 56, e.be);
    } else {
      s->flags = mpk_obj_rd32(p + 8, e.be), s->addr = mpk_obj_rd32(p + 12, e.be), s->offset = mpk_obj_rd32(p + 16, e.be);
      s->size = mpk_obj_rd32(p + 20, e.be), s->link = mpk_obj_rd32(p + 24, e.be), s->entsize = mpk_obj_rd32(p + 36, e.be);
    }
    if (i == 0) s->size = 0, s->type = 0; /* section 0 is the null section (its fields may hold the counts above) */
    /* SHT_NULL sections beyond 0 are unused: their fields mean nothing, so they have no bytes. */
    if (s->type == 0) s->offset = 0, s->size = 0;
    if (s->type != SHT_NOBITS && s->type != 0 && !mpk_obj_in(s->offset, s->size, e.n))
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(shoff + i * shentsize),
                         "ELF: section %llu's %llu bytes at byte %llu lie past the end (%llu bytes)", (unsigned long long)i,
                         (unsigned long long)s->size, (unsigned long long)s->offset, (unsigned long long)e.n);
  }
  /* Names. */
  uint64_t stroff = 0, strsize = 0;
  if (shnum && shstrndx != 0) {
    if (shstrndx >= shnum || sh[shstrndx].type == SHT_NOBITS || sh[shstrndx].type == 0)
      return mpk_fail_at(err, MPK_EMALFORMED, shown, e.is64 ? 62 : 50, "ELF: section-name table index %llu is not a section with bytes",
                         (unsigned long long)shstrndx);
    stroff = sh[shstrndx].offset, strsize = sh[shstrndx].size;
  }
  for (uint64_t i = 0; i < shnum; i++) {
    const char *name = i == 0 ? "" : strsize ? string_at(&e, stroff, strsize, sh[i].name) : "";
    if (!name)
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(shoff + i * shentsize),
                         "ELF: section %llu's name index %u is outside the section-name table or not NUL-terminated",
                         (unsigned long long)i, sh[i].name);
    bool bytes = sh[i].type != 0 && sh[i].type != SHT_NOBITS;
    secs[i] = (mpk_obj_section){.name = name, .data = bytes ? e.d + sh[i].offset : NULL, .size = bytes ? sh[i].size : 0,
                                .addr = sh[i].addr, .offset = bytes ? (int64_t)sh[i].offset : -1};
  }
  o->sections = secs;
  o->n_sections = (size_t)shnum;
  /* Symbols: count first (bounded by the bytes that hold them), then read. */
  uint64_t symsize = e.is64 ? 24 : 16, total = 0;
  for (uint64_t i = 0; i < shnum; i++) {
    if (sh[i].type != SHT_SYMTAB && sh[i].type != SHT_DYNSYM) continue;
    if (sh[i].entsize && sh[i].entsize < symsize)
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(shoff + i * shentsize),
                         "ELF: symbol table %s has entries of %llu bytes, below %llu", secs[i].name,
                         (unsigned long long)sh[i].entsize, (unsigned long long)symsize);
    if (sh[i].link >= shnum || sh[sh[i].link].type == SHT_NOBITS || sh[sh[i].link].type == 0)
      return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(shoff + i * shentsize),
                         "ELF: symbol table %s links string table %u, which is not a section with bytes", secs[i].name,
                         sh[i].link);
    total += sh[i].size / (sh[i].entsize ? sh[i].entsize : symsize);
  }
  if (total > MAX_SYMBOLS)
    return mpk_fail(err, MPK_ELIMIT, shown, NULL, "ELF: %llu symbols: over the limit of %u", (unsigned long long)total, MAX_SYMBOLS);
  mpk_obj_symbol *syms = mpk_arena_array(a, total ? total : 1, sizeof *syms);
  if (!syms) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  mpk_obj_import *imp = mpk_arena_array(a, total ? total : 1, sizeof *imp);
  const char **exp = mpk_arena_array(a, total ? total : 1, sizeof *exp);
  if (!imp || !exp) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  size_t ns = 0, ni = 0, nx = 0;
  mpk_obj_strset imports = {0}, exports = {0};
  for (uint64_t i = 0; i < shnum; i++) {
    if (sh[i].type != SHT_SYMTAB && sh[i].type != SHT_DYNSYM) continue;
    uint64_t ent = sh[i].entsize ? sh[i].entsize : symsize, count = sh[i].size / ent;
    const shdr *str = &sh[sh[i].link];
    /* Extended section indexes (SHT_SYMTAB_SHNDX linked to this table). */
    const shdr *xidx = NULL;
    for (uint64_t k = 0; k < shnum && !xidx; k++)
      if (sh[k].type == SHT_SYMTAB_SHNDX && sh[k].link == i) xidx = &sh[k];
    for (uint64_t k = 1; k < count; k++) {
      const uint8_t *p = e.d + sh[i].offset + k * ent;
      uint32_t name_idx = mpk_obj_rd32(p, e.be);
      uint8_t info, other;
      uint64_t value, size, shndx;
      if (e.is64) {
        info = p[4], other = p[5], shndx = mpk_obj_rd16(p + 6, e.be);
        value = mpk_obj_rd64(p + 8, e.be), size = mpk_obj_rd64(p + 16, e.be);
      } else {
        value = mpk_obj_rd32(p + 4, e.be), size = mpk_obj_rd32(p + 8, e.be);
        info = p[12], other = p[13], shndx = mpk_obj_rd16(p + 14, e.be);
      }
      unsigned stype = info & 0xf, bind = info >> 4, vis = other & 3;
      if (stype == STT_SECTION || stype == STT_FILE || name_idx == 0) continue;
      const char *name = string_at(&e, str->offset, str->size, name_idx);
      if (!name)
        return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(sh[i].offset + k * ent),
                           "ELF: symbol %llu of %s: name index %u is outside its string table or not NUL-terminated",
                           (unsigned long long)k, secs[i].name, name_idx);
      if (!name[0]) continue;
      if (shndx == SHN_XINDEX) {
        shndx = xidx && mpk_obj_in(k * 4, 4, xidx->size) ? mpk_obj_rd32(e.d + xidx->offset + k * 4, e.be) : SHN_LORESERVE;
        if (shndx == SHN_UNDEF || (shndx >= SHN_LORESERVE && shndx <= 0xffff)) shndx = SHN_LORESERVE;
      }
      bool func = stype == STT_FUNC || stype == STT_GNU_IFUNC;
      mpk_obj_symbol *s = &syms[ns];
      *s = (mpk_obj_symbol){.name = name, .section = SIZE_MAX, .value = value, .size = size, .function = func};
      if (shndx == SHN_UNDEF) {
        int r = func || stype == STT_NOTYPE ? mpk_obj_strset_add(&imports, a, name) : 0;
        if (r < 0) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
        if (r) imp[ni++] = (mpk_obj_import){.name = name, .function = true};
        ns++;
        continue;
      }
      s->defined = true;
      if (shndx < SHN_LORESERVE || (shndx > 0xffff && shndx < shnum)) {
        if (shndx >= shnum)
          return mpk_fail_at(err, MPK_EMALFORMED, shown, (int64_t)(sh[i].offset + k * ent),
                             "ELF: symbol %s is in section %llu of %llu", name, (unsigned long long)shndx,
                             (unsigned long long)shnum);
        /* In a linked file the value is an address; in a relocatable object, already the offset.
           TLS symbols hold an offset in the TLS block either way. */
        if (type != 1 && stype != STT_TLS) {
          if (value >= sh[shndx].addr) s->value = value - sh[shndx].addr, s->section = (size_t)shndx;
        } else {
          s->section = (size_t)shndx;
        }
      }
      int r = func && bind != STB_LOCAL && vis != STV_HIDDEN && vis != STV_INTERNAL ? mpk_obj_strset_add(&exports, a, name) : 0;
      if (r < 0) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
      if (r) exp[nx++] = name;
      ns++;
    }
  }
  o->symbols = syms;
  o->n_symbols = ns;
  o->imports = imp;
  o->n_imports = ni;
  o->exports = (const char *const *)exp;
  o->n_exports = nx;
  return 0;
}
