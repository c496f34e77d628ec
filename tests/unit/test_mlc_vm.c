/* The Relax VM executable reader (src/mlc/vm.c) and the library as a whole (lib_open.c):
   hand-built executables (every field truncated, huge counts, unknown kinds and types, both
   constant numberings), executables placed in hand-made objects (symbol, section search, two
   different ones, WebAssembly memory mapped back to file offsets), and the six real libraries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"
#include "mlc/vm.h"
#include "testutil.h"

/* ---------------------------------------------------------------- a small executable writer */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  if (n) memcpy(b->p + b->n, src, n);
  b->n += n;
}
static void u64(buf *b, uint64_t v) {
  uint8_t le[8];
  for (int k = 0; k < 8; k++) le[k] = (uint8_t)(v >> (8 * k));
  put(b, le, 8);
}
static void i32(buf *b, int32_t v) {
  uint8_t le[4];
  for (int k = 0; k < 4; k++) le[k] = (uint8_t)((uint32_t)v >> (8 * k));
  put(b, le, 4);
}
static void str(buf *b, const char *s) {
  u64(b, strlen(s));
  put(b, s, strlen(s));
}
static void set_u64(buf *b, size_t at, uint64_t v) {
  for (int k = 0; k < 8; k++) b->p[at + k] = (uint8_t)(v >> (8 * k));
}

#define MD_JSON "{\"model_type\": \"llama\", \"quantization\": \"q4f16_1\", \"params\": []}"

typedef struct layout {
  size_t functions;   /* offset of the function count */
  size_t after_funcs; /* offset of the constant count */
  size_t md_text;     /* offset of the _metadata text */
  size_t kind0;       /* offset of the first function's kind */
  size_t n_const_at;  /* offset of the constant count */
  size_t ctype1;      /* offset of constant 1's type */
  size_t code;        /* offset of the instruction count */
  size_t ctext1;      /* offset of constant 1's text ("global") */
} layout;

/* An executable (from its payload length on): functions prefill(3: a, kv, params), _metadata(0),
   vm.builtin.copy (packed), fused_kernel (packed); constants: tensor, string "global", the
   _metadata string, shape, data type, int, float; code: _metadata = Call(copy, const 2), Ret. */
static bool g_two_md; /* constant 1 is a second, different _metadata object */
static buf make_exec(bool ffi, layout *lo) {
  buf b = {0};
  u64(&b, 0); /* payload length, set at the end */
  u64(&b, MPK_VM_MAGIC);
  str(&b, "0.14");
  if (lo) lo->functions = b.n;
  u64(&b, 4);
  struct {
    int kind;
    const char *name;
    int64_t s, e, nargs;
    const char *params[3];
    int np;
  } fns[] = {{1, "prefill", 0, 1, 3, {"input_embed", "paged_kv_cache", "packed_params"}, 3},
             {1, "_metadata", 1, 3, 0, {0}, 0},
             {0, "vm.builtin.copy", 0, 0, -2, {0}, 0},
             {0, "fused_kernel", 0, 0, -2, {0}, 0}};
  for (int i = 0; i < 4; i++) {
    if (lo && i == 0) lo->kind0 = b.n;
    i32(&b, fns[i].kind);
    str(&b, fns[i].name);
    u64(&b, (uint64_t)fns[i].s);
    u64(&b, (uint64_t)fns[i].e);
    u64(&b, (uint64_t)fns[i].nargs);
    u64(&b, 4); /* register file */
    u64(&b, (uint64_t)fns[i].np);
    for (int k = 0; k < fns[i].np; k++) str(&b, fns[i].params[k]);
  }
  if (lo) lo->after_funcs = lo->n_const_at = b.n;
  u64(&b, 7);
  /* 0: a tensor of 2 float16 */
  i32(&b, ffi ? 70 : 0);
  u64(&b, MPK_VM_TENSOR_MAGIC);
  u64(&b, 0);
  i32(&b, 1), i32(&b, 0), i32(&b, 1);
  uint8_t dt[4] = {2, 16, 1, 0};
  put(&b, dt, 4);
  u64(&b, 2);
  u64(&b, 4);
  put(&b, "\1\2\3\4", 4);
  if (lo) lo->ctype1 = b.n;
  i32(&b, ffi ? 65 : 3);
  if (lo) lo->ctext1 = b.n + 8;
  str(&b, g_two_md ? "{\"model_type\": \"gemma\", \"params\": []}" : "global");
  i32(&b, ffi ? 65 : 3);
  u64(&b, strlen(MD_JSON));
  if (lo) lo->md_text = b.n;
  put(&b, MD_JSON, strlen(MD_JSON));
  i32(&b, ffi ? 69 : 2);
  u64(&b, 2), u64(&b, 1), u64(&b, 4096);
  i32(&b, ffi ? 5 : 1);
  put(&b, dt, 4);
  i32(&b, ffi ? 1 : 4);
  u64(&b, 42);
  i32(&b, ffi ? 3 : 5);
  u64(&b, 0x3ff0000000000000ull);
  /* code: instruction 0 (prefill: Ret r0), 1 Call(dst 0, func 2, 1 arg: const 2), 2 Ret r0 */
  if (lo) lo->code = b.n;
  u64(&b, 3);
  u64(&b, 0), u64(&b, 2), u64(&b, 7);
  u64(&b, 9);
  u64(&b, 2), u64(&b, 0);                                                 /* Ret r0 */
  u64(&b, 1), u64(&b, 0), u64(&b, 2), u64(&b, 1), u64(&b, (2ull << 56) | 2); /* Call */
  u64(&b, 2), u64(&b, 0);                                                 /* Ret r0 */
  set_u64(&b, 0, b.n - 8);
  return b;
}

