/* objfile on hostile input: truncations at every header of each format (an ELF and a Mach-O object
   from the real libraries, tar, ar, gzip), huge counts, offsets past the end, string indexes out of
   their tables, a gzip bomb (a lowered inflate limit), a stream that is no tar, nesting, too many
   members, non-libraries (JSON, PE/COFF, a Java class file, empty), and a 10 GB sparse file that is
   no library refused at once. Every copy is allocated to its exact size, so the sanitizer build
   sees any read past it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "objfile/internal.h"
#include "testutil.h"

static uint8_t *elf_o, *macho_o, *tar_bytes;
static size_t elf_n, macho_n, tar_n;

static int parse(const uint8_t *d, size_t n, mpk_error *err) {
  uint8_t *copy = malloc(n ? n : 1);
  assert_non_null(copy);
  if (n) memcpy(copy, d, n);
  mpk_obj_file *f = NULL;
  mpk_error_clear(err);
  int rc = mpk_obj_from_bytes(copy, n, "hostile", &f, err);
  if (rc == 0) {
    /* Walk every field: a parsed structure never points outside the bytes. */
    for (size_t i = 0; i < f->n_objects; i++) {
      const mpk_obj_object *o = &f->objects[i];
      for (size_t k = 0; k < o->n_sections; k++) {
        const mpk_obj_section *s = &o->sections[k];
        if (s->data) assert_true(s->data >= o->bytes && s->data + s->size <= o->bytes + o->size);
        assert_non_null(s->name);
      }
      for (size_t k = 0; k < o->n_symbols; k++) {
        uint64_t avail;
        const uint8_t *b = mpk_obj_symbol_bytes(o, &o->symbols[k], &avail);
        if (b) assert_true(b >= o->bytes && b + avail <= o->bytes + o->size);
        (void)strlen(o->symbols[k].name);
      }
      for (size_t k = 0; k < o->n_imports; k++) (void)strlen(o->imports[k].name);
      for (size_t k = 0; k < o->n_exports; k++) (void)strlen(o->exports[k]);
    }
    mpk_obj_free(f);
  } else {
    assert_null(f);
    assert_true(err->message[0]);
  }
  free(copy);
  return rc;
}

static int setup(void **state) {
  (void)state;
  struct stat st;
  if (stat(tu_shared("realdata/mlc-libs"), &st) != 0) {
    printf("SKIP: test_obj_hostile: %s absent\n", tu_shared("realdata/mlc-libs"));
    exit(77);
  }
  mpk_error err;
  mpk_obj_file *f = NULL;
  if (mpk_obj_open(tu_shared("realdata/mlc-libs/phi-2-q4f16_1-android.tar"), &f, &err)) fail_msg("%s", tu_err(&err));
  elf_n = f->objects[1].size;
  elf_o = malloc(elf_n);
  memcpy(elf_o, f->objects[1].bytes, elf_n);
  mpk_obj_free(f);
  if (mpk_obj_open(tu_shared("realdata/mlc-libs/gemma-2b-it-q4f16_1-iphone.tar"), &f, &err)) fail_msg("%s", tu_err(&err));
  macho_n = f->objects[0].size;
  macho_o = malloc(macho_n);
  memcpy(macho_o, f->objects[0].bytes, macho_n);
  mpk_obj_free(f);
  size_t gz_n;
  uint8_t *gz = tu_read_file(tu_shared("realdata/mlc-libs/gemma-2b-it-q4f16_1-iphone.tar"), &gz_n);
  uint64_t n;
  if (mpk_obj_gunzip(gz, gz_n, MPK_OBJ_MAX_INFLATED, "gemma", &tar_bytes, &n, &err)) fail_msg("%s", tu_err(&err));
  tar_n = (size_t)n;
  free(gz);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  free(elf_o), free(macho_o), free(tar_bytes);
  return 0;
}

static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static void put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Truncating an object anywhere before the end of the last structure its reader uses is malformed. */
static void truncate_at(const uint8_t *d, size_t at, const char *what) {
  mpk_error err;
  int rc = parse(d, at, &err);
  if (at < 4) return; /* too short to be sniffed: unsupported */
  if (rc != MPK_EMALFORMED) fail_msg("%s cut at %zu: rc %d (%s), want malformed", what, at, rc, tu_err(&err));
}

