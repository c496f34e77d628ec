/* mpk_mlc_library_open: a compiled library as a whole (docs/mlc-library.md): its container
   (objfile), its Relax VM executable (vm.c), the _metadata that executable holds, its imports and
   the runtime globals it needs or registers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"
#include "mlc/vm.h"

struct mpk_mlc_library_priv {
  mpk_arena *arena;
  mpk_mlc_metadata *metadata; /* owned (NULL once taken) */
  mpk_error metadata_err;     /* why there is none */
};

/* Longest NUL-terminated string taken for a registered global's name. */
#define MAX_GLOBAL_NAME 200

static int oom(const char *path, mpk_error *err) { return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory"); }

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Sort and drop duplicates in place; returns the new count. */
static size_t sort_unique(const char **v, size_t n) {
  if (!n) return 0;
  mpk_sort(v, n, sizeof *v, cmp_str);
  size_t k = 1;
  for (size_t i = 1; i < n; i++)
    if (strcmp(v[i], v[k - 1]) != 0) v[k++] = v[i];
  return k;
}

static int cmp_import(const void *a, const void *b) {
  const mpk_mlc_import *x = a, *y = b;
  int c = strcmp(x->module ? x->module : "", y->module ? y->module : "");
  return c ? c : strcmp(x->name, y->name);
}

/* The file offset (of the object's bytes) of memory [addr, addr + len) when one active data
   segment holds all of it, else -1. */
static int64_t memory_to_offset(const mpk_obj_object *o, uint64_t addr, uint64_t len) {
  for (size_t i = 0; i < o->n_segments; i++) {
    const mpk_obj_segment *s = &o->segments[i];
    if (!s->active || s->offset < 0 || addr < s->addr || addr - s->addr > s->size || len > s->size - (addr - s->addr))
      continue;
    return s->offset + (int64_t)(addr - s->addr);
  }
  return -1;
}

/* ------------------------------------------------------------------------ the _metadata */

typedef struct ctx {
  const mpk_obj_file *f;
  mpk_mlc_library *lib;
  struct mpk_mlc_library_priv *priv;
  mpk_arena *a;
} ctx;

static void no_metadata(ctx *c, const mpk_error *e) {
  c->priv->metadata_err = *e;
  char line[1200];
  mpk_error_format(e, line, sizeof line);
  c->lib->metadata_problem = mpk_arena_strdup(c->a, line[0] ? line : "no _metadata");
}

/* From the executable: the string constant the VM function _metadata returns (its bytecode says
   which), else the one distinct string constant that is a _metadata object. 1: found (or a
   problem recorded that a scan must not override), 0: look further, < 0: hard error. */
static int metadata_from_exec(ctx *c, const mpk_vm_found *v, mpk_error *err) {
  const mpk_vm_exec *x = &v->exec;
  if (!x->constants) return 0;
  const uint8_t *base = v->section->data + v->pos;
  int64_t k = mpk_vm_metadata_constant(x);
  const char *rule = "the string the VM function _metadata returns";
  if (k < 0) {
    rule = "the one string constant that is a _metadata object";
    size_t hits = 0;
    for (size_t i = 0; i < x->n_constants; i++) {
      const mpk_vm_constant *ci = &x->constants[i];
      if (ci->type != MPK_VM_CONST_STRING || !mpk_mlc_is_metadata_text(base + ci->offset, (size_t)ci->size)) continue;
      if (k >= 0) {
        const mpk_vm_constant *ck = &x->constants[k];
        if (ck->size == ci->size && memcmp(base + ck->offset, base + ci->offset, (size_t)ci->size) == 0) continue;
        mpk_error e;
        mpk_fail(&e, MPK_EMALFORMED, c->f->path, NULL,
                 "%s: string constants %lld and %zu are two different _metadata objects and the bytecode of "
                 "_metadata does not say which it returns",
                 v->where, (long long)k, i);
        no_metadata(c, &e);
        return 1;
      }
      k = (int64_t)i;
      hits++;
    }
    if (k < 0) return 0;
  }
  const mpk_vm_constant *ck = &x->constants[k];
  int64_t off = -1;
  uint64_t at = v->pos + ck->offset;
  if (v->section->offset >= 0)
    off = v->section->offset + (int64_t)at;
  else
    off = memory_to_offset(v->object, v->section->addr + at, ck->size);
  char buf[300], shown[400];
  snprintf(shown, sizeof shown, "%s: %s_metadata", c->f->path, mpk_obj_where(v->object, buf, sizeof buf));
  mpk_error e;
  mpk_error_clear(&e);
  mpk_mlc_metadata *md = NULL;
  int rc = mpk_mlc_metadata_from_text(base + ck->offset, (size_t)ck->size, off, shown, &md, &e);
  if (rc == MPK_ENOMEM) {
    if (err) *err = e;
    return rc;
  }
  if (rc) {
    no_metadata(c, &e);
    return 1;
  }
  c->priv->metadata = md;
  c->lib->metadata = md;
  char where[1200];
  snprintf(where, sizeof where, "%s, constant %lld (%s)", v->where, (long long)k, rule);
  c->lib->metadata_where = mpk_arena_strdup(c->a, where);
  c->lib->metadata_member = v->object->member ? mpk_arena_strdup(c->a, v->object->member) : NULL;
  if (!c->lib->metadata_where || (v->object->member && !c->lib->metadata_member)) return oom(c->f->path, err);
  return 1;
}

/* The fallback: each object's bytes scanned for u64 length + a _metadata object; exactly one
   distinct in the library. */
static int metadata_by_scan(ctx *c, mpk_error *err) {
  mpk_mlc_metadata *found = NULL;
  const mpk_obj_object *in = NULL;
  mpk_error first;
  mpk_error_clear(&first);
  for (size_t i = 0; i < c->f->n_objects; i++) {
    const mpk_obj_object *o = &c->f->objects[i];
    char shown[700];
    if (o->member)
      snprintf(shown, sizeof shown, "%s: member %s", c->f->path, o->member);
    else
      snprintf(shown, sizeof shown, "%s", c->f->path);
    mpk_mlc_metadata *md = NULL;
    mpk_error e;
    mpk_error_clear(&e);
    int rc = mpk_mlc_metadata_scan(o->bytes, (size_t)o->size, shown, &md, &e);
    if (rc == MPK_ENOMEM) {
      mpk_mlc_metadata_free(found);
      if (err) *err = e;
      return rc;
    }
    if (rc == MPK_ENOTFOUND) {
      if (!first.code) first = e;
      continue;
    }
    if (rc) {
      mpk_mlc_metadata_free(found);
      no_metadata(c, &e);
      return 0;
    }
    if (found) {
      bool same = found->json_len == md->json_len && memcmp(found->json, md->json, md->json_len) == 0;
      mpk_mlc_metadata_free(md);
      if (same) continue;
      char b1[300], b2[300];
      mpk_fail(&e, MPK_EMALFORMED, c->f->path, NULL,
               "two different _metadata objects, %sat offset %lld and %sat offset %lld; a library holds exactly one",
               mpk_obj_where(in, b1, sizeof b1), (long long)found->source_offset, mpk_obj_where(o, b2, sizeof b2),
               (long long)md->source_offset);
      mpk_mlc_metadata_free(found);
      no_metadata(c, &e);
      return 0;
    }
    found = md;
    in = o;
  }
  if (!found) {
    if (!first.code)
      mpk_fail(&first, MPK_ENOTFOUND, c->f->path, NULL, "no _metadata JSON found in %s", c->f->path);
    no_metadata(c, &first);
    return 0;
  }
  c->priv->metadata = found;
  c->lib->metadata = found;
  c->lib->metadata_scanned = 1;
  char buf[300], where[600];
  snprintf(where, sizeof where, "%sscan of the %s's bytes, the string at offset %lld", mpk_obj_where(in, buf, sizeof buf),
           in->member ? "member" : "file", (long long)found->source_offset - 8);
  c->lib->metadata_where = mpk_arena_strdup(c->a, where);
  c->lib->metadata_member = in->member ? mpk_arena_strdup(c->a, in->member) : NULL;
  if (!c->lib->metadata_where || (in->member && !c->lib->metadata_member)) return oom(c->f->path, err);
  return 0;
}

/* ------------------------------------------------------------------------ functions, imports, globals */

/* The globals a library's VM code calls that the runtime must provide: its packed entries with a
   dotted name (vm.builtin.*, relax.*, mlc.*, ...: TVM registers runtime globals under dotted names).
   A name without a dot is the library's own kernel: in its host code (an ELF or Mach-O symbol), in
   the registry of a system library (static archives register their kernels by name, with no
   linker symbol), or in a device module's function map (WebAssembly/WebGPU) — so a symbol-table
   rule would misread every static archive. */
static bool is_wasm(const mpk_obj_object *o) { return o->format && strcmp(o->format, "WebAssembly module") == 0; }

static int globals_needed(ctx *c, mpk_error *err) {
  mpk_mlc_library *lib = c->lib;
  const char **v = mpk_arena_array(c->a, lib->n_functions ? lib->n_functions : 1, sizeof *v);
  if (!v) return oom(c->f->path, err);
  size_t n = 0;
  for (size_t i = 0; i < lib->n_functions; i++) {
    const mpk_mlc_function *fn = &lib->functions[i];
    if (fn->kind == MPK_MLC_FUNCTION_PACKED && strchr(fn->name, '.')) v[n++] = fn->name;
  }
  lib->globals_needed = v;
  lib->n_globals_needed = sort_unique(v, n);
  return 0;
}

static const char *const global_prefixes[] = {"vm.", "runtime.", "relax.", "tvm.", "mlc.", "device_api.", "ffi.",
                                              "tvmjs.", "webgpu.", "wasm.", "testing.", "rpc.", "profiling.",
                                              "__async.", "__asyncify.", "node.", "contrib."};

static bool global_shape(const uint8_t *s, size_t n) {
  if (n < 3 || n > MAX_GLOBAL_NAME) return false;
  bool dot = false;
  for (size_t i = 0; i < n; i++) {
    uint8_t ch = s[i];
    if (ch == '.') {
      if (i == 0 || s[i - 1] == '.' || i == n - 1) return false;
      dot = true;
    } else if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_')) {
      return false;
    }
  }
  if (!dot) return false;
  for (size_t k = 0; k < sizeof global_prefixes / sizeof global_prefixes[0]; k++) {
    size_t pl = strlen(global_prefixes[k]);
    if (n > pl && memcmp(s, global_prefixes[k], pl) == 0) return true;
  }
  return false;
}