static void check_exec(const mpk_vm_exec *x) {
  assert_string_equal(x->version, "0.14");
  assert_int_equal(x->n_functions, 4);
  assert_string_equal(x->functions[0].name, "prefill");
  assert_int_equal(x->functions[0].kind, MPK_MLC_FUNCTION_VM);
  assert_int_equal(x->functions[0].num_args, 3);
  assert_int_equal(x->functions[0].n_param_names, 3);
  assert_string_equal(x->functions[0].param_names[1], "paged_kv_cache");
  assert_int_equal(x->functions[2].kind, MPK_MLC_FUNCTION_PACKED);
  assert_int_equal(x->functions[2].num_args, -2);
  assert_null(x->constants_problem);
  assert_int_equal(x->n_constants, 7);
  static const int types[7] = {0, 3, 3, 2, 1, 4, 5};
  for (int i = 0; i < 7; i++) assert_int_equal(x->constants[i].type, types[i]);
  assert_int_equal(x->constants[2].size, strlen(MD_JSON));
  assert_int_equal(mpk_vm_metadata_constant(x), 2);
}

static void test_parse(void **state) {
  (void)state;
  for (int ffi = 0; ffi < 2; ffi++) {
    layout lo;
    buf b = make_exec(ffi, &lo);
    mpk_arena *a = mpk_arena_new();
    mpk_vm_exec x;
    mpk_error err;
    assert_int_equal(mpk_vm_parse(b.p, b.n, ffi, "t", 0, a, &x, &err), 0);
    check_exec(&x);
    assert_int_equal(x.ffi_types, ffi);
    assert_int_equal(x.total, b.n);
    assert_int_equal(x.constants[2].offset, lo.md_text);
    /* the type key's numbering guessed wrong: the other one is tried */
    assert_int_equal(mpk_vm_parse(b.p, b.n, !ffi, "t", 0, a, &x, &err), 0);
    check_exec(&x);
    assert_int_equal(x.ffi_types, ffi);
    mpk_arena_free(a);
    free(b.p);
  }
}

/* Cut at every byte: the payload length says the cut (so every inner field meets its end). Before
   the constants, an error naming an offset inside the input; after, the functions stand and the
   constants are reported missing. */
