/* The Relax VM executable: its serialization parsed from bytes, and found in a library (vm.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/endian.h"
#include "mlc/vm.h"

typedef struct rd {
  const uint8_t *d;
  uint64_t end, pos;
  const char *shown;
  int64_t base;
  mpk_arena *a;
  mpk_error *err;
} rd;

/* TVM's serialization is little-endian whatever the host (core/endian.h). */

#define BAD(r, at, ...) bad_at((r), (at), __VA_ARGS__)
static int bad_at(rd *r, uint64_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad_at(rd *r, uint64_t at, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mpk_fail_at(r->err, MPK_EMALFORMED, r->shown, r->base + (int64_t)at, "Relax VM executable: %s", msg);
}

static int need(rd *r, uint64_t k, const char *what) {
  if (r->end - r->pos < k)
    return mpk_fail_at(r->err, MPK_EMALFORMED, r->shown, r->base + (int64_t)r->pos,
                       "Relax VM executable: %s needs %llu bytes, %llu left (truncated)", what, (unsigned long long)k,
                       (unsigned long long)(r->end - r->pos));
  return 0;
}
static int u64(rd *r, const char *what, uint64_t *v) {
  int rc = need(r, 8, what);
  if (rc) return rc;
  *v = mpk_load_le64(r->d + r->pos);
  r->pos += 8;
  return 0;
}
static int i32(rd *r, const char *what, int32_t *v) {
  int rc = need(r, 4, what);
  if (rc) return rc;
  *v = (int32_t)mpk_load_le32(r->d + r->pos);
  r->pos += 4;
  return 0;
}
/* A count of items of at least `min_item` bytes each: bounded by the bytes left and by `max`. */
static int count(rd *r, const char *what, uint64_t min_item, uint64_t max, uint64_t *v) {
  uint64_t at = r->pos;
  int rc = u64(r, what, v);
  if (rc) return rc;
  if (*v > max)
    return mpk_fail_at(r->err, MPK_ELIMIT, r->shown, r->base + (int64_t)at,
                       "Relax VM executable: %s %llu exceeds the limit of %llu", what, (unsigned long long)*v,
                       (unsigned long long)max);
  if (min_item && *v > (r->end - r->pos) / min_item)
    return mpk_fail_at(r->err, MPK_EMALFORMED, r->shown, r->base + (int64_t)at,
                       "Relax VM executable: %s %llu cannot fit in the %llu bytes left (each takes at least %llu)",
                       what, (unsigned long long)*v, (unsigned long long)(r->end - r->pos),
                       (unsigned long long)min_item);
  return 0;
}
/* A dmlc string copied into the arena (NUL-terminated; a NUL inside is refused). */
static int str(rd *r, const char *what, const char **out) {
  uint64_t at = r->pos, len;
  int rc = u64(r, what, &len);
  if (rc) return rc;
  if (len > r->end - r->pos)
    return mpk_fail_at(r->err, MPK_EMALFORMED, r->shown, r->base + (int64_t)at,
                       "Relax VM executable: %s of %llu bytes overruns the %llu bytes left", what,
                       (unsigned long long)len, (unsigned long long)(r->end - r->pos));
  if (memchr(r->d + r->pos, 0, (size_t)len)) return BAD(r, at, "%s holds a NUL byte", what);
  char *s = out ? mpk_arena_alloc(r->a, (size_t)len + 1) : NULL;
  if (out && !s) return mpk_fail(r->err, MPK_ENOMEM, r->shown, NULL, "out of memory");
  if (s) {
    memcpy(s, r->d + r->pos, (size_t)len);
    *out = s;
  }
  r->pos += len;
  return 0;
}

static int parse_functions(rd *r, mpk_vm_exec *x) {
  uint64_t n;
  /* per function at least: kind 4, name 8, four i64 32, param count 8 */
  int rc = count(r, "function count", 52, MPK_VM_MAX_FUNCTIONS, &n);
  if (rc) return rc;
  x->functions = mpk_arena_array(r->a, n ? n : 1, sizeof *x->functions);
  x->start_instr = mpk_arena_array(r->a, n ? n : 1, sizeof *x->start_instr);
  x->end_instr = mpk_arena_array(r->a, n ? n : 1, sizeof *x->end_instr);
  if (!x->functions || !x->start_instr || !x->end_instr)
    return mpk_fail(r->err, MPK_ENOMEM, r->shown, NULL, "out of memory");
  for (uint64_t i = 0; i < n; i++) {
    mpk_mlc_function *fn = &x->functions[i];
    uint64_t at = r->pos;
    int32_t kind;
    if ((rc = i32(r, "function kind", &kind))) return rc;
    if (kind < 0 || kind > 2)
      return BAD(r, at, "function %llu has kind %d (known: 0 packed, 1 VM, 2 VM TIR)",
                 (unsigned long long)i, (int)kind);
    fn->kind = (mpk_mlc_function_kind)kind;
    if ((rc = str(r, "function name", &fn->name))) return rc;
    uint64_t v[4];
    static const char *const what[4] = {"start_instr", "end_instr", "num_args", "register_file_size"};
    for (int k = 0; k < 4; k++)
      if ((rc = u64(r, what[k], &v[k]))) return rc;
    x->start_instr[i] = (int64_t)v[0];
    x->end_instr[i] = (int64_t)v[1];
    fn->num_args = (int64_t)v[2];
    uint64_t np;
    if ((rc = count(r, "parameter name count", 8, MPK_VM_MAX_PARAMS, &np))) return rc;
    const char **names = mpk_arena_array(r->a, np ? np : 1, sizeof *names);
    if (!names) return mpk_fail(r->err, MPK_ENOMEM, r->shown, NULL, "out of memory");
    for (uint64_t k = 0; k < np; k++)
      if ((rc = str(r, "parameter name", &names[k]))) return rc;
    fn->param_names = names;
    fn->n_param_names = (size_t)np;
  }
  x->n_functions = (size_t)n;
  return 0;
}

/* Normalize a stored constant type: the legacy enum (0 tensor, 1 data type, 2 shape, 3 string,
   4 int, 5 float) or TVM FFI's type indices (70 tensor, 5 data type, 69 shape, 65 string, 1 int,
   3 float). -1 when unknown. */
static int norm_type(int32_t t, bool ffi) {
  if (!ffi) return t >= 0 && t <= 5 ? t : -1;
  switch (t) {
    case 70: return MPK_VM_CONST_TENSOR;
    case 5: return MPK_VM_CONST_DTYPE;
    case 69: return MPK_VM_CONST_SHAPE;
    case 65: return MPK_VM_CONST_STRING;
    case 1: return MPK_VM_CONST_INT;
    case 3: return MPK_VM_CONST_FLOAT;
  }
  return -1;
}

static int parse_constants(rd *r, mpk_vm_exec *x, bool ffi) {
  uint64_t n;
  int rc = count(r, "constant count", 8, MPK_VM_MAX_CONSTANTS, &n); /* type 4 + the smallest value 4 */
  if (rc) return rc;
  mpk_vm_constant *c = mpk_arena_array(r->a, n ? n : 1, sizeof *c);
  if (!c) return mpk_fail(r->err, MPK_ENOMEM, r->shown, NULL, "out of memory");
  for (uint64_t i = 0; i < n; i++) {
    uint64_t at = r->pos, v;
    int32_t t;
    if ((rc = i32(r, "constant type", &t))) return rc;
    int type = norm_type(t, ffi);
    c[i].type = type;
    c[i].offset = r->pos;
    switch (type) {
      case MPK_VM_CONST_TENSOR: {
        uint64_t magic, reserved, nbytes;
        int32_t dev, id, ndim;
        if ((rc = u64(r, "tensor magic", &magic))) return rc;
        if (magic != MPK_VM_TENSOR_MAGIC) return BAD(r, r->pos - 8, "constant %llu: tensor magic is 0x%llx, not 0xDD5E40F096B4A13F", (unsigned long long)i, (unsigned long long)magic);
        if ((rc = u64(r, "tensor reserved", &reserved)) || (rc = i32(r, "tensor device type", &dev)) ||
            (rc = i32(r, "tensor device id", &id)) || (rc = i32(r, "tensor ndim", &ndim)))
          return rc;
        if (ndim < 0 || ndim > 64) return BAD(r, r->pos - 4, "constant %llu: tensor ndim %d is outside [0, 64]", (unsigned long long)i, (int)ndim);
        if ((rc = need(r, 4 + 8 * (uint64_t)ndim, "tensor dtype and shape"))) return rc;
        r->pos += 4 + 8 * (uint64_t)ndim;
        if ((rc = u64(r, "tensor byte count", &nbytes))) return rc;
        if (nbytes > r->end - r->pos) return BAD(r, r->pos - 8, "constant %llu: tensor byte count %llu overruns the executable", (unsigned long long)i, (unsigned long long)nbytes);
        c[i].offset = r->pos;
        c[i].size = nbytes;
        r->pos += nbytes;
        break;
      }
      case MPK_VM_CONST_DTYPE:
        if ((rc = need(r, 4, "data type constant"))) return rc;
        c[i].size = 4;
        r->pos += 4;
        break;
      case MPK_VM_CONST_SHAPE:
        if ((rc = count(r, "shape length", 8, UINT64_MAX, &v))) return rc;
        c[i].offset = r->pos;
        c[i].size = v * 8;
        r->pos += v * 8;
        break;
      case MPK_VM_CONST_STRING:
        if ((rc = u64(r, "string constant length", &v))) return rc;
        if (v > r->end - r->pos) return BAD(r, r->pos - 8, "constant %llu: string of %llu bytes overruns the executable", (unsigned long long)i, (unsigned long long)v);
        c[i].offset = r->pos;
        c[i].size = v;
        r->pos += v;
        break;
      case MPK_VM_CONST_INT:
      case MPK_VM_CONST_FLOAT:
        if ((rc = need(r, 8, "number constant"))) return rc;
        c[i].size = 8;
        r->pos += 8;
        break;
      default:
        return BAD(r, at, "constant %llu has type %d, which this reader does not know (%s numbering)", (unsigned long long)i, (int)t, ffi ? "TVM FFI type index" : "relax ConstantType");
    }
  }
  x->constants = c;
  x->n_constants = (size_t)n;
  return 0;
}

static int parse_code(rd *r, mpk_vm_exec *x) {
  uint64_t n;
  int rc = count(r, "instruction count", 8, UINT64_MAX, &n);
  if (rc) return rc;
  x->instr_offset = r->d + r->pos;
  x->n_instrs = n;
  r->pos += n * 8;
  if ((rc = count(r, "instruction word count", 8, UINT64_MAX, &n))) return rc;
  x->instr_data = r->d + r->pos;
  x->n_words = n;
  r->pos += n * 8;
  return 0;
}

int mpk_vm_parse(const uint8_t *d, uint64_t n, bool ffi_types, const char *shown, int64_t base, mpk_arena *a,
                 mpk_vm_exec *out, mpk_error *err) {
  memset(out, 0, sizeof *out);
  rd r = {.d = d, .end = n, .pos = 0, .shown = shown, .base = base, .a = a, .err = err};
  uint64_t len, magic;
  int rc = u64(&r, "payload length", &len);
  if (rc) return rc;
  if (len > n - 8) return BAD(&r, 0, "payload of %llu bytes overruns the %llu bytes that hold it", (unsigned long long)len, (unsigned long long)(n - 8));
  r.end = 8 + len;
  out->total = 8 + len;
  if ((rc = u64(&r, "magic", &magic))) return rc;
  if (magic != MPK_VM_MAGIC) return BAD(&r, 8, "magic is 0x%llx, not 0xD225DE2F4214151D", (unsigned long long)magic);
  if ((rc = str(&r, "version string", &out->version))) return rc;
  if ((rc = parse_functions(&r, out))) return rc;
  /* The constants: with the numbering the type key implies, else the other one. Neither: the
     function table stands, the constants are reported missing (_metadata is then scanned for).
     The code after them is only needed to tell which constant _metadata returns. */
  uint64_t at = r.pos;
  mpk_error first;
  mpk_error_clear(&first);
  bool ffi = ffi_types;
  r.err = &first;
  rc = parse_constants(&r, out, ffi);
  if (rc && rc != MPK_ENOMEM) {
    mpk_error second;
    mpk_error_clear(&second);
    r.pos = at;
    r.err = &second;
    if (parse_constants(&r, out, !ffi) == 0) {
      ffi = !ffi;
      rc = 0;
    } else if (second.code == MPK_ENOMEM) {
      first = second;
      rc = MPK_ENOMEM;
    }
  }
  if (rc == MPK_ENOMEM) {
    if (err) *err = first;
    return rc;
  }
  char line[1200];
  if (rc) {
    out->constants = NULL;
    out->n_constants = 0;
    mpk_error_format(&first, line, sizeof line);
    out->constants_problem = mpk_arena_strdup(a, line);
    if (!out->constants_problem) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  } else {
    mpk_error code_err;
    mpk_error_clear(&code_err);
    r.err = &code_err;
    if (parse_code(&r, out)) {
      out->instr_offset = out->instr_data = NULL;
      out->n_instrs = out->n_words = 0;
      mpk_error_format(&code_err, line, sizeof line);
      out->code_problem = mpk_arena_strdup(a, line);
      if (!out->code_problem) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
    }
  }
  out->ffi_types = ffi;
  return 0;
}

int64_t mpk_vm_metadata_constant(const mpk_vm_exec *x) {
  if (!x->instr_data) return -1;
  int64_t copy = -1;
  size_t meta = SIZE_MAX;
  for (size_t i = 0; i < x->n_functions; i++) {
    if (strcmp(x->functions[i].name, "vm.builtin.copy") == 0 && copy < 0) copy = (int64_t)i;
    if (strcmp(x->functions[i].name, "_metadata") == 0 && x->functions[i].kind == MPK_MLC_FUNCTION_VM) meta = i;
  }
  if (meta == SIZE_MAX || copy < 0) return -1;
  int64_t s = x->start_instr[meta], e = x->end_instr[meta];
  if (s < 0 || e < s || (uint64_t)e > x->n_instrs || e - s > 16) return -1;
  for (int64_t i = s; i < e; i++) {
    uint64_t off = mpk_load_le64(x->instr_offset + 8 * (uint64_t)i);
    if (off >= x->n_words || x->n_words - off < 5) continue;
    const uint8_t *w = x->instr_data + 8 * off;
    /* Call: opcode 1, dst, func_idx, num_args, args (kind in the top 8 bits: 2 = constant) */
    if (mpk_load_le64(w) != 1 || mpk_load_le64(w + 16) != (uint64_t)copy || mpk_load_le64(w + 24) != 1) continue;
    uint64_t arg = mpk_load_le64(w + 32);
    uint64_t kind = arg >> 56, value = arg & ((UINT64_C(1) << 56) - 1);
    if (kind == 2 && value < x->n_constants && x->constants[value].type == MPK_VM_CONST_STRING) return (int64_t)value;
  }
  return -1;
}

/* ---------------------------------------------------------------- finding it in a library */

static const struct {
  const char *key;
  size_t len;
  bool ffi;
} type_keys[] = {{"relax.Executable", 16, false}, {"relax.VMExecutable", 18, true}};

typedef struct finder {
  const mpk_obj_file *f;
  mpk_arena *a;
  mpk_vm_found best;
  bool have;
  int candidates;
  char problem[1200];  /* the first candidate that did not parse */
  mpk_error *err;
} finder;

static const char *place(finder *fd, const mpk_obj_object *o, const mpk_obj_section *s, const char *via, uint64_t pos,
                         const char *key) {
  char buf[300], out[900];
  const char *who = mpk_obj_where(o, buf, sizeof buf);
  if (s->offset >= 0)
    snprintf(out, sizeof out, "%s%s%s, %s at offset %llu", who, via, s->name, key,
             (unsigned long long)((uint64_t)s->offset + pos));
  else
    snprintf(out, sizeof out, "%s%s%s, %s at address %llu", who, via, s->name, key, (unsigned long long)(s->addr + pos));
  return mpk_arena_strdup(fd->a, out);
}

/* The first occurrence of pat[0, plen) in d[0, n) (memmem is not portable C). */
static const uint8_t *find(const uint8_t *d, uint64_t n, const uint8_t *pat, size_t plen) {
  /* the key's first letter after its 8-byte length */
  for (uint64_t i = 8; i < n && n - i >= plen - 8;) {
    const uint8_t *q = memchr(d + i, pat[8], (size_t)(n - i));
    if (!q) return NULL;
    uint64_t at = (uint64_t)(q - d);
    if (n - at >= plen - 8 && memcmp(q - 8, pat, plen) == 0) return q - 8;
    i = at + 1;
  }
  return NULL;
}

/* Every candidate in s->data[lo, hi): the type key with its length prefix, then a payload length
   and the magic. Returns nonzero on a hard error. */
static int search(finder *fd, const mpk_obj_object *o, const mpk_obj_section *s, uint64_t lo, uint64_t hi,
                  const char *via) {
  for (size_t k = 0; k < sizeof type_keys / sizeof type_keys[0]; k++) {
    uint8_t pat[8 + 18];
    size_t plen = 8 + type_keys[k].len;
    for (int b = 0; b < 8; b++) pat[b] = (uint8_t)((uint64_t)type_keys[k].len >> (8 * b));
    memcpy(pat + 8, type_keys[k].key, type_keys[k].len);
    uint64_t i = lo;
    while (hi - i >= plen + 16) {
      const uint8_t *p = find(s->data + i, hi - i, pat, plen);
      if (!p) break;
      uint64_t at = (uint64_t)(p - s->data);
      i = at + 1;
      uint64_t pay = at + plen;
      if (hi - pay < 16 || mpk_load_le64(s->data + pay + 8) != MPK_VM_MAGIC) continue;
      if (++fd->candidates > MPK_VM_MAX_CANDIDATES)
        return mpk_fail(fd->err, MPK_ELIMIT, fd->f->path, NULL,
                        "more than %d Relax VM executable candidates (type key, length, magic); a library holds one",
                        MPK_VM_MAX_CANDIDATES);
      char shown[400], buf[300];
      snprintf(shown, sizeof shown, "%s: %s%s", fd->f->path, mpk_obj_where(o, buf, sizeof buf), s->name);
      mpk_error e;
      mpk_error_clear(&e);
      mpk_vm_exec x;
      int rc = mpk_vm_parse(s->data + pay, hi - pay, type_keys[k].ffi, shown, s->offset >= 0 ? s->offset + (int64_t)pay : (int64_t)(s->addr + pay),
                            fd->a, &x, &e);
      if (rc == MPK_ENOMEM) {
        if (fd->err) *fd->err = e;
        return rc;
      }
      if (rc) {
        if (!fd->problem[0]) mpk_error_format(&e, fd->problem, sizeof fd->problem);
        continue;
      }
      const char *where = place(fd, o, s, via, at, type_keys[k].key);
      if (!where) return mpk_fail(fd->err, MPK_ENOMEM, fd->f->path, NULL, "out of memory");
      if (fd->have) {
        const mpk_vm_found *b = &fd->best;
        bool same = b->exec.total == x.total && memcmp(b->section->data + b->pos, s->data + pay, (size_t)x.total) == 0;
        if (same) continue;
        return mpk_fail(fd->err, MPK_EMALFORMED, fd->f->path, NULL,
                        "two different Relax VM executables: %s and %s; a library holds exactly one", b->where, where);
      }
      fd->best = (mpk_vm_found){.object = o, .section = s, .pos = pay, .type_key = type_keys[k].key, .where = where, .exec = x};
      fd->have = true;
      i = pay + x.total; /* inside it, nothing else is looked for */
    }
  }
  return 0;
}

/* The blob's symbol: `name` itself (a shared library), else one named with a system-lib prefix
   (`<prefix>_` + name: phi_msft_q4f16_1___tvm_dev_mblob in the *_devc.o of a static library). */
static const mpk_obj_symbol *blob_symbol(const mpk_obj_object *o, const char *name) {
  const mpk_obj_symbol *sym = mpk_obj_find_symbol(o, name);
  size_t n = strlen(name);
  for (size_t i = 0; !sym && i < o->n_symbols; i++) {
    const char *s = o->symbols[i].name;
    size_t m = s ? strlen(s) : 0;
    if (o->symbols[i].defined && m > n + 1 && s[m - n - 1] == '_' && strcmp(s + m - n, name) == 0) sym = &o->symbols[i];
  }
  return sym;
}

int mpk_vm_find(const mpk_obj_file *f, mpk_arena *a, mpk_vm_found *found, mpk_error *err) {
  finder fd = {.f = f, .a = a, .err = err};
  static const char *const blob_symbols[] = {"__tvm_dev_mblob", "__tvm_ffi__library_bin"};
  for (size_t i = 0; i < f->n_objects; i++) {
    const mpk_obj_object *o = &f->objects[i];
    for (size_t k = 0; k < 2; k++) {
      const mpk_obj_symbol *sym = blob_symbol(o, blob_symbols[k]);
      if (!sym || sym->section >= o->n_sections) continue;
      const mpk_obj_section *s = &o->sections[sym->section];
      if (sym->value >= s->size) continue;
      uint64_t hi = sym->size && sym->size <= s->size - sym->value ? sym->value + sym->size : s->size;
      char via[200];
      snprintf(via, sizeof via, "symbol %.120s in ", sym->name);
      int rc = search(&fd, o, s, sym->value, hi, via);
      if (rc) return rc;
    }
    if (fd.have && fd.best.object == o) continue; /* found where the format puts it */
    for (size_t k = 0; k < o->n_sections; k++) {
      int rc = search(&fd, o, &o->sections[k], 0, o->sections[k].size, "section ");
      if (rc) return rc;
    }
  }
  if (!fd.have) {
    if (fd.problem[0])
      return mpk_fail(err, MPK_ENOTFOUND, f->path, NULL, "no readable Relax VM executable: %s", fd.problem);
    return mpk_fail(err, MPK_ENOTFOUND, f->path, NULL,
                    "no Relax VM executable (the type key relax.Executable or relax.VMExecutable with its length, "
                    "followed by a payload length and the magic 0xD225DE2F4214151D) in any of its %zu object(s)",
                    f->n_objects);
  }
  *found = fd.best;
  return 0;
}