/* The NUL-delimited strings of a WebAssembly library's memory that have a registered global's
   shape (the runtime compiled into it registers them by these names). */
static int globals_defined(ctx *c, const mpk_vm_found *vm, mpk_error *err) {
  size_t n = 0, cap = 0;
  const char **v = NULL;
  for (size_t i = 0; i < c->f->n_objects; i++) {
    const mpk_obj_object *o = &c->f->objects[i];
    if (!is_wasm(o)) continue;
    for (size_t k = 0; k < o->n_sections; k++) {
      const mpk_obj_section *s = &o->sections[k];
      if (strcmp(s->name, "memory") != 0) continue;
      /* the executable's own bytes are not looked at: its function table names the globals it
         needs, NUL-padded by the numbers after them */
      uint64_t skip_lo = UINT64_MAX, skip_hi = 0;
      if (vm && vm->section == s) {
        skip_lo = vm->pos >= 32 ? vm->pos - 32 : 0; /* its type key */
        skip_hi = vm->pos + vm->exec.total;
      }
      uint64_t p = 0;
      while (p < s->size) {
        if (p >= skip_lo && p < skip_hi) {
          p = skip_hi;
          continue;
        }
        const uint8_t *z = memchr(s->data + p, 0, (size_t)(s->size - p));
        uint64_t end = z ? (uint64_t)(z - s->data) : s->size;
        /* a string preceded by a NUL (or the start) and ended by one */
        if (z && end > p && (p == 0 || s->data[p - 1] == 0) && global_shape(s->data + p, (size_t)(end - p))) {
          if (n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            const char **nv = mpk_arena_array(c->a, ncap, sizeof *nv);
            if (!nv) return oom(c->f->path, err);
            if (n) memcpy(nv, v, n * sizeof *v);
            v = nv;
            cap = ncap;
          }
          char *name = mpk_arena_alloc(c->a, (size_t)(end - p) + 1);
          if (!name) return oom(c->f->path, err);
          memcpy(name, s->data + p, (size_t)(end - p));
          v[n++] = name;
        }
        p = end + 1;
      }
    }
  }
  c->lib->globals_defined = v;
  c->lib->n_globals_defined = sort_unique(v, n);
  return 0;
}

