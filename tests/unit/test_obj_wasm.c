#define _GNU_SOURCE
/* The WebAssembly reader (src/objfile/wasm.c): hand-built modules with every section kind, the
   section rules (order, uniqueness, sizes), LEB128 overflow, every truncation, data segments
   (active, passive, memory-indexed, global-offset), the memory image (zero-filled gaps, overlaps:
   later wins, the memory's own initial size, the image limit), and the three real libraries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objfile/objfile.h"
#include "testutil.h"

typedef struct wb {
  uint8_t *p;
  size_t n, cap;
} wb;

static void put(wb *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  if (n) memcpy(b->p + b->n, src, n);
  b->n += n;
}
static void u8(wb *b, uint8_t v) { put(b, &v, 1); }
static void uleb(wb *b, uint64_t v) {
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    u8(b, c | (v ? 0x80 : 0));
  } while (v);
}
static void sleb(wb *b, int64_t v) {
  for (;;) {
    uint8_t c = v & 0x7f;
    v >>= 7;
    bool done = (v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40));
    u8(b, c | (done ? 0 : 0x80));
    if (done) return;
  }
}
static void str(wb *b, const char *s) {
  uleb(b, strlen(s));
  put(b, s, strlen(s));
}
static void section(wb *m, uint8_t id, wb *body) {
  u8(m, id);
  uleb(m, body->n);
  put(m, body->p, body->n);
  free(body->p);
  *body = (wb){0};
}
static void header(wb *m) { put(m, "\0asm\x01\0\0\0", 8); }
/* An active segment of memory 0 at `addr`. */
static void seg_active(wb *b, uint32_t addr, const void *data, size_t n) {
  u8(b, 0);
  u8(b, 0x41);
  sleb(b, (int32_t)addr);
  u8(b, 0x0b);
  uleb(b, n);
  put(b, data, n);
}

typedef struct parsed {
  mpk_arena *a;
  mpk_obj_object o;
  mpk_error err;
  int rc;
} parsed;

static parsed parse(const wb *m) {
  parsed p = {.a = mpk_arena_new()};
  assert_non_null(p.a);
  p.o = (mpk_obj_object){.bytes = m->p, .size = m->n, .file_offset = 0};
  mpk_error_clear(&p.err);
  p.rc = mpk_obj_parse_wasm(&p.o, p.a, "t.wasm", &p.err);
  return p;
}

/* A module with every section kind (types, imports of each kind, functions, table, memory, tag,
   global, exports, start, elements, data count, code, data) and custom sections between them. */
