/* objfile on the six real MLC libraries (../shared/realdata/mlc-libs): the container each is, its
   members (AppleDouble "._*" members skipped), archs, and the `__tvm_dev_mblob` symbol (with the
   system-lib prefix in the archives' *_devc.o members) found in its section, the README's
   _metadata (offset and length) inside that symbol's bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "objfile/objfile.h"
#include "testutil.h"

#define DIR "realdata/mlc-libs/"

static const char *real(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s", tu_shared(DIR));
  struct stat st;
  if (stat(path, &st) != 0) {
    printf("SKIP: test_obj_real: %s absent\n", path);
    exit(77);
  }
  snprintf(path, sizeof path, "%s", tu_shared(DIR));
  strncat(path, name, sizeof path - strlen(path) - 1);
  return path;
}

static mpk_obj_file *open_ok(const char *name) {
  mpk_obj_file *f = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_obj_open(real(name), &f, &err);
  if (rc) fail_msg("%s: %s", name, tu_err(&err));
  return f;
}

/* The defined symbol whose name ends in "__tvm_dev_mblob" (TVM prefixes it with the system-lib
   prefix in static libraries). */
static const mpk_obj_symbol *mblob(const mpk_obj_object *o) {
  const mpk_obj_symbol *found = NULL;
  for (size_t i = 0; i < o->n_symbols; i++) {
    const mpk_obj_symbol *s = &o->symbols[i];
    size_t n = strlen(s->name);
    if (s->defined && n >= 15 && strcmp(s->name + n - 15, "__tvm_dev_mblob") == 0) {
      found = s;
      break;
    }
  }
  return found;
}

/* The _metadata (object offset `at`) lies inside the blob symbol's bytes, whose start is at the
   symbol's section offset + value. */
static void check_blob(const mpk_obj_object *o, const char *want_name, const char *want_section, uint64_t at,
                       uint64_t json_len) {
  const mpk_obj_symbol *s = mblob(o);
  assert_non_null(s);
  assert_string_equal(s->name, want_name);
  assert_true(s->section < o->n_sections);
  const mpk_obj_section *sec = &o->sections[s->section];
  assert_string_equal(sec->name, want_section);
  assert_true(sec->offset >= 0);
  uint64_t avail;
  const uint8_t *b = mpk_obj_symbol_bytes(o, s, &avail);
  assert_non_null(b);
  uint64_t start = (uint64_t)(b - o->bytes);
  assert_int_equal(start, (uint64_t)sec->offset + s->value);
  uint64_t len = s->size ? s->size : avail;
  assert_true(s->size <= avail);
  assert_true(at >= start && at < start + len);
  /* What is there is the length-prefixed JSON (the README: u64 length, then the text). */
  assert_true(at + 8 + json_len <= start + len);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | o->bytes[at + (size_t)i];
  assert_int_equal(n, json_len);
  assert_memory_equal(o->bytes + at + 8, "{\"model_type\"", 13);
}

static void test_so(void **state) {
  (void)state;
  mpk_obj_file *f = open_ok("Llama-2-7b-chat-hf-q4f16_1-mali.so");
  assert_string_equal(f->container, "ELF shared object (AArch64)");
  assert_int_equal(f->n_objects, 1);
  const mpk_obj_object *o = &f->objects[0];
  assert_null(o->member);
  assert_string_equal(o->format, "ELF shared object");
  assert_string_equal(o->arch, "AArch64");
  assert_false(o->big_endian);
  assert_int_equal(o->n_sections, 32);
  assert_string_equal(o->sections[11].name, ".rodata");
  assert_int_equal(o->sections[11].addr, 0x19290);
  assert_null(o->sections[20].data); /* .bss: SHT_NOBITS */
  check_blob(o, "__tvm_dev_mblob", ".rodata", 495629, 36750);
  const mpk_obj_symbol *s = mpk_obj_find_symbol(o, "__tvm_dev_mblob");
  assert_ptr_equal(s, mblob(o));
  assert_int_equal(s->value, 0x779f0 - 0x19290);
  assert_int_equal(s->size, 0x2b8df3);
  /* The TVM runtime's backend API is imported; functions are exported. */
  bool found = false;
  for (size_t i = 0; i < o->n_imports; i++) found |= strcmp(o->imports[i].name, "TVMBackendGetFuncFromEnv") == 0;
  assert_true(found);
  for (size_t i = 0; i < o->n_imports; i++)
    for (size_t j = i + 1; j < o->n_imports; j++) assert_string_not_equal(o->imports[i].name, o->imports[j].name);
  assert_true(o->n_exports > 10);
  mpk_obj_free(f);
}