static void test_truncated_everywhere(void **state) {
  (void)state;
  layout lo;
  buf b = make_exec(false, &lo);
  for (size_t k = 0; k < b.n; k++) {
    buf c = {0};
    put(&c, b.p, k);
    if (k >= 8) set_u64(&c, 0, k - 8);
    mpk_arena *a = mpk_arena_new();
    mpk_vm_exec x;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_vm_parse(c.p ? c.p : (const uint8_t *)"", k, false, "cut", 100, a, &x, &err);
    if (k < lo.after_funcs) {
      assert_int_equal(rc, MPK_EMALFORMED);
      assert_true(err.offset >= 100 && err.offset <= 100 + (int64_t)k);
      assert_non_null(strstr(err.message, "Relax VM executable"));
    } else {
      assert_int_equal(rc, 0);
      assert_int_equal(x.n_functions, 4);
      assert_true(x.constants_problem != NULL || x.code_problem != NULL);
      assert_int_equal(mpk_vm_metadata_constant(&x), -1);
    }
    mpk_arena_free(a);
    free(c.p);
  }
  free(b.p);
}

static void test_huge_counts(void **state) {
  (void)state;
  layout lo;
  buf b = make_exec(false, &lo);
  mpk_arena *a = mpk_arena_new();
  mpk_vm_exec x;
  mpk_error err;
  /* 10^9 functions in a few hundred bytes: refused before any allocation */
  buf c = {0};
  put(&c, b.p, b.n);
  set_u64(&c, lo.functions, 1000000000ull);
  assert_int_equal(mpk_vm_parse(c.p, c.n, false, "t", 0, a, &x, &err), MPK_ELIMIT);
  set_u64(&c, lo.functions, 100000ull);
  assert_int_equal(mpk_vm_parse(c.p, c.n, false, "t", 0, a, &x, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "cannot fit"));
  assert_int_equal(err.offset, (int64_t)lo.functions);
  set_u64(&c, lo.functions, UINT64_MAX);
  assert_int_equal(mpk_vm_parse(c.p, c.n, false, "t", 0, a, &x, &err), MPK_ELIMIT);
  free(c.p);
  /* a huge constant count: the functions stand, the constants are reported */
  c = (buf){0};
  put(&c, b.p, b.n);
  set_u64(&c, lo.n_const_at, 1ull << 40);
  assert_int_equal(mpk_vm_parse(c.p, c.n, false, "t", 0, a, &x, &err), 0);
  assert_int_equal(x.n_functions, 4);
  assert_non_null(strstr(x.constants_problem, "constant count"));
  free(c.p);
  /* a string constant longer than the executable */
  c = (buf){0};
  put(&c, b.p, b.n);
  set_u64(&c, lo.md_text - 8, 1ull << 62);
  assert_int_equal(mpk_vm_parse(c.p, c.n, false, "t", 0, a, &x, &err), 0);
  assert_non_null(x.constants_problem);
  free(c.p);
  /* the payload length past the input */
  c = (buf){0};
  put(&c, b.p, b.n);
  set_u64(&c, 0, b.n);
  assert_int_equal(mpk_vm_parse(c.p, c.n, false, "t", 0, a, &x, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "overruns"));
  free(c.p);
  mpk_arena_free(a);
  free(b.p);
}

static void test_unknown_kind_and_type(void **state) {
  (void)state;
  layout lo;
  buf b = make_exec(false, &lo);
  mpk_arena *a = mpk_arena_new();
  mpk_vm_exec x;
  mpk_error err;
  b.p[lo.kind0] = 7;
  assert_int_equal(mpk_vm_parse(b.p, b.n, false, "t", 1000, a, &x, &err), MPK_EMALFORMED);
  assert_int_equal(err.offset, 1000 + (int64_t)lo.kind0);
  assert_non_null(strstr(err.message, "kind 7"));
  b.p[lo.kind0] = 1;
  b.p[lo.ctype1] = 9; /* a type neither numbering knows */
  assert_int_equal(mpk_vm_parse(b.p, b.n, false, "t", 0, a, &x, &err), 0);
  assert_int_equal(x.n_functions, 4);
  assert_non_null(strstr(x.constants_problem, "type 9"));
  b.p[lo.ctype1] = 3;
  b.p[8] ^= 1; /* the magic */
  assert_int_equal(mpk_vm_parse(b.p, b.n, false, "t", 0, a, &x, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "magic"));
  mpk_arena_free(a);
  free(b.p);
}