static void build_full(wb *m, bool import_memory) {
  wb s = {0};
  header(m);
  str(&s, "producers");
  put(&s, "xyz", 3);
  section(m, 0, &s);
  /* type: (func) and (func (param i32) (result i32)) */
  uleb(&s, 2);
  u8(&s, 0x60), uleb(&s, 0), uleb(&s, 0);
  u8(&s, 0x60), uleb(&s, 1), u8(&s, 0x7f), uleb(&s, 1), u8(&s, 0x7f);
  section(m, 1, &s);
  /* imports: two functions, a table, (a memory), a global, a tag */
  uleb(&s, import_memory ? 6 : 5);
  str(&s, "env"), str(&s, "TVMWasmPackedCFunc"), u8(&s, 0), uleb(&s, 1);
  str(&s, "wasi_snapshot_preview1"), str(&s, "fd_write"), u8(&s, 0), uleb(&s, 0);
  str(&s, "env"), str(&s, "tbl"), u8(&s, 1), u8(&s, 0x70), u8(&s, 0), uleb(&s, 1);
  if (import_memory) str(&s, "env"), str(&s, "memory"), u8(&s, 2), u8(&s, 1), uleb(&s, 2), uleb(&s, 4);
  str(&s, "env"), str(&s, "g"), u8(&s, 3), u8(&s, 0x7f), u8(&s, 0);
  str(&s, "env"), str(&s, "exn"), u8(&s, 4), u8(&s, 0), uleb(&s, 0);
  section(m, 2, &s);
  uleb(&s, 1), uleb(&s, 1); /* function: one, type 1 */
  section(m, 3, &s);
  uleb(&s, 1), u8(&s, 0x70), u8(&s, 0), uleb(&s, 1); /* table */
  section(m, 4, &s);
  if (!import_memory) {
    uleb(&s, 1), u8(&s, 1), uleb(&s, 2), uleb(&s, 4); /* memory: 2 pages, at most 4 */
    section(m, 5, &s);
  }
  uleb(&s, 1), u8(&s, 0), uleb(&s, 0); /* tag */
  section(m, 13, &s);
  uleb(&s, 1), u8(&s, 0x7f), u8(&s, 0), u8(&s, 0x41), sleb(&s, 7), u8(&s, 0x0b); /* global */
  section(m, 6, &s);
  uleb(&s, 3);
  str(&s, "TVMFuncCall"), u8(&s, 0), uleb(&s, 2);
  str(&s, "memory"), u8(&s, 2), uleb(&s, 0);
  str(&s, "TVMGetLastError"), u8(&s, 0), uleb(&s, 2);
  section(m, 7, &s);
  uleb(&s, 0); /* start: function 0 */
  section(m, 8, &s);
  uleb(&s, 1), uleb(&s, 0), u8(&s, 0x41), sleb(&s, 0), u8(&s, 0x0b), uleb(&s, 1), uleb(&s, 2); /* element */
  section(m, 9, &s);
  str(&s, "name");
  section(m, 0, &s);
  uleb(&s, 5); /* data count */
  section(m, 12, &s);
  uleb(&s, 1), uleb(&s, 4), uleb(&s, 0), u8(&s, 0x20), uleb(&s, 0), u8(&s, 0x0b); /* code: local.get 0 */
  section(m, 10, &s);
  uleb(&s, 5);
  seg_active(&s, 1024, "hello", 5);
  u8(&s, 1), uleb(&s, 3), put(&s, "psv", 3);                                          /* passive */
  u8(&s, 2), uleb(&s, 0), u8(&s, 0x41), sleb(&s, 2000), u8(&s, 0x0b), uleb(&s, 2), put(&s, "mi", 2); /* memory 0 */
  u8(&s, 0), u8(&s, 0x23), uleb(&s, 0), u8(&s, 0x0b), uleb(&s, 1), put(&s, "g", 1); /* global.get offset */
  seg_active(&s, 1026, "LL", 2);                                                      /* overlaps: later wins */
  section(m, 11, &s);
  str(&s, "trailing custom");
  section(m, 0, &s);
}

static void check_full(const parsed *p) {
  assert_int_equal(p->rc, 0);
  assert_string_equal(p->o.format, "WebAssembly module");
  assert_string_equal(p->o.arch, "wasm32");
  /* imports: functions flagged */
  assert_true(p->o.n_imports >= 5);
  assert_string_equal(p->o.imports[0].module, "env");
  assert_string_equal(p->o.imports[0].name, "TVMWasmPackedCFunc");
  assert_true(p->o.imports[0].function);
  assert_string_equal(p->o.imports[1].module, "wasi_snapshot_preview1");
  assert_true(p->o.imports[1].function);
  assert_false(p->o.imports[2].function);
  /* exports: the functions only */
  assert_int_equal(p->o.n_exports, 2);
  assert_string_equal(p->o.exports[0], "TVMFuncCall");
  assert_string_equal(p->o.exports[1], "TVMGetLastError");
  const mpk_obj_symbol *sym = mpk_obj_find_symbol(&p->o, "TVMFuncCall");
  assert_non_null(sym);
  assert_true(sym->function);
  assert_null(mpk_obj_find_symbol(&p->o, "TVMWasmPackedCFunc")); /* an import: not defined */
  /* segments */
  assert_int_equal(p->o.n_segments, 5);
  assert_true(p->o.segments[0].active);
  assert_int_equal(p->o.segments[0].addr, 1024);
  assert_int_equal(p->o.segments[0].size, 5);
  assert_memory_equal(p->o.bytes + p->o.segments[0].offset, "hello", 5);
  assert_false(p->o.segments[1].active);
  assert_memory_equal(p->o.bytes + p->o.segments[1].offset, "psv", 3);
  assert_true(p->o.segments[2].active);
  assert_int_equal(p->o.segments[2].addr, 2000);
  assert_false(p->o.segments[3].active); /* global.get: address unknown */
  assert_true(p->o.segments[4].active);
  /* memory image: 0..2002, zeros between, the overlap resolved as instantiation does */
  assert_int_equal(p->o.n_sections, 1);
  const mpk_obj_section *mem = &p->o.sections[0];
  assert_string_equal(mem->name, "memory");
  assert_int_equal(mem->size, 2002);
  assert_int_equal(mem->offset, -1);
  assert_memory_equal(mem->data + 1024, "heLLo", 5);
  assert_memory_equal(mem->data + 2000, "mi", 2);
  for (size_t i = 0; i < 1024; i++) assert_int_equal(mem->data[i], 0);
  for (size_t i = 1029; i < 2000; i++) assert_int_equal(mem->data[i], 0);
}