static void test_elf_truncations(void **state) {
  (void)state;
  const uint8_t *d = elf_o;
  uint64_t shoff = le(d + 40, 8), shent = le(d + 58, 2), shnum = le(d + 60, 2), needed = shoff + shnum * shent;
  for (uint64_t i = 1; i < shnum; i++) {
    const uint8_t *h = d + shoff + i * shent;
    uint64_t off = le(h + 24, 8), size = le(h + 32, 8);
    if (le(h + 4, 4) != 8 && off + size > needed) needed = off + size;
  }
  assert_int_equal(needed, elf_n); /* this object ends with its last structure */
  for (size_t at = 4; at < 256; at++) truncate_at(d, at, "ELF header");
  for (uint64_t i = 0; i < shnum; i++) {
    for (uint64_t j = 0; j < shent; j += 7) truncate_at(d, shoff + i * shent + j, "ELF section header");
    const uint8_t *h = d + shoff + i * shent;
    uint64_t off = le(h + 24, 8), size = le(h + 32, 8);
    if (le(h + 4, 4) == 8 || size == 0) continue;
    truncate_at(d, off + size - 1, "ELF section");
    truncate_at(d, off + 1, "ELF section");
  }
  mpk_error err;
  assert_int_equal(parse(d, elf_n, &err), 0);
}

static void test_elf_fields(void **state) {
  (void)state;
  uint8_t *d = malloc(elf_n);
  mpk_error err;
  uint64_t shoff = le(elf_o + 40, 8);
#define RESET() memcpy(d, elf_o, elf_n)
  RESET(), put_le(d + 60, 0xffff, 2); /* e_shnum: more headers than the bytes */
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "section headers"));
  RESET(), put_le(d + 40, elf_n - 10, 8); /* e_shoff near the end */
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  RESET(), put_le(d + 40, UINT64_MAX - 8, 8); /* e_shoff that overflows */
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  RESET(), put_le(d + 58, 12, 2); /* e_shentsize too small */
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  RESET(), put_le(d + 62, 200, 2); /* e_shstrndx out of range */
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  RESET(), put_le(d + 4, 7, 1); /* class */
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  /* Section 4 (.rodata): size past the end, offset overflowing. */
  uint8_t *h4 = d + shoff + 4 * 64;
  RESET(), put_le(h4 + 32, UINT64_MAX, 8);
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "past the end"));
  RESET(), put_le(h4 + 24, UINT64_MAX - 2, 8);
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  RESET(), put_le(h4, 0xfffffff0u, 4); /* its name index past the name table */
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "name index"));
  /* .symtab (section 11): a string table link out of range, an entry size below a symbol's, a huge size. */
  uint8_t *h11 = d + shoff + 11 * 64;
  RESET(), put_le(h11 + 40, 99, 4);
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  RESET(), put_le(h11 + 56, 8, 8);
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  RESET(), put_le(h11 + 32, (uint64_t)1 << 40, 8);
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  /* A symbol's name index past its string table; a symbol in a section that does not exist. */
  uint64_t symoff = le(h11 + 24, 8);
  RESET(), put_le(d + symoff + 13 * 24, 0x7fffffff, 4);
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "string table"));
  RESET(), put_le(d + symoff + 13 * 24 + 6, 0x0fff, 2);
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  /* The string table without its final NUL: the last name runs off the table. */
  uint8_t *h1 = d + shoff + 1 * 64;
  RESET();
  d[le(h1 + 24, 8) + le(h1 + 32, 8) - 1] = 'x';
  assert_int_equal(parse(d, elf_n, &err), MPK_EMALFORMED);
  RESET();
  assert_int_equal(parse(d, elf_n, &err), 0);
  free(d);
#undef RESET
}