static int imports(ctx *c, mpk_error *err) {
  size_t total = 0;
  for (size_t i = 0; i < c->f->n_objects; i++) total += c->f->objects[i].n_imports;
  mpk_mlc_import *v = mpk_arena_array(c->a, total ? total : 1, sizeof *v);
  if (!v) return oom(c->f->path, err);
  size_t n = 0;
  for (size_t i = 0; i < c->f->n_objects; i++)
    for (size_t k = 0; k < c->f->objects[i].n_imports; k++) {
      const mpk_obj_import *im = &c->f->objects[i].imports[k];
      if (!im->function || !im->name) continue;
      v[n].module = im->module ? mpk_arena_strdup(c->a, im->module) : NULL;
      v[n].name = mpk_arena_strdup(c->a, im->name);
      if (!v[n].name || (im->module && !v[n].module)) return oom(c->f->path, err);
      n++;
    }
  mpk_sort(v, n, sizeof *v, cmp_import);
  size_t k = n ? 1 : 0;
  for (size_t i = 1; i < n; i++)
    if (cmp_import(&v[i], &v[k - 1]) != 0) v[k++] = v[i];
  c->lib->imports = v;
  c->lib->n_imports = k;
  return 0;
}

/* The functions a WebAssembly library exports (what its host calls: mlc compat); left NULL for
   other containers, whose exports no runtime description lists. */