/* ---------------------------------------------------------------- in hand-made objects */

/* A section holding junk, then the type key with its length, then the executable. */
static buf make_section(const char *key, bool ffi, const char *metadata_variant, size_t *exec_at) {
  buf s = {0};
  put(&s, "junk before the blob \0\0\0", 24);
  u64(&s, strlen(key));
  put(&s, key, strlen(key));
  layout lo;
  buf x = make_exec(ffi, &lo);
  if (metadata_variant) memcpy(x.p + lo.md_text + 16, metadata_variant, strlen(metadata_variant)); /* "llama" -> ... */
  if (exec_at) *exec_at = s.n;
  put(&s, x.p, x.n);
  put(&s, "\0\0tail", 6);
  free(x.p);
  return s;
}

static void test_find_in_objects(void **state) {
  (void)state;
  size_t at;
  buf s1 = make_section("relax.Executable", false, NULL, &at);
  mpk_obj_section sec = {.name = ".rodata", .data = s1.p, .size = s1.n, .offset = 4096};
  mpk_obj_symbol sym = {.name = "__tvm_dev_mblob", .section = 0, .value = 0, .size = s1.n, .defined = true};
  mpk_obj_object o = {.member = "lib_devc.o", .format = "ELF relocatable object", .arch = "AArch64", .bytes = s1.p,
                      .size = s1.n, .sections = &sec, .n_sections = 1, .symbols = &sym, .n_symbols = 1};
  mpk_obj_file f = {.path = "lib.tar", .container = "tar archive", .objects = &o, .n_objects = 1};
  mpk_mlc_library *lib = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), 0);
  assert_non_null(strstr(lib->vm_where, "member lib_devc.o: symbol __tvm_dev_mblob in .rodata"));
  assert_string_equal(lib->vm_type_key, "relax.Executable");
  assert_string_equal(lib->arch, "AArch64");
  assert_int_equal(lib->n_functions, 4);
  assert_non_null(lib->metadata);
  assert_string_equal(lib->metadata->model_type, "llama");
  assert_int_equal(lib->metadata_scanned, 0);
  assert_string_equal(lib->metadata_member, "lib_devc.o");
  assert_non_null(strstr(lib->metadata_where, "constant 2 (the string the VM function _metadata returns)"));
  layout lo;
  buf x = make_exec(false, &lo);
  assert_int_equal(lib->metadata->source_offset, 4096 + (int64_t)(at + lo.md_text));
  /* globals needed: the dotted names (fused_kernel is the library's own, even with no symbol:
     static archives register kernels by name) */
  assert_int_equal(lib->n_globals_needed, 1);
  assert_string_equal(lib->globals_needed[0], "vm.builtin.copy");
  mpk_mlc_library_free(lib);

  /* no symbol: found by the section search */
  f.objects = &o;
  f.n_objects = 1;
  o.n_symbols = 0;
  assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), 0);
  assert_non_null(strstr(lib->vm_where, "section .rodata, relax.Executable at offset"));
  mpk_mlc_library_free(lib);

  /* the same executable twice (two slices): one; a different one: an error naming both */
  mpk_obj_object two[2] = {o, o};
  two[1].member = "arm64 slice";
  f.objects = two;
  f.n_objects = 2;
  assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), 0);
  mpk_mlc_library_free(lib);
  buf s2 = make_section("relax.VMExecutable", true, "gemma", NULL);
  mpk_obj_section sec2 = {.name = "__TEXT,__const", .data = s2.p, .size = s2.n, .offset = 0};
  two[1].sections = &sec2;
  assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "two different Relax VM executables"));
  assert_non_null(strstr(err.message, "member lib_devc.o"));
  assert_non_null(strstr(err.message, "member arm64 slice"));

  /* only a broken executable: the old scan finds the _metadata, the reason is kept */
  f.objects = &o;
  f.n_objects = 1;
  s1.p[at + 8] ^= 0xff; /* the magic */
  s1.p[at + 9] ^= 0xff;
  assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), 0);
  assert_int_equal(lib->n_functions, 0);
  assert_int_equal(lib->metadata_scanned, 1);
  assert_string_equal(lib->metadata->model_type, "llama");
  mpk_mlc_library_free(lib);
  free(x.p);
  free(s1.p);
  free(s2.p);
}

