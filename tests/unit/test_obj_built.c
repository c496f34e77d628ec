/* objfile on objects built at test time with clang, lld and the archivers, whose contents the test
   controls: ELF64 .o and .so (x86-64, AArch64), ELF32 (x86), big-endian ELF64 (s390x) and ELF32
   (MIPS), Mach-O .o and dylib (arm64, x86-64), 32-bit Mach-O (ARM, x86), a universal file (llvm-lipo), ar archives (GNU ar with a long-name table,
   llvm-ar's BSD/darwin format, a universal static library), tar and tar.gz (GNU long names, pax
   headers, directories, links, AppleDouble members). Each object holds the symbol __tvm_dev_mblob
   (64 bytes starting "MBLOB-MAGIC"), exports exported_fn and imports imported_fn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objfile/objfile.h"
#include "testutil.h"

static const char *dir;
static char CLANG[64], LD64[64], LIPO[64];

static const char *tool(char *out, const char *name) {
  char versioned[64];
  snprintf(versioned, sizeof versioned, "%s-14", name);
  if (mpk_test_have_tool(name)) snprintf(out, 64, "%s", name);
  else if (mpk_test_have_tool(versioned)) snprintf(out, 64, "%s", versioned);
  else mpk_test_need_tool(name);
  return out;
}

static const char *p(const char *name) {
  static char buf[8][4096];
  static int k;
  char *b = buf[k++ % 8];
  snprintf(b, 4096, "%s/%s", dir, name);
  return b;
}

static mpk_obj_file *open_ok(const char *name) {
  mpk_obj_file *f = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_obj_open(p(name), &f, &err)) fail_msg("%s: %s", name, tu_err(&err));
  return f;
}

static bool has_import(const mpk_obj_object *o, const char *name) {
  for (size_t i = 0; i < o->n_imports; i++)
    if (strcmp(o->imports[i].name, name) == 0) return true;
  return false;
}
static bool has_export(const mpk_obj_object *o, const char *name) {
  for (size_t i = 0; i < o->n_exports; i++)
    if (strcmp(o->exports[i], name) == 0) return true;
  return false;
}

/* One built object: its format, arch, byte order, the blob's bytes through its symbol, the import
   and the export (a static function is not exported). */
static void check_object(const mpk_obj_object *o, const char *format, const char *arch, bool be) {
  assert_string_equal(o->format, format);
  assert_string_equal(o->arch, arch);
  assert_int_equal(o->big_endian, be);
  const mpk_obj_symbol *s = mpk_obj_find_symbol(o, "__tvm_dev_mblob");
  assert_non_null(s);
  assert_true(s->defined);
  assert_false(s->function);
  uint64_t avail;
  const uint8_t *b = mpk_obj_symbol_bytes(o, s, &avail);
  assert_non_null(b);
  assert_true(avail >= 64);
  assert_memory_equal(b, "MBLOB-MAGIC-0123456789", 22);
  /* The symbol's offset is its section's: the bytes are at section offset + value in the object. */
  assert_ptr_equal(b, o->bytes + o->sections[s->section].offset + s->value);
  if (strstr(format, "ELF")) assert_int_equal(s->size, 64);
  assert_true(has_import(o, "imported_fn"));
  assert_true(has_export(o, "exported_fn"));
  assert_false(has_export(o, "hidden_fn"));
  const mpk_obj_symbol *fn = mpk_obj_find_symbol(o, "exported_fn");
  assert_non_null(fn);
  assert_true(fn->function);
  for (size_t i = 0; i < o->n_imports; i++)
    for (size_t j = i + 1; j < o->n_imports; j++) assert_string_not_equal(o->imports[i].name, o->imports[j].name);
}