static int exports(ctx *c, mpk_error *err) {
  size_t total = 0;
  bool wasm = false;
  for (size_t i = 0; i < c->f->n_objects; i++)
    if (strcmp(c->f->objects[i].format, "WebAssembly module") == 0) {
      wasm = true;
      total += c->f->objects[i].n_exports;
    }
  if (!wasm) return 0;
  const char **v = mpk_arena_array(c->a, total ? total : 1, sizeof *v);
  if (!v) return oom(c->f->path, err);
  size_t n = 0;
  for (size_t i = 0; i < c->f->n_objects; i++)
    if (strcmp(c->f->objects[i].format, "WebAssembly module") == 0)
      for (size_t k = 0; k < c->f->objects[i].n_exports; k++)
        if (!(v[n++] = mpk_arena_strdup(c->a, c->f->objects[i].exports[k]))) return oom(c->f->path, err);
  c->lib->exports = v;
  c->lib->n_exports = sort_unique(v, n);
  return 0;
}

/* ------------------------------------------------------------------------ the library */

int mpk_mlc_library_from_obj(const mpk_obj_file *f, mpk_mlc_library **out, mpk_error *err) {
  mpk_arena *a = mpk_arena_new();
  mpk_mlc_library *lib = a ? mpk_arena_alloc(a, sizeof *lib) : NULL;
  struct mpk_mlc_library_priv *priv = lib ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  if (!priv) {
    mpk_arena_free(a);
    return oom(f->path, err);
  }
  priv->arena = a;
  lib->priv_ = priv;
  ctx c = {.f = f, .lib = lib, .priv = priv, .a = a};
  int rc = 0;
  lib->path = mpk_arena_strdup(a, f->path);
  lib->container = mpk_arena_strdup(a, f->container ? f->container : "unknown");
  if (!lib->path || !lib->container) rc = oom(f->path, err);

  mpk_vm_found v;
  mpk_error vm_err;
  mpk_error_clear(&vm_err);
  bool have_vm = false;
  if (!rc) {
    int vr = mpk_vm_find(f, a, &v, &vm_err);
    if (vr == 0)
      have_vm = true;
    else if (vr != MPK_ENOTFOUND) {
      if (err) *err = vm_err;
      rc = vr;
    }
  }
  const mpk_obj_object *arch_of = have_vm ? v.object : NULL;
  for (size_t i = 0; !arch_of && i < f->n_objects; i++)
    if (f->objects[i].arch) arch_of = &f->objects[i];
  if (!rc && arch_of && arch_of->arch && !(lib->arch = mpk_arena_strdup(a, arch_of->arch))) rc = oom(f->path, err);
  if (!rc && have_vm) {
    lib->vm_where = v.where;
    lib->vm_type_key = v.type_key;
    lib->vm_version = v.exec.version;
    lib->functions = v.exec.functions;
    lib->n_functions = v.exec.n_functions;
    rc = metadata_from_exec(&c, &v, err);
    rc = rc < 0 ? rc : rc == 1 ? 0 : metadata_by_scan(&c, err);
  } else if (!rc) {
    rc = metadata_by_scan(&c, err);
  }
  if (!rc) rc = imports(&c, err);
  if (!rc) rc = exports(&c, err);
  if (!rc) rc = globals_needed(&c, err);
  if (!rc) rc = globals_defined(&c, have_vm ? &v : NULL, err);
  if (!rc && !lib->metadata && !have_vm) {
    char vm_line[1200];
    mpk_error_format(&vm_err, vm_line, sizeof vm_line);
    rc = mpk_fail(err, priv->metadata_err.code ? priv->metadata_err.code : MPK_ENOTFOUND, f->path, NULL,
                  "%s: %s; and %s", lib->container, priv->metadata_err.message, vm_line);
  }
  if (rc) {
    mpk_mlc_library_free(lib);
    return rc;
  }
  *out = lib;
  return 0;
}