static void test_macho_truncations(void **state) {
  (void)state;
  const uint8_t *d = macho_o;
  uint32_t ncmds = (uint32_t)le(d + 16, 4), sizeofcmds = (uint32_t)le(d + 20, 4);
  for (size_t at = 4; at < 32 + (size_t)sizeofcmds; at++) truncate_at(d, at, "Mach-O load commands");
  /* The symbol and string tables, and each section's last byte. */
  uint64_t at = 32;
  for (uint32_t c = 0; c < ncmds; c++) {
    uint32_t cmd = (uint32_t)le(d + at, 4), size = (uint32_t)le(d + at + 4, 4);
    if (cmd == 2) {
      uint32_t symoff = (uint32_t)le(d + at + 8, 4), nsyms = (uint32_t)le(d + at + 12, 4);
      uint32_t stroff = (uint32_t)le(d + at + 16, 4), strsize = (uint32_t)le(d + at + 20, 4);
      for (uint32_t k = 0; k < nsyms * 16; k += 5) truncate_at(d, symoff + k, "Mach-O symbols");
      truncate_at(d, stroff + strsize - 1, "Mach-O strings");
    }
    if (cmd == 0x19) {
      uint32_t ns = (uint32_t)le(d + at + 64, 4);
      for (uint32_t j = 0; j < ns; j++) {
        const uint8_t *s = d + at + 72 + j * 80;
        uint64_t size64 = le(s + 40, 8);
        uint32_t off = (uint32_t)le(s + 48, 4), type = (uint32_t)le(s + 64, 4) & 0xff;
        if (size64 && type != 1) truncate_at(d, off + size64 - 1, "Mach-O section");
      }
    }
    at += size;
  }
}

static void test_macho_fields(void **state) {
  (void)state;
  uint8_t *d = malloc(macho_n);
  mpk_error err;
#define RESET() memcpy(d, macho_o, macho_n)
  RESET(), put_le(d + 16, 0xffffffff, 4); /* ncmds */
  assert_int_equal(parse(d, macho_n, &err), MPK_EMALFORMED);
  RESET(), put_le(d + 20, 0xfffffff0, 4); /* sizeofcmds */
  assert_int_equal(parse(d, macho_n, &err), MPK_EMALFORMED);
  RESET(), put_le(d + 32 + 4, 0, 4); /* the first command's size 0 (an endless loop if trusted) */
  assert_int_equal(parse(d, macho_n, &err), MPK_EMALFORMED);
  /* The segment's section count, a section's offset past the end. */
  assert_int_equal(le(d + 32, 4), 0x19);
  RESET(), put_le(d + 32 + 64, 1000, 4);
  assert_int_equal(parse(d, macho_n, &err), MPK_EMALFORMED);
  RESET(), put_le(d + 32 + 72 + 2 * 80 + 48, 0xfffffff0, 4);
  assert_int_equal(parse(d, macho_n, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "__TEXT,__const"));
  /* LC_SYMTAB: nsyms huge, a name index past the strings, a symbol in section 200. */
  uint64_t at = 32;
  while (le(d + at, 4) != 2) at += le(d + at + 4, 4);
  uint32_t symoff = (uint32_t)le(d + at + 8, 4);
  RESET(), put_le(d + at + 12, 0x0fffffff, 4);
  assert_int_equal(parse(d, macho_n, &err), MPK_ELIMIT);
  RESET(), put_le(d + at + 12, 0x001fffff, 4);
  assert_int_equal(parse(d, macho_n, &err), MPK_EMALFORMED);
  RESET(), put_le(d + symoff, 0x7fffffff, 4);
  assert_int_equal(parse(d, macho_n, &err), MPK_EMALFORMED);
  RESET(), d[symoff + 4] = 0x0e, d[symoff + 5] = 200;
  assert_int_equal(parse(d, macho_n, &err), MPK_EMALFORMED);
  RESET();
  assert_int_equal(parse(d, macho_n, &err), 0);
  free(d);
#undef RESET
}