static int setup(void **state) {
  (void)state;
  dir = strdup(tu_tmpdir());
  FILE *f = fopen(p("m.c"), "w");
  assert_non_null(f);
  fputs("const unsigned char __tvm_dev_mblob[64] = \"MBLOB-MAGIC-0123456789\";\n"
        "extern int imported_fn(int);\n"
        "int exported_fn(int x) { return imported_fn(x) + __tvm_dev_mblob[x & 63]; }\n"
        "static int hidden_fn(int x) { return x * 3; }\n"
        "int (*keep)(int) = hidden_fn;\n",
        f);
  fclose(f);
  const char *c = CLANG;
  tu_sh("cd %s && %s --target=x86_64-linux-gnu -O1 -c m.c -o x64.o", dir, c);
  tu_sh("cd %s && %s --target=x86_64-linux-gnu -fPIC -shared -nostdlib -fuse-ld=lld m.c -o x64.so", dir, c);
  tu_sh("cd %s && %s --target=aarch64-linux-gnu -O1 -c m.c -o a64.o", dir, c);
  tu_sh("cd %s && %s --target=aarch64-linux-gnu -fPIC -shared -nostdlib -fuse-ld=lld m.c -o a64.so", dir, c);
  tu_sh("cd %s && %s --target=i386-linux-gnu -O1 -c m.c -o x86.o", dir, c);
  tu_sh("cd %s && %s --target=s390x-linux-gnu -O1 -c m.c -o s390.o", dir, c);
  tu_sh("cd %s && %s --target=mips-linux-gnu -O1 -c m.c -o mips.o", dir, c);
  tu_sh("cd %s && %s --target=armv7-apple-ios9 -O1 -c m.c -o armv7.o", dir, c);
  tu_sh("cd %s && %s --target=i386-apple-macos10.6 -O1 -c m.c -o i386mac.o", dir, c);
  tu_sh("cd %s && %s --target=arm64-apple-macos11 -O1 -c m.c -o mac.o", dir, c);
  tu_sh("cd %s && %s --target=x86_64-apple-macos11 -O1 -c m.c -o macx.o", dir, c);
  tu_sh("cd %s && %s -dylib -arch arm64 -platform_version macos 11 11 -undefined dynamic_lookup mac.o -o mac.dylib", dir, LD64);
  tu_sh("cd %s && %s -dylib -arch x86_64 -platform_version macos 11 11 -undefined dynamic_lookup macx.o -o macx.dylib", dir, LD64);
  tu_sh("cd %s && %s -create mac.dylib macx.dylib -output fat.dylib", dir, LIPO);
  /* Archives: member names past 15 characters need GNU's "//" table and BSD's "#1/N". */
  tu_sh("cd %s && cp x64.o a_member_name_longer_than_sixteen_x64.o && cp a64.o short.o", dir);
  tu_sh("cd %s && ar rcs gnu.a a_member_name_longer_than_sixteen_x64.o short.o", dir);
  tu_sh("cd %s && cp mac.o a_member_name_longer_than_sixteen_mac.o && llvm-ar --format=darwin rcs darwin.a "
        "a_member_name_longer_than_sixteen_mac.o macx.o", dir);
  tu_sh("cd %s && llvm-ar --format=darwin rcs mac_arm.a mac.o && llvm-ar --format=darwin rcs mac_x86.a macx.o && "
        "%s -create mac_arm.a mac_x86.a -output fat.a", dir, LIPO);
  /* tar: a directory, a symbolic link, an AppleDouble member, a 120-character path. */
  tu_sh("cd %s && mkdir -p t/sub && cp a64.o t/lib0.o && cp mac.o t/sub/model_devc.o && printf 'Mac OS X junk' > t/._lib0.o"
        " && ln -s lib0.o t/link.o && L=t/sub/$(printf 'd%%.0s' $(seq 1 100))_devc.o && cp x64.o $L", dir);
  tu_sh("cd %s/t && tar --format=gnu -cf ../gnu.tar lib0.o ._lib0.o link.o sub", dir);
  tu_sh("cd %s/t && tar --format=pax -cf ../pax.tar lib0.o ._lib0.o link.o sub && gzip -c ../pax.tar > ../pax.tar.gz", dir);
  tu_sh("cd %s/t && tar --format=ustar -cf ../ustar.tar lib0.o sub/model_devc.o", dir);
  tu_sh("cd %s/t && tar --format=v7 -cf ../v7.tar lib0.o", dir); /* no "ustar" magic: known by its checksum */
  return 0;
}