static void test_every_section_kind(void **state) {
  (void)state;
  for (int imported = 0; imported < 2; imported++) {
    wb m = {0};
    build_full(&m, imported);
    parsed p = parse(&m);
    if (p.rc) fail_msg("%s", tu_err(&p.err));
    check_full(&p);
    if (imported) assert_int_equal(p.o.n_imports, 6);
    mpk_arena_free(p.a);

    /* the section list: ids, names of custom sections, ranges */
    mpk_arena *a = mpk_arena_new();
    mpk_obj_wasm_section *secs;
    size_t n;
    mpk_error err;
    assert_int_equal(mpk_obj_wasm_sections(m.p, m.n, "t.wasm", a, &secs, &n, &err), 0);
    assert_int_equal(n, imported ? 15 : 16);
    assert_int_equal(secs[0].id, 0);
    assert_string_equal(secs[0].name, "producers");
    assert_int_equal(secs[0].offset, 8);
    assert_int_equal(secs[n - 1].body + secs[n - 1].size, m.n);
    assert_string_equal(secs[n - 1].name, "trailing custom");
    assert_null(secs[1].name);
    mpk_arena_free(a);
    free(m.p);
  }
}

/* Every prefix of a valid module is either the module cut at a section boundary (valid, fewer
   sections) or refused as malformed: never a crash, never a read past the end. */
static void test_truncations(void **state) {
  (void)state;
  wb m = {0};
  build_full(&m, false);
  mpk_arena *a = mpk_arena_new();
  mpk_obj_wasm_section *secs;
  size_t n;
  mpk_error err;
  assert_int_equal(mpk_obj_wasm_sections(m.p, m.n, "t.wasm", a, &secs, &n, &err), 0);
  for (size_t len = 0; len < m.n; len++) {
    uint8_t *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees any overread */
    memcpy(copy, m.p, len);
    wb t = {.p = copy, .n = len};
    parsed p = parse(&t);
    bool boundary = len == 8;
    for (size_t k = 0; k < n; k++) boundary |= secs[k].body + secs[k].size == len;
    if (boundary) {
      /* sections after the cut are gone; the ones before must still parse, except a data count
         without its data section */
      if (p.rc) assert_true(strstr(p.err.message, "data count") != NULL);
    } else {
      assert_int_not_equal(p.rc, 0);
      assert_true(p.rc == MPK_EMALFORMED || p.rc == MPK_EUNSUPPORTED);
      assert_string_equal(p.err.file, "t.wasm");
    }
    mpk_arena_free(p.a);
    free(copy);
  }
  mpk_arena_free(a);
  free(m.p);
}

static void expect_refusal(const wb *m, int code, const char *needle) {
  parsed p = parse(m);
  if (p.rc != code || !strstr(p.err.message, needle))
    fail_msg("expected %d with '%s', got %d: %s", code, needle, p.rc, tu_err(&p.err));
  mpk_arena_free(p.a);
}