/* Without the code section: the one string constant that is a _metadata object; two different
   ones are an error, not a guess. */
static void test_metadata_without_code(void **state) {
  (void)state;
  size_t at;
  buf s1 = make_section("relax.Executable", false, NULL, &at);
  layout lo;
  buf x = make_exec(false, &lo);
  set_u64(&s1, at + lo.code, 1ull << 50); /* an instruction count the payload cannot hold */
  mpk_obj_section sec = {.name = ".rodata", .data = s1.p, .size = s1.n, .offset = 0};
  mpk_obj_object o = {.format = "ELF shared object", .bytes = s1.p, .size = s1.n, .sections = &sec, .n_sections = 1};
  mpk_obj_file f = {.path = "lib.so", .container = "ELF shared object", .objects = &o, .n_objects = 1};
  mpk_mlc_library *lib = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), 0);
  assert_non_null(lib->metadata);
  assert_int_equal(lib->metadata_scanned, 0);
  assert_non_null(strstr(lib->metadata_where, "constant 2 (the one string constant that is a _metadata object)"));
  mpk_mlc_library_free(lib);
  free(s1.p);
  free(x.p);
  g_two_md = true;
  s1 = make_section("relax.Executable", false, NULL, &at);
  x = make_exec(false, &lo);
  g_two_md = false;
  set_u64(&s1, at + lo.code, 1ull << 50);
  sec.data = o.bytes = s1.p;
  sec.size = o.size = s1.n;
  assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), 0); /* the function table stands */
  assert_null(lib->metadata);
  assert_non_null(strstr(lib->metadata_problem, "string constants 1 and 2 are two different _metadata objects"));
  assert_int_equal(lib->n_functions, 4);
  mpk_mlc_metadata *md = NULL;
  assert_int_equal(mpk_mlc_library_take_metadata(lib, &md, &err), MPK_EMALFORMED);
  mpk_mlc_library_free(lib);
  free(s1.p);
  free(x.p);
}

/* WebAssembly: the executable in linear memory; the _metadata text maps back to the file through
   the data segment holding it. */
static void test_wasm_memory(void **state) {
  (void)state;
  size_t at;
  buf mem = make_section("relax.VMExecutable", true, NULL, &at);
  layout lo;
  buf x = make_exec(true, &lo);
  size_t text = at + lo.md_text;
  mpk_obj_section sec = {.name = "memory", .data = mem.p, .size = mem.n, .addr = 0, .offset = -1};
  /* segment 1 holds the text (at file offset 5000 + ...) */
  mpk_obj_segment segs[2] = {{.addr = 0, .size = text - 3, .offset = 100, .active = true},
                             {.addr = text - 3, .size = mem.n - (text - 3), .offset = 5000, .active = true}};
  static const char *const exports[] = {"TVMFuncCall"};
  mpk_obj_import imps[3] = {{"env", "TVMWasmPackedCFunc", true}, {"wasi_snapshot_preview1", "fd_write", true},
                            {"env", "TVMWasmPackedCFunc", true}};
  /* a registered global's name in memory */
  memcpy(mem.p + 1, "vm.builtin.x", 12); /* junk is "junk before..."; put a NUL-delimited name */
  mem.p[0] = 0;
  mem.p[13] = 0;
  mpk_obj_object o = {.format = "WebAssembly module", .arch = "wasm32", .bytes = mem.p, .size = mem.n,
                      .sections = &sec, .n_sections = 1, .imports = imps, .n_imports = 3, .exports = exports,
                      .n_exports = 1, .segments = segs, .n_segments = 2};
  mpk_obj_file f = {.path = "lib.wasm", .container = "WebAssembly module", .objects = &o, .n_objects = 1};
  mpk_mlc_library *lib = NULL;
  mpk_error err;
  assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), 0);
  assert_non_null(strstr(lib->vm_where, "section memory, relax.VMExecutable at address"));
  assert_int_equal(lib->metadata->source_offset, 5000 + 3);
  assert_int_equal(lib->n_imports, 2);
  assert_string_equal(lib->imports[0].module, "env");
  assert_string_equal(lib->imports[1].name, "fd_write");
  assert_int_equal(lib->n_globals_defined, 1);
  assert_string_equal(lib->globals_defined[0], "vm.builtin.x");
  /* kernels of a WebAssembly library are in its device module: only dotted names are needed */
  assert_int_equal(lib->n_globals_needed, 1);
  mpk_mlc_library_free(lib);
  /* the text split across two segments: no contiguous file offset */
  segs[1].addr = text + 3;
  segs[1].size = mem.n - (text + 3);
  segs[0].size = text + 3;
  assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), 0);
  assert_int_equal(lib->metadata->source_offset, -1);
  mpk_mlc_library_free(lib);
  free(x.p);
  free(mem.p);
}