static void test_elf(void **state) {
  (void)state;
  static const struct {
    const char *file, *format, *arch, *container;
    bool be;
  } cases[] = {
      {"x64.o", "ELF relocatable object", "x86-64", "ELF relocatable object (x86-64)", false},
      {"x64.so", "ELF shared object", "x86-64", "ELF shared object (x86-64)", false},
      {"a64.o", "ELF relocatable object", "AArch64", "ELF relocatable object (AArch64)", false},
      {"a64.so", "ELF shared object", "AArch64", "ELF shared object (AArch64)", false},
      {"x86.o", "ELF relocatable object", "x86", "ELF relocatable object (x86)", false},
      {"s390.o", "ELF relocatable object", "s390x", "ELF relocatable object (s390x)", true},
      {"mips.o", "ELF relocatable object", "MIPS", "ELF relocatable object (MIPS)", true}, /* ELF32 big-endian */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mpk_obj_file *f = open_ok(cases[i].file);
    assert_string_equal(f->container, cases[i].container);
    assert_int_equal(f->n_objects, 1);
    assert_null(f->objects[0].member);
    assert_int_equal(f->objects[0].file_offset, 0);
    check_object(&f->objects[0], cases[i].format, cases[i].arch, cases[i].be);
    mpk_obj_free(f);
  }
  /* In the shared object the symbol's value is an address: its section starts past 0. */
  mpk_obj_file *f = open_ok("x64.so");
  const mpk_obj_symbol *s = mpk_obj_find_symbol(&f->objects[0], "__tvm_dev_mblob");
  assert_true(f->objects[0].sections[s->section].addr > 0);
  mpk_obj_free(f);
}

