/* The WebAssembly reader (objfile.h, docs/objfile.md "WebAssembly"): a core module's sections,
   imports, exports and data segments, and the memory image its active data segments lay out.

   Everything is read from the mapped bytes and range-checked before use: a section's size against
   the bytes after it, every count against the bytes that must hold its entries before anything is
   allocated, every LEB128 against its width (u32 fields: at most 5 bytes and < 2^32). The one large
   allocation is the memory image, bounded by MPK_OBJ_MAX_WASM_MEMORY and by the module's memory 0
   (a segment past its initial size would trap at instantiation: the module is refused). */
#include <stdio.h>
#include <string.h>

#include "objfile/objfile.h"

#define WASM_PAGE ((uint64_t)65536)
/* Counts bounded as the engines bound them (V8's kV8MaxWasmImports, ...Exports, ...DataSegments,
   ...Memories): a module past them would not compile in a browser, and the bound keeps the arrays
   a small multiple of what real libraries need (TVM's: 13 imports, ~110 exports, < 10000 segments). */
#define MAX_IMPORTS 100000u
#define MAX_EXPORTS 100000u
#define MAX_SEGMENTS 100000u
#define MAX_MEMORIES 100u

/* Section ids in the order the core specification requires (custom sections, id 0, anywhere):
   type, import, function, table, memory, tag, global, export, start, element, data count, code,
   data. rank[id] is its place; ids past 13 are unknown. */
static const uint8_t rank_of[14] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13, 11, 6};
static const char *const section_names[14] = {"custom", "type",    "import", "function", "table",
                                              "memory", "global",  "export", "start",    "element",
                                              "code",   "data",    "data count", "tag"};

int mpk_obj_uleb(const uint8_t *d, uint64_t end, uint64_t *pos, uint64_t *out) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 70 && *pos < end; shift += 7) {
    uint8_t b = d[(*pos)++];
    if (shift == 63 && b > 1) return -1;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

typedef struct rd {
  const uint8_t *d;
  uint64_t n;          /* the module's size */
  const char *shown;   /* names the module in messages */
  int64_t base;        /* the module's offset in the file (-1: inside compressed data) */
  mpk_arena *a;
  mpk_error *err;
} rd;

__attribute__((format(printf, 4, 5))) static int bad(rd *r, int code, uint64_t pos, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->base >= 0)
    return mpk_fail_at(r->err, code, r->shown, r->base + (int64_t)pos, "WebAssembly module: %s", msg);
  return mpk_fail(r->err, code, r->shown, NULL, "WebAssembly module: %s (at byte %llu of the module)", msg,
                  (unsigned long long)pos);
}

static int oom(rd *r) { return mpk_fail(r->err, MPK_ENOMEM, r->shown, NULL, "out of memory"); }

/* A u32 LEB128 (at most 5 bytes, value < 2^32) in [*pos, end). */
static int u32(rd *r, uint64_t end, uint64_t *pos, const char *what, uint32_t *out) {
  uint64_t at = *pos, v = 0;
  if (mpk_obj_uleb(r->d, end, pos, &v) != 0 || *pos - at > 5 || v > UINT32_MAX)
    return bad(r, MPK_EMALFORMED, at, "%s: malformed or truncated LEB128 (a u32 takes at most 5 bytes, is below 2^32 "
               "and ends inside its section)", what);
  *out = (uint32_t)v;
  return 0;
}

/* A u64 LEB128 (memory64 limits). */
static int u64(rd *r, uint64_t end, uint64_t *pos, const char *what, uint64_t *out) {
  uint64_t at = *pos;
  if (mpk_obj_uleb(r->d, end, pos, out) != 0)
    return bad(r, MPK_EMALFORMED, at, "%s: malformed or truncated LEB128", what);
  return 0;
}

/* A signed LEB128 of at most `bits` bits (i32.const: 32, 5 bytes; i64.const: 64, 10 bytes). */
static int sleb(rd *r, uint64_t end, uint64_t *pos, unsigned bits, const char *what, int64_t *out) {
  uint64_t at = *pos, v = 0;
  unsigned shift = 0, max_bytes = (bits + 6) / 7;
  for (unsigned k = 0;; k++) {
    if (*pos >= end || k == max_bytes) return bad(r, MPK_EMALFORMED, at, "%s: malformed or truncated signed LEB128", what);
    uint8_t b = r->d[(*pos)++];
    v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) {
      if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
      /* the unused bits of the last byte must extend the sign */
      int64_t s = (int64_t)v;
      if (bits == 32 && (s < INT32_MIN || s > INT32_MAX))
        return bad(r, MPK_EMALFORMED, at, "%s: signed LEB128 out of the i32 range", what);
      *out = s;
      return 0;
    }
  }
}