/* ---------------------------------------------------------------- the six real libraries */

static uint64_t leb(const uint8_t *d, size_t *i) {
  uint64_t v = 0;
  for (int s = 0; s < 64; s += 7) {
    uint8_t c = d[(*i)++];
    v |= (uint64_t)(c & 0x7f) << s;
    if (!(c & 0x80)) break;
  }
  return v;
}

/* The test's own layout of a WebAssembly module's active data segments (as the lead's prototype
   does), so that the executable reader is tested on real memory before objfile's reader lands. */
static void wasm_object(const uint8_t *d, size_t n, uint8_t **memory, mpk_obj_segment **segs, size_t *n_segs,
                        uint64_t *top) {
  size_t i = 8, cap = 4096, k = 0;
  mpk_obj_segment *s = calloc(cap, sizeof *s);
  *top = 0;
  while (i < n) {
    uint8_t id = d[i++];
    uint64_t size = leb(d, &i);
    size_t end = i + size;
    if (id == 11) {
      size_t j = i;
      uint64_t count = leb(d, &j);
      for (uint64_t c = 0; c < count; c++) {
        uint64_t flags = leb(d, &j);
        assert_true(flags == 0 || flags == 2);
        if (flags == 2) leb(d, &j);
        assert_int_equal(d[j++], 0x41); /* i32.const */
        uint64_t addr = leb(d, &j);
        assert_int_equal(d[j++], 0x0b);
        uint64_t len = leb(d, &j);
        if (k == cap) {
          cap *= 2;
          s = realloc(s, cap * sizeof *s);
          assert_non_null(s);
        }
        s[k++] = (mpk_obj_segment){.addr = addr, .size = len, .offset = (int64_t)j, .active = true};
        if (addr + len > *top) *top = addr + len;
        j += len;
      }
    }
    i = end;
  }
  uint8_t *m = calloc(1, *top);
  for (size_t c = 0; c < k; c++) memcpy(m + s[c].addr, d + s[c].offset, s[c].size);
  *memory = m;
  *segs = s;
  *n_segs = k;
}

typedef struct real_lib {
  const char *file;     /* in realdata/mlc-libs */
  const char *member;   /* extracted from the .tar with tar xzf */
  int64_t offset;       /* the stored string's offset (README) */
  size_t bytes;
  const char *model_type;
  size_t n_functions;
  bool decode;
  int kv_args;          /* create_tir_paged_kv_cache's arity; 0: none */
  const char *type_key;
} real_lib;