/* A universal file of n slices, each pointing at one copy of the Mach-O object. */
static uint8_t *fat(uint32_t count, uint32_t declared, size_t *n) {
  size_t off = 4096;
  *n = off + macho_n;
  uint8_t *d = calloc(1, *n);
  memcpy(d, "\xca\xfe\xba\xbe", 4);
  d[4] = (uint8_t)(declared >> 24), d[5] = (uint8_t)(declared >> 16), d[6] = (uint8_t)(declared >> 8), d[7] = (uint8_t)declared;
  for (uint32_t i = 0; i < count; i++) {
    uint8_t *p = d + 8 + i * 20;
    p[0] = 1, p[3] = 12;                                       /* CPU_TYPE_ARM64, big-endian */
    p[8] = (uint8_t)(off >> 24), p[9] = (uint8_t)(off >> 16), p[10] = (uint8_t)(off >> 8), p[11] = (uint8_t)off;
    p[12] = (uint8_t)(macho_n >> 24), p[13] = (uint8_t)(macho_n >> 16), p[14] = (uint8_t)(macho_n >> 8), p[15] = (uint8_t)macho_n;
  }
  memcpy(d + off, macho_o, macho_n);
  return d;
}

static void test_universal(void **state) {
  (void)state;
  mpk_error err;
  size_t n;
  uint8_t *d = fat(1, 1, &n);
  assert_int_equal(parse(d, n, &err), 0);
  d[8 + 8] = 0x7f; /* the slice's offset past the end */
  assert_int_equal(parse(d, n, &err), MPK_EMALFORMED);
  free(d);
  d = fat(1, 25, &n); /* 25 slice headers claimed, 24 of them zero (offset 0: over the headers) */
  assert_int_equal(parse(d, n, &err), MPK_EMALFORMED);
  free(d);
  /* A Java class file shares the magic: its "count" is a version number. */
  static const uint8_t java[] = {0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x34, 0x00, 0x10, 0x0a, 0x00};
  assert_int_equal(parse(java, sizeof java, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "Java"));
  d = fat(1, 1, &n);
  for (size_t at = 4; at < 8 + 20; at++) assert_int_not_equal(parse(d, at, &err), 0);
  for (size_t at = 4096; at < 4096 + 32; at++) truncate_at(d, at, "universal slice");
  free(d);
}

/* ---- tar */

static void test_tar(void **state) {
  (void)state;
  mpk_error err;
  assert_int_equal(parse(tar_bytes, tar_n, &err), 0);
  /* Walk the headers: each truncated inside (or inside its member's data) is malformed. */
  size_t off = 0, last_end = 0;
  while (off + 512 <= tar_n && tar_bytes[off]) {
    uint64_t size = strtoull((const char *)tar_bytes + off + 124, NULL, 8);
    static const size_t cuts[] = {1, 100, 148, 257, 511};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
      if (off > 0) {
        truncate_at(tar_bytes, off + cuts[k], "tar header");
      } else { /* the first header cut: no tar at all */
        assert_int_equal(parse(tar_bytes, cuts[k], &err), MPK_EUNSUPPORTED);
      }
    }
    if (size) truncate_at(tar_bytes, off + 512 + size - 1, "tar member");
    last_end = off + 512 + size;
    off += 512 + (size + 511) / 512 * 512;
  }
  assert_true(last_end > 0);
  /* Cut after the last member's data (padding and end marker gone): still the whole archive. */
  assert_int_equal(parse(tar_bytes, last_end, &err), 0);
  uint8_t *d = malloc(tar_n);
#define RESET() memcpy(d, tar_bytes, tar_n)
  RESET(), d[0] ^= 1; /* checksum */
  assert_int_equal(parse(d, tar_n, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "checksum"));
  /* The first member's size: 8 GiB (base-256), then octal past the end; checksums fixed. */
  static const char *sizes[] = {"\x80\0\0\0\0\0\0\x02\0\0\0\0", "77777777777\0"};
  for (size_t k = 0; k < 2; k++) {
    RESET();
    memcpy(d + 124, sizes[k], 12);
    unsigned sum = 0;
    for (size_t i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? ' ' : d[i];
    snprintf((char *)d + 148, 8, "%06o", sum);
    assert_int_equal(parse(d, tar_n, &err), MPK_EMALFORMED);
    assert_non_null(strstr(err.message, "declares"));
  }
  free(d);
#undef RESET
}