static int byte(rd *r, uint64_t end, uint64_t *pos, const char *what, uint8_t *out) {
  if (*pos >= end) return bad(r, MPK_EMALFORMED, *pos, "%s: truncated (the section ends here)", what);
  *out = r->d[(*pos)++];
  return 0;
}

static bool valid_utf8(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n;) {
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (c >= 0xF5 || !len || n - i < len) return false;
    for (size_t k = 1; k < len; k++)
      if ((s[i + k] & 0xC0) != 0x80) return false;
    uint8_t c1 = s[i + 1];
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90))
      return false;
    i += len;
  }
  return true;
}

/* A name: u32 length + UTF-8 bytes (no U+0000: names become C strings), copied into the arena. */
static int name(rd *r, uint64_t end, uint64_t *pos, const char *what, const char **out) {
  uint32_t len;
  int rc = u32(r, end, pos, what, &len);
  if (rc) return rc;
  if (len > end - *pos) return bad(r, MPK_EMALFORMED, *pos, "%s: name of %u bytes runs past the section's end", what, len);
  const uint8_t *s = r->d + *pos;
  if (!valid_utf8(s, len) || memchr(s, 0, len))
    return bad(r, MPK_EMALFORMED, *pos, "%s: name is not UTF-8 without U+0000", what);
  char *c = mpk_arena_alloc(r->a, (size_t)len + 1);
  if (!c) return oom(r);
  memcpy(c, s, len);
  *pos += len;
  *out = c;
  return 0;
}

static int sections(rd *rp, mpk_obj_wasm_section **out, size_t *count) {
  rd r = *rp;
  const uint8_t *d = r.d;
  uint64_t n = r.n;
  mpk_arena *a = r.a;
  if (n < 8 || memcmp(d, "\0asm", 4) != 0) return bad(&r, MPK_EUNSUPPORTED, 0, "no \\0asm magic and version (8 bytes)");
  if (memcmp(d + 4, "\x01\0\0\0", 4) != 0)
    return bad(&r, MPK_EUNSUPPORTED, 4, "version %02x %02x %02x %02x is not 1 (a core module)%s", d[4], d[5], d[6], d[7],
               d[6] == 1 && d[7] == 0 ? "; this is a WebAssembly component" : "");
  /* Count first (each section's size is checked below, on the second pass), then allocate. */
  size_t total = 0;
  for (uint64_t pos = 8; pos < n; total++) {
    uint64_t size;
    pos++;
    if (mpk_obj_uleb(d, n, &pos, &size) != 0 || size > n - pos) break;
    pos += size;
  }
  mpk_obj_wasm_section *s = mpk_arena_array(a, total + 1, sizeof *s);
  if (!s) return oom(&r);
  size_t k = 0;
  int last_rank = 0;
  bool seen[14] = {false};
  for (uint64_t pos = 8; pos < n;) {
    uint64_t at = pos;
    uint8_t id = d[pos++];
    if (id > 13) return bad(&r, MPK_EMALFORMED, at, "unknown section id %u", id);
    uint32_t size;
    int rc = u32(&r, n, &pos, "section size", &size);
    if (rc) return rc;
    if (size > n - pos)
      return bad(&r, MPK_EMALFORMED, at, "%s section of %u bytes runs past the module's end (%llu bytes left)",
                 section_names[id], size, (unsigned long long)(n - pos));
    if (k > total) return bad(&r, MPK_EMALFORMED, at, "section list changed while read"); /* cannot happen: pass 1 is laxer */
    mpk_obj_wasm_section *sec = &s[k++];
    *sec = (mpk_obj_wasm_section){.id = id, .offset = at, .body = pos, .size = size};
    if (id == 0) {
      uint64_t p = pos;
      if ((rc = name(&r, pos + size, &p, "custom section name", &sec->name))) return rc;
    } else {
      if (seen[id]) return bad(&r, MPK_EMALFORMED, at, "a second %s section (each appears at most once)", section_names[id]);
      if (rank_of[id] < last_rank)
        return bad(&r, MPK_EMALFORMED, at, "%s section after a section that must follow it (section order rule)",
                   section_names[id]);
      seen[id] = true;
      last_rank = rank_of[id];
    }
    pos += size;
  }
  *out = s;
  *count = k;
  return 0;
}