static const real_lib REAL[] = {
    {"Llama-2-7b-chat-hf-q4f16_1-mali.so", NULL, 495629, 36750, "llama", 67, true, 5, "relax.Executable"},
    {"Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu.wasm", NULL, 2220319, 36119, "phi3", 71, true, 5,
     "relax.Executable"},
    {"TinyLlama-1.1B-Chat-v0.4-q4f16_1-ctx1k-webgpu.wasm", NULL, 1945351, 25429, "llama", 69, true, 5,
     "relax.Executable"},
    {"gemma-2b-it-q4f16_1-iphone.tar", "gemma_q4f16_1_devc.o", 35170, 20672, "gemma", 70, true, 4, "relax.Executable"},
    {"phi-2-q4f16_1-android.tar", "phi_msft_q4f16_1_devc.o", 104214, 46895, "phi-msft", 63, true, 5,
     "relax.Executable"},
    {"snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu.wasm", NULL, 2725810, 20184, "bert", 43, false, 0,
     "relax.VMExecutable"},
};

static void check_real(const real_lib *r, const mpk_mlc_library *lib) {
  assert_non_null(lib->metadata);
  assert_int_equal(lib->metadata->source_offset, r->offset + 8);
  assert_int_equal(lib->metadata->json_len, r->bytes);
  assert_string_equal(lib->metadata->model_type, r->model_type);
  assert_int_equal(lib->metadata_scanned, 0);
  assert_non_null(strstr(lib->metadata_where, "(the string the VM function _metadata returns)"));
  assert_string_equal(lib->vm_type_key, r->type_key);
  assert_string_equal(lib->vm_version, "0.14");
  assert_int_equal(lib->n_functions, r->n_functions);
  const mpk_mlc_function *f = mpk_mlc_library_function(lib, "prefill");
  assert_non_null(f);
  assert_int_equal(f->kind, MPK_MLC_FUNCTION_VM);
  assert_int_equal(f->num_args, 3);
  assert_string_equal(f->param_names[2], "packed_params");
  assert_true((mpk_mlc_library_function(lib, "decode") != NULL) == r->decode);
  const mpk_mlc_function *md = mpk_mlc_library_function(lib, "_metadata");
  assert_non_null(md);
  assert_int_equal(md->num_args, 0);
  if (r->decode) {
    static const char *const batch[] = {"batch_prefill", "batch_decode", "batch_verify", "embed"};
    for (size_t k = 0; k < 4; k++) assert_non_null(mpk_mlc_library_function(lib, batch[k]));
    const mpk_mlc_function *dec = mpk_mlc_library_function(lib, "decode");
    assert_int_equal(dec->num_args, 3);
    assert_string_equal(dec->param_names[0], "input_embed");
    assert_string_equal(dec->param_names[1], "paged_kv_cache");
    const mpk_mlc_function *bp = mpk_mlc_library_function(lib, "batch_prefill");
    assert_int_equal(bp->num_args, 4);
    assert_string_equal(bp->param_names[1], "logit_positions");
    const mpk_mlc_function *kv = mpk_mlc_library_function(lib, "create_tir_paged_kv_cache");
    assert_non_null(kv);
    assert_int_equal(kv->num_args, r->kv_args);
    assert_int_equal(kv->n_param_names, (size_t)r->kv_args);
    assert_string_equal(kv->param_names[0], "max_batch_size_");
    assert_string_equal(mpk_mlc_library_function(lib, "embed")->param_names[0], "input_ids");
  } else {
    assert_string_equal(f->param_names[0], "inputs");
    assert_string_equal(f->param_names[1], "attention_mask");
    assert_null(mpk_mlc_library_function(lib, "create_tir_paged_kv_cache"));
  }
  /* every runtime global the VM calls is a dotted name here, vm.builtin.copy among them */
  bool copy = false;
  for (size_t i = 0; i < lib->n_globals_needed; i++) {
    assert_non_null(strchr(lib->globals_needed[i], '.'));
    copy = copy || strcmp(lib->globals_needed[i], "vm.builtin.copy") == 0;
  }
  assert_true(copy);
}