/* A tar of one member (type, name, data) after a pax header with the given records. */
static size_t tar_member(uint8_t *out, char type, const char *name, const void *data, size_t n) {
  memset(out, 0, 512);
  snprintf((char *)out, 100, "%s", name);
  memcpy(out + 100, "0000644", 8);
  snprintf((char *)out + 124, 12, "%011o", (unsigned)n);
  out[156] = (uint8_t)type;
  memcpy(out + 257, "ustar\0" "00", 8);
  unsigned sum = 0;
  for (size_t i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? ' ' : out[i];
  snprintf((char *)out + 148, 8, "%06o", sum);
  memcpy(out + 512, data, n);
  return 512 + (n + 511) / 512 * 512;
}

static void test_tar_built(void **state) {
  (void)state;
  mpk_error err;
  size_t cap = 4 * 512 + 2 * elf_n + 4096;
  uint8_t *d = calloc(1, cap);
  /* A pax header naming the next member, GNU's long name, a nested tar (raw bytes), a directory. */
  static const char pax[] = "30 path=dir/from_pax_header.o\n";
  size_t n = tar_member(d, 'x', "PaxHeaders/x", pax, strlen(pax));
  n += tar_member(d + n, '0', "short.o", elf_o, elf_n);
  n += tar_member(d + n, '5', "dir/", "", 0);
  n += tar_member(d + n, '0', "inner.tar", d, 512); /* a tar's first header: a tar inside a tar */
  mpk_obj_file *f = NULL;
  assert_int_equal(mpk_obj_from_bytes(d, n + 1024, "built.tar", &f, &err), 0);
  assert_int_equal(f->n_objects, 2);
  assert_string_equal(f->objects[0].member, "dir/from_pax_header.o");
  assert_string_equal(f->objects[0].format, "ELF relocatable object");
  assert_string_equal(f->objects[1].member, "inner.tar");
  assert_string_equal(f->objects[1].format, "raw bytes"); /* archives nest one level */
  assert_string_equal(f->container, "tar archive of ELF relocatable objects (AArch64) and other files");
  mpk_obj_free(f);
  /* Malformed pax records. */
  static const char *bad[] = {"99 path=x\n", "5 path=x\n", "x path=y\n", "12 pathx\n\n\n\n", "9 path=\n"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    memset(d, 0, cap);
    size_t m = tar_member(d, 'x', "PaxHeaders/x", bad[k], strlen(bad[k]));
    m += tar_member(d + m, '0', "a.o", "abc", 3);
    assert_int_equal(parse(d, m + 1024, &err), MPK_EMALFORMED);
  }
  /* Only AppleDouble members and a directory: no objects. */
  memset(d, 0, cap);
  n = tar_member(d, '0', "._lib0.o", "junk", 4);
  n += tar_member(d + n, '5', "d/", "", 0);
  assert_int_equal(parse(d, n + 1024, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "no member"));
  free(d);
}

/* ---- ar */

static size_t ar_member(uint8_t *out, const char *name, const void *data, size_t n) {
  char h[61];
  snprintf(h, sizeof h, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "644", n);
  memcpy(out, h, 60);
  memcpy(out + 60, data, n);
  if (n & 1) out[60 + n] = '\n';
  return 60 + n + (n & 1);
}

static void test_ar(void **state) {
  (void)state;
  mpk_error err;
  size_t cap = 8 + 4 * 62 + elf_n + macho_n + 256;
  uint8_t *d = calloc(1, cap);
  memcpy(d, "!<arch>\n", 8);
  size_t n = 8;
  n += ar_member(d + n, "/", "\0\0\0\0", 4);
  n += ar_member(d + n, "//", "a_very_long_member_name_devc.o/\n", 32);
  n += ar_member(d + n, "/0", elf_o, elf_n);
  size_t second = n;
  n += ar_member(d + n, "#1/8", "mac.o\0\0\0", 8);
  memcpy(d + second + 60 + 8, macho_o, macho_n);
  snprintf((char *)d + second + 48, 11, "%-10zu", macho_n + 8); /* the BSD name is part of the size */
  d[second + 58] = '`';
  n = second + 60 + 8 + macho_n + (macho_n & 1);
  mpk_obj_file *f = NULL;
  assert_int_equal(mpk_obj_from_bytes(d, n, "x.a", &f, &err), 0);
  assert_int_equal(f->n_objects, 2);
  assert_string_equal(f->objects[0].member, "a_very_long_member_name_devc.o");
  assert_string_equal(f->objects[1].member, "mac.o");
  assert_string_equal(f->objects[1].format, "Mach-O object");
  assert_int_equal(f->objects[1].file_offset, (int64_t)(second + 68));
  mpk_obj_free(f);
  /* Truncated at every header and inside each member. */
  static const size_t in_header[] = {1, 16, 47, 58, 59};
  size_t heads[] = {8, 8 + 64, 8 + 64 + 92, second};
  for (size_t h = 0; h < 4; h++)
    for (size_t k = 0; k < 5; k++) truncate_at(d, heads[h] + in_header[k], "ar header");
  truncate_at(d, second - 2, "ar member");
  truncate_at(d, n - 2, "ar member");
  /* A long-name reference past the table; a size that is not a number; a BSD name longer than its member. */
  uint8_t *e = malloc(n);
  memcpy(e, d, n), memcpy(e + 8 + 64 + 92, "/999            ", 16);
  assert_int_equal(parse(e, n, &err), MPK_EMALFORMED);
  memcpy(e, d, n), memcpy(e + second + 48, "12x4      ", 10);
  assert_int_equal(parse(e, n, &err), MPK_EMALFORMED);
  memcpy(e, d, n), memcpy(e + second, "#1/99999999     ", 16);
  assert_int_equal(parse(e, n, &err), MPK_EMALFORMED);
  memcpy(e, d, n), memcpy(e + second + 48, "9999999999", 10);
  assert_int_equal(parse(e, n, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "declares"));
  free(e);
  free(d);
  /* More members than the limit. */
  size_t many = MPK_OBJ_MAX_MEMBERS + 1;
  d = calloc(1, 8 + many * 62);
  memcpy(d, "!<arch>\n", 8);
  n = 8;
  for (size_t i = 0; i < many; i++) n += ar_member(d + n, "m.o", "xx", 2);
  assert_int_equal(parse(d, n, &err), MPK_ELIMIT);
  free(d);
}

/* ---- gzip */

static uint8_t *gzip_of(const uint8_t *d, size_t n, size_t *out_n) {
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = deflateBound(&z, n);
  uint8_t *out = malloc(cap);
  z.next_in = (Bytef *)d, z.avail_in = (uInt)n, z.next_out = out, z.avail_out = (uInt)cap;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  *out_n = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

static void test_gzip(void **state) {
  (void)state;
  mpk_error err;
  /* A bomb: a tar header declaring 64 MiB, then zeros. With the limit lowered to 1 MiB it is
     refused once 1 MiB is inflated. */
  size_t big = 64u << 20;
  uint8_t *zeros = calloc(1, big + 512);
  size_t hdr = tar_member(zeros, '0', "bomb.o", "", 0);
  (void)hdr;
  snprintf((char *)zeros + 124, 12, "%011o", 0);
  size_t gz_n;
  uint8_t *gz = gzip_of(zeros, big + 512, &gz_n);
  assert_true(gz_n < big / 500);
  uint8_t *out = NULL;
  uint64_t out_n = 0;
  assert_int_equal(mpk_obj_gunzip(gz, gz_n, 1u << 20, "bomb.tar", &out, &out_n, &err), MPK_ELIMIT);
  assert_null(out);
  assert_non_null(strstr(err.message, "limit"));
  free(gz);
  /* 64 MiB of text, gzip'd: not a tar, refused after its first 512 inflated bytes (quickly). */
  memset(zeros, 'A', big);
  gz = gzip_of(zeros, big, &gz_n);
  clock_t t0 = clock();
  assert_int_equal(parse(gz, gz_n, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "gzip-compressed, but not a tar archive"));
  assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 0.05);
  /* Truncated streams; garbage after the stream; a second concatenated member is read. */
  free(gz);
  gz = gzip_of(tar_bytes, tar_n, &gz_n);
  static const size_t cuts[] = {10, 18, 100, 5000};
  for (size_t k = 0; k < 4; k++) assert_int_equal(parse(gz, cuts[k], &err), MPK_EMALFORMED);
  assert_int_equal(parse(gz, gz_n - 4, &err), MPK_EMALFORMED);
  uint8_t *g2 = malloc(gz_n + 16);
  memcpy(g2, gz, gz_n);
  memcpy(g2 + gz_n, "garbage-garbage!", 16);
  assert_int_equal(parse(g2, gz_n + 16, &err), MPK_EMALFORMED);
  memset(g2 + gz_n, 0, 16); /* zero padding is fine */
  assert_int_equal(parse(g2, gz_n + 16, &err), 0);
  free(g2);
  /* The deflate data corrupted. */
  gz[gz_n / 2] ^= 0xff;
  gz[gz_n / 2 + 1] ^= 0xff;
  assert_int_not_equal(parse(gz, gz_n, &err), 0);
  free(gz);
  free(zeros);
}

/* ---- a Mach-O made by hand, in each width and byte order (clang 14 emits no big-endian Mach-O):
   __TEXT,__text (4 bytes, instructions) at address 0x1000, __TEXT,__const ("MBLOB...", 32 bytes)
   at 0x1010, __DATA,__bss (zerofill); symbols _exported_fn, ___tvm_dev_mblob, _imported_fn (undefined)
   and a debugging entry. */

static void put(uint8_t *p, uint64_t v, int n, bool be) {
  for (int i = 0; i < n; i++) p[be ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

static size_t macho_by_hand(uint8_t *d, bool is64, bool be) {
  memset(d, 0, 1024);
  size_t hsize = is64 ? 32 : 28, seg = is64 ? 72 : 56, sect = is64 ? 80 : 68, w = is64 ? 8 : 4;
  size_t cmds = seg + 3 * sect + 24;
  size_t data = hsize + cmds, symoff = data + 48, stroff = symoff + 4 * (is64 ? 16 : 12);
  put(d, is64 ? 0xfeedfacf : 0xfeedface, 4, be);
  put(d + 4, is64 ? 0x0100000c : 12, 4, be);
  put(d + 12, 1, 4, be); /* MH_OBJECT */
  put(d + 16, 2, 4, be);
  put(d + 20, cmds, 4, be);
  uint8_t *c = d + hsize;
  put(c, is64 ? 0x19 : 0x1, 4, be);
  put(c + 4, seg + 3 * sect, 4, be);
  put(c + (is64 ? 64 : 48), 3, 4, be);
  static const char *names[3][2] = {{"__text", "__TEXT"}, {"__const", "__TEXT"}, {"__bss", "__DATA"}};
  static const uint64_t addr[3] = {0x1000, 0x1010, 0x2000}, size[3] = {4, 32, 64};
  static const uint32_t flags[3] = {0x80000400, 0, 1};
  for (int i = 0; i < 3; i++) {
    uint8_t *q = c + seg + i * sect;
    memcpy(q, names[i][0], strlen(names[i][0]));
    memcpy(q + 16, names[i][1], strlen(names[i][1]));
    put(q + 32, addr[i], (int)w, be);
    put(q + 32 + w, size[i], (int)w, be);
    put(q + 32 + 2 * w, i == 2 ? 0 : data + (i ? 16 : 0), 4, be);
    put(q + 32 + 2 * w + 16, flags[i], 4, be);
  }
  uint8_t *st = c + seg + 3 * sect;
  put(st, 2, 4, be);
  put(st + 4, 24, 4, be);
  put(st + 8, symoff, 4, be), put(st + 12, 4, 4, be), put(st + 16, stroff, 4, be), put(st + 20, 64, 4, be);
  memcpy(d + data, "\xc0\x03\x5f\xd6", 4);
  memcpy(d + data + 16, "MBLOB-MAGIC-0123456789", 22);
  static const char strs[] = "\0_exported_fn\0___tvm_dev_mblob\0_imported_fn\0_debug";
  memcpy(d + stroff, strs, sizeof strs);
  static const struct { uint32_t strx; uint8_t type, sect; uint64_t value; } syms[4] = {
      {1, 0x0f, 1, 0x1000}, {14, 0x0f, 2, 0x1010}, {31, 0x01, 0, 0}, {44, 0x24, 1, 0x1000}};
  for (int i = 0; i < 4; i++) {
    uint8_t *q = d + symoff + i * (is64 ? 16 : 12);
    put(q, syms[i].strx, 4, be);
    q[4] = syms[i].type, q[5] = syms[i].sect;
    put(q + 8, syms[i].value, (int)w, be);
  }
  return stroff + 64;
}

static void test_macho_by_hand(void **state) {
  (void)state;
  uint8_t d[1024];
  for (int v = 0; v < 4; v++) {
    bool is64 = v & 1, be = v & 2;
    size_t n = macho_by_hand(d, is64, be);
    mpk_obj_file *f = NULL;
    mpk_error err;
    if (mpk_obj_from_bytes(d, n, "hand", &f, &err)) fail_msg("%d: %s", v, tu_err(&err));
    const mpk_obj_object *o = &f->objects[0];
    assert_string_equal(o->format, "Mach-O object");
    assert_string_equal(o->arch, is64 ? "arm64" : "ARM");
    assert_int_equal(o->big_endian, be);
    assert_int_equal(o->n_sections, 3);
    assert_string_equal(o->sections[1].name, "__TEXT,__const");
    assert_null(o->sections[2].data);
    assert_int_equal(o->n_symbols, 3); /* the debugging entry skipped */
    const mpk_obj_symbol *s = mpk_obj_find_symbol(o, "__tvm_dev_mblob");
    assert_non_null(s);
    assert_int_equal(s->section, 1);
    assert_int_equal(s->value, 0);
    uint64_t avail;
    assert_memory_equal(mpk_obj_symbol_bytes(o, s, &avail), "MBLOB-MAGIC", 11);
    assert_int_equal(avail, 32);
    assert_true(mpk_obj_find_symbol(o, "exported_fn")->function);
    assert_int_equal(o->n_exports, 1);
    assert_string_equal(o->exports[0], "exported_fn");
    assert_int_equal(o->n_imports, 1);
    assert_string_equal(o->imports[0].name, "imported_fn");
    mpk_obj_free(f);
    for (size_t at = 4; at < n - 1; at++) truncate_at(d, at, "hand-made Mach-O");
  }
}

/* ---- what is no library */

static void test_not_libraries(void **state) {
  (void)state;
  mpk_error err;
  assert_int_equal(parse((const uint8_t *)"", 0, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "empty"));
  assert_int_equal(parse((const uint8_t *)" {\"model_type\": 1}", 18, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "JSON"));
  assert_int_equal(parse((const uint8_t *)"MZ\x90\0\3\0\0\0", 8, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "PE/COFF"));
  assert_int_equal(parse((const uint8_t *)"!<thin>\n", 8, &err), MPK_EUNSUPPORTED);
  assert_int_equal(parse((const uint8_t *)"hello, world", 12, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "unknown format"));
}

/* A 10 GB sparse file is refused from its first bytes, without reading the rest: at once. */
static void test_sparse_10g(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char path[4096];
  snprintf(path, sizeof path, "%s/big.so", dir);
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  assert_true(fd >= 0);
  if (ftruncate(fd, (off_t)10 << 30) != 0) {
    close(fd);
    skip(); /* a file system without sparse files */
  }
  close(fd);
  alarm(5);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  mpk_obj_file *f = NULL;
  mpk_error err;
  assert_int_equal(mpk_obj_open(path, &f, &err), MPK_EUNSUPPORTED);
  /* The same size with an ELF magic: over the file limit, refused before mapping. */
  fd = open(path, O_WRONLY);
  assert_int_equal(pwrite(fd, "\x7f" "ELF\2\1\1", 7, 0), 7);
  close(fd);
  assert_int_equal(mpk_obj_open(path, &f, &err), MPK_ELIMIT);
  assert_non_null(strstr(err.message, "limit"));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  alarm(0);
  assert_true((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 < 1.0);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_elf_truncations), cmocka_unit_test(test_elf_fields), cmocka_unit_test(test_macho_truncations),
      cmocka_unit_test(test_macho_fields),    cmocka_unit_test(test_universal),  cmocka_unit_test(test_tar),
      cmocka_unit_test(test_tar_built),       cmocka_unit_test(test_ar),         cmocka_unit_test(test_gzip),
      cmocka_unit_test(test_macho_by_hand),   cmocka_unit_test(test_not_libraries),   cmocka_unit_test(test_sparse_10g),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