static void test_section_rules(void **state) {
  (void)state;
  wb m = {0}, s = {0};
  /* not version 1 */
  put(&m, "\0asm\x0d\0\x01\0", 8);
  expect_refusal(&m, MPK_EUNSUPPORTED, "component");
  free(m.p), m = (wb){0};
  /* order: export before memory */
  header(&m);
  uleb(&s, 0);
  section(&m, 7, &s);
  uleb(&s, 0);
  section(&m, 5, &s);
  expect_refusal(&m, MPK_EMALFORMED, "section order");
  free(m.p), m = (wb){0};
  /* data count goes before code: after code it is out of order */
  header(&m);
  uleb(&s, 0);
  section(&m, 10, &s);
  uleb(&s, 0);
  section(&m, 12, &s);
  expect_refusal(&m, MPK_EMALFORMED, "section order");
  free(m.p), m = (wb){0};
  /* twice the same section */
  header(&m);
  uleb(&s, 0);
  section(&m, 1, &s);
  uleb(&s, 0);
  section(&m, 1, &s);
  expect_refusal(&m, MPK_EMALFORMED, "a second type section");
  free(m.p), m = (wb){0};
  /* an unknown id */
  header(&m);
  u8(&m, 14), u8(&m, 0);
  expect_refusal(&m, MPK_EMALFORMED, "unknown section id 14");
  free(m.p), m = (wb){0};
  /* a size past the end */
  header(&m);
  u8(&m, 1), uleb(&m, 100), u8(&m, 0);
  expect_refusal(&m, MPK_EMALFORMED, "runs past the module's end");
  free(m.p), m = (wb){0};
  /* LEB128 overflow: a u32 of 6 bytes, a value of 2^32, and a count larger than its section */
  header(&m);
  u8(&m, 1), put(&m, "\x80\x80\x80\x80\x80\x00", 6);
  expect_refusal(&m, MPK_EMALFORMED, "LEB128");
  free(m.p), m = (wb){0};
  header(&m);
  u8(&m, 1), put(&m, "\x80\x80\x80\x80\x10", 5);
  expect_refusal(&m, MPK_EMALFORMED, "LEB128");
  free(m.p), m = (wb){0};
  header(&m);
  uleb(&s, 0xFFFFFFFFu);
  section(&m, 2, &s);
  expect_refusal(&m, MPK_ELIMIT, "4294967295 imports exceed the engines' limit");
  free(m.p), m = (wb){0};
  header(&m);
  uleb(&s, 50000);
  section(&m, 2, &s);
  expect_refusal(&m, MPK_EMALFORMED, "import count 50000 does not fit");
  free(m.p), m = (wb){0};
  header(&m);
  uleb(&s, 90000), u8(&s, 0);
  section(&m, 11, &s);
  expect_refusal(&m, MPK_EMALFORMED, "data segment count 90000 does not fit");
  free(m.p), m = (wb){0};
  /* counts past the engines' limits */
  header(&m);
  uleb(&s, 100001);
  for (int i = 0; i < 100001; i++) u8(&s, 1), uleb(&s, 0);
  section(&m, 11, &s);
  expect_refusal(&m, MPK_ELIMIT, "100001 data segments exceed the engines' limit of 100000");
  free(m.p), m = (wb){0};
  header(&m);
  uleb(&s, 100001);
  for (int i = 0; i < 100001; i++) str(&s, "f"), u8(&s, 0), uleb(&s, 0);
  section(&m, 7, &s);
  expect_refusal(&m, MPK_ELIMIT, "100001 exports exceed");
  free(m.p), m = (wb){0};
  /* an import name that is not UTF-8, and an unknown import kind */
  header(&m);
  uleb(&s, 1), str(&s, "env"), uleb(&s, 2), put(&s, "\xff\xfe", 2), u8(&s, 0), uleb(&s, 0);
  section(&m, 2, &s);
  expect_refusal(&m, MPK_EMALFORMED, "not UTF-8");
  free(m.p), m = (wb){0};
  header(&m);
  uleb(&s, 1), str(&s, "env"), str(&s, "x"), u8(&s, 9), uleb(&s, 0);
  section(&m, 2, &s);
  expect_refusal(&m, MPK_EMALFORMED, "unknown kind 9");
  free(m.p), m = (wb){0};
  /* bytes left over inside a section */
  header(&m);
  uleb(&s, 0), u8(&s, 0);
  section(&m, 7, &s);
  expect_refusal(&m, MPK_EMALFORMED, "export section: bytes after");
  free(m.p), m = (wb){0};
  /* a data count that disagrees */
  header(&m);
  uleb(&s, 1), u8(&s, 0), uleb(&s, 1);
  section(&m, 5, &s);
  uleb(&s, 2);
  section(&m, 12, &s);
  uleb(&s, 1);
  seg_active(&s, 0, "x", 1);
  section(&m, 11, &s);
  expect_refusal(&m, MPK_EMALFORMED, "data count section says 2 segments, the data section has 1");
  free(m.p), m = (wb){0};
  /* an offset expression with an instruction constant expressions do not allow */
  header(&m);
  uleb(&s, 1), u8(&s, 0), uleb(&s, 1);
  section(&m, 5, &s);
  uleb(&s, 1), u8(&s, 0), u8(&s, 0x20), uleb(&s, 0), u8(&s, 0x0b), uleb(&s, 0);
  section(&m, 11, &s);
  expect_refusal(&m, MPK_EMALFORMED, "opcode 0x20");
  free(m.p), m = (wb){0};
  /* data segment flags 3 */
  header(&m);
  uleb(&s, 1), u8(&s, 3), uleb(&s, 0);
  section(&m, 11, &s);
  expect_refusal(&m, MPK_EMALFORMED, "flags 3");
  free(m.p);
}