int mpk_mlc_library_open(const char *path, mpk_mlc_library **out, mpk_error *err) {
  if (!path || !out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  mpk_obj_file *f = NULL;
  int rc = mpk_obj_open(path, &f, err);
  if (rc == MPK_EUNSUPPORTED && err && strstr(err->message, "a JSON file"))
    return mpk_fail(err, MPK_EUNSUPPORTED, path, NULL, "a _metadata JSON file, not a library");
  if (rc) return rc;
  rc = mpk_mlc_library_from_obj(f, out, err);
  mpk_obj_free(f);
  return rc;
}

int mpk_mlc_library_from_bytes(const void *data, size_t size, const char *file, mpk_mlc_library **out,
                               mpk_error *err) {
  if (!out || (!data && size)) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  mpk_obj_file *f = NULL;
  int rc = mpk_obj_from_bytes(data, size, file, &f, err);
  if (rc) return rc;
  rc = mpk_mlc_library_from_obj(f, out, err);
  mpk_obj_free(f);
  return rc;
}

int mpk_mlc_library_take_metadata(mpk_mlc_library *lib, mpk_mlc_metadata **out, mpk_error *err) {
  *out = lib->priv_->metadata;
  if (*out) {
    lib->priv_->metadata = NULL;
    lib->metadata = NULL;
    return 0;
  }
  if (err) *err = lib->priv_->metadata_err;
  return lib->priv_->metadata_err.code ? lib->priv_->metadata_err.code : MPK_ENOTFOUND;
}

void mpk_mlc_library_free(mpk_mlc_library *lib) {
  if (!lib) return;
  mpk_mlc_metadata_free(lib->priv_->metadata);
  mpk_arena_free(lib->priv_->arena);
}

const mpk_mlc_function *mpk_mlc_library_function(const mpk_mlc_library *lib, const char *name) {
  if (!lib || !name) return NULL;
  for (size_t i = 0; i < lib->n_functions; i++)
    if (strcmp(lib->functions[i].name, name) == 0) return &lib->functions[i];
  return NULL;
}

const char *mpk_mlc_function_kind_name(mpk_mlc_function_kind kind) {
  switch (kind) {
    case MPK_MLC_FUNCTION_PACKED: return "packed";
    case MPK_MLC_FUNCTION_VM: return "vm";
    case MPK_MLC_FUNCTION_VM_TIR: return "vm_tir";
  }
  return "unknown";
}