int mpk_obj_wasm_sections(const uint8_t *d, uint64_t n, const char *shown, mpk_arena *a,
                          mpk_obj_wasm_section **out, size_t *count, mpk_error *err) {
  if ((!d && n) || !a || !out || !count) return mpk_fail(err, MPK_EINVAL, shown, NULL, "NULL argument");
  *out = NULL;
  *count = 0;
  rd r = {.d = d, .n = n, .shown = shown ? shown : "the given bytes", .base = 0, .a = a, .err = err};
  return sections(&r, out, count);
}

/* Limits (memory or table): flags (bit 0 a maximum, bit 1 shared, bit 2 64-bit), min, max. */
static int limits(rd *r, uint64_t end, uint64_t *pos, const char *what, uint64_t *min, uint64_t *max, bool *has_max,
                  bool *is64) {
  uint64_t at = *pos;
  uint8_t fl = 0;
  int rc = byte(r, end, pos, what, &fl);
  if (rc) return rc;
  if (fl > 7) return bad(r, MPK_EMALFORMED, at, "%s: unknown limits flags 0x%02x", what, fl);
  *is64 = fl & 4;
  *has_max = fl & 1;
  uint32_t v32;
  if (*is64) {
    if ((rc = u64(r, end, pos, what, min))) return rc;
    if (*has_max && (rc = u64(r, end, pos, what, max))) return rc;
  } else {
    if ((rc = u32(r, end, pos, what, &v32))) return rc;
    *min = v32;
    if (*has_max) {
      if ((rc = u32(r, end, pos, what, &v32))) return rc;
      *max = v32;
    }
  }
  if (*has_max && *max < *min)
    return bad(r, MPK_EMALFORMED, at, "%s: maximum %llu below minimum %llu", what, (unsigned long long)*max,
               (unsigned long long)*min);
  return 0;
}

typedef struct mem0 {
  bool present, is64;
  uint64_t min_pages;
} mem0;

static void note_memory(mem0 *m, uint64_t min, bool is64) {
  if (m->present) return; /* memory 0 is the first one (imports first) */
  m->present = true;
  m->min_pages = min;
  m->is64 = is64;
}

static int parse_imports(rd *r, const mpk_obj_wasm_section *s, mpk_obj_object *o, mem0 *m) {
  uint64_t pos = s->body, end = s->body + s->size;
  uint32_t count;
  int rc = u32(r, end, &pos, "import count", &count);
  if (rc) return rc;
  if (count > MAX_IMPORTS) return bad(r, MPK_ELIMIT, s->body, "%u imports exceed the engines' limit of %u", count, MAX_IMPORTS);
  if (count > (end - pos) / 4) /* module name, name, kind, index: 4 bytes at least */
    return bad(r, MPK_EMALFORMED, s->body, "import count %u does not fit in the section's %llu bytes", count,
               (unsigned long long)s->size);
  mpk_obj_import *im = mpk_arena_array(r->a, count ? count : 1, sizeof *im);
  mpk_obj_symbol *sym = mpk_arena_array(r->a, count ? count : 1, sizeof *sym);
  if (!im || !sym) return oom(r);
  size_t n_sym = 0;
  for (uint32_t i = 0; i < count; i++) {
    if ((rc = name(r, end, &pos, "import module", &im[i].module)) || (rc = name(r, end, &pos, "import name", &im[i].name)))
      return rc;
    uint64_t at = pos;
    uint8_t kind = 0, b = 0;
    uint32_t idx;
    uint64_t mn, mx;
    bool has_max, is64;
    if ((rc = byte(r, end, &pos, "import kind", &kind))) return rc;
    switch (kind) {
      case 0: /* function: type index */
        if ((rc = u32(r, end, &pos, "import type index", &idx))) return rc;
        im[i].function = true;
        sym[n_sym++] = (mpk_obj_symbol){.name = im[i].name, .section = SIZE_MAX, .function = true};
        break;
      case 1: /* table: reftype, limits */
        if ((rc = byte(r, end, &pos, "import table type", &b)) ||
            (rc = limits(r, end, &pos, "import table limits", &mn, &mx, &has_max, &is64)))
          return rc;
        break;
      case 2: /* memory */
        if ((rc = limits(r, end, &pos, "import memory limits", &mn, &mx, &has_max, &is64))) return rc;
        note_memory(m, mn, is64);
        break;
      case 3: /* global: valtype, mutability */
        if ((rc = byte(r, end, &pos, "import global type", &b)) || (rc = byte(r, end, &pos, "import global mutability", &b)))
          return rc;
        if (b > 1) return bad(r, MPK_EMALFORMED, pos - 1, "import global mutability %u is not 0 or 1", b);
        break;
      case 4: /* tag: attribute 0, type index */
        if ((rc = byte(r, end, &pos, "import tag attribute", &b)) || (rc = u32(r, end, &pos, "import tag type", &idx)))
          return rc;
        break;
      default:
        return bad(r, MPK_EMALFORMED, at, "import %u (%s.%s): unknown kind %u", i, im[i].module, im[i].name, kind);
    }
  }
  if (pos != end)
    return bad(r, MPK_EMALFORMED, pos, "import section: %llu bytes after its %u imports", (unsigned long long)(end - pos), count);
  o->imports = im;
  o->n_imports = count;
  o->symbols = sym;
  o->n_symbols = n_sym;
  return 0;
}