static void test_memory_bounds(void **state) {
  (void)state;
  wb m = {0}, s = {0};
  /* one page: a segment ending exactly at 65536 is fine, one byte more traps at instantiation */
  for (int past = 0; past < 2; past++) {
    header(&m);
    uleb(&s, 1), u8(&s, 0), uleb(&s, 1);
    section(&m, 5, &s);
    uleb(&s, 1);
    seg_active(&s, 65536 - 4 + past, "abcd", 4);
    section(&m, 11, &s);
    if (past) {
      expect_refusal(&m, MPK_EMALFORMED, "initial size of 1 pages");
    } else {
      parsed p = parse(&m);
      assert_int_equal(p.rc, 0);
      assert_int_equal(p.o.sections[0].size, 65536);
      assert_memory_equal(p.o.sections[0].data + 65532, "abcd", 4);
      mpk_arena_free(p.a);
    }
    free(m.p), m = (wb){0};
  }
  /* an active segment without any memory */
  header(&m);
  uleb(&s, 1);
  seg_active(&s, 0, "x", 1);
  section(&m, 11, &s);
  expect_refusal(&m, MPK_EMALFORMED, "has no memory");
  free(m.p), m = (wb){0};
  /* a memory of 65536 pages and a segment near 4 GiB: past MPK_OBJ_MAX_WASM_MEMORY, refused
     before anything is allocated */
  header(&m);
  uleb(&s, 1), u8(&s, 0), uleb(&s, 65536);
  section(&m, 5, &s);
  uleb(&s, 1);
  seg_active(&s, 0xFFFFFF00u, "x", 1);
  section(&m, 11, &s);
  expect_refusal(&m, MPK_ELIMIT, "beyond the limit");
  free(m.p), m = (wb){0};
  /* a memory over 4 GiB, and a maximum below the minimum */
  header(&m);
  uleb(&s, 1), u8(&s, 0), uleb(&s, 65537);
  section(&m, 5, &s);
  expect_refusal(&m, MPK_EMALFORMED, "exceeds 65536");
  free(m.p), m = (wb){0};
  header(&m);
  uleb(&s, 1), u8(&s, 1), uleb(&s, 3), uleb(&s, 2);
  section(&m, 5, &s);
  expect_refusal(&m, MPK_EMALFORMED, "maximum 2 below minimum 3");
  free(m.p), m = (wb){0};
  /* a segment of another memory is listed, not laid out */
  header(&m);
  uleb(&s, 2), u8(&s, 0), uleb(&s, 1), u8(&s, 0), uleb(&s, 1);
  section(&m, 5, &s);
  uleb(&s, 1), u8(&s, 2), uleb(&s, 1), u8(&s, 0x41), sleb(&s, 10), u8(&s, 0x0b), uleb(&s, 1), u8(&s, 'z');
  section(&m, 11, &s);
  parsed p = parse(&m);
  assert_int_equal(p.rc, 0);
  assert_int_equal(p.o.n_segments, 1);
  assert_false(p.o.segments[0].active);
  assert_int_equal(p.o.sections[0].size, 0);
  mpk_arena_free(p.a);
  free(m.p);
}

/* The real libraries: every segment active in memory 0, the image holds the executable and the
   _metadata the README places, the TVM imports and exports are there. */