static void test_macho(void **state) {
  (void)state;
  static const struct {
    const char *file, *format, *arch, *container;
  } cases[] = {
      {"mac.o", "Mach-O object", "arm64", "Mach-O object (arm64)"},
      {"macx.o", "Mach-O object", "x86-64", "Mach-O object (x86-64)"},
      {"mac.dylib", "Mach-O dylib", "arm64", "Mach-O dylib (arm64)"},
      {"macx.dylib", "Mach-O dylib", "x86-64", "Mach-O dylib (x86-64)"},
      {"armv7.o", "Mach-O object", "ARM", "Mach-O object (ARM)"}, /* 32-bit Mach-O */
      {"i386mac.o", "Mach-O object", "x86", "Mach-O object (x86)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mpk_obj_file *f = open_ok(cases[i].file);
    assert_string_equal(f->container, cases[i].container);
    assert_int_equal(f->n_objects, 1);
    check_object(&f->objects[0], cases[i].format, cases[i].arch, false);
    mpk_obj_free(f);
  }
}

static void test_universal(void **state) {
  (void)state;
  mpk_obj_file *f = open_ok("fat.dylib");
  assert_string_equal(f->container, "Mach-O universal file of Mach-O dylibs (x86-64, arm64)");
  assert_int_equal(f->n_objects, 2);
  assert_string_equal(f->objects[0].member, "x86-64 slice");
  assert_string_equal(f->objects[1].member, "arm64 slice");
  check_object(&f->objects[0], "Mach-O dylib", "x86-64", false);
  check_object(&f->objects[1], "Mach-O dylib", "arm64", false);
  assert_true(f->objects[1].file_offset > 0);
  assert_ptr_equal(f->objects[1].bytes, f->bytes + f->objects[1].file_offset);
  mpk_obj_free(f);
  /* A universal static library: each slice an ar archive, its members objects. */
  f = open_ok("fat.a");
  assert_string_equal(f->container, "Mach-O universal file of Mach-O objects (x86-64, arm64)");
  assert_int_equal(f->n_objects, 2);
  assert_string_equal(f->objects[0].member, "x86-64 slice: macx.o");
  assert_string_equal(f->objects[1].member, "arm64 slice: mac.o");
  check_object(&f->objects[1], "Mach-O object", "arm64", false);
  assert_ptr_equal(f->objects[1].bytes, f->bytes + f->objects[1].file_offset);
  mpk_obj_free(f);
}

static void test_ar(void **state) {
  (void)state;
  mpk_obj_file *f = open_ok("gnu.a");
  assert_string_equal(f->container, "ar archive of ELF relocatable objects (x86-64, AArch64)");
  assert_int_equal(f->n_objects, 2); /* the "/" symbol table and "//" name table are no members */
  assert_string_equal(f->objects[0].member, "a_member_name_longer_than_sixteen_x64.o");
  assert_string_equal(f->objects[1].member, "short.o");
  check_object(&f->objects[0], "ELF relocatable object", "x86-64", false);
  check_object(&f->objects[1], "ELF relocatable object", "AArch64", false);
  assert_ptr_equal(f->objects[1].bytes, f->bytes + f->objects[1].file_offset);
  mpk_obj_free(f);
  f = open_ok("darwin.a");
  assert_string_equal(f->container, "ar archive of Mach-O objects (arm64, x86-64)");
  assert_int_equal(f->n_objects, 2); /* "__.SYMDEF" skipped */
  assert_string_equal(f->objects[0].member, "a_member_name_longer_than_sixteen_mac.o");
  assert_string_equal(f->objects[1].member, "macx.o");
  check_object(&f->objects[0], "Mach-O object", "arm64", false);
  assert_ptr_equal(f->objects[0].bytes, f->bytes + f->objects[0].file_offset);
  mpk_obj_free(f);
}

static void check_tar(mpk_obj_file *f, bool gz) {
  /* lib0.o, then sub/ in the order tar walked it: two objects there; ._lib0.o, link.o and the
     directory are skipped. */
  assert_int_equal(f->n_objects, 3);
  assert_string_equal(f->objects[0].member, "lib0.o");
  check_object(&f->objects[0], "ELF relocatable object", "AArch64", false);
  size_t mac = 0, long_one = 0;
  for (size_t i = 1; i < 3; i++) {
    if (strcmp(f->objects[i].member, "sub/model_devc.o") == 0) mac = i;
    if (strlen(f->objects[i].member) == strlen("sub/") + 100 + strlen("_devc.o")) long_one = i;
  }
  assert_true(mac && long_one && mac != long_one);
  check_object(&f->objects[mac], "Mach-O object", "arm64", false);
  check_object(&f->objects[long_one], "ELF relocatable object", "x86-64", false);
  if (!gz) assert_ptr_equal(f->objects[mac].bytes, f->bytes + f->objects[mac].file_offset);
  else assert_int_equal(f->objects[mac].file_offset, -1);
}

static void test_tar(void **state) {
  (void)state;
  mpk_obj_file *f = open_ok("gnu.tar");
  assert_string_equal(f->container, "tar archive of ELF relocatable objects (AArch64, x86-64) and Mach-O objects (arm64)");
  check_tar(f, false);
  mpk_obj_free(f);
  f = open_ok("pax.tar");
  check_tar(f, false);
  mpk_obj_free(f);
  f = open_ok("pax.tar.gz");
  assert_string_equal(f->container,
                      "gzip-compressed tar archive of ELF relocatable objects (AArch64, x86-64) and Mach-O objects (arm64)");
  check_tar(f, true);
  mpk_obj_free(f);
  f = open_ok("v7.tar");
  assert_string_equal(f->container, "tar archive of ELF relocatable objects (AArch64)");
  assert_int_equal(f->n_objects, 1);
  mpk_obj_free(f);
  f = open_ok("ustar.tar");
  assert_int_equal(f->n_objects, 2);
  assert_string_equal(f->objects[1].member, "sub/model_devc.o");
  mpk_obj_free(f);
}

int main(void) {
  tool(CLANG, "clang");
  tool(LD64, "ld64.lld");
  tool(LIPO, "llvm-lipo");
  char scratch[64];
  tool(scratch, "ld.lld");
  tool(scratch, "llvm-ar");
  tool(scratch, "ar");
  tool(scratch, "tar");
  tool(scratch, "gzip");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_elf), cmocka_unit_test(test_macho), cmocka_unit_test(test_universal),
      cmocka_unit_test(test_ar),  cmocka_unit_test(test_tar),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