static void test_real_libraries(void **state) {
  (void)state;
  const char *tmp = NULL;
  for (size_t k = 0; k < sizeof REAL / sizeof REAL[0]; k++) {
    const real_lib *r = &REAL[k];
    char rel[512], path[1024];
    snprintf(rel, sizeof rel, "realdata/mlc-libs/%s", r->file);
    snprintf(path, sizeof path, "%s", tu_shared(rel));
    mpk_mlc_library *lib = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    if (r->member) { /* the member itself until objfile reads gzip'd tars (the lead adds the direct rows) */
      if (!tmp) tmp = tu_tmpdir();
      tu_sh("tar xzf '%s' -C '%s' '%s' 2>/dev/null", path, tmp, r->member);
      snprintf(path, sizeof path, "%s/%s", tmp, r->member);
    }
    size_t n;
    uint8_t *d = tu_read_file(path, &n);
    if (n >= 4 && memcmp(d, "\0asm", 4) == 0) {
      uint8_t *memory;
      mpk_obj_segment *segs;
      size_t n_segs;
      uint64_t top;
      wasm_object(d, n, &memory, &segs, &n_segs, &top);
      mpk_obj_section sec = {.name = "memory", .data = memory, .size = top, .offset = -1};
      mpk_obj_object o = {.format = "WebAssembly module", .arch = "wasm32", .bytes = d, .size = n, .sections = &sec,
                          .n_sections = 1, .segments = segs, .n_segments = n_segs};
      mpk_obj_file f = {.path = r->file, .container = "WebAssembly module", .objects = &o, .n_objects = 1};
      assert_int_equal(mpk_mlc_library_from_obj(&f, &lib, &err), 0);
      check_real(r, lib);
      assert_non_null(strstr(lib->vm_where, "section memory"));
      /* the runtime compiled in registers its globals */
      bool alloc = false;
      for (size_t i = 0; i < lib->n_globals_defined; i++)
        alloc = alloc || strcmp(lib->globals_defined[i], "vm.builtin.alloc_storage") == 0;
      assert_true(alloc);
      free(memory);
      free(segs);
    } else {
      if (mpk_mlc_library_open(path, &lib, &err)) fail_msg("%s: %s", path, tu_err(&err));
      check_real(r, lib);
      assert_int_equal(lib->n_globals_defined, 0);
      /* and mpk_mlc_metadata_load goes through it */
      mpk_mlc_metadata *md = NULL;
      assert_int_equal(mpk_mlc_metadata_load(path, &md, &err), 0);
      assert_int_equal(md->source_offset, r->offset + 8);
      assert_int_equal(md->json_len, r->bytes);
      mpk_mlc_metadata_free(md);
    }
    mpk_mlc_library_free(lib);
    free(d);
  }
}

static void test_arguments(void **state) {
  (void)state;
  mpk_mlc_library *lib = (mpk_mlc_library *)1;
  mpk_error err;
  assert_int_equal(mpk_mlc_library_open(NULL, &lib, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_library_open("x", NULL, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_library_open("/nonexistent/lib.so", &lib, &err), MPK_ENOTFOUND);
  assert_null(lib);
  /* a _metadata JSON file is no library */
  const char *dir = tu_tmpdir();
  char path[1024];
  snprintf(path, sizeof path, "%s/md.json", dir);
  FILE *fp = fopen(path, "w");
  fputs(MD_JSON, fp);
  fclose(fp);
  assert_int_equal(mpk_mlc_library_open(path, &lib, &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "a _metadata JSON file, not a library"));
  mpk_mlc_library_free(NULL);
  assert_null(mpk_mlc_library_function(NULL, "x"));
  assert_string_equal(mpk_mlc_function_kind_name(MPK_MLC_FUNCTION_VM_TIR), "vm_tir");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_truncated_everywhere),
      cmocka_unit_test(test_huge_counts),
      cmocka_unit_test(test_unknown_kind_and_type),
      cmocka_unit_test(test_find_in_objects),
      cmocka_unit_test(test_metadata_without_code),
      cmocka_unit_test(test_wasm_memory),
      cmocka_unit_test(test_real_libraries),
      cmocka_unit_test(test_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