static int parse_memories(rd *r, const mpk_obj_wasm_section *s, mem0 *m) {
  uint64_t pos = s->body, end = s->body + s->size;
  uint32_t count;
  int rc = u32(r, end, &pos, "memory count", &count);
  if (rc) return rc;
  if (count > MAX_MEMORIES) return bad(r, MPK_ELIMIT, s->body, "%u memories exceed the engines' limit of %u", count, MAX_MEMORIES);
  if (count > (end - pos) / 2) return bad(r, MPK_EMALFORMED, s->body, "memory count %u does not fit in the section", count);
  for (uint32_t i = 0; i < count; i++) {
    uint64_t mn, mx;
    bool has_max, is64;
    if ((rc = limits(r, end, &pos, "memory limits", &mn, &mx, &has_max, &is64))) return rc;
    if (!is64 && mn > 65536) return bad(r, MPK_EMALFORMED, pos, "memory %u: minimum %llu pages exceeds 65536 (4 GiB)", i, (unsigned long long)mn);
    note_memory(m, mn, is64);
  }
  if (pos != end) return bad(r, MPK_EMALFORMED, pos, "memory section: bytes after its %u memories", count);
  return 0;
}

static int parse_exports(rd *r, const mpk_obj_wasm_section *s, mpk_obj_object *o) {
  uint64_t pos = s->body, end = s->body + s->size;
  uint32_t count;
  int rc = u32(r, end, &pos, "export count", &count);
  if (rc) return rc;
  if (count > MAX_EXPORTS) return bad(r, MPK_ELIMIT, s->body, "%u exports exceed the engines' limit of %u", count, MAX_EXPORTS);
  if (count > (end - pos) / 3) /* name, kind, index */
    return bad(r, MPK_EMALFORMED, s->body, "export count %u does not fit in the section's %llu bytes", count,
               (unsigned long long)s->size);
  const char **ex = mpk_arena_array(r->a, count ? count : 1, sizeof *ex);
  mpk_obj_symbol *sym = mpk_arena_array(r->a, (size_t)count + o->n_symbols + 1, sizeof *sym);
  if (!ex || !sym) return oom(r);
  if (o->n_symbols) memcpy(sym, o->symbols, o->n_symbols * sizeof *sym);
  size_t n_ex = 0, n_sym = o->n_symbols;
  for (uint32_t i = 0; i < count; i++) {
    const char *nm;
    uint8_t kind = 0;
    uint32_t idx;
    uint64_t at;
    if ((rc = name(r, end, &pos, "export name", &nm))) return rc;
    at = pos;
    if ((rc = byte(r, end, &pos, "export kind", &kind)) || (rc = u32(r, end, &pos, "export index", &idx))) return rc;
    if (kind > 4) return bad(r, MPK_EMALFORMED, at, "export %s: unknown kind %u", nm, kind);
    if (kind == 0) {
      ex[n_ex++] = nm;
      sym[n_sym++] = (mpk_obj_symbol){.name = nm, .section = SIZE_MAX, .value = idx, .defined = true, .function = true};
    }
  }
  if (pos != end) return bad(r, MPK_EMALFORMED, pos, "export section: bytes after its %u exports", count);
  o->exports = ex;
  o->n_exports = n_ex;
  o->symbols = sym;
  o->n_symbols = n_sym;
  return 0;
}