static void test_real(void **state) {
  (void)state;
  static const struct {
    const char *file;
    size_t segments;
    uint64_t top;
    uint64_t md_file_offset; /* the README's: of the u64 length before the JSON text */
    uint64_t md_len;
  } REAL[] = {
      {"Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu.wasm", 6912, 2675449, 2220319, 36119},
      {"TinyLlama-1.1B-Chat-v0.4-q4f16_1-ctx1k-webgpu.wasm", 4947, 2059737, 1945351, 25429},
      {"snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu.wasm", 983, 1216729, 2725810, 20184},
  };
  for (size_t k = 0; k < sizeof REAL / sizeof REAL[0]; k++) {
    char rel[256];
    snprintf(rel, sizeof rel, "realdata/mlc-libs/%s", REAL[k].file);
    size_t len;
    uint8_t *bytes = tu_read_file(tu_shared(rel), &len);
    wb m = {.p = bytes, .n = len};
    parsed p = parse(&m);
    if (p.rc) fail_msg("%s: %s", REAL[k].file, tu_err(&p.err));
    assert_int_equal(p.o.n_segments, REAL[k].segments);
    for (size_t i = 0; i < p.o.n_segments; i++) assert_true(p.o.segments[i].active);
    const mpk_obj_section *mem = &p.o.sections[0];
    assert_int_equal(mem->size, REAL[k].top);
    assert_non_null(memmem(mem->data, mem->size, "relax.", 6));
    /* the _metadata's file offset maps into a segment, and the image holds the same bytes there */
    bool found = false;
    for (size_t i = 0; i < p.o.n_segments && !found; i++) {
      const mpk_obj_segment *g = &p.o.segments[i];
      if ((uint64_t)g->offset <= REAL[k].md_file_offset && REAL[k].md_file_offset < (uint64_t)g->offset + g->size) {
        uint64_t addr = g->addr + (REAL[k].md_file_offset - (uint64_t)g->offset);
        uint64_t L = 0;
        for (int b = 7; b >= 0; b--) L = (L << 8) | mem->data[addr + (unsigned)b];
        assert_int_equal(L, REAL[k].md_len);
        assert_memory_equal(mem->data + addr + 8, "{\"model_type\"", 13);
        assert_memory_equal(mem->data + addr, bytes + REAL[k].md_file_offset, 8 + REAL[k].md_len);
        found = true;
      }
    }
    assert_true(found);
    bool packed = false, wasi = false;
    for (size_t i = 0; i < p.o.n_imports; i++) {
      if (strcmp(p.o.imports[i].module, "env") == 0 && (strcmp(p.o.imports[i].name, "TVMWasmPackedCFunc") == 0 ||
                                                    strcmp(p.o.imports[i].name, "TVMFFIWasmSafeCall") == 0)) /* TVM FFI */
        packed = p.o.imports[i].function;
      if (strcmp(p.o.imports[i].module, "wasi_snapshot_preview1") == 0) wasi = true;
    }
    assert_true(packed);
    assert_true(wasi);
    bool call = false;
    for (size_t i = 0; i < p.o.n_exports; i++) call |= strcmp(p.o.exports[i], "TVMBackendAllocWorkspace") == 0;
    assert_true(call);
    mpk_arena_free(p.a);
    free(bytes);
  }
}

static void test_uleb(void **state) {
  (void)state;
  uint64_t pos = 0, v = 0;
  const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  assert_int_equal(mpk_obj_uleb(max, sizeof max, &pos, &v), 0);
  assert_true(v == UINT64_MAX);
  assert_int_equal(pos, 10);
  const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  pos = 0;
  assert_int_equal(mpk_obj_uleb(over, sizeof over, &pos, &v), -1);
  const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  pos = 0;
  assert_int_equal(mpk_obj_uleb(eleven, sizeof eleven, &pos, &v), -1);
  const uint8_t cut[] = {0x80, 0x80};
  pos = 0;
  assert_int_equal(mpk_obj_uleb(cut, sizeof cut, &pos, &v), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_section_kind), cmocka_unit_test(test_truncations),
      cmocka_unit_test(test_section_rules),      cmocka_unit_test(test_memory_bounds),
      cmocka_unit_test(test_real),               cmocka_unit_test(test_uleb),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