static void test_android_tar(void **state) {
  (void)state;
  mpk_obj_file *f = open_ok("phi-2-q4f16_1-android.tar");
  assert_string_equal(f->container, "gzip-compressed tar archive of ELF relocatable objects (AArch64)");
  assert_int_equal(f->n_objects, 2);
  assert_string_equal(f->objects[0].member, "lib0.o");
  assert_string_equal(f->objects[1].member, "phi_msft_q4f16_1_devc.o");
  for (size_t i = 0; i < 2; i++) {
    assert_string_equal(f->objects[i].format, "ELF relocatable object");
    assert_string_equal(f->objects[i].arch, "AArch64");
    assert_int_equal(f->objects[i].file_offset, -1); /* inside compressed data */
  }
  assert_int_equal(f->objects[0].size, 1078512);
  assert_int_equal(f->objects[1].size, 3170528);
  assert_null(mblob(&f->objects[0]));
  check_blob(&f->objects[1], "phi_msft_q4f16_1___tvm_dev_mblob", ".rodata", 104214, 46895);
  /* The devc member registers its blob with the runtime: an import. */
  assert_int_equal(f->objects[1].n_imports, 1);
  assert_string_equal(f->objects[1].imports[0].name, "TVMBackendRegisterSystemLibSymbol");
  mpk_obj_free(f);
}

static void test_iphone_tar(void **state) {
  (void)state;
  mpk_obj_file *f = open_ok("gemma-2b-it-q4f16_1-iphone.tar");
  assert_string_equal(f->container, "gzip-compressed tar archive of Mach-O objects (arm64)");
  /* ._gemma_q4f16_1_devc.o and ._lib0.o (AppleDouble) are skipped. */
  assert_int_equal(f->n_objects, 2);
  assert_string_equal(f->objects[0].member, "gemma_q4f16_1_devc.o");
  assert_string_equal(f->objects[1].member, "lib0.o");
  const mpk_obj_object *o = &f->objects[0];
  assert_string_equal(o->format, "Mach-O object");
  assert_string_equal(o->arch, "arm64");
  assert_int_equal(o->size, 827792);
  check_blob(o, "gemma_q4f16_1___tvm_dev_mblob", "__TEXT,__const", 35170, 20672);
  /* Mach-O's leading '_' removed, the import too; __bss is zerofill. */
  assert_int_equal(o->n_imports, 1);
  assert_string_equal(o->imports[0].name, "TVMBackendRegisterSystemLibSymbol");
  bool bss = false;
  for (size_t i = 0; i < o->n_sections; i++)
    if (strcmp(o->sections[i].name, "__DATA,__bss") == 0) bss = true, assert_null(o->sections[i].data);
  assert_true(bss);
  assert_true(f->objects[1].n_exports > 10); /* lib0.o: the kernels */
  mpk_obj_free(f);
}

static void test_wasm(void **state) {
  (void)state;
  static const char *names[] = {"Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu.wasm",
                                "TinyLlama-1.1B-Chat-v0.4-q4f16_1-ctx1k-webgpu.wasm",
                                "snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu.wasm"};
  for (size_t i = 0; i < 3; i++) {
    mpk_obj_file *f = open_ok(names[i]);
    assert_string_equal(f->container, "WebAssembly module");
    assert_int_equal(f->n_objects, 1);
    assert_null(f->objects[0].member);
    /* "raw bytes" until the WebAssembly reader lands, "WebAssembly module" after. */
    assert_true(strcmp(f->objects[0].format, "raw bytes") == 0 || strcmp(f->objects[0].format, "WebAssembly module") == 0);
    mpk_obj_free(f);
  }
}

/* The same bytes through mpk_obj_from_bytes. */
static void test_from_bytes(void **state) {
  (void)state;
  size_t n;
  uint8_t *d = tu_read_file(real("gemma-2b-it-q4f16_1-iphone.tar"), &n);
  mpk_obj_file *f = NULL;
  mpk_error err;
  assert_int_equal(mpk_obj_from_bytes(d, n, "gemma.tar", &f, &err), 0);
  assert_int_equal(f->n_objects, 2);
  assert_string_equal(f->path, "gemma.tar");
  mpk_obj_free(f);
  free(d);
}

int main(void) {
  real(""); /* skip naming the directory when it is absent */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_so),   cmocka_unit_test(test_android_tar), cmocka_unit_test(test_iphone_tar),
      cmocka_unit_test(test_wasm), cmocka_unit_test(test_from_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