/* A constant expression (an active segment's offset): i32.const N end is an address; anything else
   the constant-expression grammar allows (global.get, i64.const, extended-const arithmetic) is read
   through and makes the segment's address unknown (*constant = false). */
static int offset_expr(rd *r, uint64_t end, uint64_t *pos, uint32_t seg, bool *constant, uint64_t *addr) {
  int64_t v = 0;
  uint32_t idx;
  int rc;
  unsigned ops = 0;
  bool only_i32 = true;
  for (;;) {
    uint64_t at = *pos;
    uint8_t op = 0;
    if ((rc = byte(r, end, pos, "data segment offset", &op))) return rc;
    if (op == 0x0b) break;
    ops++;
    switch (op) {
      case 0x41:
        if ((rc = sleb(r, end, pos, 32, "i32.const", &v))) return rc;
        *addr = (uint32_t)v;
        break;
      case 0x42:
        if ((rc = sleb(r, end, pos, 64, "i64.const", &v))) return rc;
        only_i32 = false;
        break;
      case 0x23:
        if ((rc = u32(r, end, pos, "global.get", &idx))) return rc;
        only_i32 = false;
        break;
      case 0x6a: case 0x6b: case 0x6c: case 0x7c: case 0x7d: case 0x7e: /* extended-const */
        only_i32 = false;
        break;
      default:
        return bad(r, MPK_EMALFORMED, at, "data segment %u: opcode 0x%02x is not allowed in a constant offset", seg, op);
    }
    if (ops > 64) return bad(r, MPK_ELIMIT, at, "data segment %u: offset expression longer than 64 instructions", seg);
  }
  *constant = only_i32 && ops == 1;
  return 0;
}

static int parse_data(rd *r, const mpk_obj_wasm_section *s, mpk_obj_object *o, uint32_t *count_out) {
  uint64_t pos = s->body, end = s->body + s->size;
  uint32_t count;
  int rc = u32(r, end, &pos, "data segment count", &count);
  if (rc) return rc;
  if (count > MAX_SEGMENTS)
    return bad(r, MPK_ELIMIT, s->body, "%u data segments exceed the engines' limit of %u", count, MAX_SEGMENTS);
  if (count > (end - pos) / 2) /* a passive segment: flags, length */
    return bad(r, MPK_EMALFORMED, s->body, "data segment count %u does not fit in the section's %llu bytes", count,
               (unsigned long long)s->size);
  mpk_obj_segment *seg = mpk_arena_array(r->a, count ? count : 1, sizeof *seg);
  if (!seg) return oom(r);
  for (uint32_t i = 0; i < count; i++) {
    uint64_t at = pos;
    uint32_t flags, mem = 0, len;
    bool active = false, constant = false;
    uint64_t addr = 0;
    if ((rc = u32(r, end, &pos, "data segment flags", &flags))) return rc;
    if (flags > 2) return bad(r, MPK_EMALFORMED, at, "data segment %u: flags %u (0 active, 1 passive, 2 active with a memory)", i, flags);
    if (flags == 2 && (rc = u32(r, end, &pos, "data segment memory index", &mem))) return rc;
    if (flags != 1) {
      active = true;
      if ((rc = offset_expr(r, end, &pos, i, &constant, &addr))) return rc;
    }
    if ((rc = u32(r, end, &pos, "data segment size", &len))) return rc;
    if (len > end - pos)
      return bad(r, MPK_EMALFORMED, at, "data segment %u: %u bytes run past the data section's end (%llu left)", i, len,
                 (unsigned long long)(end - pos));
    seg[i] = (mpk_obj_segment){.addr = active && constant ? addr : 0, .size = len, .offset = (int64_t)pos,
                               .active = active && constant && mem == 0};
    pos += len;
  }
  if (pos != end) return bad(r, MPK_EMALFORMED, pos, "data section: bytes after its %u segments", count);
  o->segments = seg;
  o->n_segments = count;
  *count_out = count;
  return 0;
}

/* The memory image: the active segments laid out at their addresses, zero between; later wins. */
static int lay_out(rd *r, mpk_obj_object *o, const mem0 *m, uint64_t data_at) {
  uint64_t top = 0;
  for (size_t i = 0; i < o->n_segments; i++) {
    const mpk_obj_segment *g = &o->segments[i];
    if (!g->active) continue;
    uint64_t e = g->addr + g->size; /* addr < 2^32, size < 2^32: no overflow */
    if (!m->present)
      return bad(r, MPK_EMALFORMED, (uint64_t)g->offset, "data segment %zu is active but the module has no memory", i);
    uint64_t limit = m->min_pages > UINT64_MAX / WASM_PAGE ? UINT64_MAX : m->min_pages * WASM_PAGE;
    if (e > limit)
      return bad(r, MPK_EMALFORMED, (uint64_t)g->offset,
                 "data segment %zu at memory address %llu, %llu bytes, ends past memory 0's initial size of %llu pages "
                 "(%llu bytes): instantiation would trap",
                 i, (unsigned long long)g->addr, (unsigned long long)g->size, (unsigned long long)m->min_pages,
                 (unsigned long long)limit);
    if (e > top) top = e;
  }
  if (!m->present) return 0;
  if (top > MPK_OBJ_MAX_WASM_MEMORY)
    return bad(r, MPK_ELIMIT, data_at, "the data segments span %llu bytes of memory, beyond the limit of %llu bytes",
               (unsigned long long)top, (unsigned long long)MPK_OBJ_MAX_WASM_MEMORY);
  static const uint8_t empty[1];
  uint8_t *img = top ? mpk_arena_alloc(r->a, (size_t)top) : NULL; /* zeroed */
  if (top && !img) return oom(r);
  for (size_t i = 0; i < o->n_segments; i++) {
    const mpk_obj_segment *g = &o->segments[i];
    if (g->active && g->size) memcpy(img + g->addr, o->bytes + g->offset, (size_t)g->size);
  }
  mpk_obj_section *sec = mpk_arena_alloc(r->a, sizeof *sec);
  if (!sec) return oom(r);
  *sec = (mpk_obj_section){.name = "memory", .data = img ? img : empty, .size = top, .addr = 0, .offset = -1};
  o->sections = sec;
  o->n_sections = 1;
  return 0;
}

int mpk_obj_parse_wasm(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err) {
  if (!o || !a || (!o->bytes && o->size)) return mpk_fail(err, MPK_EINVAL, shown, NULL, "NULL argument");
  rd r = {.d = o->bytes, .n = o->size, .shown = shown ? shown : "the given bytes", .base = o->file_offset, .a = a, .err = err};
  mpk_obj_wasm_section *secs;
  size_t n_secs;
  int rc = sections(&r, &secs, &n_secs);
  if (rc) return rc;
  o->format = "WebAssembly module";
  o->arch = "wasm32";
  o->sections = NULL, o->n_sections = 0, o->symbols = NULL, o->n_symbols = 0, o->imports = NULL, o->n_imports = 0;
  o->exports = NULL, o->n_exports = 0, o->segments = NULL, o->n_segments = 0;
  mem0 m = {0};
  const mpk_obj_wasm_section *data = NULL, *count = NULL;
  for (size_t i = 0; i < n_secs; i++) {
    const mpk_obj_wasm_section *s = &secs[i];
    if (s->id == 2) rc = parse_imports(&r, s, o, &m);
    else if (s->id == 5) rc = parse_memories(&r, s, &m);
    else if (s->id == 7) rc = parse_exports(&r, s, o);
    else if (s->id == 11) data = s;
    else if (s->id == 12) count = s;
    if (rc) return rc;
  }
  if (m.is64) o->arch = "wasm64";
  uint32_t n_data = 0;
  if (data && (rc = parse_data(&r, data, o, &n_data))) return rc;
  if (count) {
    uint64_t pos = count->body, end = count->body + count->size;
    uint32_t declared;
    if ((rc = u32(&r, end, &pos, "data count", &declared))) return rc;
    if (pos != end) return bad(&r, MPK_EMALFORMED, pos, "data count section: bytes after its count");
    if (declared != n_data)
      return bad(&r, MPK_EMALFORMED, count->offset, "data count section says %u segments, the data section has %u", declared, n_data);
  }
  return lay_out(&r, o, &m, data ? data->offset : 8);
}
